"""``python -m pyfkm demo``: k-means and exact removals on built-in synthetic data."""
import time

import numpy as np

from .core import KMeans, RemovableSeeding, kmeans_plusplus
from .datasets import make_blobs, make_gaussian_mixture, split_non_iid
from .metrics import federated_loss_ratio
from .mufc import FederatedKMeans


def _fmt_s(t):
    return f"{t * 1e3:.2f} ms" if t < 1 else f"{t:.2f} s"


def run_demo(seed=0, n_samples=200_000, n_features=10, n_clusters=10, n_removals=1_000,
             out=print, federated=None, progress=False):
    """Fit k-means on synthetic blobs, then remove points one by one.

    Prints what it did, the clustering quality and the timings; the last
    section fits federated k-means with secure aggregation and unlearns
    (``federated``: keyword arguments of its size, e.g. ``n_clients``).
    ``progress`` shows progress bars of the secure rounds (on stderr).
    """
    rng = np.random.default_rng(seed)
    out(f"pyfkm demo (seed {seed})")
    out(f"data: {n_samples:,} points, {n_features} features, {n_clusters} Gaussian blobs")
    X, y, true_centers = make_blobs(n_samples, n_features, n_clusters, cluster_std=1.5,
                                    random_state=rng)

    t = time.perf_counter()
    km = KMeans(n_clusters, n_init=10, random_state=rng).fit(X)
    t_fit = time.perf_counter() - t
    # Quality: inertia against the ideal clustering (true blob centers), and
    # agreement of labels with the true blobs up to relabelling.
    ideal = float(((X - true_centers[y]) ** 2).sum())
    agree = _label_agreement(y, km.labels_, n_clusters)
    out("")
    out("1. KMeans (k-means++ init, Lloyd, best of 10)")
    out(f"   fit time               {_fmt_s(t_fit)}  ({km.n_iter_} Lloyd iterations in the best run)")
    out(f"   inertia / ideal        {km.inertia_ / ideal:.4f}   (1.0 = the true blob centers)")
    out(f"   label agreement        {agree:.2%} of points in their true blob")

    t = time.perf_counter()
    _, ids = kmeans_plusplus(X, n_clusters, random_state=rng)
    t_seed = time.perf_counter() - t
    out("")
    out("2. k-means++ seeding alone")
    out(f"   seeding time           {_fmt_s(t_seed)}")

    t = time.perf_counter()
    s = RemovableSeeding(X, n_clusters, random_state=rng)
    t_build = time.perf_counter() - t
    order = rng.permutation(n_samples)[:n_removals]
    reseeds, t_remove = 0, []
    for i in order:
        t = time.perf_counter()
        rep = s.remove(int(i))
        t_remove.append(time.perf_counter() - t)
        reseeds += rep.reseeded
    t_remove = np.array(t_remove)
    out("")
    out(f"3. Exact unlearning: {n_removals:,} single-point removals from a RemovableSeeding")
    out(f"   initial seeding        {_fmt_s(t_build)}")
    out(f"   removals that hit a center and reseeded: {reseeds}")
    out(f"   time per removal       median {np.median(t_remove) * 1e6:.1f} us, "
        f"total {_fmt_s(t_remove.sum())}")
    out(f"   retraining instead     {_fmt_s(t_build * n_removals)} "
        f"(one seeding per removal): {t_build * n_removals / max(t_remove.sum(), 1e-12):,.0f}x slower")
    # A removal that hits a center: seeding resumes from the kept prefix.
    pos = n_clusters - 2
    t = time.perf_counter()
    rep = s.remove(int(s.center_ids_[pos]))
    t_center = time.perf_counter() - t
    out(f"   removing center #{pos} itself: reseeded from position {rep.position} "
        f"in {_fmt_s(t_center)} (a fresh seeding took {_fmt_s(t_build)})")
    sizes = s.cluster_sizes_
    out(f"   remaining points       {s.n_active_:,}; cluster sizes sum to {int(sizes.sum()):,}")
    seed_inertia = s.inertia()
    out(f"   seeding inertia / ideal {seed_inertia / ideal:.3f} (seeding alone, no Lloyd)")
    out("")
    out("Every removal leaves the centers distributed exactly as a fresh k-means++ run "
        "on the remaining points (MUFC, Pan et al. 2023, Alg. 3).")
    fed = _federated(rng, out, progress=progress, **(federated or {}))
    return {"fit_time": t_fit, "inertia_ratio": km.inertia_ / ideal, "agreement": agree,
            "reseeds": reseeds, "median_removal_s": float(np.median(t_remove)), **fed}


