"""The Q-Lloyd run of QKMeans and its memo: fit, certification of a
deletion, and the updated or retrained state (see QKMeans Notes).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.kernels import lattice as _lattice, lloyd as _lloyd, seeding as _seeding
from ._common import _U, _overwrite, _shallow, _writable

_TINY = 2.0 ** -1022  # smallest normal float64


def auto_epsilon(n_samples: int, n_clusters: int, n_features: int) -> float:
    """Ginart et al.'s default lattice step ``2^round(-log10(n/(k d^1.5)) - 3)``.

    Parameters
    ----------
    n_samples : int
        Number of points n.
    n_clusters : int
        Number of clusters k.
    n_features : int
        Number of features d.

    Returns
    -------
    epsilon : float
        The lattice step, a power of two.

    Examples
    --------
    >>> auto_epsilon(100_000, 5, 25)
    0.03125
    """
    r = n_samples / (n_clusters * n_features ** 1.5)
    return float(2.0 ** round(-math.log10(r) - 3))


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
    what is erased").  fit and a retraining removal build a new one; a
    certified removal builds a new one that shares the per-row arrays and
    overwrites the deleted rows in them last.

    The memo of the ``n_run + 1`` computed assignments (``t = 0`` to the
    seeds), iteration first: ``C`` (n_run + 1, k, d) the centers, ``cells``
    (n_run, k, d) the lattice cells of ``C[1:]``, ``counts`` (n_run + 1, k),
    per row ``labels``/``mind`` (n_run + 1, n_rows), ``maxmind``
    (n_run + 1,) the largest distance of a remaining row; the cluster
    ``sums`` (n_run + 1, k, d) and the ``loss`` (n_run + 1,) on their grids
    ``quantum`` (d,) and ``loss_quantum`` (n_run + 1,) (see _q_grid), None
    until the first deletion (see _q_memo)."""

    @property
    def k(self):
        return self.p.k

    @property
    def d(self):
        return self.p.n_features


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


def _q_cells(c, den, counts, prev, phase, eps, quantum, maxabs):
    """(cells, sure): the lattice cells ``floor(c / eps - phase)`` of the
    balanced centroids ``c`` (denominators ``den``) computed from grid
    sums on ``quantum`` of clusters of ``counts`` points and the previous
    centers ``prev`` (any leading axes), and where they are *sure*: a fresh
    fit, which computes ``c`` from float sums of the same points (each
    coordinate bounded by ``maxabs``), quantizes it to the same cell."""
    # |grid sum - exact sum| <= m q / 2; |float sum of a fresh fit - exact
    # sum| <= 1.01 u (m^2 + 1) max|x| (m terms, any order); over the
    # denominator (infinite for an empty cluster that keeps its center:
    # 0, as dS is finite; never 0), plus the rounding of the balance
    # correction; the margin in cells is twice the bound (the few
    # roundings of the bound itself are far below that)
    m = counts[..., None].astype(np.float64)
    dS = m * (0.5 * quantum) + (m * m + 1.0) * (1.01 * _U * maxabs)
    dc = dS / den[..., None] + (16 * _U) * (maxabs + np.abs(prev))
    tv = c / eps - phase
    margin = (2.0 / eps) * dc + (16 * _U) * (np.abs(tv) + 1.0) + 1e-300
    lo = np.floor(tv - margin)
    return lo, lo == np.floor(tv + margin)


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
    # the deleted rows' grid terms out of their clusters' sums and out of
    # the losses: exact, as a fresh sum of the remaining terms
    sums, loss = _q_memo(s)
    sums = sums.copy()
    terms = _on_grid(s.X[pos], s.quantum)
    gone = s.mind[:, pos]  # (T + 1, |pos|)
    if pos.size == 1:  # one row: plain indexing (the same subtractions)
        lab = s.labels[:, pos[0]].tolist()
        counts = s.counts.copy()
        for t, a in enumerate(lab):
            sums[t, a] -= terms[0]
            counts[t, a] -= 1
        loss = loss - _on_grid(gone[:, 0], s.loss_quantum)
    else:
        lab = s.labels[:, pos]  # (T + 1, |pos|)
        it = np.arange(T + 1)[:, None]
        np.subtract.at(sums, (it, lab), terms)
        counts = s.counts - np.bincount((it * k + lab).ravel(),
                                        minlength=(T + 1) * k).reshape(T + 1, k)
        loss = loss - _on_grid(gone, s.loss_quantum[:, None]).sum(axis=1)
    # the balanced centroids of iterations 1..T from the updated assignments
    # 0..T-1 and the stored centers 0..T-1
    # (_balanced_centroids and _q_cells in one kernel, the same operations)
    update = (sums, counts, loss, gone)
    if _lloyd.qcells(sums[:-1], counts[:-1], s.C[:-1], p.phases[:T], gamma * n_new / k, s.eps,
                     s.quantum, s.maxabs, s.cells):
        return "centroid", update
    # |grid loss - exact| <= n q / 2; a fresh fit's float loss is within
    # 4 (n + 2) u of the exact one (n nonnegative terms, any order); Python
    # floats, the same operations as on arrays (a few iterations)
    err = [_q_loss_err(lt, lq, n_new) for lt, lq in zip(loss.tolist(), s.loss_quantum.tolist())]
    ls = loss.tolist()
    for t in range(T):
        diff = ls[t + 1] - ls[t]
        # a sure decision, the one of the stored run (the last iteration
        # rejected when T > n_iter)
        if abs(diff) <= 2.0 * (err[t + 1] + err[t]) + 1e-300 or \
                (not diff < 0) != (t == T - 1 and T > s.n_iter):
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


