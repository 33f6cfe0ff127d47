"""Distributed (k,z)-center clustering with outliers.

* :class:`DistributedKZCenter`: the distributed algorithm of Guo & Li,
  "Distributed k-Clustering for Data with Heavy Noise" (NeurIPS 2018,
  Algorithm 3): a (24(1+eps), 1+eps)-bicriteria approximation whose
  communication does not depend on the number of outliers z;
* :class:`KZCenter`: the centralized 3-approximation of Charikar, Khuller,
  Mount & Narasimhan, "Algorithms for facility location problems with
  outliers" (SODA 2001), the reference for quality;
* baselines in the same machine/coordinator framework:
  :class:`MalkomesKZCenter` (Malkomes et al., NeurIPS 2015),
  :class:`GuhaKZCenter` (a 2z-bicriteria scheme after Guha, Li & Zhang,
  SPAA 2017) and :class:`UniformSamplingKZCenter`;
* cost functions :func:`kzcenter_radius` and :func:`count_outliers`, and the
  generator :func:`make_noisy_blobs` (Gaussian clusters plus uniform noise).

Machine work goes through any :class:`concurrent.futures.Executor` (``None``
runs it in process).  Every estimator reports its traffic in words
(:class:`CommunicationReport`): one word per coordinate of a point sent,
per weight, and per scalar (a guess, a count, a yes/no answer).

Modules: :mod:`.kzcenter` (KZCenter, the cost functions and the data
generator), :mod:`.distributed` (DistributedKZCenter: machines, traffic
accounting, the search over guesses), :mod:`.baselines` (Malkomes, Guha,
uniform sampling) and :mod:`._common` (what they share: the parameter
checks, the bisection over guesses, predict and is_outlier).
"""
from .baselines import GuhaKZCenter, MalkomesKZCenter, UniformSamplingKZCenter
from .distributed import CommunicationReport, DistributedKZCenter
from .kzcenter import KZCenter, count_outliers, kzcenter_radius, make_noisy_blobs

__all__ = ["DistributedKZCenter", "KZCenter", "MalkomesKZCenter", "GuhaKZCenter",
           "UniformSamplingKZCenter", "CommunicationReport", "kzcenter_radius",
           "count_outliers", "make_noisy_blobs"]
