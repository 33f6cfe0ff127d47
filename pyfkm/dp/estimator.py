"""Differentially private federated k-means (FastLloyd) and its baselines.

FastLloyd (Diaa, Humphries and Kerschbaum, "FastLloyd: Federated, Accurate,
Secure, and Tunable k-Means Clustering with Differential Privacy") runs
Lloyd's algorithm across clients that hold horizontally partitioned data:

1. every client starts from the same data-independent *sphere-packing*
   centers (Su et al. 2016; drawn from a public seed);
2. each iteration ``t``, a client assigns its points to the nearest center
   and *drops* points farther than the radius ``eta_t``; it sends, per
   cluster ``j``, the *relative* sum ``R_j = sum (x - mu_j)`` (L2
   sensitivity ``eta_t``: one point moves one ``R_j`` by at most ``eta_t``)
   and the count ``C_j`` (sensitivity 1) through masked secure aggregation
   (:func:`pyfkm.secagg.msa_round`: fixed point in Z_2^64, pairwise masks, an
   output mask the server does not know);
3. the server adds Gaussian noise with standard deviations
   ``eta_t * sigma_R`` and ``sigma_C`` (FastLloyd's split of a
   per-iteration sigma, see :func:`pyfkm.dp.accounting.fastlloyd_noise_scales`)
   and broadcasts;
4. clients decode ``R~, C~`` and set ``mu_j <- mu_j + R~_j / max(C~_j, 1)``,
   clipped to distance ``eta_t`` of the old ``mu_j`` and folded back into
   the domain (reflection at the bounds).

Radius ("step" schedule of the paper): ``diag / 2`` at the first iteration,
then ``alpha * diag / (2 k^(1/d))`` (``diag`` the domain diagonal), never
above ``diag``.  Privacy: the per-iteration release ``(R / eta_t, C)`` has
L2 sensitivity 1 and is a Gaussian mechanism with sigma ``sigma_it``; ``T``
of them compose to ``mu = sqrt(T) / sigma_it`` Gaussian DP, and
``sigma_it = sqrt(T) sigma_1`` with ``sigma_1`` the analytic Gaussian sigma
of (epsilon, delta) at sensitivity 1 (Balle & Wang 2018) makes the whole run
(epsilon, delta)-DP (add/remove one point) for Gaussian noise on the reals.
What each noise mode claims is stated in :mod:`pyfkm.core.noise`: the default
discrete Gaussian on the fixed-point integers has the same zCDP guarantee
exactly and the same (epsilon, delta) up to the (negligible, sigma ~ 1e4+
grid units) discrete-vs-continuous tail difference; the continuous
``noise="gaussian"`` mode (the paper's) carries no formal guarantee in
floating point.  The fixed-point
rounding of each client's sums moves a neighbour's vector by at most
``sqrt(d) 2**-16`` more, which the sum noise includes (its sensitivity is
taken as ``eta_t + sqrt(d) 2**-16``).  The total number of points ``n`` is
public (it sets ``delta="auto"`` and the iteration count), as in the paper.

Baselines in the same framework: :class:`FederatedLloyd` (no noise, no
radius, here), :class:`~pyfkm.dp.baselines.GLloyd` (Gaussian noise on
absolute sums, no radius) and :class:`~pyfkm.dp.baselines.SuLloyd` (Laplace
noise, Su et al. 2016).  The pieces that do not touch the data (initial
centers, radius, folding) are in :mod:`pyfkm.dp.steps`, the loop all of them
share in ``pyfkm.dp._lloyd_base``.
"""
from __future__ import annotations

import math
import numbers
import warnings
from concurrent.futures import Executor

import numpy as np
from numpy.typing import ArrayLike

from ..exceptions import InvalidInputError
from ..secagg import DEFAULT_SCALE_BITS, check_discrete_sigma
from ._lloyd_base import _check_max_iter, _FederatedLloydBase, _GaussianLloydBase
from ..rng import SeedLike
from .steps import (HEAVY_CANDIDATE, _damped_update, _relocate_empty, plan_rounds,
                    shrink_counts, step_radius)

__all__ = ["DPFederatedKMeans", "FederatedLloyd"]


