"""Deprecated alias of :mod:`pyfkm.dp` (moved in issue 20; removed in pyfkm 0.3)."""
from ._deprecated import alias_module

__all__, __getattr__, __dir__ = alias_module(__name__, "pyfkm.dp", [
    "calibrate_analytic_gaussian", "analytic_gaussian_delta", "analytic_gaussian_epsilon",
    "gdp_mu", "compose_gdp", "gdp_delta", "gdp_epsilon", "calibrate_iterations",
    "zcdp_epsilon", "fastlloyd_noise_scales", "fastlloyd_iterations", "default_delta",
    "PrivacyAccountant", "NoiseStream", "discrete_gaussian_variance", "new_noise_key"])
