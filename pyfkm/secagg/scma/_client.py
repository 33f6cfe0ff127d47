"""The SCMA client: sparse data in, masked power sums out.

One :class:`ScmaClient` per party; it holds a
:class:`~pyfkm.secagg._masking.MaskingClient` for the keys, shares and
unmasking of every round, and its own data, encodings and the rounds it was
summed in (the bases of difference rounds).  The server is
:mod:`._server`.
"""
from __future__ import annotations

import dataclasses
import operator
import struct
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...core.lattice import row_keys
from ...exceptions import CapacityError, InvalidInputError, ProtocolError
from ...field import kernels as _field
from .._framing import TAG_BYTES, _built
from .._keys import data_digest
from .._masking import MaskingClient
from .._messages import (InputRequest, KeyMessage, RoundMessage, ShareBundle, ShareMessage,
                         UnmaskMessage, UnmaskRequest, unmask_body)
from ._codec import Codec
from ._crypto import SCMA_TAG, _stream_limit, add_mod
from ._messages import RosterMessage, SyndromeMessage, _request_bytes
from ._params import count_budget, delta_params

# answered rounds a client remembers as bases of difference rounds (the
# server's base is its last finished round; abandoned rounds come after it)
_KEEP_ANSWERED = 4


def check_sparse(bins: ArrayLike, counts: ArrayLike, params: Any, name: str = "client"
                 ) -> tuple[NDArray[np.int64], NDArray[np.uint64]]:
    """Validated (distinct bins int64 (k, d) sorted lexicographically,
    positive integer counts (k,)); duplicate bins are merged by adding their
    counts (as Python ints: they may exceed 64 bits)."""
    d, B = params.n_dims, params.bins_per_dim
    bins = np.asarray(bins)
    counts = np.asarray(counts)
    if bins.size == 0 and counts.size == 0:
        return np.zeros((0, d), dtype=np.int64), np.zeros(0, dtype=np.uint64)
    if bins.dtype.kind not in "iu" or bins.ndim != 2 or bins.shape[1] != d:
        raise InvalidInputError(
            f"{name}: bins must be an integer array of shape (nnz, {d}), got "
            f"{bins.dtype} {bins.shape}")
    if counts.dtype.kind not in "iu" or counts.shape != (bins.shape[0],):
        raise InvalidInputError(
            f"{name}: counts must be integers of shape ({bins.shape[0]},), got "
            f"{counts.dtype} {counts.shape}")
    if bins.size and (int(bins.min()) < 0 or int(bins.max()) >= B):
        raise InvalidInputError(f"{name}: bin coordinates must lie in [0, {B})")
    if counts.size and int(counts.min()) < 1:
        raise InvalidInputError(f"{name}: counts must be positive")
    bins = np.array(bins, dtype=np.int64, order="C")     # a copy: the caller's may change
    rows = bins.tolist()
    if all(map(operator.lt, rows, rows[1:])):
        return bins, counts.copy()   # distinct and sorted already (the usual input)
    _, first, inv = np.unique(row_keys(bins), return_index=True, return_inverse=True)
    merged = np.zeros(first.size, dtype=object)
    np.add.at(merged, inv.ravel(), counts.astype(object))
    return bins[first], merged


