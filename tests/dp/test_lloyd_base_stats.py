"""A client's local step (``_LocalData.stats``) against a brute-force numpy
twin: nearest center by full squared distances, the points within the
radius, their per-cluster sums (relative to the centers) and counts."""
import numpy as np
import pytest

from pyfkm.dp._lloyd_base import _LocalData


def twin(X, C, eta, relative):
    """[sums (k*d), counts (k)] by brute force (ties: the lowest index)."""
    k, d = C.shape
    sums, counts = np.zeros((k, d)), np.zeros(k)
    for x in X:
        dist = ((x - C) ** 2).sum(1)
        j = int(np.argmin(dist))
        if eta is not None and dist[j] > eta * eta:
            continue
        sums[j] += x - C[j] if relative else x
        counts[j] += 1
    return np.concatenate([sums.ravel(), counts])


@pytest.mark.parametrize("n, d, k", [(0, 3, 2), (1, 2, 3), (5, 1, 1), (70, 4, 3),
                                     (300, 10, 10), (9000, 3, 4)])
@pytest.mark.parametrize("eta", [None, 0.3, 5.0])
@pytest.mark.parametrize("relative", [False, True])
def test_stats_match_the_brute_force_twin(n, d, k, eta, relative):
    rng = np.random.default_rng(n + 7 * d + 31 * k)
    # quarter-integer grid: exact arithmetic, no near-ties decided by rounding
    X = np.round(rng.uniform(-1, 1, (n, d)) * 4) / 4 + 1 / 64
    ld = _LocalData(X)
    for _ in range(3):          # the workspace is reused across calls
        C = np.round(rng.uniform(-1, 1, (k, d)) * 8) / 8
        got = ld.stats(C, eta, relative)
        assert got.shape == (k * d + k,)
        np.testing.assert_allclose(got, twin(X, C, eta, relative), rtol=0, atol=1e-9)


def test_stats_drop_far_points_per_cluster():
    # by hand: centers at 0 and 10 (d = 1); 0.5 and 9 are within 1.5, 3 is not
    X = np.array([[0.5], [3.0], [9.0], [10.5]])
    got = _LocalData(X).stats(np.array([[0.0], [10.0]]), 1.5, False)
    assert got.tolist() == [0.5, 19.5, 1.0, 2.0]
    got = _LocalData(X).stats(np.array([[0.0], [10.0]]), 1.5, True)
    assert got.tolist() == [0.5, -0.5, 1.0, 2.0]


def test_stats_after_k_changes_and_pickling():
    import pickle
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (200, 3))
    ld = _LocalData(X)
    for k in (4, 2, 4):
        C = rng.uniform(-1, 1, (k, 3))
        np.testing.assert_allclose(ld.stats(C, 0.8, True), twin(X, C, 0.8, True), atol=1e-12)
    ld2 = pickle.loads(pickle.dumps(ld))
    np.testing.assert_allclose(ld2.stats(C, None, False), twin(X, C, None, False), atol=1e-12)
