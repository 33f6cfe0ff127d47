"""The tree of DCKMeans: keyed leaves and node keys, the k-means of a
node, the race traces that let a leaf keep its seeds, and the fit and
deletion of the whole tree (see DCKMeans Notes).
"""
import numpy as np

from ..core.kernels import lloyd as _lloyd, seeding as _seeding
from ._common import _U, _keyed_uniform, _overwrite, _race_seeding, _shallow, _sqdist, _writable


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


def _init_key(key, i):
    """Seeding key of the ``i``-th k-means run of a node."""
    return key if i == 0 else int(_keyed_uniform(key, [i], 2 ** 42)[0] * 2 ** 53)


def _node_kmeans(X, w, ids, k, key, max_iter, n_init=1, n_trials=1, seeds=None,
                 traced=False, n_iter_out=None):
    """Weighted k-means (race seeding + Lloyd) of one node; deterministic.

    ``w`` None means unit weights.  With ``n_init > 1`` the run of lowest
    inertia among ``n_init`` seedings (keys derived from ``key``; ties to the
    first) is kept.  Fewer than ``k`` items are returned as they are.
    ``seeds`` (one position array per run) skips the races when their
    outcome is known (certified by _RaceTrace.remove).  Returns (C, mass),
    and with ``traced`` also the list of the runs' _RaceTrace (None when
    ``seeds`` was given, when a trace cannot certify anything, or for a node
    of at most ``k`` items).  ``n_iter_out``, a list, receives the Lloyd
    iterations of the kept run (0 for a node of at most ``k`` items)."""
    if X.shape[0] <= k:
        if n_iter_out is not None:
            n_iter_out.append(0)
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
        C, labels, _, inertia, n_iter = _lloyd.lloyd_loop(X64, X64[sd], w, max_iter, 0.0)
        if best is None or inertia < best[2]:
            best = (C, labels, inertia, n_iter)
    C, labels, _, n_iter = best
    if n_iter_out is not None:
        n_iter_out.append(int(n_iter))
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


def _dc_root_n_iter(st):
    """Lloyd iterations of the root's k-means in the fitted state ``st``
    (``h >= 1``): the root's run again on its children's centroids
    (deterministic: same keys), counting its iterations.  Nothing is
    stored."""
    kids = st.levels[st.h - 1][:st.w]
    C = np.concatenate([c for c, _ in kids], axis=0)
    m = np.concatenate([mm for _, mm in kids])
    keep = m > 0
    if not keep.all():
        C, m = np.ascontiguousarray(C[keep]), m[keep]
    out = []
    C2, _ = _node_kmeans(C, m, np.arange(C.shape[0]), st.k, st.keys[st.h][0], st.max_iter,
                         st.n_init, st.n_trials, n_iter_out=out)
    return out[0]


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
