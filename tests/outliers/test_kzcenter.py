"""Tests of pyfkm.outliers.kzcenter: the (k,z)-center kernels and the
centralized Charikar et al. greedy (KZCenter).

Oracles: pure-numpy twins of the aggregating procedure (Guo & Li,
Algorithm 2) and of the weighted greedy (Charikar et al.) written from the
papers' descriptions; brute force over all center sets on tiny inputs; the
proven bound (<= 3 OPT for the centralized greedy).
"""
import math

import numpy as np
import pytest

from pyfkm._core import _kcenter
from pyfkm.exceptions import InvalidInputError, NumericalError
from pyfkm.outliers import (DistributedKZCenter, GuhaKZCenter, KZCenter, MalkomesKZCenter,
                            count_outliers, kzcenter_radius, make_noisy_blobs)
from _helpers.outliers import brute_opt, ref_aggregate, ref_greedy, ref_sqdist


# ------------------------------------------------------------ bad input first

@pytest.mark.parametrize("k,z", [(3, 18), (0, 1), (2, -1), (2.5, 1), (True, 1)])
def test_bad_k_z(k, z):
    X = np.random.default_rng(0).normal(size=(20, 2))
    for est in (DistributedKZCenter(k, z), MalkomesKZCenter(k, z), GuhaKZCenter(k, z)):
        with pytest.raises(InvalidInputError):
            est.fit([X[:10], X[10:]])
    with pytest.raises(InvalidInputError):
        KZCenter(k, z).fit(X)


def test_bad_predict_and_costs():
    X = np.random.default_rng(1).normal(size=(30, 2))
    est = KZCenter(2, 3).fit(X)
    with pytest.raises(InvalidInputError):
        est.predict(X[:, :1])
    with pytest.raises(InvalidInputError):
        kzcenter_radius(X, est.cluster_centers_, 30)
    with pytest.raises(InvalidInputError):
        kzcenter_radius(X, est.cluster_centers_, -1)
    with pytest.raises(InvalidInputError):
        count_outliers(X, est.cluster_centers_, -1.0)
    with pytest.raises(InvalidInputError):
        make_noisy_blobs(10, 2, 3, 8)
    with pytest.raises(InvalidInputError):
        KZCenter(2, 1).fit(X, sample_weight=np.full(30, 0.5))


# ------------------------------------------------------------ kernels

def test_sqdist_nearest_nn():
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(37, 3)), rng.normal(size=(5, 3))
    D = ref_sqdist(X, Y)
    assert np.array_equal(_kcenter.sqdist(X, Y), D)
    mind, arg = _kcenter.nearest(X, Y)
    assert np.array_equal(mind, D.min(axis=1)) and np.array_equal(arg, D.argmin(axis=1))
    DX = ref_sqdist(X, X)
    np.fill_diagonal(DX, np.inf)
    assert np.array_equal(_kcenter.nn_sqdist(X, None), DX.min(axis=1))
    assert np.array_equal(_kcenter.nn_sqdist(X, _kcenter.Matrix(X)), DX.min(axis=1))


@pytest.mark.parametrize("seed", range(12))
def test_aggregate_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 60)), int(rng.integers(1, 4))
    X = rng.normal(size=(n, d))
    if seed % 3 == 0:  # duplicates and integer coordinates: exact ties
        X = np.round(X * 2)
    L = float(rng.uniform(0.05, 1.0))
    y = float(rng.choice([0.0, 0.5, 1.0, 2.0, 3.7]))
    reps, ws, U = ref_aggregate(X, L, y)
    for D in (_kcenter.Matrix(X), None):
        r, w, rem, stopped = _kcenter.aggregate(X, D, (2 * L) ** 2, (4 * L) ** 2, y, n)
        assert not stopped
        assert r.tolist() == reps and w.tolist() == ws
        assert np.array_equal(rem, U)
        assert w.sum() + rem.sum() == n
    if len(reps) > 1:  # early stop: reports one more than the cap
        cap = len(reps) - 1
        r, w, _, stopped = _kcenter.aggregate(X, None, (2 * L) ** 2, (4 * L) ** 2, y, cap)
        assert stopped and r.tolist() == reps[:cap]


@pytest.mark.parametrize("seed", range(12))
def test_greedy_matches_reference(seed):
    rng = np.random.default_rng(100 + seed)
    n, d = int(rng.integers(1, 60)), int(rng.integers(1, 4))
    X = rng.normal(size=(n, d))
    if seed % 3 == 0:
        X = np.round(X * 2)
    w = rng.integers(0, 5, size=n).astype(np.int64)
    k = int(rng.integers(1, 5))
    r = float(rng.uniform(0.1, 1.0))
    c_ref, unc_ref, U = ref_greedy(X, w, r * r, 9 * r * r, k)
    for D in (_kcenter.Matrix(X), None):
        c, unc, mask = _kcenter.greedy(X, D, w, r * r, 9 * r * r, k)
        assert c.tolist() == c_ref and unc == unc_ref and np.array_equal(mask, U)
    c, unc, _ = _kcenter.greedy(X, None, None, r * r, 9 * r * r, k)
    c_ref, unc_ref, _ = ref_greedy(X, np.ones(n, dtype=np.int64), r * r, 9 * r * r, k)
    assert c.tolist() == c_ref and unc == unc_ref


