"""The shared numerical core every algorithm family builds on.

* :mod:`pyfkm.core.kmeans`: weighted Lloyd (C kernel) and :class:`KMeans`;
* :mod:`pyfkm.core.seeding`: k-means++ seeding and its exact removal;
* :mod:`pyfkm.core.lattice`: the quantization lattice and bin numbering;
* :mod:`pyfkm.core.noise`: exact noise samplers over an explicit stream;
* :mod:`pyfkm.core.box`: the data-box convention and :func:`scale_to_box`;
* :mod:`pyfkm.core.kernels`: the raw compiled kernels, for the families.

The families (:mod:`pyfkm.mufc`, :mod:`pyfkm.dp`, :mod:`pyfkm.deletion`,
:mod:`pyfkm.outliers`, and :mod:`pyfkm.secagg` below them) import from here;
nothing here imports a family.
"""
from . import kernels
from .box import scale_to_box
from .kmeans import KMeans, lloyd
from .lattice import Lattice
from .noise import NoiseStream, discrete_gaussian_variance, new_noise_key
from .seeding import RemovableSeeding, RemovalReport, kmeans_plusplus

__all__ = ["kernels", "KMeans", "lloyd", "kmeans_plusplus", "RemovableSeeding", "RemovalReport",
           "Lattice", "NoiseStream", "discrete_gaussian_variance", "new_noise_key",
           "scale_to_box"]
