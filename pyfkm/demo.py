"""``pyfkm demo``: every system of pyfkm on built-in synthetic data, timed.

Six short sections, each fitting one system and exercising what makes it
special, then a summary table (system, what it did, time, a quality
number):

1. :class:`~pyfkm.KMeans` (k-means++ and Lloyd) and the
   :class:`~pyfkm.RemovableSeeding` that unlearns points exactly;
2. :class:`~pyfkm.FederatedKMeans` (MUFC): a federated fit with secure
   aggregation, point removals and a client leaving;
3. :class:`~pyfkm.QKMeans` and :class:`~pyfkm.DCKMeans`: deletion-efficient
   centralized k-means (Ginart et al.);
4. :class:`~pyfkm.DPFederatedKMeans` (FastLloyd): differentially private
   federated k-means;
5. :class:`~pyfkm.KZCenter` and :class:`~pyfkm.DistributedKZCenter`:
   clustering with outliers.

:func:`run_demo` is what ``pyfkm demo`` runs; ``quick=True`` (``pyfkm demo
--quick``) uses small data and runs in a few seconds.  Only the public API
is used, so the demo doubles as a tour of it.
"""
import math
import time

import numpy as np

from ._validation import check_int
from .core import KMeans, RemovableSeeding, kmeans_plusplus
from .datasets import make_blobs, make_gaussian_mixture, split_iid, split_non_iid
from .deletion import DCKMeans, QKMeans
from .dp import DPFederatedKMeans
from .metrics import federated_loss_ratio
from .mufc import FederatedKMeans
from .outliers import DistributedKZCenter, KZCenter, make_noisy_blobs

__all__ = ["run_demo"]

# Sizes of each section: the default run takes well under a minute on two
# cores, the quick one a few seconds.
SIZES = {
    "full": dict(kmeans=(100_000, 10, 10), n_removals=1_000,
                 federated=(10_000, 10, 10, 20), fed_removals=20,
                 deletion=(20_000, 10, 5), n_deletions=100,
                 dp=(20_000, 2, 5, 10), outliers=(2_000, 5, 8, 40, 8)),
    "quick": dict(kmeans=(5_000, 5, 5), n_removals=100,
                  federated=(2_000, 5, 5, 6), fed_removals=5,
                  deletion=(2_000, 5, 5), n_deletions=20,
                  dp=(4_000, 2, 3, 4), outliers=(600, 3, 4, 12, 4)),
}


def _fmt_s(t):
    """'12.3 ms' below a second, '1.23 s' above."""
    return f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"


class _Timer:
    """``with _Timer() as t: ...`` then ``t.s`` is the wall time in seconds."""

    def __enter__(self):
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.s = time.perf_counter() - self._t0
        return False


def run_demo(seed=0, *, quick=False, out=print, progress=False):
    """Run every system of pyfkm on synthetic data and print what it did.

    Parameters
    ----------
    seed : int, default=0
        Seeds the data and the algorithms (an int >= 0).  Key material and
        DP noise never come from it (they come from the operating system).
    quick : bool, default=False
        Small data: a few seconds instead of a few tens of seconds.
    out : callable, default=print
        Receives each line of the report.
    progress : bool or callable, default=False
        Progress of the federated secure rounds (:mod:`pyfkm._progress`;
        a bar on stderr for rounds longer than a second).

    Returns
    -------
    summary : dict
        ``rows``: one dict per line of the summary table (``system``,
        ``what``, ``seconds``, ``quality``); ``total_seconds``; and the
        main numbers by name (``inertia_ratio``, ``agreement``,
        ``fed_loss_ratio``, ``dp_nicv_ratio``, ...).

    Raises
    ------
    InvalidInputError
        If ``seed`` is not an int >= 0.

    Examples
    --------
    >>> lines = []
    >>> summary = run_demo(seed=1, quick=True, out=lines.append)
    >>> [row["system"] for row in summary["rows"]][:3]
    ['KMeans', 'RemovableSeeding', 'FederatedKMeans']
    >>> lines[-1].startswith("Every removal above")
    True
    """
    seed = check_int(seed, "seed", 0)
    size = SIZES["quick" if quick else "full"]
    rng = np.random.default_rng(seed)
    rows, numbers = [], {}
    t_all = time.perf_counter()
    out(f"pyfkm demo (seed {seed}{', quick' if quick else ''}): every system on synthetic "
        "data, timed")
    for section in (_kmeans_section, _federated_section, _deletion_section, _dp_section,
                    _outliers_section):
        r, nums = section(rng, out, size, progress)
        rows += r
        numbers.update(nums)
    total = time.perf_counter() - t_all
    out("")
    _summary_table(rows, total, out)
    out("")
    out("Every removal above leaves its model exactly as a fit on the remaining data "
        "(in distribution for MUFC and RemovableSeeding, bit for bit for QKMeans and "
        "DCKMeans).")
    return {"rows": rows, "total_seconds": total, **numbers}


