"""Tests of pyfkm.privacy: accounting (known published values, an independent
numerical oracle for the hockey-stick divergence) and the privacy sanity
check of the noise streams.

Oracle for delta: for the Gaussian mechanism with mu = Delta/sigma the
privacy loss L = log(p0/p1)(Y), Y ~ N(0, sigma^2), is N(mu^2/2, mu^2), and
delta(eps) = E[(1 - e^(eps - L))_+] (hockey-stick divergence).  We integrate
this with scipy.integrate.quad, independently of the closed form used by the
code.
"""
import math

import numpy as np
import pytest
from scipy import integrate, stats

from pyfkm import dp as P
from pyfkm.exceptions import InvalidInputError


def delta_by_integration(mu, eps):
    """E[(1 - exp(eps - L))_+], L ~ N(mu^2/2, mu^2), by numerical quadrature."""
    m, s = mu * mu / 2, mu
    f = lambda l: (1.0 - math.exp(eps - l)) * stats.norm.pdf(l, m, s)  # noqa: E731
    val, _ = integrate.quad(f, eps, m + 40 * s, epsabs=1e-14, epsrel=1e-10, limit=200)
    return val


# ------------------------------------------------------------ bad input first
@pytest.mark.parametrize("eps, delta, sens", [
    (0, 1e-5, 1), (-1, 1e-5, 1), (float("nan"), 1e-5, 1), (float("inf"), 1e-5, 1),
    (1, 0, 1), (1, 1, 1), (1, -1e-5, 1), (1, 1e-5, 0), (1, 1e-5, -2), ("1", 1e-5, 1),
    (True, 1e-5, 1)])
def test_calibrate_rejects_bad_parameters(eps, delta, sens):
    with pytest.raises(InvalidInputError):
        P.calibrate_analytic_gaussian(eps, delta, sens)


def test_other_functions_reject_bad_parameters():
    bad_calls = [
        lambda: P.analytic_gaussian_delta(0, 1), lambda: P.analytic_gaussian_delta(1, -1),
        lambda: P.analytic_gaussian_epsilon(1, 2), lambda: P.gdp_mu(0),
        lambda: P.compose_gdp([0.1, -0.2]), lambda: P.gdp_delta(-1, 1),
        lambda: P.gdp_epsilon(1, 0), lambda: P.calibrate_iterations(1, 1e-5, 0),
        lambda: P.calibrate_iterations(1, 1e-5, 2.5),
        lambda: P.fastlloyd_noise_scales(1, 0), lambda: P.fastlloyd_noise_scales(-1, 2),
        lambda: P.fastlloyd_iterations(0, 2, 2, 1, 1), lambda: P.fastlloyd_iterations(10, 2, 2, 0, 1),
        lambda: P.default_delta(1), lambda: P.default_delta(2.0),
        lambda: P.PrivacyAccountant(0, 1e-5), lambda: P.PrivacyAccountant(1, 1),
    ]
    for call in bad_calls:
        with pytest.raises(InvalidInputError):
            call()


def test_accountant_rejects_bad_spends_and_stays_unchanged():
    acc = P.PrivacyAccountant(1.0, 1e-5)
    acc.spend("gaussian", 10.0)
    before = acc.summary()
    for args in [("uniform", 1.0), ("gaussian", 0.0), ("gaussian", 1.0, -1.0),
                 ("gaussian", 1.0, 1.0, 0), ("laplace", float("nan"))]:
        with pytest.raises(InvalidInputError):
            acc.spend(*args)
    with pytest.raises(InvalidInputError, match="exceed the budget"):
        acc.spend("gaussian", 1.0)
    with pytest.raises(InvalidInputError, match="exceed the budget"):
        acc.spend("laplace", 0.5)
    assert acc.summary() == before


# --------------------------------------------------------------- known values
@pytest.mark.parametrize("eps, delta, expected, tol", [
    (1.0, 1e-5, 3.731, 5e-4), (0.5, 1e-5, 7.03, 5e-3), (0.1, 1e-5, 30.75, 5e-3),
    (1.0, 1e-6, 4.225, 5e-4)])
def test_calibration_published_values(eps, delta, expected, tol):
    # values quoted in issue 7 (FastLloyd / Balle & Wang analytic Gaussian)
    assert abs(P.calibrate_analytic_gaussian(eps, delta) - expected) < tol


