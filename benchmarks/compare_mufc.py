"""pyfkm.FederatedKMeans (MUFC) vs scikit-learn, complete retraining, K-FED and DC-k-means.

Training time against the same pipeline assembled from scikit-learn, online unlearning against
complete retraining (the paper's Fig. 3), and quality (loss ratio) against K-FED and federated
DC-k-means, for federated k-means with exact unlearning (Pan et al., ICLR 2023).

Data (``--data``):
  gaussian  the paper's synthetic setting: ``pyfkm.datasets.make_gaussian_mixture`` with
            n = 30000, d = 10, K = 10 (clusters of 3000 points, std 0.05, inside the box
            [-0.5, 0.5]^d), split non-iid over L = 100 clients holding K' = 3 true clusters
            each (``pyfkm.datasets.split_non_iid``);
  digits    scikit-learn's digits (n = 1797, d = 64, values 0..16), mapped into the box with
            the public bounds 0 and 16 (``pyfkm.mufc.scale_to_box``), K = 10, split non-iid
            over L = 10 clients with K' = 3.
Seed s draws the mixture, the split and the models' ``random_state``.

1. Training (``--parts training``).  ``FederatedKMeans(K, server_points=sp, secure=...,
   n_init=10, max_iter=300, tol=1e-4).fit(clients)`` for sp in {"centers", "uniform"}, secure
   True and False, against "the same pipeline assembled from scikit-learn": every client runs
   ``sklearn.cluster.kmeans_plusplus(X_l, K, n_local_trials=1)``, counts the points nearest to
   each center (numpy), quantizes its centers to the same grid (gamma = 1/sqrt(n), numpy); the
   count vectors are summed in the clear (numpy ``unique`` + ``bincount``); the server runs
   ``sklearn.cluster.KMeans(K, n_init=10, max_iter=300, tol=1e-4, algorithm="lloyd")`` on the
   bin centres weighted by their counts ("centers") or on q_j points drawn uniformly inside
   bin j ("uniform").  The server's k-means++ is the one pyfkm runs (one candidate per step,
   weighted): a callable ``init`` wrapping ``kmeans_plusplus(n_local_trials=1,
   sample_weight=w)``; a second column gives scikit-learn's default greedy k-means++
   (2 + ln K candidates per step) for information.  CPU time (``time.process_time``), one
   thread (threadpoolctl), runs of the two sides interleaved, medians of ``--repeats``;
   ratio = scikit-learn / pyfkm (> 1: pyfkm faster).  A secure fit also runs the X25519 key
   agreement of the 100 clients and, after its round, the offline precomputation of every
   client's mask for the next round (the first removal's round); both are inside the fit's
   time; a separate column leaves the offline precomputation out.  Secure and clear fits with
   the same seed must give identical server centers (checked).

2. Online unlearning (``--parts unlearning``; Gaussian data unless ``--unlearn-data`` says
   otherwise), for sp in {"centers", "uniform"} and secure True (clear for reference).  One
   fit (seed ``--seed``), then a stream of single-point removals drawn **uniformly at random
   over all remaining points of the federation** (a uniformly random prefix of a permutation
   of all (client, id) pairs; ``--sampling clients`` draws a uniform client, then a uniform
   remaining point of it).  Each removal is one ``remove(client, id)`` call; recorded: the
   report's online times (``client_seconds + aggregation_seconds + server_seconds``, wall
   clock), its ``offline_seconds`` (inside the call, after the online round, every participant
   precomputes its masks for the next 8 rounds when the cached ones are used up), the CPU time of the call, the CPU time of the offline
   part alone (``_SecureAggregator.precompute`` wrapped with a CPU timer, see
   ``instrument_offline``; private, so if it is gone the offline CPU is reported as 0), and the
   wall time of the call (end to end).  Online CPU = CPU of the call - offline CPU.
   Complete retraining = ``FederatedKMeans(same parameters, gamma=model.gamma_).fit(remaining
   data)`` timed ``--retrains`` times at evenly spaced points of the stream (median; the
   retraining cost of N removals is extrapolated as N x median).  Average speed-up over the
   first N removals = N x median retrain / accumulated removal time, for N in ``--removals``,
   on CPU time (headline) and on wall time; online only and online + offline.  The stream is
   drawn once for the largest N and every setting removes the same points in the same order.
   Secure streams stop after ``--secure-max-removals`` (default 100; each secure removal of
   the stream also times retraining and a removal that hits a center reruns a full round,
   run 1000 with ``--parts unlearning --server-points centers --aggregation secure
   --secure-max-removals 1000 --no-plot``); clear streams run to the largest N.  The default run takes ~7 min here.
   Then ``--adversarial`` (10) removals on a fresh fit (same seed) that hit centers: a uniformly
   random client, and the first center of its current seeding (position 0: the client reseeds
   completely, the worst case), compared with the same retraining median.
   The 5 ms target is about removals that do not hit a center (``report.reseeded`` False):
   their median online time plus their mean offline time (the clients refresh their
   precomputed masks for several rounds at a time, so the offline cost lands on one removal
   in several: it counts with its mean), secure, L = 100; the median wall time of the whole
   call is printed too.

3. Quality (``--parts quality``): loss ratio = federated objective phi_f (Def. 3.1 of the
   paper, ``pyfkm.metrics.federated_objective``: each point charged through its client's local
   centroid to the nearest server centroid) / best centralized objective of 5 runs of
   k-means++ and Lloyd on the pooled data (``pyfkm.metrics.best_kmeans_objective``, computed
   once per seed and shared by the methods), median over ``--seeds`` seeds, for pyfkm (both
   server_points, and "centers" with ``client_init="means"`` (the means of the seeds' cells)
   and ``client_init="full"`` (Lloyd after the clients' seeding, paper App. M.3); clear
   aggregation, which gives the same model as secure), K-FED
   (``pyfkm.mufc.KFed``) and federated DC-k-means
   (``pyfkm.mufc.FederatedDCKMeans``, leaf = client, weighted root).  K-FED runs four
   ways: with k' = K' local clusters per client (the K-FED paper's heterogeneous setting where
   clients know K', also the k' of the MUFC paper's comparison), its clients run the paper's
   Awasthi-Sheffet step once (k-means++ seeds in the projection, as in the K-FED authors'
   code), or k-means++ and Lloyd once (one seeding per client, like pyfkm's clients), or the
   best of ``n_init`` such runs; and with k' = K, where clients do not know K' (best of
   ``n_init`` runs).  The paper's MUFC figure for the Gaussian data is 1.18.

4. Plot (matplotlib, Agg): accumulated removal time vs number of removals for pyfkm (both
   server_points, secure and clear) and complete retraining (``--plot``, default
   benchmarks/figures/mufc_unlearning.png).

``--profile N`` runs cProfile over N removals that hit no center (secure, "centers",
Gaussian) and prints where the time goes: a table of the protocol steps per removal, the online
part, and the offline mask precomputation apart (deferred to just after each call, see
``profile_noncenter``).

Usage::

    python benchmarks/compare_mufc.py [--quick] [--parts training,unlearning,quality]
        [--data gaussian,digits] [--repeats 3] [--removals 100,1000] [--retrains 5]
        [--secure-max-removals 100] [--adversarial 10] [--seeds 5] [--seed 0]
        [--sampling points|clients] [--unlearn-data gaussian] [--server-points centers,uniform]
        [--aggregation secure,clear] [--profile 0] [--plot PATH | --no-plot]

Targets (printed at the end): pyfkm training >= 5x faster than the scikit-learn pipeline;
average speed-up over complete retraining >= 100x for random removals with
server_points="centers" (Gaussian); a removal that hits no center under 5 ms end to end at
L = 100 (secure); loss ratio on the Gaussian data <= 1.18 (the paper's MUFC) and below K-FED's.
"""
import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys

