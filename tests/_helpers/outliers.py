"""The numpy twins and brute force shared by the tests of pyfkm.outliers."""
import itertools

import numpy as np


# ------------------------------------------------------------ numpy twins

def ref_sqdist(X, Y):
    # sequential sum over coordinates, like the kernel (d <= 3 in tests)
    out = np.zeros((len(X), len(Y)))
    for t in range(X.shape[1]):
        out += (X[:, None, t] - Y[None, :, t]) ** 2
    return out


def ref_aggregate(X, L, y):
    """Algorithm 2: while some p in U has |B_U(p, 2L)| > y, take the p with
    the largest count (lowest index on ties), weight |B_U(p, 4L)|, remove
    that ball."""
    D = ref_sqdist(X, X)
    t2, t4 = (2.0 * L) ** 2, (4.0 * L) ** 2
    U = np.ones(len(X), dtype=bool)
    reps, ws = [], []
    while True:
        counts = np.where(U, ((D <= t2) & U[None, :]).sum(axis=1), -1)
        p = int(np.argmax(counts))
        if not U.any() or not counts[p] > y:
            break
        ball = U & (D[p] <= t4)
        reps.append(p)
        ws.append(int(ball.sum()))
        U &= ~ball
    return reps, ws, U


def ref_greedy(X, w, t_small, t_large, k):
    """Charikar et al.: k times, the point (any) maximising the uncovered
    weight within t_small; remove its t_large ball."""
    D = ref_sqdist(X, X)
    U = np.ones(len(X), dtype=bool)
    centers = []
    for _ in range(k):
        cover = ((D <= t_small) * (w * U)[None, :]).sum(axis=1)
        p = int(np.argmax(cover))
        if cover[p] <= 0:
            break
        centers.append(p)
        U &= ~(D[p] <= t_large)
    return centers, int((w * U).sum()), U


def brute_opt(X, k, z):
    """Optimal (k,z)-center radius with centers among the points."""
    n = len(X)
    D = np.sqrt(ref_sqdist(X, X))
    best = np.inf
    for S in itertools.combinations(range(n), k):
        dist = np.sort(D[:, list(S)].min(axis=1))
        best = min(best, dist[n - 1 - z])
    return best