class DPFederatedKMeans(_GaussianLloydBase):
    """Differentially private federated k-means (FastLloyd, and by default
    the planned pipeline of issue 23).

    By default (``init="auto"``, ``max_iter="auto"``) a fit runs the
    planned pipeline: :func:`pyfkm.dp.steps.plan_rounds` picks from ``n``
    (public), ``k``, ``d`` and the budget the number ``T`` of equal-noise
    rounds, how many of them form the private initialisation (Lloyd on
    ``M > k`` public candidates, then a weighted k-means reduction of the
    heavy noisy candidate means, :func:`pyfkm.dp.steps.reduce_candidates`)
    and the candidates' number; the Lloyd rounds use damped updates,
    relocate noisy-empty centers and clip to the box.  Every round,
    the initialisation's included, is one release of sensitivity 1 with the
    same sigma, and ``accountant_`` lists the initialisation as its own
    spend.  At low signal-to-noise (no initialisation round pays, see
    :func:`~pyfkm.dp.steps.plan_rounds`) the plan runs two damped Lloyd
    rounds from the sphere-packing start, or three whose last two iterates
    are averaged, with the cluster sizes estimated from the noisy counts
    and the public ``n`` (:func:`~pyfkm.dp.steps.shrink_counts`).  With an int ``max_iter`` or ``init="sphere_packing"`` the fit
    is FastLloyd as published.

    Parameters
    ----------
    n_clusters : int
    epsilon : float
        Privacy budget of the whole fit (add/remove one point).
        ``math.inf`` turns the noise off (then the fit is *not* private: the
        same algorithm, for testing and utility ceilings).
    delta : "auto" or float, default="auto"
        ``"auto"``: ``1 / (n ln n)``.
    max_iter : "auto" or int, default="auto"
        Number of rounds ``T`` (a DP fit always runs all of them: the
        budget is split over ``T``; the private initialisation's rounds
        count).  ``"auto"``: the planned pipeline's rule
        (:func:`pyfkm.dp.steps.plan_rounds`, 3 to 7 from ``n``, ``k``,
        ``d`` and the budget; 7 without noise); with
        ``init="sphere_packing"``, FastLloyd's heuristic
        (:func:`pyfkm.dp.accounting.fastlloyd_iterations`, 2 to 7).
    radius : "step" or float, default="step"
        ``"step"``: the paper's schedule (:func:`step_radius`); a float: the
        same radius ``eta`` at every iteration.
    alpha : float, default=0.8
        Radius factor of the "step" schedule.
    init : "auto", "candidates", "sphere_packing" or array (n_clusters, n_features)
        ``"candidates"``: the private initialisation (paid for, within
        ``T``): the first rounds run Lloyd on ``M > k`` public
        sphere-packing candidates, the noisy candidate means with heavy
        noisy counts are reduced to ``k`` centers by weighted k-means
        (post-processing), then Lloyd runs on ``k`` centers with damped
        updates.  ``"sphere_packing"``: FastLloyd as published
        (data-independent start).  ``"auto"`` (default): ``"candidates"``
        when ``max_iter="auto"``, ``"sphere_packing"`` when ``max_iter``
        is an int (the paper's fixed-iteration runs).  An array is assumed
        public.
    postprocess : {"auto", "fold", "truncate", "none"}, default="auto"
        How centers are brought back into the bounds; ``"auto"``:
        ``"truncate"`` (clip to the box) with ``init="candidates"``,
        ``"fold"`` (FastLloyd's reflection) otherwise.
    noise : {"discrete_gaussian", "gaussian"}, default="discrete_gaussian"
        ``"discrete_gaussian"``: *distributed* discrete Gaussian noise on the
        fixed-point integers -- every client adds a share of variance
        ``sigma**2 / threshold`` under its own OS key, so neither the server
        nor the server with fewer than ``threshold`` clients can remove it
        (see ``docs/threat_model.md`` for the guarantee and its accounting).
        ``"gaussian"``: a continuous Gaussian added by the server and
        rounded to the grid, as in the paper's experiments (a trusted-curator
        baseline: the server could remove it).
    bounds : (float, float), default=(-1, 1)
        Every feature of every point lies in ``[lo, hi]`` (checked).  The
        bounds must be public (not computed from the data); a
        ``UserWarning`` says so when every feature's minimum and maximum
        over the clients equal ``lo`` and ``hi`` exactly (min-max scaled
        data; a local check of the in-process driver, which holds every
        client's array: not part of the protocol, nothing is released).
    random_state : None, int, SeedSequence or Generator
        Seeds the initialization only (the public candidates and the
        reduction's k-means++ draws).  Keys, masks and the noise come from
        the operating system, so two fits with the same seed start alike
        but draw independent noise (which is what privacy needs); a
        noise-free :class:`FederatedLloyd` with a seed is reproducible.
    executor : concurrent.futures.Executor, optional
        Runs each client's local step (assignment and sums); default: in the
        calling thread.

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features)
    n_iter_ : int
    privacy_ : dict
        epsilon, delta, iterations, per-iteration sigma, the noise standard
        deviations and radii used; in the planned pipeline also ``init``,
        ``init_rounds``, ``init_candidates``, ``averaged`` (how many final
        iterates are averaged, 0 for none) and ``shrink_counts``.
    accountant_ : pyfkm.dp.accounting.PrivacyAccountant or None
        What the fit spent (None without noise).

    Notes
    -----
    Only the clients see their data and the decoded centers; the
    :class:`~pyfkm.secagg.MsaServer` only holds masked fixed-point words
    and shares it cannot combine.  Every client of every round takes part
    in the secure aggregation with the run's default threshold (a strict
    majority of the clients).

    Everything between the releases is post-processing: the damped update,
    the relocation of noisy-empty centers, the candidates' reduction, the
    size estimate from the noisy counts and ``n`` (public, as in
    FastLloyd) and the averaging of the last iterates read only the
    released noisy sums and counts, ``n``, the bounds and the public seed,
    so ``accountant_`` (``T`` releases of sensitivity 1) is the whole
    spend.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.clip(np.concatenate([rng.normal(-0.5, 0.1, (200, 2)),
    ...                             rng.normal(0.5, 0.1, (200, 2))]), -1, 1)
    >>> km = DPFederatedKMeans(2, epsilon=1.0, random_state=0).fit([X[::2], X[1::2]])
    >>> km.cluster_centers_.shape, km.n_iter_ == km.privacy_["iterations"]
    ((2, 2), True)
    >>> round(km.privacy_["epsilon_spent"], 6)
    1.0
    """

    _relative = True

    def __init__(self, n_clusters: int, *, epsilon: float, delta: float | str = "auto",
                 max_iter: int | str = "auto", radius: str | float = "step",
                 alpha: float = 0.8, init: str | ArrayLike = "auto",
                 postprocess: str = "auto", noise: str = "discrete_gaussian",
                 bounds: tuple[float, float] = (-1, 1), random_state: SeedLike = None,
                 executor: Executor | None = None) -> None:
        super().__init__(n_clusters, epsilon=epsilon, delta=delta, max_iter=max_iter, init=init,
                         postprocess=postprocess, noise=noise, bounds=bounds,
                         random_state=random_state, executor=executor)
        self.radius = radius
        self.alpha = alpha

    def _check_params(self):
        self._check_budget(allow_inf=True)
        r = self.radius
        if isinstance(r, str):
            if r != "step":
                raise InvalidInputError(f"radius must be 'step' or a positive float, got {r!r}")
        elif not isinstance(r, numbers.Real) or isinstance(r, bool) or not (0 < r < math.inf):
            raise InvalidInputError(f"radius={r!r} must be 'step' or a positive finite float")
        a = self.alpha
        if not isinstance(a, numbers.Real) or isinstance(a, bool) or not (0 < a < math.inf):
            raise InvalidInputError(f"alpha={a!r} must be a positive finite float")
        self._check_noise()

    def _radius(self, t, k, d, bounds):
        if self.radius == "step":
            return step_radius(t, k, d, self.alpha, bounds)
        return min(float(self.radius), (bounds[1] - bounds[0]) * math.sqrt(d))

    def _init_mode(self):
        """'candidates', 'sphere_packing' or 'array' (what ``init`` resolves to)."""
        init = self.init
        if not isinstance(init, str):
            return "array"
        if init == "auto":
            return "candidates" if self.max_iter == "auto" else "sphere_packing"
        return init

    def _check_init(self, k, d, bounds):
        if isinstance(self.init, str):
            if self.init not in ("auto", "candidates", "sphere_packing"):
                raise InvalidInputError("init must be 'auto', 'candidates', 'sphere_packing' "
                                        f"or an array, got {self.init!r}")
            return None
        return super()._check_init(k, d, bounds)

    def _postprocess_mode(self):
        if self.postprocess == "auto":
            return "truncate" if self._init_mode() == "candidates" else "fold"
        return self.postprocess

    _POSTPROCESS = ("auto", "fold", "truncate", "none")

    def _check_bounds_public(self, arrs, bounds):
        _warn_if_data_bounds(arrs, bounds)

    def _plan(self, n, k, d, bounds):
        if self._init_mode() == "candidates":
            return self._planned(n, k, d, bounds)
        return self._fastlloyd_plan(n, k, d, bounds)

    def _planned(self, n, k, d, bounds):
        """The planned pipeline: :func:`~pyfkm.dp.steps.plan_rounds`."""
        from . import accounting as P
        eps = float(self.epsilon)
        private = math.isfinite(eps)
        delta = self._delta(n) if private else 0.0
        rule = plan_rounds(n, k, d, eps, delta, self.max_iter)
        T, r, M = rule["iterations"], rule["init_rounds"], rule["candidates"]
        sig_r, sig_c, sigma = rule["sigma_sum"], rule["sigma_count"], rule["sigma"]
        avg, shrink = rule["averaged"], rule["shrink_counts"]
        slack = math.sqrt(d) * 2.0 ** -DEFAULT_SCALE_BITS if private else 0.0
        plan = []
        for t in range(T):
            init = t < r
            m = M if init else k
            eta = step_radius(0 if t == 0 else 1, m, d, self.alpha, bounds)
            plan.append({"eta": eta, "sum_scale": sig_r * (eta + slack), "count_scale": sig_c,
                         "sigma": sigma, "n_centers": m, "update": "damped",
                         "reduce": t == r - 1, "threshold": HEAVY_CANDIDATE * sig_c,
                         "phase": "init" if init else "lloyd", "init_rounds": r,
                         "average": t >= T - avg, "shrink_counts": shrink and not init,
                         "n_points": n})
        report = {"epsilon": eps if private else math.inf, "delta": delta, "iterations": T,
                  "sigma": sigma, "sigma_sum": sig_r, "sigma_count": sig_c,
                  "radii": [s["eta"] for s in plan], "noise": self.noise if private else None,
                  "init": "candidates" if r else "sphere_packing", "init_rounds": r,
                  "init_candidates": M if r else 0, "averaged": avg,
                  "shrink_counts": shrink}
        if not private:
            return plan, report, None, None
        if self.noise == "discrete_gaussian":
            check_discrete_sigma([s["sum_scale"] for s in plan] + [sig_c])
        return plan, report, P.PrivacyAccountant(eps, delta), self.noise

    def _iterate(self, plan, local, centers, server, msa, k, d, bounds, noise_mode,
                 distributed, reduce_gen=None):
        """The shared loop, or, for the averaged low-SNR plan
        (:func:`~pyfkm.dp.steps.plan_rounds`: ``averaged > 0``), the same
        masked rounds with their post-processing: counts estimated by
        :func:`~pyfkm.dp.steps.shrink_counts`, the damped update, and the
        mean of the last ``averaged`` iterates as the result.  Every value
        the post-processing reads is a released (noisy) sum or count, the
        public ``n`` or the public seed."""
        if not any(s.get("average") or s.get("shrink_counts") for s in plan):
            return super()._iterate(plan, local, centers, server, msa, k, d, bounds,
                                    noise_mode, distributed, reduce_gen)
        averaged = []
        for step in plan:
            R, C = self._masked_round(step, local, centers, server, msa, noise_mode,
                                      distributed)
            sizes = shrink_counts(C, step["n_points"], step["count_scale"]) \
                if step.get("shrink_counts") else C
            new = _damped_update(centers, R, sizes, step["eta"], step["sum_scale"], bounds,
                                 self._postprocess_mode())
            centers = _relocate_empty(new, C, step["threshold"], reduce_gen, bounds)
            if step.get("average"):
                averaged.append(centers)
        if averaged:
            centers = np.mean(averaged, axis=0)
        return centers, len(plan)

    def _record(self, accountant, step, count):
        # every round is one release (R / eta_t, C) of sensitivity 1 and
        # noise sigma; the initialisation's rounds are listed as their own spend
        r = min(step.get("init_rounds", 0), count)
        if r:
            accountant.spend(self.noise, sigma=step["sigma"], sensitivity=1.0, count=r)
        if count > r:
            accountant.spend(self.noise, sigma=step["sigma"], sensitivity=1.0, count=count - r)

    def _fastlloyd_plan(self, n, k, d, bounds):
        from . import accounting as P
        eps = float(self.epsilon)
        private = math.isfinite(eps)
        delta = self._delta(n)
        half = (bounds[1] - bounds[0]) / 2.0
        if not private:
            T = 7 if self.max_iter == "auto" else int(self.max_iter)
            etas = [self._radius(t, k, d, bounds) for t in range(T)]
            report = {"epsilon": math.inf, "delta": 0.0, "iterations": T, "sigma": 0.0,
                      "sigma_sum": 0.0, "sigma_count": 0.0, "radii": etas, "noise": None}
            return ([{"eta": e, "sum_scale": 0.0, "count_scale": 0.0} for e in etas], report,
                    None, None)
        sigma1 = P.calibrate_analytic_gaussian(eps, delta, 1.0)
        if self.max_iter == "auto":
            # the heuristic is stated for the domain [-1, 1]^d: radius in half-widths
            T = int(P.fastlloyd_iterations(n, k, d, self._radius(1, k, d, bounds) / half, sigma1))
        else:
            T = int(self.max_iter)
        sigma_it = sigma1 * math.sqrt(T)
        sig_r, sig_c = P.fastlloyd_noise_scales(sigma_it, d)
        slack = math.sqrt(d) * 2.0 ** -DEFAULT_SCALE_BITS   # fixed-point rounding
        plan = []
        for t in range(T):
            eta = self._radius(t, k, d, bounds)
            plan.append({"eta": eta, "sum_scale": sig_r * (eta + slack), "count_scale": sig_c,
                         "sigma": sigma_it})
        if self.noise == "discrete_gaussian":   # refuse before any work
            check_discrete_sigma([s["sum_scale"] for s in plan] + [sig_c])
        acct = P.PrivacyAccountant(eps, delta)
        report = {"epsilon": eps, "delta": delta, "iterations": T, "sigma": sigma_it,
                  "sigma_sum": sig_r, "sigma_count": sig_c, "radii": [s["eta"] for s in plan],
                  "noise": self.noise}
        return plan, report, acct, self.noise


