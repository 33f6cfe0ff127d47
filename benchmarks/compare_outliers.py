"""Distributed (k,z)-center with heavy noise: pyfkm vs a numpy/scikit-learn
KD-tree implementation of the same algorithm (Guo & Li 2018, Algorithm 3)
and the baselines (Malkomes et al. 2015, Guha et al. 2017 type 2z
bicriteria, uniform sampling).

Usage:  python benchmarks/compare_outliers.py [--seeds 5] [--quick]

Data: make_noisy_blobs (Gaussian clusters, std 1, centers uniform in
[-10, 10]^d, plus z uniform outliers in the inliers' bounding box enlarged
2x), split uniformly at random over m machines.  Reported per method,
median over seeds: radius after discarding exactly z points, and (1+eps)z,
its ratio to the same radius of the planted centers, points declared
outliers (max over seeds too), words sent, CPU time (process_time, one
BLAS thread).  The reference runs the same search (same bounds, grid,
bisection and coordinator refinement) with KD-tree ball queries, in two
forms: batched (vectorized sklearn calls, one per machine and guess) and
per-point queries in Python loops (the structure of the authors' public
code); "same" counts the seeds where each returned the same centers as
pyfkm.
"""
import argparse
import math

import numpy as np
from _timing import call, single_thread
from sklearn.neighbors import KDTree

from pyfkm.datasets import split_iid
from pyfkm.outliers import (DistributedKZCenter, GuhaKZCenter, MalkomesKZCenter,
                            UniformSamplingKZCenter, count_outliers, kzcenter_radius,
                            make_noisy_blobs)


# ----------------------------------------------- the KD-tree reference

class RefMachine:
    def __init__(self, X):
        self.X = X
        self.tree = KDTree(X)

    def nn_quantiles(self, Q=32):
        n = len(self.X)
        nn = np.array([np.inf]) if n == 1 else np.sort(self._nn_distances())
        ranks = np.unique(np.ceil(np.arange(1, Q + 1) * n / Q).astype(int))
        return ranks, nn[ranks - 1]

    def _nn_distances(self):
        """Distance of every point to its nearest other point (n >= 2)."""
        return self.tree.query(self.X, k=2)[0][:, 1]

    def _balls(self, L):
        """The number of points within 2L of each point, and the balls:
        ``balls[q]`` the ids within 2L of point q."""
        nbr = self.tree.query_radius(self.X, 2 * L)
        return np.array([len(a) for a in nbr]), nbr

    def aggregate(self, L, y, max_reps):
        X, n = self.X, len(self.X)
        U = np.ones(n, dtype=bool)
        counts, nbr = self._balls(L)
        reps, ws = [], []
        while True:
            cand = np.where(U, counts, -1)
            p = int(np.argmax(cand))
            if not U[p] or not counts[p] > y:
                break
            if len(reps) == max_reps:
                return None
            ball = self.tree.query_radius(X[p:p + 1], 4 * L)[0]
            ball = ball[U[ball]]
            U[ball] = False
            reps.append(p)
            ws.append(len(ball))
            for q in ball:
                counts[nbr[q]] -= 1
        return X[reps], np.array(ws, dtype=np.int64)


class LoopRefMachine(RefMachine):
    """The same machine with one KD-tree query per point in Python loops
    (the structure of the authors' public code: per-point queries, no
    vectorized batch calls).  Same decisions as RefMachine."""

    def _nn_distances(self):
        return [self.tree.query(self.X[i:i + 1], k=2)[0][0, 1] for i in range(len(self.X))]

    def _balls(self, L):
        X = self.X
        counts = np.array([self.tree.query_radius(X[i:i + 1], 2 * L, count_only=True)[0]
                           for i in range(len(X))])
        return counts, _PerPointBalls(self.tree, X, 2 * L)


