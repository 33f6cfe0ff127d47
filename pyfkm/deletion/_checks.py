"""Checks of an unpickled QKMeans or DCKMeans state, field by field
(a pickle is data from outside): what remove, predict and the fitted
attributes index with or pass to C, and the invariants that deletion relies
on.  Every failure raises ModelFileError naming the field (see _Fields).
"""
import math

import numpy as np

from ._common import _short
from ._dctree import _DCState, _RaceTrace, _dc_leaves, _dc_node_keys
from ._qlloyd import _QParams, _QState, _q_grid, _q_maxabs


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
    that remove, predict and the fitted attributes index with or pass to C,
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