@pytest.mark.parametrize("seed", range(6))
def test_float_matrix_settles_near_ties_exactly(seed):
    """The matrix stores float32 distances; pairs whose exact distance is
    within float rounding of a radius must still be decided exactly."""
    rng = np.random.default_rng(500 + seed)
    base = rng.integers(0, 6, size=(40, 1)).astype(float)
    jitter = rng.choice([0.0, 1e-12, -1e-12, 3e-9, -3e-9], size=(40, 1))
    X = np.concatenate([base + jitter, rng.integers(0, 3, size=(40, 1))], axis=1)
    M = _kcenter.Matrix(X)
    for L in (0.5, 1.0):
        t2, t4 = (2 * L) ** 2, (4 * L) ** 2
        for y in (0.0, 1.0, 2.0):
            reps, ws, U = ref_aggregate(X, L, y)
            for D in (M, None):
                r, w, rem, _ = _kcenter.aggregate(X, D, t2, t4, y, 40)
                assert r.tolist() == reps and w.tolist() == ws and np.array_equal(rem, U)
        wts = rng.integers(0, 3, size=40).astype(np.int64)
        c_ref, unc_ref, _ = ref_greedy(X, wts, t2, t4, 3)
        for D in (M, None):
            c, unc, _ = _kcenter.greedy(X, D, wts, t2, t4, 3)
            assert c.tolist() == c_ref and unc == unc_ref
    DX = ref_sqdist(X, X)
    np.fill_diagonal(DX, np.inf)
    assert np.array_equal(_kcenter.nn_sqdist(X, M), DX.min(axis=1))


def test_kernel_status_codes():
    X = np.array([[0.0], [1e200]])
    with pytest.raises(Exception, match="overflow|infinity"):
        _kcenter.sqdist(X, X)
    Y = np.zeros((3, 1))
    with pytest.raises(InvalidInputError):
        _kcenter.greedy(Y, None, np.array([1, -1, 1], dtype=np.int64), 1.0, 4.0, 1)
    with pytest.raises(InvalidInputError):
        _kcenter.aggregate(Y, None, 4.0, 1.0, 0.0, 3)  # t2 > t4


def test_tree_bad_input_and_status():
    with pytest.raises(ValueError):
        _kcenter.Tree(np.zeros((0, 2)))
    with pytest.raises(InvalidInputError):
        _kcenter.Tree(np.zeros((3, 1))).aggregate(4.0, 1.0, 0.0, 3)  # t2 > t4
    with pytest.raises(InvalidInputError):
        _kcenter.Tree(np.zeros((3, 1))).aggregate(1.0, 4.0, 0.0, -1)
    # distances that may overflow: the index refuses (machines fall back)
    with pytest.raises(NumericalError):
        _kcenter.Tree(np.array([[0.0], [1e200]]))


def _tree_case(rng, kind):
    """Points in 1..6 dimensions, enough for several tree levels: Gaussian,
    integer grids (duplicates, exact ties) or integers plus jitter below and
    above float32 / float64 resolution (near ties)."""
    n, d = int(rng.integers(1, 260)), int(rng.integers(1, 7))
    if kind == 0:
        return rng.normal(size=(n, d)) * rng.choice([0.3, 1.0, 4.0])
    X = rng.integers(-3, 4, size=(n, d)).astype(float)
    if kind == 2:
        X += rng.choice([0.0, 1e-15, -1e-15, 1e-12, -3e-9, 3e-9], size=(n, d))
    return X


@pytest.mark.parametrize("seed", range(24))
def test_tree_matches_reference(seed):
    """The KD-tree kernels (box bounds, dual-tree counts, lazy picks) against
    the numpy twins, with radii equal to some pairwise distance (exact ties
    at the threshold) and jittered coordinates (near ties)."""
    rng = np.random.default_rng(900 + seed)
    X = _tree_case(rng, seed % 3)
    n = len(X)
    T = _kcenter.Tree(X)
    DX = ref_sqdist(X, X)
    np.fill_diagonal(DX, np.inf)
    assert np.array_equal(T.nn_sqdist(), DX.min(axis=1))
    np.fill_diagonal(DX, 0.0)
    for _ in range(3):
        # L with (2L)^2 exactly a pairwise squared distance when possible
        t2 = float(rng.choice(DX.ravel()))
        L = math.sqrt(t2) / 2 if t2 > 0 else float(rng.uniform(0.05, 1.0))
        if (2 * L) ** 2 != t2:
            L = float(rng.uniform(0.05, 1.0))
        y = float(rng.choice([0.0, 1.0, 2.0, 3.7, 10.0]))
        reps, ws, U = ref_aggregate(X, L, y)
        r, w, rem, stopped = T.aggregate((2 * L) ** 2, (4 * L) ** 2, y, n)
        assert not stopped
        assert r.tolist() == reps and w.tolist() == ws and np.array_equal(rem, U)
        if len(reps) > 1:
            cap = len(reps) - 1
            r, w, _, stopped = T.aggregate((2 * L) ** 2, (4 * L) ** 2, y, cap)
            assert stopped and r.tolist() == reps[:cap] and w.tolist() == ws[:cap]


