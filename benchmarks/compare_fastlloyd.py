"""Utility of DPFederatedKMeans (FastLloyd) against the reference medians.

Protocol of issue 7: for each dataset, features min-max scaled to [-1, 1];
for each of 20 seeds the points are split evenly at random between 2
clients and a model is fitted with ``random_state=seed``; the score is the
NICV (k-means objective / n) of the whole dataset on the fitted centers;
the table shows the median over seeds.  "pyfkm FastLloyd" is the paper's
algorithm (``init="sphere_packing"``); "pyfkm planned" is the default
``DPFederatedKMeans(k, epsilon=eps)`` of issue 23 (private initialisation,
round rule, damped updates; compare_dp_utility.py has its IQRs and loss
ratios).  The min-max scaling makes the bounds data derived, which the
estimator warns about (silenced here).  Baselines in the same framework:
SuLloyd (Laplace), GLloyd (Gaussian, no radius) and the non-private
federated Lloyd (same sphere-packing start, run to convergence).

    PYTHONPATH=. python benchmarks/compare_fastlloyd.py [--seeds 20] [--no-plot]

The reference medians are the issue's measurements of the public FastLloyd
code with this protocol (digits has none).
"""
import argparse
import os
import warnings

import numpy as np
from _timing import Stopwatch
from sklearn import datasets

from pyfkm.dp import DPFederatedKMeans, FederatedLloyd, GLloyd, SuLloyd

EPSILONS = (0.1, 0.25, 0.5, 1.0)
DATASETS = {"iris": (datasets.load_iris, 3), "wine": (datasets.load_wine, 3),
            "breast_cancer": (datasets.load_breast_cancer, 2), "digits": (datasets.load_digits, 10)}
REFERENCE = {"iris": (1.121, 0.576, 0.370, 0.302), "wine": (4.614, 3.103, 2.241, 1.747),
             "breast_cancer": (4.225, 2.848, 2.574, 2.412)}
DIFFPRIVLIB_EPS1 = {"iris": 1.10, "wine": 4.24, "breast_cancer": 5.77}   # mean NICV, issue 7


def scaled(name):
    X = DATASETS[name][0]().data.astype(np.float64)
    lo, hi = X.min(0), X.max(0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return np.clip(2 * (X - lo) / span - 1, -1, 1)


def split(X, seed):
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    h = X.shape[0] // 2
    return [X[perm[:h]], X[perm[h:]]]


def median_nicv(make, X, seeds):
    vals = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # min-max scaled: data-derived bounds
        for s in seeds:
            vals.append(make(s).fit(split(X, s)).nicv(X))
    return float(np.median(vals))


def run(n_seeds, plot=True):
    seeds = range(n_seeds)
    results = {}
    sw = Stopwatch()
    for name, (_, k) in DATASETS.items():
        X = scaled(name)
        row = {"n": X.shape[0], "d": X.shape[1], "k": k}
        row["lloyd"] = median_nicv(lambda s: FederatedLloyd(k, random_state=s), X, seeds)
        for algo, make in (
                ("fastlloyd", lambda e: lambda s: DPFederatedKMeans(
                    k, epsilon=e, init="sphere_packing", random_state=s)),
                ("fastlloyd_cont", lambda e: lambda s: DPFederatedKMeans(
                    k, epsilon=e, init="sphere_packing", noise="gaussian", random_state=s)),
                ("planned", lambda e: lambda s: DPFederatedKMeans(k, epsilon=e, random_state=s)),
                ("glloyd", lambda e: lambda s: GLloyd(k, epsilon=e, random_state=s)),
                ("sulloyd", lambda e: lambda s: SuLloyd(k, epsilon=e, random_state=s))):
            row[algo] = [median_nicv(make(e), X, seeds) for e in EPSILONS]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            row["T"] = [DPFederatedKMeans(k, epsilon=e, init="sphere_packing", random_state=0)
                        .fit(split(X, 0)).n_iter_ for e in EPSILONS]
        results[name] = row
    elapsed = sw.cpu

    print(f"median NICV over {n_seeds} seeds, 2 clients, features in [-1, 1] "
          f"(CPU {elapsed:.1f} s)")
    head = "  ".join(f"eps={e:<5}" for e in EPSILONS)
    for name, row in results.items():
        print(f"\n{name}  (n={row['n']}, d={row['d']}, k={row['k']}; non-private federated "
              f"Lloyd {row['lloyd']:.3f}; T(auto) = {row['T']})")
        print(f"  {'':<26}{head}")
        ref = REFERENCE.get(name)
        lines = [("pyfkm planned (default)", row["planned"]),
                 ("pyfkm FastLloyd (discrete)", row["fastlloyd"]),
                 ("pyfkm FastLloyd (cont.)", row["fastlloyd_cont"])]
        if ref:
            lines.append(("reference FastLloyd", ref))
        lines += [("pyfkm GLloyd", row["glloyd"]), ("pyfkm SuLloyd", row["sulloyd"])]
        for label, vals in lines:
            print(f"  {label:<26}" + "  ".join(f"{v:<9.3f}" for v in vals))
        if ref:
            ratio = [a / b for a, b in zip(row["fastlloyd"], ref)]
            print(f"  {'ratio pyfkm / reference':<26}" + "  ".join(f"{r:<9.3f}" for r in ratio))
        if name in DIFFPRIVLIB_EPS1:
            print(f"  diffprivlib KMeans at eps=1 (mean, issue): {DIFFPRIVLIB_EPS1[name]}")
    if plot and not have_matplotlib():
        print("\nplot skipped: matplotlib is not installed (pip install matplotlib; "
              "--no-plot leaves the plot out)")
    elif plot:
        save_plot(results)
    return results


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def save_plot(results):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.6))
    for ax, (name, row) in zip(axes, results.items()):
        ax.plot(EPSILONS, row["planned"], "D-", color="C4", label="pyfkm planned (default)")
        ax.plot(EPSILONS, row["fastlloyd"], "o-", color="C0", label="pyfkm FastLloyd")
        if name in REFERENCE:
            ax.plot(EPSILONS, REFERENCE[name], "s--", color="C1", label="reference FastLloyd")
        ax.plot(EPSILONS, row["glloyd"], "^-", color="C2", label="GLloyd")
        ax.plot(EPSILONS, row["sulloyd"], "v-", color="C3", label="SuLloyd")
        ax.axhline(row["lloyd"], color="k", lw=0.8, ls=":", label="non-private Lloyd")
        top = max(max(row["sulloyd"]), max(row["glloyd"]), max(row["fastlloyd"]))
        ax.set_ylim(0.85 * row["lloyd"], 1.15 * top)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(EPSILONS)
        ax.set_xticklabels([str(e) for e in EPSILONS])
        ax.set_title(f"{name} (k={row['k']}, d={row['d']})")
        ax.set_xlabel("epsilon")
        ax.set_ylabel("median NICV")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "figures", "fastlloyd_nicv.png")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"\nplot: {out}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--no-plot", action="store_true")
    a = p.parse_args()
    run(a.seeds, plot=not a.no_plot)

