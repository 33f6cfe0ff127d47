"""Centralized (k,z)-center (Charikar et al., SODA 2001), the (k,z)-center
cost functions and the noisy-blobs generator.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core import _kcenter
from ..core.base import FitPredictMixin
from .._validation import check_array, check_int, feature_names, set_feature_names
from ..exceptions import InvalidInputError
from ..rng import SeedLike, as_generator
from ._common import _MATRIX_MAX_N, _KZBase, _check_epsilon, _check_kz, _grid_search

__all__ = ["KZCenter", "kzcenter_radius", "count_outliers", "make_noisy_blobs"]


# ---------------------------------------------------------------- data, costs

def make_noisy_blobs(n_samples: int = 20_000, n_features: int = 5, n_clusters: int = 10,
                     n_outliers: int = 2_000, *, cluster_std: float = 1.0,
                     center_box: tuple[float, float] = (-10.0, 10.0), box_scale: float = 2.0,
                     random_state: SeedLike = None
                     ) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]:
    """Gaussian clusters plus uniform outliers ("heavy noise").

    ``n_samples - n_outliers`` points form ``n_clusters`` isotropic Gaussian
    blobs of equal size with centers uniform in ``center_box``; the
    ``n_outliers`` others are uniform in the bounding box of the inliers
    enlarged ``box_scale`` times about its center.

    Parameters
    ----------
    n_samples, n_features, n_clusters, n_outliers : int
    cluster_std : float
    center_box : (float, float)
    box_scale : float
        At least 1.
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Shuffled points.
    is_outlier : ndarray of bool, shape (n_samples,)
        True for the uniform noise points.
    centers : ndarray of shape (n_clusters, n_features)
        The planted centers.

    Examples
    --------
    >>> X, noise, C = make_noisy_blobs(1000, 2, 3, 100, random_state=0)
    >>> X.shape, int(noise.sum()), C.shape
    ((1000, 2), 100, (3, 2))
    """
    n = check_int(n_samples, "n_samples", 1)
    d = check_int(n_features, "n_features", 1)
    k = check_int(n_clusters, "n_clusters", 1)
    z = check_int(n_outliers, "n_outliers", 0)
    if n - z < k:
        raise InvalidInputError(
            f"n_samples - n_outliers = {n - z} must be >= n_clusters={k}")
    if not (isinstance(cluster_std, numbers.Real) and cluster_std >= 0):
        raise InvalidInputError(f"cluster_std={cluster_std!r} must be a real >= 0")
    if not (isinstance(box_scale, numbers.Real) and box_scale >= 1):
        raise InvalidInputError(f"box_scale={box_scale!r} must be a real >= 1")
    rng = as_generator(random_state)
    lo, hi = (float(v) for v in center_box)
    centers = rng.uniform(lo, hi, size=(k, d))
    y = np.arange(n - z) % k
    inl = centers[y] + cluster_std * rng.standard_normal((n - z, d))
    a, b = inl.min(axis=0), inl.max(axis=0)
    mid, half = (a + b) / 2, (b - a) / 2 * float(box_scale)
    out = rng.uniform(mid - half, mid + half, size=(z, d))
    X = np.concatenate([inl, out])
    flag = np.zeros(n, dtype=bool)
    flag[n - z:] = True
    perm = rng.permutation(n)
    return X[perm], flag[perm], centers


def _as_points(X: ArrayLike, name: str = "X") -> NDArray[np.float64]:
    if isinstance(X, (list, tuple)) and X and all(np.ndim(x) == 2 for x in X):
        arrs = [check_array(x, f"{name}[{i}]", dtype=(np.float64,), allow_empty=True)
                for i, x in enumerate(X)]
        X = np.concatenate(arrs)
    return check_array(X, name, dtype=(np.float64,))


def _distances(X: NDArray[np.float64], centers: ArrayLike) -> NDArray[np.float64]:
    centers = check_array(centers, "centers", dtype=(np.float64,))
    if centers.shape[1] != X.shape[1]:
        raise InvalidInputError(
            f"centers have {centers.shape[1]} features but X has {X.shape[1]}")
    mind, _ = _kcenter.nearest(X, centers)
    return np.sqrt(mind)


def kzcenter_radius(X: ArrayLike, centers: ArrayLike, n_discard: int) -> float:
    """The (k,z)-center cost: radius after discarding the ``n_discard``
    points farthest from ``centers``.

    Parameters
    ----------
    X : array of shape (n, d), or a sequence of such arrays (machines)
    centers : array of shape (k, d)
    n_discard : int
        Between 0 and n - 1 (a real is rounded down, so (1+eps)z works).

    Returns
    -------
    float
        The (n_discard + 1)-th largest distance to the nearest center.

    Examples
    --------
    >>> kzcenter_radius([[0.0], [1.0], [5.0]], [[0.0]], 1)
    1.0
    """
    X = _as_points(X)
    if not isinstance(n_discard, numbers.Real) or isinstance(n_discard, bool) \
            or not 0 <= n_discard < X.shape[0]:
        raise InvalidInputError(
            f"n_discard={n_discard!r} must be a number in [0, n) with n={X.shape[0]}")
    dist = _distances(X, centers)
    j = X.shape[0] - 1 - int(math.floor(n_discard))
    return float(np.partition(dist, j)[j])


def count_outliers(X: ArrayLike, centers: ArrayLike, radius: float) -> int:
    """Number of points farther than ``radius`` from every center (the
    points a solution declares outliers).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Finite points.
    centers : array-like of shape (n_centers, n_features)
        The centers.
    radius : float
        Radius >= 0; a point at exactly ``radius`` is not an outlier.

    Returns
    -------
    n_outliers : int
        Number of rows of ``X`` farther than ``radius`` from every center.

    Raises
    ------
    InvalidInputError
        If ``X`` is invalid or ``radius`` is not a real >= 0.

    Examples
    --------
    >>> count_outliers([[0.0], [1.0], [5.0]], [[0.0]], 1.0)
    1
    """
    X = _as_points(X)
    if not (isinstance(radius, numbers.Real) and radius >= 0):
        raise InvalidInputError(f"radius={radius!r} must be a real >= 0")
    return int((_distances(X, centers) > radius).sum())


# ----------------------------------------------------------------- estimator

class KZCenter(FitPredictMixin, _KZBase):
    """Centralized (k,z)-center: the 3-approximation of Charikar et al.

    For a radius r the greedy picks, k times, the point whose ball of
    radius r holds the most uncovered points and covers the ball of radius
    3r around it; r is the smallest feasible (at most z uncovered) pairwise
    distance found by bisection over the sorted distinct distances (so
    r <= OPT, the optimal radius with centers among the points).  For more
    than 4096 points (no distance matrix) the candidates are a geometric
    grid with ratio 1 + ``tol`` instead, and r <= (1 + tol) OPT.

    Parameters
    ----------
    n_clusters : int
        Number of centers k (at least 1).
    n_outliers : int
        Number of outliers z (total weight with ``sample_weight``) that
        may be left uncovered, at least 0 and less than the number of
        points.
    tol : float, default=0.01
        Grid ratio minus one for large inputs.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_centers, n_features)
        Points of X (at most n_clusters).
    radius_ : float
        The radius after discarding the n_outliers farthest points
        (<= 3 r); points farther than it are declared outliers (<= z).
    guess_ : float
        r.
    labels_ : ndarray of int64
        Nearest center, -1 for declared outliers.
    n_features_in_ : int

    Examples
    --------
    >>> X = [[0.0], [0.1], [5.0], [5.2], [40.0]]
    >>> est = KZCenter(2, 1).fit(X)
    >>> sorted(est.cluster_centers_.ravel().tolist()), est.labels_.tolist()
    ([0.0, 5.0], [0, 0, 1, 1, -1])
    """

    def __init__(self, n_clusters: int, n_outliers: int, *, tol: float = 0.01) -> None:
        self.n_clusters = n_clusters
        self.n_outliers = n_outliers
        self.tol = tol

    def fit(self, X: ArrayLike, y: object = None, sample_weight: ArrayLike | None = None
            ) -> KZCenter:
        """Fit on ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite training data.
        y : None
            Ignored; accepted for scikit-learn's API.
        sample_weight : array-like of int, shape (n_samples,), optional
            Nonnegative integer weights (default: all ones); the outlier
            budget ``n_outliers`` is then a weight.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        InvalidInputError
            If ``X``, ``sample_weight``, ``n_clusters``, ``n_outliers`` or
            ``tol`` is invalid.
        """
        names = feature_names(X)
        X = check_array(X, "X", dtype=(np.float64,))
        n = X.shape[0]
        w = None
        if sample_weight is not None:
            w = np.asarray(sample_weight)
            if w.shape != (n,) or w.dtype.kind not in "iu" or (w < 0).any():
                raise InvalidInputError(
                    "sample_weight must be nonnegative integers, one per row of X")
            w = np.ascontiguousarray(w, dtype=np.int64)
        k, z = _check_kz(self.n_clusters, self.n_outliers, n)
        tol = _check_epsilon(self.tol)
        centers, r = _charikar(X, w, k, z, tol)
        dist = _distances(X, centers)
        if w is None:
            j = n - 1 - z
            radius = float(np.partition(dist, j)[j])
        else:  # smallest radius leaving weight <= z outside
            order = np.argsort(dist)[::-1]
            cw = np.cumsum(w[order])
            pos = int(np.searchsorted(cw, z, side="right"))
            radius = float(dist[order[pos]]) if pos < n else 0.0
        self.cluster_centers_ = centers
        self.guess_ = float(r)
        self.radius_ = radius
        self.n_features_in_ = X.shape[1]
        set_feature_names(self, None)  # X is an array now: no names to compare
        self.labels_ = self.predict(X)
        set_feature_names(self, names)
        return self


def _charikar(X: NDArray[np.float64], w: NDArray[np.floating] | NDArray[np.integer] | None,
              k: int, z: float, tol: float = 0.01) -> tuple[Any, float]:
    """Charikar et al. greedy (radii r, 3r) with the search over r; returns
    (centers, r).  Feasible: uncovered weight <= z."""
    n = X.shape[0]
    D = _kcenter.sqdist(X, X) if n <= _MATRIX_MAX_N else None
    M = _kcenter.Matrix(X) if D is not None else None

    def probe(r2: float) -> NDArray[np.float64] | None:
        c, unc, _ = _kcenter.greedy(X, M, w, r2, 9.0 * r2, k)
        return X[c] if unc <= z else None

    if D is not None:
        cand = np.unique(D[np.triu_indices(n, 1)]) if n > 1 else np.zeros(1)
        cand = np.union1d(cand, [0.0])
        a, b, sol = -1, len(cand) - 1, None
        while b - a > 1:
            mid = (a + b) // 2
            s = probe(float(cand[mid]))
            if s is not None:
                b, sol = mid, s
            else:
                a = mid
        if sol is None:
            sol = probe(float(cand[b]))
        return sol, math.sqrt(cand[b])
    sol0 = probe(0.0)
    if sol0 is not None:
        return sol0, 0.0
    mind, _ = _kcenter.nearest(X, X[:1])
    hi = math.sqrt(mind.max())
    nn = np.sqrt(_kcenter.nn_sqdist(X, None))
    nn = nn[nn > 0]
    lo = float(nn.min()) if nn.size else hi * 2.0 ** -32
    L, sol, _ = _grid_search(lo, max(hi, lo), 1.0 + tol, lambda r: probe(r * r))
    return sol, L
