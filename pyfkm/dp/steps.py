"""The pieces of one FastLloyd run that do not touch the clients' data.

* :func:`sphere_packing_init`: data-independent initial centers (Su et al.
  2016), the same for every client given the public seed;
* :func:`step_radius`: the paper's "step" schedule of the radius ``eta_t``
  beyond which a client drops a point;
* :func:`fold_into_bounds` and the center update: the new center
  ``mu + R~ / max(C~, 1)`` clipped to distance ``eta_t`` of the old one and
  brought back into the domain.

* :func:`plan_rounds`: the rule that picks, from public quantities only
  (``n``, ``k``, ``d``, epsilon, delta), the number of rounds, how many of
  them initialise and over how many candidate centers;
* :func:`reduce_candidates`: the server-free post-processing that turns the
  noisy candidate means of the initialisation into ``k`` centers, and the
  damped update of the planned pipeline (``_damped_update``);
* :func:`shrink_counts`: the empirical-Bayes estimate of the clusters' sizes
  from their noisy counts and the public ``n`` (post-processing).

The federated loop that uses them is :mod:`pyfkm.dp.estimator`'s (its
shared driver lives in ``pyfkm.dp._lloyd_base``).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..exceptions import InvalidInputError
from ..rng import SeedLike, as_generator

__all__ = ["sphere_packing_init", "step_radius", "fold_into_bounds", "plan_rounds",
           "reduce_candidates", "shrink_counts"]

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
    # lo + (2 w - v where v > w, else v) for v = (C - lo) mod 2 w, the same
    # operations in place on one fresh array
    v = np.array(C, dtype=np.float64)
    np.subtract(v, lo, out=v)
    np.mod(v, 2 * w, out=v)
    np.subtract(2 * w, v, out=v, where=v > w)
    v += lo
    return v if v.ndim else v[()]


def _update_centers(mu: NDArray[np.float64], R: NDArray[np.float64], C: NDArray[np.float64],
                    eta: float | None, relative: bool, bounds: tuple[float, float],
                    postprocess: str) -> NDArray[np.float64]:
    """New centers from the decoded (noisy) sums and counts."""
    denom = np.maximum(C, 1.0)[:, None]
    new = mu + R / denom if relative else R / denom
    if eta is not None:
        diff = new - mu
        dist = np.sqrt((diff * diff).sum(1))
        far = np.flatnonzero(dist > eta)
        if far.size:
            new[far] = mu[far] + diff[far] * (eta / dist[far])[:, None]
    if postprocess == "fold":
        new = fold_into_bounds(new, bounds)
    elif postprocess == "truncate":
        new = np.clip(new, bounds[0], bounds[1])
    return new


#: at most this many candidate centers per cluster in the initialisation
CANDIDATES_PER_CLUSTER = 16
#: a candidate is kept when its noisy count exceeds this many count-noise sds
HEAVY_CANDIDATE = 2.0
#: below this z = n / (k sigma_C(T=3)) the initialisation is not worth a round
LOW_SNR = 3.0
#: from this z (up to LOW_SNR) the low-SNR plan runs 3 rounds and averages the last 2
AVERAGE_SNR = 1.0
#: how many final iterates the averaged low-SNR plan averages
AVERAGED_ROUNDS = 2


def plan_rounds(n: int, k: int, d: int, epsilon: float, delta: float,
                max_iter: int | str = "auto") -> dict[str, Any]:
    """The planned pipeline's rounds, noise split and initialisation size.

    Every round (initialisation included) is one Gaussian release of L2
    sensitivity 1 (relative sums divided by the radius, and counts) with the
    same standard deviation ``sigma = sqrt(T) sigma_1``, ``sigma_1`` the
    analytic Gaussian sigma of ``(epsilon, delta)``: ``T`` rounds compose to
    ``sqrt(T) / sigma``-GDP, exactly ``(epsilon, delta)``.  Within a round
    the sums get ``sigma_R`` and the counts ``sigma_C`` of
    :func:`~pyfkm.dp.accounting.fastlloyd_noise_scales`.

    The rule (derivation in ``docs/user_guide/dp.rst``): a cluster holds
    about ``n / k`` points and its noisy count is off by ``sigma_C``, so
    ``z = n / (k sigma_C(T=3))`` is the signal-to-noise ratio of a
    cluster's statistics at the smallest useful plan.  Lloyd's error halves
    per round while the per-round noise grows as ``sqrt(T)``; a round is
    worth adding only while the noise floor stays below the halved error,
    which gives ``T = clip(3 + floor(log2(z / 8)), 3, 7)`` (``T = 7`` without
    noise, FastLloyd's cap).  Below ``z = 3`` a cluster's count is within
    about one noise sd of zero at ``M = 3 k`` candidates: no initialisation
    round pays, and the plan runs damped Lloyd rounds from the
    sphere-packing start (``r = 0``): ``T = 2`` below ``z = 1``, else
    ``T = 3`` with the last ``2`` iterates averaged (``averaged = 2``) and
    the noisy counts estimated by :func:`shrink_counts`
    (``shrink_counts = True``).  A Lloyd step from a rough start forgets
    that start up to the assignment, so the last two iterates carry nearly
    independent noise and their mean has about half the variance of one,
    while each round's noise variance grows by only ``3 / 2``: a net gain
    once the second round has brought the centers near their clusters,
    i.e. once a cluster's count is above its noise (``z >= 1``; measured on
    iris, wine and breast_cancer, where below ``z = 1`` the third round
    costs more than the averaging saves).  Otherwise the first ``r`` rounds
    (``r = 1`` if ``T <= 4``, else 2) run Lloyd on ``M`` public
    sphere-packing candidates,
    ``M = clip(round(n / sigma_C(T)), k, 16 k)`` (at most one candidate per
    count-noise's worth of points, so a heavy candidate's count is
    meaningful), then reduce to ``k``.  Only ``n``, ``k``, ``d`` and the
    budget enter: ``n`` is public, as in FastLloyd.

    Parameters
    ----------
    n : int
        Number of points (public).
    k : int
        Number of clusters.
    d : int
        Number of features.
    epsilon : float
        Budget of the whole fit (``math.inf``: no noise).
    delta : float
        Budget delta (ignored without noise).
    max_iter : "auto" or int, default="auto"
        ``T``; an int fixes it (it must leave a round after the
        initialisation).

    Returns
    -------
    plan : dict
        ``iterations`` (T), ``init_rounds`` (r), ``candidates`` (M),
        ``sigma`` (per round), ``sigma_sum`` and ``sigma_count``,
        ``averaged`` (how many final iterates are averaged; 0: none, also
        when an int ``max_iter`` leaves no round before them) and
        ``shrink_counts`` (whether the Lloyd rounds estimate the counts
        with :func:`shrink_counts`).

    Raises
    ------
    InvalidInputError
        If ``max_iter`` leaves no Lloyd round after the initialisation.

    Examples
    --------
    >>> p = plan_rounds(150, 3, 4, 1.0, 1 / (150 * math.log(150)))
    >>> p["iterations"], p["init_rounds"], p["candidates"]
    (3, 1, 16)
    >>> p = plan_rounds(150, 3, 4, 0.5, 1 / (150 * math.log(150)))
    >>> p["iterations"], p["init_rounds"], p["averaged"], p["shrink_counts"]
    (3, 0, 2, True)
    >>> plan_rounds(300_000, 100, 16, math.inf, 1e-7)["iterations"]
    7
    """
    from . import accounting as P
    n, k, d = int(n), int(k), int(d)
    eps = float(epsilon)
    if math.isfinite(eps):
        sigma1 = P.calibrate_analytic_gaussian(eps, float(delta), 1.0)
        g = math.sqrt(1.0 + math.sqrt(4.0 * d))
        z = n / (k * g * sigma1 * math.sqrt(3.0))
        T = int(min(max(3 + math.floor(math.log2(max(z, 1e-300) / 8.0)), 3), 7))
    else:
        sigma1 = 0.0
        T = 7
    # too few points per cluster for the candidates' counts to rise above
    # the noise: no over-clustered rounds, two or three damped Lloyd rounds
    low = sigma1 > 0 and z < LOW_SNR
    averaged = low and z >= AVERAGE_SNR
    if low:
        T = 3 if averaged else 2
    if max_iter != "auto":
        T = int(max_iter)
    r = 0 if low else (1 if T <= 4 else 2)
    if r and T <= r:
        r = T - 1
    if not low and r < 1:
        raise InvalidInputError(f"max_iter={T} leaves no Lloyd round after the private "
                                "initialisation; use max_iter >= 2 or init='sphere_packing'")
    if sigma1 > 0:
        sigma = sigma1 * math.sqrt(T)
        sig_r, sig_c = P.fastlloyd_noise_scales(sigma, d)
        M = k if low else int(round(n / sig_c))
    else:
        sigma = sig_r = sig_c = 0.0
        M = CANDIDATES_PER_CLUSTER * k
    M = min(max(M, k), CANDIDATES_PER_CLUSTER * k, n)
    return {"iterations": T, "init_rounds": r, "candidates": max(M, k), "sigma": sigma,
            "sigma_sum": sig_r, "sigma_count": sig_c,
            "averaged": AVERAGED_ROUNDS if averaged and T > AVERAGED_ROUNDS else 0,
            "shrink_counts": averaged}


def reduce_candidates(points: ArrayLike, counts: ArrayLike, n_clusters: int, threshold: float,
                      random_state: SeedLike = None, n_init: int = 5) -> NDArray[np.float64]:
    """``n_clusters`` centers from noisy candidate means and counts.

    Post-processing of released values only: candidates whose noisy count
    exceeds ``threshold`` are kept with their count as weight (if none
    passes, every positive count is kept); weighted k-means (k-means++
    seeding and weighted Lloyd, the best of ``n_init`` runs by weighted
    inertia) reduces them to ``n_clusters``.  With fewer kept candidates
    than clusters, the heaviest kept ones are duplicated (with a tiny public
    jitter) so that the following Lloyd rounds can split them: with equal
    cluster sizes the heaviest noisy mean is the likeliest merger of two
    clusters.

    Parameters
    ----------
    points : array-like of shape (M, d)
        Candidate centers (noisy means).
    counts : array-like of shape (M,)
        Their noisy counts.
    n_clusters : int
        Number of centers wanted (``<= M``).
    threshold : float
        Smallest noisy count that makes a candidate heavy.
    random_state : None, int, SeedSequence or Generator, default=None
        Public seed of the k-means++ draws (every client computes the same).
    n_init : int, default=5
        Number of weighted k-means runs.

    Returns
    -------
    centers : ndarray of shape (n_clusters, d)
        The reduced centers.

    Examples
    --------
    >>> P = np.array([[0.0, 0.0], [0.1, 0.0], [1.0, 1.0], [0.5, 0.5]])
    >>> C = reduce_candidates(P, [10.0, 30.0, 20.0, -3.0], 2, 5.0, random_state=0)
    >>> np.round(C[np.argsort(C[:, 0])], 3).tolist()
    [[0.075, 0.0], [1.0, 1.0]]
    """
    from ..core.kmeans import lloyd
    from ..core.seeding import kmeans_plusplus
    P = np.asarray(points, dtype=np.float64)
    N = np.asarray(counts, dtype=np.float64)
    k = int(n_clusters)
    order = np.argsort(-N, kind="stable")
    heavy = order[N[order] > threshold]
    if heavy.size == 0:
        heavy = order[N[order] > 0]
    gen = as_generator(random_state)
    if heavy.size == 0:
        heavy = order[:1]
    if heavy.size <= k:
        extra = P[heavy[np.arange(k - heavy.size) % heavy.size]]
        return np.concatenate([P[heavy], _jitter(extra, gen)])
    Q, W = np.ascontiguousarray(P[heavy]), np.ascontiguousarray(N[heavy])
    best, best_inertia = None, math.inf
    for _ in range(int(n_init)):
        C0, _ = kmeans_plusplus(Q, k, sample_weight=W, random_state=gen)
        C, _, inertia, _ = lloyd(Q, C0, sample_weight=W, max_iter=100)
        if inertia < best_inertia:
            best, best_inertia = C, inertia
    return np.asarray(best, dtype=np.float64)


def shrink_counts(counts: ArrayLike, n: int, count_sd: float) -> NDArray[np.float64]:
    """Empirical-Bayes estimate of the clusters' sizes from their noisy
    counts and the public total ``n`` (post-processing of released values).

    The noisy counts ``C~`` (independent noise of sd ``s = count_sd``) are
    first projected onto the plane ``sum = n`` (``C~ + (n - sum C~) / k``;
    ``n`` is public, and the clusters hold all the points but those beyond
    the radius), then shrunk towards the equal split ``n / k`` by the
    factor ``lam = tau^2 / (tau^2 + s^2 (1 - 1/k))``, with ``tau^2 =
    max(var(C~) - s^2 (1 - 1/k), 0)`` (``var`` with ``k - 1`` degrees of
    freedom) the estimated spread of the true sizes: with sizes as unequal
    as the noise makes them look, nothing is shrunk; with sizes hidden in
    the noise, every cluster gets ``n / k``.  ``s^2 (1 - 1/k)`` is the noise
    variance of a projected count about ``n / k``.  Only ``counts``, ``n``
    and ``count_sd`` enter.

    Parameters
    ----------
    counts : array-like of shape (k,)
        Noisy counts.
    n : int
        Total number of points (public).
    count_sd : float
        Standard deviation of each count's noise (0: the counts are
        returned as floats, unchanged).

    Returns
    -------
    sizes : ndarray of shape (k,)
        Estimated sizes; they sum to ``n`` (when ``count_sd > 0``).

    Examples
    --------
    >>> shrink_counts([40.0, 70.0, 30.0], 150, 10.0).round(3).tolist()
    [44.359, 69.744, 35.897]
    >>> shrink_counts([55.0, 45.0, 60.0], 150, 30.0).tolist()
    [50.0, 50.0, 50.0]
    """
    C = np.asarray(counts, dtype=np.float64)
    k = C.size
    s2 = float(count_sd) ** 2
    if s2 == 0.0 or k == 0:
        return C.copy()
    if k == 1:
        return np.full(1, float(n))
    noise = s2 * (1.0 - 1.0 / k)
    tau2 = max(float(np.var(C, ddof=1)) - noise, 0.0)
    lam = tau2 / (tau2 + noise)
    proj = C + (float(n) - float(C.sum())) / k
    return lam * proj + (1.0 - lam) * (float(n) / k)


_JITTER = 1e-3


def _jitter(C: NDArray[np.float64], gen: np.random.Generator) -> NDArray[np.float64]:
    """Copies of centers moved by a tiny public random offset (so that two
    copies split the points between them at the next assignment)."""
    return C + _JITTER * gen.standard_normal(C.shape)


def _relocate_empty(mu: NDArray[np.float64], C: NDArray[np.float64], threshold: float,
                    gen: np.random.Generator, bounds: tuple[float, float]) -> NDArray[np.float64]:
    """Noisy-empty centers (count <= 0) moved next to the heaviest ones
    (post-processing), once the heaviest count exceeds ``2 threshold``: a
    center nothing is assigned to is useless where it is, and the heaviest
    cluster is the likeliest merger of two."""
    empty = np.flatnonzero(C <= 0)
    if empty.size == 0 or C.max() <= 2.0 * threshold:
        return mu
    heavy = np.argsort(-C, kind="stable")[:empty.size]
    heavy = heavy[C[heavy] > 0]
    if heavy.size == 0:
        return mu
    out = mu.copy()
    out[empty[:heavy.size]] = np.clip(_jitter(mu[heavy], gen), bounds[0], bounds[1])
    return out


def _damped_update(mu: NDArray[np.float64], R: NDArray[np.float64], C: NDArray[np.float64],
                   eta: float, sum_sd: float, bounds: tuple[float, float],
                   postprocess: str = "truncate") -> NDArray[np.float64]:
    """The planned pipeline's update (post-processing of the noisy ``R, C``).

    A center whose noisy count is not positive is noisy-empty and stays;
    the others take the step ``R~ / C~`` shrunk by the positive-part
    James-Stein factor ``max(1 - (d - 2) v / |step|^2, 0)``, ``v = sum_sd^2 /
    C~^2`` the noise variance of a coordinate of the step (no shrinkage for
    ``d <= 2``), then clipped to length
    ``eta`` and brought into the box (``postprocess``, clipping by default)."""
    k, d = mu.shape
    new = mu.copy()
    live = C > 0
    if live.any():
        c = C[live]
        step = R[live] / np.maximum(c, 1.0)[:, None]
        v = max(d - 2, 0) * sum_sd * sum_sd / np.maximum(c, 1.0) ** 2
        norm2 = (step * step).sum(1)
        w = np.maximum(1.0 - np.divide(v, norm2, out=np.full_like(v, np.inf), where=norm2 > 0),
                       0.0)
        w[v == 0] = 1.0
        step = step * w[:, None]
        if eta is not None:
            nrm = np.sqrt((step * step).sum(1))
            far = nrm > eta
            step[far] *= (eta / nrm[far])[:, None]
        new[live] = mu[live] + step
    if postprocess == "fold":
        return fold_into_bounds(new, bounds)
    if postprocess == "truncate":
        return np.clip(new, bounds[0], bounds[1])
    return new
