"""Side-by-side timing of pyfkm and scikit-learn kernels, in one process.

Both sides run single-threaded (threadpoolctl caps BLAS/OpenMP at 1 thread),
under the same environment, timed in CPU time (time.process_time) because
other jobs share the machine.  Each measurement is repeated, runs of the two
libraries are interleaved, and medians are reported; ratios are
sklearn median / pyfkm median (> 1 means pyfkm is faster).

Usage::

    python benchmarks/compare_sklearn.py [--repeats 5] [--data blobs|noise|both]
        [--shapes 0,1,2] [--markdown]
    python benchmarks/compare_sklearn.py --seeding-only [--repeats 5] [--data ...] [--shapes ...]

``--seeding-only`` times k-means++ alone (no Lloyd, no removal) on SHAPES plus
SEEDING_SHAPES, next to the k-pass bandwidth floor: the CPU time of k calls of
``numpy.add.reduce`` over X (k passes reading X, nothing else), the three
interleaved in one run; the last column is pyfkm's time over that floor.

``--shapes`` takes indices into SHAPES and/or explicit shapes ``NxDxK``
(``1000000x50x64``); ``--shapes large`` is LARGE_SHAPES, the larger problems
users run (issue 22).

Data:
  blobs  k Gaussian blobs (std 1) with centers uniform in [-10, 10]^d, shuffled:
         data with cluster structure, the case clustering is run on;
  noise  standard normal, no cluster structure: the worst case for the
         triangle-inequality pruning of pyfkm's seeding.
"""
import argparse
import itertools
import statistics
import sys

import numpy as np
from _timing import call, compare, interleave, single_thread

SHAPES = [(100_000, 10, 10), (1_000_000, 10, 10), (100_000, 50, 10), (60_000, 784, 10),
          (100_000, 10, 62)]
LARGE_SHAPES = [(1_000_000, 50, 64), (100_000, 16, 256)]


def parse_shapes(spec):
    """The shapes of ``--shapes``: comma-separated SHAPES indices, ``NxDxK``
    shapes, or ``large`` (LARGE_SHAPES)."""
    if spec is None:
        return list(SHAPES)
    out = []
    for item in spec.split(","):
        item = item.strip()
        if item == "large":
            out.extend(LARGE_SHAPES)
        elif "x" in item:
            n, d, k = (int(float(v)) for v in item.split("x"))
            out.append((n, d, k))
        else:
            out.append(SHAPES[int(item)])
    return out


# Extra shapes timed by --seeding-only (Lloyd there is slow to compare).
SEEDING_SHAPES = [(1_000_000, 50, 64)]


