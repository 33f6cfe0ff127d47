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
``ProcessPoolExecutor`` of N workers, ``--repeats`` times interleaved with in-process fits,
and prints the medians of the wall times, the speed-ups over the in-process fit and the
load average (the ratio means something only with N free cores).  ``--breakdown`` prints
the CPU time (``time.thread_time``, medians of ``--repeats`` in-process fits) of each
phase of the fit -- the clients' seeding, the secure round's client steps (key agreement,
key shares, masked inputs, unmasking), its server steps (decode included), the server's
clustering -- and what part a thread pool runs beside the driver: the seeding and the
clients' masks (beside the key agreement and key shares, which need no data) and the
encodings of the masked inputs; with it the projected wall time on N free cores.  It also
fits with a thread pool of N workers and prints the CPU time of the driver thread
(``time.thread_time``): the work that holds the GIL there (the X25519 key exchanges of
``cryptography`` among it) bounds the wall time from below, so ``in-process CPU /
max(driver CPU, in-process CPU / N)`` bounds the speed-up on N free cores whatever the
load of the machine.

Commands (label M9 in ``benchmarks/README.md``)::

    python benchmarks/unlearning_defaults.py                        # all three, 100 removals
    python benchmarks/unlearning_defaults.py --data gaussian,digits --removals 200
    python benchmarks/unlearning_defaults.py --data federation --workers 2
    python benchmarks/unlearning_defaults.py --data federation --removals 0 --workers 2 \
        --repeats 5 --breakdown
    python benchmarks/unlearning_defaults.py --quick                # smoke run, seconds
