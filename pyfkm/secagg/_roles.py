"""The two roles of SCMA: clients and the (honest-but-curious) server."""
import dataclasses
import functools
import operator
import struct
import time
from dataclasses import dataclass

import numpy as np

from .._core import _field
from ..exceptions import CapacityError, InvalidInputError, ProtocolError
from ..lattice import row_keys
from ._codec import Codec
from ._crypto import SCMA_TAG, _stream_limit, add_mod, new_private_key, public_bytes
from ._messages import (KeyMessage, RosterMessage, RoundMessage, SyndromeMessage, _built,
                        check_key_message, check_round_message, parse_syndromes,
                        roster_pair_seeds)


# answered rounds a client remembers as bases of difference rounds (the
# server's base is its last finished round; abandoned rounds come after it)
_KEEP_ANSWERED = 4


@functools.lru_cache(maxsize=64)
def delta_params(params, m):
    """Parameters of the difference rounds with at most ``m`` changed bins:
    the run's, with ``max_nonzeros = m``, always in the hashed layout.  Its
    payload rows and squared check hash make a change of more than ``m``
    bins fail to decode (probability ~1/p of slipping through), which the
    index layout's ``2m`` power sums alone cannot promise.  Memoized: every
    role and driver of a run asks for the same few sizes."""
    return dataclasses.replace(params, max_nonzeros=m, max_client_nonzeros=m, mode="hashed")


def _sorted_ids(ids):
    """Client ids as a sorted tuple of ints (fast when they already are)."""
    if type(ids) is tuple and not set(map(type, ids)) - {int} \
            and all(map(operator.lt, ids, ids[1:])):
        return ids
    return tuple(sorted(int(i) for i in ids))


