"""Utility of DPFederatedKMeans's planned pipeline at equal privacy (issue 23).

Protocol of issue 7/23: features min-max scaled to [-1, 1] (as the
FastLloyd reference does; the estimator warns that such bounds are data
derived, silenced here), 2 clients (an even random split per seed), the
default ``DPFederatedKMeans(k, epsilon=eps, random_state=seed)`` against
FastLloyd as published (``init="sphere_packing"``, the same code with the
paper's start, T heuristic and update).  Reported: median NICV over the
seeds, its IQR, and the loss ratio median NICV / non-private optimum (best
of 10 scikit-learn k-means++ runs).  Mixtures: k Gaussian clusters in
[-1, 1]^d (means uniform in [-0.8, 0.8]^d, sd 0.02 (d=2) or 0.05 (d=16)),
``--per-cluster`` points per cluster, eps = 1 only.

    PYTHONPATH=. python benchmarks/compare_dp_utility.py --seeds 20 --mix-seeds 20 --per-cluster 2000 --plot

``--only real`` / ``--only mix`` runs one half; ``--plot`` writes
benchmarks/figures/dp_utility.png (matplotlib).  ``--data iris --eps 0.5
--seeds 400`` runs one cell (comma lists for several) over many seeds, with
the bootstrap standard error of each median ("se").
"""
import argparse
import os
import time
import warnings

import numpy as np
from sklearn import datasets
from sklearn.cluster import KMeans

from pyfkm.dp import DPFederatedKMeans

EPSILONS = (0.1, 0.25, 0.5, 1.0)
REAL = {"iris": (datasets.load_iris, 3), "wine": (datasets.load_wine, 3),
        "breast_cancer": (datasets.load_breast_cancer, 2), "digits": (datasets.load_digits, 10)}
REFERENCE = {"iris": (1.121, 0.576, 0.370, 0.302), "wine": (4.614, 3.103, 2.241, 1.747),
             "breast_cancer": (4.225, 2.848, 2.574, 2.412)}
BEFORE = {"iris": (1.032, 0.508, 0.338, 0.342), "wine": (4.225, 3.003, 2.282, 1.796),
          "breast_cancer": (4.194, 2.804, 2.571, 2.487), "digits": (20.16, 19.24, 17.45, 15.99)}