"""
import argparse
import collections
import functools
import os
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


# the fit's phases: (label, class, method, runs beside the driver on a thread pool)
_PHASES = (
    ("client seeding", "MufcClient", "__init__", "beside"),
    ("client: key agreement", "ScmaClient", "receive_roster", ""),
    ("client: key shares", "ScmaClient", "share_keys", ""),
    ("client: receive shares", "ScmaClient", "receive_shares", ""),
    ("client: masks", "ScmaClient", "mask", "beside"),
    ("client: masked input (encode, mask)", "ScmaClient", "respond", "pool"),
    ("client: unmask", "ScmaClient", "unmask", ""),
    ("server: decode (finish_round)", "ScmaServer", "finish_round", ""),
    ("server clustering", "MufcServer", "update", ""),
)


def breakdown(clients, K, seed, repeats, workers):
    """Print the CPU time of each phase of in-process fits (medians) and the
    projected wall time with ``workers`` free cores and a thread pool."""
    from pyfkm.mufc.client import MufcClient
    from pyfkm.mufc.server import MufcServer
    from pyfkm.secagg import ScmaClient, ScmaServer
    owners = {"MufcClient": MufcClient, "MufcServer": MufcServer, "ScmaClient": ScmaClient,
              "ScmaServer": ScmaServer}
    acc = collections.Counter()
    saved = []
    inner = [0.0]             # time of the nested phases of the running one

    for label, cls, name, _ in _PHASES:
        f = getattr(owners[cls], name)
        saved.append((owners[cls], name, f))

        def timed(*a, _f=f, _label=label, **k):
            outer, inner[0] = inner[0], 0.0
            t = time.thread_time()
            try:
                return _f(*a, **k)
            finally:
                dt = time.thread_time() - t
                acc[_label] += dt - inner[0]   # exclusive (a respond computes a mask)
                inner[0] = outer + dt
        setattr(owners[cls], name, functools.wraps(f)(timed))
    # the driver's CPU before the round's masked inputs (its key agreement and
    # key shares: what a thread pool's fits run beside) and after them
    from pyfkm.secagg import RoundTrip
    real_inputs = RoundTrip.inputs

    def inputs(self, *a, **k):
        acc["t_inputs"] = time.thread_time()
        return real_inputs(self, *a, **k)
    RoundTrip.inputs = functools.wraps(real_inputs)(inputs)
    runs = []
    try:
        for _ in range(repeats):
            acc.clear()
            t = time.thread_time()
            pyfkm.FederatedKMeans(K, random_state=seed).fit(clients)
            end = time.thread_time()
            acc["before"] = acc.pop("t_inputs") - t
            acc["after"] = end - t - acc["before"]
            runs.append((end - t, dict(acc)))
    finally:
        for owner, name, f in saved:
            setattr(owner, name, f)
        RoundTrip.inputs = real_inputs
    total = statistics.median(r[0] for r in runs)
    med = {label: statistics.median(r[1].get(label, 0.0) for r in runs)
           for label in [p[0] for p in _PHASES] + ["before", "after"]}
    print(f"  CPU time of the in-process fit (thread_time, median of {repeats}): "
          f"{fmt(total)}; load {os.getloadavg()[0]:.1f}")
    for label, *_, where in _PHASES:
        print(f"    {label:38s} {fmt(med[label]):>9s} {100 * med[label] / total:5.1f}%"
              + {"beside": "  (thread pool, beside the key agreement and shares)",
                 "pool": "  (thread pool)"}.get(where, ""))
    other = total - sum(med[p[0]] for p in _PHASES)
    print(f"    {'other (driver, messages)':38s} {fmt(other):>9s} {100 * other / total:5.1f}%")
    beside = med["client seeding"] + med["client: masks"]
    pool = med["client: masked input (encode, mask)"]
    # in process the masks are computed in the masked inputs (after "before")
    first = med["before"] - med["client seeding"]   # key agreement, key shares, messages
    rest = med["after"] - pool - med["client: masks"]  # unmask, decode, clustering, messages
    # with a thread pool: the seeding and the masks beside the driver's key
    # agreement and shares, then the encodings on the pool, then the rest
    proj = max(first, (first + beside) / workers) + pool / workers + rest
    print(f"    driver before the masked inputs (seeding excluded): {fmt(first)}; after "
          f"them (masks and encodings excluded): {fmt(rest)}")
    print(f"    parallel on a pool: {fmt(beside + pool)} ({100 * (beside + pool) / total:.0f}%); "
          f"serial in the driver: {fmt(total - beside - pool)}; projected with {workers} free "
          f"cores: {fmt(proj)} ({total / proj:.2f}x)")
    # measured: the driver thread's CPU in fits on a thread pool
    drv = []
    with ThreadPoolExecutor(workers) as ex:
        for _ in range(repeats):
            t = time.thread_time()
            pyfkm.FederatedKMeans(K, random_state=seed, executor=ex).fit(clients)
            drv.append(time.thread_time() - t)
    d = statistics.median(drv)
    print(f"    driver thread's CPU with {workers} threads (median of {repeats}): {fmt(d)}; "
          f"bound on {workers} free cores: {total / max(d, total / workers):.2f}x")


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
    ap.add_argument("--repeats", type=int, default=3,
                    help="interleaved fits per executor with --workers, and fits of "
                         "--breakdown (medians)")
    ap.add_argument("--breakdown", action="store_true",
                    help="print the CPU time of each phase of the fit")
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
        fitted = model.cluster_centers_.copy()
        if not n_rem:
            print(f"| {name} (n = {sum(c.shape[0] for c in clients):,}, L = {len(clients)}) | "
                  f"{fmt(fw)} ({fmt(fc)}) | no removals |||||||| ", flush=True)
        else:
            r = removals(model, n_rem, a.seed, show)
            mean = {k: statistics.mean(v) for k, v in r.items() if k != "reseeded"}
            print(f"| {name} (n = {sum(c.shape[0] for c in clients):,}, L = {len(clients)}) | "
                  f"{fmt(fw)} ({fmt(fc)}) | {fmt(mean['online'])} / "
                  f"{fmt(statistics.median(r['online']))} | {fmt(mean['model'])} | "
                  f"{fmt(mean['offline'])} | {fmt(mean['wall'])} ({fmt(mean['cpu'])}) | "
                  f"**{fw / mean['online']:.0f}x** | {fw / mean['model']:.0f}x | "
                  f"{fw / mean['wall']:.1f}x | {r['reseeded']} of {n_rem} |", flush=True)
        if a.breakdown:
            breakdown(clients, K, a.seed, max(a.repeats, 1), max(a.workers, 2))
        if a.workers:
            walls = {"in process": [], "threads": [], "processes": []}
            with ThreadPoolExecutor(a.workers) as te, ProcessPoolExecutor(a.workers) as pe:
                list(pe.map(abs, range(a.workers)))          # start the processes
                for _ in range(max(a.repeats, 1)):           # interleaved
                    for label, ex in (("in process", None), ("threads", te),
                                      ("processes", pe)):
                        w, _, m = timed_fit(clients, K, a.seed, executor=ex)
                        walls[label].append(w)
                        if not np.array_equal(m.cluster_centers_, fitted):
                            raise AssertionError(f"the fit with {label} differs")
            med = {k: statistics.median(v) for k, v in walls.items()}
            base = med["in process"]
            print(f"  fit of {name} with {a.workers} workers (wall, median of "
                  f"{max(a.repeats, 1)} interleaved; load {os.getloadavg()[0]:.1f}): "
                  f"in process {fmt(base)}; " + "; ".join(
                      f"{k} {fmt(med[k])} ({base / med[k]:.2f}x)" for k in ("threads",
                                                                             "processes")),
                  flush=True)


if __name__ == "__main__":
    main()