def _q_loss_err(loss, loss_quantum, n):
    """Bound on |grid loss - a fresh fit's float loss| of ``n`` rows: half a
    grid step per row, and 4 (n + 2) u of the loss (n nonnegative terms,
    any order)."""
    half = 0.5 * n * loss_quantum
    return half + 4.0 * (n + 2) * _U * (loss + half)



def _q_relabeled(X, centers, moved, ref_labels, ref_mind, e, keep=None):
    """The rows of ``X`` whose assignment to ``centers`` (k, d) may differ
    from the known assignment ``ref_labels``/``ref_mind`` (n,) of the same
    rows to centers equal to ``centers`` but in the rows ``moved``, assigned
    again: (rows, their labels, their distances, their previous labels,
    their previous distances, the largest distance of a row after the
    change), bit for bit what QAssign computes.  Dead rows (label -1) and
    the rows without ``keep`` (bool (n,), default all) are skipped (not in
    ``rows``, not in the largest distance).  Nothing is written.

    The rows of a moved center are assigned again (fkm_qlloyd_rescan_f64);
    a row of an unmoved center ``a`` keeps its label and distance when
    every moved center is farther from ``centers[a]`` than twice the row's
    distance to it, with the relative margin ``e`` that covers the rounding
    of every computed distance (as the kernel's bounds): its computed
    distance to a moved center is then strictly larger, and the unmoved
    centers lost to ``a`` before; the other rows are assigned again."""
    D = np.sqrt(((centers[:, None, :] - centers[None, moved, :]) ** 2).sum(axis=2)).min(axis=1)
    thr = D * (1.0 - e) / ((1.0 + e) * (2.0 + 2.0 * e))
    far = thr * thr * (1.0 - 2.0 * e)  # the threshold on the squared distance
    far[moved] = -np.inf
    if keep is None:
        keep = np.ones(X.shape[0], dtype=bool)
    return _lloyd.qrelabel(X, None, ref_labels, centers, scan=(ref_mind, keep, far))