import numpy as np
from _timing import Stopwatch, call_cpu_wall, single_thread, timed_calls

import pyfkm
from pyfkm.mufc import FederatedDCKMeans, KFed
from pyfkm.datasets import make_gaussian_mixture, split_non_iid
from pyfkm.metrics import best_kmeans_objective, federated_objective
from pyfkm.mufc import FederatedKMeans, scale_to_box

SERVER_POINTS = ("centers", "uniform")
TARGET_TRAIN_RATIO = 5.0       # sklearn pipeline / pyfkm >= 5
TARGET_SPEEDUP = 100.0         # retraining / removal >= 100 (random, "centers", Gaussian)
TARGET_NONCENTER_S = 0.005     # non-center removal < 5 ms end to end (secure, L = 100)
PAPER_MUFC_RATIO = 1.18        # MUFC loss ratio on the Gaussian data (Pan et al., 2023)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def fmt(t):
    """Seconds as a short string with a unit."""
    if t is None:
        return "-"
    if t >= 1.0:
        return f"{t:.2f} s"
    if t >= 1e-3:
        return f"{t * 1e3:.1f} ms"
    return f"{t * 1e6:.0f} us"


def med(xs):
    xs = list(xs)
    return statistics.median(xs) if xs else None


# --------------------------------------------------------------------------- data

class Dataset:
    """Clients of one data set (list of 2-D arrays in the box [-0.5, 0.5]^d), K and a label."""

    def __init__(self, name, clients, K):
        self.name, self.clients, self.K = name, clients, K
        self.L = len(clients)
        self.n = sum(c.shape[0] for c in clients)
        self.d = clients[0].shape[1]

    def __str__(self):
        return f"{self.name} (n = {self.n:,}, d = {self.d}, K = {self.K}, L = {self.L})"


def load(name, seed, args):
    if name == "gaussian":
        X, y, _ = make_gaussian_mixture(args.n, args.d, args.k, random_state=seed)
        K, L = args.k, args.clients
    elif name == "digits":
        from sklearn.datasets import load_digits
        Xd, y = load_digits(return_X_y=True)
        X = scale_to_box(Xd, 0.0, 16.0)             # public bounds of the pixel values
        K, L = 10, args.digits_clients
    else:
        raise ValueError(f"unknown data set {name!r}")
    parts = split_non_iid(X, y, L, args.kprime, random_state=seed)
    return Dataset(name, [np.ascontiguousarray(X[p]) for p in parts], K)


# --------------------------------------------------------------------------- timing helpers

