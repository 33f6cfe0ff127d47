"""pyfkm: federated k-means clustering that is private and can forget.

Core kernels are C (csrc/) behind Cython (pyfkm._core); this package is the
Python API.
"""
from . import privacy
from .deletion import DCKMeans, QKMeans
from .exceptions import (CapacityError, InvalidIdError, InvalidInputError, ModelFileError,
                         NotFittedError, NumericalError, PyfkmError)
from .federated import DPFederatedKMeans
from .kmeans import KMeans
from .lattice import Lattice
from .mufc import FederatedKMeans
from .outliers import DistributedKZCenter, KZCenter
from .seeding import RemovableSeeding, RemovalReport, kmeans_plusplus

__version__ = "0.1.0.dev0"

__all__ = [
    "KMeans",
    "FederatedKMeans",
    "DPFederatedKMeans",
    "QKMeans",
    "DCKMeans",
    "KZCenter",
    "DistributedKZCenter",
    "privacy",
    "Lattice",
    "kmeans_plusplus",
    "RemovableSeeding",
    "RemovalReport",
    "PyfkmError",
    "InvalidInputError",
    "InvalidIdError",
    "NotFittedError",
    "NumericalError",
    "CapacityError",
    "ModelFileError",
]
