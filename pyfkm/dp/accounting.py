"""Differential-privacy accounting (FastLloyd, issue 7).

Accounting
----------
* The analytic Gaussian mechanism (Balle & Wang, ICML 2018, Theorem 8): the
  Gaussian mechanism with L2 sensitivity ``Delta`` and noise ``N(0, sigma^2)``
  is (epsilon, delta)-DP if and only if

      delta >= Phi(Delta/(2 sigma) - epsilon sigma/Delta)
               - e^epsilon Phi(-Delta/(2 sigma) - epsilon sigma/Delta).

  :func:`calibrate_analytic_gaussian` solves it for the smallest sigma,
  :func:`analytic_gaussian_delta` / :func:`analytic_gaussian_epsilon` give
  the other directions.
* Gaussian differential privacy (Dong, Roth & Su, JRSS-B 2022): the
  Gaussian mechanism is mu-GDP with ``mu = Delta / sigma``; T mechanisms that
  are mu_i-GDP compose to ``sqrt(sum mu_i^2)``-GDP (exactly, adaptively), and
  mu-GDP is (epsilon, delta(epsilon))-DP with the same curve as above
  (``Delta/sigma`` replaced by ``mu``).  Composing in GDP and then converting
  is therefore tight for Gaussian mechanisms.
* The FastLloyd split of one iteration's budget between the relative sums
  (sensitivity eta, radius of the cluster) and the counts (sensitivity 1),
  and its heuristic number of iterations (Diaa, Humphries & Kerschbaum).

The noise itself is drawn by :class:`pyfkm.core.noise.NoiseStream`.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable

from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

from .._validation import check_int, check_nonnegative, check_positive
from ..exceptions import InvalidInputError

__all__ = [
    "calibrate_analytic_gaussian",
    "analytic_gaussian_delta",
    "analytic_gaussian_epsilon",
    "gdp_mu",
    "compose_gdp",
    "gdp_delta",
    "gdp_epsilon",
    "calibrate_iterations",
    "zcdp_epsilon",
    "fastlloyd_noise_scales",
    "fastlloyd_iterations",
    "default_delta",
    "PrivacyAccountant",
]



def _delta_arg(delta: float, name: str = "delta") -> float:
    delta = check_positive(delta, name)
    if delta >= 1:
        raise InvalidInputError(f"{name}={delta} must be in (0, 1); e.g. default_delta(n)")
    return delta


# ------------------------------------------------------- Gaussian mechanism
def _delta_of_mu(mu: float, epsilon: float) -> float:
    """delta(epsilon) of mu-GDP (Dong, Roth & Su 2022, Cor. 2.13), with the
    second term in log space so that e^epsilon does not overflow."""
    if mu == 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    a = mu / 2.0
    b = epsilon / mu
    first = float(ndtr(a - b))
    second = math.exp(min(epsilon + float(log_ndtr(-a - b)), 700.0))
    return max(first - second, 0.0)


def _solve_decreasing(f: Callable[[float], float], target: float, lo: float, hi: float
                      ) -> float:
    """x in [...lo, hi...] with f(x) = target for decreasing f (the bracket
    grown as needed)."""
    while f(hi) > target:
        hi *= 2.0
        if hi > 1e300:
            raise InvalidInputError("no solution: the requested privacy level is unreachable")
    while f(lo) < target:
        lo *= 0.5
        if lo < 1e-300:
            raise InvalidInputError("no solution: the requested privacy level needs no noise "
                                    "representable in floating point (epsilon too large)")
    return brentq(lambda x: f(x) - target, lo, hi, xtol=1e-15, rtol=1e-15, maxiter=500)


def analytic_gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Smallest delta for which the Gaussian mechanism is (epsilon, delta)-DP.

    Parameters
    ----------
    sigma : float
        Standard deviation of the Gaussian noise (> 0).
    epsilon : float
        Privacy parameter (>= 0).
    sensitivity : float, default=1.0
        L2 sensitivity of the query (> 0).

    Returns
    -------
    float
        ``Phi(D/(2s) - e s/D) - e^e Phi(-D/(2s) - e s/D)`` (Balle & Wang
        2018, Theorem 8).

    Examples
    --------
    >>> round(analytic_gaussian_delta(3.7306, 1.0), 7)
    1e-05
    """
    sigma = check_positive(sigma, "sigma")
    epsilon = check_nonnegative(epsilon, "epsilon")
    sensitivity = check_positive(sensitivity, "sensitivity")
    return _delta_of_mu(sensitivity / sigma, epsilon)


