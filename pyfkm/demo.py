"""``python -m pyfkm demo``: k-means and exact removals on built-in synthetic data."""
import time

import numpy as np

from .datasets import make_blobs
from .kmeans import KMeans
from .seeding import RemovableSeeding, kmeans_plusplus


def _fmt_s(t):
    return f"{t * 1e3:.2f} ms" if t < 1 else f"{t:.2f} s"


def run_demo(seed=0, n_samples=200_000, n_features=10, n_clusters=10, n_removals=1_000,
             out=print):
    """Fit k-means on synthetic blobs, then remove points one by one.

    Prints what it did, the clustering quality and the timings.
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
    return {"fit_time": t_fit, "inertia_ratio": km.inertia_ / ideal, "agreement": agree,
            "reseeds": reseeds, "median_removal_s": float(np.median(t_remove))}


def _label_agreement(y_true, y_pred, k):
    """Fraction of points whose predicted cluster maps to their true blob
    (each predicted cluster mapped to its majority true blob)."""
    table = np.zeros((k, int(y_true.max()) + 1), dtype=np.int64)
    np.add.at(table, (y_pred, y_true), 1)
    return float(table.max(axis=1).sum() / y_true.size)