def _times(x):
    """A speed-up factor: '37x', '2.5x'."""
    return f"{x:,.0f}x" if x >= 10 else f"{x:.1f}x"


def _faster(x, than):
    """'2.5x faster than retraining', or for a factor below 1 '1.7x slower
    than retraining' (never '0.6x faster').

    >>> _faster(37.2, "retraining"), _faster(0.6, "retraining")
    ('37x faster than retraining', '1.7x slower than retraining')
    """
    if x >= 1:
        return f"{_times(x)} faster than {than}"
    return f"{_times(1 / max(x, 1e-12))} slower than {than}"


def _slower(x):
    """The other side's cost: 'retraining ...: 37x slower' (x >= 1), or
    '1.7x faster' when x < 1."""
    return f"{_times(x)} slower" if x >= 1 else f"{_times(1 / max(x, 1e-12))} faster"


def _row(system, what, seconds, quality):
    return {"system": system, "what": what, "seconds": float(seconds), "quality": quality}


def _summary_table(rows, total, out):
    widths = [max(len(h), *(len(r[k]) for r in rows))
              for h, k in (("system", "system"), ("what", "what"))]
    out("Summary")
    head = f"  {'system':<{widths[0]}}  {'what':<{widths[1]}}  {'time':>9}  quality"
    out(head)
    out("  " + "-" * (len(head) - 2 + 24))
    for r in rows:
        out(f"  {r['system']:<{widths[0]}}  {r['what']:<{widths[1]}}  "
            f"{_fmt_s(r['seconds']):>9}  {r['quality']}")
    out(f"  total {_fmt_s(total)}")


# -- 1. k-means, seeding and exact unlearning --------------------------------------

def _kmeans_section(rng, out, size, progress):
    n, d, k = size["kmeans"]
    n_removals = size["n_removals"]
    out("")
    out(f"1. KMeans and exact unlearning of the seeding: {n:,} points, {d} features, "
        f"{k} Gaussian blobs")
    X, y, true_centers = make_blobs(n, d, k, cluster_std=1.5, random_state=rng)
    with _Timer() as t_fit:
        km = KMeans(k, n_init=10, random_state=rng).fit(X)
    # quality: inertia against the ideal clustering (the true blob centers)
    # and agreement of the labels with the true blobs up to relabelling
    ideal = float(((X - true_centers[y]) ** 2).sum())
    ratio = km.inertia_ / ideal
    agree = _label_agreement(y, km.labels_, k)
    out(f"   KMeans (k-means++, Lloyd, best of 10): {_fmt_s(t_fit.s)}, inertia / ideal "
        f"{ratio:.4f} (1 = the true blob centers), {agree:.1%} of points in their blob")
    with _Timer() as t_pp:
        kmeans_plusplus(X, k, random_state=rng)
    with _Timer() as t_build:
        s = RemovableSeeding(X, k, random_state=rng)
    order = rng.permutation(n)[:n_removals]
    reseeds, times = 0, []
    for i in order:
        t0 = time.perf_counter()
        rep = s.remove(int(i))
        times.append(time.perf_counter() - t0)
        reseeds += rep.reseeded
    t_remove = float(np.sum(times))
    speedup = t_build.s * n_removals / max(t_remove, 1e-12)
    out(f"   RemovableSeeding: seeding {_fmt_s(t_build.s)} (plain k-means++ "
        f"{_fmt_s(t_pp.s)}); {n_removals:,} single-point removals in {_fmt_s(t_remove)} "
        f"(median {np.median(times) * 1e6:.0f} us), {reseeds} hit a center and reseeded")
    out(f"   reseeding from scratch after each removal would take "
        f"{_fmt_s(t_build.s * n_removals)}: {_slower(speedup)}")
    pos = k - 2
    with _Timer() as t_c:
        rep = s.remove(int(s.center_ids_[pos]))
    out(f"   removing center #{pos} itself: reseeded from position {rep.position} in "
        f"{_fmt_s(t_c.s)}; {s.n_active_:,} points remain")
    rows = [_row("KMeans", f"fit {n:,} x {d}, k={k}, best of 10", t_fit.s,
                 f"inertia/ideal {ratio:.3f}"),
            _row("RemovableSeeding", f"{n_removals:,} exact removals", t_remove,
                 _faster(speedup, "reseeding"))]
    return rows, {"fit_time": t_fit.s, "inertia_ratio": ratio, "agreement": agree,
                  "reseeds": reseeds, "median_removal_s": float(np.median(times))}


# -- 2. federated k-means with secure aggregation and unlearning (MUFC) ------------

