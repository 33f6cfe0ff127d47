"""Data and budget formulas shared by the tests of pyfkm.dp."""
import numpy as np


def blobs(seed=0, n=240, d=3, k=3, spread=0.12):
    rng = np.random.default_rng(seed)
    means = rng.uniform(-0.6, 0.6, (k, d))
    X = means[rng.integers(0, k, n)] + rng.normal(0, spread, (n, d))
    return np.clip(X, -1, 1)


def split(X, parts=2, seed=0):
    idx = np.random.default_rng(seed).permutation(len(X))
    return [X[i] for i in np.array_split(idx, parts)]