def make_data(kind, n, d, k, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "noise":
        return rng.standard_normal((n, d))
    centers = rng.uniform(-10, 10, size=(k, d))
    y = rng.integers(0, k, size=n)
    return centers[y] + rng.standard_normal((n, d))


def bench_seeding(X, k, repeats):
    """Median CPU seconds of sklearn's and pyfkm's k-means++ (repeat r: seed r on both)."""
    from sklearn.cluster import kmeans_plusplus as sk_kpp

    import pyfkm
    r_sk, r_us = itertools.count(), itertools.count()
    theirs, ours, _ = compare(
        lambda: sk_kpp(X, k, n_local_trials=1, random_state=next(r_sk)),
        lambda: pyfkm.kmeans_plusplus(X, k, random_state=next(r_us)), repeats)
    return theirs, ours


def bench_seeding_floor(X, k, repeats):
    """Median CPU seconds of sklearn's and pyfkm's k-means++ and of the k-pass floor.

    The floor is k calls of ``numpy.add.reduce`` over all of X: a seeding that reads X
    once per center cannot be faster.  The three run interleaved (repeat r: seed r on
    both seedings)."""
    from sklearn.cluster import kmeans_plusplus as sk_kpp

    import pyfkm
    r_sk, r_us = itertools.count(), itertools.count()
    flat = X.reshape(-1)

    def floor():
        for _ in range(k):
            np.add.reduce(flat)

    t = interleave({"sk": lambda: sk_kpp(X, k, n_local_trials=1, random_state=next(r_sk)),
                    "us": lambda: pyfkm.kmeans_plusplus(X, k, random_state=next(r_us)),
                    "floor": floor}, repeats)
    return t["sk"].median, t["us"].median, t["floor"].median


def bench_lloyd(X, k, repeats, max_iter=10, threads=1):
    """Fit time per Lloyd iteration from a shared init (tol=0, max_iter=10).

    The fits are deterministic (same init, tol=0): every repeat makes n_iter_ iterations.
    ``threads`` > 1: pyfkm's ``n_threads`` and scikit-learn's thread pool at that count,
    timed in wall-clock time (CPU time would add the threads up)."""
    from sklearn.cluster import KMeans as SkKMeans

    import pyfkm
    init = X[np.random.default_rng(1).choice(X.shape[0], k, replace=False)].copy()
    sk = SkKMeans(k, init=init, n_init=1, max_iter=max_iter, tol=0, algorithm="lloyd")
    km = pyfkm.KMeans(k, init=init, max_iter=max_iter, tol=0, n_threads=threads)
    theirs, ours, _ = compare(lambda: sk.fit(X), lambda: km.fit(X), repeats,
                              clock="cpu" if threads == 1 else "wall")
    return theirs / sk.n_iter_, ours / km.n_iter_


def bench_remove(X, k, repeats, n_removals=2000):
    """Median time of remove() of a single non-center point (wall clock)."""
    import pyfkm
    s = pyfkm.RemovableSeeding(X, k, random_state=0)
    centers = set(s.center_ids_.tolist())
    ids = [i for i in np.random.default_rng(2).permutation(X.shape[0])[: n_removals + k]
           if i not in centers][:n_removals]
    return statistics.median(call(lambda: s.remove(int(i)), clock="wall")[0] for i in ids)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data", default="both", choices=["blobs", "noise", "both"])
    ap.add_argument("--shapes", default=None,
                    help="comma-separated indices into SHAPES, NxDxK shapes or 'large'")
    ap.add_argument("--no-seeding", action="store_true", help="time Lloyd only")
    ap.add_argument("--no-remove", action="store_true")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads of both libraries' Lloyd (> 1: wall-clock time)")
    ap.add_argument("--seeding-only", action="store_true",
                    help="k-means++ only, on SHAPES + SEEDING_SHAPES (or --shapes), with the "
                         "k-pass floor")
    args = ap.parse_args(argv)
    shapes = (SHAPES + SEEDING_SHAPES if args.seeding_only and args.shapes is None
              else parse_shapes(args.shapes))
    kinds = ["blobs", "noise"] if args.data == "both" else [args.data]
    import pyfkm
    import sklearn
    print(f"# pyfkm {pyfkm.__version__} vs scikit-learn {sklearn.__version__}, numpy "
          f"{np.__version__}; " + ("1 thread, CPU time" if args.threads == 1 else
                                  f"Lloyd on {args.threads} threads, wall time")
          + f", median of {args.repeats}")
    if args.seeding_only:
        return seeding_table(kinds, shapes, args.repeats)
    print("| data | n | d | k | seeding sklearn | seeding pyfkm | ratio | "
          "Lloyd/iter sklearn | Lloyd/iter pyfkm | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    from threadpoolctl import threadpool_limits
    with (single_thread() if args.threads == 1 else threadpool_limits(args.threads)):
        for kind in kinds:
            for n, d, k in shapes:
                X = make_data(kind, n, d, k)
                s_sk, s_us = ((float("nan"),) * 2 if args.no_seeding
                              else bench_seeding(X, k, args.repeats))
                l_sk, l_us = bench_lloyd(X, k, args.repeats, threads=args.threads)
                print(f"| {kind} | {n:,} | {d} | {k} | {s_sk * 1e3:.1f} ms | {s_us * 1e3:.1f} ms | "
                      f"**{s_sk / s_us:.2f}x** | {l_sk * 1e3:.2f} ms | {l_us * 1e3:.2f} ms | "
                      f"**{l_sk / l_us:.2f}x** |", flush=True)
        if not args.no_remove:
            X = make_data("blobs", 1_000_000, 10, 10)
            t = bench_remove(X, 10, args.repeats)
            print(f"\nremove() of one non-center point, n = 1,000,000, d = 10, k = 10: "
                  f"median {t * 1e6:.2f} us over 2,000 removals")


def seeding_table(kinds, shapes, repeats):
    print("| data | n | d | k | seeding sklearn | seeding pyfkm | ratio | "
          "k-pass floor | pyfkm / floor |")
    print("|---|---|---|---|---|---|---|---|---|")
    with single_thread():
        for kind in kinds:
            for n, d, k in shapes:
                X = make_data(kind, n, d, k)
                s_sk, s_us, f_lo = bench_seeding_floor(X, k, repeats)
                print(f"| {kind} | {n:,} | {d} | {k} | {s_sk * 1e3:.1f} ms | {s_us * 1e3:.1f} ms | "
                      f"**{s_sk / s_us:.2f}x** | {f_lo * 1e3:.1f} ms | {s_us / f_lo:.2f} |",
                      flush=True)


if __name__ == "__main__":
    sys.exit(main())