class ScmaClient:
    """One client of an SCMA run.

    Every key of the client comes from the operating system: a fresh X25519
    channel key for each run (:meth:`key_message`), a fresh round key and
    self-mask seed for each round (:meth:`share_keys`).  Nothing about them
    follows a user seed.

    One round, in the order of the messages (see :mod:`pyfkm.secagg`)::

        share_keys(RoundMessage)     -> ShareMessage
        receive_shares(ShareBundle)
        respond(InputRequest)        -> SyndromeMessage
        unmask(UnmaskRequest)        -> UnmaskMessage

    The client refuses any step of a round with fewer than the run's
    ``threshold`` clients, a round it already took part in, a survivor set
    that would make it reveal both kinds of share of one peer, and a full
    round that resends the same data to a different set of survivors than
    the last full round it was summed in (so that no two rounds can be
    differenced to isolate a client).  Each refusal is a
    :class:`ProtocolError`.

    Parameters
    ----------
    client_id : int
        In ``[0, 2**32 - 1)``; unique in the run.

    Raises
    ------
    InvalidInputError
        ``client_id`` not an int in range.

    Examples
    --------
    A full round, then a difference round after client 0 forgot a bin (an
    unlearning round: only the change is sent, under shorter masks);
    :class:`ScmaServer` shows the steps of a round one by one.

    >>> from pyfkm.secagg import RoundTrip, ScmaParams, setup_in_process
    >>> server, clients = setup_in_process(ScmaParams.create(2, 10, 4), 2)
    >>> clients[0].set_data([[0, 1], [3, 3]], [1, 1])
    >>> clients[1].set_data([[0, 1]], [2])
    >>> roles = dict(enumerate(clients))
    >>> RoundTrip(server, roles).share().inputs().finish().counts.tolist()
    [3, 1]
    >>> clients[0].set_data([[0, 1]], [1])
    >>> clients[0].changed_bins(base_round=1), clients[1].changed_bins(base_round=1)
    (1, 0)
    >>> trip = RoundTrip(server, roles).share()
    >>> clients[0].precompute_mask(delta_nonzeros=1)      # offline, before the request
    >>> res = trip.inputs(delta_nonzeros=1).finish()
    >>> res.bins.tolist(), res.counts.tolist(), res.report.message_words
    ([[0, 1]], [3], 4)
    >>> clients[0].forget_rounds_before(res.report.round)
    """

    # for the type checker: the run's state (None until the roster arrives)
    params: Any
    _run_id: bytes | None
    _n_roster: int
    _round_keys: Any
    _stream_limit: int

    def __init__(self, client_id: int) -> None:
        if not isinstance(client_id, (int, np.integer)) or isinstance(client_id, bool) \
                or not 0 <= int(client_id) < 0xFFFFFFFF:
            raise InvalidInputError(f"client_id must be an int in [0, 2**32 - 1), got {client_id!r}")
        self.client_id = int(client_id)
        self._m = MaskingClient(self.client_id)
        self._run_id = None
        self.params = None
        self._reset()

    def _reset(self):
        self._codec = None
        self._encoded = None
        self._data = None
        self._digest = None       # (data, data key, keyed digest of the data)
        self._answered = {}        # rounds whose sum included this client ->
        #                            (data, clients whose data that aggregate holds)
        self._delta_codecs = {}
        self._sent = None          # (round, data, full) of the input sent, until unmasked
        self._mask_cache = None    # (round, mask)
        self._input_round = None   # the round whose shares were received
        self._last_change = None
        self._unmask_body = None   # (shares, body) of step 4's usual answer, laid out ahead
        self._unmask_msg = None    # that answer as a message, tagged ahead (sent only by unmask)

    @property
    def public_key(self) -> bytes:
        """The channel key of the current run (32 bytes)."""
        return self._public

    def key_message(self, run_id: bytes) -> KeyMessage:
        """The key message that opens run ``run_id`` (16 bytes), with a fresh
        channel key; a client joins a run id once.

        Joining a run forgets the previous run's roster, data and rounds.

        Parameters
        ----------
        run_id : bytes
            16 bytes naming the run (:attr:`ScmaParams.run_id`).

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
        rid = _check_run_id_arg(run_id)
        self._public = self._m.open_run(rid)
        self._run_id = rid
        self.params = None
        self._reset()
        return KeyMessage(rid, self.client_id, self._public)

    def receive_roster(self, roster: RosterMessage) -> None:
        """Check the roster (this client's key in it, the threshold, the graph)
        and derive the channel keys with the client's neighbours.

        Parameters
        ----------
        roster : RosterMessage
            The server's roster of the run; its parameters become
            :attr:`params`.

        Raises
        ------
        ProtocolError
            Not a :class:`RosterMessage`, a roster of another run or before
            :meth:`key_message`, a second roster, a roster without this client's
            key or repeating a key, or an unusable peer key.
        """
        if not isinstance(roster, RosterMessage):
            raise ProtocolError("expected a RosterMessage")
        if self._run_id is None or roster.run_id != self._run_id:
            raise ProtocolError("roster of another run")
        self._m.join(roster.params_bytes(), roster.threshold, roster.degree,
                     roster.server_key, roster.client_ids, roster.public_keys)
        P = roster.params
        self.params = P
        self._codec = Codec(P)
        self._n_roster = len(roster.client_ids)
        self._stream_limit = _stream_limit(P.modulus)
        self.threshold = roster.threshold

    def set_data(self, bins: ArrayLike, counts: ArrayLike) -> None:
        """Set this client's sparse vector and cache its unmasked encoding.

        Duplicate bins are merged (their counts added).  The data can change
        between rounds; a difference round then sends the change.

        Parameters
        ----------
        bins : array-like of int, shape (nnz, n_dims)
            Nonzero bins, coordinates in ``[0, bins_per_dim)``; may be empty.
        counts : array-like of int, shape (nnz,)
            Their positive counts, summing to at most :attr:`count_budget`.

        Raises
        ------
        ProtocolError
            Before the roster.
        InvalidInputError
            Bins or counts of the wrong type, shape or range.
        CapacityError
            More than ``max_client_nonzeros`` distinct bins, or a total count
            above :attr:`count_budget`.
        DecodeError
            A bin hashes to 0 (hashed mode; a fresh hash seed avoids it).
        """
        if self.params is None:
            raise ProtocolError("receive the roster before setting data")
        P = self.params
        bins, counts = check_sparse(bins, counts, P, f"client {self.client_id}")
        if bins.shape[0] > P.max_client_nonzeros:
            raise CapacityError(
                f"client {self.client_id}: {bins.shape[0]} nonzero bins exceed "
                f"max_client_nonzeros = {P.max_client_nonzeros}")
        budget = self.count_budget
        total = sum(counts.tolist())          # Python ints: no wrap-around
        if total > budget:
            raise CapacityError(
                f"client {self.client_id}: total count {total} exceeds "
                f"(p - 1) / (2 n_clients) = {budget}, so the aggregate could wrap modulo p")
        counts = counts.astype(np.uint64)
        # checked now (a bin hashing to 0 raises here); encoded when a full
        # round asks for it (difference rounds send changes only)
        if not self._codec.nodes(bins).all():
            self._codec.encode(bins, counts)
        self._encoded = self._digest = None
        self._data = (bins, counts)

    @property
    def count_budget(self) -> int:
        """Largest total count of one client: ``(p - 1) // (2 n)`` for a roster
        of ``n``, so every honest aggregate lies in ``[0, (p - 1) / 2]`` and
        a decoded count above that (a forged "negative" one) is rejected."""
        return count_budget(self.params.modulus, self._n_roster)

    # -- step 1
    def share_keys(self, round_msg: RoundMessage) -> ShareMessage:
        """Step 1 of a round: a fresh round key and self seed, shared among
        this client's neighbours in the round (:class:`ShareMessage`).

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
            Not a :class:`RoundMessage`, a round of another run or before the
            roster, a round not after the client's last one, a round the client
            is not in, fewer participants (or holders) than the threshold, or a
            round message with ``delta_nonzeros`` set.
        """
        if not isinstance(round_msg, RoundMessage):
            raise ProtocolError("expected a RoundMessage")
        if self.params is None or round_msg.run_id != self._run_id:
            raise ProtocolError("round of another run (or roster not received)")
        if round_msg.delta_nonzeros:
            raise ProtocolError("round messages open rounds; the input request says its size")
        pk, commit, items = self._m.share(round_msg.round, round_msg.participants)
        self._mask_cache = self._input_round = self._sent = None
        msg = _built(ShareMessage, run_id=self._run_id, round=round_msg.round,
                     sender=self.client_id, round_key=pk, commitment=commit,
                     holders=tuple(h for h, _ in items), ciphertexts=tuple(c for _, c in items),
                     tag=bytes(TAG_BYTES))
        return dataclasses.replace(msg, tag=self._m.tag(msg.signed_bytes()))

    # -- step 2
    def receive_shares(self, bundle: ShareBundle) -> None:
        """Step 2: the shares of this client's neighbours and their round
        keys; derives the round's pair keys.

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
        keys = self._m.receive_shares(bundle.round, bundle.sharers,
                                      zip(bundle.owners, bundle.round_keys, bundle.ciphertexts))
        me = self.client_id
        others = sorted(keys)
        self._round_keys = (
            np.frombuffer(b"".join([self._m.mask_keys(bundle.round)[0]]
                                   + [keys[o] for o in others]), np.uint8)
            .reshape(len(others) + 1, 32).copy(),
            np.array([0] + [int(me > o) for o in others], dtype=np.uint8))
        self._input_round = bundle.round
        # step 4's answer when every held owner survives, serialized and
        # tagged ahead (no data involved).  It stays with the client: unmask
        # sends it only after its checks pass and only when the request asks
        # for exactly these shares; otherwise it is dropped unsent
        owners, kinds, shares = self._m.reveal_all(bundle.round)
        body = unmask_body(owners, kinds, shares)
        msg = UnmaskMessage._signed_by(self._run_id, bundle.round, self.client_id,
                                       owners, kinds, shares, self._m.tag, body)
        # both or neither: a failed signature leaves no body paired with an
        # older round's message
        self._unmask_body, self._unmask_msg = (shares, body), msg

    def mask(self, round_: int, n_words: int | None = None) -> NDArray[np.uint64]:
        """This client's mask of its open round (after :meth:`receive_shares`):
        its self stream plus its signed pair streams, ``n_words`` long
        (default a full message).

        Parameters
        ----------
        round_ : int
            The open round (the one whose shares were received).
        n_words : int, optional
            Length of the mask (default :attr:`ScmaParams.message_words`).

        Returns
        -------
        ndarray of shape (n_words,), dtype uint64
            Field elements below the modulus.

        Raises
        ------
        ProtocolError
            The shares of ``round_`` were not received.
        """
        if self._input_round is None or int(round_) != self._input_round:
            raise ProtocolError(f"round {round_}: shares not received")
        n = self.params.message_words if n_words is None else int(n_words)
        keys, neg = self._round_keys
        acc = np.zeros(n, dtype=np.uint64)
        if n:
            nonce = np.frombuffer(struct.pack("<Q", int(round_)) + SCMA_TAG, np.uint8)
            _field.add_streams(acc, keys, neg, nonce, self._stream_limit, self.params.modulus)
        return acc

    def precompute_mask(self, delta_nonzeros: int = 0) -> None:
        """Offline phase: compute the open round's mask now, sized for a
        difference round of ``delta_nonzeros`` bins (0: a full round), so
        that :meth:`respond` is one addition; a mask also serves any
        shorter message of its round, and is used once.

        Parameters
        ----------
        delta_nonzeros : int, default=0
            The difference round's bound on changed bins, in
            ``[1, max_nonzeros]``; 0 for a full round.

        Raises
        ------
        ProtocolError
            The round's shares were not received, or ``delta_nonzeros`` out of
            range.
        """
        if self._input_round is None:
            raise ProtocolError("receive the round's shares before precomputing its mask")
        n = self._delta_codec(delta_nonzeros).params.message_words if delta_nonzeros \
            else self.params.message_words
        self._mask_cache = (self._input_round, self.mask(self._input_round, n))

    def _delta_codec(self, m: int) -> Any:  # a Codec
        """Codec of difference rounds with at most ``m`` changed bins."""
        m = int(m)
        if not 1 <= m <= self.params.max_nonzeros:
            raise ProtocolError(
                f"delta_nonzeros = {m} must lie in [1, max_nonzeros = {self.params.max_nonzeros}]")
        c = self._delta_codecs.get(m)
        if c is None:
            c = self._delta_codecs[m] = Codec(delta_params(self.params, m))
        return c

    def _change(self, base: Any) -> tuple[NDArray[np.int64], NDArray[np.uint64]]:
        """(bins, counts as field elements) of (data now) - ``base``."""
        last = self._last_change
        if last is not None and last[0] is base and last[1] is self._data:
            return last[2]
        out = self._compute_change(base)
        self._last_change = (base, self._data, out)
        return out

    def _compute_change(self, base: Any) -> tuple[NDArray[np.int64], NDArray[np.uint64]]:
        d, p = self.params.n_dims, self.params.modulus
        data = self._data
        if base is data:
            return np.zeros((0, d), dtype=np.int64), np.zeros(0, dtype=np.uint64)
        (b0, q0), (b1, q1) = base, data
        # counts are < p < 2**63: a + (p - b) stays below 2**64
        if b0.shape == b1.shape and np.array_equal(b0, b1):
            dq = (q1 + (np.uint64(p) - q0)) % np.uint64(p)      # same bins
            keep = dq != 0
            return b1[keep], dq[keep]
        bins = np.concatenate([b1, b0])
        q = np.concatenate([q1, (np.uint64(p) - q0) % np.uint64(p)])
        rows = np.ascontiguousarray(bins).view(np.dtype((np.void, 8 * d))).ravel()
        _, first, inv = np.unique(rows, return_index=True, return_inverse=True)
        dq = np.zeros(first.size, dtype=np.uint64)
        np.add.at(dq, inv.ravel(), q)      # at most one term from each side
        dq %= np.uint64(p)
        keep = dq != 0
        return bins[first][keep], dq[keep]

    def changed_bins(self, base_round: int) -> int:
        """Number of bins whose count changed since round ``base_round`` (a
        round whose sum included this client; the server's
        :attr:`ScmaServer.last_decoded`).  What a driver sizes a difference
        round with; the server learns the same number from the decoded
        change anyway.

        Parameters
        ----------
        base_round : int
            The base round of the difference; the latest round at or before it
            whose sum included this client is taken.

        Returns
        -------
        int
            Bins whose count differs from the base's (added, removed or
            changed).

        Raises
        ------
        ProtocolError
            No data set, or no remembered round at or before ``base_round``
            summed this client (a full round is needed).
        """
        if self._data is None:
            raise ProtocolError("set_data first")
        return int(self._change(self._base(base_round)[0])[1].size)

    def _base(self, base_round: int) -> Any:
        """``(data, included)`` of the latest round at or before
        ``base_round`` whose sum included this client: what the server's
        aggregate holds for it (a client that dropped from later rounds had
        no change in them, or those rounds failed), and the clients whose
        data that aggregate holds -- a difference round on this base gives
        the data now summed over the same clients."""
        if not isinstance(base_round, (int, np.integer)) or isinstance(base_round, bool):
            raise ProtocolError(f"base_round must be an int, got {base_round!r}")
        rounds = [r for r in self._answered if r <= int(base_round)]
        if not rounds:
            raise ProtocolError(f"client {self.client_id} was not summed in round "
                                f"{base_round} or before (or forgot it): a full round is needed")
        return self._answered[max(rounds)]

    def forget_rounds_before(self, round_: int) -> None:
        """Drop what this client sent in rounds before ``round_`` (and any
        change computed against them): after an unlearning round is
        decoded, nothing of the data it replaced stays with the client.
        Difference rounds based on the dropped rounds then need a full
        round.

        Parameters
        ----------
        round_ : int
            The first round to keep.
        """
        self._answered = {r: v for r, v in self._answered.items() if r >= int(round_)}
        self._last_change = None

    def forget_data(self) -> None:
        """Drop this client's data and everything derived from it (a
        client that leaves the federation)."""
        self._data = self._encoded = self._last_change = self._digest = None
        self._answered = {}
        self._sent = None

    def _delta_message(self, req: InputRequest) -> tuple[Any, Any, Any]:
        """(codec, encoding of (data now) - (data summed in round
        ``base_round``), the clients whose data that round's aggregate
        holds); the encoding is None when nothing changed."""
        base, included = self._base(req.base_round)
        codec = self._delta_codec(req.delta_nonzeros)
        bins, dq = self._change(base)
        if dq.size == 0:
            return codec, None, included      # nothing changed: the mask alone
        if dq.size > codec.params.max_nonzeros:
            raise CapacityError(
                f"client {self.client_id}: {dq.size} changed bins exceed "
                f"delta_nonzeros = {codec.params.max_nonzeros}: a full round is needed")
        return codec, codec.encode(bins, dq), included

    # -- step 3
    def respond(self, req: InputRequest) -> SyndromeMessage:
        """Step 3: the masked syndromes asked for by ``req`` (an
        :class:`InputRequest` of the round whose shares were received).

        A full round sends the encoding of the data; a difference round the
        encoding of its change since ``req.base_round``.  A mask from
        :meth:`precompute_mask` is used when it fits.

        Parameters
        ----------
        req : InputRequest
            The server's request.

        Returns
        -------
        SyndromeMessage
            The masked input, its tag binding the request and the round's
            sharers.

        Raises
        ------
        ProtocolError
            Not an :class:`InputRequest`, a request of another run or round, no
            data set, a round already answered, a difference round out of range
            or without a remembered base.
        CapacityError
            A difference round with more changed bins than ``delta_nonzeros``.
        """
        if not isinstance(req, InputRequest):
            raise ProtocolError("expected an InputRequest")
        if self.params is None or req.run_id != self._run_id:
            raise ProtocolError("input request of another run (or roster not received)")
        if self._input_round is None or req.round != self._input_round:
            raise ProtocolError(f"round {req.round}: this client has not received its shares")
        if self._data is None:
            raise ProtocolError("set_data before responding")
        dn = req.delta_nonzeros
        if dn:
            codec, encoded, included = self._delta_message(req)
        else:
            if self._encoded is None:
                self._encoded = self._codec.encode(*self._data)
            codec, encoded, included = self._codec, self._encoded, None
        W = codec.params.message_words
        cache = self._mask_cache
        self._mask_cache = None
        if cache is not None and cache[0] == req.round and cache[1].size >= W:
            mask = cache[1][:W].copy()
        else:
            mask = self.mask(req.round, W)
        self._m.mark_sent(req.round)          # once per round
        masked = mask if encoded is None else add_mod(mask, encoded, self.params.modulus)
        # the clients whose data the round's aggregate will hold: the
        # survivors (a full round) or the base's (a difference round)
        self._sent = (req.round, self._data, included)
        self._input_round = None
        self._round_keys = None
        msg = SyndromeMessage._trusted(self._run_id, req.round, self.client_id,
                                       self.params.modulus, masked)
        # tagged once built (a frozen message of this client's own state)
        msg.__dict__["tag"] = self._m.tag(msg.signed_bytes()
                                          + self._m.view(req.round, _request_bytes(req)))
        return msg

    # -- step 4
    def unmask(self, req: UnmaskRequest) -> UnmaskMessage:
        """Step 4: the shares this client reveals for the survivors of its
        round (:class:`UnmaskMessage`).  Refuses, revealing nothing, below
        the threshold, when the survivors are not a subset of the sharers,
        or when a full round would resend the same data to a different set
        of survivors (two such sums differ by a subset's vectors).

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
            than the client's last input, or one of the refusals above.
        """
        if not isinstance(req, UnmaskRequest):
            raise ProtocolError("expected an UnmaskRequest")
        if req.run_id != self._run_id or self._sent is None or self._sent[0] != req.round:
            raise ProtocolError(f"unmask request for round {req.round}, not this client's "
                                "last input")
        rnd, data, base_included = self._sent
        full = base_included is None
        survivors = req.survivor_set()
        # the keyed digest of data that did not change since the last round
        # is the same: computed once per data (and run key)
        cached = self._digest
        if cached is not None and cached[0] is data and cached[1] is self._m.data_key:
            digest = cached[2]
        else:
            digest = data_digest(self._m.data_key, data[0].tobytes(), data[1].tobytes())
            self._digest = (data, self._m.data_key, digest)
        # the aggregate after a full round is the survivors' data; after a
        # difference round it is the data now of the clients its base held
        # (whichever base the server names: the change is taken against it).
        # The same data summed over another set would reveal the difference
        included = survivors if full else base_included
        owners, kinds, shares = self._m.unmask_columns(rnd, survivors, digest, included)
        self._sent = None
        # the input is in the sum (if the server completes the round)
        answered = self._answered
        answered[rnd] = (data, included)
        if len(answered) > _KEEP_ANSWERED:
            del answered[next(iter(answered))]     # the oldest: rounds only increase
        ahead, self._unmask_body = self._unmask_body, None
        msg, self._unmask_msg = self._unmask_msg, None
        if ahead is not None and ahead[0] is shares and msg is not None and msg.round == rnd:
            return msg                # every held owner survived: laid out in step 2
        return UnmaskMessage._signed_by(self._run_id, rnd, self.client_id, owners, kinds,
                                        shares, self._m.tag)


def _check_run_id_arg(run_id: object) -> bytes:
    if not isinstance(run_id, (bytes, bytearray)) or len(run_id) != 16:
        raise InvalidInputError("run_id must be 16 bytes")
    return bytes(run_id)
