"""Deletion-efficient centralized k-means: Q-k-means and DC-k-means.

Ginart, Guan, Valiant, Zou, "Making AI Forget You: Data Deletion in Machine
Learning", NeurIPS 2019.  Both estimators support ``delete(ids)``, whose
result is *identical* (bit for bit) to fitting again on the remaining data
with the same ``random_state`` and the same ``sample_ids``; it is therefore
distributed exactly as retraining.

How the randomness is laid out so that this is checkable
--------------------------------------------------------
* Every random quantity attached to a point is a function of a model key
  and of the point's *id* (``sample_ids``, the row positions by default),
  never of its row position or of ``n``: a counter-based hash (splitmix64)
  of ``(key, id, step)`` gives a uniform draw.  Removing points therefore
  never changes the draws of the others.
* k-means++ (D^2) seeding is done as an *exponential race*: seed ``j`` is
  the point minimising ``E_ij / D_i^2`` (``D_i`` the distance to the seeds
  chosen so far, ``E_ij = -log U_ij`` unit exponentials; the first seed
  minimises ``E_i0``).  ``P(i wins) = D_i^2 / sum D^2``: exactly D^2
  sampling.  Removing a point that is not a seed leaves every ``D_i`` and
  every ``E_ij`` of the others unchanged, so every seed stays the winner.
* The lattice phases of the ``max_iter`` Q-Lloyd iterations are drawn up
  front from the generator (``max_iter * n_features`` uniforms, whatever
  ``n`` and the early stop).
"""
import math
import numbers
import time
from dataclasses import dataclass

import numpy as np

from ._base import BaseEstimator
from ._core import _lattice, _lloyd, _seeding
from ._validation import check_array, check_ids, check_int, check_n_clusters
from .exceptions import InvalidIdError, InvalidInputError
from .rng import as_generator

__all__ = ["QKMeans", "DCKMeans", "DeletionReport", "auto_epsilon", "auto_n_leaves"]

_U = 2.0 ** -53  # unit roundoff of float64
_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


# ----------------------------------------------------------------------------
# Keyed randomness and the exponential-race D^2 seeding
# ----------------------------------------------------------------------------

