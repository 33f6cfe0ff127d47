"""Built-in synthetic data (no downloads)."""
import numpy as np

from ._validation import check_n_clusters
from .exceptions import InvalidInputError
from .rng import as_generator

__all__ = ["make_blobs"]


def make_blobs(n_samples=10_000, n_features=2, n_clusters=5, *, cluster_std=1.0,
               center_box=(-10.0, 10.0), random_state=None):
    """Isotropic Gaussian blobs with random centers.

    Parameters
    ----------
    n_samples : int
        Total number of points, split as evenly as possible over clusters.
    n_features : int
    n_clusters : int
    cluster_std : float
        Standard deviation of every blob.
    center_box : (float, float)
        Centers are uniform in this box in every coordinate.
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
        Points, shuffled.
    y : ndarray of shape (n_samples,), int64
        True blob of each point.
    centers : ndarray of shape (n_clusters, n_features)

    Examples
    --------
    >>> X, y, centers = make_blobs(100, 3, 4, random_state=0)
    >>> X.shape, centers.shape, sorted(set(y.tolist()))
    ((100, 3), (4, 3), [0, 1, 2, 3])
    """
    if int(n_samples) < 1 or int(n_features) < 1:
        raise InvalidInputError("n_samples and n_features must be >= 1")
    k = check_n_clusters(n_clusters, int(n_samples))
    if not cluster_std >= 0:
        raise InvalidInputError(f"cluster_std={cluster_std!r} must be >= 0")
    rng = as_generator(random_state)
    lo, hi = center_box
    centers = rng.uniform(lo, hi, size=(k, int(n_features)))
    y = np.arange(int(n_samples)) % k
    rng.shuffle(y)
    X = centers[y] + cluster_std * rng.standard_normal((int(n_samples), int(n_features)))
    return X, y.astype(np.int64), centers
