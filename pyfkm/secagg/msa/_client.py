"""The MSA client: a real vector in, a masked fixed-point vector out.

Its keys, shares and unmasking are a
:class:`~pyfkm.secagg._masking.MaskingClient`'s; on top of them the lowest
client id (the *leader*) draws a 32-byte group key and sends it to every
other client encrypted under their channel's group-key AEAD key (relayed by
the server); the ``OUTPUT_BEARERS`` lowest ids each add ``PRG(H(group key,
id), round)`` (tag ``b"MSAO"``), every client subtracts the surviving
bearers' output masks from the broadcast (a constant number of streams),
and clients refuse to unmask a round with no surviving bearer, so the
server only ever holds uniformly masked words.
"""
from __future__ import annotations

import hashlib
import os
import struct
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from cryptography.exceptions import InvalidTag

from ...exceptions import InvalidInputError, ProtocolError
from .._framing import _built, _check_id, _check_run_id
from .._masking import MaskingClient
from . import _keybatch as _kb
from .._messages import (InputRequest, KeyMessage, RoundMessage, ShareBundle, ShareMessage,
                         UnmaskMessage, UnmaskRequest)
from ._fixed import (MINUS, MSA_TAG, OUTPUT_TAG, PLUS, SELF_TAG, add_streams, decode_fixed,
                     encode_fixed, encoding_limit)
from ._messages import (AggregateMessage, GroupKeyMessage, KeyBatchBundle, KeyBatchMessage,
                        MaskedVectorMessage, MsaRosterMessage)
from ._noise import client_noise

OUTPUT_BEARERS = 8            # clients (lowest ids) that add an output mask


def _group_nonce(recipient: int) -> bytes:
    return struct.pack("<4sI4s", b"MSAG", recipient, b"\0\0\0\0")


