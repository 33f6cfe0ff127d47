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
import contextlib
import copy
import math
import numbers
import threading
import time
from dataclasses import dataclass

import numpy as np

from .._base import BaseEstimator
from ..core.kernels import lattice as _lattice, lloyd as _lloyd, seeding as _seeding
from .._validation import check_array, check_ids, check_int, check_n_clusters
from ..exceptions import InvalidIdError, InvalidInputError, ModelFileError, NotFittedError
from ..rng import as_generator

__all__ = ["QKMeans", "DCKMeans", "DeletionReport", "auto_epsilon", "auto_n_leaves"]

_U = 2.0 ** -53  # unit roundoff of float64
_TINY = 2.0 ** -1022  # smallest normal float64
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
# State that cannot be corrupted: all-or-nothing commits, a lock per object
# ----------------------------------------------------------------------------

def _pow2_ceil(x):
    """``2^e`` with ``|x| <= 2^e`` (elementwise; 0 stays 0, inf and NaN stay).

    An upper bound that keeps only the binary exponent of ``|x|``: the
    widths of the race bounds that the deletions carry forward are built
    from it, so that they hold nothing more precise than the exponent of a
    potential that once included a deleted point (see _RaceTrace and the
    Notes of DCKMeans)."""
    m, e = np.frexp(np.abs(np.asarray(x, dtype=np.float64)))
    # |x| = m 2^e with m in [1/2, 1): ceil(m) = 1; 0, inf and NaN have m = |x|
    return np.ldexp(np.ceil(m), e)


@contextlib.contextmanager
def _generator_rollback(random_state):
    """The generator of ``random_state``; if the block raises, a Generator
    passed by the user gets its state back (a fit that fails draws nothing)."""
    gen = as_generator(random_state)
    saved = gen.bit_generator.state if gen is random_state else None
    try:
        yield gen
    except BaseException:
        if saved is not None:
            gen.bit_generator.state = saved
        raise


def _write_rows(a, index, value):
    """``a[index] = value``: one write of :func:`_overwrite` (a function of
    its own so that the tests can make it fail)."""
    a[index] = value


def _overwrite(targets):
    """``a[index] = value`` for every ``(a, index, value)`` of ``targets``,
    all or nothing: when a write raises, the earlier ones are undone before
    the exception propagates.

    The last step of a deletion, which erases the deleted rows in place in
    arrays too large to copy on every call; everything that can fail has
    been computed before it."""
    if len(targets) == 1:  # one write: nothing to undo
        _write_rows(*targets[0])
        return
    done = []
    try:
        for a, index, value in targets:
            old = a[index]  # a copy for an index array, a view for a slice
            done.append((a, index, old.copy() if isinstance(index, slice) else old))
            _write_rows(a, index, value)
    except BaseException:
        for a, index, old in reversed(done):
            a[index] = old
        raise


def _shallow(state):
    """A new state object of the same class with the same attributes (a
    cheaper ``copy.copy``)."""
    new = type(state).__new__(type(state))
    new.__dict__.update(state.__dict__)
    return new


def _writable(state, names):
    """Give ``state`` a private writable copy of each of its arrays
    ``names`` that is read-only (an unpickled buffer can be)."""
    for name in names:
        v = getattr(state, name)
        if not v.flags.writeable:
            setattr(state, name, v.copy())


