"""Distributed (k, z)-center clustering with outliers (Guo & Li, NeurIPS 2018)
and its baselines."""
from ._impl import (CommunicationReport, DistributedKZCenter, GuhaKZCenter, KZCenter,
                    MalkomesKZCenter, UniformSamplingKZCenter, count_outliers,
                    kzcenter_radius, make_noisy_blobs)

__all__ = ["DistributedKZCenter", "KZCenter", "MalkomesKZCenter", "GuhaKZCenter",
           "UniformSamplingKZCenter", "CommunicationReport", "kzcenter_radius",
           "count_outliers", "make_noisy_blobs"]
