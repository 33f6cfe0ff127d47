"""Differentially private federated k-means (FastLloyd) and its baselines.

* :mod:`pyfkm.dp.accounting`: the analytic Gaussian mechanism, GDP/zCDP
  composition and :class:`PrivacyAccountant`;
* :mod:`pyfkm.dp.estimator`: :class:`DPFederatedKMeans` and the non-private
  :class:`FederatedLloyd`, over masked secure aggregation (:mod:`pyfkm.secagg`);
* :mod:`pyfkm.dp.baselines`: the trusted-curator baselines :class:`GLloyd`
  and :class:`SuLloyd`;
* :mod:`pyfkm.dp.steps`: the pieces that do not touch the data
  (:func:`sphere_packing_init`, :func:`step_radius`,
  :func:`fold_into_bounds`); the federated loop the estimators share is
  ``pyfkm.dp._lloyd_base``.

The noise samplers live in :mod:`pyfkm.core.noise` (masked aggregation draws
distributed noise with them) and are re-exported here.
"""
from ..core.noise import NoiseStream, discrete_gaussian_variance, new_noise_key
from .accounting import (PrivacyAccountant, analytic_gaussian_delta, analytic_gaussian_epsilon,
                         calibrate_analytic_gaussian, calibrate_iterations, compose_gdp,
                         default_delta, fastlloyd_iterations, fastlloyd_noise_scales, gdp_delta,
                         gdp_epsilon, gdp_mu, zcdp_epsilon)
from .baselines import GLloyd, SuLloyd
from .estimator import DPFederatedKMeans, FederatedLloyd
from .steps import fold_into_bounds, sphere_packing_init, step_radius

__all__ = [
    "DPFederatedKMeans", "FederatedLloyd", "GLloyd", "SuLloyd",
    "sphere_packing_init", "step_radius", "fold_into_bounds",
    "PrivacyAccountant", "calibrate_analytic_gaussian", "analytic_gaussian_delta",
    "analytic_gaussian_epsilon", "gdp_mu", "compose_gdp", "gdp_delta", "gdp_epsilon",
    "calibrate_iterations", "zcdp_epsilon", "fastlloyd_noise_scales", "fastlloyd_iterations",
    "default_delta", "NoiseStream", "discrete_gaussian_variance", "new_noise_key",
]