def _federated_section(rng, out, size, progress):
    n, d, k, L = size["federated"]
    n_removals = size["fed_removals"]
    X, y, _ = make_gaussian_mixture(n, d, k, random_state=rng)
    parts = split_non_iid(X, y, L, 3, random_state=rng)
    clients = [X[p] for p in parts]
    out("")
    out(f"2. FederatedKMeans (MUFC) with secure aggregation: {L} clients, {n:,} points in "
        f"[-1/2, 1/2]^{d}, each client holding 3 of {k} Gaussian clusters")
    with _Timer() as t_fit:
        fkm = FederatedKMeans(k, server_points="centers", random_state=rng,
                              progress=progress).fit(clients)
    ratio = federated_loss_ratio(fkm, clients, random_state=0)
    fs = fkm.fit_seconds_
    out(f"   fit {_fmt_s(t_fit.s)} (clients {_fmt_s(fs['clients'])}, secure aggregation "
        f"{_fmt_s(fs['aggregation'])}, server {_fmt_s(fs['server'])}); "
        f"{fkm.bytes_sent_:,} bytes sent")
    out(f"   keys from the OS, threshold {fkm.threshold_} of {L} clients "
        "(docs/threat_model.md); loss ratio "
        f"{ratio:.3f} (federated objective / best centralized k-means++)")
    online, reseeded = [], 0
    t0 = time.perf_counter()
    for _ in range(n_removals):
        c = int(rng.choice(fkm.participants_))
        alive = np.flatnonzero(~fkm.removed_[c])
        rep = fkm.remove(c, int(rng.choice(alive)))
        online.append(rep.client_seconds + rep.aggregation_seconds + rep.server_seconds)
        reseeded += rep.reseeded
    rep_c = fkm.remove(0, int(fkm.client_center_rows_[0][0]))
    rep_l = fkm.remove_clients([L - 1])
    t_unlearn = time.perf_counter() - t0
    out(f"   {n_removals} random point removals: {reseeded} reseeded, online time median "
        f"{_fmt_s(float(np.median(online)))} (client + secure round + server)")
    out(f"   removing client 0's first center: reseeded from position {rep_c.position}; "
        f"client {L - 1} leaves: a new secure round over {len(fkm.participants_)} clients "
        f"({_fmt_s(rep_l.aggregation_seconds + rep_l.server_seconds)})")
    with _Timer() as t_refit:
        FederatedKMeans(k, server_points="centers", random_state=rng).fit(
            [X_l[~gone] for X_l, gone in zip(clients[:-1], fkm.removed_[:-1])])
    per_removal = t_unlearn / (n_removals + 2)
    speedup = t_refit.s / max(float(np.median(online)), 1e-12)
    out(f"   retraining from scratch instead: {_fmt_s(t_refit.s)} per removal, "
        f"{_times(speedup)} the median online time of an unlearning; with its offline "
        f"work (the next round's key shares and masks, prepared ahead, no data involved) "
        f"an unlearning took {_fmt_s(per_removal)} on average")
    rows = [_row("FederatedKMeans", f"fit, {L} clients, secure aggregation", t_fit.s,
                 f"loss ratio {ratio:.3f}"),
            _row("FederatedKMeans", f"{n_removals + 1} removals + 1 client leaves", t_unlearn,
                 f"online {_faster(speedup, 'retraining')}")]
    return rows, {"fed_loss_ratio": ratio, "fed_fit_time": t_fit.s,
                  "fed_median_online_s": float(np.median(online)),
                  "fed_speedup": speedup}


# -- 3. deletion-efficient centralized k-means (Ginart et al.) ---------------------

def _deletion_section(rng, out, size, progress):
    n, d, k = size["deletion"]
    n_del = size["n_deletions"]
    X, _, _ = make_blobs(n, d, k, cluster_std=1.0, center_box=(-5.0, 5.0), random_state=rng)
    ids = rng.permutation(n)[:n_del]
    out("")
    out(f"3. Deletion-efficient k-means (Ginart et al.): {n:,} points, {d} features, k={k}; "
        f"{n_del} deletions one at a time")
    rows, numbers = [], {}
    for cls, kw in ((QKMeans, {}), (DCKMeans, {})):
        name = cls.__name__
        with _Timer() as t_fit:
            model = cls(k, random_state=rng.integers(2 ** 63), **kw).fit(X)
        retrained, t0 = 0, time.perf_counter()
        for i in ids:
            retrained += model.remove(int(i)).retrained
        t_del = time.perf_counter() - t0
        speedup = t_fit.s * n_del / max(t_del, 1e-12)
        what = ("certified without retraining" if cls is QKMeans
                else "recomputed one leaf's path")
        n_what = n_del - retrained if cls is QKMeans else retrained
        out(f"   {name}: fit {_fmt_s(t_fit.s)}; {n_del} deletions in {_fmt_s(t_del)} "
            f"({n_what} {what}); retraining each time: {_slower(speedup)}")
        rows.append(_row(name, f"fit + {n_del} exact deletions", t_fit.s + t_del,
                         _faster(speedup, "retraining")))
        numbers[f"{name.lower()}_speedup"] = speedup
    return rows, numbers


