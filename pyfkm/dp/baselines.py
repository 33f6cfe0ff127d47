"""The trusted-curator baselines of FastLloyd's evaluation.

:class:`GLloyd` (Gaussian noise on absolute sums, no radius) and
:class:`SuLloyd` (Laplace noise, Su et al. 2016) run the same federated loop
as :class:`~pyfkm.dp.DPFederatedKMeans` (``pyfkm.dp._lloyd_base``) with the
noise added by the server: they model a trusted curator, which could remove
it.  Their splits of the budget between sums and counts use Su et al.'s
``rho = 0.225``.
"""
from __future__ import annotations

import math
from concurrent.futures import Executor

from numpy.typing import ArrayLike

from ..rng import SeedLike
from ..secagg import DEFAULT_SCALE_BITS, check_discrete_sigma
from ._lloyd_base import _check_epsilon, _check_max_iter, _FederatedLloydBase, _GaussianLloydBase

__all__ = ["GLloyd", "SuLloyd"]

_RHO = 0.225          # Su et al. (2016)'s rho, used by the SuLloyd / GLloyd splits


class GLloyd(_GaussianLloydBase):
    """Gaussian-noise federated Lloyd without the radius constraint (the
    "GLloyd" baseline of FastLloyd).

    Absolute sums (L2 sensitivity ``sqrt(d) max(|lo|, |hi|)``) and counts
    with noise ``sigma_it * sqrt(2 rho + sqrt(d)) / d^(1/4)`` (times the
    sensitivity) and ``sigma_it * sqrt(2 rho + sqrt(d)) / sqrt(2 rho)``,
    ``rho = 0.225``; the two release together a Gaussian mechanism of
    sigma ``sigma_it`` at sensitivity 1.  ``T`` (``max_iter="auto"``):
    ``clip(0.004 n^2 / (k^3 d (2 rho + sqrt d)^2 sigma_1^2), 2, 7)``, the
    paper's constants.

    Parameters
    ----------
    n_clusters : int
        Number of centers (at least 1, at most the number of points).
    epsilon : float
        Privacy budget of the whole fit (add/remove one point), > 0.
    delta : "auto" or float, default="auto"
        ``"auto"``: ``1 / (n ln n)``.
    max_iter : "auto" or int, default="auto"
        Number of iterations ``T`` (all of them run: the budget is split
        over ``T``); ``"auto"``: the formula above.
    init : "sphere_packing" or array (n_clusters, n_features), default="sphere_packing"
        Initial centers; must not depend on the data (an array is assumed
        public).
    postprocess : {"fold", "truncate", "none"}, default="fold"
        How centers are brought back into the bounds.
    noise : {"gaussian", "discrete_gaussian"}, default="gaussian"
        ``"gaussian"``: continuous noise added by the server, rounded to
        the grid; ``"discrete_gaussian"``: distributed discrete Gaussian
        shares added by the clients (as :class:`DPFederatedKMeans`).
    bounds : (float, float), default=(-1, 1)
        Every feature of every point lies in ``[lo, hi]`` (checked).
    random_state : None, int, SeedSequence or Generator, default=None
        Seeds the initialization only; keys, masks and the noise come from
        the operating system.
    executor : concurrent.futures.Executor, optional
        Runs each client's local step (assignment and sums); default: in the
        calling thread.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, (300, 2))
    >>> GLloyd(2, epsilon=1.0, random_state=0).fit([X[:150], X[150:]]).n_iter_ >= 2
    True
    """

    _relative = False

    def __init__(self, n_clusters: int, *, epsilon: float, delta: float | str = "auto",
                 max_iter: int | str = "auto", init: str | ArrayLike = "sphere_packing",
                 postprocess: str = "fold", noise: str = "gaussian",
                 bounds: tuple[float, float] = (-1, 1), random_state: SeedLike = None,
                 executor: Executor | None = None) -> None:
        super().__init__(n_clusters, epsilon=epsilon, delta=delta, max_iter=max_iter, init=init,
                         postprocess=postprocess, noise=noise, bounds=bounds,
                         random_state=random_state, executor=executor)

    def _check_params(self):
        self._check_budget(allow_inf=False)
        self._check_noise()

    def _plan(self, n, k, d, bounds):
        from . import accounting as P
        eps = float(self.epsilon)
        delta = self._delta(n)
        sigma1 = P.calibrate_analytic_gaussian(eps, delta, 1.0)
        if self.max_iter == "auto":
            t = 0.004 * n ** 2 / (k ** 3 * d * (2 * _RHO + math.sqrt(d)) ** 2 * sigma1 ** 2)
            T = int(min(max(t, 2), 7))
        else:
            T = int(self.max_iter)
        sigma_it = sigma1 * math.sqrt(T)
        base = math.sqrt(2 * _RHO + math.sqrt(d))
        sens = math.sqrt(d) * max(abs(bounds[0]), abs(bounds[1])) \
            + math.sqrt(d) * 2.0 ** -DEFAULT_SCALE_BITS
        step = {"eta": None, "sum_scale": sigma_it * base / d ** 0.25 * sens,
                "count_scale": sigma_it * base / math.sqrt(2 * _RHO), "sigma": sigma_it}
        if self.noise == "discrete_gaussian":
            check_discrete_sigma([step["sum_scale"], step["count_scale"]])
        acct = P.PrivacyAccountant(eps, delta)
        report = {"epsilon": eps, "delta": delta, "iterations": T, "sigma": sigma_it,
                  "noise": self.noise}
        return [step] * T, report, acct, self.noise

