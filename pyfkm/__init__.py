"""pyfkm: federated k-means clustering that is private and can forget.

Core kernels are C (csrc/) behind Cython (pyfkm._core); this package is the
Python API, one subpackage per algorithm family over shared pieces:

* :mod:`pyfkm.mufc`: federated k-means with exact unlearning (MUFC);
* :mod:`pyfkm.dp`: differentially private federated k-means (FastLloyd);
* :mod:`pyfkm.deletion`: deletion-efficient centralized k-means (Q-/DC-k-means);
* :mod:`pyfkm.outliers`: distributed (k, z)-center clustering with outliers;
* :mod:`pyfkm.secagg`: secure aggregation (SCMA and masked aggregation);
* :mod:`pyfkm.field`: prime-field arithmetic and decoding;
* :mod:`pyfkm.core`: k-means, seeding, lattice and noise samplers;
* :mod:`pyfkm.metrics`, :mod:`pyfkm.datasets`: evaluation and synthetic data.

Imports point downward only (families -> secagg -> field/core -> the private
foundation ``_core``, ``_validation``, ``_base``, ``exceptions``, ``rng``);
``tests/test_layout.py`` checks it.
"""
import logging as _logging
from types import ModuleType as _ModuleType

from . import dp
from .core import (KMeans, Lattice, RemovableSeeding, RemovalReport, kmeans_plusplus,
                   scale_to_box)
from .deletion import DCKMeans, QKMeans
from .dp import DPFederatedKMeans
from .exceptions import (CapacityError, InvalidIdError, InvalidInputError, ModelFileError,
                         NotFittedError, NumericalError, PyfkmError)
from .mufc import FederatedKMeans
from .outliers import DistributedKZCenter, KZCenter

# Library code reports through the "pyfkm" loggers (logging.getLogger(__name__));
# silent unless the application configures logging (the command line's -v does).
_logging.getLogger(__name__).addHandler(_logging.NullHandler())

__version__ = "0.1.0.dev0"

__all__ = [
    "KMeans",
    "FederatedKMeans",
    "DPFederatedKMeans",
    "QKMeans",
    "DCKMeans",
    "KZCenter",
    "DistributedKZCenter",
    "dp",
    "Lattice",
    "kmeans_plusplus",
    "RemovableSeeding",
    "RemovalReport",
    "scale_to_box",
    # the errors users catch, re-exported from pyfkm.exceptions (deliberate
    # repetition: each __all__ is a literal list that tools read)
    "PyfkmError",
    "InvalidInputError",
    "InvalidIdError",
    "NotFittedError",
    "NumericalError",
    "CapacityError",
    "ModelFileError",
]


def __getattr__(name: str) -> _ModuleType:
    # pyfkm.privacy moved to pyfkm.dp (issue 20); the alias goes in pyfkm 0.3.
    if name == "privacy":
        import importlib
        import warnings
        warnings.warn("pyfkm.privacy is deprecated and will be removed in pyfkm 0.3; "
                      "use pyfkm.dp instead", DeprecationWarning, stacklevel=2)
        return importlib.import_module("pyfkm.dp")
    raise AttributeError(f"module 'pyfkm' has no attribute {name!r}")