def _secure_aggregator(mufc):
    """The (private) class whose ``precompute`` is the offline mask step, in
    ``pyfkm.mufc.aggregation``; None if gone."""
    for where in (getattr(mufc, "aggregation", None), mufc):
        cls = getattr(where, "_SecureAggregator", None)
        if cls is not None:
            return cls
    return None


def instrument_offline():
    """The CPU seconds of every call of the (private)
    ``pyfkm.mufc.aggregation._SecureAggregator.precompute`` -- the offline mask precomputation that runs
    at the end of every secure round -- while the ``with`` block runs (``_timing.timed_calls``;
    restored on exit).  Nothing else changes.  If the method is gone the list stays empty
    (offline CPU then counts as online)."""
    from pyfkm import mufc
    times = timed_calls(_secure_aggregator(mufc), "precompute")
    if not times.wrapped:
        log("pyfkm.mufc.aggregation._SecureAggregator.precompute not found: the offline CPU is not "
            "measured (reported as 0, counted as online)")
    return times


def model_params(ds, sp, secure, args, seed):
    return dict(n_clusters=ds.K, server_points=sp, secure=secure, n_init=args.n_init,
                max_iter=args.max_iter, tol=args.tol, random_state=seed)


# --------------------------------------------------------------------------- 1. training

def sklearn_pipeline(clients, K, gamma, lower, B, server_points, n_init, max_iter, tol, seed,
                     greedy=False):
    """MUFC's one-shot pipeline from scikit-learn parts, aggregation in the clear.

    Returns the server centers."""
    from sklearn.cluster import KMeans as SkKMeans
    from sklearn.cluster import kmeans_plusplus as sk_kpp
    rng = np.random.default_rng(seed)
    d = clients[0].shape[1]
    bins, counts = [], []
    for X in clients:
        k = min(K, X.shape[0])
        if k == 0:
            continue
        centers, _ = sk_kpp(X, k, n_local_trials=1, random_state=int(rng.integers(2 ** 31)))
        # sizes: points nearest to each center (ties to the earlier one)
        d2 = (X * X).sum(1)[:, None] - 2.0 * X @ centers.T + (centers * centers).sum(1)[None, :]
        sizes = np.bincount(d2.argmin(1), minlength=k)
        b = np.clip(np.floor((centers - lower) / gamma).astype(np.int64), 0, B - 1)
        keep = sizes > 0
        bins.append(b[keep])
        counts.append(sizes[keep])
    uniq, inv = np.unique(np.concatenate(bins), axis=0, return_inverse=True)
    q = np.bincount(inv.ravel(), weights=np.concatenate(counts)).astype(np.int64)
    if server_points == "centers":
        P, w = lower + (uniq + 0.5) * gamma, q.astype(np.float64)
    else:
        P = lower + (np.repeat(uniq, q, axis=0) + rng.random((int(q.sum()), d))) * gamma
        w = None
    if greedy:
        init = "k-means++"
    else:
        def init(Xs, k, random_state):
            return sk_kpp(Xs, k, sample_weight=w, n_local_trials=1,
                          random_state=random_state)[0]
    km = SkKMeans(min(K, P.shape[0]), init=init, n_init=n_init, max_iter=max_iter, tol=tol,
                  algorithm="lloyd", random_state=int(rng.integers(2 ** 31)))
    km.fit(P, sample_weight=w)
    return km.cluster_centers_


def bench_training(ds, args, offline):
    """Per server_points: medians of pyfkm secure / clear / secure minus offline, sklearn
    like-for-like and greedy, plus the pyfkm secure fit's breakdown."""
    out = []
    for sp in SERVER_POINTS:
        # warm-up, untimed: first calls pay imports and caches on both sides
        m0 = FederatedKMeans(**model_params(ds, sp, True, args, args.seed)).fit(ds.clients)
        FederatedKMeans(**model_params(ds, sp, False, args, args.seed)).fit(ds.clients)
        for greedy in (False, True):
            sklearn_pipeline(ds.clients, ds.K, m0.gamma_, -0.5, m0.n_bins_per_dim_, sp,
                             args.n_init, args.max_iter, args.tol, args.seed, greedy=greedy)
        t = {"secure": [], "clear": [], "secure_online": [], "sk": [], "sk_greedy": [],
             "clients": [], "aggregation": [], "server": [], "offline_wall": [],
             "secure_wall": [], "clear_wall": []}
        same = True
        for r in range(args.repeats):
            seed = args.seed + r
            n0 = len(offline)
            c, w, ms = call_cpu_wall(lambda: FederatedKMeans(
                **model_params(ds, sp, True, args, seed)).fit(ds.clients))
            t["secure"].append(c)
            t["secure_wall"].append(w)
            t["secure_online"].append(c - sum(offline[n0:]))
            for key in ("clients", "aggregation", "server"):
                t[key].append(ms.fit_seconds_[key])
            t["offline_wall"].append(getattr(getattr(ms, "_agg", None), "offline_seconds", 0.0))
            gamma, B = ms.gamma_, ms.n_bins_per_dim_
            c, w, mc = call_cpu_wall(lambda: FederatedKMeans(
                **model_params(ds, sp, False, args, seed)).fit(ds.clients))
            t["clear"].append(c)
            t["clear_wall"].append(w)
            same = same and np.array_equal(ms.cluster_centers_, mc.cluster_centers_)
            for key, greedy in (("sk", False), ("sk_greedy", True)):
                c, _, _ = call_cpu_wall(lambda: sklearn_pipeline(
                    ds.clients, ds.K, gamma, -0.5, B, sp, args.n_init, args.max_iter, args.tol,
                    seed, greedy=greedy))
                t[key].append(c)
        res = {k: med(v) for k, v in t.items()}
        res.update(sp=sp, same=same, m=int(ms.aggregate_bins_.shape[0]),
                   bytes=int(ms.bytes_sent_))
        log(f"  [{ds.name}, {sp}] secure {fmt(res['secure'])}, clear {fmt(res['clear'])}, "
            f"sklearn {fmt(res['sk'])} (greedy {fmt(res['sk_greedy'])})")
        out.append(res)
    return out