def calibrate_analytic_gaussian(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest sigma making the Gaussian mechanism (epsilon, delta)-DP.

    The analytic Gaussian mechanism of Balle & Wang (ICML 2018): the exact
    (necessary and sufficient) condition of Theorem 8 solved for sigma with
    Brent's method; the result is rounded up so that
    ``analytic_gaussian_delta(sigma, epsilon) <= delta`` holds in floating
    point.  Valid for every epsilon > 0 (unlike the classical
    ``sqrt(2 ln(1.25/delta))/epsilon`` bound, which needs epsilon < 1).

    Parameters
    ----------
    epsilon : float
        Privacy parameter (> 0).
    delta : float
        Privacy parameter in (0, 1).
    sensitivity : float, default=1.0
        L2 sensitivity of the query (> 0); sigma scales linearly with it.

    Returns
    -------
    float
        The noise standard deviation.

    Raises
    ------
    InvalidInputError
        If a parameter is out of range.

    Examples
    --------
    >>> round(calibrate_analytic_gaussian(1.0, 1e-5), 3)
    3.731
    >>> round(calibrate_analytic_gaussian(0.5, 1e-5, sensitivity=2.0), 2)
    14.06
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = _delta_arg(delta)
    sensitivity = check_positive(sensitivity, "sensitivity")
    # Solve in mu = 1/sigma' for unit sensitivity (delta increases with mu).
    s = _solve_decreasing(lambda s: _delta_of_mu(1.0 / s, epsilon), delta, 1e-6, 1.0)
    while _delta_of_mu(1.0 / s, epsilon) > delta:  # round up, never below
        s = math.nextafter(s, math.inf)
    return s * sensitivity


def analytic_gaussian_epsilon(sigma: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest epsilon for which the Gaussian mechanism is (epsilon, delta)-DP.

    Inverse of :func:`analytic_gaussian_delta` in epsilon (rounded up).

    Parameters
    ----------
    sigma : float
        Standard deviation of the Gaussian noise (> 0).
    delta : float
        Privacy parameter in (0, 1).
    sensitivity : float, default=1.0
        L2 sensitivity of the query (> 0).

    Returns
    -------
    epsilon : float
        The smallest epsilon (>= 0).

    Raises
    ------
    InvalidInputError
        If a parameter is out of range.

    Examples
    --------
    >>> round(analytic_gaussian_epsilon(calibrate_analytic_gaussian(0.5, 1e-5), 1e-5), 6)
    0.5
    """
    sigma = check_positive(sigma, "sigma")
    delta = _delta_arg(delta)
    sensitivity = check_positive(sensitivity, "sensitivity")
    return gdp_epsilon(sensitivity / sigma, delta)


# ---------------------------------------------------- Gaussian DP (f-DP)
def gdp_mu(sigma: float, sensitivity: float = 1.0) -> float:
    """mu of the Gaussian mechanism in Gaussian DP: ``sensitivity / sigma``.

    Parameters
    ----------
    sigma : float
        Standard deviation of the Gaussian noise (> 0).
    sensitivity : float, default=1.0
        L2 sensitivity of the query (> 0).

    Returns
    -------
    mu : float
        The mechanism is mu-GDP.

    Examples
    --------
    >>> gdp_mu(4.0, 2.0)
    0.5
    """
    return check_positive(sensitivity, "sensitivity") / check_positive(sigma, "sigma")


def compose_gdp(mus: Iterable[float]) -> float:
    """mu of the composition of mu_i-GDP mechanisms: ``sqrt(sum mu_i^2)``
    (Dong, Roth & Su 2022, Cor. 3.3; holds for adaptive composition).

    Parameters
    ----------
    mus : iterable of float
        The mu (>= 0) of each mechanism.

    Returns
    -------
    mu : float
        mu of the composition.

    Examples
    --------
    >>> compose_gdp([0.3, 0.4])
    0.5
    """
    mus = [check_nonnegative(m, "mu") for m in mus]
    return math.sqrt(math.fsum(m * m for m in mus))


def gdp_delta(mu: float, epsilon: float) -> float:
    """delta(epsilon) of a mu-GDP mechanism:
    ``Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)``.

    Parameters
    ----------
    mu : float
        GDP parameter (>= 0).
    epsilon : float
        Privacy parameter (>= 0).

    Returns
    -------
    delta : float
        The smallest delta for which the mechanism is (epsilon, delta)-DP.

    Examples
    --------
    >>> round(gdp_delta(1.0, 0.0), 6)  # = 2 Phi(1/2) - 1
    0.382925
    """
    return _delta_of_mu(check_nonnegative(mu, "mu"), check_nonnegative(epsilon, "epsilon"))


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon for which a mu-GDP mechanism is (epsilon, delta)-DP
    (rounded up; 0 when delta already covers epsilon = 0).

    Parameters
    ----------
    mu : float
        GDP parameter (>= 0).
    delta : float
        Privacy parameter in (0, 1).

    Returns
    -------
    epsilon : float
        The smallest epsilon (>= 0).

    Raises
    ------
    InvalidInputError
        If a parameter is out of range.

    Examples
    --------
    >>> round(gdp_epsilon(1 / 3.7306316, 1e-5), 5)
    1.0
    """
    mu = check_nonnegative(mu, "mu")
    delta = _delta_arg(delta)
    if _delta_of_mu(mu, 0.0) <= delta:
        return 0.0
    e = _solve_decreasing(lambda e: _delta_of_mu(mu, e), delta, 0.0, 1.0)
    while _delta_of_mu(mu, e) > delta:
        e = math.nextafter(e, math.inf)
    return e


def calibrate_iterations(epsilon: float, delta: float, T: int, sensitivity: float = 1.0) -> float:
    """Per-iteration sigma so that T Gaussian mechanisms compose to
    (epsilon, delta)-DP.

    By GDP composition, T mechanisms with the same sigma are
    ``sqrt(T) * sensitivity / sigma``-GDP, so the answer is the analytic
    Gaussian sigma for (epsilon, delta) times ``sqrt(T)``.

    Parameters
    ----------
    epsilon : float
        Budget of the whole composition (> 0).
    delta : float
        Budget in (0, 1).
    T : int
        Number of mechanisms (iterations), >= 1.
    sensitivity : float, default=1.0
        L2 sensitivity of each query (> 0).

    Returns
    -------
    sigma : float
        Noise standard deviation of each iteration.

    Raises
    ------
    InvalidInputError
        If a parameter is out of range.

    Examples
    --------
    >>> s1 = calibrate_analytic_gaussian(1.0, 1e-5)
    >>> bool(abs(calibrate_iterations(1.0, 1e-5, 4) - 2 * s1) < 1e-12)
    True
    """
    T = check_int(T, "T", 1)
    return calibrate_analytic_gaussian(epsilon, delta, sensitivity) * math.sqrt(T)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """Epsilon of the (epsilon, delta)-DP implied by rho-zCDP:
    ``rho + 2 sqrt(rho ln(1/delta))`` (Bun & Steinke, TCC 2016, Prop. 1.3).

    A valid but not tight conversion; used for the rigorous statement of
    the discrete Gaussian (rho = Delta^2 / (2 sigma^2) per use, additive).

    Parameters
    ----------
    rho : float
        zCDP parameter (>= 0).
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    epsilon : float
        ``rho + 2 sqrt(rho ln(1/delta))``.

    Examples
    --------
    >>> round(zcdp_epsilon(0.5, math.exp(-2)), 6)  # 0.5 + 2 sqrt(1)
    2.5
    """
    rho = check_nonnegative(rho, "rho")
    delta = _delta_arg(delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


# ------------------------------------------------------------- FastLloyd
def fastlloyd_noise_scales(sigma: float, d: int) -> tuple[float, float]:
    """FastLloyd's split of sigma between relative sums and counts.

    Returns ``(sigma_R, sigma_C)`` with
    ``sigma_R = sigma * sqrt(1 + sqrt(4d)) / (4d)^(1/4)`` (noise on each
    coordinate of a relative sum, sensitivity eta) and
    ``sigma_C = sigma * sqrt(1 + sqrt(4d))`` (noise on a count, sensitivity
    1).  Since ``1/sigma_R^2 + 1/sigma_C^2 = 1/sigma^2``, one iteration
    that adds ``N(0, (eta sigma_R)^2)`` to each coordinate of the relative
    sums (L2 sensitivity eta: one point moves one sum by at most eta) and
    ``N(0, sigma_C^2)`` to each count (sensitivity 1) is ``1/sigma``-GDP,
    i.e. costs what one Gaussian mechanism with sigma costs.  The ratio
    ``sigma_C / sigma_R = (4d)^(1/4)`` is FastLloyd's choice (Diaa,
    Humphries & Kerschbaum).

    Parameters
    ----------
    sigma : float
        Standard deviation of the one Gaussian mechanism the iteration costs.
    d : int
        Number of features.

    Returns
    -------
    sigma_R : float
        Noise scale of each coordinate of a relative sum (per unit of eta).
    sigma_C : float
        Noise standard deviation of each count.

    Examples
    --------
    >>> sr, sc = fastlloyd_noise_scales(1.0, 4)
    >>> round(sr, 6), round(sc, 6)
    (1.118034, 2.236068)
    """
    sigma = check_positive(sigma, "sigma")
    d = check_int(d, "d", 1)
    g = 1.0 + math.sqrt(4.0 * d)
    return sigma * math.sqrt(g) / (4.0 * d) ** 0.25, sigma * math.sqrt(g)


def fastlloyd_iterations(n: int, k: int, d: int, eta: float, sigma: float) -> int:
    """FastLloyd's heuristic number of iterations.

    ``T = clip(0.016 n^2 / (k^3 eta^2 (1 + sqrt(4d))^2 sigma^2), 2, 7)``,
    where the real value is rounded down to an integer (``floor``) before
    clipping to [2, 7].

    Parameters
    ----------
    n : int
        Number of points (>= 1).
    k : int
        Number of clusters (>= 1).
    d : int
        Number of features (>= 1).
    eta : float
        Radius of the first iteration (> 0).
    sigma : float
        Per-iteration noise standard deviation (> 0).

    Returns
    -------
    T : int
        Number of iterations, between 2 and 7.

    Raises
    ------
    InvalidInputError
        If a parameter is out of range.

    Examples
    --------
    >>> fastlloyd_iterations(150, 3, 4, 1.0, 0.1)
    7
    >>> fastlloyd_iterations(150, 3, 4, 1.0, 10.0)
    2
    """
    n = check_int(n, "n", 1)
    k = check_int(k, "k", 1)
    d = check_int(d, "d", 1)
    eta = check_positive(eta, "eta")
    sigma = check_positive(sigma, "sigma")
    t = 0.016 * n * n / (k ** 3 * eta ** 2 * (1.0 + math.sqrt(4.0 * d)) ** 2 * sigma ** 2)
    return int(min(max(math.floor(t), 2), 7))


def default_delta(n: int) -> float:
    """Default delta for n records: ``1 / (n ln n)`` (n >= 2).

    Parameters
    ----------
    n : int
        Number of records (>= 2).

    Returns
    -------
    delta : float
        ``1 / (n ln n)``.

    Examples
    --------
    >>> round(default_delta(1000), 8)
    0.00014476
    """
    n = check_int(n, "n", 2)
    return 1.0 / (n * math.log(n))


# ------------------------------------------------------------ accountant
_GAUSSIAN = ("gaussian", "discrete_gaussian")


class PrivacyAccountant:
    """Budget bookkeeping for a fit: Gaussian spends in GDP, Laplace spends
    as pure epsilon.

    Gaussian spends (continuous or discrete Gaussian noise with standard
    deviation sigma on a query of L2 sensitivity Delta, ``count`` times)
    add ``count * (Delta/sigma)^2`` to ``mu^2`` (GDP composition).  Laplace
    spends (scale b, L1 sensitivity Delta) add ``count * Delta / b`` to a
    pure epsilon (basic composition).  The total is reported as
    ``(eps_laplace + gdp_epsilon(mu, delta), delta)``.  For the discrete
    Gaussian the GDP curve is the continuous one; see the module notes for
    what this claims.

    Parameters
    ----------
    epsilon, delta : float
        The budget; :meth:`spend` refuses anything that would exceed it.

    Examples
    --------
    >>> acc = PrivacyAccountant(1.0, 1e-5)
    >>> sigma = calibrate_iterations(1.0, 1e-5, 4)
    >>> for t in range(4):
    ...     acc.spend("gaussian", sigma)
    >>> eps, delta = acc.spent()
    >>> round(eps, 6), delta
    (1.0, 1e-05)
    >>> acc.spend("gaussian", sigma)
    Traceback (most recent call last):
    ...
    pyfkm.exceptions.InvalidInputError: ...exceed the budget...
    """

    _RTOL = 1e-9

    def __init__(self, epsilon: float, delta: float) -> None:
        self.epsilon = check_positive(epsilon, "epsilon")
        self.delta = _delta_arg(delta)
        self._mu2 = 0.0
        self._eps_pure = 0.0
        self.spends: list[dict[str, Any]] = []

    @property
    def mu(self) -> float:
        """GDP mu of the Gaussian spends so far."""
        return math.sqrt(self._mu2)

    def epsilon_spent(self, delta: float | None = None) -> float:
        """Epsilon spent so far at ``delta`` (default: the budget's delta).

        Parameters
        ----------
        delta : float, optional
            The delta at which to state the spend (default: the budget's delta).

        Returns
        -------
        epsilon : float
            Pure (Laplace) epsilon plus the GDP epsilon of the Gaussian spends at
            ``delta``.
        """
        delta = self.delta if delta is None else _delta_arg(delta)
        eps = self._eps_pure
        if self._mu2 > 0:
            eps += gdp_epsilon(self.mu, delta)
        return eps

    def spent(self) -> tuple[float, float]:
        """``(epsilon, delta)`` spent so far (delta is the budget's delta).

        Returns
        -------
        epsilon : float
            Epsilon spent so far.
        delta : float
            The budget's delta.
        """
        return self.epsilon_spent(), self.delta

    def remaining_epsilon(self) -> float:
        """Budget epsilon minus the spent epsilon (>= 0).

        Returns
        -------
        epsilon : float
            What the budget still allows, >= 0.
        """
        return max(self.epsilon - self.epsilon_spent(), 0.0)

    def _would_spend(self, mechanism: str, scale: float, sensitivity: float, count: int
                     ) -> tuple[float, float]:
        mu2, pure = self._mu2, self._eps_pure
        if mechanism in _GAUSSIAN:
            mu2 += count * (sensitivity / scale) ** 2
        else:
            pure += count * sensitivity / scale
        return mu2, pure

    def can_spend(self, mechanism: str, sigma: float, sensitivity: float = 1.0, count: int = 1
                  ) -> bool:
        """Whether :meth:`spend` with these arguments would be accepted.

        Parameters
        ----------
        mechanism : {"gaussian", "discrete_gaussian", "laplace"}
            The noise distribution.
        sigma : float
            Gaussian standard deviation, or the Laplace scale b.
        sensitivity : float, default=1.0
            L2 (Gaussian) or L1 (Laplace) sensitivity, in the units of sigma.
        count : int, default=1
            Number of uses.

        Returns
        -------
        ok : bool
            True if the spend fits in the budget.

        Raises
        ------
        InvalidInputError
            On bad arguments.
        """
        mechanism, sigma, sensitivity, count = self._check(mechanism, sigma, sensitivity, count)
        return self._fits(*self._would_spend(mechanism, sigma, sensitivity, count))

    def _fits(self, mu2: float, pure: float) -> bool:
        if pure > self.epsilon * (1 + self._RTOL):
            return False
        if mu2 == 0:
            return True
        # delta at the remaining epsilon must stay within the budget's delta
        rest = max(self.epsilon - pure, 0.0)
        return _delta_of_mu(math.sqrt(mu2), rest * (1 + self._RTOL)) <= self.delta * (1 + self._RTOL)

    @staticmethod
    def _check(mechanism: str, sigma: float, sensitivity: float, count: int
               ) -> tuple[str, float, float, int]:
        if mechanism not in _GAUSSIAN + ("laplace",):
            raise InvalidInputError(
                f"mechanism={mechanism!r} must be 'gaussian', 'discrete_gaussian' or 'laplace'")
        return (mechanism, check_positive(sigma, "sigma"), check_positive(sensitivity, "sensitivity"),
                check_int(count, "count", 1))

    def spend(self, mechanism: str, sigma: float, sensitivity: float = 1.0, count: int = 1
              ) -> None:
        """Record ``count`` uses of a mechanism; raise if over budget.

        Parameters
        ----------
        mechanism : {"gaussian", "discrete_gaussian", "laplace"}
            The noise distribution.
        sigma : float
            Gaussian standard deviation, or the Laplace scale b.
        sensitivity : float, default=1.0
            L2 (Gaussian) or L1 (Laplace) sensitivity, in the units of sigma.
        count : int, default=1
            Number of uses.

        Raises
        ------
        InvalidInputError
            On bad arguments, or if the spend would exceed the budget (the
            accountant is then unchanged).
        """
        mechanism, sigma, sensitivity, count = self._check(mechanism, sigma, sensitivity, count)
        mu2, pure = self._would_spend(mechanism, sigma, sensitivity, count)
        if not self._fits(mu2, pure):
            raise InvalidInputError(
                f"spending {count} x {mechanism}(sigma={sigma:.6g}, sensitivity="
                f"{sensitivity:.6g}) would exceed the budget (epsilon={self.epsilon}, "
                f"delta={self.delta}); increase the noise or the budget")
        self._mu2, self._eps_pure = mu2, pure
        self.spends.append({"mechanism": mechanism, "sigma": sigma,
                            "sensitivity": sensitivity, "count": count})

    def summary(self) -> dict[str, Any]:
        """A plain dict for reports: budget, spent (GDP), mu, the rigorous
        zCDP-based epsilon of the module notes, and the list of spends.

        Returns
        -------
        summary : dict
            Keys ``epsilon``, ``delta`` (the budget), ``epsilon_spent``,
            ``delta_spent``, ``mu``, ``epsilon_laplace``, ``epsilon_zcdp`` and
            ``spends`` (a list of dicts: mechanism, sigma, sensitivity, count).
        """
        eps, delta = self.spent()
        eps_z = self._eps_pure + zcdp_epsilon(self._mu2 / 2.0, self.delta)
        return {"epsilon": self.epsilon, "delta": self.delta, "epsilon_spent": eps,
                "delta_spent": delta, "mu": self.mu, "epsilon_laplace": self._eps_pure,
                "epsilon_zcdp": eps_z,
                "spends": [dict(s) for s in self.spends]}

    def __repr__(self) -> str:
        eps, _ = self.spent()
        return (f"PrivacyAccountant(epsilon={self.epsilon!r}, delta={self.delta!r}; "
                f"spent epsilon={eps:.6g}, mu={self.mu:.6g}, {len(self.spends)} spends)")