class MsaClient:
    """One client of an MSA run.

    Every key comes from the operating system (a fresh channel key per run,
    a fresh round key and self seed per round, the leader's group key);
    none follows a user seed.  Before the first round the client sends its
    :meth:`key_message`, reads the roster and takes part in the group-key
    distribution (the *leader*, the lowest id, sends
    :meth:`group_key_messages`; every other client reads its
    :meth:`receive_group_key`).  One round, in message order::

        share_keys(RoundMessage)          -> ShareMessage
        receive_shares(ShareBundle)
        respond(InputRequest, x, noise)   -> MaskedVectorMessage
        unmask_shares(UnmaskRequest)      -> UnmaskMessage
        unmask(AggregateMessage)          -> the decoded sum (float64)

    A run whose rounds are known ahead shares their keys in one flight
    (:func:`msa_key_batch`): ``share_key_batch(RoundMessage, count)`` and
    ``receive_key_batch(KeyBatchBundle)`` once, then each round of the
    batch opens with ``enter_round(RoundMessage)`` in place of the first
    two steps (fresh keys per round all the same; ``docs/threat_model.md``).

    ``noise`` (a sequence of ``(length, sigma, tag)``) makes the client add
    its share of the round's distributed discrete Gaussian noise: variance
    ``sigma**2 / threshold`` on each entry, drawn from a ChaCha20 stream
    keyed by the OS (:class:`pyfkm.core.NoiseStream`).  The survivors'
    shares (at least ``threshold``) sum to variance at least ``sigma**2``,
    which no party can remove: see ``docs/threat_model.md``.

    The same refusals as :class:`ScmaClient`: rounds below the threshold,
    repeated rounds, both kinds of share of one peer; and a round with no
    surviving bearer of the output mask.  Each refusal is a
    :class:`ProtocolError`.

    Parameters
    ----------
    client_id : int
        In ``[0, 2**32 - 1)``, unique in the run.

    Raises
    ------
    InvalidInputError
        ``client_id`` not an int in range.

    Examples
    --------
    Key agreement and the group key by hand (:func:`setup_msa` does the
    same, every message through its bytes), then one round:

    >>> import os
    >>> from pyfkm.secagg import MsaClient, MsaServer, msa_round
    >>> run_id = os.urandom(16)
    >>> server = MsaServer(run_id, n_words=2)
    >>> clients = [MsaClient(i) for i in range(3)]
    >>> for c in clients:
    ...     server.receive_key(c.key_message(run_id))
    >>> roster = server.roster()
    >>> for c in clients:
    ...     c.receive_roster(roster)
    >>> [c.is_leader for c in clients]
    [True, False, False]
    >>> for msg in clients[0].group_key_messages():
    ...     server.relay_group_key(msg)
    >>> for c in clients[1:]:
    ...     c.receive_group_key(server.group_key_for(c.client_id))
    >>> total, survivors = msa_round(server, clients, [[1.0, 2.0], [3.0, 4.0], [0.5, 0.5]])
    >>> total.tolist(), survivors
    ([4.5, 6.5], (0, 1, 2))
    """

    def __init__(self, client_id: int) -> None:
        self.client_id = _check_id(client_id, "client_id")
        self._m = MaskingClient(self.client_id)
        self._run_id = None
        self._group_key = None
        self.n_words = self.scale_bits = self.leader = None
        self._sent = None
        self._input_round = None
        self._answered = None
        self._last_round = 0

    def key_message(self, run_id: bytes) -> KeyMessage:
        """The :class:`KeyMessage` opening run ``run_id`` (16 bytes): a fresh
        channel key.

        Parameters
        ----------
        run_id : bytes
            16 bytes naming the run.

        Returns
        -------
        KeyMessage
            The client's new public channel key, for the server.

        Raises
        ------
        InvalidInputError
            ``run_id`` not 16 bytes.
        ProtocolError
            This client already joined that run id.
        """
        rid = _check_run_id(run_id)
        pk = self._m.open_run(rid)
        self._run_id = rid
        self._group_key = None
        self.n_words = self.scale_bits = self.leader = None
        self._last_round = 0
        return KeyMessage(rid, self.client_id, pk)

    def receive_roster(self, roster: MsaRosterMessage) -> None:
        """Check the roster and derive the channel keys; the leader (the
        lowest id) draws the group key of the output masks.

        Parameters
        ----------
        roster : MsaRosterMessage
            The server's roster of the run; it sets :attr:`n_words`,
            :attr:`scale_bits`, the threshold and the leader.

        Raises
        ------
        ProtocolError
            Not an :class:`MsaRosterMessage`, a roster of another run or before
            :meth:`key_message`, a second roster, a roster without this client's
            key or repeating a key, or an unusable peer key.
        """
        if not isinstance(roster, MsaRosterMessage):
            raise ProtocolError("expected an MsaRosterMessage")
        if self._run_id is None or roster.run_id != self._run_id:
            raise ProtocolError("roster of another run")
        leader = roster.client_ids[0]
        extra = roster.client_ids if leader == self.client_id else (leader,)
        self._m.join(roster.params_bytes(), roster.threshold, roster.degree,
                     roster.server_key, roster.client_ids, roster.public_keys,
                     extra_peers=extra)
        self.n_words, self.scale_bits = roster.n_words, roster.scale_bits
        self.participants = tuple(roster.client_ids)
        self.threshold = roster.threshold
        self.leader = leader
        # the output mask is carried by a few clients (the lowest ids): a
        # client removes those of the surviving bearers, O(1) streams
        self._bearers: frozenset[int] = frozenset(roster.client_ids[:OUTPUT_BEARERS])
        self._limit = encoding_limit(2 * len(self.participants))
        self._output_keys: dict[int, bytes] = {}
        if self.leader == self.client_id:
            self._group_key = os.urandom(32)

    @property
    def is_leader(self) -> bool:
        return self.leader == self.client_id

    def _group_ad(self, recipient: int) -> bytes:
        return b"pyfkm/msa/group-key/v3" + self._m.digest + struct.pack(
            "<II", self.leader, recipient)

    def group_key_messages(self) -> list[GroupKeyMessage]:
        """Leader only: the group key encrypted for each other client.

        Returns
        -------
        list of GroupKeyMessage
            One per other client of the roster, for the server to relay.

        Raises
        ------
        ProtocolError
            This client is not the leader, or has not received the roster.
        """
        if not self.is_leader or self._group_key is None:
            raise ProtocolError("only the leader, after the roster, sends group keys")
        out = []
        for other in self.participants:
            if other == self.client_id:
                continue
            nonce = _group_nonce(other)
            ct = self._m.channel(other).encrypt(nonce, self._group_key, self._group_ad(other))
            out.append(GroupKeyMessage(self._run_id, self.client_id, other, nonce, ct))
        return out

    def receive_group_key(self, msg: GroupKeyMessage) -> None:
        """Decrypt the leader's group key (non-leaders, once per run).

        Parameters
        ----------
        msg : GroupKeyMessage
            The leader's message for this client, as relayed by the server.

        Raises
        ------
        ProtocolError
            Not a :class:`GroupKeyMessage`, a message of another run, for
            another recipient or not from the leader, a leader receiving, a key
            already received, or a ciphertext that fails authentication.
        """
        if not isinstance(msg, GroupKeyMessage):
            raise ProtocolError("expected a GroupKeyMessage")
        if self.leader is None or msg.run_id != self._run_id or \
                msg.recipient != self.client_id or msg.sender != self.leader or self.is_leader:
            raise ProtocolError("group key message of another run, recipient or sender")
        if self._group_key is not None:
            raise ProtocolError("the group key was already received")
        try:
            key = self._m.channel(msg.sender).decrypt(msg.nonce, msg.ciphertext,
                                                      self._group_ad(self.client_id))
        except InvalidTag:
            raise ProtocolError("group key message fails authentication") from None
        self._group_key = key
        self._output_keys = {}

    def _check_ready(self) -> None:
        if self.n_words is None:
            raise ProtocolError("receive the roster first")
        if self._group_key is None:
            raise ProtocolError("the group key has not been received")

    def share_keys(self, round_msg: RoundMessage) -> ShareMessage:
        """Step 1: a fresh round key and self seed, shared among this
        client's neighbours (:class:`ShareMessage`).

        Parameters
        ----------
        round_msg : RoundMessage
            The server's broadcast opening the round.

        Returns
        -------
        ShareMessage
            The round key, the commitment to the self seed and the encrypted
            shares, tagged for the server.

        Raises
        ------
        ProtocolError
            Not a :class:`RoundMessage`, before the roster or the group key, a
            round of another run, a round not after the client's last one, a
            round the client is not in, or fewer participants than the
            threshold.
        """
        if not isinstance(round_msg, RoundMessage):
            raise ProtocolError("expected a RoundMessage")
        self._check_ready()
        if round_msg.run_id != self._run_id:
            raise ProtocolError("round of another run")
        pk, commit, items = self._m.share(round_msg.round, round_msg.participants)
        self._input_round = self._sent = self._answered = None
        self._last_round = int(round_msg.round)
        # built from this client's own checked state (the constructor's
        # checks guard untrusted fields), tagged once
        msg = _built(ShareMessage, run_id=self._run_id, round=int(round_msg.round),
                     sender=self.client_id, round_key=bytes(pk), commitment=bytes(commit),
                     holders=tuple(h for h, _ in items),
                     ciphertexts=tuple(bytes(c) for _, c in items))
        signed = msg.__dict__["_signed"] = msg.signed_bytes()
        msg.__dict__["tag"] = self._m.tag(signed)
        return msg

    def receive_shares(self, bundle: ShareBundle) -> None:
        """Step 2: neighbours' shares and round keys; derives the pair keys.

        Parameters
        ----------
        bundle : ShareBundle
            The server's bundle for this client.

        Raises
        ------
        ProtocolError
            Not a :class:`ShareBundle`, a bundle of another run, round or
            recipient, shares that fail to decrypt or are missing or repeated,
            or fewer sharers than the threshold.
        """
        if not isinstance(bundle, ShareBundle):
            raise ProtocolError("expected a ShareBundle")
        if bundle.run_id != self._run_id or bundle.recipient != self.client_id:
            raise ProtocolError("share bundle of another run or for another client")
        self._m.receive_shares(bundle.round, bundle.sharers,
                               zip(bundle.owners, bundle.round_keys, bundle.ciphertexts))
        self._input_round = bundle.round

    def share_key_batch(self, round_msg: RoundMessage, count: int) -> KeyBatchMessage:
        """Steps 1 of the ``count`` rounds from ``round_msg.round`` on, in one
        message: per round a fresh round key and self seed (OS CSPRNG),
        shared among this client's neighbours among the participants as
        :meth:`share_keys` shares them (:class:`KeyBatchMessage`).  Each
        round then opens with :meth:`enter_round` instead of
        :meth:`share_keys` and :meth:`receive_shares`.

        Parameters
        ----------
        round_msg : RoundMessage
            The server's broadcast of :meth:`MsaServer.start_key_batch`: the
            batch's first round and its participants.
        count : int
            Rounds of the batch, in ``[1, MAX_BATCH]`` (the server's count).

        Returns
        -------
        KeyBatchMessage
            The round keys, commitments and encrypted shares, tagged for the
            server.

        Raises
        ------
        ProtocolError
            As :meth:`share_keys`, for every round of the batch; a count out of
            range.
        """
        if not isinstance(round_msg, RoundMessage):
            raise ProtocolError("expected a RoundMessage")
        self._check_ready()
        if round_msg.run_id != self._run_id or round_msg.delta_nonzeros:
            raise ProtocolError("round of another run, or a difference round")
        if isinstance(count, np.integer):
            count = int(count)
        pks, commits, items = _kb.share_batch(self._m, round_msg.round, count,
                                                   round_msg.participants)
        self._input_round = self._sent = self._answered = None
        msg = _built(KeyBatchMessage, run_id=self._run_id, round=int(round_msg.round),
                     sender=self.client_id, count=count, round_keys=tuple(pks),
                     commitments=tuple(commits), holders=tuple(h for h, _ in items),
                     ciphertexts=tuple(c for _, c in items))
        msg.__dict__["tag"] = self._m.tag(msg.signed_bytes())
        return msg

    def receive_key_batch(self, bundle: KeyBatchBundle) -> None:
        """Steps 2 of a key batch: the neighbours' round keys and shares of
        every round of it.

        Parameters
        ----------
        bundle : KeyBatchBundle
            The server's bundle for this client.

        Raises
        ------
        ProtocolError
            Not a :class:`KeyBatchBundle`, a bundle of another run, batch or
            recipient, shares that fail to decrypt or are missing or
            repeated, a round key of small order, or fewer sharers than the
            threshold.
        """
        if not isinstance(bundle, KeyBatchBundle):
            raise ProtocolError("expected a KeyBatchBundle")
        if bundle.run_id != self._run_id or bundle.recipient != self.client_id:
            raise ProtocolError("key batch bundle of another run or for another client")
        if self._m._batch is not None and bundle.count != self._m._batch["count"]:
            raise ProtocolError("key batch bundle of another batch")
        _kb.receive_batch(self._m, bundle.round, bundle.sharers,
                              zip(bundle.owners, bundle.round_keys, bundle.ciphertexts))

    def enter_round(self, round_msg: RoundMessage) -> None:
        """Steps 1-2 of a round of the received key batch (no message): the
        round's keys were shared in the batch; the round's participants take
        the place of its sharers.

        Parameters
        ----------
        round_msg : RoundMessage
            The server's broadcast opening the round.

        Raises
        ------
        ProtocolError
            Not a :class:`RoundMessage`, a round of another run, no key batch
            received, a round outside the batch or not after the last one,
            participants that did not share the batch, without this client or
            below the threshold.
        """
        if not isinstance(round_msg, RoundMessage):
            raise ProtocolError("expected a RoundMessage")
        self._check_ready()
        if round_msg.run_id != self._run_id or round_msg.delta_nonzeros:
            raise ProtocolError("round of another run, or a difference round")
        _kb.open_batch_round(self._m, round_msg.round, round_msg.participants)
        self._sent = self._answered = None
        self._input_round = self._last_round = round_msg.round

    def mask(self, round_: int) -> NDArray[np.uint64]:
        """This client's mask of its open round: self stream, signed pair
        streams and its output mask.

        Parameters
        ----------
        round_ : int
            The open round (the one whose shares were received).

        Returns
        -------
        ndarray of shape (n_words,), dtype uint64
            Words of Z_2^64.

        Raises
        ------
        ProtocolError
            The shares of ``round_`` were not received.
        """
        if self._input_round is None or int(round_) != self._input_round:
            raise ProtocolError(f"round {round_}: shares not received")
        return self._add_mask(np.zeros(self.n_words, np.uint64), int(round_))

    def _add_mask(self, acc: NDArray[np.uint64], round_: int) -> NDArray[np.uint64]:
        """``acc += mask(round_)`` in place: every stream of the mask (self,
        signed pairs, output) in one kernel call."""
        b, keys = self._m.mask_keys(round_)
        me = self.client_id
        r = struct.pack("<Q", round_)
        # streams in order: self, the pairs (in the keys' order), the output
        ks = b + b"".join(keys.values())
        nonces = r + SELF_TAG + (r + MSA_TAG) * len(keys)
        signs = PLUS + b"".join([PLUS if me < other else MINUS for other in keys])
        if me in self._bearers:
            ks += self._output_key(me)
            nonces += r + OUTPUT_TAG
            signs += PLUS
        return add_streams(acc, ks, nonces, signs)

    def _output_key(self, client_id: int) -> bytes:
        """The key of bearer ``client_id``'s output masks, ``H(group key,
        id)`` (a function of the run's group key: derived once per run; the
        masks differ every round by the stream's nonce)."""
        key = self._output_keys.get(client_id)
        if key is None:
            key = self._output_keys[client_id] = hashlib.sha256(
                b"pyfkm/msa/output/v3" + self._group_key  # type: ignore[operator]
                + struct.pack("<I", client_id)).digest()
        return key

    def respond(self, req: InputRequest, x: ArrayLike,
                noise: Sequence[tuple[int, float, bytes]] = ()) -> MaskedVectorMessage:
        """Step 3: encode ``x`` (``n_words`` reals), add this client's noise
        share (``noise``: ``(length, sigma, tag)`` segments covering the
        vector, see the class notes) and mask it.

        Parameters
        ----------
        req : InputRequest
            The server's request for the round whose shares were received.
        x : array-like of float
            The client's vector, ``n_words`` entries (flattened).
        noise : sequence of (int, float, bytes), default=()
            The distributed noise segments; empty adds no noise.

        Returns
        -------
        MaskedVectorMessage
            The masked fixed-point vector, tagged for the server.

        Raises
        ------
        ProtocolError
            Not an :class:`InputRequest`, before the group key, a request of
            another run or round, a difference round, or a round already
            answered.
        InvalidInputError
            ``x`` not of ``n_words`` entries or with a NaN, or invalid
            noise segments.
        CapacityError
            An entry (or its noise) does not fit in one share of the ring;
            raised before anything changes.
        """
        if not isinstance(req, InputRequest):
            raise ProtocolError("expected an InputRequest")
        self._check_ready()
        if req.run_id != self._run_id or req.delta_nonzeros:
            raise ProtocolError("input request of another run, or a difference round")
        if self._input_round is None or req.round != self._input_round:
            raise ProtocolError(f"round {req.round}: this client has not received its shares")
        x = np.asarray(x, dtype=np.float64).ravel()
        if x.size != self.n_words:
            raise InvalidInputError(f"vector has {x.size} entries, the run uses {self.n_words}")
        limit = self._limit
        enc = encode_fixed(x, self.scale_bits, limit)
        digest = self._m.data_digest(enc.tobytes())
        noise = tuple(noise)
        if noise:
            enc += client_noise(noise, self.n_words, self.threshold, self.scale_bits,
                                req.round, limit)
        self._add_mask(enc, int(req.round))
        self._m.mark_sent(req.round)
        self._sent = (req.round, digest)
        self._input_round = None
        # built from this client's own state (enc: a fresh contiguous uint64
        # vector), tagged once
        enc.setflags(write=False)
        msg = _built(MaskedVectorMessage, run_id=self._run_id, round=int(req.round),
                     sender=self.client_id, payload=enc)
        signed = msg.__dict__["_signed"] = msg.signed_bytes()
        msg.__dict__["tag"] = self._m.tag(signed + self._m.view(req.round))
        return msg

    def unmask_shares(self, req: UnmaskRequest) -> UnmaskMessage:
        """Step 4: the shares this client reveals for the round's survivors.

        Parameters
        ----------
        req : UnmaskRequest
            The server's survivors of the round this client answered last.

        Returns
        -------
        UnmaskMessage
            Shares of the surviving neighbours' self seeds and of the dropped
            neighbours' round keys, tagged for the server.

        Raises
        ------
        ProtocolError
            Not an :class:`UnmaskRequest`, a request of another run or round
            than the client's last input, no surviving bearer of the output
            mask, survivors below the threshold, or a survivor set that would
            reveal both kinds of share of one peer.
        """
        if not isinstance(req, UnmaskRequest):
            raise ProtocolError("expected an UnmaskRequest")
        if req.run_id != self._run_id or self._sent is None or self._sent[0] != req.round:
            raise ProtocolError(f"unmask request for round {req.round}, not this client's "
                                "last input")
        # the same vector summed over two survivor sets would reveal the
        # difference: refused (a FastLloyd iteration that repeats its stats
        # over the same clients is fine)
        if not self._bearers.intersection(req.survivors):
            raise ProtocolError(f"round {req.round}: no client carrying the output mask "
                                "survived; the sum would be in the clear: refused")
        owners, kinds, shares = self._m.unmask_columns(req.round, req.survivors, self._sent[1])
        self._sent = None
        self._answered = (req.round, tuple(req.survivors))
        return UnmaskMessage._signed_by(self._run_id, req.round, self.client_id, owners, kinds,
                                        shares, self._m.tag)

    def unmask(self, agg: AggregateMessage) -> NDArray[np.float64]:
        """Remove the survivors' output masks from the broadcast and decode
        (float64).  Every client of the run may decode it.

        Parameters
        ----------
        agg : AggregateMessage
            The server's broadcast of the round.

        Returns
        -------
        ndarray of shape (n_words,), dtype float64
            The survivors' sum (with the noise the round added).

        Raises
        ------
        ProtocolError
            Not an :class:`AggregateMessage`, before the group key, an
            aggregate of another run, length, round or survivor set than this
            client's, or over fewer than ``threshold`` (or unknown) clients.
        """
        if not isinstance(agg, AggregateMessage):
            raise ProtocolError("expected an AggregateMessage")
        self._check_ready()
        if agg.run_id != self._run_id:
            raise ProtocolError("aggregate of another run")
        if agg.payload.size != self.n_words:
            raise ProtocolError(f"aggregate of {agg.payload.size} words, expected {self.n_words}")
        if len(agg.survivors) < self.threshold or \
                not set(agg.survivors) <= set(self.participants):
            raise ProtocolError("aggregate over fewer than threshold clients or unknown ones")
        # the broadcast carries no tag: it must be the round this client
        # took part in, over the survivors it revealed shares for (a client
        # that dropped before the unmask request can only check the round)
        ans = self._answered
        if ans is not None and (agg.round, tuple(agg.survivors)) != ans:
            raise ProtocolError("aggregate of another round or survivor set than this client's")
        if ans is None and agg.round != self._last_round:
            raise ProtocolError("aggregate of another round than this client's last")
        w = agg.payload.copy()
        bearers = sorted(self._bearers.intersection(agg.survivors))
        nonce = struct.pack("<Q", int(agg.round)) + OUTPUT_TAG
        add_streams(w, b"".join([self._output_key(u) for u in bearers]), nonce * len(bearers),
                    MINUS * len(bearers))
        return decode_fixed(w, self.scale_bits)