class _LockedEstimator(BaseEstimator):
    """Base of the deletion estimators: the fitted state lives in one
    attribute ``_state`` that fit and delete replace as a whole; a per-object
    ``threading.RLock`` serializes the calls that change it and the reads of
    the fitted attributes.

    The lock is not pickled or copied: every instance (constructed,
    unpickled or copied) gets its own.  ``__getstate__`` (used by pickle,
    ``copy.copy`` and ``copy.deepcopy``) takes a copy of ``_state`` under
    the lock, so a concurrent delete cannot tear it, and ``copy.copy``
    therefore copies ``_state`` too: a delete overwrites rows in place, so
    a shallow copy sharing the state would be corrupted by the original's
    deletions.  ``__setstate__`` (pickle, ``copy.copy``) checks the state
    field by field first (``_check_state`` of the subclass, see
    _check_pickled): a pickle is data from outside.
    """

    def __new__(cls, *args, **kwargs):
        obj = super().__new__(cls)
        obj._lock = threading.RLock()
        return obj

    def __getstate__(self):
        with self._lock:
            state = {k: v for k, v in self.__dict__.items() if k != "_lock"}
            if "_state" in state:
                state["_state"] = copy.deepcopy(state["_state"])
        return state

    def __setstate__(self, state):
        # a pickle is data from outside: every field is checked before
        # anything is installed (ModelFileError naming the field)
        _check_pickled(type(self), state)
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __deepcopy__(self, memo):  # the default would copy _state twice
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        state = self.__getstate__()
        new.__dict__.update({k: v if k == "_state" else copy.deepcopy(v, memo)
                             for k, v in state.items()})
        return new

    def set_params(self, **params):
        """Set hyper-parameters (taking effect at the next :meth:`fit`);
        unknown names raise InvalidInputError."""
        with self._lock:
            return super().set_params(**params)

    def _fitted(self):
        """The fitted state (call with the lock held)."""
        state = self.__dict__.get("_state")
        if state is None:
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit first")
        return state


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
    (the same rounding as one cluster at a time), on ``(k, d)`` sums or on a
    stack ``(T, k, d)`` of them (one per iteration: certification).
    """
    g = gamma * n / k
    m = counts.astype(np.float64)
    small = counts < g
    if not small.any() and counts.all():  # the usual case: plain means
        return sums / m[..., None], m
    den = np.where(small, g, np.where(counts > 0, m, np.inf))
    with np.errstate(invalid="ignore", divide="ignore"):
        top = np.where(small, g - m, 0.0)
        num = np.where(small[..., None], sums + top[..., None] * prev, sums)
        c = num / den[..., None]
    empty = ~small & (counts <= 0)
    if empty.any():
        c[empty] = prev[empty]
    return c, den


@dataclass(frozen=True, eq=False)
class _QParams:
    """What a QKMeans fit fixed: hyper-parameters (those of the fit, not the
    current ``get_params``) and the random draws."""

    k: int
    gamma: float
    max_iter: int
    epsilon: object   # "auto" or the float step
    key: int          # keys the seeding race
    phases: np.ndarray  # (max_iter, d) lattice phases
    n_features: int

    def eps(self, n):
        if isinstance(self.epsilon, str):
            return auto_epsilon(n, self.k, self.n_features)
        return self.epsilon


class _QState:
    """Everything a fitted QKMeans holds: its _QParams ``p`` and the memo of
    one Q-Lloyd run on the stored rows (see QKMeans Notes, "What is kept,
    what is erased").  fit and a retraining delete build a new one; a
    certified delete builds a new one that shares the per-row arrays and
    overwrites the deleted rows in them last.

    The memo of the ``n_run + 1`` computed assignments (``t = 0`` to the
    seeds), iteration first: ``C`` (n_run + 1, k, d) the centers, ``cells``
    (n_run, k, d) the lattice cells of ``C[1:]``, ``counts`` (n_run + 1, k),
    per row ``labels``/``mind`` (n_run + 1, n_rows), ``maxmind``
    (n_run + 1,) the largest distance of a remaining row; the cluster
    ``sums`` (n_run + 1, k, d) and the ``loss`` (n_run + 1,) on their grids
    ``quantum`` (d,) and ``loss_quantum`` (n_run + 1,) (see _q_grid), None
    until the first deletion (see _q_memo)."""


def _q_maxabs(C0, maxmind0):
    """Per-coordinate bound on ``|x|`` for the certification's rounding
    bounds (no pass over X): ``|x_c| <= |seed_c| + |x - seed|`` for the seed
    of ``x``, the distance known from the assignment up to a relative
    ``(d + 2) u``, far below the 1e-8 slack."""
    return (np.abs(C0).max(axis=0) + math.sqrt(maxmind0)) * (1.0 + 1e-8)


def _q_grid(bound, n):
    """The grid step (a power of two, elementwise) of the memoized sums of
    at most ``n`` terms bounded by ``bound``.

    The memo holds every sum as ``q * sum(rint(x / q))``: each term rounded
    to the grid (within ``q / 2``), then summed exactly (integer multiples
    of ``q`` below ``2^53 q``, so that every float sum of them, in any
    order, is exact).  An updated sum (minus a deleted row's rounded term)
    is therefore bit for bit the sum of the remaining rows' terms: the memo
    does not depend on what was deleted, or in which order (a float sum
    would, in its low bits).  The step is the smallest that keeps the sums
    exact: ``bound < 2^e`` and ``n <= 2^c`` give ``q = 2^(e + c - 52)``
    (at least the smallest normal float, so that ``r q`` is exact)."""
    c = (int(n) - 1).bit_length()
    return np.maximum(np.ldexp(1.0, np.frexp(bound)[1] + (c - 52)), _TINY)


def _on_grid(x, q):
    """The terms ``x`` rounded to the grid ``q`` (exact scalings: ``q`` is a
    power of two)."""
    return np.rint(x / q) * q


def _label_sums(X, inv, plus, minus, k, chunk=2048):
    """The rows of ``X`` on the grid, in grid units (``rint(x * inv)``, ``inv``
    the inverse of the grid steps), added to row ``plus[i]`` (and subtracted
    from row ``minus[i]`` unless ``minus`` is None) of a new (k, d) array;
    exact (integers below 2^53).  ``chunk`` rows at a time through small
    buffers, with bincount (BLAS would start threads that stay busy)."""
    n, d = X.shape
    out = np.zeros(k * d)
    m = min(chunk, n)
    R, idx, col = np.empty((m, d)), np.empty((m, d), dtype=np.intp), np.arange(d)
    for a in range(0, n, chunk):
        b = min(a + chunk, n)
        r, ix = R[:b - a], idx[:b - a]
        np.multiply(X[a:b], inv, out=r)
        np.rint(r, out=r)
        for rows, sign in ((plus, 1.0), (minus, -1.0)):
            if rows is not None:
                np.multiply(rows[a:b, None], d, out=ix)
                ix += col
                out += sign * np.bincount(ix.ravel(), weights=r.ravel(), minlength=k * d)
    return out.reshape(k, d)


def _q_grid_sums(X, labels, k, quantum, ref=None):
    """Each cluster's sum of the rows of ``X`` on the grid ``quantum`` (d,)
    for every assignment of ``labels`` (n_run + 1, n_rows).

    Each assignment is summed from the nearest known one, updated by the
    rows whose label differs (exact either way): the previous assignment,
    or the same iteration of ``ref`` = (labels, sums) of another run on the
    same rows and grid (the run before a retraining: mostly the same
    labels), or nothing."""
    n = X.shape[0]
    inv = 1.0 / quantum  # exact: powers of two
    units = np.empty((labels.shape[0], k, X.shape[1]))
    for t, lab in enumerate(labels):
        near = [(labels[t - 1], units[t - 1])] if t else []
        if ref is not None and t < ref[0].shape[0]:
            near.append((ref[0][t], ref[1][t] * inv))
        best = None
        for other, other_units in near:
            moved = np.flatnonzero(lab != other)
            if moved.size < n // 2 and (best is None or moved.size < best[0].size):
                best = (moved, other, other_units)
        if best is None:
            units[t] = _label_sums(X, inv, lab, None, k)
        else:
            moved, other, other_units = best
            units[t] = other_units + _label_sums(X[moved], inv, lab[moved], other[moved], k)
    sums = units * quantum
    sums += 0.0  # no -0.0 (a fresh sum of nothing is +0.0, as x - x)
    return sums


def _q_grid_loss(mind, loss_quantum):
    """The loss of every assignment (rows of ``mind``) on its grid."""
    loss = np.empty(mind.shape[0])
    buf = np.empty(mind.shape[1])
    for t, (row, q) in enumerate(zip(mind, loss_quantum)):
        np.multiply(row, 1.0 / q, out=buf)
        loss[t] = np.rint(buf, out=buf).sum() * q
    return loss


def _q_fit(X, ids, k, eps, gamma, max_iter, key, phases, seeds=None, ref=None):
    """Q-Lloyd on all rows of ``X`` (no input validation); returns a _QState.

    ``seeds`` (positions) skips the race seeding when the caller knows its
    outcome (a deletion that removed no seed: the keyed race is unchanged).
    ``ref`` = (quantum, labels, sums): the memo of another run on the same
    rows (see _q_grid_sums), used if the grid is the same."""
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
    # a point depends on that point and the centers only; the float sums
    # and losses of the kernel drive the run, the memo keeps them on grids
    qa = _lloyd.QAssign(X, k)
    C, cells, labels, mind, sums, counts, loss = [centers], [], [], [], [], [], []

    def step(centers, dist=None):
        for memo, value in zip((labels, mind, sums, counts, loss), qa.step(centers, dist)):
            memo.append(value)

    step(centers, dist)
    s.n_iter = 0
    for t in range(1, max_iter + 1):
        phase = phases[t - 1]
        c, _ = _balanced_centroids(sums[-1], counts[-1], n, k, gamma, C[-1])
        # Lattice(eps, phase).quantize / .centers without the checks (c is
        # finite: means of finite points)
        cells.append(_lattice.quantize(c, phase, eps))
        C.append(_lattice.centers(cells[-1], phase, eps))
        step(C[-1])
        if not loss[-1] < loss[-2]:  # loss stopped decreasing: keep t - 1
            break
        s.n_iter = t
    s.n_run = len(C) - 1  # iterations computed (the last may be rejected)
    # the memo, iteration first (per row: a deletion erases a column)
    s.C, s.cells, s.counts = np.stack(C), np.stack(cells), np.stack(counts)
    s.labels, s.mind = np.stack(labels), np.stack(mind)
    s.maxmind = s.mind.max(axis=1)
    s.maxabs = _q_maxabs(centers, s.maxmind[0])
    s.quantum, s.loss_quantum = _q_grid(s.maxabs, n), _q_grid(s.maxmind, n)
    if ref is not None and np.array_equal(ref[0], s.quantum):
        s.sums = _q_grid_sums(X, s.labels, k, s.quantum, ref[1:])
        s.loss = _q_grid_loss(s.mind, s.loss_quantum)
    else:  # computed by the first deletion (_q_memo): a fit alone does not pay for it
        s.sums = s.loss = None
    s.inertia = None
    return s


def _q_state(X, ids, p, seeds=None, ref=None):
    """_q_fit with the fitted parameters ``p`` (a _QParams), recorded in the
    state."""
    s = _q_fit(X, ids, p.k, p.eps(X.shape[0]), p.gamma, p.max_iter, p.key, p.phases,
               seeds=seeds, ref=ref)
    s.p = p
    return s


def _hits(pos, seeds):
    """Whether a position of ``pos`` is one of ``seeds`` (``np.isin`` costs
    ~10 us, most of a small certified deletion)."""
    if pos.size * seeds.size <= 4096:
        return bool((pos[:, None] == seeds).any())
    return bool(np.isin(pos, seeds).any())


def _q_memo(s):
    """The memoized sums and losses of the state ``s`` on their grids:
    stored, or computed (and not stored: ``s`` is not changed) when ``s``
    comes from a fit that did not compute them."""
    if s.sums is None:
        return (_q_grid_sums(s.X, s.labels, s.p.k, s.quantum),
                _q_grid_loss(s.mind, s.loss_quantum))
    return s.sums, s.loss


def _q_certify(s, pos):
    """Return ("", update) if the deletion of rows ``pos`` of the state
    ``s`` is certified, else (reason, update or None).  Changes nothing.

    ``update`` = (sums, counts, loss, gone): the memo without the rows
    ``pos`` (and their distances ``gone``), when it was computed.

    Every memoized assignment at once (axis 0 of the memo is the
    iteration): the checks of iteration ``t`` use the updated assignment
    ``t - 1`` and the stored centers ``t - 1``.  The bounds depend on the
    current counts, grids and losses only (see _q_grid)."""
    p = s.p
    k, gamma, T = p.k, p.gamma, s.n_run
    if _hits(pos, s.seeds):
        return "seed", None
    n_new = s.n_alive - pos.size
    if p.eps(n_new) != s.eps:
        return "epsilon", None
    lab = s.labels[:, pos]  # (T + 1, |pos|)
    it = np.arange(T + 1)[:, None]
    # the deleted rows' grid terms out of their clusters' sums and out of
    # the losses: exact, as a fresh sum of the remaining terms
    sums, loss = _q_memo(s)
    sums = sums.copy()
    np.subtract.at(sums, (it, lab), _on_grid(s.X[pos], s.quantum))
    counts = s.counts - np.bincount((it * k + lab).ravel(),
                                    minlength=(T + 1) * k).reshape(T + 1, k)
    gone = s.mind[:, pos]
    loss = loss - _on_grid(gone, s.loss_quantum[:, None]).sum(axis=1)
    # the balanced centroids of iterations 1..T from the updated assignments
    # 0..T-1 and the stored centers 0..T-1
    prev = s.C[:-1]
    c, den = _balanced_centroids(sums[:-1], counts[:-1], n_new, k, gamma, prev)
    with np.errstate(invalid="ignore", over="ignore"):
        # |grid sum - exact sum| <= m q / 2; |float sum of a fresh fit -
        # exact sum| <= 1.01 u (m^2 + 1) max|x| (m terms, any order)
        m = counts[:-1].astype(np.float64)[..., None]
        dS = m * (0.5 * s.quantum) + 1.01 * _U * (m * m + 1.0) * s.maxabs
        dc = np.where(np.isfinite(den)[..., None], dS / den[..., None], 0.0)
        dc = dc + 16 * _U * (s.maxabs + np.abs(prev))
        tv = c / s.eps - p.phases[:T, None, :]
        margin = 2.0 * (dc / s.eps + 8 * _U * (np.abs(tv) + 1.0)) + 1e-300
        lo = np.floor(tv - margin)
        same = (lo == np.floor(tv + margin)) & (lo == s.cells)
    update = (sums, counts, loss, gone)
    if not same.all():
        return "centroid", update
    # |grid loss - exact| <= n q / 2; a fresh fit's float loss is within
    # 4 (n + 2) u of the exact one (n nonnegative terms, any order)
    half = 0.5 * n_new * s.loss_quantum
    err = half + 4.0 * (n_new + 2) * _U * (loss + half)
    diff = loss[1:] - loss[:-1]
    stopped = ~(diff < 0)
    expected = np.zeros(T, dtype=bool)
    expected[-1] = T > s.n_iter  # the last iteration was rejected
    if (np.abs(diff) <= 2.0 * (err[1:] + err[:-1]) + 1e-300).any() or \
            (stopped != expected).any():
        return "early stop", update
    return "", update


def _q_retrained(s, pos, reason, update=None):
    """A new state: Q-Lloyd on the rows of ``s`` but ``pos`` (``s`` is not
    changed).  ``update``: the memo of ``s`` without ``pos`` (_q_certify),
    where the new run starts its grid sums."""
    alive = s.alive.copy()
    alive[pos] = False
    # no seed removed: the keyed race on the rest picks the same ids
    seeds = None if reason == "seed" else (np.cumsum(alive) - 1)[s.seeds]
    ref = None if update is None else (s.quantum, np.compress(alive, s.labels, axis=1),
                                       update[0])
    return _q_state(np.ascontiguousarray(s.X[alive]), s.ids[alive], s.p, seeds=seeds, ref=ref)


def _q_certified(s, pos, update):
    """The state after the certified deletion of rows ``pos``: a new
    _QState with the updated sums, counts and losses.  It shares the
    per-row arrays of ``s`` and overwrites the deleted rows in them as its
    last step (all or nothing, see _overwrite); after that ``s`` is stale.
    When a quarter of the rows are dead it gets compacted copies instead
    and ``s`` is not changed at all."""
    new = _shallow(s)
    new.sums, new.counts, new.loss, gone = update
    new.n_alive = s.n_alive - pos.size
    new.inertia = None
    compact = new.n_alive * 4 < 3 * s.X.shape[0]
    top = np.flatnonzero(gone.max(axis=1) >= s.maxmind)
    regrid = top.size or (new.n_alive - 1).bit_length() != (s.n_alive - 1).bit_length()
    if compact or regrid:
        keep = s.alive.copy()
        keep[pos] = False
    if top.size:  # a deleted row was the farthest: the largest of the rest
        new.maxmind = s.maxmind.copy()
        new.maxmind[top] = np.compress(keep, s.mind[top], axis=1).max(axis=1)
        new.maxabs = _q_maxabs(s.C[0], new.maxmind[0])
    if regrid:
        # the grids that a fit on the remaining rows chooses (the old ones
        # would keep the scale of the deleted rows); the memo summed again
        # where they changed
        new.quantum = _q_grid(new.maxabs, new.n_alive)
        new.loss_quantum = _q_grid(new.maxmind, new.n_alive)
        if not np.array_equal(new.quantum, s.quantum):
            new.sums = _q_grid_sums(s.X[keep], np.compress(keep, s.labels, axis=1), s.p.k,
                                    new.quantum)
        redo = np.flatnonzero(new.loss_quantum != s.loss_quantum)
        if redo.size:
            new.loss[redo] = _q_grid_loss(np.compress(keep, s.mind[redo], axis=1),
                                          new.loss_quantum[redo])
    if compact:  # fresh arrays of the live rows
        remap = np.cumsum(keep) - 1
        new.X = np.ascontiguousarray(s.X[keep])
        new.ids = s.ids[keep]
        new.labels = np.compress(keep, s.labels, axis=1)
        new.mind = np.compress(keep, s.mind, axis=1)
        new.seeds = remap[s.seeds]
        new.alive = np.ones(new.X.shape[0], dtype=bool)
        new.order = np.argsort(new.ids, kind="stable")
        new.ids_sorted = new.ids[new.order]
        return new
    _writable(new, ("X", "alive", "labels", "mind"))
    every = (slice(None), pos)  # the deleted rows' column in every iteration
    _overwrite([(new.X, pos, 0.0), (new.alive, pos, False), (new.labels, every, -1),
                (new.mind, every, 0.0)])
    return new


class QKMeans(_LockedEstimator):
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
       rigorous bound on the difference between the updated sums and any
       float summation of the remaining members;
    4. every loss comparison keeps its outcome with a margin larger than the
       rigorous bound on the difference between the updated losses and
       any float summation of the remaining distances.

    The memoized sums and losses are exact sums of the terms rounded to a
    grid (a power of two per coordinate and per iteration, the finest that
    keeps every sum below ``2^53`` grid steps, chosen from the bound on
    ``|x|``, the largest distances and the number of remaining rows):
    removing a deleted row's rounded term is exact, so an updated sum is
    bit for bit the sum of the remaining rows' terms, and the bounds of 3.
    and 4. (half a grid step per term, plus the float rounding of a fresh
    fit's sums) depend on the current counts, grids and losses only, not on
    the history of deletions.

    By induction the centers of every iteration are unchanged, hence so are
    the assignments of the remaining points: the assignment step
    (csrc/fkm_qlloyd.h, with Elkan's triangle-inequality bounds to skip
    most distances) decides each point's label from that point and the
    sequence of centers alone.  If any check fails, the model
    is refitted on the remaining data with the stored random draws.  Either
    way the result equals the fresh fit; the tests replay this.

    What is kept, what is erased.  A fitted QKMeans holds, about its
    training data: a private float64 copy of the remaining rows (never the
    caller's array; needed to retrain) and their ids; for each computed
    iteration, every point's label and squared distance to its center (the
    memo of Ginart et al. that certification and ``labels_``/``inertia_``
    read), the largest of these distances, each cluster's count and sum and
    the total loss (on their grids, see above; a fit leaves the sums and
    losses to the first deletion, which computes them from the rows: a
    model that never deletes does not pay for them); the lattice cells and
    centers of every iteration; the positions and ids of the seeds; a
    per-coordinate bound on ``|x|`` over the remaining rows (the largest
    coordinate of a seed plus the largest distance of a remaining point to
    its seed).  It also holds the model key and the lattice phases (random
    draws, no data) and the hyper-parameters of the fit.  ``delete``
    erases a deleted row at once: its coordinates, labels and distances are
    overwritten (0, -1, 0) in every array, its rounded terms are subtracted
    from every memoized sum and loss (exactly) and it leaves every count;
    the largest distances, the bound on ``|x|`` and the grids are
    recomputed from the remaining rows when they change (the row attained
    a largest distance, or the number of rows halved), the sums and losses
    summed again on the new grids; a retraining builds the whole memo from
    the remaining rows alone.  What stays is, bit for bit, what a fresh fit
    on the remaining rows would hold (no rounding error, error bound or
    binary exponent carried over from the deleted rows: the memo does not
    tell which cluster lost a point, nor in which order points were
    deleted), but for the deleted *ids* (marked dead, so that deleting one
    again says "already deleted"; the caller's identifiers, no data), kept
    until the arrays are compacted, when a quarter of the stored rows are
    dead and at every retraining.  Pickles, ``copy`` and ``deepcopy`` hold
    the same; an unpickled state is checked field by field before it is
    installed (types, shapes, index ranges, counts against the labels,
    bounds and grids; :class:`~pyfkm.exceptions.ModelFileError` naming the
    field).

    Failures and threads.  ``fit`` and ``delete`` build the new state aside
    and install it at the end (the in-place erasure of a certified deletion
    is their last step and is undone if it fails): a call that raises
    (bad input, a numerical failure, an interrupt) leaves the model exactly
    as it was, and a ``Generator`` given as ``random_state`` gets its state
    back from a failed ``fit``.  ``delete`` always uses the hyper-parameters
    of the last successful ``fit`` (``set_params`` takes effect at the next
    ``fit``).  The methods that change the model (``fit``, ``delete``,
    ``set_params``) and the fitted attributes take a per-object
    ``threading.RLock``, so several threads may delete from one model: the
    calls run one at a time and a reader sees the model before or after a
    deletion, never in between.  The lock is not pickled; unpickled and
    copied models get their own (``copy.copy`` also copies the fitted
    state, which deletions update in place).

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

    @staticmethod
    def _check_state(fields, state):
        _q_check_state(fields, state)

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
        else:
            e = float(e)
        return k, max_iter, float(g), e

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

        Raises
        ------
        InvalidInputError
            Bad parameters or data (NaN, infinity, fewer rows than
            ``n_clusters``, repeated ids), or data whose squared distances
            overflow (:class:`NumericalError`).  The model is unchanged then.
        """
        with self._lock:
            # a private float64 copy, never the caller's buffer: delete
            # overwrites rows
            X = np.array(check_array(X, "X"), dtype=np.float64)
            n, d = X.shape
            k, max_iter, gamma, epsilon = self._check_params(n)
            ids = _check_sample_ids(sample_ids, n)
            with _generator_rollback(self.random_state) as rng:
                key = int(rng.integers(0, 2 ** 63))
                # the phases of Lattice.random(eps, d, rng), max_iter times:
                # the generator fills the rows in order, the same draws as
                # one per call
                phases = rng.random((max_iter, d)) - 0.5
                p = _QParams(k, gamma, max_iter, epsilon, key, phases, d)
                state = _q_state(X, ids, p)
            self._state = state  # the commit: one assignment
        return self

    # -- fitted attributes --------------------------------------------------
    @property
    def cluster_centers_(self):
        with self._lock:
            s = self._fitted()
            return s.C[s.n_iter].copy()

    @property
    def labels_(self):
        with self._lock:
            s = self._fitted()
            return s.labels[s.n_iter][s.alive].copy()

    @property
    def sample_ids_(self):
        with self._lock:
            s = self._fitted()
            return s.ids[s.alive].copy()

    @property
    def inertia_(self):
        with self._lock:
            s = self._fitted()
            if s.inertia is None:
                s.inertia = math.fsum(s.mind[s.n_iter][s.alive])
            return s.inertia

    @property
    def n_iter_(self):
        with self._lock:
            return self._fitted().n_iter

    @property
    def seed_ids_(self):
        with self._lock:
            return self._fitted().seed_ids.copy()

    @property
    def epsilon_(self):
        with self._lock:
            return self._fitted().eps

    @property
    def n_samples_(self):
        with self._lock:
            return self._fitted().n_alive

    @property
    def n_features_in_(self):
        with self._lock:
            return self._fitted().p.n_features

    def predict(self, X):
        """Index of the nearest center for each row of ``X``."""
        C = self.cluster_centers_
        X = check_array(X, "X")
        if X.shape[1] != C.shape[1]:
            raise InvalidInputError(
                f"X has {X.shape[1]} features, but QKMeans was fitted with "
                f"{C.shape[1]}")
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
            ``n_clusters`` points would remain.  Nothing is deleted then
            (nor after any other exception).
        """
        t0 = time.perf_counter()
        with self._lock:
            s = self._fitted()
            pos = _IdIndex.lookup(s.ids_sorted, s.order, s.alive, ids, s.n_alive, s.p.k)
            if pos.size == 0:
                return DeletionReport(0, False, "", time.perf_counter() - t0)
            reason, update = _q_certify(s, pos)
            if reason:
                new = _q_retrained(s, pos, reason, update)
            else:
                new = _q_certified(s, pos, update)
            self._state = new  # the commit
        return DeletionReport(int(pos.size), bool(reason), reason, time.perf_counter() - t0)


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

    The half-widths of the bounds are multiples of powers of two that keep
    only the binary exponent of the potentials (see _pow2_ceil), never the
    removed point's term itself: the bounds are the current potential plus
    or minus an amount that carries no trace of a removed point's distance
    to the candidates (the midpoint moves by the term, as a fresh sum of
    the remaining terms would).
    """

    __slots__ = ("seeds", "cand", "lo", "hi", "pick")

    def __getstate__(self):  # explicit: pickle protocols 0 and 1 need it
        return {k: getattr(self, k) for k in self.__slots__ if hasattr(self, k)}

    def __setstate__(self, state):
        for k, v in state.items():
            setattr(self, k, v)

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
            # |exact - pot| <= g exact <= 2 g P (g = 1.01 n u < 1/2, P >= pot);
            # the rounding of pot -+ 2 g P (<= u P) is within the slack
            g = 1.01 * n * _U
            w = 2.0 * g * _pow2_ceil(pot)
            t.lo, t.hi = pot - w, pot + w
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
            # (one row-wise _sqdist for the seeds and the candidates)
            dist = _sqdist(X[np.concatenate((self.seeds[:-1], self.cand[1:].ravel()))], x)
            D = np.minimum.accumulate(dist[:k - 1])
            Tc = dist[k - 1:].reshape(k - 1, T)
            a = np.minimum(D[:, None], Tc)
            e = 4.0 * (d + 4) * _U  # both computations of a term, any order
            # the exact term a* is one of the nonnegative terms of the sum,
            # so a* <= hi and |a - a*| <= e a* <= e P (P >= |lo|, |hi|); the
            # two roundings of (lo - a) - W are <= u (2 + e) P + 3 u P
            P = _pow2_ceil(np.maximum(np.abs(self.lo[1:]), np.abs(self.hi[1:])))
            W = (2.0 * e + 8.0 * _U) * P
            lo = (self.lo[1:] - a) - W
            hi = (self.hi[1:] - a) + W
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


class DCKMeans(_LockedEstimator):
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

    The points are stored leaf by leaf (each leaf its own array, in row
    order).  A deletion reruns Lloyd at each touched leaf, but not its
    seeding when that is certified unchanged: the leaf keeps the
    candidates and potentials of its last (greedy) k-means++ race, and a
    removed point that is no seed and no candidate, and leaves every pick
    the lowest potential with a margin larger than the float rounding
    bounds, cannot change the seeds of a fresh race (see ``_RaceTrace``);
    about 0.5% of the deletions of the benchmark rerun the race.

    What is kept, what is erased.  A fitted DCKMeans holds, about its
    training data: a private float64 copy of the remaining rows (never the
    caller's array), one array per leaf, with their ids and row numbers;
    each id's leaf (a keyed hash of the id, no data); the centroids and
    cluster masses of every node (a leaf with at most ``n_clusters``
    points passes its points up as they are, so its node holds copies of
    them); for each leaf, the trace of its last k-means++ race: the
    positions of its seeds and candidates and bounds on the race
    potentials (sums over the leaf's points), whose widths depend on the
    binary exponents of the potentials and the number of deletions only.
    It also holds the model key (no data) and the hyper-parameters of the
    fit.  ``delete`` erases a deleted row at once: its leaf's arrays are
    replaced by new ones without it (the old ones are no longer
    reachable); its leaf and every node on the path to the root are
    recomputed from the remaining points, so no centroid or mass keeps
    it; its leaf's race trace is rebuilt by a fresh race or, when the seeds
    are certified unchanged, has the point's term subtracted from the
    potential bounds (which then widen by an amount that does not depend
    on the point's term).  What stays is what a fresh fit on the remaining
    rows would hold, but for the race bounds of the leaves whose seeds were
    kept and the deleted *ids* and their leaves (so that deleting one again
    says "already deleted"; the caller's identifiers, no data), kept until
    a quarter of the ids are dead.  Those race bounds keep two traces of
    the deleted points of their leaf: the binary exponent of a potential
    that once included a deleted point (a width is a multiple of the power
    of two above the bounds before the removal: one bit per step and
    candidate, whether the deleted point's term pushed that potential past
    a power of two), and the float rounding of the subtraction in their low
    bits (they are the old bounds minus the term, not a fresh sum of the
    remaining terms); a fresh race of the leaf replaces them.  Pickles,
    ``copy`` and ``deepcopy`` hold the same; an unpickled state is checked
    field by field before it is installed (types, shapes, index ranges,
    the leaves of the ids, every remaining row once in its leaf, the node
    keys, the traces' positions, the sizes and masses of the node results;
    :class:`~pyfkm.exceptions.ModelFileError` naming the field).

    Failures and threads.  ``fit`` and ``delete`` build the new state aside
    (a delete builds new arrays for the touched leaves) and install it at
    the end (clearing the deleted ids' flags in place is the last step and
    is undone if it fails): a call that raises (bad input, a numerical
    failure, an interrupt) leaves the model exactly as it was, and a
    ``Generator`` given as ``random_state`` gets its state back from a
    failed ``fit``.  ``delete`` always uses the hyper-parameters of the
    last successful ``fit``.  The methods that change the model (``fit``,
    ``delete``, ``set_params``) and the fitted attributes take a
    per-object ``threading.RLock``, so several threads may delete from one
    model: the calls run one at a time and a reader sees the model before
    or after a deletion, never in between.  The lock is not pickled;
    unpickled and copied models get their own (``copy.copy`` also copies
    the fitted state, which deletions update in place).

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

    @staticmethod
    def _check_state(fields, state):
        _dc_check_state(fields, state)

    def _check_params(self, n):
        """The validated hyper-parameters (changes nothing)."""
        k = check_n_clusters(self.n_clusters, n)
        h = check_int(self.height, "height", 1)
        max_iter = check_int(self.max_iter, "max_iter", 1)
        n_init = check_int(self.n_init, "n_init", 1)
        t = self.n_local_trials
        if isinstance(t, str):
            if t != "auto":
                raise InvalidInputError(f"n_local_trials={t!r} must be 'auto' or an int")
            t = 2 + int(math.log(k))
        n_trials = min(check_int(t, "n_local_trials", 1), 16)
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
        return dict(k=k, L=L, h=h, w=max(w, 1), max_iter=max_iter, n_init=n_init,
                    n_trials=n_trials)

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

        Raises
        ------
        InvalidInputError
            Bad parameters or data (NaN, infinity, fewer rows than
            ``n_clusters``, repeated ids), or data whose squared distances
            overflow (:class:`NumericalError`).  The model is unchanged then.
        """
        with self._lock:
            X = check_array(X, "X")
            n, d = X.shape
            params = self._check_params(n)
            ids = _check_sample_ids(sample_ids, n)
            with _generator_rollback(self.random_state) as rng:
                key = int(rng.integers(0, 2 ** 63))
                state = _dc_fit(X, ids, key, **params)
            self._state = state  # the commit: one assignment
        return self

    @property
    def n_leaves_(self):
        with self._lock:
            return self._fitted().L

    @property
    def n_features_in_(self):
        with self._lock:
            return self._fitted().d

    @property
    def cluster_centers_(self):
        with self._lock:
            st = self._fitted()
            C, m = st.levels[-1][0]
            if C.shape[0] < st.k:  # fewer points than k reached the root
                C = np.concatenate([C, np.repeat(C[:1], st.k - C.shape[0], axis=0)])
            return C.copy()

    @property
    def sample_ids_(self):
        with self._lock:
            st = self._fitted()
            return st.ids[st.alive].copy()

    @property
    def inertia_(self):
        with self._lock:
            st = self._fitted()
            if st.inertia is None:
                X = np.concatenate(st.X)
                C = self.cluster_centers_
                d2 = np.stack([_sqdist(X, c) for c in C], axis=1)
                st.inertia = math.fsum(d2.min(axis=1))
            return st.inertia

    def predict(self, X):
        """Index of the nearest center for each row of ``X``."""
        C = self.cluster_centers_
        X = check_array(X, "X")
        if X.shape[1] != C.shape[1]:
            raise InvalidInputError(
                f"X has {X.shape[1]} features, but DCKMeans was fitted with "
                f"{C.shape[1]}")
        d2 = np.stack([_sqdist(X, c) for c in C], axis=1)
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
            ``n_clusters`` points would remain.  Nothing is deleted then
            (nor after any other exception).
        """
        t0 = time.perf_counter()
        with self._lock:
            st = self._fitted()
            pos = _IdIndex.lookup(st.ids_sorted, st.order, st.alive, ids, st.n_alive, st.k)
            if pos.size == 0:
                return DeletionReport(0, False, "", time.perf_counter() - t0)
            self._state = _dc_deleted(st, pos)  # the commit
        return DeletionReport(int(pos.size), True, "leaf path", time.perf_counter() - t0)


class _DCState:
    """Everything a fitted DCKMeans holds (see its Notes, "What is kept,
    what is erased"): the fitted hyper-parameters (``k, L, h, w, max_iter,
    n_init, n_trials``), the number of features ``d`` and the key; the ids
    (``ids``, ``leaf``, ``alive``, ``n_alive``, ``order``, ``ids_sorted``);
    the leaves' points (``X``, ``rows``, ``sids``: one array per leaf, see
    _dc_layout); the node results ``levels[l][j] = (C, mass)``
    (``levels[0]`` the leaves, ``levels[h] = [root]``), the node keys and
    the leaves' race traces."""


def _dc_layout(X, rows, ids, leaf, L):
    """The rows ``X`` (original row indices ``rows``, ascending) split by
    leaf: returns the lists ``(X, rows, sids)`` whose entry ``j`` holds leaf
    ``j``'s points (a private C-contiguous float64 array of its own, in row
    order), their original row indices and their ids.

    Every leaf owns its arrays (no view of a shared buffer): a deletion
    replaces its leaf's arrays by new ones, and the old ones, with the
    deleted rows, are no longer reachable from the model.
    """
    order = np.argsort(leaf[rows], kind="stable")
    rows = rows[order]
    ends = np.cumsum(np.bincount(leaf[rows], minlength=L))
    parts = np.split(np.arange(rows.shape[0]), ends[:-1])
    Xl = [np.ascontiguousarray(X[order[p]], dtype=np.float64) for p in parts]
    rl = [rows[p] for p in parts]
    return Xl, rl, [np.ascontiguousarray(ids[r]) for r in rl]


def _dc_node_keys(key, l, m):
    """The keys of the nodes ``0..m-1`` of level ``l``."""
    u = _keyed_uniform(key, l * (1 << 32) + np.arange(m), 2 ** 41)
    return [int(x) for x in u * 2 ** 53]


def _dc_leaves(key, ids, L):
    """The leaf of every id: a keyed uniform draw."""
    u = _keyed_uniform(key, ids, 1 << 40)
    return np.minimum((u * L).astype(np.int64), L - 1)


def _dc_leaf_fit(st, j, X, sids, traces):
    """k-means of leaf ``j`` (points ``X``, ids ``sids``); reuses its seeds
    when they are certified unchanged since its last race (``traces``, see
    _RaceTrace).  Returns ``((C, mass), traces)``, the traces of the new race
    when one was run."""
    seeds = None if traces is None else [t.seeds for t in traces]
    C, mass, new = _node_kmeans(X, None, sids, st.k, st.keys[0][j], st.max_iter, st.n_init,
                                st.n_trials, seeds=seeds, traced=True)
    return (C, mass), (new if seeds is None else traces)


def _dc_node_fit(st, levels, l, j):
    """k-means of internal node ``(l, j)`` on its children's centroids in
    ``levels``, weighted by their masses."""
    kids = levels[l - 1][j * st.w:(j + 1) * st.w]
    C = np.concatenate([c for c, _ in kids], axis=0)
    m = np.concatenate([mm for _, mm in kids])
    keep = m > 0
    if not keep.all():
        C, m = np.ascontiguousarray(C[keep]), m[keep]
    return _node_kmeans(C, m, np.arange(C.shape[0]), st.k, st.keys[l][j], st.max_iter,
                        st.n_init, st.n_trials)


def _dc_fit(X, ids, key, *, k, L, h, w, max_iter, n_init, n_trials):
    """A new _DCState: the whole tree on the rows ``X`` (no input
    validation)."""
    n = X.shape[0]
    st = _DCState()
    st.k, st.L, st.h, st.w, st.max_iter, st.d = k, L, h, w, max_iter, X.shape[1]
    st.n_init, st.n_trials, st.key = n_init, n_trials, key
    st.ids = ids
    st.leaf = _dc_leaves(key, ids, L)
    st.alive = np.ones(n, dtype=bool)
    st.n_alive = n
    st.order = np.argsort(ids, kind="stable")
    st.ids_sorted = ids[st.order]
    st.X, st.rows, st.sids = _dc_layout(X, np.arange(n), ids, st.leaf, L)
    st.keys = [_dc_node_keys(key, l, w ** (h - l)) for l in range(h + 1)]
    st.traces = [None] * L
    levels = [[None] * (w ** (h - l)) for l in range(h + 1)]
    for j in range(L):
        levels[0][j], st.traces[j] = _dc_leaf_fit(st, j, st.X[j], st.sids[j], None)
    for l in range(1, h + 1):
        for j in range(len(levels[l])):
            levels[l][j] = _dc_node_fit(st, levels, l, j)
    st.levels = levels
    st.inertia = None
    return st


def _without(a, p):
    """A new C-contiguous array: ``a`` without its row ``p`` (np.delete
    costs twice as much)."""
    return np.concatenate((a[:p], a[p + 1:]))


def _dc_deleted(st, pos):
    """The state after deleting rows ``pos`` (alive, validated) of ``st``.

    Everything is built aside: the touched leaves get new arrays without
    the deleted rows and are refitted, with their paths to the root.  The
    new state shares the untouched leaves' arrays with ``st`` and the ids'
    ``alive`` flags, which it clears for the deleted rows as its last step
    (all or nothing, see _overwrite); after that ``st`` is stale.  When a
    quarter of the ids are dead it gets compacted copies of the id arrays
    instead (forgetting the deleted ids) and ``st`` is not changed at all."""
    # the touched leaves without the deleted rows, removed one at a time in
    # the order of the request (each removal updates the leaf's race trace)
    leaves = {}  # j -> (X, rows, ids, traces)
    for r in pos:
        r = int(r)
        j = int(st.leaf[r])
        Xj, rj, sj, tr = leaves.get(j, (st.X[j], st.rows[j], st.sids[j], st.traces[j]))
        p = int(np.searchsorted(rj, r))
        if tr is not None:  # are the leaf's seeds unchanged without row p?
            new = [t.remove(p, Xj[p], Xj, Xj.shape[0] - 1) for t in tr]
            tr = None if None in new else new
        leaves[j] = (_without(Xj, p), _without(rj, p), _without(sj, p), tr)
    # refit them and their paths to the root
    levels = [list(lv) for lv in st.levels]
    traces = list(st.traces)
    touched = sorted(leaves)
    for j in touched:
        Xj, _, sj, tr = leaves[j]
        levels[0][j], traces[j] = _dc_leaf_fit(st, j, Xj, sj, tr)
    for l in range(1, st.h + 1):
        touched = sorted(set(j // st.w for j in touched))
        for j in touched:
            levels[l][j] = _dc_node_fit(st, levels, l, j)
    new = _shallow(st)
    new.levels, new.traces, new.inertia = levels, traces, None
    new.X, new.rows, new.sids = list(st.X), list(st.rows), list(st.sids)
    for j, (Xj, rj, sj, _) in leaves.items():
        new.X[j], new.rows[j], new.sids[j] = Xj, rj, sj
    new.n_alive = st.n_alive - pos.size
    if new.n_alive * 4 < 3 * st.ids.shape[0]:  # compact: forget the deleted ids
        keep = st.alive.copy()
        keep[pos] = False
        remap = np.cumsum(keep) - 1
        new.rows = [remap[r] for r in new.rows]
        new.ids, new.leaf = st.ids[keep], st.leaf[keep]
        new.alive = np.ones(new.ids.shape[0], dtype=bool)
        new.order = np.argsort(new.ids, kind="stable")
        new.ids_sorted = new.ids[new.order]
        return new
    _writable(new, ("alive",))
    _overwrite([(new.alive, pos, False)])
    return new


# ----------------------------------------------------------------------------
# Checks of an unpickled state (a pickle is data from outside)
# ----------------------------------------------------------------------------

def _short(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Fields:
    """Field-by-field checks of a fitted state read from a pickle: every
    failure raises ModelFileError naming the field.  Values are checked,
    never converted: a valid state is installed as it is."""

    def __init__(self, where):
        self.where = where

    def fail(self, field, what):
        raise ModelFileError(f"{self.where}: field {field}: {what}")

    def attrs(self, obj, cls, names, field, absent=()):
        """The attributes ``names`` of ``obj``, an instance of exactly
        ``cls`` without other attributes (nor any of ``absent``)."""
        if type(obj) is not cls:
            self.fail(field, f"a {type(obj).__name__}, not a {cls.__name__}")
        got = {}
        for name in names:
            if not hasattr(obj, name):
                self.fail(f"{field}.{name}", "missing")
            got[name] = getattr(obj, name)
        extra = sorted(map(repr, set(getattr(obj, "__dict__", {})) - set(names)))
        extra += [repr(name) for name in absent if hasattr(obj, name)]
        if extra:
            self.fail(field, f"unexpected attribute {extra[0]}")
        return got

    def int(self, value, field, lo, hi=None):
        if type(value) is not int or value < lo or (hi is not None and value > hi):
            self.fail(field, f"{_short(value)} is not an int in [{lo}, "
                             f"{'inf' if hi is None else hi}]")
        return value

    def real(self, value, field, lo=-math.inf, hi=math.inf):
        if not isinstance(value, float) or not (math.isfinite(value) and lo <= value <= hi):
            self.fail(field, f"{_short(value)} is not a finite float in [{lo}, {hi}]")
        return value

    def array(self, value, field, dtype, shape, finite=False):
        """``value``, a C-contiguous ndarray of ``dtype`` and ``shape`` (None:
        any length)."""
        if type(value) is not np.ndarray:
            self.fail(field, f"a {type(value).__name__}, not a numpy array")
        if value.dtype != np.dtype(dtype):
            self.fail(field, f"dtype {value.dtype}, expected {np.dtype(dtype)}")
        if value.ndim != len(shape) or any(want is not None and got != want
                                           for got, want in zip(value.shape, shape)):
            want = "(" + ", ".join("any" if s is None else str(s) for s in shape)
            self.fail(field, f"shape {value.shape}, expected {want}{',' * (len(shape) == 1)})")
        if not value.flags.c_contiguous:
            self.fail(field, "not C-contiguous")
        if finite and not np.isfinite(value).all():
            self.fail(field, "NaN or infinity")
        return value

    def index(self, value, field, n):
        """An integer array with entries in [0, n)."""
        if value.size and (value.min() < 0 or value.max() >= n):
            self.fail(field, f"entries outside [0, {n})")
        return value

    def list(self, value, field, n):
        if type(value) is not list or len(value) != n:
            self.fail(field, f"not a list of {n} entries")
        return value

    def ids(self, v):
        """The id arrays ``ids``, ``order``, ``ids_sorted`` of ``v``:
        distinct nonnegative ids, ``ids[order]`` strictly increasing."""
        ids = self.array(v["ids"], "ids", np.int64, (None,))
        n = ids.shape[0]
        if n and ids.min() < 0:
            self.fail("ids", "negative entries")
        order = self.index(self.array(v["order"], "order", np.int64, (n,)), "order", n)
        ids_sorted = self.array(v["ids_sorted"], "ids_sorted", np.int64, (n,))
        if not (ids_sorted[1:] > ids_sorted[:-1]).all():
            self.fail("ids_sorted", "not strictly increasing")
        if not np.array_equal(ids[order], ids_sorted):
            self.fail("order", "ids[order] is not ids_sorted")
        return ids

    def alive(self, v, n, k):
        """The flags ``alive`` (n,) and their count ``n_alive`` (>= k)."""
        alive = self.array(v["alive"], "alive", np.bool_, (n,))
        n_alive = self.int(v["n_alive"], "n_alive", k, n)
        if int(np.count_nonzero(alive)) != n_alive:
            self.fail("n_alive", "not the number of remaining rows")
        return alive, n_alive

    def unshared(self, written, others):
        """The arrays ``written`` (updated in place by deletions) share no
        memory with each other nor with ``others`` (name -> array)."""
        for name, a in written.items():
            for other, b in {**written, **others}.items():
                if other != name and np.may_share_memory(a, b):
                    self.fail(name, f"shares memory with {other}")


def _check_pickled(cls, state):
    """Check the pickled ``state`` of a ``cls`` (a _LockedEstimator) before
    anything is installed: the hyper-parameters (validated by the next fit)
    and the fitted state, if any, field by field."""
    where = f"{cls.__name__} pickle"
    if type(state) is not dict:
        raise ModelFileError(f"{where}: the state is a {type(state).__name__}, not a dict")
    names = set(cls._param_names())
    for name in state:
        if name not in names and name != "_state":
            raise ModelFileError(f"{where}: unexpected field {_short(name)}")
    for name in sorted(names):
        if name not in state:
            raise ModelFileError(f"{where}: field {name}: missing")
    if "_state" in state:
        cls._check_state(_Fields(where), state["_state"])


def _exact_on(a, q):
    """Whether ``a`` holds exact sums on the grid ``q``: integer multiples
    of ``q``, below 2^53 of them."""
    units = a / q
    return bool((np.rint(units) == units).all() and (np.abs(units) < 2.0 ** 53).all())


_QP_FIELDS = ("k", "gamma", "max_iter", "epsilon", "key", "phases", "n_features")
_Q_FIELDS = ("p", "X", "ids", "eps", "alive", "n_alive", "order", "ids_sorted", "seeds",
             "seed_ids", "n_iter", "n_run", "C", "cells", "counts", "labels", "mind", "maxmind",
             "maxabs", "quantum", "loss_quantum", "sums", "loss", "inertia")


def _q_check_state(f, s):
    """Check an unpickled _QState ``s`` with the _Fields ``f``: everything
    that delete, predict and the fitted attributes index with or pass to C,
    and the invariants that the certification relies on and that are
    cheap to check (counts of the labels, erased rows, bounds and grids)."""
    v = f.attrs(s, _QState, _Q_FIELDS, "_state")
    pv = f.attrs(v["p"], _QParams, _QP_FIELDS, "p")
    k = f.int(pv["k"], "p.k", 1)
    f.real(pv["gamma"], "p.gamma", 0.0, 1.0)
    max_iter = f.int(pv["max_iter"], "p.max_iter", 1)
    d = f.int(pv["n_features"], "p.n_features", 1)
    e = pv["epsilon"]
    if not (e == "auto" if isinstance(e, str) else
            isinstance(e, float) and math.isfinite(e) and e > 0):
        f.fail("p.epsilon", f"{_short(e)} is not 'auto' or a finite float > 0")
    f.int(pv["key"], "p.key", 0, 2 ** 63 - 1)
    phases = f.array(pv["phases"], "p.phases", np.float64, (max_iter, d), finite=True)
    if not ((phases >= -0.5) & (phases < 0.5)).all():
        f.fail("p.phases", "entries outside [-1/2, 1/2)")
    X = f.array(v["X"], "X", np.float64, (None, d), finite=True)
    n = X.shape[0]
    ids = f.ids(v)
    if ids.shape[0] != n:
        f.fail("ids", f"{ids.shape[0]} entries for {n} rows")
    alive, n_alive = f.alive(v, n, k)
    if f.real(v["eps"], "eps") != v["p"].eps(n_alive):
        f.fail("eps", "not the lattice step of the parameters")
    seeds = f.index(f.array(v["seeds"], "seeds", np.int64, (k,)), "seeds", n)
    if not alive[seeds].all() or np.unique(seeds).shape[0] != k:
        f.fail("seeds", "not distinct remaining rows")
    if not np.array_equal(f.array(v["seed_ids"], "seed_ids", np.int64, (k,)), ids[seeds]):
        f.fail("seed_ids", "not the ids of the seeds")
    n_run = f.int(v["n_run"], "n_run", 1, max_iter)
    if f.int(v["n_iter"], "n_iter", n_run - 1, n_run) == n_run < max_iter:
        f.fail("n_iter", "the run stopped early without rejecting an iteration")
    T1 = n_run + 1
    C = f.array(v["C"], "C", np.float64, (T1, k, d), finite=True)
    if not np.array_equal(C[0], X[seeds]):
        f.fail("C", "C[0] is not the rows of the seeds")
    f.array(v["cells"], "cells", np.int64, (n_run, k, d))
    labels = f.array(v["labels"], "labels", np.int32, (T1, n))
    live = f.index(labels[:, alive], "labels", k)
    if not (labels[:, ~alive] == -1).all():
        f.fail("labels", "a deleted row's label is not -1")
    counts = f.array(v["counts"], "counts", np.int64, (T1, k))
    tally = np.bincount((np.arange(T1)[:, None] * k + live).ravel(), minlength=T1 * k)
    if not np.array_equal(tally.reshape(T1, k), counts):
        f.fail("counts", "not the counts of the labels")
    mind = f.array(v["mind"], "mind", np.float64, (T1, n), finite=True)
    if (mind < 0).any() or (mind[:, ~alive] != 0).any():
        f.fail("mind", "a negative distance, or a deleted row's is not 0")
    if (X[~alive] != 0).any():
        f.fail("X", "a deleted row is not erased")
    maxmind = f.array(v["maxmind"], "maxmind", np.float64, (T1,))
    if not np.array_equal(maxmind, mind.max(axis=1)):
        f.fail("maxmind", "not the largest distances")
    maxabs = f.array(v["maxabs"], "maxabs", np.float64, (d,))
    if not np.array_equal(maxabs, _q_maxabs(C[0], maxmind[0])):
        f.fail("maxabs", "not the bound on |x| of the seeds and distances")
    quantum = f.array(v["quantum"], "quantum", np.float64, (d,))
    if not np.array_equal(quantum, _q_grid(maxabs, n_alive)):
        f.fail("quantum", "not the grid of the sums")
    loss_quantum = f.array(v["loss_quantum"], "loss_quantum", np.float64, (T1,))
    if not np.array_equal(loss_quantum, _q_grid(maxmind, n_alive)):
        f.fail("loss_quantum", "not the grid of the losses")
    if (v["sums"] is None) != (v["loss"] is None):
        f.fail("sums" if v["sums"] is None else "loss", "None, and the other is not")
    if v["sums"] is not None:
        sums = f.array(v["sums"], "sums", np.float64, (T1, k, d), finite=True)
        if not _exact_on(sums, quantum):
            f.fail("sums", "not sums on the grid")
        loss = f.array(v["loss"], "loss", np.float64, (T1,), finite=True)
        if (loss < 0).any() or not _exact_on(loss, loss_quantum):
            f.fail("loss", "not nonnegative sums on the grid")
    if v["inertia"] is not None:
        f.real(v["inertia"], "inertia", 0.0)
    written = {name: v[name] for name in ("X", "alive", "labels", "mind")}
    others = {name: v[name] for name in ("ids", "order", "ids_sorted", "seeds", "seed_ids",
                                         "C", "cells", "counts", "maxmind", "maxabs",
                                         "quantum", "loss_quantum", "sums", "loss")
              if v[name] is not None}
    f.unshared(written, {**others, "p.phases": phases})


_DC_FIELDS = ("k", "L", "h", "w", "max_iter", "d", "n_init", "n_trials", "key", "ids", "leaf",
              "alive", "n_alive", "order", "ids_sorted", "X", "rows", "sids", "keys", "traces",
              "levels", "inertia")
_TRACE_BOUNDS = ("lo", "hi", "pick")


def _dc_check_trace(f, t, field, k, T, n):
    """An unpickled _RaceTrace of a leaf of ``n`` points (``T`` trials)."""
    bounds = T > 1 and k > 1
    v = f.attrs(t, _RaceTrace, ("seeds", "cand") + (_TRACE_BOUNDS if bounds else ()), field,
                absent=() if bounds else _TRACE_BOUNDS)
    seeds = f.index(f.array(v["seeds"], field + ".seeds", np.int64, (k,)), field + ".seeds", n)
    if np.unique(seeds).shape[0] != k:
        f.fail(field + ".seeds", "repeated")
    cand = f.array(v["cand"], field + ".cand", np.int64, (k, T))
    if (cand[0] != -1).any():
        f.fail(field + ".cand", "a candidate at the first step")
    f.index(cand[1:], field + ".cand", n)
    if bounds:
        for name in ("lo", "hi"):
            if np.isinf(f.array(v[name], f"{field}.{name}", np.float64, (k, T))).any():
                f.fail(f"{field}.{name}", "infinity")
        f.index(f.array(v["pick"], field + ".pick", np.int64, (k,)), field + ".pick", T)


def _dc_check_state(f, st):
    """Check an unpickled _DCState ``st`` with the _Fields ``f`` (see
    _q_check_state): the parameters, the ids and their keyed leaves, the
    leaves' points (every remaining row once, in its leaf, in row order),
    the node keys, the race traces and the node results (centers and
    masses of the sizes the tree computes)."""
    v = f.attrs(st, _DCState, _DC_FIELDS, "_state")
    k = f.int(v["k"], "k", 1)
    Xs = v["X"]
    if type(Xs) is not list or not Xs:
        f.fail("X", "not a non-empty list")
    L = f.int(v["L"], "L", len(Xs), len(Xs))
    if L & (L - 1):
        f.fail("L", f"{L} is not a power of two")
    h = f.int(v["h"], "h", 1, 64)
    w = f.int(v["w"], "w", 1, L)
    if w ** h != L:
        f.fail("w", f"w**h = {w}**{h} is not L = {L}")
    f.int(v["max_iter"], "max_iter", 1)
    n_init = f.int(v["n_init"], "n_init", 1)
    T = f.int(v["n_trials"], "n_trials", 1, 16)
    d = f.int(v["d"], "d", 1)
    key = f.int(v["key"], "key", 0, 2 ** 63 - 1)
    ids = f.ids(v)
    n = ids.shape[0]
    leaf = f.array(v["leaf"], "leaf", np.int64, (n,))
    if not np.array_equal(leaf, _dc_leaves(key, ids, L)):
        f.fail("leaf", "not the keyed leaves of the ids")
    alive, n_alive = f.alive(v, n, k)
    rows, sids = f.list(v["rows"], "rows", L), f.list(v["sids"], "sids", L)
    total = 0
    for j in range(L):
        Xj = f.array(Xs[j], f"X[{j}]", np.float64, (None, d), finite=True)
        rj = f.array(rows[j], f"rows[{j}]", np.int64, (Xj.shape[0],))
        f.index(rj, f"rows[{j}]", n)
        if not (rj[1:] > rj[:-1]).all() or not alive[rj].all() or (leaf[rj] != j).any():
            f.fail(f"rows[{j}]", "not the remaining rows of the leaf in increasing order")
        if not np.array_equal(f.array(sids[j], f"sids[{j}]", np.int64, rj.shape), ids[rj]):
            f.fail(f"sids[{j}]", "not the ids of the rows")
        total += rj.shape[0]
    if total != n_alive:
        f.fail("rows", "the leaves do not hold every remaining row")
    keys = f.list(v["keys"], "keys", h + 1)
    for l in range(h + 1):
        kl = f.list(keys[l], f"keys[{l}]", w ** (h - l))
        if any(type(x) is not int for x in kl) or kl != _dc_node_keys(key, l, len(kl)):
            f.fail(f"keys[{l}]", "not the node keys of the model key")
    traces = f.list(v["traces"], "traces", L)
    for j, tr in enumerate(traces):
        if tr is not None:
            for i, t in enumerate(f.list(tr, f"traces[{j}]", n_init)):
                _dc_check_trace(f, t, f"traces[{j}][{i}]", k, T, Xs[j].shape[0])
    levels = f.list(v["levels"], "levels", h + 1)
    for l in range(h + 1):
        for j, node in enumerate(f.list(levels[l], f"levels[{l}]", w ** (h - l))):
            field = f"levels[{l}][{j}]"
            if type(node) is not tuple or len(node) != 2:
                f.fail(field, "not a (centers, masses) pair")
            C = f.array(node[0], field + "[0]", np.float64, (None, d), finite=True)
            mass = f.array(node[1], field + "[1]", np.float64, C.shape[:1], finite=True)
            if (mass < 0).any():
                f.fail(field + "[1]", "negative masses")
            if l == 0:  # the leaf's points, or k centers of them
                size, total = Xs[j].shape[0], float(Xs[j].shape[0])
            else:  # its children's centers of positive mass, or k centers of them
                kids = [km for _, km in levels[l - 1][j * w:(j + 1) * w]]
                size = sum(int(np.count_nonzero(km > 0)) for km in kids)
                total = float(sum(km.sum() for km in kids))
            if C.shape[0] != min(size, k) or mass.sum() != total:
                f.fail(field, "not the centers and masses of the node's points")
    if v["inertia"] is not None:
        f.real(v["inertia"], "inertia", 0.0)
    arrays = {"ids": ids, "leaf": leaf, "order": v["order"], "ids_sorted": v["ids_sorted"]}
    for j in range(L):
        arrays.update({f"X[{j}]": Xs[j], f"rows[{j}]": rows[j], f"sids[{j}]": sids[j]})
    f.unshared({"alive": alive}, arrays)
