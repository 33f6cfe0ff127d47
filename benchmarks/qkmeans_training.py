"""Training time of QKMeans vs pyfkm's KMeans for the same Lloyd iterations.

QKMeans runs k-means++ (keyed race) seeding, then ``n_run`` quantized Lloyd
iterations (the last may be rejected by the early stop); the reference is
``KMeans(n_init=1, max_iter=n_run, tol=0)`` on the same data.  CPU time, one
thread, interleaved repeats (repeat r uses seed r for both), medians; the
iteration count varies with the seed, so the median of the paired ratios is
the steadier figure.

Run::

    python benchmarks/qkmeans_training.py --repeats 7
"""
import argparse

import numpy as np
from _timing import call, single_thread

from pyfkm import KMeans
from pyfkm.deletion import QKMeans

from online_deletion import load


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--datasets", default="gaussian,digits")
    a = p.parse_args(argv)
    with single_thread():
        for name in a.datasets.split(","):
            X, _, k = load(name)
            tq, tk, runs = [], [], []
            for r in range(a.repeats):
                # interleaved by hand: KMeans runs the iterations QKMeans made
                t, q = call(lambda: QKMeans(k, random_state=r).fit(X))
                tq.append(t)
                runs.append(q._state.n_run)
                tk.append(call(lambda: KMeans(k, n_init=1, max_iter=max(q._state.n_run, 1),
                                              tol=0.0, random_state=r).fit(X))[0])
            print(f"{name}: n={X.shape[0]} d={X.shape[1]} k={k} Lloyd iterations "
                  f"{sorted(set(runs))}: QKMeans {np.median(tq) * 1e3:.1f} ms, KMeans "
                  f"{np.median(tk) * 1e3:.1f} ms, ratio {np.median(tq) / np.median(tk):.2f}x; "
                  f"median of the paired ratios (same seed, same iterations) "
                  f"{np.median(np.divide(tq, tk)):.2f}x")


if __name__ == "__main__":
    main()