# --------------------------------------------------------------------------- 2. unlearning

def removal_order(ds, n_removals, sampling, rng):
    """The stream of (client, id) removals, without repeats."""
    if sampling == "points":
        pairs = np.concatenate([np.stack([np.full(c.shape[0], l), np.arange(c.shape[0])], 1)
                                for l, c in enumerate(ds.clients)])
        idx = rng.choice(pairs.shape[0], size=min(n_removals, pairs.shape[0]), replace=False)
        return [(int(a), int(b)) for a, b in pairs[idx]]
    remaining = [list(rng.permutation(c.shape[0])) for c in ds.clients]
    out = []
    for _ in range(n_removals):
        live = [l for l in range(ds.L) if len(remaining[l]) > ds.K]
        l = int(live[rng.integers(len(live))])
        out.append((l, int(remaining[l].pop())))
    return out


def remaining_data(ds, removed):
    return [X[~m] for X, m in zip(ds.clients, removed)]


def time_retrain(ds, removed, params, gamma):
    c, w, _ = call_cpu_wall(lambda: FederatedKMeans(**params, gamma=gamma).fit(
        remaining_data(ds, removed)))
    return c, w


def do_removal(model, client, pid, offline):
    n0 = len(offline)
    c, w, rep = call_cpu_wall(lambda: model.remove(client, pid))
    off_cpu = sum(offline[n0:])
    online = rep.client_seconds + rep.aggregation_seconds + rep.server_seconds
    return {"cpu": c, "wall": w, "off_cpu": off_cpu, "online_cpu": c - off_cpu,
            "online": online, "offline": rep.offline_seconds, "client": rep.client_seconds,
            "aggregation": rep.aggregation_seconds, "server": rep.server_seconds,
            "reseeded": bool(rep.reseeded), "position": rep.position,
            "reclustered": bool(rep.server_reclustered), "bytes": int(rep.bytes_sent)}


def run_stream(ds, sp, secure, n_removals, args, offline):
    """One fit, a random removal stream with retrains at evenly spaced points, then the
    adversarial removals on a fresh fit."""
    params = model_params(ds, sp, secure, args, args.seed)
    _, fit_wall, model = call_cpu_wall(lambda: FederatedKMeans(**params).fit(ds.clients))
    gamma = model.gamma_
    rng = np.random.default_rng([args.seed, 1])     # the same stream for every setting
    # drawn for the longest stream and cut, so every setting removes the same points in the
    # same order (a capped stream is a prefix of the others)
    stream = removal_order(ds, max(args.removals), args.sampling, rng)[:n_removals]
    R = max(1, min(args.retrains, len(stream)))
    at = set(np.unique(np.linspace(0, len(stream) - 1, R).round().astype(int)).tolist())
    removed = [np.zeros(c.shape[0], dtype=bool) for c in ds.clients]
    recs, retr = [], []
    sw = Stopwatch()
    for i, (l, pid) in enumerate(stream):
        if i in at:
            retr.append(time_retrain(ds, removed, params, gamma))
        recs.append(do_removal(model, l, pid, offline))
        removed[l][pid] = True
        if (i + 1) % 50 == 0:
            log(f"    {i + 1} removals, {sw.wall:.0f} s")

    # adversarial: remove the first center of a random client's current seeding
    model = FederatedKMeans(**params).fit(ds.clients)
    removed = [np.zeros(c.shape[0], dtype=bool) for c in ds.clients]
    adv = []
    for _ in range(args.adversarial):
        live = [l for l in range(ds.L) if int((~removed[l]).sum()) > ds.K]
        l = int(live[rng.integers(len(live))])
        center = model.client_centers_[l][0]
        hit = np.flatnonzero((ds.clients[l] == center).all(1) & ~removed[l])
        rec = do_removal(model, l, int(hit[0]), offline)
        removed[l][int(hit[0])] = True
        adv.append(rec)
    return {"sp": sp, "secure": secure, "recs": recs, "adv": adv,
            "retrain_cpu": med(c for c, _ in retr), "retrain_wall": med(w for _, w in retr),
            "n_retrains": len(retr), "fit_wall": fit_wall}


