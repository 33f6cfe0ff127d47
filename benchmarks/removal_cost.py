"""Cost of one federated removal (FederatedKMeans.remove), for comparing
two checkouts of pyfkm on the same workload.

Gaussian mixture n = 30,000, d = 10, K = 10, split non-iid over L = 100
clients, secure aggregation; ``--removals`` random single-point removals
(uniform client, uniform active point), wall time of each ``remove`` call.
Prints one line: the checkout, fit time, median and mean removal time.

Compare two checkouts by running the script with each on ``PYTHONPATH``,
alternating, in one session (the machine is noisy)::

    for t in /path/old /path/new; do (cd $t && PYTHONPATH=. python \
        /path/new/benchmarks/removal_cost.py --server-points centers); done
"""
import argparse
import sys

import numpy as np
from _timing import call
from pyfkm._progress import track

import pyfkm
from pyfkm.datasets import make_gaussian_mixture, split_non_iid


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server-points", default="centers", choices=["centers", "uniform"])
    ap.add_argument("--removals", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    X, y, _ = make_gaussian_mixture(30000, 10, 10, random_state=a.seed)
    X = pyfkm.mufc.scale_to_box(X, X.min(), X.max())
    parts = split_non_iid(X, y, 100, 2, random_state=a.seed)
    clients = [np.ascontiguousarray(X[p]) for p in parts]
    t_fit, m = call(lambda: pyfkm.FederatedKMeans(10, server_points=a.server_points,
                                                  random_state=a.seed).fit(clients),
                    clock="wall")
    rng = np.random.default_rng(a.seed + 1)
    ts = []
    for _ in track(range(a.removals), sys.stderr.isatty(), "removals"):
        c = int(rng.integers(len(clients)))
        i = int(rng.choice(np.flatnonzero(~m.removed_[c])))
        ts.append(call(lambda: m.remove(c, [i]), clock="wall")[0])
    print(f"{pyfkm.__file__.rsplit('/', 2)[0]} {a.server_points}: fit {t_fit:.2f} s, "
          f"removal median {1e3 * np.median(ts):.2f} ms, mean {1e3 * np.mean(ts):.2f} ms")


if __name__ == "__main__":
    main()