def test_tree_identical_and_collinear_points():
    X = np.ones((100, 3))  # one box of zero width, many leaves
    T = _kcenter.Tree(X)
    assert np.array_equal(T.nn_sqdist(), np.zeros(100))
    r, w, rem, _ = T.aggregate(0.0, 0.0, 5.0, 100)
    assert r.tolist() == [0] and w.tolist() == [100] and not rem.any()
    X = np.repeat(np.arange(50.0), 2)[:, None] * np.array([[1.0, 0.0]])
    reps, ws, U = ref_aggregate(X, 0.5, 2.0)
    r, w, rem, _ = _kcenter.Tree(X).aggregate(1.0, 4.0, 2.0, 100)
    assert r.tolist() == reps and w.tolist() == ws and np.array_equal(rem, U)
    assert _kcenter.Tree(X[:1]).nn_sqdist()[0] == np.inf


# ------------------------------------------------------------ centralized

@pytest.mark.parametrize("seed", range(15))
def test_kzcenter_three_approx_brute_force(seed):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(5, 10))
    k, z = int(rng.integers(1, 3)), int(rng.integers(0, 3))
    X = rng.normal(size=(n, 2)) * rng.uniform(0.5, 3)
    est = KZCenter(k, z).fit(X)
    opt = brute_opt(X, k, z)
    assert len(est.cluster_centers_) <= k
    assert est.radius_ == pytest.approx(kzcenter_radius(X, est.cluster_centers_, z))
    assert est.radius_ <= 3 * opt * (1 + 1e-12) + 1e-12
    assert est.guess_ <= opt * (1 + 1e-12)
    assert count_outliers(X, est.cluster_centers_, est.radius_) <= z
    assert (est.labels_ < 0).sum() <= z


def test_kzcenter_weighted_equals_repeated_points():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(12, 2))
    w = rng.integers(1, 4, size=12)
    a = KZCenter(3, 4).fit(X, sample_weight=w)
    b = KZCenter(3, 4).fit(np.repeat(X, w, axis=0))
    assert a.radius_ <= 3 * brute_opt(np.repeat(X, w, axis=0), 3, 4) + 1e-12
    assert b.radius_ <= 3 * brute_opt(np.repeat(X, w, axis=0), 3, 4) + 1e-12


def test_identical_points():
    X = np.ones((10, 2))
    est = DistributedKZCenter(2, 3).fit([X[:5], X[5:]])
    assert est.radius_ == 0 and est.n_declared_outliers_ == 0


def test_make_noisy_blobs_and_costs():
    X, noise, C = make_noisy_blobs(500, 3, 5, 50, random_state=0)
    assert X.shape == (500, 3) and noise.sum() == 50 and C.shape == (5, 3)
    inl = X[~noise]  # noise lives in the inliers' box enlarged 2x about its center
    mid, half = (inl.min(0) + inl.max(0)) / 2, (inl.max(0) - inl.min(0)) / 2
    assert (np.abs(X[noise] - mid) <= 2 * half + 1e-9).all()
    assert (np.abs(X[noise] - mid) > half).any(axis=1).mean() > 0.5
    D = np.sqrt(ref_sqdist(X, C)).min(axis=1)
    assert kzcenter_radius(X, C, 50) == np.sort(D)[::-1][50]
    assert kzcenter_radius([X[:100], X[100:]], C, 50) == np.sort(D)[::-1][50]
    r = float(np.median(D))
    assert count_outliers(X, C, r) == int((D > r).sum())


def test_aggregate_kernels_refuse_negative_radii_and_threshold():
    # a negative threshold made every pick remove nothing: the kernels wrote
    # past their n-entry output buffers (found by review)
    from pyfkm._core import _kcenter
    X = np.array([[0.0], [1.0]])
    for t2, t4, y in [(-1.0, -1.0, -1.0), (0.0, 1.0, -1.0), (-1.0, 1.0, 0.0)]:
        with pytest.raises(InvalidInputError, match="domain"):
            _kcenter.aggregate(X, None, t2, t4, y, 1000)
        with pytest.raises(InvalidInputError, match="domain"):
            _kcenter.Tree(X).aggregate(t2, t4, y, 1000)