class _PerPointBalls:
    """``balls[q]``: one KD-tree query for the ids within r of point q."""

    def __init__(self, tree, X, r):
        self.tree, self.X, self.r = tree, X, r

    def __getitem__(self, q):
        return self.tree.query_radius(self.X[q:q + 1], self.r)[0]


def ref_kzc(Q, w, k, Lp):
    tree = KDTree(Q)
    nbr = tree.query_radius(Q, 2 * Lp)
    cover = np.array([w[a].sum() for a in nbr])
    U = np.ones(len(Q), dtype=bool)
    centers = []
    for _ in range(k):
        p = int(np.argmax(cover))
        if cover[p] <= 0:
            break
        centers.append(p)
        ball = tree.query_radius(Q[p:p + 1], 4 * Lp)[0]
        ball = ball[U[ball]]
        U[ball] = False
        for q in ball:
            cover[nbr[q]] -= w[q]
    return centers, int(w[U].sum())


def ref_search(lo, hi, ratio, probe):
    J = max(1, math.ceil(math.log(hi / lo) / math.log(ratio))) if lo < hi else 1
    g = lambda j: hi if j >= J else hi * ratio ** (j - J)  # noqa: E731
    s = probe(g(0))
    if s is not None:
        return g(0), s
    a, b, sb = 0, J, None
    while b - a > 1:
        mid = (a + b) // 2
        s = probe(g(mid))
        if s is not None:
            b, sb = mid, s
        else:
            a = mid
    if sb is None:
        sb = probe(g(b))
    return g(b), sb


def reference_fit(machines, k, z, eps, seed, machine_cls=RefMachine):
    """Algorithm 3 with KD-trees (same bounds, grid and refinement)."""
    mcs = [machine_cls(X) for X in machines]
    n, m = sum(len(X) for X in machines), len(machines)
    rng = np.random.default_rng(seed)
    i = int(rng.integers(m))
    x0 = machines[i][int(rng.integers(len(machines[i])))]
    R = max(float(np.sqrt(((X - x0) ** 2).sum(axis=1)).max()) for X in machines)
    t = n - z - k * m
    summ = [mc.nn_quantiles() for mc in mcs]
    lo = 0.0
    if t >= 1:
        for v in np.unique(np.concatenate([v for _, v in summ]))[::-1]:
            if not np.isfinite(v):
                continue
            below = 0
            for (ranks, vals), X in zip(summ, machines):
                pos = np.searchsorted(vals, v, side="left")
                below += (ranks[pos] - 1) if pos < len(vals) else len(X)
            if below <= t - 1:
                lo = float(v) / 2
                break
    lo = min(lo, R) if lo > 0 else R * 2.0 ** -32
    y, cap = eps * z / (k * m), k * m * (1 + 1 / eps)

    def probe(L):
        res = [mc.aggregate(L, y, int(min(math.floor(cap), n))) for mc in mcs]
        if any(r is None for r in res) or sum(len(r[1]) for r in res) > cap:
            return None
        Q = np.concatenate([r[0] for r in res])
        w = np.concatenate([r[1] for r in res])
        zp = (1 + eps) * z + w.sum() - n
        if zp < 0 or ref_kzc(Q, w, k, 5 * L)[1] > zp:
            return None

        def kzc(Lp):
            c, unc = ref_kzc(Q, w, k, Lp)
            return Q[c] if unc <= zp else None

        Lp, cen = ref_search(min(lo, 5 * L), 5 * L, 1 + eps, kzc)
        return cen, Lp

    L, (centers, Lp) = ref_search(lo, R, 1 + eps, probe)
    return centers, 4 * L + 4 * Lp


# ----------------------------------------------- driver

LOOP = "KD-tree reference, per-point queries in Python loops"
SHAPES = [dict(n=20000, d=5, k=10, m=10, z=2000), dict(n=20000, d=10, k=20, m=10, z=1000)]


