"""The squared distances of the blocked assignment (rows not packed, d > 16)
follow the plain recursive sum sum_j fl(fl(x_j - c_j)^2), in coordinate
order, bit for bit (csrc/fkm_lloyd_acc.h, fkm_lloyd_rowdist4), for both
input types and for group tails of 1-3 rows."""
import numpy as np
import pytest

from pyfkm.core.kmeans import nearest_center


def _plain_chain(X, C, labels):
    """sum_j (x_j - c_j)^2 accumulated left to right, every operation rounded."""
    X = X.astype(np.float64)
    acc = np.zeros(X.shape[0])
    for j in range(X.shape[1]):
        t = X[:, j] - C[labels, j]
        acc = acc + t * t
    return acc


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n, d, k", [(999, 17, 3), (4099, 33, 13), (1001, 50, 10),
                                     (503, 50, 64), (6, 100, 5), (9, 21, 1)])
def test_distances_are_the_plain_chain(n, d, k, dtype):
    rng = np.random.default_rng(n + d + k)
    X = (rng.standard_normal((n, d)) * 5 + (np.arange(n) % 3)[:, None]).astype(dtype)
    C = X[rng.choice(n, k, replace=False)].astype(np.float64) + 0.1
    d2, labels = nearest_center(X, C)
    np.testing.assert_array_equal(d2, _plain_chain(X, C, labels))
    # the labels are the nearest centers (no near-ties in this data)
    full = ((X.astype(np.float64)[:, None, :] - C[None]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(labels, full.argmin(axis=1))
