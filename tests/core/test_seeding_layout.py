"""The two layouts of X in the low-dimensional seeding kernel (issue 22).

Up to d = 16 the kernel reads X either in place (row-major, four points per
step through a transpose) or from a packed copy (four points per vector,
coordinate major); ``_seeding.pack_mode`` forces one.  Both must give exactly
the chosen ids of the numpy twin ``tests/oracles/seeding.py:d2_seeding`` and
the squared distances and labels of a brute-force computation
(``nearest_centers``): every d from 1 to 16 (each number of leftover
coordinates), n not a multiple of 4, float32 and float64, weights,
duplicated rows, removals with warm resumption, and NaN detection.
"""
import numpy as np
import pytest

from pyfkm import RemovableSeeding, kmeans_plusplus
from pyfkm._core import _seeding
from pyfkm.exceptions import InvalidInputError
from oracles.seeding import d2_seeding, nearest_centers

MODES = ["in_place", "packed"]


@pytest.fixture(params=MODES)
def mode(request, monkeypatch):
    monkeypatch.setattr(_seeding, "pack_mode", request.param)
    return request.param


def _check(X, w, k, seed):
    ids, mind, labels = _seeding.seed(X, w, k, np.random.default_rng(seed))
    expected = d2_seeding(X, k, w, np.random.default_rng(seed))
    np.testing.assert_array_equal(ids, expected, err_msg=f"k={k} seed={seed}")
    m2, l2 = nearest_centers(np.asarray(X, dtype=np.float64), expected)
    np.testing.assert_array_equal(mind, m2)
    np.testing.assert_array_equal(labels, l2)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [4, 7, 1030])
@pytest.mark.parametrize("d", range(1, 17))
def test_layout_matches_reference(mode, d, n, dtype, weighted):
    rng = np.random.default_rng(100 * d + n)
    X = (rng.normal(size=(n, d)) * rng.uniform(0.5, 3.0, size=d)).astype(dtype)
    w = rng.uniform(0.1, 4.0, size=n) if weighted else None
    for k in sorted({1, 2, min(n, 4), min(n, 9)}):
        _check(X, w, k, seed=k)


@pytest.mark.parametrize("d", [3, 10, 16])
def test_layout_with_duplicated_rows_matches_reference(mode, d):
    # three distinct rows, k = 6: the D^2 mass vanishes and the remaining
    # centers are drawn by weight among the rows not chosen yet
    rng = np.random.default_rng(d)
    X = np.repeat(rng.normal(size=(3, d)), [5, 4, 6], axis=0)
    rng.shuffle(X)
    for w in (None, rng.uniform(0.5, 2.0, size=len(X))):
        for seed in range(3):
            _check(X, w, 6, seed)


@pytest.mark.parametrize("d", [2, 5, 10, 16])
def test_layouts_give_the_same_removal_history(d, monkeypatch):
    rng = np.random.default_rng(d)
    X = rng.normal(size=(1_037, d))
    w = rng.uniform(0.5, 2.0, size=len(X))
    histories = []
    for m in MODES:
        monkeypatch.setattr(_seeding, "pack_mode", m)
        s = RemovableSeeding(X, 9, sample_weight=w, random_state=3)
        pick = np.random.default_rng(1)
        history = [s.center_ids_.copy()]
        for _ in range(5):
            rep = s.remove([int(s.center_ids_[pick.integers(1, 9)])])
            assert rep.reseeded
            history += [s.center_ids_.copy(), s.labels_.copy(), s._state.min_sq_dist]
        histories.append(history)
    for a, b in zip(*histories):
        np.testing.assert_array_equal(a, b)
    # and the final state is the brute-force one
    m2, l2 = nearest_centers(X, s.center_ids_, s.removed_)
    np.testing.assert_array_equal(s._state.min_sq_dist, m2)
    np.testing.assert_array_equal(s.labels_, l2)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("k", [1, 5])
def test_layout_detects_non_finite_rows(mode, k, bad):
    X = np.random.default_rng(0).normal(size=(101, 10))
    X[57, 9] = bad  # a leftover coordinate of a row inside a group of four
    with pytest.raises(InvalidInputError):
        kmeans_plusplus(X, k, random_state=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [1, 3, 10, 16, 17, 40])
def test_seeding_without_labels_matches_reference(mode, d, dtype):
    # labels=False: the kernel keeps no labels (up to d = 16) or its own (above,
    # for the triangle bound); ids and squared distances are unchanged
    rng = np.random.default_rng(7 * d)
    n = 1_031
    X = (rng.normal(size=(n, d)) + 6.0 * rng.integers(0, 3, size=(n, 1))).astype(dtype)
    w = rng.uniform(0.1, 3.0, size=n)
    for k, seed in ((1, 0), (5, 1), (12, 2)):
        ids, mind, labels = _seeding.seed(X, w, k, np.random.default_rng(seed), labels=False)
        assert labels is None
        expected = d2_seeding(X, k, w, np.random.default_rng(seed))
        np.testing.assert_array_equal(ids, expected, err_msg=f"k={k} seed={seed}")
        m2, _ = nearest_centers(np.asarray(X, dtype=np.float64), expected)
        np.testing.assert_array_equal(mind, m2)