def _q_replayed(s, pos, update):
    """The state after deleting rows ``pos`` of ``s`` by replaying the run
    on its memo (``s`` is not changed), or None when a step cannot be
    decided from the memo (the caller retrains).

    For a deletion that removes no seed and keeps epsilon, where
    certification failed (a cell moved, or a stop decision is not sure).
    Iteration ``t`` of the replay computes the balanced centroids from the
    replayed assignment ``t - 1`` (exact grid sums) and their cells where
    they are sure (_q_cells: the bound of the certification); the
    assignment to the new centers starts from the memoized assignment ``t``
    (the old run's centers at ``t``; past its end, the replayed assignment
    ``t - 1``): the rows of moved centers and the rows near them are
    assigned again (_q_relabeled), the others keep their label and
    distance, which are what QAssign computes for them (its result for a
    row depends on the row and the centers alone).  The sums, counts and
    losses are updated by the rows that changed, exactly on their grids,
    and each stop decision must be sure (_q_loss_err).  An iteration whose
    centers did not move costs O(k d); one within the memo's run is kept
    as the rows assigned again (no copy of the memo's row).  The memo up to
    the first moved cell is kept as it is; the result is what a fresh fit
    on the remaining rows computes, bit for bit, as for a certified
    deletion."""
    p = s.p
    k, gamma, T, eps = p.k, p.gamma, s.n_run, s.eps
    sums_u, counts_u, loss_u, gone = update
    n_new = s.n_alive - pos.size
    keep = s.alive.copy()
    keep[pos] = False
    e = 4.0 * (s.X.shape[1] + 8.0) * _U + 2.0 ** -40  # as csrc/fkm_qlloyd.c
    inv = 1.0 / s.quantum

    def grid_loss(mnd, lq):
        return _q_grid_loss(mnd[None, :], np.array([lq]))[0]

    # the replayed memo: assignment t is the memo's row t (D[t] and F[t]
    # None), the memo's row t but the rows D[t] = (rows, labels, distances),
    # or the fresh arrays F[t] (past the memo's run); the deleted rows dead
    C, cells, D, F, S, N = [s.C[0]], [], [None], [None], [sums_u[0]], [counts_u[0]]
    mx = [s.maxmind[0] if gone[0].max() < s.maxmind[0] else
          np.compress(keep, s.mind[0]).max()]
    LQ = [float(_q_grid(mx[0], n_new))]
    LS = [loss_u[0] if LQ[0] == s.loss_quantum[0] else
          grid_loss(_q_row(s, pos, 0, D, F)[1], LQ[0])]
    n_iter = 0
    for t in range(1, p.max_iter + 1):
        phase = p.phases[t - 1]
        c, den = _balanced_centroids(S[-1], N[-1], n_new, k, gamma, C[-1])
        lo, sure = _q_cells(c, den, N[-1], C[-1], phase, eps, s.quantum, s.maxabs)
        if not sure.all():
            return None
        cell = lo.astype(np.int64)
        old = t <= T  # the memo has an assignment t
        ct = (s.C[t] if old and np.array_equal(cell, s.cells[t - 1])
              else _lattice.centers(cell, phase, eps))
        ref_c = s.C[t] if old else C[-1]
        moved = np.flatnonzero((ct != ref_c).any(axis=1))
        if old and not moved.size:  # the memo's row
            D.append(None)
            F.append(None)
            st, nt = sums_u[t], counts_u[t]
            m = s.maxmind[t] if gone[t].max() < s.maxmind[t] else \
                np.compress(keep, s.mind[t]).max()
            lq = float(_q_grid(m, n_new))
            lt = loss_u[t] if lq == s.loss_quantum[t] else \
                grid_loss(_q_row(s, pos, t, D, F)[1], lq)
        else:
            if old:  # the memo's row t (the deleted rows skipped by keep)
                ref_l, ref_m = s.labels[t], s.mind[t]
                ref_s, ref_n = sums_u[t], counts_u[t]
            else:
                ref_l, ref_m = _q_row(s, pos, t - 1, D, F)
                ref_s, ref_n = S[-1], N[-1]
            if moved.size:
                rows, now, mnd, prev, prev_m, m = _q_relabeled(s.X, ct, moved, ref_l, ref_m, e,
                                                               keep)
            else:  # past the memo's run, the same centers: the same assignment
                rows, now, mnd = np.zeros(0, np.intp), np.zeros(0, np.int32), np.zeros(0)
                prev, prev_m, m = now, mnd, ref_m.max()
            if old:
                D.append((rows, now, mnd))
                F.append(None)
            else:
                lab_f, mnd_f = ref_l.copy(), ref_m.copy()
                lab_f[rows], mnd_f[rows] = now, mnd
                D.append(None)
                F.append((lab_f, mnd_f))
            ch = now != prev
            st = ref_s + _label_sums(s.X[rows[ch]], inv, now[ch], prev[ch], k) * s.quantum
            st += 0.0  # no -0.0, as _q_grid_sums
            nt = ref_n + np.bincount(now[ch], minlength=k) - np.bincount(prev[ch], minlength=k)
            lq = float(_q_grid(m, n_new))
            if old and lq == s.loss_quantum[t]:  # the memo's loss and the changed terms
                lt = loss_u[t] + (np.rint(mnd / lq).sum() - np.rint(prev_m / lq).sum()) * lq
            else:
                lt = grid_loss(_q_row(s, pos, t, D, F)[1], lq)
        C.append(ct)
        cells.append(cell)
        S.append(st)
        N.append(nt)
        mx.append(m)
        LQ.append(lq)
        LS.append(lt)
        # the stop decision of a fresh fit, sure when the loss moved by more
        # than both errors (or the centers are the same: the same float loss)
        if np.array_equal(ct, C[-2]):
            break
        err = _q_loss_err(lt, lq, n_new) + _q_loss_err(LS[-2], LQ[-2], n_new)
        if abs(lt - LS[-2]) <= 2.0 * err + 1e-300:
            return None
        if not lt < LS[-2]:
            break
        n_iter = t
    return _q_assemble(s, pos, keep, n_iter, C, cells, D, F, S, N, mx, LQ, LS)