class SuLloyd(_FederatedLloydBase):
    """Laplace-noise federated Lloyd (Su et al. 2016), pure epsilon-DP.

    Per iteration ``epsilon / T`` is split between the absolute sums (L1
    sensitivity ``d max(|lo|, |hi|)``) and the counts (sensitivity 1) in the
    ratio ``d : (4 d rho^2)^(1/3)``, ``rho = 0.225``; ``T``
    (``max_iter="auto"``) is ``epsilon / epsilon_m`` with ``epsilon_m =
    sqrt(500 k^3 / n^2 (d + (4 d rho^2)^(1/3))^3)``, clipped to [2, 7].
    Budget by basic composition (reported in ``privacy_``).

    Parameters
    ----------
    n_clusters : int
        Number of centers (at least 1, at most the number of points).
    epsilon : float
        Privacy budget of the whole fit (pure epsilon-DP), > 0.
    max_iter : "auto" or int, default="auto"
        Number of iterations ``T``; ``"auto"``: the formula above.
    init : "sphere_packing" or array (n_clusters, n_features), default="sphere_packing"
        Initial centers; must not depend on the data (an array is assumed
        public).
    postprocess : {"fold", "truncate", "none"}, default="fold"
        How centers are brought back into the bounds.
    bounds : (float, float), default=(-1, 1)
        Every feature of every point lies in ``[lo, hi]`` (checked).
    random_state : None, int, SeedSequence or Generator, default=None
        Seeds the initialization only; keys, masks and the noise come from
        the operating system.
    executor : concurrent.futures.Executor, optional
        Runs each client's local step (assignment and sums); default: in the
        calling thread.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, (300, 2))
    >>> SuLloyd(2, epsilon=1.0, random_state=0).fit([X[:150], X[150:]]).privacy_["epsilon"]
    1.0
    """

    _relative = False

    def __init__(self, n_clusters: int, *, epsilon: float, max_iter: int | str = "auto",
                 init: str | ArrayLike = "sphere_packing", postprocess: str = "fold",
                 bounds: tuple[float, float] = (-1, 1), random_state: SeedLike = None,
                 executor: Executor | None = None) -> None:
        super().__init__(n_clusters, max_iter=max_iter, init=init, postprocess=postprocess,
                         bounds=bounds, random_state=random_state, executor=executor)
        self.epsilon = epsilon

    def _check_params(self):
        _check_epsilon(self.epsilon, allow_inf=False)
        _check_max_iter(self.max_iter)

    def _plan(self, n, k, d, bounds):
        eps = float(self.epsilon)
        c = (4 * d * _RHO ** 2) ** (1 / 3)
        if self.max_iter == "auto":
            eps_m = math.sqrt(500 * k ** 3 / n ** 2 * (d + c) ** 3)
            T = int(min(max(eps / eps_m, 2), 7))
        else:
            T = int(self.max_iter)
        eps_it = eps / T
        eps_sum, eps_cnt = eps_it * d / (d + c), eps_it * c / (d + c)
        l1 = d * max(abs(bounds[0]), abs(bounds[1])) + d * 2.0 ** -DEFAULT_SCALE_BITS
        step = {"eta": None, "sum_scale": l1 / eps_sum, "count_scale": 1.0 / eps_cnt}
        report = {"epsilon": eps_it * T, "delta": 0.0, "iterations": T,
                  "epsilon_per_iteration": eps_it, "noise": "laplace"}
        return [step] * T, report, None, "laplace"
