"""The pieces of one FastLloyd run that do not touch the clients' data.

* :func:`sphere_packing_init`: data-independent initial centers (Su et al.
  2016), the same for every client given the public seed;
* :func:`step_radius`: the paper's "step" schedule of the radius ``eta_t``
  beyond which a client drops a point;
* :func:`fold_into_bounds` and the center update: the new center
  ``mu + R~ / max(C~, 1)`` clipped to distance ``eta_t`` of the old one and
  brought back into the domain.

The federated loop that uses them is :mod:`pyfkm.dp.estimator`'s (its
shared driver lives in ``pyfkm.dp._lloyd_base``).
"""
from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..rng import SeedLike, as_generator

__all__ = ["sphere_packing_init", "step_radius", "fold_into_bounds"]

_MAX_RETRIES = 100


def sphere_packing_init(n_clusters: int, n_features: int, bounds: tuple[float, float] = (-1.0, 1.0),
                        random_state: SeedLike = None) -> NDArray[np.float64]:
    """Data-independent initial centers (sphere packing, Su et al. 2016).

    Draws centers uniformly in the box shrunk by a margin ``a`` and keeps a
    candidate only if it lies at least ``2 a`` from the centers kept so far;
    ``a`` starts at half the box width and is halved after 100 consecutive
    rejections.  Depends only on the seed, so every client computes the
    same centers.

    Parameters
    ----------
    n_clusters : int
        Number of centers.
    n_features : int
        Number of features.
    bounds : (float, float), default=(-1.0, 1.0)
        The box ``[lo, hi]`` of every feature.
    random_state : None, int, SeedSequence or Generator, default=None
        Seed of the draws.

    Returns
    -------
    centers : ndarray of shape (n_clusters, n_features)
        Centers inside the box.

    Examples
    --------
    >>> C = sphere_packing_init(3, 2, random_state=0)
    >>> C.shape, bool((abs(C) <= 1).all())
    ((3, 2), True)
    """
    lo, hi = float(bounds[0]), float(bounds[1])
    gen = as_generator(random_state)
    k, d, width = int(n_clusters), int(n_features), hi - lo
    margin = width / 2.0
    while True:
        centers = np.empty((k, d))
        got = rejected = 0
        while got < k and rejected < _MAX_RETRIES:
            cand = lo + margin + gen.random(d) * (width - 2 * margin)
            if got == 0 or np.sqrt(((centers[:got] - cand) ** 2).sum(1).min()) >= 2 * margin:
                centers[got] = cand
                got += 1
                rejected = 0
            else:
                rejected += 1
        if got == k:
            return centers
        margin /= 2.0


def step_radius(iteration: int, n_clusters: int, n_features: int, alpha: float = 0.8,
                bounds: tuple[float, float] = (-1.0, 1.0)) -> float:
    """FastLloyd's "step" radius: ``diag / 2`` at iteration 0, then
    ``alpha * diag / (2 k^(1/d))``, capped at ``diag``.

    Parameters
    ----------
    iteration : int
        Iteration index, from 0.
    n_clusters : int
        Number of centers k.
    n_features : int
        Number of features d.
    alpha : float, default=0.8
        Radius factor after the first iteration.
    bounds : (float, float), default=(-1.0, 1.0)
        The box ``[lo, hi]`` of every feature.

    Returns
    -------
    eta : float
        The radius of that iteration (``diag`` is the box's diagonal).

    Examples
    --------
    >>> round(step_radius(0, 3, 4), 6), round(step_radius(1, 3, 4), 6)
    (2.0, 1.215737)
    """
    diag = (float(bounds[1]) - float(bounds[0])) * math.sqrt(n_features)
    eta = diag / 2 if iteration == 0 else alpha * diag / (2 * n_clusters ** (1.0 / n_features))
    return min(eta, diag)


def fold_into_bounds(C: ArrayLike, bounds: tuple[float, float] = (-1.0, 1.0)) -> NDArray[np.float64]:
    """Reflect coordinates into ``[lo, hi]`` (folding at the bounds).

    Parameters
    ----------
    C : array-like
        Coordinates (any shape).
    bounds : (float, float), default=(-1.0, 1.0)
        The box ``[lo, hi]`` of every feature.

    Returns
    -------
    folded : ndarray, float64
        ``C`` reflected at the bounds until inside them (same shape).

    Examples
    --------
    >>> fold_into_bounds(np.array([1.25, -1.5, 0.5, 3.5])).tolist()
    [0.75, -0.5, 0.5, -0.5]
    """
    lo, hi = float(bounds[0]), float(bounds[1])
    w = hi - lo
    v = np.mod(np.asarray(C, dtype=np.float64) - lo, 2 * w)
    return lo + np.where(v > w, 2 * w - v, v)


def _update_centers(mu: NDArray[np.float64], R: NDArray[np.float64], C: NDArray[np.float64],
                    eta: float | None, relative: bool, bounds: tuple[float, float],
                    postprocess: str) -> NDArray[np.float64]:
    """New centers from the decoded (noisy) sums and counts."""
    denom = np.maximum(C, 1.0)[:, None]
    new = mu + R / denom if relative else R / denom
    if eta is not None:
        diff = new - mu
        dist = np.sqrt((diff * diff).sum(1))
        far = dist > eta
        if far.any():
            new[far] = mu[far] + diff[far] * (eta / dist[far])[:, None]
    if postprocess == "fold":
        new = fold_into_bounds(new, bounds)
    elif postprocess == "truncate":
        new = np.clip(new, bounds[0], bounds[1])
    return new
