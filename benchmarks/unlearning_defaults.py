"""Unlearning with default parameters: the fit against one random removal (issue 22).

``FederatedKMeans(K, random_state=seed)`` -- every other parameter at its default (secure
aggregation, ``server_points``, ``client_init``, ``n_init``...) -- is fitted on a workload,
then ``--removals`` random single points are removed one at a time (a uniformly random
client, a uniformly random point it still holds).  Workloads:

``federation``  100 clients x about 20,000 points (a Gaussian mixture of n = 2,000,000,
                d = 10, K = 10, split non-iid with 2 mixture components per client);
``gaussian``    the paper-style mixture n = 30,000, d = 10, K = 10 over L = 100 clients;
``digits``      scikit-learn's digits (n = 1,797, d = 64, K = 10) over L = 10 clients.

For each removal the script records

* *online*: the report's ``client_seconds + aggregation_seconds + server_seconds`` (wall
  clock): what the request waits for;
* *model*: ``client_seconds + server_seconds``: the unlearning itself, without the secure
  round;
* *offline*: the report's ``offline_seconds``: the next round's key shares and masks, which
  no data enters, run after the online part;
* *CPU*: the CPU time of the call (``time.process_time``), the offline part included.

and prints, per workload, the fit (wall and CPU) and the mean and median of each, with the
ratio fit / mean removal (the issue's measure: "mean random removal at least 100x faster
than the fit").  ``--workers N`` also fits with a ``ThreadPoolExecutor`` and a
``ProcessPoolExecutor`` of N workers and prints the speed-up over the in-process fit.

Commands (label M9 in ``benchmarks/README.md``)::

    python benchmarks/unlearning_defaults.py                        # all three, 100 removals
    python benchmarks/unlearning_defaults.py --data gaussian,digits --removals 200
    python benchmarks/unlearning_defaults.py --data federation --workers 2
    python benchmarks/unlearning_defaults.py --quick                # smoke run, seconds
"""
import argparse
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
from _timing import format_seconds as fmt

import pyfkm
from pyfkm._progress import track
from pyfkm.datasets import make_gaussian_mixture, split_non_iid

WORKLOADS = ("federation", "gaussian", "digits")


def load(name, seed, quick=False):
    """(clients, K) of a workload, in the estimator's default box [-0.5, 0.5]^d."""
    if name == "digits":
        from sklearn.datasets import load_digits
        X, y = load_digits(return_X_y=True)
        X = pyfkm.scale_to_box(X, 0.0, 16.0)          # public range of the pixel values
        K, L = 10, 10
    else:
        n, L = (2_000_000, 100) if name == "federation" else (30_000, 100)
        if quick:
            n //= 20
        X, y, _ = make_gaussian_mixture(n, 10, 10, random_state=seed)
        X = pyfkm.scale_to_box(X, X.min(), X.max())
        K = 10
    parts = split_non_iid(X, y, L, 2, random_state=seed)
    return [np.ascontiguousarray(X[p]) for p in parts], K


def timed_fit(clients, K, seed, executor=None):
    c0, w0 = time.process_time(), time.perf_counter()
    model = pyfkm.FederatedKMeans(K, random_state=seed, executor=executor).fit(clients)
    return time.perf_counter() - w0, time.process_time() - c0, model


def removals(model, n, seed, show):
    rng = np.random.default_rng(seed + 1)
    rec = {"online": [], "model": [], "offline": [], "cpu": [], "wall": [], "reseeded": 0}
    for _ in track(range(n), show, "removals"):
        c = int(rng.choice(model._participants))
        i = int(rng.choice(np.flatnonzero(~model.removed_[c])))
        c0, w0 = time.process_time(), time.perf_counter()
        r = model.remove(c, [i])
        rec["wall"].append(time.perf_counter() - w0)
        rec["cpu"].append(time.process_time() - c0)
        rec["online"].append(r.client_seconds + r.aggregation_seconds + r.server_seconds)
        rec["model"].append(r.client_seconds + r.server_seconds)
        rec["offline"].append(r.offline_seconds)
        rec["reseeded"] += bool(r.reseeded)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=",".join(WORKLOADS),
                    help="comma-separated workloads: " + ", ".join(WORKLOADS))
    ap.add_argument("--removals", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=0,
                    help="also fit with executors of this many workers (0: no)")
    ap.add_argument("--quick", action="store_true",
                    help="smaller federation/gaussian (n / 20) and 10 removals")
    a = ap.parse_args()
    names = [s.strip() for s in a.data.split(",") if s.strip()]
    bad = [s for s in names if s not in WORKLOADS]
    if bad:
        ap.error(f"unknown workloads {bad}")
    n_rem = 10 if a.quick else a.removals
    show = sys.stderr.isatty()
    print(f"pyfkm {pyfkm.__version__} ({pyfkm.__file__.rsplit('/', 2)[0]}), defaults: "
          f"{ {k: v for k, v in pyfkm.FederatedKMeans().get_params().items() if k in ('server_points', 'secure', 'client_init', 'n_init')} }")
    print("| workload | fit wall (CPU) | removal online mean / median | model part mean | "
          "offline mean | wall mean (CPU) | fit / online mean | fit / model mean | "
          "fit / wall mean | reseeded |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        clients, K = load(name, a.seed, a.quick)
        fw, fc, model = timed_fit(clients, K, a.seed)
        r = removals(model, n_rem, a.seed, show)
        mean = {k: statistics.mean(v) for k, v in r.items() if k != "reseeded"}
        print(f"| {name} (n = {sum(c.shape[0] for c in clients):,}, L = {len(clients)}) | "
              f"{fmt(fw)} ({fmt(fc)}) | {fmt(mean['online'])} / "
              f"{fmt(statistics.median(r['online']))} | {fmt(mean['model'])} | "
              f"{fmt(mean['offline'])} | {fmt(mean['wall'])} ({fmt(mean['cpu'])}) | "
              f"**{fw / mean['online']:.0f}x** | {fw / mean['model']:.0f}x | "
              f"{fw / mean['wall']:.1f}x | {r['reseeded']} of {n_rem} |", flush=True)
        if a.workers:
            line = [f"fit of {name} with {a.workers} workers (wall):"]
            base = fw
            for label, cls in (("threads", ThreadPoolExecutor), ("processes", ProcessPoolExecutor)):
                with cls(a.workers) as ex:
                    w, _, _ = timed_fit(clients, K, a.seed, executor=ex)
                line.append(f"{label} {fmt(w)} ({base / w:.2f}x over {fmt(base)} in process)")
            print("  " + "; ".join(line), flush=True)


if __name__ == "__main__":
    main()