def _splitmix64(z):
    """splitmix64 finalizer on a uint64 array (wrapping arithmetic)."""
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _keyed_uniform(key, ids, step):
    """Uniform draws in (0, 1), one per id, a function of (key, id, step) only."""
    ids = np.asarray(ids, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        h = _splitmix64(ids * np.uint64(0x100000001B3) + np.uint64(step))
        h = _splitmix64(h ^ np.uint64(key))
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * _U


def _sqdist(X, c):
    """Squared distance of every row of ``X`` to the point ``c`` (float64).

    Row-wise and elementwise only: the value for a row does not depend on
    the other rows (the seeding relies on it)."""
    diff = X - c
    diff *= diff
    return diff.sum(axis=1)


def _race_seeding(X, ids, k, key, alive=None, n_trials=1):
    """k-means++ seeding as an exponential race keyed by ``ids`` (C kernel,
    csrc/fkm_race.h).

    Returns the seed positions (rows of ``X``) in order.  Rows with
    ``alive == False`` take no part.  Point ``i`` draws
    ``E_ij = -log u(key, id_i, j)``; the first seed is ``argmin E_i0``, seed
    ``j`` is ``argmin E_ij / D_i^2`` (probability ``D_i^2 / sum D^2``).
    When every remaining point coincides with a seed (fewer distinct points
    than ``k``), the next seed is the unchosen point with the smallest
    ``E_ij`` (uniform among them).  ``n_trials > 1``: greedy k-means++
    (the best of ``n_trials`` independent races per step by potential).
    """
    excluded = None if alive is None else ~alive
    seeds, _ = _seeding.race_seeding(X, np.ascontiguousarray(ids, dtype=np.int64), k,
                                     int(key) & 0xFFFFFFFFFFFFFFFF, excluded, n_trials)
    return seeds


def auto_epsilon(n_samples, n_clusters, n_features):
    """Ginart et al.'s default lattice step ``2^round(-log10(n/(k d^1.5)) - 3)``.

    Examples
    --------
    >>> auto_epsilon(100_000, 5, 25)
    0.03125
    """
    r = n_samples / (n_clusters * n_features ** 1.5)
    return float(2.0 ** round(-math.log10(r) - 3))


def auto_n_leaves(n_samples):
    """``n^0.3`` rounded to the nearest power of two (at least 1).

    Examples
    --------
    >>> auto_n_leaves(100_000)
    32
    """
    return int(2 ** max(0, round(math.log2(n_samples ** 0.3))))


@dataclass(frozen=True)
class DeletionReport:
    """What a call to ``delete`` did.

    Attributes
    ----------
    n_deleted : int
        Number of points removed by the call.
    retrained : bool
        False when the result was certified from the memoized training
        metadata; True when (part of) the model was recomputed.
    reason : str
        Why it retrained ("seed", "epsilon", "centroid", "early stop",
        "leaf path"), or "" when certified.
    seconds : float
        Wall time of the call.
    """

    n_deleted: int
    retrained: bool
    reason: str
    seconds: float


def _check_sample_ids(sample_ids, n):
    if sample_ids is None:
        return np.arange(n, dtype=np.int64)
    ids = check_ids(sample_ids, "sample_ids")
    if ids.shape[0] != n:
        raise InvalidInputError(f"sample_ids has {ids.shape[0]} entries but X has {n} rows")
    if (ids < 0).any():
        raise InvalidInputError("sample_ids must be nonnegative")
    if np.unique(ids).shape[0] != n:
        raise InvalidInputError("sample_ids must be distinct")
    return ids.copy()


class _IdIndex:
    """Positions of alive ids (validation of deletion requests)."""

    @staticmethod
    def lookup(ids_sorted, order, alive, req, n_alive, k):
        """Positions of the requested ids; raise InvalidIdError (and change
        nothing) if one is unknown, repeated or already deleted, or if fewer
        than ``k`` points would remain."""
        req = check_ids(req)
        if req.size == 0:
            return req
        if req.size > 1 and np.unique(req).shape[0] != req.shape[0]:
            raise InvalidIdError("ids contain repeats; nothing was deleted")
        j = np.searchsorted(ids_sorted, req)
        j = np.minimum(j, len(ids_sorted) - 1)
        bad = ids_sorted[j] != req
        pos = order[j]
        if bad.any():
            raise InvalidIdError(f"id {int(req[bad][0])} is unknown; nothing was deleted")
        dead = ~alive[pos]
        if dead.any():
            raise InvalidIdError(f"id {int(req[dead][0])} was already deleted; "
                                 "nothing was deleted")
        if n_alive - req.size < k:
            raise InvalidIdError(
                f"deleting {req.size} points would leave {n_alive - req.size} < "
                f"n_clusters={k}; nothing was deleted")
        return pos


# ----------------------------------------------------------------------------
# Q-k-means
# ----------------------------------------------------------------------------

def _balanced_centroids(sums, counts, n, k, gamma, prev):
    """Centroids with the gamma-balance correction (no input validation).

    A cluster of ``m < gamma n / k`` points is topped up with
    ``gamma n / k - m`` copies of its previous (quantized) centroid:
    ``c = (S + (g - m) c_prev) / g`` with ``g = gamma n / k``; otherwise
    ``c = S / m``.  An empty cluster with ``gamma = 0`` keeps ``c_prev``.
    Returns (centroids, denominators).  Elementwise float operations only
    (the same rounding as one cluster at a time).
    """
    g = gamma * n / k
    m = counts.astype(np.float64)
    small = counts < g
    if not small.any() and counts.all():  # the usual case: plain means
        return sums / m[:, None], m
    den = np.where(small, g, np.where(counts > 0, m, np.inf))
    with np.errstate(invalid="ignore", divide="ignore"):
        top = np.where(small, g - m, 0.0)
        num = np.where(small[:, None], sums + top[:, None] * prev, sums)
        c = num / den[:, None]
    empty = ~small & (counts <= 0)
    if empty.any():
        c[empty] = prev[empty]
    return c, den


class _QState:
    """Memo of one Q-Lloyd run on a fixed set of rows (see QKMeans)."""


def _q_fit(X, ids, k, eps, gamma, max_iter, key, phases, seeds=None):
    """Q-Lloyd on all rows of ``X`` (no input validation); returns a _QState.

    ``seeds`` (positions) skips the race seeding when the caller knows its
    outcome (a deletion that removed no seed: the keyed race is unchanged)."""
    n, d = X.shape
    s = _QState()
    s.X, s.ids, s.eps = X, ids, eps
    s.alive = np.ones(n, dtype=bool)
    s.n_alive = n
    s.order = (np.arange(n) if n < 2 or (ids[1:] > ids[:-1]).all()
               else np.argsort(ids, kind="stable"))
    s.ids_sorted = ids[s.order]
    dist = None
    if seeds is None:  # the race also gives the distances to the seeds
        seeds, dist = _seeding.race_seeding_dist(X, np.ascontiguousarray(ids, dtype=np.int64),
                                                 k, int(key) & 0xFFFFFFFFFFFFFFFF)
    s.seeds = seeds
    s.seed_ids = ids[s.seeds].copy()
    centers = X[s.seeds].astype(np.float64)
    # assignment steps with Elkan bounds (csrc/fkm_qlloyd.h): the result for
    # a point depends on that point and the centers only
    qa = _lloyd.QAssign(X, k)
    s.C, s.bins, s.sums, s.counts, s.loss = [centers], [None], [], [], []
    s.labels, s.mind, s.dens, s.raw = [], [], [], [None]

    def step(C, dist=None):
        # losses: sums of the distances in point order (any summation order
        # is covered by the error bounds loss_err below)
        labels, mind, sums, counts, loss = qa.step(C, dist)
        s.labels.append(labels)
        s.mind.append(mind)
        s.sums.append(sums)
        s.counts.append(counts)
        s.loss.append(loss)

    step(centers, dist)
    # per-coordinate bound on |x| for the certification's rounding bounds
    # (no pass over X): |x_c| <= |seed_c| + |x - seed| for the seed of x,
    # the distance known from the assignment up to a relative (d + 2) u, far
    # below the 1e-8 slack
    s.maxabs = (np.abs(centers).max(axis=0) +
                math.sqrt(float(s.mind[0].max()))) * (1.0 + 1e-8)
    s.n_iter = 0
    for t in range(1, max_iter + 1):
        phase = phases[t - 1]
        c, den = _balanced_centroids(s.sums[-1], s.counts[-1], n, k, gamma, s.C[-1])
        # Lattice(eps, phase).quantize / .centers without the checks (c is
        # finite: means of finite points)
        bins = _lattice.quantize(c, phase, eps)
        C = _lattice.centers(bins, phase, eps)
        step(C)
        s.C.append(C)
        s.bins.append(bins)
        s.raw.append(c)
        s.dens.append(den)
        if not s.loss[-1] < s.loss[-2]:  # loss stopped decreasing: keep t - 1
            break
        s.n_iter = t
    s.n_run = len(s.C) - 1  # iterations computed (the last may be rejected)
    # error-bound coefficients of the memoized float sums (see QKMeans Notes);
    # 4 (n + 2) u L bounds the error of any float summation order of n terms
    s.sum_err = [1.01 * _U * (m.astype(np.float64) ** 2 + 1) for m in s.counts]
    s.loss_err = [4.0 * (n + 2) * _U * L for L in s.loss]
    return s


class QKMeans(BaseEstimator):
    """Quantized k-means (Q-k-means) with certified exact deletion.

    Parameters
    ----------
    n_clusters : int
    epsilon : "auto" or float, default="auto"
        Lattice step.  "auto" is Ginart et al.'s heuristic
        ``epsilon = 2^round(-log10(n / (k d^1.5)) - 3)`` computed from the
        current number of points (see :func:`auto_epsilon`); a deletion that
        would change it retrains.
    gamma : float in [0, 1], default=0.2
        Balance: a cluster with fewer than ``gamma n / k`` points is topped
        up with copies of its previous centroid.
    max_iter : int, default=10
    random_state : None, int, SeedSequence or Generator

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features)
        Centers of lattice cells (or the seeds when the first iteration
        already failed to decrease the loss).
    labels_ : ndarray (n_remaining,), int32
        Cluster of each remaining point, in the order of ``sample_ids_``.
    sample_ids_ : ndarray (n_remaining,), int64
    inertia_ : float
        Sum of squared distances of the remaining points to their centers
        (correctly rounded sum, independent of the order).
    n_iter_ : int
        Accepted Q-Lloyd iterations.
    seed_ids_ : ndarray (n_clusters,), int64
        Ids of the k-means++ seeds, in order.
    epsilon_ : float

    Notes
    -----
    Algorithm (Ginart et al., 2019, Alg. 2): k-means++ seeds; iteration
    ``t`` computes the balanced centroids of the assignment to the centers
    of iteration ``t - 1``, quantizes them on the lattice of step epsilon
    and phase ``theta_t`` (``theta_t`` uniform in ``[-1/2, 1/2)^d``, drawn
    up front) to cell centers, and reassigns; it stops as soon as the loss
    (sum of squared distances to the new centers) is not smaller than the
    previous one, keeping the previous centers.

    Certification.  ``delete(ids)`` returns without retraining only if it
    proves that a fresh fit on the remaining data (same ``random_state``
    and ids) computes the same epsilon, the same seeds, the same lattice
    cells at every computed iteration and the same stop decisions:

    1. no deleted point is a seed (the exponential-race seeding is then
       unchanged, exactly; a deleted seed always retrains);
    2. ``epsilon="auto"`` gives the same value for the new ``n``;
    3. for every computed iteration, with each deleted point removed from
       its cluster's memoized sum and count (exact update of the mean,
       ``(c - x) / (m - 1)`` for one point) and ``n`` decreased (which also
       changes the balance correction of every small cluster), the new
       centroid lies in the same lattice cell *with a margin* larger than a
       rigorous bound on the float rounding difference between the updated
       sums and any float summation of the remaining members;
    4. every loss comparison keeps its outcome with a margin larger than the
       rounding bound of the updated losses.

    By induction the centers of every iteration are unchanged, hence so are
    the assignments of the remaining points: the assignment step
    (csrc/fkm_qlloyd.h, with Elkan's triangle-inequality bounds to skip
    most distances) decides each point's label from that point and the
    sequence of centers alone.  If any check fails, the model
    is refitted on the remaining data with the stored random draws.  Either
    way the result equals the fresh fit; the tests replay this.

    Deleted points are really gone: their rows, labels and distances are
    overwritten at once and excluded from every sum, count and draw; the
    arrays are compacted when a quarter of the rows are dead, and at every
    retraining.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> X[:150] += 8
    >>> q = QKMeans(2, random_state=0).fit(X)
    >>> q.cluster_centers_.shape
    (2, 2)
    >>> report = q.delete([3, 200])
    >>> report.n_deleted, q.labels_.shape
    (2, (298,))
    >>> ref = QKMeans(2, random_state=0).fit(np.delete(X, [3, 200], axis=0),
    ...                                      sample_ids=np.delete(np.arange(300), [3, 200]))
    >>> bool((ref.cluster_centers_ == q.cluster_centers_).all())
    True
    """

    def __init__(self, n_clusters, *, epsilon="auto", gamma=0.2, max_iter=10,
                 random_state=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.gamma = gamma
        self.max_iter = max_iter
        self.random_state = random_state

    # -- parameters ---------------------------------------------------------
    def _check_params(self, n):
        k = check_n_clusters(self.n_clusters, n)
        max_iter = check_int(self.max_iter, "max_iter", 1)
        g = self.gamma
        if isinstance(g, bool) or not isinstance(g, numbers.Real) or not 0 <= g <= 1:
            raise InvalidInputError(f"gamma={g!r} must be a number in [0, 1]")
        e = self.epsilon
        if isinstance(e, str):
            if e != "auto":
                raise InvalidInputError(f"epsilon={e!r} must be 'auto' or a number > 0")
        elif isinstance(e, bool) or not isinstance(e, numbers.Real) or not (
                math.isfinite(e) and e > 0):
            raise InvalidInputError(f"epsilon={e!r} must be 'auto' or a finite number > 0")
        return k, max_iter, float(g)

    def _epsilon(self, n, k, d):
        return auto_epsilon(n, k, d) if isinstance(self.epsilon, str) else float(self.epsilon)

    # -- fit ----------------------------------------------------------------
    def fit(self, X, y=None, *, sample_ids=None):
        """Fit Q-k-means.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        sample_ids : array-like of int, shape (n_samples,), optional
            Distinct nonnegative ids of the rows (default ``0..n-1``), used
            by :meth:`delete` and as the keys of the per-point random draws:
            fitting a subset with its ids replays the draws of a full fit.

        Returns
        -------
        self
        """
        # a private float64 copy: deletion erases rows
        X = np.array(check_array(X, "X"), dtype=np.float64)
        n, d = X.shape
        k, max_iter, gamma = self._check_params(n)
        ids = _check_sample_ids(sample_ids, n)
        rng = as_generator(self.random_state)
        key = int(rng.integers(0, 2 ** 63))
        eps = self._epsilon(n, k, d)
        # the phases of Lattice.random(eps, d, rng), max_iter times: the
        # generator fills the rows in order, the same draws as one per call
        phases = rng.random((max_iter, d)) - 0.5
        self._key, self._phases = key, phases
        self._k, self._gamma, self._max_iter = k, gamma, max_iter
        self._state = _q_fit(X, ids, k, eps, gamma, max_iter, key, phases)
        self.n_features_in_ = d
        self._inertia = None
        return self

    # -- fitted attributes --------------------------------------------------
    @property
    def cluster_centers_(self):
        self._check_fitted("_state")
        return self._state.C[self._state.n_iter].copy()

    @property
    def labels_(self):
        self._check_fitted("_state")
        s = self._state
        return s.labels[s.n_iter][s.alive].copy()

    @property
    def sample_ids_(self):
        self._check_fitted("_state")
        return self._state.ids[self._state.alive].copy()

    @property
    def inertia_(self):
        self._check_fitted("_state")
        if self._inertia is None:
            s = self._state
            self._inertia = math.fsum(s.mind[s.n_iter][s.alive])
        return self._inertia

    @property
    def n_iter_(self):
        self._check_fitted("_state")
        return self._state.n_iter

    @property
    def seed_ids_(self):
        self._check_fitted("_state")
        return self._state.seed_ids.copy()

    @property
    def epsilon_(self):
        self._check_fitted("_state")
        return self._state.eps

    @property
    def n_samples_(self):
        self._check_fitted("_state")
        return self._state.n_alive

    def predict(self, X):
        """Index of the nearest center for each row of ``X``."""
        self._check_fitted("_state")
        X = check_array(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise InvalidInputError(
                f"X has {X.shape[1]} features, but QKMeans was fitted with "
                f"{self.n_features_in_}")
        C = self.cluster_centers_
        d2 = np.stack([_sqdist(X, c) for c in C], axis=1)
        return np.argmin(d2, axis=1).astype(np.int32)

    # -- deletion -----------------------------------------------------------
    def delete(self, ids):
        """Delete points by id; certify or retrain.

        Parameters
        ----------
        ids : int or sequence of int
            Ids (``sample_ids`` given to fit, default row positions) of
            remaining points, without repeats.

        Returns
        -------
        DeletionReport

        Raises
        ------
        InvalidIdError
            An id is unknown, repeated or already deleted, or fewer than
            ``n_clusters`` points would remain.  Nothing is deleted then.
        """
        t0 = time.perf_counter()
        self._check_fitted("_state")
        s = self._state
        pos = _IdIndex.lookup(s.ids_sorted, s.order, s.alive, ids, s.n_alive, self._k)
        if pos.size == 0:
            return DeletionReport(0, False, "", time.perf_counter() - t0)
        reason, update = self._certify(pos)
        if reason:
            alive = s.alive.copy()
            alive[pos] = False
            X, sid = s.X[alive], s.ids[alive]
            eps = self._epsilon(X.shape[0], self._k, X.shape[1])
            # no seed removed: the keyed race on the rest picks the same ids
            seeds = None if reason == "seed" else (np.cumsum(alive) - 1)[s.seeds]
            new = _q_fit(np.ascontiguousarray(X), sid, self._k, eps, self._gamma,
                         self._max_iter, self._key, self._phases, seeds=seeds)
            self._erase(s, pos)
            self._state = new
        else:
            self._commit(pos, update)
        self._inertia = None
        return DeletionReport(int(pos.size), bool(reason), reason, time.perf_counter() - t0)

    def _certify(self, pos):
        """Return ("", update) if the deletion of rows ``pos`` is certified,
        else (reason, None).  Changes nothing."""
        s = self._state
        k, gamma = self._k, self._gamma
        if np.isin(pos, s.seeds).any():
            return "seed", None
        n_new = s.n_alive - pos.size
        d = s.X.shape[1]
        if self._epsilon(n_new, k, d) != s.eps:
            return "epsilon", None
        Xr = s.X[pos].astype(np.float64)
        T = s.n_run
        new_sums, new_counts, new_loss, new_serr, new_lerr = [], [], [], [], []
        for t in range(T + 1):
            lab = s.labels[t][pos]
            sums = s.sums[t].copy()
            np.subtract.at(sums, lab, Xr)
            counts = s.counts[t] - np.bincount(lab, minlength=k)
            # an emptied cluster's sum is exactly 0 (as any fresh sum of nothing)
            sums[counts == 0] = 0.0
            serr = s.sum_err[t] + _U * pos.size * (s.counts[t] + 1)
            L = s.loss[t] - math.fsum(s.mind[t][pos])
            lerr = s.loss_err[t] + 4 * _U * (s.loss[t] + abs(L))
            new_sums.append(sums)
            new_counts.append(counts)
            new_loss.append(L)
            new_serr.append(serr)
            new_lerr.append(lerr)
        for t in range(1, T + 1):
            prev = s.C[t - 1]
            c, den = _balanced_centroids(new_sums[t - 1], new_counts[t - 1], n_new, k,
                                         gamma, prev)
            # |fresh sum - updated sum| <= 2 * err coefficient * max|x| per coordinate
            dS = 2.0 * new_serr[t - 1][:, None] * s.maxabs[None, :]
            with np.errstate(invalid="ignore"):
                dc = np.where(np.isfinite(den)[:, None], dS / den[:, None], 0.0)
            dc = dc + 16 * _U * (s.maxabs[None, :] + np.abs(prev))
            tv = c / s.eps - self._phases[t - 1]
            margin = 2.0 * (dc / s.eps + 8 * _U * (np.abs(tv) + 1.0)) + 1e-300
            lo, hi = np.floor(tv - margin), np.floor(tv + margin)
            if not (np.array_equal(lo, hi) and np.array_equal(lo, s.bins[t])):
                return "centroid", None
        for t in range(1, T + 1):
            diff = new_loss[t] - new_loss[t - 1]
            bound = 2.0 * (new_lerr[t] + new_lerr[t - 1]) + 1e-300
            if abs(diff) <= bound:
                return "early stop", None
            stopped = not diff < 0
            if stopped != (t == T and T > s.n_iter):
                return "early stop", None
        return "", (new_sums, new_counts, new_loss, new_serr, new_lerr)

    def _commit(self, pos, update):
        s = self._state
        s.sums, s.counts, s.loss, s.sum_err, s.loss_err = (list(u) for u in update)
        self._erase(s, pos)
        if s.n_alive * 4 < 3 * s.X.shape[0]:
            self._compact(s)

    @staticmethod
    def _erase(s, pos):
        """Overwrite everything stored about rows ``pos`` and mark them dead."""
        if not s.X.flags.writeable:
            s.X = s.X.copy()
        s.X[pos] = 0
        s.alive[pos] = False
        s.n_alive -= pos.size
        for t in range(len(s.labels)):
            s.labels[t][pos] = -1
            s.mind[t][pos] = 0.0

    @staticmethod
    def _compact(s):
        keep = s.alive
        remap = np.cumsum(keep) - 1
        s.X = np.ascontiguousarray(s.X[keep])
        s.ids = s.ids[keep]
        s.labels = [lab[keep] for lab in s.labels]
        s.mind = [m[keep] for m in s.mind]
        s.seeds = remap[s.seeds]
        s.alive = np.ones(s.X.shape[0], dtype=bool)
        s.order = np.argsort(s.ids, kind="stable")
        s.ids_sorted = s.ids[s.order]


# ----------------------------------------------------------------------------
# DC-k-means
# ----------------------------------------------------------------------------

def _init_key(key, i):
    """Seeding key of the ``i``-th k-means run of a node."""
    return key if i == 0 else int(_keyed_uniform(key, [i], 2 ** 42)[0] * 2 ** 53)


def _node_kmeans(X, w, ids, k, key, max_iter, n_init=1, n_trials=1, seeds=None,
                 traced=False):
    """Weighted k-means (race seeding + Lloyd) of one node; deterministic.

    ``w`` None means unit weights.  With ``n_init > 1`` the run of lowest
    inertia among ``n_init`` seedings (keys derived from ``key``; ties to the
    first) is kept.  Fewer than ``k`` items are returned as they are.
    ``seeds`` (one position array per run) skips the races when their
    outcome is known (certified by _RaceTrace.remove).  Returns (C, mass),
    and with ``traced`` also the list of the runs' _RaceTrace (None when
    ``seeds`` was given, when a trace cannot certify anything, or for a node
    of at most ``k`` items)."""
    if X.shape[0] <= k:
        out = (X.astype(np.float64), np.ones(X.shape[0]) if w is None
               else w.astype(np.float64))
        return out + (None,) if traced else out
    X64 = np.ascontiguousarray(X, dtype=np.float64)
    best, traces = None, []
    for i in range(n_init):
        if seeds is not None:
            sd = seeds[i]
        elif traced:
            sd, cand, pot = _seeding.race_seeding_trace(
                X64, np.ascontiguousarray(ids, dtype=np.int64), k,
                _init_key(key, i) & 0xFFFFFFFFFFFFFFFF, n_trials)
            traces.append(_RaceTrace.build(sd, cand, pot, X64.shape[0]))
        else:
            sd = _race_seeding(X64, ids, k, _init_key(key, i), n_trials=n_trials)
        # one C call for the whole Lloyd run (no per-step overhead)
        C, labels, _, inertia, _ = _lloyd.lloyd_loop(X64, X64[sd], w, max_iter, 0.0)
        if best is None or inertia < best[2]:
            best = (C, labels, inertia)
    C, labels, _ = best
    mass = np.bincount(labels, weights=w, minlength=k).astype(np.float64)
    if not traced:
        return C, mass
    return C, mass, (None if seeds is not None or None in traces else traces)


class _RaceTrace:
    """The decisions of one race seeding (unit weights, no excluded rows),
    to certify that removing a point leaves its seeds unchanged.

    A fresh race on the remaining points picks the same seeds when the
    removed row (position ``p``) is no seed and no candidate of any step
    (every candidate is the argmin over the points of a score that does not
    depend on the other points, given the earlier seeds), and, for greedy
    k-means++ (several candidates per step), when each step's pick keeps
    the smallest potential.  The potentials are float sums; ``lo``/``hi``
    bound the *exact* sum of their terms over the current points (terms of
    the remaining points are computed bit for bit alike in a fresh run, so
    the removal subtracts the removed point's term, known up to a relative
    error); a fresh float sum of ``m`` terms is within ``1.01 m u`` (relative)
    of the exact one.  The pick is certified when its upper bound is below
    every other candidate's lower bound.  Positions shift down past ``p``.
    """

    __slots__ = ("seeds", "cand", "lo", "hi", "pick")

    @classmethod
    def build(cls, seeds, cand, pot, n):
        k, T = cand.shape
        if k > 1 and (cand[1:, 0] < 0).any():
            return None  # the fallback picked a seed (too few distinct points)
        t = cls()
        t.seeds, t.cand = seeds, cand
        if T > 1 and k > 1:
            if not np.isfinite(pot[1:]).any(axis=1).all() or np.isinf(pot).any():
                return None
            g = 1.01 * n * _U
            t.lo, t.hi = pot / (1.0 + g), pot / (1.0 - g)
            # the pick of step j: the computed entry whose candidate is the seed
            t.pick = np.argmax((cand == seeds[:, None]) & np.isfinite(pot), axis=1)
        return t

    def remove(self, p, x, X, n_new):
        """The trace after removing position ``p`` (row ``x``) of the points
        ``X`` (before the removal; ``n_new`` points remain), or None when
        the seeds are not certified unchanged."""
        if (self.seeds == p).any() or (self.cand == p).any():
            return None
        k, T = self.cand.shape
        t = _RaceTrace()
        if T > 1 and k > 1:
            d = X.shape[1]
            # the removed point's term at step j: min(D^2 to seeds < j, |x - cand|^2)
            D = np.minimum.accumulate(_sqdist(X[self.seeds[:-1]], x))
            Tc = _sqdist(X[self.cand[1:].ravel()], x).reshape(k - 1, T)
            a = np.minimum(D[:, None], Tc)
            e = 4.0 * (d + 4) * _U  # both computations of a term, any order
            blo, bhi = a * (1.0 + e), a * (1.0 - e)
            lo, hi = self.lo[1:] - blo, self.hi[1:] - bhi
            # the subtraction's own rounding
            lo = lo - 4 * _U * (np.abs(self.lo[1:]) + blo)
            hi = hi + 4 * _U * (np.abs(self.hi[1:]) + bhi)
            g = 1.01 * n_new * _U
            flo, fhi = lo * (1.0 - g), hi * (1.0 + g)  # a fresh float sum
            rows = np.arange(k - 1)
            pick_hi = fhi[rows, self.pick[1:]]
            others = np.where(np.isnan(flo), np.inf, flo)
            others[rows, self.pick[1:]] = np.inf
            if not (pick_hi < others.min(axis=1)).all():
                return None
            t.lo = np.concatenate([self.lo[:1], lo])
            t.hi = np.concatenate([self.hi[:1], hi])
            t.pick = self.pick
        t.seeds = self.seeds - (self.seeds > p)
        t.cand = self.cand - (self.cand > p)
        return t


class DCKMeans(BaseEstimator):
    """Divide-and-conquer k-means (DC-k-means) with exact deletion.

    Points go to ``n_leaves`` leaves uniformly at random (a keyed hash of
    their id); every leaf runs k-means (keyed k-means++ + Lloyd) on its
    points; every internal node runs k-means on its children's centroids
    weighted by their cluster masses; the root's centroids are the model.
    ``delete`` recomputes only the leaves holding deleted points and their
    paths to the root; the result is identical to a fresh fit on the
    remaining data with the same ``random_state``, ``sample_ids`` and
    ``n_leaves_``.

    Parameters
    ----------
    n_clusters : int
    n_leaves : "auto" or int, default="auto"
        A power of two; "auto" is ``n^0.3`` rounded to a power of two,
        fixed at fit and kept under deletions (as the analysis requires).
    height : int, default=1
        Tree height; ``n_leaves`` must be ``w^height`` for an integer
        branching factor ``w``.
    max_iter : int, default=10
        Lloyd iterations at each node.
    n_init : int, default=1
        k-means runs (keyed seedings) per node, the one of lowest inertia
        kept.
    n_local_trials : "auto" or int, default="auto"
        Greedy k-means++ at every node: each seeding step draws this many
        candidates (independent keyed races) and keeps the one that lowers
        the potential most; "auto" is scikit-learn's ``2 + int(ln k)``.  1 is
        plain k-means++ (Ginart et al.'s algorithm), which misses a cluster
        fairly often in high dimension (unit-variance clusters in d = 25: a
        third of the leaves of the benchmark), pulling the root centers
        (loss ratio 1.11 there, 1.005 with "auto", at the same speed:
        Lloyd converges faster from better seeds).  Deletion stays exact
        either way: it recomputes the affected nodes.
    random_state : None, int, SeedSequence or Generator

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features)
    inertia_ : float
        Sum of squared distances of the remaining points to the centers.
    n_leaves_ : int

    Notes
    -----
    Ginart et al., NeurIPS 2019, Sec. 4.2.  Leaves with at most
    ``n_clusters`` points pass their points up as they are (empty leaves
    pass nothing).

    The points are stored leaf by leaf (a leaf is a contiguous slice, in row
    order).  A deletion reruns Lloyd at each touched leaf, but not its
    seeding when that is certified unchanged: the leaf keeps the
    candidates and potentials of its last (greedy) k-means++ race, and a
    removed point that is no seed and no candidate, and leaves every pick
    the lowest potential with a margin larger than the float rounding
    bounds, cannot change the seeds of a fresh race (see ``_RaceTrace``);
    about 0.5% of the deletions of the benchmark rerun the race.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(400, 2))
    >>> X[:200] += 8
    >>> dc = DCKMeans(2, n_leaves=4, random_state=0).fit(X)
    >>> report = dc.delete(5)
    >>> report.retrained, dc.n_leaves_
    (True, 4)
    >>> ref = DCKMeans(2, n_leaves=4, random_state=0).fit(
    ...     np.delete(X, 5, axis=0), sample_ids=np.delete(np.arange(400), 5))
    >>> bool((ref.cluster_centers_ == dc.cluster_centers_).all())
    True
    """

    def __init__(self, n_clusters, *, n_leaves="auto", height=1, max_iter=10, n_init=1,
                 n_local_trials="auto", random_state=None):
        self.n_clusters = n_clusters
        self.n_leaves = n_leaves
        self.height = height
        self.max_iter = max_iter
        self.n_init = n_init
        self.n_local_trials = n_local_trials
        self.random_state = random_state

    def _check_params(self, n):
        k = check_n_clusters(self.n_clusters, n)
        h = check_int(self.height, "height", 1)
        max_iter = check_int(self.max_iter, "max_iter", 1)
        self._n_init = check_int(self.n_init, "n_init", 1)
        t = self.n_local_trials
        if isinstance(t, str):
            if t != "auto":
                raise InvalidInputError(f"n_local_trials={t!r} must be 'auto' or an int")
            t = 2 + int(math.log(k))
        self._n_trials = min(check_int(t, "n_local_trials", 1), 16)
        L = self.n_leaves
        if isinstance(L, str):
            if L != "auto":
                raise InvalidInputError(f"n_leaves={L!r} must be 'auto' or a power of two")
            L = auto_n_leaves(n)
        else:
            L = check_int(L, "n_leaves", 1)
            if L & (L - 1):
                raise InvalidInputError(f"n_leaves={L} must be a power of two")
        w = round(L ** (1.0 / h))
        if w ** h != L:
            raise InvalidInputError(
                f"n_leaves={L} is not w**height for an integer w (height={h})")
        return k, L, h, max(w, 1), max_iter

    def fit(self, X, y=None, *, sample_ids=None):
        """Fit DC-k-means.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        sample_ids : array-like of int, optional
            Distinct nonnegative ids (default ``0..n-1``); they key the
            leaf assignment and the seeding draws.

        Returns
        -------
        self
        """
        X = check_array(X, "X")
        n, d = X.shape
        k, L, h, w, max_iter = self._check_params(n)
        ids = _check_sample_ids(sample_ids, n)
        key = int(as_generator(self.random_state).integers(0, 2 ** 63))
        self._k, self._w, self._h, self._max_iter, self._key = k, w, h, max_iter, key
        self.n_leaves_ = L
        self.n_features_in_ = d
        u = _keyed_uniform(key, ids, 1 << 40)
        self._ids = ids
        self._leaf = np.minimum((u * L).astype(np.int64), L - 1)
        self._alive = np.ones(n, dtype=bool)
        self._n_alive = n
        self._order = np.argsort(ids, kind="stable")
        self._ids_sorted = ids[self._order]
        self._layout(X, np.arange(n))
        # levels[0] = leaves, levels[h] = [root]; each entry (C, mass)
        self._levels = [[None] * (w ** (h - l)) for l in range(h + 1)]
        self._keys = [[self._node_key(l, j) for j in range(w ** (h - l))]
                      for l in range(h + 1)]
        self._traces = [None] * L
        for j in range(L):
            self._levels[0][j] = self._leaf_fit(j)
        for l in range(1, h + 1):
            for j in range(len(self._levels[l])):
                self._levels[l][j] = self._node_fit(l, j)
        self._inertia = None
        return self

    def _layout(self, X, rows):
        """Store the rows ``X`` (original row indices ``rows``, ascending)
        leaf-contiguous, in row order within each leaf, as float64 (a
        private copy: deletion overwrites rows).

        Leaf ``j`` occupies slots ``[_start[j], _start[j] + _count[j])`` of
        ``_X`` (its points, a C-contiguous slice), ``_sids`` (their ids) and
        ``_rows`` (their original row indices, ascending); a deletion shifts
        the rest of its leaf down one slot, so a leaf stays in row order and
        the slots after ``_count[j]`` (freed by deletions) hold zeros and -1.
        """
        leaf = self._leaf[rows]
        order = np.argsort(leaf, kind="stable")
        self._X = np.ascontiguousarray(X[order], dtype=np.float64)
        self._rows = rows[order]
        self._sids = np.ascontiguousarray(self._ids[self._rows])
        counts = np.bincount(leaf, minlength=self.n_leaves_)
        self._count = [int(c) for c in counts]
        self._start = [0] + [int(c) for c in np.cumsum(counts)[:-1]]

    def _remove_row(self, r):
        """Remove original row ``r`` (alive) from its leaf's slots."""
        j = int(self._leaf[r])
        a, e = self._start[j], self._start[j] + self._count[j]
        p = a + int(np.searchsorted(self._rows[a:e], r))
        tr = self._traces[j]
        if tr is not None:  # are the leaf's seeds unchanged without row p?
            new = [t.remove(p - a, self._X[p], self._X[a:e], e - a - 1) for t in tr]
            self._traces[j] = None if None in new else new
        # shift the rest of the leaf down (numpy copies overlapping ranges
        # through a buffer, so the result is right)
        self._X[p:e - 1] = self._X[p + 1:e]
        self._rows[p:e - 1] = self._rows[p + 1:e]
        self._sids[p:e - 1] = self._sids[p + 1:e]
        self._X[e - 1] = 0.0
        self._rows[e - 1] = -1
        self._sids[e - 1] = -1
        self._count[j] -= 1
        return j

    def _leaf_fit(self, j):
        """k-means of leaf ``j``; reuses its seeds when they are certified
        unchanged since its last race (``_traces[j]``, see _RaceTrace)."""
        a, e = self._start[j], self._start[j] + self._count[j]
        tr = self._traces[j]
        seeds = None if tr is None else [t.seeds for t in tr]
        C, mass, new = _node_kmeans(self._X[a:e], None, self._sids[a:e], self._k,
                                    self._keys[0][j], self._max_iter, self._n_init,
                                    self._n_trials, seeds=seeds, traced=True)
        if seeds is None:
            self._traces[j] = new
        return C, mass

    def _node_fit(self, l, j):
        kids = self._levels[l - 1][j * self._w:(j + 1) * self._w]
        C = np.concatenate([c for c, _ in kids], axis=0)
        m = np.concatenate([mm for _, mm in kids])
        keep = m > 0
        if not keep.all():
            C, m = np.ascontiguousarray(C[keep]), m[keep]
        return _node_kmeans(C, m, np.arange(C.shape[0]), self._k,
                            self._keys[l][j], self._max_iter, self._n_init,
                            self._n_trials)

    def _node_key(self, l, j):
        return int(_keyed_uniform(self._key, [l * (1 << 32) + j], 2 ** 41)[0] * 2 ** 53)

    @property
    def cluster_centers_(self):
        self._check_fitted("_levels")
        C, m = self._levels[-1][0]
        if C.shape[0] < self._k:  # fewer points than k reached the root
            C = np.concatenate([C, np.repeat(C[:1], self._k - C.shape[0], axis=0)])
        return C.copy()

    @property
    def sample_ids_(self):
        self._check_fitted("_levels")
        return self._ids[self._alive].copy()

    @property
    def inertia_(self):
        self._check_fitted("_levels")
        if self._inertia is None:
            X = self._X[self._rows >= 0]
            C = self.cluster_centers_
            d2 = np.stack([_sqdist(X, c) for c in C], axis=1)
            self._inertia = math.fsum(d2.min(axis=1))
        return self._inertia

    def predict(self, X):
        """Index of the nearest center for each row of ``X``."""
        self._check_fitted("_levels")
        X = check_array(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise InvalidInputError(
                f"X has {X.shape[1]} features, but DCKMeans was fitted with "
                f"{self.n_features_in_}")
        d2 = np.stack([_sqdist(X, c) for c in self.cluster_centers_], axis=1)
        return np.argmin(d2, axis=1).astype(np.int32)

    def delete(self, ids):
        """Delete points by id and recompute their leaves' root paths.

        Returns
        -------
        DeletionReport
            ``retrained`` is True (the affected path is recomputed).

        Raises
        ------
        InvalidIdError
            An id is unknown, repeated or already deleted, or fewer than
            ``n_clusters`` points would remain.  Nothing is deleted then.
        """
        t0 = time.perf_counter()
        self._check_fitted("_levels")
        pos = _IdIndex.lookup(self._ids_sorted, self._order, self._alive, ids,
                              self._n_alive, self._k)
        if pos.size == 0:
            return DeletionReport(0, False, "", time.perf_counter() - t0)
        self._alive[pos] = False
        self._n_alive -= pos.size
        touched = sorted(set(self._remove_row(int(r)) for r in pos))
        for j in touched:
            self._levels[0][j] = self._leaf_fit(j)
        for l in range(1, self._h + 1):
            touched = sorted(set(j // self._w for j in touched))
            for j in touched:
                self._levels[l][j] = self._node_fit(l, j)
        if self._n_alive * 4 < 3 * self._ids.shape[0]:  # forget the deleted ids
            keep = self._alive
            slots = self._rows >= 0
            X = self._X[slots][np.argsort(self._rows[slots])]
            self._ids, self._leaf = self._ids[keep], self._leaf[keep]
            self._alive = np.ones(self._ids.shape[0], dtype=bool)
            self._order = np.argsort(self._ids, kind="stable")
            self._ids_sorted = self._ids[self._order]
            self._layout(X, np.arange(self._ids.shape[0]))
        self._inertia = None
        return DeletionReport(int(pos.size), True, "leaf path", time.perf_counter() - t0)