def summarize(recs, N, res):
    """Averages and speed-ups over the first N records of a stream."""
    rs = recs[:N]
    s = {"N": len(rs), "hits": sum(r["reseeded"] for r in rs)}
    for key in ("online", "online_cpu", "offline", "off_cpu", "cpu", "wall"):
        s[key] = sum(r[key] for r in rs)
    n = len(rs)
    s["su_cpu"] = n * res["retrain_cpu"] / s["online_cpu"]
    s["su_cpu_all"] = n * res["retrain_cpu"] / s["cpu"]
    s["su_wall"] = n * res["retrain_wall"] / s["online"]
    s["su_wall_all"] = n * res["retrain_wall"] / s["wall"]
    nc = [r for r in rs if not r["reseeded"]]
    s["nc_n"] = len(nc)
    for key in ("online", "online_cpu", "wall", "cpu", "client", "aggregation", "server"):
        s["nc_" + key] = med(r[key] for r in nc)
    # the offline masks are refreshed every few rounds (a batch of rounds at a
    # time): per removal they count with their mean, not their median
    s["nc_offline_mean"] = statistics.mean(r["offline"] for r in nc) if nc else 0.0
    s["nc_e2e"] = None if s["nc_online"] is None else s["nc_online"] + s["nc_offline_mean"]
    return s


def bench_unlearning(ds, args, offline):
    results = []
    for secure in (True, False):
        if ("secure" if secure else "clear") not in args.aggregation:
            continue
        for sp in args.server_points:
            N = max(args.removals)
            if secure:
                N = min(N, args.secure_max_removals)
            log(f"  [{ds.name}, {sp}, {'secure' if secure else 'clear'}] {N} removals, "
                f"{args.retrains} retrains, {args.adversarial} adversarial")
            results.append(run_stream(ds, sp, secure, N, args, offline))
    return results


# --------------------------------------------------------------------------- 3. quality

KFED_PAPER = "K-FED, authors' step (Awasthi-Sheffet, 1 run)"
KFED_ONE = "K-FED, 1 k-means run"
KFED_BEST = "K-FED, best of n_init k-means runs"
KFED_K = "K-FED, k' = K"


