"""The MSA server: relays keys, shares and the group key, sums masked vectors.

Steps 1, 2 and 4 of a round are the shared
:class:`~pyfkm.secagg._steps.RoundSteps`; this module adds the roster, the
group-key relay, the inputs and the sum with the masks of the dropped
removed (and, for the trusted-curator baselines only, the server's noise).
"""
from __future__ import annotations

import struct
from typing import Any, Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from ...exceptions import CapacityError, InvalidInputError, ProtocolError
from .._framing import _built, _check_run_id
from .._masking import MAX_ROUND, MaskingServer
from . import _keybatch as _kb
from ._keybatch import MAX_BATCH
from .._messages import InputRequest, RoundMessage, ShareBundle
from .._steps import RoundSteps, client_id
from ._fixed import _RING_HALF, DEFAULT_SCALE_BITS, MINUS, MSA_TAG, PLUS, SELF_TAG, add_streams
from ._messages import (AggregateMessage, GroupKeyMessage, KeyBatchBundle, KeyBatchMessage,
                        MaskedVectorMessage, MsaRosterMessage)
from ._noise import SERVER_NOISE_MODES

class MsaServer(RoundSteps):
    """The MSA server: relays keys and shares, sums masked vectors.

    It never holds a client's vector or the aggregate in the clear: only
    masked words.  A rejected message or call leaves the server unchanged.
    Before the first round it collects one :class:`KeyMessage` per client
    (``receive_key``), sends the roster and relays the leader's group key
    (:meth:`relay_group_key`, :meth:`group_key_for`); :func:`setup_msa`
    does all of it.  One round::

        start_round(participants)       -> RoundMessage (broadcast)
        receive_shares(ShareMessage) for each client
        bundle(client_id)               -> ShareBundle (one per sharer)
        request_inputs()                -> InputRequest (broadcast)
        receive(MaskedVectorMessage) for each client
        unmask_request()                -> UnmaskRequest (broadcast to survivors)
        receive_unmask(UnmaskMessage) for each survivor
        finish_round()                  -> AggregateMessage (broadcast)

    With a key batch (:meth:`start_key_batch`, :meth:`receive_key_batch`
    and :meth:`key_batch_bundle` once, :func:`msa_key_batch` does all of
    it) the batch's rounds skip ``receive_shares`` and ``bundle``: after
    ``start_round`` the clients call :meth:`MsaClient.enter_round` and the
    server goes on with ``request_inputs``.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run (from ``os.urandom``).
    n_words : int
        Length of every vector, in ``[1, 2**23]``.
    scale_bits : int, default=DEFAULT_SCALE_BITS
        Fixed-point scale ``2**scale_bits`` (16), in ``[0, 48]``.
    threshold : int, optional
        Fewest clients of any round (default a strict majority).
    degree : int, default=0
        Neighbours per client (even; 0 is the complete graph).
    noise : {None, "gaussian", "laplace"}, default=None
        Noise the *server* adds to the sum: only for the baselines that
        model a trusted curator (GLloyd, SuLloyd).  Private fits use the
        clients' distributed noise instead (:meth:`MsaClient.respond`),
        which the server cannot remove.
    noise_key : bytes, optional
        32-byte key of the server's noise streams (default: OS randomness).

    Raises
    ------
    InvalidInputError
        A parameter of the wrong type or range.

    Examples
    --------
    One round, step by step, in which client 2 drops out after sharing its
    keys; every client, the dropped one included, decodes the broadcast:

    >>> from pyfkm.secagg import setup_msa
    >>> server, clients = setup_msa(3, 2)
    >>> rmsg = server.start_round()
    >>> for c in clients:
    ...     server.receive_shares(c.share_keys(rmsg))
    >>> for c in clients:
    ...     c.receive_shares(server.bundle(c.client_id))
    >>> req = server.request_inputs()
    >>> for c, x in zip(clients[:2], [[1.0, -2.0], [0.5, 0.25]]):
    ...     server.receive(c.respond(req, x))
    >>> ureq = server.unmask_request()
    >>> for c in clients[:2]:
    ...     server.receive_unmask(c.unmask_shares(ureq))
    >>> agg = server.finish_round()
    >>> agg.survivors, server.last_dropped
    ((0, 1), (2,))
    >>> clients[2].unmask(agg).tolist()
    [1.5, -1.75]
    """

    def __init__(self, run_id: bytes, n_words: int, *, scale_bits: int = DEFAULT_SCALE_BITS,
                 threshold: int | None = None, degree: int = 0, noise: str | None = None,
                 noise_key: bytes | None = None) -> None:
        self.run_id = _check_run_id(run_id)
        if noise not in SERVER_NOISE_MODES:
            raise InvalidInputError(f"noise must be one of {SERVER_NOISE_MODES}, got {noise!r}")
        if noise_key is None and noise is not None:
            from ...core.noise import new_noise_key
            noise_key = new_noise_key()
        if noise_key is not None and (not isinstance(noise_key, (bytes, bytearray))
                                      or len(noise_key) != 32):
            raise InvalidInputError("noise_key must be 32 bytes")
        if not isinstance(degree, (int, np.integer)) or isinstance(degree, bool) \
                or degree < 0 or degree % 2:
            raise InvalidInputError(f"degree must be 0 or an even int >= 2, got {degree!r}")
        self._noise_key = None if noise_key is None else bytes(noise_key)
        self.noise = noise
        self._m = MaskingServer()
        self._keys = {}
        self._roster = None
        self._pending_keys: dict[int, GroupKeyMessage] = {}
        self._round = 0
        self._open = None
        self._batch: dict[str, Any] | None = None
        self._n_words, self._scale_bits = n_words, scale_bits
        if threshold is not None and (isinstance(threshold, bool)
                                      or not isinstance(threshold, (int, np.integer))
                                      or threshold < 1):
            raise InvalidInputError(f"threshold must be None or an int >= 1, got {threshold!r}")
        self._threshold, self._degree = threshold, int(degree)
        MsaRosterMessage(self.run_id, n_words, scale_bits, (0,), (bytes(32),))  # validate

    def _roster_message(self, ids: Any, keys: Any, threshold: int, degree: int,
                        server_key: bytes) -> MsaRosterMessage:
        return MsaRosterMessage(self.run_id, self._n_words, self._scale_bits, ids, keys,
                                threshold, degree, server_key)

    def relay_group_key(self, msg: GroupKeyMessage) -> None:
        """Accept the leader's encrypted group key for one client.

        Parameters
        ----------
        msg : GroupKeyMessage
            The leader's message for one other roster client; a later message
            for the same recipient replaces it.

        Raises
        ------
        ProtocolError
            Not a :class:`GroupKeyMessage`, before the roster, a message of
            another run, not from the leader or not to a roster client.
        """
        if not isinstance(msg, GroupKeyMessage):
            raise ProtocolError("expected a GroupKeyMessage")
        if self._roster is None or msg.run_id != self.run_id:
            raise ProtocolError("group key before the roster or of another run")
        ids = self._roster.client_ids
        if msg.sender != ids[0] or msg.recipient not in ids[1:]:
            raise ProtocolError("group keys come from the leader to roster clients")
        self._pending_keys[msg.recipient] = msg

    def group_key_for(self, client_id: int) -> GroupKeyMessage:
        """The relayed group key message for ``client_id``.

        Parameters
        ----------
        client_id : int
            The recipient.

        Returns
        -------
        GroupKeyMessage
            The leader's message for it.

        Raises
        ------
        ProtocolError
            No group key message for that client was relayed.
        """
        if client_id not in self._pending_keys:
            raise ProtocolError(f"no group key message for client {client_id}")
        return self._pending_keys[client_id]

    def start_round(self, participants: Iterable[int] | None = None) -> RoundMessage:
        """Open the next round (default: every roster client).

        An unfinished round is abandoned.  A round of a key batch
        (:meth:`start_key_batch`) skips steps 1-2: its participants, by
        default the batch's sharers, must have shared the batch, and the
        clients open it with :meth:`MsaClient.enter_round`.  A batch that
        never closed and has fewer than ``threshold`` sharers is abandoned
        too: the round then follows the batch's rounds and shares its own
        keys.

        Parameters
        ----------
        participants : iterable of int, optional
            The clients asked to take part (default: every roster client, or
            every sharer of the key batch).

        Returns
        -------
        RoundMessage
            The broadcast that opens the round (its number is the last round's
            plus one).

        Raises
        ------
        ProtocolError
            Before the roster; participants outside the roster or repeated, or
            fewer than ``threshold``; in a key batch, participants that did not
            share it.
        InvalidInputError
            Participants that are not ints.
        """
        r = self._round + 1
        b = self._batch
        if b is not None and b["bt"]["u2"] is None and len(b["bt"]["pks"]) < self._m.threshold:
            # a batch that never closed and cannot (too few sharers) is
            # abandoned as an unfinished round is: this round shares its
            # own keys, after the batch's rounds (its sharers refuse those)
            r = max(r, b["bt"]["first"] + b["bt"]["count"])
            b = None
        bt = b["bt"] if b is not None and b["bt"]["first"] <= r < b["bt"]["first"] \
            + b["bt"]["count"] else None
        if b is not None and bt is not None:
            if self._roster is None:
                raise ProtocolError("send the roster before starting a round")
            u2 = bt["u2"] if bt["u2"] is not None else _kb.batch_sharers(self._m, bt)
            ids = u2 if participants is None else self._participants(participants)
            st = _kb.batch_round(self._m, bt, r, ids, u2)
            bt["u2"], b["step"] = u2, "closed"
            self._open = {"step": "bundles", "st": st, "got": {}, "req": None, "batch": True}
            self._round = r
            # built from the server's checked state (a round of the batch,
            # below MAX_ROUND; the sharers or checked participants: sorted
            # distinct roster ids, at least the threshold), as the
            # constructor would build it
            return _built(RoundMessage, run_id=self.run_id, round=r, participants=ids,
                          delta_nonzeros=0, base_round=0)
        ids = self._participants(participants)
        st = self._m.new_round(r, ids)
        self._batch = None
        self._open = {"step": "shares", "st": st, "got": {}, "req": None}
        self._round = r
        return RoundMessage(self.run_id, r, ids)

    def _participants(self, participants: Iterable[int] | None) -> tuple[int, ...]:
        """The checked participants of a round or batch (default: every
        roster client)."""
        if self._roster is None:
            raise ProtocolError("send the roster before starting a round")
        if participants is None:
            return self._roster.client_ids
        try:
            ids = tuple(sorted(participants))
        except TypeError:
            raise InvalidInputError("participants must be client ids") from None
        if any(isinstance(i, bool) or not isinstance(i, (int, np.integer)) for i in ids):
            raise InvalidInputError("participants must be int client ids")
        ids = tuple(int(i) for i in ids)
        if not set(ids) <= set(self._roster.client_ids) or len(set(ids)) != len(ids):
            raise ProtocolError("participants must be distinct roster clients")
        return ids

    def start_key_batch(self, count: int, participants: Iterable[int] | None = None
                        ) -> RoundMessage:
        """Open key sharing for the next ``count`` rounds at once (see
        :meth:`MsaClient.share_key_batch`); an unfinished round or batch is
        abandoned.  Those rounds then open with :meth:`start_round` and
        skip steps 1-2.

        Parameters
        ----------
        count : int
            Rounds of the batch, in ``[1, MAX_BATCH]``.
        participants : iterable of int, optional
            The clients asked to share (default: every roster client).

        Returns
        -------
        RoundMessage
            The broadcast: the batch's first round and its participants.

        Raises
        ------
        ProtocolError
            Before the roster; participants outside the roster, repeated or
            fewer than ``threshold``; rounds beyond ``2**32 - 1``.
        InvalidInputError
            A count out of range, participants that are not ints.
        """
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) \
                or not 1 <= int(count) <= MAX_BATCH:
            raise InvalidInputError(f"count must be an int in [1, {MAX_BATCH}], got {count!r}")
        ids = self._participants(participants)
        first = self._round + 1
        if self._batch is not None:         # clients refuse the old batch's rounds again
            old = self._batch["bt"]
            first = max(first, old["first"] + old["count"])
        if first + int(count) - 1 >= MAX_ROUND:
            raise ProtocolError(f"a key batch beyond round {MAX_ROUND - 1}")
        bt = _kb.new_batch(self._m, first, int(count), ids)
        msg = RoundMessage(self.run_id, first, ids)
        self._open = None
        self._batch = {"step": "shares", "bt": bt}
        self._round = first - 1
        return msg

    def receive_key_batch(self, msg: KeyBatchMessage) -> None:
        """A client's :class:`KeyBatchMessage` (authenticated).

        Parameters
        ----------
        msg : KeyBatchMessage
            The client's round keys, commitments and encrypted shares.

        Raises
        ------
        ProtocolError
            No batch is collecting shares, a message of another run or batch,
            a sender outside the roster or the batch, a second message from
            it, a tag that fails, shares not addressed to each neighbour
            participant once, or a round key of small order.
        """
        b = self._batch
        if b is None or b["step"] != "shares":
            raise ProtocolError("no key batch is collecting shares")
        bt = b["bt"]
        if not isinstance(msg, KeyBatchMessage):
            raise ProtocolError("expected a KeyBatchMessage")
        if msg.run_id != self.run_id or msg.round != bt["first"]:
            raise ProtocolError("KeyBatchMessage of another run or batch")
        if msg.sender not in self._m._mac:
            raise ProtocolError(f"client {msg.sender} is not in the roster")
        self._m.check_tag(msg.sender, msg.signed_bytes(), msg.tag)
        _kb.add_batch_shares(self._m, bt, msg.sender, msg.count, msg.round_keys, msg.commitments,
                                 list(zip(msg.holders, msg.ciphertexts)))

    def key_batch_bundle(self, client_id_: int) -> KeyBatchBundle:
        """The :class:`KeyBatchBundle` of one client that shared the batch
        (the first call closes the batch's sharers).

        Parameters
        ----------
        client_id_ : int
            The recipient.

        Returns
        -------
        KeyBatchBundle

        Raises
        ------
        ProtocolError
            No batch is relaying shares, the client did not share, or (on the
            first call) fewer than ``threshold`` clients shared.
        """
        b = self._batch
        if b is None:
            raise ProtocolError("no key batch is relaying shares")
        bt = b["bt"]
        cid = client_id(client_id_)
        if cid not in bt["pks"]:
            raise ProtocolError(f"client {cid} has no bundle in the key batch")
        if b["step"] == "shares":
            bt["u2"] = _kb.batch_sharers(self._m, bt)
            b["step"] = "closed"
        items = _kb.batch_bundle_items(self._m, bt, cid)
        return _built(KeyBatchBundle, run_id=self.run_id, round=bt["first"], count=bt["count"],
                      recipient=cid, sharers=bt["u2"], owners=tuple(i[0] for i in items),
                      round_keys=tuple(i[1] for i in items),
                      ciphertexts=tuple(i[2] for i in items))

    def in_key_batch(self) -> bool:
        """Whether the open round is a round of a key batch.

        Returns
        -------
        bool
            True when the clients open the round with
            :meth:`MsaClient.enter_round` (its keys came in the batch).
        """
        return bool(self._open is not None and self._open.get("batch"))

    def bundle(self, client_id_: int) -> ShareBundle:
        if self._open is not None and self._open.get("batch"):
            raise ProtocolError("a round of a key batch relays no shares (they came in the "
                                "batch)")
        return super().bundle(client_id_)

    bundle.__doc__ = RoundSteps.bundle.__doc__

    def request_inputs(self) -> InputRequest:
        """Step 3: the :class:`InputRequest` of the open round (closes key
        sharing if no bundle did).

        Returns
        -------
        InputRequest
            The broadcast to the sharers (MSA has no difference rounds).

        Raises
        ------
        ProtocolError
            No round is ready for inputs, or fewer than ``threshold`` clients
            shared keys.
        """
        o = self._open
        if o is None or o["step"] not in ("shares", "bundles"):
            raise ProtocolError("no round is ready for inputs")
        if o["step"] == "shares":
            self._m.close_shares(o["st"])
        req = _built(InputRequest, run_id=self.run_id, round=o["st"]["round"], delta_nonzeros=0,
                     base_round=0)            # a full round of the server's own state
        o["step"], o["req"] = "inputs", req
        return req

    def receive(self, msg: MaskedVectorMessage) -> None:
        """Step 3: a client's :class:`MaskedVectorMessage` (authenticated).

        Parameters
        ----------
        msg : MaskedVectorMessage
            The client's masked vector for the open round.

        Raises
        ------
        ProtocolError
            No round is waiting for inputs, a message of another run or round,
            a sender that did not share keys or already sent, a vector of
            another length than ``n_words``, or a tag that fails.
        """
        o = self._need("inputs")
        if not isinstance(msg, MaskedVectorMessage):
            raise ProtocolError("expected a MaskedVectorMessage")
        if msg.run_id != self.run_id:
            raise ProtocolError("MaskedVectorMessage of another run")
        if msg.round != o["st"]["round"]:
            raise ProtocolError(f"message for round {msg.round}, the open round is "
                                f"{o['st']['round']}")
        if msg.sender not in o["st"]["u2"]:
            raise ProtocolError(f"client {msg.sender} did not share keys in round {msg.round}")
        if msg.sender in o["got"]:
            raise ProtocolError(f"duplicate message from client {msg.sender}")
        if msg.payload.size != self._n_words:
            raise ProtocolError(f"client {msg.sender}: {msg.payload.size} words, "
                                f"expected {self._n_words}")
        self._m.check_tag(msg.sender, msg.signed_bytes() + self._m.view(o["st"]), msg.tag)
        o["got"][msg.sender] = msg.payload

    def _noise_words(self, round_: int, segments: Sequence[tuple[int, float, bytes]]
                     ) -> NDArray[np.uint64]:
        from ...core.noise import NoiseStream
        parts = []
        for length, scale, tag in segments:
            if self.noise is None or scale == 0:
                parts.append(np.zeros(length, dtype=np.int64))
                continue
            ns = NoiseStream.secure(self._noise_key, round_, tag)  # type: ignore[arg-type]  # set with noise
            draw = ns.gaussian if self.noise == "gaussian" else ns.laplace
            v = np.rint(np.ldexp(np.asarray(draw(length, float(scale))), self._scale_bits))
            # strictly below 2**62: with the clients' sum at most 2**62 in
            # magnitude the noisy sum stays within int64 (found by review)
            if v.size and not float(np.abs(v).max()) < _RING_HALF:
                raise CapacityError("noise sample reaches 2**62 in fixed point")
            parts.append(v.astype(np.int64))
        return np.concatenate(parts).view(np.uint64) if parts else np.zeros(0, np.uint64)

    def finish_round(self, segments: Sequence[tuple[int, float, bytes]] = ()) -> AggregateMessage:
        """Remove the survivors' self masks and their pair masks with the
        dropped, add the server's baseline noise (``segments``: ``(length,
        scale, tag)`` triples covering the vector; only with a ``noise``
        mode), and return the broadcast.

        Sets ``last_dropped``, the clients that shared keys but whose vectors
        did not arrive.

        Parameters
        ----------
        segments : sequence of (int, float, bytes), default=()
            The server's noise: per segment its length, its noise scale (the
            standard deviation of ``"gaussian"``, the scale of ``"laplace"``,
            in the vector's units) and a distinct 1 to 4 byte tag; empty adds
            none.

        Returns
        -------
        AggregateMessage
            The survivors' sum, still under the output masks, for every client
            to decode with :meth:`MsaClient.unmask`.

        Raises
        ------
        ProtocolError
            No round is waiting for unmasking, or too few shares arrived (the
            round stays open for more unmask answers).
        InvalidInputError
            Segments without a ``noise`` mode, not covering the vector exactly,
            with repeated or bad tags, or with a negative or infinite scale.
        CapacityError
            A noise sample reaches ``2**62`` in fixed point.
        """
        o = self._need("unmask")
        st = o["st"]
        segments = tuple(segments)
        if segments:
            if self.noise is None:
                raise InvalidInputError("this server adds no noise (noise=None): private "
                                        "fits add the clients' distributed noise")
            if sum(int(sg[0]) for sg in segments) != self._n_words:
                raise InvalidInputError("noise segments must cover the vector exactly")
            tags = [bytes(sg[2]) for sg in segments]
            if len(set(tags)) != len(tags) or any(not 1 <= len(t) <= 4 for t in tags):
                raise InvalidInputError("segment tags must be distinct, 1 to 4 bytes")
            if any(not (float(sg[1]) >= 0 and np.isfinite(float(sg[1]))) for sg in segments):
                raise InvalidInputError("noise scales must be finite and >= 0")
        selfs, pair_keys, neg, dropped = self._m.recover(st)
        rnd = st["round"]
        agg = np.zeros(self._n_words, dtype=np.uint64)
        for u in st["u3"]:
            agg += o["got"][u]
        # every self stream subtracted, each pair stream with the dropped
        # added back or removed, in one kernel call
        r = struct.pack("<Q", rnd)
        add_streams(agg, selfs.tobytes() + pair_keys.tobytes(),
                    (r + SELF_TAG) * len(selfs) + (r + MSA_TAG) * len(pair_keys),
                    MINUS * len(selfs) + b"".join([MINUS if ng else PLUS for ng in neg]))
        if segments:
            agg += self._noise_words(rnd, segments)
        self._open = None
        self.last_dropped = tuple(dropped)
        # the server's own state: a fresh vector (now read-only) and the
        # survivors, sorted distinct ids (close_inputs)
        agg.setflags(write=False)
        return _built(AggregateMessage, run_id=self.run_id, round=rnd, payload=agg,
                      survivors=st["u3"])
