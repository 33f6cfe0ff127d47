"""The two roles of SCMA: clients and the (honest-but-curious) server."""
import time
from dataclasses import dataclass

import numpy as np

from .._core import _field
from ..exceptions import CapacityError, InvalidInputError, ProtocolError
from ._codec import Codec
from ._crypto import (SCMA_TAG, add_mod, add_stream, new_private_key,
                      pair_seed, public_bytes)
from ._messages import (KeyMessage, RosterMessage, RoundMessage, SyndromeMessage,
                        check_key_message, check_round_message)


def _sorted_rows(bins, counts):
    if bins.shape[0] == 0:
        return bins, counts
    # big-endian bytes of nonnegative int64 compare like the numbers, so the
    # rows' bytes sort lexicographically (much faster than lexsort on d keys)
    keys = np.ascontiguousarray(bins.astype(">i8")).view(np.dtype((np.void, 8 * bins.shape[1])))
    order = np.argsort(keys.ravel(), kind="stable")
    return bins[order], counts[order]


def check_sparse(bins, counts, params, name="client"):
    """Validated (distinct bins int64 (k, d), counts uint64 (k,)); duplicate
    bins are merged by adding their counts."""
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
    bins = np.ascontiguousarray(bins, dtype=np.int64)
    rows = bins.view(np.dtype((np.void, 8 * d))).ravel()
    _, first, inv = np.unique(rows, return_index=True, return_inverse=True)
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
        self._last_round = 0

    def key_message(self, run_id):
        """The key message that opens run ``run_id`` (16 bytes)."""
        msg = KeyMessage(run_id, self.client_id, self.public_key)
        self._run_id = msg.run_id
        return msg

    def receive_roster(self, roster):
        """Derive the pairwise seeds with every other client of the roster."""
        if not isinstance(roster, RosterMessage):
            raise ProtocolError("expected a RosterMessage")
        if self._run_id is None or roster.run_id != self._run_id:
            raise ProtocolError("roster of another run")
        ids = dict(zip(roster.client_ids, roster.public_keys))
        if ids.get(self.client_id) != self.public_key:
            raise ProtocolError("the roster does not carry this client's key")
        seeds = {other: pair_seed(self._key, key, roster.run_id, self.client_id, other)
                 for other, key in ids.items() if other != self.client_id}
        self.params = roster.params
        self._codec = Codec(roster.params)
        self._seeds = seeds
        self._roster = frozenset(ids)

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
        if counts.size and int(sum(counts)) > budget:
            raise CapacityError(
                f"client {self.client_id}: total count {int(sum(counts))} exceeds "
                f"(p - 1) / n_clients = {budget}, so the aggregate could wrap modulo p")
        self._encoded = self._codec.encode(bins, counts.astype(np.uint64))

    def mask(self, round_, participants):
        """This client's mask for a round with the given participants."""
        P = self.params
        n, p = P.message_words, P.modulus
        acc = np.zeros(n, dtype=np.uint64)
        for other in participants:
            if other == self.client_id:
                continue
            if other not in self._seeds:
                raise ProtocolError(f"participant {other} is not in the roster")
            add_stream(acc, self._seeds[other], round_, SCMA_TAG, p,
                       negate=self.client_id > other)
        return acc

    def precompute_mask(self, round_, participants):
        """Offline phase: compute the mask of a future round now, so that
        :meth:`respond` to that round (same participants) is one addition.

        The cached mask is used at most once and only for that exact round
        and roster; anything else recomputes.
        """
        if self.params is None:
            raise ProtocolError("receive the roster before precomputing masks")
        parts = tuple(sorted(int(i) for i in participants))
        if int(round_) <= self._last_round:
            raise ProtocolError(f"round {round_} was already answered")
        self._mask_cache = (int(round_), parts, self.mask(int(round_), parts))

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
        if self.client_id not in round_msg.participants:
            raise ProtocolError(f"client {self.client_id} is not a participant of this round")
        if self._encoded is None:
            raise ProtocolError("set_data before responding")
        cached = getattr(self, "_mask_cache", None)
        self._mask_cache = None
        if cached is not None and cached[0] == round_msg.round \
                and cached[1] == tuple(round_msg.participants):
            mask = cached[2]
        else:
            mask = self.mask(round_msg.round, round_msg.participants)
        masked = add_mod(mask, self._encoded, self.params.modulus)
        self._last_round = round_msg.round
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

    @property
    def run_id(self):
        return self.params.run_id

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

    def start_round(self, participants=None):
        """Open the next round (an unfinished round is abandoned)."""
        if self._roster is None:
            raise ProtocolError("send the roster before starting a round")
        ids = self._roster.client_ids if participants is None else participants
        ids = tuple(sorted(int(i) for i in ids))
        unknown = set(ids) - set(self._roster.client_ids)
        if unknown:
            raise ProtocolError(f"participants not in the roster: {sorted(unknown)}")
        if len(set(ids)) != len(ids) or not ids:
            raise ProtocolError("participants must be distinct and non-empty")
        msg = RoundMessage(self.run_id, self._round + 1, ids)
        self._round += 1
        self._open = (msg, {})
        return msg

    def receive(self, msg):
        got = check_round_message(msg, SyndromeMessage, self.run_id, self._open)
        if msg.modulus != self.params.modulus or msg.payload.size != self.params.message_words:
            raise ProtocolError(
                f"client {msg.sender}: message for another modulus or size "
                f"({msg.payload.size} words, expected {self.params.message_words})")
        got[msg.sender] = msg.payload

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
        agg = np.zeros(P.message_words, dtype=np.uint64)
        for payload in got.values():      # validated: uint64, contiguous, reduced
            _field.add_inplace(agg, payload, P.modulus)
        t0 = time.perf_counter()
        bins, counts, state, used_inc = self._codec.decode(
            agg, self._state if incremental else None)
        dt = time.perf_counter() - t0
        bins, counts = _sorted_rows(bins, counts)
        self._state = state
        self._open = None
        n = len(rmsg.participants)
        logp = (P.modulus - 1).bit_length()
        report = ScmaReport(
            mode=P.mode, modulus=P.modulus, round=rmsg.round, n_participants=n,
            message_words=P.message_words,
            bytes_per_client=SyndromeMessage.size(P.message_words),
            server_bytes=len(rmsg.to_bytes()) * n, decode_seconds=dt,
            incremental=used_inc,
            paper_bits_per_client=2 * P.max_nonzeros * logp,
            dense_bits_per_client=P.bins_per_dim ** P.n_dims * logp)
        return ScmaResult(bins, counts, report)