def check_sparse(bins, counts, params, name="client"):
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

    Parameters
    ----------
    client_id : int
        In ``[0, 2**32 - 1)``; unique in the run.
    random_state : None, int or Generator
        None (default) draws the X25519 key from the OS; a seed makes the
        key reproducible, which is only for tests and simulations.

    Examples
    --------
    See :func:`secure_sum_sparse` for the whole exchange in one call.
    """

    def __init__(self, client_id, *, random_state=None):
        if not isinstance(client_id, (int, np.integer)) or not 0 <= int(client_id) < 0xFFFFFFFF:
            raise InvalidInputError(f"client_id must be an int in [0, 2**32 - 1), got {client_id!r}")
        self.client_id = int(client_id)
        self._key = new_private_key(random_state)
        self.public_key = public_bytes(self._key)
        self._run_id = None
        self.params = None
        self._seeds = {}
        self._codec = None
        self._encoded = None
        self._data = None
        self._answered = {}        # recent answered rounds -> the data sent
        self._delta_codecs = {}
        self._last_round = 0
        self._pairs = self._mask_cache = self._checked = self._member_of = None
        self._roster_run = self._last_change = None

    def key_message(self, run_id):
        """The key message that opens run ``run_id`` (16 bytes)."""
        msg = KeyMessage(run_id, self.client_id, self.public_key)
        self._run_id = msg.run_id
        return msg

    def receive_roster(self, roster):
        """Derive the pairwise seeds with every other client of the roster."""
        seeds = roster_pair_seeds(roster, RosterMessage, self._run_id, self.client_id,
                                  self._key, self.public_key)
        if roster.run_id == self._roster_run and self._last_round > 0:
            # the same run's pair seeds again: starting its rounds over would
            # repeat masks (found by review)
            raise ProtocolError(
                "the roster of this run was already received and rounds answered; "
                "a new run (new run_id, key message) is needed")
        self._roster_run = roster.run_id
        self.params = roster.params
        self._codec = Codec(roster.params)
        self._seeds = seeds
        self._roster = frozenset(roster.client_ids)
        # everything derived from the previous run's seeds, parameters or
        # rounds goes: data is set again for this run
        self._pairs = self._mask_cache = self._encoded = self._data = None
        self._checked = self._member_of = self._last_change = None
        self._stream_limit = _stream_limit(roster.params.modulus)
        self._delta_codecs, self._answered, self._last_round = {}, {}, 0

    def pair_seed(self, other_id):
        """The 32-byte seed shared with client ``other_id`` (for audits and tests)."""
        if other_id not in self._seeds:
            raise ProtocolError(f"no seed with client {other_id}")
        return self._seeds[other_id]

    def set_data(self, bins, counts):
        """Set this client's sparse vector and cache its unmasked encoding.

        ``bins``: int array (nnz, d) with coordinates in ``[0, B)``;
        ``counts``: positive ints.  Duplicate bins are merged.
        """
        if self.params is None:
            raise ProtocolError("receive the roster before setting data")
        P = self.params
        bins, counts = check_sparse(bins, counts, P, f"client {self.client_id}")
        if bins.shape[0] > P.max_client_nonzeros:
            raise CapacityError(
                f"client {self.client_id}: {bins.shape[0]} nonzero bins exceed "
                f"max_client_nonzeros = {P.max_client_nonzeros}")
        budget = (P.modulus - 1) // max(len(self._roster), 1)
        total = sum(counts.tolist())          # Python ints: no wrap-around
        if total > budget:
            raise CapacityError(
                f"client {self.client_id}: total count {total} exceeds "
                f"(p - 1) / n_clients = {budget}, so the aggregate could wrap modulo p")
        counts = counts.astype(np.uint64)
        # checked now (a bin hashing to 0 raises here); encoded when a full
        # round asks for it (difference rounds send changes only)
        if not self._codec.nodes(bins).all():
            self._codec.encode(bins, counts)
        self._encoded = None
        self._data = (bins, counts)

    def mask(self, round_, participants, n_words=None):
        """This client's mask for a round with the given participants
        (``n_words`` long; default: a full message)."""
        n = self.params.message_words if n_words is None else int(n_words)
        return self._masks(int(round_), 1, participants, n)[0]

    def _masks(self, round_, n_rounds, participants, n):
        """(n_rounds, n) masks of rounds round_, round_ + 1, ... in one
        kernel call."""
        _, keys, neg = self._pair_keys(participants)
        masks = np.zeros((n_rounds, n), dtype=np.uint64)
        if n and keys.shape[0]:
            nonces = np.frombuffer(b"".join(struct.pack("<Q", round_ + r) + SCMA_TAG
                                            for r in range(n_rounds)),
                                   np.uint8).reshape(n_rounds, 12)
            _field.add_streams_rounds(masks, keys, neg, nonces, self._stream_limit,
                                      self.params.modulus)
        return masks

    def _pair_keys(self, participants):
        """(participants, pair seeds (k, 32) uint8, negate flags) of the
        other participants; reused while the participants stay the same."""
        cached = self._pairs
        if cached is not None and (participants is cached[0]
                                   or cached[0] == tuple(participants)):
            return cached
        parts = tuple(participants)
        others = [o for o in parts if o != self.client_id]
        missing = [o for o in others if o not in self._seeds]
        if missing:
            raise ProtocolError(f"participant {missing[0]} is not in the roster")
        keys = np.frombuffer(b"".join(self._seeds[o] for o in others),
                             np.uint8).reshape(len(others), 32)
        neg = np.array([self.client_id > o for o in others], dtype=np.uint8)
        self._pairs = (parts, keys, neg)
        return self._pairs

    def precompute_mask(self, round_, participants, delta_nonzeros=0, n_rounds=1):
        """Offline phase: compute the masks of future rounds now, so that
        :meth:`respond` to such a round (same participants) is one addition.

        Masks of rounds ``round_, ..., round_ + n_rounds - 1`` (computed in
        one call), sized as for a difference round of ``delta_nonzeros``
        bins (0: a full round).  A round's mask of ``W`` words is the first
        ``W`` words of its pair streams, so a cached mask also serves any
        shorter message of its round.  Each cached mask is used at most
        once and only for its round and participants; answering a round
        drops the masks of that round and earlier ones, other participants
        drop them all, and anything not cached is computed when needed.
        """
        if self.params is None:
            raise ProtocolError("receive the roster before precomputing masks")
        # participants checked once (the same tuple comes back every round)
        parts = participants if participants is self._checked else _sorted_ids(participants)
        self._checked = parts
        round_, R = int(round_), int(n_rounds)
        if round_ <= self._last_round:
            raise ProtocolError(f"round {round_} was already answered")
        if R < 1:
            raise ProtocolError(f"n_rounds = {n_rounds!r} must be >= 1")
        n = self._delta_codec(delta_nonzeros).params.message_words if delta_nonzeros \
            else self.params.message_words
        masks = self._masks(round_, R, parts, n)
        self._mask_cache = (parts, dict(zip(range(round_, round_ + R), masks)))

    def _cached_mask(self, round_msg, n_words):
        """The precomputed mask of this round (first ``n_words`` words), or
        None; forgets the masks of this and earlier rounds."""
        cache = self._mask_cache
        if cache is None:
            return None
        parts, masks = cache
        if not (parts is round_msg.participants or parts == tuple(round_msg.participants)):
            self._mask_cache = None
            return None
        mask = masks.pop(round_msg.round, None)
        # rounds are cached in increasing order: skipped ones come first
        while masks and next(iter(masks)) < round_msg.round:
            del masks[next(iter(masks))]
        if mask is None or mask.size < n_words:
            return None
        # the round's streams, first n_words words; a copy, so that the
        # message shares no memory with other rounds' masks (rows of one array)
        return mask[:n_words].copy()

    def _delta_codec(self, m):
        """Codec of difference rounds with at most ``m`` changed bins."""
        m = int(m)
        if not 1 <= m <= self.params.max_nonzeros:
            raise ProtocolError(
                f"delta_nonzeros = {m} must lie in [1, max_nonzeros = {self.params.max_nonzeros}]")
        c = self._delta_codecs.get(m)
        if c is None:
            c = self._delta_codecs[m] = Codec(delta_params(self.params, m))
        return c

    def _change(self, base):
        """(bins, counts as field elements) of (data now) - ``base`` (the
        last answer is kept: a driver asks :meth:`changed_bins` and then
        :meth:`respond` for the same change)."""
        last = self._last_change
        if last is not None and last[0] is base and last[1] is self._data:
            return last[2]
        out = self._compute_change(base)
        self._last_change = (base, self._data, out)
        return out

    def _compute_change(self, base):
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

    def changed_bins(self, base_round):
        """Number of bins whose count changed since round ``base_round``
        (the server's last decoded round, :attr:`ScmaServer.last_decoded`;
        rounds answered after it were abandoned).  What a driver sizes a
        difference round with; the server learns the same number from the
        decoded change anyway."""
        if self._data is None:
            raise ProtocolError("set_data first")
        base = self._answered.get(int(base_round))
        if base is None:
            raise ProtocolError(f"client {self.client_id} did not answer round {base_round}")
        return int(self._change(base)[1].size)

    def forget_rounds_before(self, round_):
        """Drop what this client sent in rounds before ``round_`` (and any
        change computed against them): after an unlearning round is
        decoded, nothing of the data it replaced stays with the client.
        Difference rounds based on the dropped rounds then need a full
        round."""
        self._answered = {r: v for r, v in self._answered.items() if r >= int(round_)}
        self._last_change = None

    def forget_data(self):
        """Drop this client's data and everything derived from it (a
        client that leaves the federation)."""
        self._data = self._encoded = self._last_change = None
        self._answered = {}

    def _delta_message(self, round_msg):
        """(codec, encoding of (data now) - (data sent in round
        ``base_round``)); the encoding is None when nothing changed."""
        base = self._answered.get(round_msg.base_round)
        if base is None:
            raise ProtocolError(
                f"client {self.client_id} did not answer round {round_msg.base_round} "
                f"(or forgot it): a full round is needed")
        codec = self._delta_codec(round_msg.delta_nonzeros)
        bins, dq = self._change(base)
        if dq.size == 0:
            return codec, None                # nothing changed: the mask alone
        if dq.size > codec.params.max_nonzeros:
            raise CapacityError(
                f"client {self.client_id}: {dq.size} changed bins exceed "
                f"delta_nonzeros = {codec.params.max_nonzeros}: a full round is needed")
        return codec, codec.encode(bins, dq)

    def respond(self, round_msg):
        """The masked syndromes for ``round_msg`` (each round is answered once)."""
        if not isinstance(round_msg, RoundMessage):
            raise ProtocolError("expected a RoundMessage")
        if self.params is None or round_msg.run_id != self._run_id:
            raise ProtocolError("round of another run (or roster not received)")
        if round_msg.round <= self._last_round:
            raise ProtocolError(
                f"round {round_msg.round} is not after the last answered round "
                f"{self._last_round}: masks are never reused")
        if round_msg.participants is not self._member_of:
            if self.client_id not in round_msg.participants:
                raise ProtocolError(
                    f"client {self.client_id} is not a participant of this round")
            self._member_of = round_msg.participants
        if self._data is None:
            raise ProtocolError("set_data before responding")
        dn = round_msg.delta_nonzeros
        if dn:
            codec = self._delta_codecs.get(dn)
            if codec is not None and self._answered.get(round_msg.base_round) is self._data:
                encoded = None                 # nothing changed: the mask alone
            else:
                codec, encoded = self._delta_message(round_msg)
        else:
            if self._encoded is None:
                self._encoded = self._codec.encode(*self._data)
            codec, encoded = self._codec, self._encoded
        W = codec.params.message_words
        mask = self._cached_mask(round_msg, W)
        if mask is None:
            mask = self.mask(round_msg.round, round_msg.participants, W)
        masked = mask if encoded is None else add_mod(mask, encoded, self.params.modulus)
        self._last_round = round_msg.round
        answered = self._answered
        answered[round_msg.round] = self._data
        if len(answered) > _KEEP_ANSWERED:
            del answered[next(iter(answered))]     # the oldest: rounds only increase
        return SyndromeMessage._trusted(self._run_id, round_msg.round, self.client_id,
                                        self.params.modulus, masked)


@dataclass(frozen=True)
class ScmaReport:
    """What one aggregation round cost."""

    mode: str
    modulus: int
    round: int
    n_participants: int
    message_words: int
    bytes_per_client: int
    server_bytes: int
    decode_seconds: float
    incremental: bool
    paper_bits_per_client: int
    dense_bits_per_client: int


@dataclass(frozen=True)
class ScmaResult:
    """Aggregated sparse vector (rows sorted lexicographically) and report."""

    bins: np.ndarray
    counts: np.ndarray
    report: ScmaReport


class ScmaServer:
    """The aggregation server: relays keys, runs rounds, decodes the sum.

    It only ever sees masked messages and the aggregate.  Every method
    validates before changing state, so a rejected message or call leaves
    the server as it was.
    """

    def __init__(self, params):
        self.params = params
        self._codec = Codec(params)
        self._keys = {}
        self._roster = None
        self._round = 0
        self._open = None          # (RoundMessage, {sender: payload})
        self._state = None         # previous decode (for incremental decode)
        self._finished = None      # (round, participants) of the last decode
        self._delta_codecs = {}
        self._valid_ids = None     # participants checked against the roster

    @property
    def run_id(self):
        return self.params.run_id

    @property
    def last_decoded(self):
        """(round, participants) of the last decoded round, or None: the base
        of the next difference round."""
        return self._finished

    def receive_key(self, msg):
        check_key_message(msg, self.run_id, self._keys, self._roster is not None)
        self._keys[msg.sender] = msg.public_key

    def roster(self):
        """Close key collection and return the roster for every client."""
        if not self._keys:
            raise ProtocolError("no client keys received")
        if self._roster is None:
            ids = tuple(sorted(self._keys))
            self._roster = RosterMessage(self.run_id, self.params, ids,
                                         tuple(self._keys[i] for i in ids))
        return self._roster

    def start_round(self, participants=None, *, delta_nonzeros=0):
        """Open the next round (an unfinished round is abandoned).

        ``delta_nonzeros > 0`` opens a difference round: the participants
        (the same as in the last decoded round) send their changes since
        that round, for at most ``delta_nonzeros`` changed bins in total,
        in messages of ``delta_params(params, delta_nonzeros).message_words``
        words.  The server learns what a full round would tell it (the new
        aggregate, whose difference to the last one it could compute
        anyway), for a fraction of the masks and syndromes.
        """
        if self._roster is None:
            raise ProtocolError("send the roster before starting a round")
        ids = self._roster.client_ids if participants is None else participants
        if ids is not self._valid_ids:     # a driver passes the same tuple each round
            ids = _sorted_ids(ids)
            unknown = set(ids) - set(self._roster.client_ids)
            if unknown:
                raise ProtocolError(f"participants not in the roster: {sorted(unknown)}")
            if len(set(ids)) != len(ids) or not ids:
                raise ProtocolError("participants must be distinct and non-empty")
            self._valid_ids = ids
        base = 0
        if delta_nonzeros:
            if not isinstance(delta_nonzeros, (int, np.integer)) or \
                    isinstance(delta_nonzeros, bool) or \
                    not 1 <= int(delta_nonzeros) <= self.params.max_nonzeros:
                raise ProtocolError(
                    f"delta_nonzeros = {delta_nonzeros!r} must be an int in "
                    f"[1, max_nonzeros = {self.params.max_nonzeros}]")
            if self._finished is None or self._finished[1] != ids:
                raise ProtocolError(
                    "a difference round needs a decoded round with the same participants")
            base = self._finished[0]
        # every field checked above (ids: distinct sorted roster ids)
        msg = _built(RoundMessage, run_id=self.run_id, round=self._round + 1, participants=ids,
                     delta_nonzeros=int(delta_nonzeros), base_round=base)
        self._round += 1
        self._open = (msg, {})
        return msg

    def _delta_codec(self, m):
        c = self._delta_codecs.get(m)
        if c is None:
            c = self._delta_codecs[m] = Codec(delta_params(self.params, m))
        return c

    def receive(self, msg):
        got = check_round_message(msg, SyndromeMessage, self.run_id, self._open)
        words = self._round_words()
        if msg.modulus != self.params.modulus or msg.payload.size != words:
            raise ProtocolError(
                f"client {msg.sender}: message for another modulus or size "
                f"({msg.payload.size} words, expected {words})")
        got[msg.sender] = msg.payload

    def _round_words(self):
        """Words of a message of the open round."""
        dn = self._open[0].delta_nonzeros
        return self._delta_codec(dn).params.message_words if dn else self.params.message_words

    def receive_many(self, datas):
        """Receive many syndrome messages of the open round, as wire bytes.

        The same checks as ``receive(SyndromeMessage.from_bytes(data))`` for
        each, all messages at once (a server draining its queue); either
        every message is accepted or, on the first that is rejected (same
        error as :meth:`receive`), none is and the server is unchanged.
        """
        datas = list(datas)
        if not datas:
            return
        if self._open is None:       # the errors receive would give, in order
            for data in datas:
                self.receive(SyndromeMessage.from_bytes(data))
        rmsg, got = self._open
        parsed = parse_syndromes(datas, self.run_id, rmsg.round, self.params.modulus,
                                 self._round_words())
        if parsed is not None:
            senders, payloads = parsed
            members = set(rmsg.participants)
            if len(set(senders)) == len(senders) and members.issuperset(senders) \
                    and got.keys().isdisjoint(senders):
                got.update(zip(senders, payloads))
                return
        # some message is rejected: find it (and its error) one by one on a
        # copy of the round, so the server stays unchanged
        staged = (rmsg, dict(got))
        saved, self._open = self._open, staged
        try:
            for data in datas:
                self.receive(SyndromeMessage.from_bytes(data))
        finally:
            self._open = saved
        got.update(staged[1])

    def finish_round(self, *, incremental=True):
        """Sum the round's messages (the masks cancel) and decode the aggregate.

        Raises :class:`ProtocolError` when a participant is missing and
        :class:`DecodeError` when the aggregate cannot be decoded; in both
        cases the round stays open and the server unchanged.
        """
        if self._open is None:
            raise ProtocolError("no round is open")
        rmsg, got = self._open
        missing = sorted(set(rmsg.participants) - set(got))
        if missing:
            raise ProtocolError(f"round {rmsg.round}: no message from clients {missing}")
        P = self.params
        dn = rmsg.delta_nonzeros
        # validated payloads (uint64, reduced, one size): the column sums
        cols = np.ascontiguousarray(np.array(list(got.values()), dtype=np.uint64).T)
        agg = _field.affine_rows(cols, np.ones(cols.shape[1], dtype=np.uint64), 0, P.modulus)
        t0 = time.perf_counter()
        if dn:
            state = self._codec.decode_difference(agg, self._delta_codec(dn), self._state)
            used_inc = True
        else:
            state, used_inc = self._codec.decode(agg, self._state if incremental else None)
        bins, counts = state.sorted_rows()
        dt = time.perf_counter() - t0
        self._state = state
        self._finished = (rmsg.round, rmsg.participants)
        self._open = None
        n = len(rmsg.participants)
        logp = (P.modulus - 1).bit_length()
        report = ScmaReport(
            mode=P.mode, modulus=P.modulus, round=rmsg.round, n_participants=n,
            message_words=agg.size,
            bytes_per_client=SyndromeMessage.size(agg.size),
            server_bytes=RoundMessage.size(n) * n, decode_seconds=dt,
            incremental=used_inc,
            paper_bits_per_client=2 * P.max_nonzeros * logp,
            dense_bits_per_client=P.bins_per_dim ** P.n_dims * logp)
        return ScmaResult(bins, counts, report)