def run(shape, seeds, eps=0.1, quick=False):
    n, d, k, m, z = (shape[key] for key in "ndkmz")
    rows = {}
    same = {"KD-tree reference (same algorithm)": 0, LOOP: 0}
    for seed in seeds:
        X, _, C = make_noisy_blobs(n, d, k, z, random_state=seed)
        parts = split_iid(X, m, random_state=seed)
        machines = [X[p] for p in parts]
        planted = kzcenter_radius(X, C, z)
        methods = {
            "pyfkm DistributedKZCenter": lambda: DistributedKZCenter(
                k, z, epsilon=eps, random_state=seed).fit(machines),
            "KD-tree reference (same algorithm)": lambda: reference_fit(
                machines, k, z, eps, seed),
            LOOP: lambda: reference_fit(machines, k, z, eps, seed, LoopRefMachine),
            "Guha et al. 2017 type (2z)": lambda: GuhaKZCenter(
                k, z, epsilon=eps, random_state=seed).fit(machines),
            "Uniform sampling (5%)": lambda: UniformSamplingKZCenter(
                k, z, sample_fraction=0.05, epsilon=eps, random_state=seed).fit(machines),
        }
        if not quick:
            methods["Malkomes et al. 2015"] = lambda: MalkomesKZCenter(k, z).fit(machines)
        out = {}
        for name, fn in methods.items():
            dt, est = call(fn)
            if isinstance(est, tuple):
                centers, radius = est
                words = np.nan
            else:
                centers, radius = est.cluster_centers_, est.radius_
                words = est.communication_.total
            out[name] = centers
            rows.setdefault(name, []).append(dict(
                rz=kzcenter_radius(X, centers, z),
                rze=kzcenter_radius(X, centers, math.floor((1 + eps) * z)),
                ratio=kzcenter_radius(X, centers, z) / planted,
                declared=count_outliers(X, centers, radius), words=words, time=dt))
        a = out["pyfkm DistributedKZCenter"]
        for name in ("KD-tree reference (same algorithm)", LOOP):
            b = out[name]
            same[name] += int(a.shape == b.shape and np.allclose(a, b))
    return rows, same


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="skip Malkomes et al.")
    args = ap.parse_args()
    seeds = list(range(args.seeds))
    with single_thread():
        for shape in SHAPES:
            rows, same = run(shape, seeds, quick=args.quick)
            n, d, k, m, z = (shape[key] for key in "ndkmz")
            print(f"\n### n={n}, d={d}, k={k}, m={m}, z={z}, eps=0.1 "
                  f"(median of {len(seeds)} seeds; (1+eps)z = {math.floor(1.1 * z)})\n")
            print("| method | radius @ z | radius @ (1+eps)z | / planted @ z "
                  "| declared outliers (median / max) | words sent | CPU s |")
            print("|---|---|---|---|---|---|---|")
            for name, rs in rows.items():
                med = {key: float(np.median([r[key] for r in rs])) for key in rs[0]}
                mx = max(r["declared"] for r in rs)
                words = "-" if math.isnan(med["words"]) else f"{med['words']:.0f}"
                print(f"| {name} | {med['rz']:.3f} | {med['rze']:.3f} | {med['ratio']:.3f} "
                      f"| {med['declared']:.0f} / {mx} | {words} | {med['time']:.3f} |")
            py_t = np.median([r["time"] for r in rows["pyfkm DistributedKZCenter"]])
            for name in ("KD-tree reference (same algorithm)", LOOP):
                ref_t = np.median([r["time"] for r in rows[name]])
                ratios = [r["time"] / p["time"] for r, p in zip(
                    rows[name], rows["pyfkm DistributedKZCenter"])]
                print(f"\npyfkm vs {name}: {ref_t / py_t:.1f}x faster (medians; "
                      f"per-seed {min(ratios):.1f}x-{max(ratios):.1f}x); same centers on "
                      f"{same[name]}/{len(seeds)} seeds")

if __name__ == "__main__":
    main()