# -- 4. differentially private federated k-means (FastLloyd) -----------------------

def _dp_section(rng, out, size, progress):
    n, d, k, L = size["dp"]
    eps = 1.0
    X, _, _ = make_blobs(n, d, k, cluster_std=0.15, center_box=(-0.6, 0.6),
                         random_state=rng)
    X = np.clip(X, -1.0, 1.0)
    clients = [X[p] for p in split_iid(X, L, random_state=rng)]
    out("")
    out(f"4. DPFederatedKMeans (FastLloyd): {L} clients, {n:,} points in [-1, 1]^{d}, "
        f"k={k}, epsilon={eps:g} for the whole fit")
    key = rng.integers(2 ** 63)           # the same data-independent init for both
    with _Timer() as t_fit:
        dp = DPFederatedKMeans(k, epsilon=eps, random_state=key).fit(clients)
    free = DPFederatedKMeans(k, epsilon=math.inf, random_state=key).fit(clients)
    best = KMeans(k, n_init=10, random_state=rng).fit(X)
    nicv, nicv_free, nicv_best = dp.nicv(X), free.nicv(X), best.inertia_ / n
    p = dp.privacy_
    out(f"   private fit {_fmt_s(t_fit.s)}: {dp.n_iter_} iterations, "
        f"(epsilon, delta) = ({p['epsilon_spent']:g}, {p['delta']:.2g}); the clients add "
        "the noise under masked secure aggregation")
    out(f"   NICV (objective / n) {nicv:.4g}; the same algorithm without noise "
        f"{nicv_free:.4g} ({nicv / nicv_free:.2f}x: the cost of privacy); centralized "
        f"KMeans, best of 10, {nicv_best:.4g}")
    rows = [_row("DPFederatedKMeans", f"fit, {L} clients, epsilon={eps:g}", t_fit.s,
                 f"NICV {nicv / nicv_free:.2f}x noise-free")]
    return rows, {"dp_nicv_ratio": nicv / nicv_free, "dp_kmeans_ratio": nicv / nicv_best}


# -- 5. clustering with outliers (Charikar et al.; Guo & Li) -----------------------

def _outliers_section(rng, out, size, progress):
    n, d, k, z, m = size["outliers"]
    X, noise, _ = make_noisy_blobs(n, d, k, z, random_state=rng)
    out("")
    out(f"5. (k, z)-center with outliers: {n:,} points, {d} features, k={k}, "
        f"z={z} planted uniform outliers")
    rows, numbers = [], {}
    with _Timer() as t_c:
        kz = KZCenter(k, z).fit(X)
    found = kz.predict(X) < 0
    out(f"   KZCenter (centralized greedy): {_fmt_s(t_c.s)}, radius {kz.radius_:.3g}, "
        f"{int(found.sum())} declared outliers, {int((found & noise).sum())} of them planted")
    rows.append(_row("KZCenter", f"{n:,} points, k={k}, z={z}", t_c.s,
                     f"{int((found & noise).sum())}/{z} outliers found"))
    parts = np.array_split(rng.permutation(n), m)
    with _Timer() as t_d:
        dkz = DistributedKZCenter(k, z, random_state=rng.integers(2 ** 63)).fit(
            [X[p] for p in parts])
    found_d = np.zeros(n, dtype=bool)
    for p, lab in zip(parts, dkz.labels_):
        found_d[p] = lab < 0
    sent = dkz.communication_.total
    out(f"   DistributedKZCenter ({m} machines): {_fmt_s(t_d.s)}, radius {dkz.radius_:.3g} "
        f"({dkz.radius_ / kz.radius_:.2f}x the centralized), {int(found_d.sum())} declared "
        f"outliers ({int((found_d & noise).sum())} planted), {sent:,} numbers sent")
    rows.append(_row("DistributedKZCenter", f"{m} machines, k={k}, z={z}", t_d.s,
                     f"radius {dkz.radius_ / kz.radius_:.2f}x centralized"))
    numbers["kz_recall"] = float((found & noise).sum() / max(z, 1))
    numbers["dkz_radius_ratio"] = float(dkz.radius_ / kz.radius_)
    return rows, numbers


def _label_agreement(y_true, y_pred, k):
    """Fraction of points whose predicted cluster maps to their true blob
    (each predicted cluster mapped to its majority true blob)."""
    table = np.zeros((k, int(y_true.max()) + 1), dtype=np.int64)
    np.add.at(table, (y_pred, y_true), 1)
    return float(table.max(axis=1).sum() / y_true.size)