def _q_row(s, pos, t, D, F):
    """The replayed assignment ``t`` of _q_replayed as fresh arrays
    (labels, distances), the deleted rows dead (-1, 0)."""
    if F[t] is not None:
        return F[t]
    lab, mnd = s.labels[t].copy(), s.mind[t].copy()
    lab[pos], mnd[pos] = -1, 0.0
    if D[t] is not None:
        rows, now, m = D[t]
        lab[rows], mnd[rows] = now, m
    return lab, mnd


def _q_assemble(s, pos, keep, n_iter, C, cells, D, F, S, N, mx, LQ, LS):
    """The new _QState of _q_replayed from its replayed memo (lists over
    the iterations, see there).  When the run keeps its length, the memo's
    arrays are shared and the rows assigned again written in place as the
    last step (as _q_certified); otherwise fresh arrays of labels and
    distances (X and alive shared and overwritten at ``pos``), or compacted
    ones."""
    T1 = len(C)
    n_new = s.n_alive - pos.size
    new = _shallow(s)
    new.n_alive = n_new
    new.n_iter, new.n_run = n_iter, T1 - 1
    new.C, new.cells, new.counts = np.stack(C), np.stack(cells), np.stack(N)
    compact = n_new * 4 < 3 * s.X.shape[0]
    labels = mind = None
    if not (T1 == s.n_run + 1 and not compact):  # fresh arrays
        labels = np.empty((T1, s.X.shape[0]), dtype=np.int32)
        mind = np.empty((T1, s.X.shape[0]))
        for t in range(T1):
            labels[t], mind[t] = _q_row(s, pos, t, D, F)
    new.maxmind = np.array(mx, dtype=np.float64)
    new.maxabs = _q_maxabs(new.C[0], new.maxmind[0])
    new.quantum = _q_grid(new.maxabs, n_new)
    new.loss_quantum = np.array(LQ, dtype=np.float64)
    if np.array_equal(new.quantum, s.quantum):
        new.sums = np.stack(S)
    else:  # the grid of a fresh fit changed: summed again on it
        lab = labels if labels is not None else np.stack(
            [_q_row(s, pos, t, D, F)[0] for t in range(T1)])
        new.sums = _q_grid_sums(s.X[keep], np.compress(keep, lab, axis=1), s.p.k,
                                new.quantum)
    new.loss = np.array(LS, dtype=np.float64)
    new.inertia = None
    if compact:  # fresh arrays of the live rows
        remap = np.cumsum(keep) - 1
        new.X = np.ascontiguousarray(s.X[keep])
        new.ids = s.ids[keep]
        new.labels = np.compress(keep, labels, axis=1)
        new.mind = np.compress(keep, mind, axis=1)
        new.seeds = remap[s.seeds]
        new.alive = np.ones(new.X.shape[0], dtype=bool)
        new.order = np.argsort(new.ids, kind="stable")
        new.ids_sorted = new.ids[new.order]
        return new
    if labels is not None:
        new.labels, new.mind = labels, mind
        _writable(new, ("X", "alive"))
        _overwrite([(new.X, pos, 0.0), (new.alive, pos, False)])
        return new
    # as _q_certified: the memo's arrays shared, the rows assigned again and
    # the deleted rows written as the last step, all or nothing; ``s`` is
    # stale
    _writable(new, ("X", "alive", "labels", "mind"))
    every = (slice(None), pos)
    rows = [(a[t], D[t][0], D[t][j]) for t in range(T1) if D[t] is not None
            for a, j in ((new.labels, 1), (new.mind, 2))]  # row views: written through
    _overwrite(rows + [(new.X, pos, 0.0), (new.alive, pos, False), (new.labels, every, -1),
                       (new.mind, every, 0.0)])
    return new
