"""Summing the clients' sparse count vectors, in the clear or with SCMA.

:func:`merge_sparse` sums in the clear.  ``_ClearAggregator`` and
``_SecureAggregator`` are the in-process drivers of a round that
:class:`pyfkm.mufc.FederatedKMeans` runs: the first sums in the clear
(``secure=False``) with the secure path's rule on dropouts, the second
drives the SCMA roles of :mod:`pyfkm.secagg` (every message through its
bytes), with difference rounds for unlearning and the next round's offline
part run ahead.  :func:`resolve_neighbors` and :func:`resolve_threshold`
turn the estimator's ``neighbors`` and ``threshold`` into a run's values.
"""
from __future__ import annotations

import numbers
import time
from typing import Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._progress import progress_bar
from ..exceptions import CapacityError, DecodeError, InvalidInputError, ProtocolError
from ..core.lattice import row_keys

__all__ = ["merge_sparse", "resolve_neighbors", "resolve_threshold"]


# merge_sparse sums at most this many rows in Python (the vector path's
# fixed cost is larger)
_SMALL_MERGE = 64
_INT64_MAX = (1 << 63) - 1


def merge_sparse(parts: Iterable[tuple[ArrayLike, ArrayLike]], d: int
                 ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Sum sparse count vectors ``[(bins, counts), ...]`` in the clear.

    Parameters
    ----------
    parts : sequence of (bins, counts)
        One sparse vector per client: ``bins`` array-like of int of shape
        (n_l, d), ``counts`` of shape (n_l,).
    d : int
        Number of features (the width of a bin).

    Returns
    -------
    bins : ndarray of shape (n_bins, d), int64
        Distinct bins sorted lexicographically (the order
        :func:`pyfkm.secagg.secure_sum_sparse` returns).
    counts : ndarray of shape (n_bins,), int64
        The total count of each bin.

    Raises
    ------
    CapacityError
        When a bin's total does not fit in int64.

    Examples
    --------
    >>> bins, counts = merge_sparse([([[2, 2], [0, 1]], [1, 3]), ([[0, 1]], [2])], 2)
    >>> bins.tolist(), counts.tolist()
    ([[0, 1], [2, 2]], [5, 1])
    """
    bins = [np.asarray(b, dtype=np.int64).reshape(-1, d) for b, _ in parts]
    counts = [np.asarray(c, dtype=np.int64).ravel() for _, c in parts]
    if not bins or sum(b.shape[0] for b in bins) == 0:
        return np.zeros((0, d), dtype=np.int64), np.zeros(0, dtype=np.int64)
    B = np.concatenate(bins)
    C = np.concatenate(counts)
    big = max(int(C.max()), -int(C.min())) > _INT64_MAX // C.size   # a total might wrap
    if B.shape[0] <= _SMALL_MERGE or big:
        # a few rows (one client's centers), or huge counts: Python ints
        tot = {}  # type: ignore[var-annotated]
        for row, c in zip(map(tuple, B.tolist()), C.tolist()):
            tot[row] = tot.get(row, 0) + c
        items = sorted(kv for kv in tot.items() if kv[1] != 0)
        if any(not -_INT64_MAX - 1 <= kv[1] <= _INT64_MAX for kv in items):
            raise CapacityError("a bin's total count does not fit in int64")
        return (np.array([kv[0] for kv in items], dtype=np.int64).reshape(-1, d),
                np.array([kv[1] for kv in items], dtype=np.int64))
    if B.size and B.min() >= 0:
        _, first, inv = np.unique(row_keys(B), return_index=True, return_inverse=True)
        uniq = B[first]
    else:
        uniq, inv = np.unique(B, axis=0, return_inverse=True)
    tot = np.zeros(uniq.shape[0], dtype=np.int64)
    np.add.at(tot, inv.ravel(), C)
    keep = tot != 0
    return uniq[keep], tot[keep]


class _ClearAggregator:
    """Sums in the clear (``secure=False``), with the secure path's rule on
    dropouts: fewer than ``threshold`` survivors fail the round."""

    def __init__(self, d, threshold=1):
        self.d = d
        self.threshold = threshold
        self.offline_seconds = 0.0

    def mark(self, i):
        pass

    def invalidate(self, participants):
        pass

    def forget(self, changed, departed=()):
        pass

    def open_round(self, participants, executor=None):
        pass

    def round(self, clients, participants, silent=(), prepare_next=True, first=False,
              executor=None):
        t0 = time.perf_counter()
        parts = [i for i in participants if i not in set(silent)]
        if len(parts) < self.threshold:
            raise ProtocolError(f"{len(parts)} clients survive, below the threshold "
                                f"{self.threshold}")
        bins, counts = merge_sparse([clients[i].sparse_counts() for i in parts], self.d)
        return bins, counts, 0, False, time.perf_counter() - t0, tuple(sorted(silent))


def resolve_neighbors(neighbors, n_clients):
    """The graph degree of a run of ``n_clients``: ``"auto"`` is the complete
    graph up to 64 clients and beyond, the sparse ring of
    :func:`pyfkm.secagg.sparse_degree` (36 neighbours at 1000
    clients, 40 at 10,000: a client's work grows like log L; sized for up to
    5% colluding clients and 10% dropouts); an int is taken as given (even;
    0 means complete).

    >>> resolve_neighbors("auto", 10), resolve_neighbors("auto", 1000), resolve_neighbors(4, 10)
    (0, 36, 4)
    """
    if isinstance(neighbors, str) and neighbors == "auto":
        if n_clients <= 64:
            return 0
        from ..secagg import sparse_degree
        return sparse_degree(n_clients)
    if not isinstance(neighbors, numbers.Integral) or isinstance(neighbors, bool) \
            or neighbors < 0 or neighbors % 2:
        raise InvalidInputError(f"neighbors={neighbors!r} must be 'auto', 0 (complete graph) "
                                "or an even int >= 2")
    return int(neighbors)


def resolve_threshold(threshold, n_clients):
    """The run's threshold: a strict majority by default (two sets of ``t``
    clients then always share one, which the consistency rule needs), else
    the given int (a smaller one is accepted and weakens that rule; see the
    threat model).

    >>> resolve_threshold(None, 10), resolve_threshold(3, 10)
    (6, 3)
    """
    if threshold is None:
        return n_clients // 2 + 1
    if not isinstance(threshold, numbers.Integral) or isinstance(threshold, bool) \
            or not 1 <= threshold:
        raise InvalidInputError(f"threshold={threshold!r} must be None or an int >= 1")
    return min(int(threshold), n_clients) if n_clients == 1 else int(threshold)


class _SecureAggregator:
    """Drives the SCMA roles in process, every message through its bytes
    (broadcasts are parsed once for all clients).

    A round has an offline part (key shares: no data involved) and an
    online part (masked inputs, unmasking, decoding).  After each round the
    next round's offline part is run at once over the same participants
    (timed as ``offline_seconds``), and the clients precompute their masks
    for a one-bin difference round, so that an unlearning request pays only
    the online part.

    After the first round, a round in which few clients changed their data
    (an unlearning request) is a *difference round*: every participant
    sends its change since the last round, under fresh masks sized for the
    number of bins that changed (the changed clients report it; the server
    learns that number from the decoded change anyway).  The decoded
    aggregate is the same as a full round's; when the change is too large
    to be worth it, or the difference round fails, a full round runs.

    A client that goes silent in a round is recovered from: the round
    completes over the survivors (``dropped`` names the others).  In a
    difference round an unchanged client that drops changes nothing (its
    change is zero); a changed client that drops makes the round fail.
    """

    def __init__(self, d, n_bins, max_nonzeros, client_ids, modulus, *, threshold=None,
                 neighbors="auto", progress=False, precompute_nonzeros=1):
        from .. import secagg
        from ..secagg import RoundTrip, setup_in_process
        self.secagg = secagg
        self._RoundTrip = RoundTrip
        self.params = secagg.ScmaParams.create(d, n_bins, max_nonzeros, modulus=modulus)
        L = len(client_ids)
        t = resolve_threshold(threshold, L)
        if t > L:
            raise InvalidInputError(f"threshold={t} exceeds the {L} participating clients")
        self.threshold = t
        # roles (a dict by client id) only for the clients that take part:
        # a departed client costs no key agreement
        self.server, self.roles = setup_in_process(
            self.params, L, client_ids=client_ids, threshold=t,
            degree=resolve_neighbors(neighbors, L), progress=progress)
        self._dirty = set(self.roles)
        self._precompute_nonzeros = int(precompute_nonzeros)
        self._prepared = None      # a RoundTrip whose offline part ran
        self._last = None          # participants of the last decoded round
        self.progress = progress
        self.offline_seconds = 0.0

    def mark(self, i):
        self._dirty.add(i)

    def invalidate(self, participants):
        """After a round whose result is not committed: every participant
        sets its data again and the next round is a full one."""
        self._dirty.update(participants)
        self._last = None
        self._prepared = None

    def forget(self, changed, departed=()):
        """After a committed round: the clients whose data changed drop
        what they sent in the rounds it replaced (the others sent the same
        data in every round), departed clients all of theirs."""
        last = self.server.last_decoded
        for i in changed:
            if last is not None:
                self.roles[i].forget_rounds_before(last[0])
        for i in departed:
            self.roles[i].forget_data()

    def _delta_size(self, changed):
        """Bins of the difference round for these changed clients (0: a
        full round is as cheap, or a client cannot tell its change)."""
        last = self.server.last_decoded
        if last is None:
            return 0
        try:
            m = sum(self.roles[i].changed_bins(last[0]) for i in changed)
        except ProtocolError:
            return 0
        m = max(m, 1)
        words = self.secagg.scma.delta_params(self.params, m).message_words
        return m if 2 * words <= self.params.message_words else 0

    def open_round(self, participants, executor=None):
        """Steps 1-2 of the next round over ``participants`` now (key
        shares: no data involved), e.g. while the clients still fit; the
        next :meth:`round` over the same participants continues it.
        ``executor``: a ``ThreadPoolExecutor`` on which the clients compute
        their masks of a full round meanwhile (:meth:`RoundTrip.share`)."""
        self._prepared = self._RoundTrip(self.server, self.roles, tuple(sorted(participants)),
                                         progress=self.progress).share(executor)

    def _trip(self, parts, silent):
        trip = self._prepared
        self._prepared = None
        if trip is None or trip.parts != parts:
            trip = self._RoundTrip(self.server, self.roles, parts, silent=silent,
                                   progress=self.progress).share()
        else:
            # the silent clients shared keys in the prepared steps 1-2 and
            # send nothing from now on: as if named silent from the start
            trip.silent = set(silent)
        return trip

    def round(self, clients, participants, silent=(), prepare_next=True, first=False,
              executor=None):
        """Run one round over ``participants`` (``silent``: clients that go
        silent after sharing keys); returns (bins, counts, bytes, incremental
        decode, online seconds, dropped).  ``prepare_next``: run the next
        round's offline part afterwards (a fit does not: its next round is
        a removal's, prepared when the first removal asks).  ``first``: the
        run's first round (a fit or a join), whose dropped clients leave the
        model; in any later full round a dropout would drop a client's whole
        vector from a model that still lists it, so it raises.
        ``executor``: a ``ThreadPoolExecutor`` that computes the clients'
        masked inputs (:meth:`RoundTrip.inputs`), or None (serially)."""
        t0 = time.perf_counter()
        self.offline_seconds = 0.0
        parts0 = tuple(sorted(participants))
        if self._prepared is None and self._last == parts0 and not silent and prepare_next:
            self.precompute(parts0)            # data-independent: offline
            t0 += self.offline_seconds
        changed = sorted(self._dirty & set(participants))
        for i in changed:
            if i not in silent:
                self.roles[i].set_data(*clients[i].sparse_counts())
        parts = tuple(sorted(participants))
        dn = self._delta_size(changed) if self._last == parts and not silent else 0
        res = None
        nbytes = 0
        if dn:
            trip = self._trip(parts, silent)
            try:
                res = trip.inputs(dn, executor).finish()
                if set(changed) & set(res.dropped):
                    raise ProtocolError(
                        f"clients {sorted(set(changed) & set(res.dropped))} changed their "
                        "data and dropped out of the round")
            except (DecodeError, CapacityError, ProtocolError):
                res = None         # the change did not fit: a full round below
            nbytes += trip.bytes_up + trip.bytes_down
        if res is None:
            trip = self._trip(parts, silent)
            res = trip.inputs(0, executor).finish()
            nbytes += trip.bytes_up + trip.bytes_down
            if res.dropped and not first:
                self.invalidate(parts)
                raise ProtocolError(
                    f"clients {list(res.dropped)} dropped out of a full round; nothing changed "
                    "(retry)")
        # only now: a round that raised leaves the clients marked changed
        self._dirty.difference_update(changed)
        # dropped clients keep what the aggregate holds for them (an unchanged
        # client's change is zero): difference rounds go on from here, and a
        # client that missed rounds answers from the last round it was summed in
        self._last = parts
        t_online = time.perf_counter() - t0
        offline = self.offline_seconds
        if prepare_next:
            self.precompute(parts)
            offline += self.offline_seconds
        self.offline_seconds = offline
        return res.bins, res.counts, nbytes, res.report.incremental, t_online, res.dropped

    def precompute(self, participants):
        """Offline phase (timed separately as ``offline_seconds``): the next
        round's key shares over ``participants``, and every client's mask
        for a difference round of ``precompute_nonzeros`` bins; a round
        with a larger message computes its masks online."""
        t0 = time.perf_counter()
        self._prepared = None
        try:
            trip = self._RoundTrip(self.server, self.roles, participants,
                                   progress=self.progress).share()
        except ProtocolError:
            trip = None                # the online part will try again
        if trip is not None and not trip.failed:
            dn = min(self._precompute_nonzeros, self.params.max_nonzeros)
            bar = progress_bar(self.progress, len(trip.sharers),
                               f"round {trip.round}: masks ahead")
            for i in trip.sharers:
                self.roles[i].precompute_mask(dn)
                bar.update()
            bar.close()
            self._prepared = trip
        self.offline_seconds = time.perf_counter() - t0
