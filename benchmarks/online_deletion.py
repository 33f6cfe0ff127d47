"""Online deletion benchmark (Ginart et al., NeurIPS 2019, Sec. 5 / Fig. 1).

Train once, then delete a stream of uniformly random points one at a time.
Amortized time per deletion = (training + all deletions so far) / number of
deletions, against retraining ``pyfkm.KMeans`` (k-means++ + the same number
of Lloyd iterations) after every deletion; the baseline's per-retrain time
is measured on a few retrains and extrapolated (it does not change with a
few points less).  Quality at several points of the stream: loss ratio to
k-means, silhouette (subsample of 10,000) and NMI against labels.

Run::

    python benchmarks/online_deletion.py --dataset gaussian --n-deletions 1000
    python benchmarks/online_deletion.py --dataset digits
"""
import argparse
import sys

import numpy as np
from _timing import call
from pyfkm._progress import track

from pyfkm import KMeans
from pyfkm.deletion import DCKMeans, QKMeans


def gaussian_mixture(n=100_000, d=25, k=5, seed=0):
    """Isotropic Gaussian mixture, unit variance, means in [-5, 5]^d."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(-5, 5, size=(k, d))
    y = rng.integers(0, k, size=n)
    return means[y] + rng.normal(size=(n, d)), y


def load(dataset, seed=0):
    if dataset == "gaussian":
        return gaussian_mixture(seed=seed) + (5,)
    if dataset == "digits":
        from sklearn.datasets import load_digits
        X, y = load_digits(return_X_y=True)
        return X.astype(np.float64), y, 10
    raise ValueError(f"unknown dataset {dataset!r}")


def _quality(model, X_rem, y_rem, ref_inertia, rng):
    out = {"loss_ratio": model.inertia_ / ref_inertia}
    try:
        from sklearn.metrics import normalized_mutual_info_score, silhouette_score
    except ImportError:
        return out
    labels = model.predict(X_rem)
    sub = rng.choice(X_rem.shape[0], size=min(10_000, X_rem.shape[0]), replace=False)
    if len(np.unique(labels[sub])) > 1:
        out["silhouette"] = float(silhouette_score(X_rem[sub], labels[sub]))
    if y_rem is not None:
        out["nmi"] = float(normalized_mutual_info_score(y_rem, labels))
    return out


def online_deletion(X, y, k, *, n_deletions=1000, max_iter=10, checkpoints=(0, 0.5, 1.0),
                    n_baseline=3, seed=0, estimators=("QKMeans", "DCKMeans")):
    """Run the benchmark; returns a dict of results per estimator.

    Each result has ``train_s``, ``delete_s`` (array of per-deletion times),
    ``amortized_s`` (array over the stream), ``retrain_fraction``,
    ``baseline_s`` (one KMeans retrain), ``speedup`` (baseline amortized /
    model amortized at the end) and ``quality`` (list of (i, dict)).
    """
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    order = rng.permutation(n)[:n_deletions]
    # baseline: KMeans with the same iterations (no early tolerance stop)
    times, ref = [], None
    for b in range(n_baseline):
        keep = np.ones(n, bool)
        keep[order[:b + 1]] = False
        t, km = call(lambda: KMeans(k, max_iter=max_iter, tol=0.0,
                                    random_state=seed + b).fit(X[keep]), clock="wall")
        times.append(t)
        ref = km if ref is None else ref
    baseline = float(np.median(times))
    results = {}
    marks = sorted({int(round(c * n_deletions)) for c in checkpoints})
    for name in estimators:
        cls, extra = parse_estimator(name)
        model = cls(k, max_iter=max_iter, random_state=seed, **extra)
        train, _ = call(lambda: model.fit(X), clock="wall")
        alive = np.ones(n, bool)
        dt, retrained, quality = [], 0, []
        # a progress bar on a terminal (tqdm when installed), nothing in logs
        for i, victim in enumerate(track(order, sys.stderr.isatty(), f"{name} deletions")):
            if i in marks:
                quality.append((i, _quality(model, X[alive], None if y is None else y[alive],
                                            _kmeans_inertia(X[alive], k, max_iter, seed),
                                            rng)))
            rep = model.remove(int(victim))
            alive[victim] = False
            dt.append(rep.seconds)
            retrained += rep.retrained
        if n_deletions in marks:
            quality.append((n_deletions, _quality(
                model, X[alive], None if y is None else y[alive],
                _kmeans_inertia(X[alive], k, max_iter, seed), rng)))
        dt = np.array(dt)
        amort = (train + np.cumsum(dt)) / np.arange(1, len(dt) + 1)
        results[name] = dict(train_s=train, delete_s=dt, amortized_s=amort,
                             retrain_fraction=retrained / max(len(dt), 1),
                             baseline_s=baseline, speedup=baseline / amort[-1],
                             quality=quality)
    return results


ESTIMATORS = {"QKMeans": QKMeans, "DCKMeans": DCKMeans}


def split_estimators(spec):
    """Estimator names of ``--estimators``: separated by ";" or by "," outside
    brackets, so ``"QKMeans,DCKMeans[n_local_trials=1,n_init=3]"`` is two."""
    names, depth, cur = [], 0, []
    for ch in spec:
        depth += (ch == "[") - (ch == "]")
        if ch == ";" or (ch == "," and depth == 0):
            names.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    names.append("".join(cur).strip())
    return tuple(n for n in names if n)


def parse_estimator(name):
    """(class, keyword arguments) of ``"DCKMeans[n_local_trials=1,n_init=3]"``
    (keyword values are ints); ValueError for an unknown name or a bad
    keyword list."""
    base, bracket, kw = name.strip().partition("[")
    if base not in ESTIMATORS:
        raise ValueError(f"unknown estimator {base!r} (known: {', '.join(ESTIMATORS)})")
    if bracket and not kw.endswith("]"):
        raise ValueError(f"{name!r}: keyword arguments must end with ']'")
    extra = {}
    for item in kw[:-1].split(",") if bracket else ():
        if not item.strip():
            continue
        key, eq, v = item.partition("=")
        if not eq:
            raise ValueError(f"{name!r}: expected key=value, got {item!r}")
        try:
            extra[key.strip()] = int(v)
        except ValueError:
            raise ValueError(f"{name!r}: {key.strip()} must be an int, got {v!r}") from None
    return ESTIMATORS[base], extra


def _kmeans_inertia(X, k, max_iter, seed):
    """Best of 3 k-means runs (the loss-ratio reference)."""
    return KMeans(k, max_iter=max_iter, n_init=3, random_state=seed).fit(X).inertia_


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="gaussian", choices=["gaussian", "digits"])
    p.add_argument("--n-deletions", type=int, default=1000)
    p.add_argument("--max-iter", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", default=None, help="save amortized runtime plot to this file")
    p.add_argument("--estimators", default="QKMeans;DCKMeans",
                   help="separated by ';' (or ',' outside brackets); "
                        "DCKMeans[n_local_trials=1,n_init=3] passes keyword arguments "
                        "(default %(default)s)")
    p.add_argument("--baseline-retrains", type=int, default=7,
                   help="KMeans retrains timed for the baseline (median)")
    a = p.parse_args(argv)
    estimators = split_estimators(a.estimators)
    try:
        for name in estimators:
            parse_estimator(name)
    except ValueError as e:
        p.error(f"--estimators: {e}")
    if not estimators:
        p.error("--estimators: no estimator named")
    if a.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            p.error("--plot needs matplotlib, which is not installed (pip install matplotlib)")
    X, y, k = load(a.dataset, a.seed)
    res = online_deletion(X, y, k, n_deletions=min(a.n_deletions, X.shape[0] - k),
                          max_iter=a.max_iter, seed=a.seed, n_baseline=a.baseline_retrains,
                          estimators=estimators)
    print(f"dataset={a.dataset} n={X.shape[0]} d={X.shape[1]} k={k} "
          f"deletions={a.n_deletions} max_iter={a.max_iter}")
    for name, r in res.items():
        print(f"{name}: train {r['train_s']:.3f}s, mean delete {r['delete_s'].mean() * 1e3:.3f} ms, "
              f"retrained {r['retrain_fraction']:.1%}, amortized {r['amortized_s'][-1] * 1e3:.3f} ms "
              f"vs KMeans retrain {r['baseline_s'] * 1e3:.1f} ms -> speed-up {r['speedup']:.0f}x")
        for i, q in r["quality"]:
            print(f"    after {i:5d} deletions: " +
                  ", ".join(f"{key} {v:.4f}" for key, v in q.items()))
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots()
        for name, r in res.items():
            ax.loglog(np.arange(1, len(r["amortized_s"]) + 1), r["amortized_s"], label=name)
        ax.axhline(next(iter(res.values()))["baseline_s"], color="k", ls="--",
                   label="KMeans retrain")
        ax.set_xlabel("number of deletions")
        ax.set_ylabel("amortized time per deletion (s)")
        ax.legend()
        fig.savefig(a.plot, dpi=120)
    return res


if __name__ == "__main__":
    main()