def scaled(X):
    lo, hi = X.min(0), X.max(0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return np.clip(2 * (X - lo) / span - 1, -1, 1)


def split(X, seed):
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    h = X.shape[0] // 2
    return [X[perm[:h]], X[perm[h:]]]


def optimum(X, k):
    return KMeans(k, n_init=10, random_state=0).fit(X).inertia_ / X.shape[0]


def mixture(k, d, per, seed=1234):
    rng = np.random.default_rng(seed)
    means = rng.uniform(-0.8, 0.8, (k, d))
    sd = 0.02 if d == 2 else 0.05
    X = means[np.repeat(np.arange(k), per)] + rng.normal(0, sd, (k * per, d))
    return np.clip(X, -1, 1)


def nicvs(make, X, seeds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # min-max scaled: data-derived bounds
        return np.array([make(s).fit(split(X, s)).nicv(X) for s in seeds])


def summary(v):
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    return med, q3 - q1


def median_se(v, n_boot=500):
    """Bootstrap standard error of the median of ``v`` (fixed resampling seed)."""
    rng = np.random.default_rng(0)
    return float(np.std([np.median(rng.choice(v, len(v))) for _ in range(n_boot)]))


def run_cells(names, epsilons, n_seeds):
    """Median NICV (and its standard error) of the default on chosen cells."""
    seeds = range(n_seeds)
    for name in names:
        load, k = REAL[name]
        X = scaled(load().data.astype(np.float64))
        for e in epsilons:
            v = nicvs(lambda s: DPFederatedKMeans(k, epsilon=e, random_state=s), X, seeds)
            ref = REFERENCE.get(name, (None,) * 4)[EPSILONS.index(e)] if e in EPSILONS \
                else None
            print(f"{name} eps={e}: median {np.median(v):.4f} (se {median_se(v):.4f}, "
                  f"IQR {summary(v)[1]:.3f}) over {n_seeds} seeds"
                  + ("" if ref is None else f"; reference FastLloyd {ref:.3f}"), flush=True)


def run_real(n_seeds):
    seeds = range(n_seeds)
    out = {}
    for name, (load, k) in REAL.items():
        X = scaled(load().data.astype(np.float64))
        opt = optimum(X, k)
        row = {"opt": opt, "new": [], "fl": []}
        for e in EPSILONS:
            row["new"].append(summary(nicvs(lambda s: DPFederatedKMeans(
                k, epsilon=e, random_state=s), X, seeds)))
            row["fl"].append(summary(nicvs(lambda s: DPFederatedKMeans(
                k, epsilon=e, init="sphere_packing", random_state=s), X, seeds)))
        out[name] = row
        print(f"\n{name} (n={X.shape[0]}, d={X.shape[1]}, k={k}; optimum NICV {opt:.3f})")
        print(f"  {'':<24}" + "".join(f"eps={e:<13}" for e in EPSILONS))
        for label, vals in (("planned (default)", row["new"]), ("FastLloyd (sphere)", row["fl"])):
            print(f"  {label:<24}" + "".join(f"{m:.3f} ({iqr:.3f})   " for m, iqr in vals))
        print(f"  {'loss ratio planned':<24}" + "".join(f"{m / opt:<17.2f}" for m, _ in row["new"]))
        for label, ref in (("reference FastLloyd", REFERENCE.get(name)),
                           ("before (RESULTS P2)", BEFORE.get(name))):
            if ref:
                print(f"  {label:<24}" + "".join(f"{v:<17.3f}" for v in ref))
        if name in REFERENCE:
            r = [m / v for (m, _), v in zip(row["new"], REFERENCE[name])]
            print(f"  {'planned / reference':<24}" + "".join(f"{v:<17.3f}" for v in r))
    if all(n in out for n in REFERENCE):
        r = [m / v for n in REFERENCE for (m, _), v in zip(out[n]["new"], REFERENCE[n])]
        print(f"\nmean ratio planned / reference over {len(r)} cells: {np.mean(r):.3f}; "
              f"max {np.max(r):.3f}")
    return out


def run_mix(n_seeds, per):
    seeds = range(n_seeds)
    print(f"\nmixtures, eps = 1, {per} points per cluster, {n_seeds} seeds")
    print(f"  {'k':>4} {'d':>3} {'n':>7}  {'optimum':>8}  {'planned med (IQR)':>20}  ratio"
          f"  {'FastLloyd med':>13}  ratio")
    out = {}
    for d in (2, 16):
        for k in (15, 50, 100):
            X = mixture(k, d, per)
            t = time.perf_counter()
            opt = optimum(X, k)
            new = summary(nicvs(lambda s: DPFederatedKMeans(k, epsilon=1.0, random_state=s),
                                X, seeds))
            fl = summary(nicvs(lambda s: DPFederatedKMeans(
                k, epsilon=1.0, init="sphere_packing", random_state=s), X, seeds))
            out[(k, d)] = (opt, new, fl)
            print(f"  {k:>4} {d:>3} {X.shape[0]:>7}  {opt:>8.5f}  {new[0]:>9.5f} ({new[1]:.5f})"
                  f"  {new[0] / opt:>5.2f}  {fl[0]:>13.5f}  {fl[0] / opt:>5.2f}"
                  f"   [{time.perf_counter() - t:.0f} s]", flush=True)
    return out


def save_plot(real):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(real), figsize=(4.2 * len(real), 3.6))
    for ax, (name, row) in zip(axes, real.items()):
        med = [m for m, _ in row["new"]]
        iqr = [i / 2 for _, i in row["new"]]
        ax.errorbar(EPSILONS, med, yerr=iqr, fmt="o-", color="C0", label="pyfkm planned (default)")
        ax.plot(EPSILONS, [m for m, _ in row["fl"]], "^-", color="C2", label="pyfkm FastLloyd")
        if name in REFERENCE:
            ax.plot(EPSILONS, REFERENCE[name], "s--", color="C1", label="reference FastLloyd")
        ax.axhline(row["opt"], color="k", lw=0.8, ls=":", label="non-private optimum")
        ax.set_xscale("log")
        ax.set_xticks(EPSILONS)
        ax.set_xticklabels([str(e) for e in EPSILONS])
        ax.set_title(name)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("median NICV (bar: IQR)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "figures", "dp_utility.png")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"\nplot: {out}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--mix-seeds", type=int, default=20)
    p.add_argument("--per-cluster", type=int, default=2000)
    p.add_argument("--only", choices=("real", "mix"))
    p.add_argument("--plot", action="store_true")
    p.add_argument("--data", help="comma list of data sets: only these cells, default only")
    p.add_argument("--eps", help="comma list of epsilons (with --data; default all four)")
    a = p.parse_args()
    if a.data:
        run_cells(a.data.split(","), [float(e) for e in a.eps.split(",")] if a.eps
                  else list(EPSILONS), a.seeds)
        raise SystemExit
    real = run_real(a.seeds) if a.only != "mix" else None
    if a.only != "real":
        run_mix(a.mix_seeds, a.per_cluster)
    if a.plot and real:
        save_plot(real)