def _warn_if_data_bounds(arrs, bounds):
    """Warn when every feature's min and max over the clients equal the
    bounds exactly: min-max scaling from the data itself, which leaks it."""
    arrs = [a for a in arrs if a.shape[0]]
    if not arrs:
        return
    lo = np.min([a.min(0) for a in arrs], axis=0)
    hi = np.max([a.max(0) for a in arrs], axis=0)
    if np.all(lo == bounds[0]) and np.all(hi == bounds[1]):
        warnings.warn(
            f"every feature's minimum and maximum over the clients equal bounds={bounds} "
            "exactly: the bounds (or the scaling into them) look derived from the data, "
            "which the privacy guarantee does not cover; scale with public ranges "
            "(pyfkm.scale_to_box) or pay for private bounds", UserWarning, stacklevel=3)


class FederatedLloyd(_FederatedLloydBase):
    """Non-private federated Lloyd through the same masked aggregation.

    Relative sums without radius or noise; stops when no center moves by
    more than the fixed-point step ``2**-16`` (or after ``max_iter``).

    Parameters
    ----------
    n_clusters : int
        Number of centers (at least 1, at most the number of points).
    max_iter : int, default=300
        Largest number of iterations.
    init : "sphere_packing" or array (n_clusters, n_features), default="sphere_packing"
        Initial centers; must not depend on the data (an array is assumed
        public).
    postprocess : {"fold", "truncate", "none"}, default="none"
        How centers are brought back into the bounds.
    bounds : (float, float), default=(-1, 1)
        Every feature of every point lies in ``[lo, hi]`` (checked).
    random_state : None, int, SeedSequence or Generator, default=None
        Seeds the initialization only; keys and masks come from the
        operating system, the result is reproducible.
    executor : concurrent.futures.Executor, optional
        Runs each client's local step (assignment and sums); default: in the
        calling thread.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[-0.9, -0.8], [-0.8, -0.9], [0.8, 0.9], [0.9, 0.8]])
    >>> km = FederatedLloyd(2, random_state=0).fit([X[:2], X[2:]])
    >>> np.round(np.sort(km.cluster_centers_, axis=0), 4).tolist()
    [[-0.85, -0.85], [0.85, 0.85]]
    """

    _relative = True

    def __init__(self, n_clusters: int, *, max_iter: int = 300,
                 init: str | ArrayLike = "sphere_packing", postprocess: str = "none",
                 bounds: tuple[float, float] = (-1, 1), random_state: SeedLike = None,
                 executor: Executor | None = None) -> None:
        super().__init__(n_clusters, max_iter=max_iter, init=init, postprocess=postprocess,
                         bounds=bounds, random_state=random_state, executor=executor)

    def _check_params(self):
        _check_max_iter(self.max_iter, allow_auto=False)

    def _plan(self, n, k, d, bounds):
        T = int(self.max_iter)
        report = {"epsilon": math.inf, "delta": 0.0, "iterations": T, "noise": None}
        return [{"eta": None}] * T, report, None, None

    _fixed_rounds = False    # stops at convergence: keys are shared round by round

    def _converged(self, old, new):
        return float(np.abs(new - old).max()) <= 2.0 ** -DEFAULT_SCALE_BITS