@pytest.mark.parametrize("mu, eps", [(0.1, 0.0), (0.268, 1.0), (0.5, 0.3), (1.0, 0.0),
                                     (1.0, 2.0), (2.0, 1.0), (3.0, 4.0)])
def test_delta_matches_numerical_hockey_stick(mu, eps):
    expected = delta_by_integration(mu, eps)
    assert P.gdp_delta(mu, eps) == pytest.approx(expected, rel=1e-7, abs=1e-15)
    # the analytic Gaussian with sigma = 2/mu and sensitivity 2 is the same mechanism
    assert P.analytic_gaussian_delta(2.0 / mu, eps, 2.0) == pytest.approx(expected, rel=1e-7,
                                                                          abs=1e-15)


def test_gdp_delta_at_zero_is_total_variation():
    # TV(N(0,1), N(mu,1)) = 2 Phi(mu/2) - 1
    for mu in (0.2, 1.0, 3.0):
        assert P.gdp_delta(mu, 0.0) == pytest.approx(2 * stats.norm.cdf(mu / 2) - 1, rel=1e-12)


@pytest.mark.parametrize("eps, delta, sens", [(1.0, 1e-5, 1.0), (0.25, 1e-6, 3.5),
                                              (4.0, 1e-3, 0.2), (0.05, 1e-9, 1.0)])
def test_calibration_is_tight_and_inverse_directions_agree(eps, delta, sens):
    sigma = P.calibrate_analytic_gaussian(eps, delta, sens)
    d_at = delta_by_integration(sens / sigma, eps)
    assert d_at <= delta * (1 + 1e-6)
    assert d_at == pytest.approx(delta, rel=1e-5)
    # 0.1 % less noise breaks the guarantee
    assert delta_by_integration(sens / (sigma * 0.999), eps) > delta
    assert P.analytic_gaussian_delta(sigma, eps, sens) <= delta
    assert P.analytic_gaussian_epsilon(sigma, delta, sens) == pytest.approx(eps, rel=1e-8)
    assert P.gdp_epsilon(P.gdp_mu(sigma, sens), delta) == pytest.approx(eps, rel=1e-8)
    # linear in the sensitivity
    assert sigma == pytest.approx(sens * P.calibrate_analytic_gaussian(eps, delta), rel=1e-12)


def test_analytic_beats_classical_bound_for_small_epsilon():
    # Dwork & Roth Thm A.1: sigma = sqrt(2 ln(1.25/delta))/eps suffices for eps < 1
    for eps in (0.1, 0.5, 0.9):
        classical = math.sqrt(2 * math.log(1.25 / 1e-5)) / eps
        assert P.calibrate_analytic_gaussian(eps, 1e-5) < classical


def test_gdp_epsilon_zero_when_delta_covers_it():
    assert P.gdp_epsilon(0.01, 0.5) == 0.0


# ---------------------------------------------------------------- composition
def test_compose_gdp():
    assert P.compose_gdp([]) == 0.0
    assert P.compose_gdp([3.0, 4.0]) == pytest.approx(5.0)
    assert P.compose_gdp([0.2] * 9) == pytest.approx(0.6)
    assert P.gdp_mu(8.0, 2.0) == 0.25


@pytest.mark.parametrize("T", [1, 2, 5, 7])
def test_calibrate_iterations_composes_to_the_budget(T):
    eps, delta = 0.5, 1e-5
    sigma = P.calibrate_iterations(eps, delta, T)
    # T independent Gaussian mechanisms: privacy losses add, the total loss is
    # N(T mu^2/2, T mu^2) -- the integration oracle with sqrt(T) mu
    total = delta_by_integration(math.sqrt(T) / sigma, eps)
    assert total == pytest.approx(delta, rel=1e-5)
    assert sigma == pytest.approx(math.sqrt(T) * P.calibrate_analytic_gaussian(eps, delta))


# ------------------------------------------------------------------ FastLloyd
def test_fastlloyd_noise_scales_hand_values():
    sr, sc = P.fastlloyd_noise_scales(2.0, 1)  # 4d = 4, 1 + sqrt(4d) = 3
    assert sr == pytest.approx(2.0 * math.sqrt(3) / math.sqrt(2))
    assert sc == pytest.approx(2.0 * math.sqrt(3))
    for d in (1, 2, 10, 50):
        sr, sc = P.fastlloyd_noise_scales(1.7, d)
        assert 1 / sr ** 2 + 1 / sc ** 2 == pytest.approx(1 / 1.7 ** 2)
        assert sc / sr == pytest.approx((4 * d) ** 0.25)