def bench_quality(name, args):
    rows = {}
    for s in range(args.seeds):
        seed = args.seed + s
        ds = load(name, seed, args)
        ref = best_kmeans_objective(np.vstack(ds.clients), ds.K, n_runs=5, random_state=seed)
        kp = min(args.kfed_client_clusters or args.kprime, ds.K)
        models = {
            "pyfkm centers": FederatedKMeans(**model_params(ds, "centers", False, args, seed)),
            "pyfkm uniform": FederatedKMeans(**model_params(ds, "uniform", False, args, seed)),
            "pyfkm centers, client_init=means": FederatedKMeans(
                **model_params(ds, "centers", False, args, seed), client_init="means"),
            "pyfkm centers, client_init=full": FederatedKMeans(
                **model_params(ds, "centers", False, args, seed), client_init="full"),
            KFED_PAPER: KFed(ds.K, client_clusters=kp, local_step="awasthi-sheffet", n_init=1,
                             max_iter=args.max_iter, tol=args.tol, random_state=seed),
            KFED_ONE: KFed(ds.K, client_clusters=kp, n_init=1, max_iter=args.max_iter,
                           tol=args.tol, random_state=seed),
            KFED_BEST: KFed(ds.K, client_clusters=kp, n_init=args.n_init,
                            max_iter=args.max_iter, tol=args.tol, random_state=seed),
            KFED_K: KFed(ds.K, client_clusters=ds.K, n_init=args.n_init,
                         max_iter=args.max_iter, tol=args.tol, random_state=seed),
            "DC-k-means": FederatedDCKMeans(ds.K, n_init=args.n_init, max_iter=args.max_iter,
                                            tol=args.tol, random_state=seed),
        }
        for key, m in models.items():
            m.fit(ds.clients)
            phi = federated_objective(ds.clients, None, m.client_centers_, m.cluster_centers_)
            rows.setdefault(key, []).append(phi / ref)
        log(f"  [{name}] seed {seed}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in rows.items()))
    return rows


# --------------------------------------------------------------------------- profile

def profile_noncenter(ds, args, n):
    """cProfile over n removals that hit no center (secure, "centers").

    Two profiles: the online part of the removals, and the offline mask precomputation.  The
    offline step (``_SecureAggregator.precompute``, the last thing a secure round does) is
    deferred to just after each ``remove`` call returns and profiled apart; nothing between
    the two reads the precomputed masks, so the work is the same.  Returns (online text,
    offline text, per-step rows, reports, offline CPU seconds per removal)."""
    from pyfkm import mufc
    model = FederatedKMeans(**model_params(ds, "centers", True, args, args.seed)).fit(ds.clients)
    rng = np.random.default_rng([args.seed, 7])
    removed = [np.zeros(c.shape[0], dtype=bool) for c in ds.clients]
    on, off = cProfile.Profile(), cProfile.Profile()
    cls = _secure_aggregator(mufc)
    inner = getattr(cls, "precompute", None)
    deferred = []

    def precompute(self, *a, **kw):
        deferred.append((self, a, kw))

    if inner is not None:
        cls.precompute = precompute
    reps, off_cpu = [], []
    try:
        while len(reps) < n:
            l = int(rng.integers(ds.L))
            pid = int(rng.integers(ds.clients[l].shape[0]))
            if removed[l][pid] or (model.client_centers_[l] == ds.clients[l][pid]).all(1).any():
                continue
            on.enable()
            rep = model.remove(l, pid)
            on.disable()
            with Stopwatch() as sw:
                off.enable()
                while deferred:
                    self_, a, kw = deferred.pop()
                    inner(self_, *a, **kw)
                off.disable()
            off_cpu.append(sw.cpu)
            removed[l][pid] = True
            reps.append(rep)
    finally:
        if inner is not None:
            cls.precompute = inner
    texts = []
    for prof, top in ((on, 30), (off, 12)):
        s = io.StringIO()
        st = pstats.Stats(prof, stream=s)
        st.sort_stats("tottime").print_stats(top)
        st.sort_stats("cumulative").print_stats(top)
        texts.append(s.getvalue())
    # per-step rows of the online profile: (where, calls per removal, cumulative per removal)
    wanted = [("mufc/estimator.py", "remove"), ("mufc/client.py", "_finish"),
              ("core/seeding.py", "remove"), ("mufc/aggregation.py", "round"),
              ("scma/_client.py", "set_data"), ("scma/_server.py", "start_round"),
              ("scma/_client.py", "respond"), ("_messages.py", "to_bytes"),
              ("_messages.py", "from_bytes"), ("scma/_server.py", "receive_many"),
              ("scma/_server.py", "finish_round"), ("scma/_codec.py", "decode"),
              ("mufc/server.py", "update"), ("core/kmeans.py", "fit"),
              ("core/kmeans.py", "lloyd"), ("core/kmeans.py", "step")]
    stats = pstats.Stats(on).stats
    rows = []
    for fname, func in wanted:
        for (f, line, name), (_, nc, _, ct, _) in sorted(stats.items()):
            if f.endswith(os.sep + fname.replace("/", os.sep)) and name == func:
                rows.append((f"{fname}:{line}({name})", nc / len(reps), ct / len(reps)))
    return texts[0], texts[1], rows, reps, med(off_cpu)


# --------------------------------------------------------------------------- plot

def plot(unl, path, ds_name):
    """Returns False (and draws nothing) when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    colors = {"centers": "tab:blue", "uniform": "tab:orange"}
    for ax, secure in zip(axes, (True, False)):
        for res in (r for r in unl if r["secure"] == secure):
            sp, recs = res["sp"], res["recs"]
            x = np.arange(1, len(recs) + 1)
            ax.plot(x, np.cumsum([r["online_cpu"] for r in recs]), color=colors[sp],
                    label=f"pyfkm {sp}: online")
            if secure:
                ax.plot(x, np.cumsum([r["cpu"] for r in recs]), color=colors[sp], ls=":",
                        label=f"pyfkm {sp}: online + offline masks")
            xr = np.arange(1, max(len(recs), 1) + 1)
            ax.plot(xr, xr * res["retrain_cpu"], color=colors[sp], ls="--",
                    label=f"retraining ({sp}), {fmt(res['retrain_cpu'])} each")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("number of removals")
        ax.set_title(f"{'secure' if secure else 'clear'} aggregation", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("accumulated removal time (CPU s)")
    fig.suptitle(f"pyfkm FederatedKMeans, {ds_name}: random single-point removals vs "
                 "complete retraining", fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


# --------------------------------------------------------------------------- report

def print_training(name, rows):
    print(f"\n## Training time, {name} (CPU, median)\n")
    print("| server_points | m bins | pyfkm secure | pyfkm secure w/o offline masks | pyfkm clear "
          "| sklearn pipeline (1 candidate) | sklearn greedy k-means++ | ratio sklearn/secure "
          "| ratio sklearn/secure w/o offline | ratio sklearn/clear | secure == clear |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['sp']} | {r['m']:,} | {fmt(r['secure'])} | {fmt(r['secure_online'])} | "
              f"{fmt(r['clear'])} | {fmt(r['sk'])} | {fmt(r['sk_greedy'])} | "
              f"**{r['sk'] / r['secure']:.2f}x** | {r['sk'] / r['secure_online']:.2f}x | "
              f"**{r['sk'] / r['clear']:.2f}x** | {'yes' if r['same'] else '**NO**'} |")
    print("\npyfkm secure fit, wall clock (fit_seconds_): "
          + "; ".join(f"{r['sp']}: clients {fmt(r['clients'])}, aggregation (key agreement + "
                      f"round + offline masks) {fmt(r['aggregation'])} of which offline "
                      f"{fmt(r['offline_wall'])}, server {fmt(r['server'])}, whole fit "
                      f"{fmt(r['secure_wall'])}, {r['bytes']:,} B sent" for r in rows))


def print_unlearning(name, unl, checkpoints):
    print(f"\n## Online unlearning, {name}: random single-point removals vs complete "
          "retraining\n")
    print("Times per removal are means over the first N removals; speed-up = N x median "
          "retrain / accumulated removal time. online = client + aggregation + server; "
          "offline = next-round mask precomputation (secure only).\n")
    print("| aggregation | server_points | N | center hits | online CPU | online wall (report) "
          "| offline CPU | end-to-end wall | retrain CPU (wall) | **speed-up online CPU** "
          "| speed-up online wall | speed-up incl. offline CPU | speed-up incl. offline wall |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    sums = {}
    for res in unl:
        for N in checkpoints + ["adv"]:
            recs = res["adv"] if N == "adv" else res["recs"]
            if N != "adv" and len(recs) < N:
                continue
            s = summarize(recs, len(recs) if N == "adv" else N, res)
            sums[(res["secure"], res["sp"], N)] = s
            n = s["N"]
            label = f"{n} adversarial" if N == "adv" else str(n)
            print(f"| {'secure' if res['secure'] else 'clear'} | {res['sp']} | {label} | "
                  f"{s['hits']} | {fmt(s['online_cpu'] / n)} | {fmt(s['online'] / n)} | "
                  f"{fmt(s['off_cpu'] / n)} | {fmt(s['wall'] / n)} | "
                  f"{fmt(res['retrain_cpu'])} ({fmt(res['retrain_wall'])}) | "
                  f"**{s['su_cpu']:.1f}x** | {s['su_wall']:.1f}x | {s['su_cpu_all']:.1f}x | "
                  f"{s['su_wall_all']:.1f}x |")
    print("\n### Removals that hit no center (medians over the longest stream)\n")
    print("| aggregation | server_points | removals | online CPU | online wall (report) | client "
          "| aggregation | server | offline (mean) | online + offline | call CPU | call wall |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for res in unl:
        s = summarize(res["recs"], len(res["recs"]), res)
        sums[(res["secure"], res["sp"], "all")] = s
        print(f"| {'secure' if res['secure'] else 'clear'} | {res['sp']} | {s['nc_n']} | "
              f"{fmt(s['nc_online_cpu'])} | {fmt(s['nc_online'])} | {fmt(s['nc_client'])} | "
              f"{fmt(s['nc_aggregation'])} | {fmt(s['nc_server'])} | "
              f"{fmt(s['nc_offline_mean'])} | {fmt(s['nc_e2e'])} | {fmt(s['nc_cpu'])} | "
              f"{fmt(s['nc_wall'])} |")
    adv_pos = sorted({r["position"] for res in unl for r in res["adv"]} - {None})
    print(f"\nAdversarial removals reseeded from positions {adv_pos}; retrains per setting: "
          + ", ".join(f"{'secure' if r['secure'] else 'clear'} {r['sp']} {r['n_retrains']}"
                      for r in unl))
    return sums


def print_quality(name, rows):
    print(f"\n## Loss ratio, {name} (phi_f / best of 5 centralized k-means++ runs; "
          f"{len(next(iter(rows.values())))} seeds)\n")
    print("| method | median | min | max | per seed |")
    print("|---|---|---|---|---|")
    for k, v in rows.items():
        print(f"| {k} | **{statistics.median(v):.3f}** | {min(v):.3f} | {max(v):.3f} | "
              + ", ".join(f"{x:.3f}" for x in v) + " |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="small sizes for a smoke run (n = 3000, L = 20, 20 removals, ...)")
    ap.add_argument("--parts", default="training,unlearning,quality")
    ap.add_argument("--data", default="gaussian,digits",
                    help="data sets for training and quality")
    ap.add_argument("--unlearn-data", default="gaussian")
    ap.add_argument("--repeats", type=int, default=3, help="training repeats")
    ap.add_argument("--removals", default="100,1000",
                    help="checkpoints N of the random stream (its length is the largest)")
    ap.add_argument("--secure-max-removals", type=int, default=100,
                    help="length cap of the secure streams (default %(default)s)")
    ap.add_argument("--retrains", type=int, default=5,
                    help="complete retrainings timed per stream (default %(default)s)")
    ap.add_argument("--adversarial", type=int, default=10)
    ap.add_argument("--sampling", default="points", choices=["points", "clients"])
    ap.add_argument("--server-points", default="centers,uniform",
                    help="server_points settings of the unlearning benchmark")
    ap.add_argument("--aggregation", default="secure,clear",
                    help="aggregation settings of the unlearning benchmark")
    ap.add_argument("--seeds", type=int, default=5, help="seeds for the loss ratio")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=30000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--digits-clients", type=int, default=10)
    ap.add_argument("--kprime", type=int, default=3, help="true clusters per client (K')")
    ap.add_argument("--kfed-client-clusters", type=int, default=None,
                    help="K-FED's k' (default K')")
    ap.add_argument("--n-init", type=int, default=10)
    ap.add_argument("--max-iter", type=int, default=300)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--profile", type=int, default=0,
                    help="cProfile this many non-center removals (secure, centers, Gaussian)")
    ap.add_argument("--plot", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "figures", "mufc_unlearning.png"))
    ap.add_argument("--no-plot", dest="plot", action="store_const", const=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.clients, args.repeats, args.retrains = 3000, 20, 1, 2
        args.removals, args.secure_max_removals, args.adversarial, args.seeds = "10,20", 20, 3, 2
    args.removals = sorted({int(v) for v in args.removals.split(",") if v.strip()})
    args.server_points = [v for v in args.server_points.split(",") if v]
    args.aggregation = [v for v in args.aggregation.split(",") if v]
    parts = set(args.parts.split(","))
    datas = [v for v in args.data.split(",") if v]
    run_time = Stopwatch()

    import sklearn
    print(f"# pyfkm {pyfkm.__version__} FederatedKMeans vs scikit-learn {sklearn.__version__}, "
          f"numpy {np.__version__}; 1 thread; n_init = {args.n_init}, max_iter = "
          f"{args.max_iter}, tol = {args.tol}; non-iid K' = {args.kprime}; seed {args.seed}")
    train, unl, qual, prof = {}, {}, {}, None
    with single_thread(), instrument_offline() as offline:
        if "training" in parts:
            for name in datas:
                ds = load(name, args.seed, args)
                log(f"training: {ds}")
                train[name] = (ds, bench_training(ds, args, offline))
        if "unlearning" in parts:
            for name in [v for v in args.unlearn_data.split(",") if v]:
                ds = load(name, args.seed, args)
                log(f"unlearning: {ds}")
                unl[name] = (ds, bench_unlearning(ds, args, offline))
        if "quality" in parts:
            for name in datas:
                log(f"quality: {name}")
                qual[name] = bench_quality(name, args)
        if args.profile:
            ds = load("gaussian", args.seed, args)
            log(f"profile: {args.profile} non-center removals, {ds}")
            prof = profile_noncenter(ds, args, args.profile)

    for name, (ds, rows) in train.items():
        print(f"\n# {ds}")
        print_training(name, rows)
    sums = {}
    for name, (ds, res) in unl.items():
        how = ("uniformly over all remaining points" if args.sampling == "points"
               else "as a uniform client, then a uniform remaining point of it")
        print(f"\n# {ds}; removals sampled {how}")
        sums[name] = print_unlearning(name, res, args.removals)
        if args.plot and name == "gaussian":
            if plot(res, args.plot, str(ds)):
                print(f"\nPlot: {os.path.relpath(args.plot)}")
            else:
                print("\nPlot skipped: matplotlib is not installed (pip install matplotlib)")
    for name, rows in qual.items():
        print_quality(name, rows)
    if prof is not None:
        on_text, off_text, rows, reps, off_cpu = prof
        print(f"\n## cProfile of {len(reps)} non-center removals (secure, centers, Gaussian; "
              f"median offline mask precomputation under the profiler {fmt(off_cpu)} CPU)\n")
        print("Online steps (profiled, so inflated; per removal):\n")
        print("| function | calls | cumulative |")
        print("|---|---|---|")
        for where, nc, ct in rows:
            print(f"| {where} | {nc:g} | {fmt(ct)} |")
        print(f"\nOnline part:\n\n```\n{on_text}```\n\nOffline mask precomputation (inside the "
              f"same calls):\n\n```\n{off_text}```")

    print("\nTargets:")
    for name, (ds, rows) in train.items():
        for r in rows:
            for what, key in (("secure", "secure"), ("clear", "clear")):
                v = r["sk"] / r[key]
                print(f"- training >= {TARGET_TRAIN_RATIO:g}x faster than the scikit-learn "
                      f"pipeline, {name}, {r['sp']}, pyfkm {what}: {v:.2f}x "
                      f"{'yes' if v >= TARGET_TRAIN_RATIO else '**NO**'}")
    if "gaussian" in sums:
        s = sums["gaussian"]
        for secure in (True, False):
            for N in args.removals:
                v = s.get((secure, "centers", N))
                if v is None:
                    print(f"- speed-up >= {TARGET_SPEEDUP:g}x, {N} random removals, centers, "
                          f"{'secure' if secure else 'clear'}: not run (setting not selected "
                          "or stream capped by --secure-max-removals)")
                    continue
                print(f"- speed-up >= {TARGET_SPEEDUP:g}x, {N} random removals, centers, "
                      f"{'secure' if secure else 'clear'}: online CPU {v['su_cpu']:.1f}x "
                      f"{'yes' if v['su_cpu'] >= TARGET_SPEEDUP else '**NO**'} (online wall "
                      f"{v['su_wall']:.1f}x, incl. offline masks CPU {v['su_cpu_all']:.1f}x)")
        for sp in SERVER_POINTS:
            v = s.get((True, sp, "all"))
            if v is None or v["nc_n"] == 0:
                continue
            ok = v["nc_e2e"] < TARGET_NONCENTER_S
            print(f"- non-center removal < {TARGET_NONCENTER_S * 1e3:g} ms end to end, L = "
                  f"{unl['gaussian'][0].L}, secure, {sp}: median online wall + mean offline "
                  f"{fmt(v['nc_e2e'])} {'yes' if ok else '**NO**'} (online wall "
                  f"{fmt(v['nc_online'])}, online CPU {fmt(v['nc_online_cpu'])}, offline "
                  f"{fmt(v['nc_offline_mean'])}; median call wall {fmt(v['nc_wall'])}; "
                  f"{v['nc_n']} removals)")
    for name, q in qual.items():
        kfed = [(k, statistics.median(q[k])) for k in (KFED_PAPER, KFED_ONE, KFED_BEST, KFED_K)]
        for key in [k for k in q if k.startswith("pyfkm")]:
            v = statistics.median(q[key])
            paper = (f"<= {PAPER_MUFC_RATIO} (paper's MUFC) "
                     f"{'yes' if v <= PAPER_MUFC_RATIO else '**NO**'}; "
                     if name == "gaussian" else "")
            print(f"- loss ratio ({name}), {key}: {v:.3f}; {paper}"
                  + "; ".join(f"< {k} {kv:.3f} {'yes' if v < kv else '**NO**'}"
                              for k, kv in kfed))
    print(f"\nWall time of the run: {run_time.wall:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
