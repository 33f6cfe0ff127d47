"""Full scan vs distance bounds in the one-call C Lloyd loop
(``_lloyd.lloyd_loop(..., bounds=False/True)``; outputs are bit-identical).

Problems: the federated server's k-means (MUFC, ~1000 weighted points,
d = k = 10; lloyd_loop from k-means++ seeds), and DC-k-means-like nodes
(unweighted, d = 25, k = 5).  CPU time, one thread, median over runs, both
variants in the same run.  Usage: python benchmarks/compare_lloyd_bounds.py
"""
import functools

import numpy as np
from _timing import measure, single_thread

from pyfkm.core.kernels import lloyd as _lloyd, seeding as _seeding
from pyfkm.core.kmeans import absolute_tolerance
from pyfkm.rng import as_generator


def server_problem():
    from pyfkm.datasets import make_gaussian_mixture, split_non_iid
    from pyfkm.mufc import FederatedKMeans
    X, y, _ = make_gaussian_mixture(30000, 10, 10, random_state=0)
    parts = split_non_iid(X, y, 100, 3, random_state=0)
    clients = [np.ascontiguousarray(X[p]) for p in parts]
    m = FederatedKMeans(10, server_points="centers", secure=False, random_state=0).fit(clients)
    return m._server.points()


def time_runs(X, w, seeds, tol_abs, bounds, reps=3):
    """Median over the seeds of the best of ``reps`` runs; the iteration counts."""
    ts, its = [], []
    for C0 in seeds:
        t = measure(functools.partial(_lloyd.lloyd_loop, X, C0, w, 300, tol_abs, bounds),
                    repeat=reps)
        ts.append(t.min)
        its.append(t.result[4])
    return float(np.median(ts)), its


def main():
    with single_thread():
        P, w = server_problem()
        P = np.ascontiguousarray(P, dtype=np.float64)
        rng = as_generator(0)
        seeds = [P[_seeding.seed(P, w, 10, rng)[0]].astype(np.float64) for _ in range(40)]
        tol = absolute_tolerance(P, 1e-4)
        full, its = time_runs(P, w, seeds, tol, False)
        bnd, _ = time_runs(P, w, seeds, tol, True)
        print(f"server n={P.shape[0]} d=10 k=10 (iterations median {np.median(its):.0f}, "
              f"max {max(its)}): full {full * 1e6:.0f} us, bounds {bnd * 1e6:.0f} us, "
              f"speed-up {full / bnd:.2f}x")
        g = np.random.default_rng(0)
        for n in (2000, 20000):
            cent = g.normal(size=(5, 25)) * 3
            X = cent[g.integers(0, 5, n)] + g.normal(size=(n, 25))
            seeds = [X[np.random.default_rng(r).choice(n, 5, replace=False)].copy()
                     for r in range(15)]
            tol = absolute_tolerance(X, 1e-4)
            full, its = time_runs(X, None, seeds, tol, False, reps=1)
            bnd, _ = time_runs(X, None, seeds, tol, True, reps=1)
            print(f"DC-like n={n} d=25 k=5 (iterations median {np.median(its):.0f}): "
                  f"full {full * 1e6:.0f} us, bounds {bnd * 1e6:.0f} us, "
                  f"speed-up {full / bnd:.2f}x")


if __name__ == "__main__":
    main()