def test_fastlloyd_iterations_floor_and_clip():
    # d = 4: (1 + sqrt(16))^2 = 25; t = 0.016 n^2 / (25 k^3 eta^2 sigma^2)
    assert P.fastlloyd_iterations(75, 1, 4, 1.0, 1.0) == 3        # t = 3.6
    assert P.fastlloyd_iterations(100, 1, 4, 1.0, 1.0) == 6       # t = 6.4
    assert P.fastlloyd_iterations(1000, 1, 4, 1.0, 1.0) == 7      # t = 640
    assert P.fastlloyd_iterations(10, 1, 4, 1.0, 1.0) == 2        # t = 0.064
    assert P.fastlloyd_iterations(150, 2, 4, 0.5, 1.0) == 7       # t = 14.4
    assert P.fastlloyd_iterations(150, 2, 4, 1.0, 2.0) == 2       # t = 0.9


def test_default_delta():
    assert P.default_delta(100) == pytest.approx(1 / (100 * math.log(100)))
    assert P.default_delta(2) == pytest.approx(1 / (2 * math.log(2)))


# ----------------------------------------------------------------- accountant
def test_accountant_gaussian_spends_compose():
    eps, delta, T = 1.0, 1e-5, 5
    sigma = P.calibrate_iterations(eps, delta, T)
    acc = P.PrivacyAccountant(eps, delta)
    sr, sc = P.fastlloyd_noise_scales(sigma, 3)
    for _ in range(T):  # one FastLloyd iteration = sums (eta) + counts
        acc.spend("gaussian", sr * 0.4, sensitivity=0.4)
        acc.spend("discrete_gaussian", sc)
    assert acc.mu == pytest.approx(math.sqrt(T) / sigma)
    e, d = acc.spent()
    assert d == delta and e == pytest.approx(eps, rel=1e-7)
    assert not acc.can_spend("gaussian", 1e3)
    assert len(acc.spends) == 2 * T
    s = acc.summary()
    assert s["epsilon_spent"] == e and s["mu"] == acc.mu and len(s["spends"]) == 2 * T
    assert "PrivacyAccountant" in repr(acc)


def test_accountant_laplace_and_mixed():
    acc = P.PrivacyAccountant(1.0, 1e-5)
    acc.spend("laplace", 4.0, count=2)            # 2 x 1/4
    assert acc.epsilon_spent() == pytest.approx(0.5)
    sigma = P.calibrate_analytic_gaussian(0.5, 1e-5)
    assert acc.can_spend("gaussian", sigma)
    assert not acc.can_spend("gaussian", sigma * 0.99)
    acc.spend("gaussian", sigma)
    assert acc.epsilon_spent() == pytest.approx(1.0, rel=1e-7)
    assert acc.remaining_epsilon() == pytest.approx(0.0, abs=1e-7)
    # a different delta reports a different epsilon for the same mu
    assert acc.epsilon_spent(1e-3) < acc.epsilon_spent()


def test_new_noise_key():
    k = P.new_noise_key()
    assert isinstance(k, bytes) and len(k) == 32 and k != P.new_noise_key()
    assert P.new_noise_key(5) == P.new_noise_key(5) != P.new_noise_key(6)
    assert P.new_noise_key(np.random.SeedSequence(5)) == P.new_noise_key(np.random.SeedSequence(5))


# ----------------------------------------------------- privacy sanity check
EPS_SANITY, DELTA_SANITY, N_SANITY, Z_SANITY = 4.0, 1e-3, 1_000_000, 4.0


def empirical_violation(y0, y1, eps, thresholds):
    """max over events S in {y > tau}, {y <= tau} and both directions of
    (P_a(S) - e^eps P_b(S)) minus its statistical margin.

    margin = Z * (se_a + e^eps se_b) with binomial standard errors; Z = 4 is
    a per-event two-sided normal level of 6.3e-5, i.e. below 1e-2 over the
    <= 160 events tested (Bonferroni).  A value > delta is a violation.
    """
    n0, n1 = len(y0), len(y1)
    y0s, y1s = np.sort(y0), np.sort(y1)
    worst = -np.inf
    for tau in thresholds:
        p0 = 1 - np.searchsorted(y0s, tau, side="right") / n0   # P0(y > tau)
        p1 = 1 - np.searchsorted(y1s, tau, side="right") / n1
        for pa, pb, na, nb in ((p1, p0, n1, n0), (p0, p1, n0, n1),
                               (1 - p1, 1 - p0, n1, n0), (1 - p0, 1 - p1, n0, n1)):
            se = lambda p, n: math.sqrt(max(p * (1 - p), 1.0 / n) / n)  # noqa: E731
            margin = Z_SANITY * (se(pa, na) + math.exp(eps) * se(pb, nb))
            worst = max(worst, pa - math.exp(eps) * pb - margin)
    return worst