def _federated(rng, out, n_samples=10_000, n_features=10, n_clusters=10, n_clients=20,
               clusters_per_client=3, n_removals=20, progress=False):
    """Section 4: federated fit with secure aggregation, then unlearning."""
    X, y, _ = make_gaussian_mixture(n_samples, n_features, n_clusters, random_state=rng)
    parts = split_non_iid(X, y, n_clients, clusters_per_client, random_state=rng)
    clients = [X[p] for p in parts]
    out("")
    out(f"4. Federated k-means with secure aggregation (MUFC): {n_clients} clients, "
        f"{n_samples:,} points in [-1/2, 1/2]^{n_features}, each client holding "
        f"{clusters_per_client} of {n_clusters} Gaussian clusters")
    t = time.perf_counter()
    fkm = FederatedKMeans(n_clusters, server_points="centers", random_state=rng,
                          progress=progress).fit(clients)
    t_fit = time.perf_counter() - t
    ratio = federated_loss_ratio(fkm, clients, random_state=0)
    out(f"   fit time               {_fmt_s(t_fit)}  (clients {_fmt_s(fkm.fit_seconds_['clients'])}, "
        f"secure aggregation {_fmt_s(fkm.fit_seconds_['aggregation'])}, "
        f"server {_fmt_s(fkm.fit_seconds_['server'])})")
    out(f"   bytes sent             {fkm.bytes_sent_:,} in the round "
        f"({fkm.bytes_sent_ // n_clients:,} per client: key shares, masked input, unmasking)")
    out(f"   secure aggregation     keys from the OS, threshold "
        f"{fkm.threshold_} of {n_clients} clients, dropouts recovered "
        "(docs/threat_model.md)")
    out(f"   loss ratio             {ratio:.3f}  (federated objective / best of 5 "
        "centralized k-means++ runs)")
    online, offline, reseeded = [], [], 0
    for _ in range(n_removals):
        c = int(rng.integers(n_clients))
        alive = np.flatnonzero(~fkm.removed_[c])
        rep = fkm.remove(c, int(rng.choice(alive)))
        online.append(rep.client_seconds + rep.aggregation_seconds + rep.server_seconds)
        offline.append(rep.offline_seconds)
        reseeded += rep.reseeded
    rep_c = fkm.remove(0, int(fkm.client_center_rows_[0][0]))
    rep_l = fkm.remove_clients([n_clients - 1])
    out(f"   {n_removals} random single-point removals: {reseeded} reseeded; online time "
        f"median {_fmt_s(float(np.median(online)))} (client + secure round + server), "
        f"offline {_fmt_s(float(np.mean(offline)))} per removal (the next round's key "
        "shares and masks, prepared ahead: no data involved)")
    out(f"   removing a client's first center: reseeded from position {rep_c.position}, "
        f"online {_fmt_s(rep_c.client_seconds + rep_c.aggregation_seconds + rep_c.server_seconds)}")
    out(f"   client {n_clients - 1} leaves: secure round over {len(fkm.participants_)} clients, "
        f"online {_fmt_s(rep_l.aggregation_seconds + rep_l.server_seconds)}")
    t = time.perf_counter()
    FederatedKMeans(n_clusters, server_points="centers", random_state=rng).fit(
        [X_l[~gone] for X_l, gone in zip(clients[:-1], fkm.removed_[:-1])])
    t_refit = time.perf_counter() - t
    out(f"   retraining from scratch instead: {_fmt_s(t_refit)} per removal")
    out("   After every removal the whole model is distributed exactly as a fit on the "
        "remaining data.")
    return {"fed_loss_ratio": ratio, "fed_fit_time": t_fit,
            "fed_median_online_s": float(np.median(online))}


def _label_agreement(y_true, y_pred, k):
    """Fraction of points whose predicted cluster maps to their true blob
    (each predicted cluster mapped to its majority true blob)."""
    table = np.zeros((k, int(y_true.max()) + 1), dtype=np.int64)
    np.add.at(table, (y_pred, y_true), 1)
    return float(table.max(axis=1).sum() / y_true.size)