def sanity_samples(kind, sigma, scale=1):
    """Gaussian-mechanism outputs on neighbouring 1-D sums 0 and 1 (times scale)."""
    from pyfkm.core.noise import NoiseStream, new_noise_key
    key = new_noise_key(2024)
    s0 = NoiseStream.secure(key, 0, b"D0")
    s1 = NoiseStream.secure(key, 0, b"D1")
    if kind == "gaussian":
        return s0.gaussian(N_SANITY, sigma), 1.0 + s1.gaussian(N_SANITY, sigma)
    z0 = s0.discrete_gaussian(N_SANITY, sigma * scale)
    z1 = scale + s1.discrete_gaussian(N_SANITY, sigma * scale)
    return z0 / scale, z1 / scale


@pytest.mark.statistical
@pytest.mark.parametrize("kind, scale", [("gaussian", 1), ("discrete_gaussian", 2 ** 16),
                                         ("discrete_gaussian", 1)])
def test_privacy_sanity_neighbouring_sums(kind, scale):
    sigma = P.calibrate_analytic_gaussian(EPS_SANITY, DELTA_SANITY)
    y0, y1 = sanity_samples(kind, sigma, scale)
    # the tight event of the Gaussian mechanism, y > sigma^2 eps + 1/2, plus a grid
    taus = np.concatenate([[sigma ** 2 * EPS_SANITY + 0.5], np.linspace(-3, 4, 39)])
    assert empirical_violation(y0, y1, EPS_SANITY, taus) <= DELTA_SANITY


@pytest.mark.statistical
def test_privacy_sanity_detects_too_little_noise():
    # the same check catches a mechanism with half the calibrated noise
    sigma = P.calibrate_analytic_gaussian(EPS_SANITY, DELTA_SANITY) / 2
    y0, y1 = sanity_samples("gaussian", sigma)
    taus = np.concatenate([[sigma ** 2 * EPS_SANITY + 0.5], np.linspace(-3, 4, 39)])
    assert empirical_violation(y0, y1, EPS_SANITY, taus) > DELTA_SANITY


def test_zcdp_epsilon_is_valid_but_looser_than_gdp():
    assert P.zcdp_epsilon(0.0, 1e-5) == 0.0
    assert P.zcdp_epsilon(0.02, 1e-5) == pytest.approx(0.02 + 2 * math.sqrt(0.02 * math.log(1e5)))
    for mu in (0.1, 0.5, 1.0):
        # the Gaussian mechanism is mu-GDP and mu^2/2-zCDP; the GDP conversion is tight
        assert P.zcdp_epsilon(mu ** 2 / 2, 1e-5) >= P.gdp_epsilon(mu, 1e-5)
    acc = P.PrivacyAccountant(2.0, 1e-5)
    acc.spend("discrete_gaussian", 4.0, count=3)
    s = acc.summary()
    assert s["epsilon_zcdp"] == pytest.approx(P.zcdp_epsilon(3 / 32, 1e-5))
    assert s["epsilon_zcdp"] >= s["epsilon_spent"]


def test_calibration_with_huge_epsilon_and_float_noise_scale_limits():
    # found by review: brentq got an unbracketed interval below sigma = 1e-6,
    # and float samplers returned inf for huge scales
    from pyfkm.dp import NoiseStream, analytic_gaussian_delta, calibrate_analytic_gaussian
    s = calibrate_analytic_gaussian(1e13, 1e-5)
    assert 0 < s < 1e-6
    assert analytic_gaussian_delta(s, 1e13) <= 1e-5
    ns = NoiseStream.from_generator(0)
    for draw in (ns.gaussian, ns.laplace):
        with pytest.raises(InvalidInputError, match="too large"):
            draw(10, 1e308)
        assert np.isfinite(draw(1000, 2.0 ** 500)).all()
