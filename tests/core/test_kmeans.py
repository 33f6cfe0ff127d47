"""Tests of pyfkm.kmeans: the KMeans estimator and the lloyd loop.

Where the expected values come from:

* error cases: the contract in pyfkm/kmeans.py and pyfkm/_validation.py
  (InvalidInputError, a ValueError subclass; NotFittedError before fit; a
  failed fit changes nothing);
* kernel checks: tests/oracles/lloyd.py, a plain numpy twin with the same
  semantics (scikit-learn's lloyd plus the deterministic empty-cluster rule),
  on Gaussian data, where the nearest center is never a near-tie;
* scikit-learn 1.x ``KMeans(algorithm="lloyd", n_init=1, init=<array>)`` on
  well-separated blobs where no cluster ever gets empty (scikit-learn
  relocates empty clusters differently);
* hand computations, written out next to each tiny case;
* exact properties of k-means: translating the data (here by 1e8, where
  coordinates still carry ~1e-8 absolute precision) does not change which
  center is nearest;
* a Hypothesis property: on data from a 1/8 grid, KMeans(init=first k rows)
  equals the reference; examples whose result could depend on rounding (a
  near-tie between two distinct centers, between two relocation candidates,
  or between the center shift and the tolerance) are discarded, see
  ``_ambiguous``.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import pyfkm
from pyfkm import InvalidInputError, NotFittedError
from pyfkm._core import _lloyd
from oracles import lloyd as ref
from pyfkm.core.kmeans import KMeans, lloyd
from _helpers.inputs import nonfinite_copies

ATTRS = ("cluster_centers_", "labels_", "inertia_", "n_iter_", "n_features_in_")


def _gauss(n, d, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).normal(size=(n, d)).astype(dtype)


def _snapshot(km):
    return {name: np.array(getattr(km, name), copy=True) for name in ATTRS}


def _assert_same_state(km, snap):
    for name, value in snap.items():
        got = getattr(km, name)
        assert np.asarray(got).dtype == value.dtype, name
        np.testing.assert_array_equal(got, value, err_msg=name)


def _assert_identical(a, b):
    """Two fitted estimators (or lloyd results) are bitwise identical."""
    if isinstance(a, KMeans):
        a = (a.cluster_centers_, a.labels_, a.inertia_, a.n_iter_)
        b = (b.cluster_centers_, b.labels_, b.inertia_, b.n_iter_)
    for u, v, name in zip(a, b, ("centers", "labels", "inertia", "n_iter")):
        assert np.array_equal(u, v), name


def _assert_matches_reference(km, X, init, w=None, max_iter=300, tol=1e-4, rel=1e-10):
    """km (fitted from ``init``) equals tests/oracles/lloyd.py on X."""
    C, L, inertia, n_iter = ref.lloyd(X, init, w, max_iter=max_iter, tol=tol)
    np.testing.assert_array_equal(km.labels_, L)
    assert km.n_iter_ == n_iter
    # 1e-10 absolute for data of unit scale; relative to the coordinates'
    # magnitude otherwise (sums are added in a different order).
    assert np.abs(km.cluster_centers_ - C).max() <= 1e-10 * max(1.0, np.abs(C).max())
    assert km.inertia_ == pytest.approx(inertia, rel=rel, abs=1e-12)


# ---------------------------------------------------------------------------
# 1. Errors (first).  Every failure is an InvalidInputError (a ValueError and
#    a PyfkmError) and leaves a fitted estimator as it was.
# ---------------------------------------------------------------------------

_X = _gauss(12, 2)
_X_nan, _X_inf, _X_ninf = nonfinite_copies(_X)

BAD_FITS = [
    # (id, X, estimator params, fit kwargs, message fragment)
    ("X-nan", _X_nan, {"n_clusters": 3}, {}, "NaN or infinity"),
    ("X-inf", _X_inf, {"n_clusters": 3}, {}, "NaN or infinity"),
    ("X-ninf", _X_ninf, {"n_clusters": 3}, {}, "NaN or infinity"),
    ("X-1d", _X[:, 0], {"n_clusters": 3}, {}, "2-D"),
    ("X-3d", _X.reshape(12, 2, 1), {"n_clusters": 3}, {}, "2-D"),
    ("X-0d", np.float64(1.0), {"n_clusters": 1}, {}, "2-D"),
    ("X-empty-rows", np.zeros((0, 2)), {"n_clusters": 1}, {}, "empty"),
    ("X-empty-cols", np.zeros((4, 0)), {"n_clusters": 1}, {}, "empty"),
    ("X-complex", _X.astype(complex), {"n_clusters": 3}, {}, "real"),
    ("X-strings", np.array([["a", "b"], ["c", "d"]]), {"n_clusters": 1}, {}, "numeric"),
    ("k=0", _X, {"n_clusters": 0}, {}, ">= 1"),
    ("k<0", _X, {"n_clusters": -3}, {}, ">= 1"),
    ("k>n", _X, {"n_clusters": 13}, {}, "n_samples=12 should be >= n_clusters=13"),
    ("k-float", _X, {"n_clusters": 2.0}, {}, "must be an int"),
    ("k-bool", _X, {"n_clusters": True}, {}, "must be an int"),
    ("k-None", _X, {"n_clusters": None}, {}, "must be an int"),
    ("w-negative", _X, {"n_clusters": 3}, {"sample_weight": np.r_[np.ones(11), -1.0]},
     "nonnegative"),
    ("w-all-zero", _X, {"n_clusters": 3}, {"sample_weight": np.zeros(12)}, "all zero"),
    ("w-scalar-zero", _X, {"n_clusters": 3}, {"sample_weight": 0.0}, "all zero"),
    ("w-short", _X, {"n_clusters": 3}, {"sample_weight": np.ones(11)},
     "11 entries but X has 12 rows"),
    ("w-long", _X, {"n_clusters": 3}, {"sample_weight": np.ones(13)}, "13 entries"),
    ("w-2d", _X, {"n_clusters": 3}, {"sample_weight": np.ones((12, 1))}, "1-D"),
    ("w-nan", _X, {"n_clusters": 3}, {"sample_weight": np.r_[np.ones(11), np.nan]},
     "NaN or infinity"),
    ("w-too-few-positive", _X, {"n_clusters": 3},
     {"sample_weight": np.r_[1.0, 1.0, np.zeros(10)]}, "only 2 points"),
    ("n_init=0", _X, {"n_clusters": 3, "n_init": 0}, {}, "n_init"),
    ("n_init<0", _X, {"n_clusters": 3, "n_init": -1}, {}, "n_init"),
    ("n_init-float", _X, {"n_clusters": 3, "n_init": 1.5}, {}, "n_init"),
    ("n_init-bool", _X, {"n_clusters": 3, "n_init": True}, {}, "n_init"),
    ("max_iter=0", _X, {"n_clusters": 3, "max_iter": 0}, {}, "max_iter"),
    ("max_iter-float", _X, {"n_clusters": 3, "max_iter": 10.0}, {}, "max_iter"),
    ("max_iter-None", _X, {"n_clusters": 3, "max_iter": None}, {}, "max_iter"),
    ("tol<0", _X, {"n_clusters": 3, "tol": -1e-4}, {}, "tol"),
    ("tol-nan", _X, {"n_clusters": 3, "tol": float("nan")}, {}, "tol"),
    ("tol-inf", _X, {"n_clusters": 3, "tol": float("inf")}, {}, "tol"),
    ("tol-str", _X, {"n_clusters": 3, "tol": "1e-4"}, {}, "tol"),
    ("tol-None", _X, {"n_clusters": 3, "tol": None}, {}, "tol"),
    ("n_threads=0", _X, {"n_clusters": 3, "n_threads": 0}, {}, "n_threads"),
    ("n_threads=0", _X, {"n_clusters": 3, "n_threads": 0}, {}, "n_threads"),
    ("n_threads-str", _X, {"n_clusters": 3, "n_threads": "all"}, {}, "n_threads"),
    ("n_init=0", _X, {"n_clusters": 3, "n_init": 0}, {}, "n_init=0 must be an int >= 1 or 'auto'"),
    ("n_init-str", _X, {"n_clusters": 3, "n_init": "best"}, {}, "n_init='best'"),
    ("n_threads-float", _X, {"n_clusters": 3, "n_threads": 2.0}, {}, "n_threads"),
    ("init-unknown", _X, {"n_clusters": 3, "init": "kmeans++"}, {}, "init="),
    ("init-unknown-2", _X, {"n_clusters": 3, "init": "k-means||"}, {}, "init="),
    ("init-too-few-rows", _X, {"n_clusters": 3, "init": _X[:2]}, {}, "shape"),
    ("init-too-many-rows", _X, {"n_clusters": 3, "init": _X[:4]}, {}, "shape"),
    ("init-wrong-cols", _X, {"n_clusters": 3, "init": np.zeros((3, 3))}, {}, "shape"),
    ("init-1d", _X, {"n_clusters": 2, "init": np.zeros(2)}, {}, "2-D"),
    ("init-nan", _X, {"n_clusters": 3, "init": np.r_[_X[:2], [[np.nan, 0.0]]]}, {},
     "NaN or infinity"),
    ("init-array-n_init=2", _X, {"n_clusters": 3, "init": _X[:3], "n_init": 2}, {},
     "n_init=2 must be 1"),
    ("seed-negative", _X, {"n_clusters": 3, "random_state": -1}, {}, "nonnegative"),
    ("seed-str", _X, {"n_clusters": 3, "random_state": "0"}, {}, "random_state"),
]


@pytest.mark.parametrize("case", BAD_FITS, ids=[c[0] for c in BAD_FITS])
def test_bad_fit_raises(case):
    _, X, params, fit_kw, match = case
    X_before = np.array(X, copy=True)
    with pytest.raises(InvalidInputError, match=match) as info:
        KMeans(**params).fit(X, **fit_kw)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, pyfkm.PyfkmError)
    np.testing.assert_array_equal(X, X_before)  # the input is never modified


@pytest.mark.parametrize("case", BAD_FITS, ids=[c[0] for c in BAD_FITS])
def test_failed_fit_leaves_fitted_estimator_unchanged(case):
    _, X, params, fit_kw, match = case
    km = KMeans(3, random_state=0).fit(_gauss(30, 2, seed=1))
    snap = _snapshot(km)
    km.set_params(**params)
    with pytest.raises(InvalidInputError, match=match):
        km.fit(X, **fit_kw)
    _assert_same_state(km, snap)
    # fit_predict goes through the same validation
    with pytest.raises(InvalidInputError, match=match):
        km.fit_predict(X, **fit_kw)
    _assert_same_state(km, snap)


@pytest.mark.parametrize("method", ["predict", "transform", "score"])
def test_not_fitted(method):
    with pytest.raises(NotFittedError, match="not fitted"):
        getattr(KMeans(2), method)(_X)
    assert issubclass(NotFittedError, ValueError)


BAD_PREDICT = [
    ("too-many-features", np.zeros((3, 3)), "3 features, but KMeans is expecting 2 features"),
    ("too-few-features", np.zeros((3, 1)), "1 features, but KMeans is expecting 2 features"),
    ("nan", np.array([[0.0, np.nan]]), "NaN or infinity"),
    ("1d", np.zeros(2), "2-D"),
    ("empty", np.zeros((0, 2)), "empty"),
]


@pytest.mark.parametrize("method", ["predict", "score", "transform"])
@pytest.mark.parametrize("case", BAD_PREDICT, ids=[c[0] for c in BAD_PREDICT])
def test_bad_predict_raises(method, case):
    _, X, match = case
    km = KMeans(3, random_state=0).fit(_X)
    snap = _snapshot(km)
    with pytest.raises(InvalidInputError, match=match):
        getattr(km, method)(X)
    _assert_same_state(km, snap)


@pytest.mark.parametrize("w, match", [
    (np.ones(3), "3 entries but X has 4 rows"),
    (-np.ones(4), "nonnegative"),
    (np.zeros(4), "all zero"),
])
def test_bad_score_weight_raises(w, match):
    km = KMeans(2, random_state=0).fit(_X)
    with pytest.raises(InvalidInputError, match=match):
        km.score(_X[:4], sample_weight=w)


def test_set_params_unknown_name_raises():
    km = KMeans(3)
    with pytest.raises(InvalidInputError, match="invalid parameter 'k'"):
        km.set_params(k=4)
    # a failing call changes nothing (DESIGN.md: operations are atomic), even
    # when a valid name comes before the unknown one
    with pytest.raises(InvalidInputError, match="invalid parameter 'algorithm'"):
        km.set_params(n_clusters=4, algorithm="elkan")
    assert not hasattr(km, "algorithm")
    assert km.get_params()["n_clusters"] == 3


def test_fit_does_not_modify_inputs():
    X = _gauss(40, 3)
    w = np.random.default_rng(1).uniform(0.5, 2.0, 40)
    init = X[:4].copy()
    X0, w0, init0 = X.copy(), w.copy(), init.copy()
    km = KMeans(4, init=init).fit(X, sample_weight=w)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(w, w0)
    np.testing.assert_array_equal(init, init0)
    assert km.init is init


# ---------------------------------------------------------------------------
# 2. C kernel vs the numpy reference on Gaussian data (no near-ties), over the
#    kernel's code paths: d <= 16 (packed panels of 4 points, scalar tail when
#    n % 4 != 0) and d > 16 (4 x 8 tiles, k padded to a multiple of 8).
# ---------------------------------------------------------------------------

DIMS = [1, 2, 10, 16, 17, 50]
KS = [1, 3, 8, 9, 20]


@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("k", KS)
def test_kernel_matches_reference(d, k):
    for n in (200, 201, 203):
        for dtype in (np.float64, np.float32):
            for weighted in (False, True):
                for seed in (0, 1):
                    rng = np.random.default_rng([seed, n, d, k])
                    X = rng.normal(size=(n, d)).astype(dtype)
                    w = rng.uniform(0.2, 3.0, n) if weighted else None
                    init = X[rng.choice(n, k, replace=False)].astype(np.float64)
                    km = KMeans(k, init=init, max_iter=100).fit(X, sample_weight=w)
                    assert km.cluster_centers_.dtype == np.float64
                    assert km.labels_.dtype == np.int32
                    assert km.n_features_in_ == d
                    _assert_matches_reference(km, X, init, w, max_iter=100)


@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("n", [3, 4, 5, 7])
def test_kernel_matches_reference_tiny_n(d, n):
    """Fewer than 4 points (no packing), one panel, one panel plus a tail."""
    for k in range(1, n + 1):
        for weighted in (False, True):
            rng = np.random.default_rng([n, d, k])
            X = rng.normal(size=(n, d))
            w = rng.uniform(0.2, 3.0, n) if weighted else None
            init = X[rng.permutation(n)[:k]]
            km = KMeans(k, init=init).fit(X, sample_weight=w)
            _assert_matches_reference(km, X, init, w)


@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("k", [3, 9, 20])
def test_kernel_matches_reference_with_empty_clusters(d, k):
    """Two (or more) init centers far from all data: they are empty after the
    first assignment and take the farthest points."""
    for n in (100, 103):
        for weighted in (False, True):
            rng = np.random.default_rng([7, n, d, k])
            X = rng.normal(size=(n, d))
            w = rng.uniform(0.5, 2.0, n) if weighted else None
            init = X[rng.choice(n, k, replace=False)].copy()
            n_far = max(2, k // 4)
            init[-n_far:] = 100.0 + 10.0 * np.arange(n_far)[:, None]
            hist = []
            ref.lloyd(X, init, w, history=hist)
            assert len(hist[0]["relocated"]) == n_far  # the case is exercised
            for max_iter in (1, 2, 300):
                km = KMeans(k, init=init, max_iter=max_iter).fit(X, sample_weight=w)
                _assert_matches_reference(km, X, init, w, max_iter=max_iter)


@pytest.mark.parametrize("d, k", [(2, 5), (17, 9)])
def test_kernel_matches_reference_several_parts(d, k):
    """n >= 8192: the points are split into parts whose sums are merged."""
    n = 9003
    assert len(_lloyd.part_bounds(n, k, d)) - 1 >= 2
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, d))
    w = rng.uniform(0.5, 2.0, n)
    init = X[:k]
    km = KMeans(k, init=init, max_iter=20, n_threads=2).fit(X, sample_weight=w)
    _assert_matches_reference(km, X, init, w, max_iter=20)


@pytest.mark.parametrize("tol", [0.0, 1e-4, 1e-2, 1.0])
@pytest.mark.parametrize("max_iter", [1, 2, 3, 300])
@pytest.mark.parametrize("d", [2, 17])
def test_lloyd_function_matches_reference(tol, max_iter, d):
    """The private lloyd loop (no validation), with its stopping rules."""
    X = _gauss(150, d, seed=4)
    w = np.random.default_rng(5).uniform(0.5, 2.0, 150)
    init = X[10:16].copy()
    for sw in (None, w):
        C, L, inertia, n_iter = lloyd(X, init, sample_weight=sw, max_iter=max_iter, tol=tol)
        Cr, Lr, Ir, itr = ref.lloyd(X, init, sw, max_iter=max_iter, tol=tol)
        assert n_iter == itr <= max_iter
        np.testing.assert_array_equal(L, Lr)
        assert np.abs(C - Cr).max() <= 1e-10
        assert inertia == pytest.approx(Ir, rel=1e-10)
    np.testing.assert_array_equal(init, X[10:16])  # the init is not modified


def test_tolerance_is_relative_to_mean_variance():
    """Scaling X scales tol_abs: the iteration count is scale invariant, and a
    larger tol stops no later."""
    X = _gauss(300, 3, seed=8)
    init = X[:6]
    its = []
    for tol in (0.0, 1e-6, 1e-3, 1e-1, 10.0):
        a = KMeans(6, init=init, tol=tol).fit(X)
        b = KMeans(6, init=init * 8.0, tol=tol).fit(X * 8.0)
        assert a.n_iter_ == b.n_iter_
        its.append(a.n_iter_)
    assert its == sorted(its, reverse=True)
    assert its[-1] == 1 and its[0] > 2


# ---------------------------------------------------------------------------
# 3. scikit-learn's lloyd, on blobs where no cluster ever gets empty.
# ---------------------------------------------------------------------------

def _blobs(n_per, k, d, seed, return_blob=False):
    """k Gaussian blobs (sd 2, means uniform in [-15, 15]^d), shuffled."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(-15, 15, size=(k, d))
    X = np.concatenate([m + rng.normal(scale=2.0, size=(n_per, d)) for m in means])
    blob = np.repeat(np.arange(k), n_per)
    perm = rng.permutation(len(X))
    if return_blob:
        return X[perm], blob[perm], rng
    return X[perm], rng


@pytest.mark.parametrize("d", [2, 17])
@pytest.mark.parametrize("k", [3, 8])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("tol", [0.0, 1e-4])
def test_matches_sklearn(d, k, weighted, tol):
    sk_cluster = pytest.importorskip("sklearn.cluster")
    for seed in (0, 1):
        X, blob, rng = _blobs(40, k, d, seed, return_blob=True)
        w = rng.uniform(0.2, 3.0, len(X)) if weighted else None
        init = X[[rng.choice(np.flatnonzero(blob == j)) for j in range(k)]]
        hist = []
        ref.lloyd(X, init, w, tol=tol, history=hist)
        assert all(not h["relocated"] for h in hist)  # no empty cluster
        km = KMeans(k, init=init, tol=tol).fit(X, sample_weight=w)
        sk = sk_cluster.KMeans(k, init=init, n_init=1, algorithm="lloyd", max_iter=300,
                               tol=tol).fit(X, sample_weight=w)
        np.testing.assert_array_equal(km.labels_, sk.labels_)
        assert km.inertia_ == pytest.approx(sk.inertia_, rel=1e-10)
        assert np.abs(km.cluster_centers_ - sk.cluster_centers_).max() <= 1e-9
        assert km.n_iter_ == sk.n_iter_


# ---------------------------------------------------------------------------
# 4. Hand-computed cases.
# ---------------------------------------------------------------------------

def test_hand_four_points_two_clusters():
    # Iteration 1: (0,0),(0,2) -> c0; (4,0),(4,2) -> c1 (squared distances 4
    # vs 20); centers (0,1), (4,1).  Iteration 2: same labels -> strict
    # convergence, n_iter = 2.  Inertia: four points at distance 1 -> 4.
    X = np.array([[0.0, 0.0], [0.0, 2.0], [4.0, 0.0], [4.0, 2.0]])
    km = KMeans(2, init=np.array([[0.0, 0.0], [4.0, 0.0]])).fit(X)
    np.testing.assert_array_equal(km.cluster_centers_, [[0.0, 1.0], [4.0, 1.0]])
    np.testing.assert_array_equal(km.labels_, [0, 0, 1, 1])
    assert km.inertia_ == 4.0
    assert km.n_iter_ == 2
    assert km.score(X) == -4.0
    # Weighted w = (1, 3, 1, 1): c0 = (0, (0*1 + 2*3) / 4) = (0, 1.5), c1 = (4, 1);
    # inertia = 1 * 1.5^2 + 3 * 0.5^2 + 1 * 1 + 1 * 1 = 2.25 + 0.75 + 2 = 5.
    km = KMeans(2, init=np.array([[0.0, 0.0], [4.0, 0.0]])).fit(
        X, sample_weight=[1.0, 3.0, 1.0, 1.0])
    np.testing.assert_array_equal(km.cluster_centers_, [[0.0, 1.5], [4.0, 1.0]])
    assert km.inertia_ == 5.0
    assert km.n_iter_ == 2


@pytest.mark.parametrize("n", [3, 4])
def test_hand_exact_tie_goes_to_lowest_index(n):
    # Points -1, 0, 1 (and a second 0 when n = 4, the packed path); init -1, +1:
    # 0 is at distance 1 from both -> center 0.  c0 = mean(-1, 0[, 0]),
    # c1 = 1; iteration 2 keeps the labels (n_iter = 2).
    # n = 3: c0 = -0.5, inertia = 0.25 + 0.25 = 0.5.
    # n = 4: c0 = -1/3, inertia = (2/3)^2 + 2 (1/3)^2 = 6/9.
    X = np.array([[-1.0], [0.0], [1.0], [0.0]])[:n]
    km = KMeans(2, init=np.array([[-1.0], [1.0]])).fit(X)
    np.testing.assert_array_equal(km.labels_, [0, 0, 1, 0][:n])
    c0, inertia = (-0.5, 0.5) if n == 3 else (-1.0 / 3.0, 6.0 / 9.0)
    np.testing.assert_allclose(km.cluster_centers_, [[c0], [1.0]], rtol=1e-15)
    assert km.inertia_ == pytest.approx(inertia, rel=1e-14)
    assert km.n_iter_ == 2


def _tie_centers(d, a, b):
    """Nine centers: c_a = -e1, c_b = +e1, the others far away (10 (j + 2) on
    the second axis, or the first when d = 1)."""
    e = np.eye(d)[0]
    other = np.eye(d)[1] if d > 1 else e
    C = np.array([10.0 * (j + 2) * other for j in range(9)])
    C[a], C[b] = -e, e
    return C


TIE_PAIRS = [(0, 8), (2, 5), (3, 8), (7, 8)]  # across and within panels of 8


@pytest.mark.parametrize("d", [1, 16, 17])
@pytest.mark.parametrize("pair", TIE_PAIRS)
def test_hand_exact_tie_predict_lowest_index(d, pair):
    # Fit on the nine centers themselves (k = n = 9): each center keeps its
    # own point, so the centers do not move.  The origin is at squared
    # distance 1 from c_a and c_b (exact in floating point) -> min(a, b).
    a, b = pair
    C = _tie_centers(d, a, b)
    km = KMeans(9, init=C).fit(C)
    np.testing.assert_array_equal(km.cluster_centers_, C)
    for m in (1, 3, 4, 5, 8):  # no packing, one panel, a panel plus a tail
        np.testing.assert_array_equal(km.predict(np.zeros((m, d))), np.full(m, a))


@pytest.mark.parametrize("d", [1, 16, 17])
@pytest.mark.parametrize("pair", TIE_PAIRS)
@pytest.mark.parametrize("where", ["first", "last"])
def test_hand_exact_tie_fit_lowest_index(d, pair, where):
    # Data: the nine centers plus the origin (row 0: in a packed panel when
    # d <= 16; row 9: in the scalar tail).  The origin ties between c_a and
    # c_b and goes to c_a; after one iteration c_a = mean(-e1, 0) = -e1/2, the
    # other centers keep their single point; the final labels put the origin
    # in c_a again (squared distance 1/4 vs 1).
    a, b = pair
    C = _tie_centers(d, a, b)
    origin = np.zeros((1, d))
    X = np.vstack([origin, C] if where == "first" else [C, origin])
    row = 0 if where == "first" else 9
    km = KMeans(9, init=C, max_iter=1).fit(X)
    expected = C.copy()
    expected[a] = -0.5 * np.eye(d)[0]
    np.testing.assert_array_equal(km.cluster_centers_, expected)
    assert km.labels_[row] == a
    assert km.inertia_ == 0.5  # 1/4 for -e1 and 1/4 for the origin


def test_hand_one_empty_cluster():
    # X = 0, 1, 10, 11; init 0, 10, 100.  Assignment: {0, 1} -> c0 (squared
    # distances 0, 1), {10, 11} -> c1 (0, 1); c2 empty.  Distances in stable
    # descending order: rows 1, 3 (both 1), 0, 2 -> c2 takes row 1 (x = 1),
    # which leaves c0 = {0}.  Centers: 0, 10.5, 1.  Iteration 2 labels
    # (0, 2, 1, 1) equal iteration 1's after relocation -> n_iter = 2.
    # Inertia = 0.5^2 + 0.5^2 = 0.5.
    X = np.array([[0.0], [1.0], [10.0], [11.0]])
    km = KMeans(3, init=np.array([[0.0], [10.0], [100.0]])).fit(X)
    np.testing.assert_array_equal(km.cluster_centers_, [[0.0], [10.5], [1.0]])
    np.testing.assert_array_equal(km.labels_, [0, 2, 1, 1])
    assert km.inertia_ == 0.5
    assert km.n_iter_ == 2
    # Two empty clusters (init 0, 10, 100, 200): c2 takes row 1, c3 takes
    # row 3 (the 2nd in the same order).  Centers 0, 10, 1, 11; inertia 0.
    km = KMeans(4, init=np.array([[0.0], [10.0], [100.0], [200.0]])).fit(X)
    np.testing.assert_array_equal(km.cluster_centers_, [[0.0], [10.0], [1.0], [11.0]])
    np.testing.assert_array_equal(km.labels_, [0, 2, 1, 3])
    assert km.inertia_ == 0.0
    assert km.n_iter_ == 2


def test_hand_empty_cluster_weighted_takes_point_from_its_cluster():
    # X = 0, 1, 2, 10 with w = 1, 1, 2, 1; init 1, 10, 100; one iteration.
    # Assignment: {0, 1, 2} -> c0 (squared distances 1, 0, 1), {10} -> c1;
    # c2 empty takes the farthest point, row 0 (distance 1, lower row than 2).
    # c0 loses it: c0 = (1*1 + 2*2) / 3 = 5/3; c1 = 10; c2 = 0 (the point).
    # Final labels w.r.t. these centers: 0 -> c2, 1 -> c0, 2 -> c0, 10 -> c1.
    # Inertia = 1 (1 - 5/3)^2 + 2 (2 - 5/3)^2 = 4/9 + 2/9 = 2/3.
    X = np.array([[0.0], [1.0], [2.0], [10.0]])
    w = np.array([1.0, 1.0, 2.0, 1.0])
    km = KMeans(3, init=np.array([[1.0], [10.0], [100.0]]), max_iter=1).fit(
        X, sample_weight=w)
    np.testing.assert_allclose(km.cluster_centers_, [[5.0 / 3.0], [10.0], [0.0]],
                               rtol=1e-15)
    np.testing.assert_array_equal(km.labels_, [2, 0, 0, 1])
    assert km.inertia_ == pytest.approx(2.0 / 3.0, rel=1e-14)
    assert km.n_iter_ == 1


def test_hand_cluster_emptied_by_relocation_stays_in_data_range():
    # X = 0, 5.5, 11.5, 0 with w = 1, 0.1, 0.2, 1; init 0, 10, 100, 200.
    # Assignment: rows 0, 3 -> c0 (distance 0); rows 1, 2 -> c1 (squared
    # distances 20.25 and 2.25); c2, c3 empty.  c2 takes row 1 (5.5), c3 takes
    # row 2 (11.5): c1 loses both its points.  It has no weight left, so it
    # has no weighted mean; whatever the rule, a center must stay inside the
    # range of the data and the previous centers, [0, 200].  The reference
    # keeps its previous center 10 (in exact arithmetic the kernel's running
    # weight 0.1 + 0.2 - 0.1 - 0.2 is 0, and it keeps such centers too).
    X = np.array([[0.0], [5.5], [11.5], [0.0]])
    w = np.array([1.0, 0.1, 0.2, 1.0])
    init = np.array([[0.0], [10.0], [100.0], [200.0]])
    km = KMeans(4, init=init, max_iter=1).fit(X, sample_weight=w)
    np.testing.assert_array_equal(km.labels_, [0, 2, 3, 0])
    assert np.all(km.cluster_centers_ >= 0.0) and np.all(km.cluster_centers_ <= 200.0), \
        km.cluster_centers_.ravel()
    _assert_matches_reference(km, X, init, w, max_iter=1)


def test_hand_zero_weight_points():
    # Points of weight 0 are assigned (they get labels) but do not move
    # centers; a cluster holding only weight-0 points is empty.
    # X = 0, 1, 10, 50; w = 1, 1, 1, 0; init 0, 10, 50: c2 = {50} has weight
    # 0 -> empty.  Squared distances to the assigned centers 0, 1, 0, 0 ->
    # row 1 (x = 1) moves to c2.  Centers 0, 10, 1.
    X = np.array([[0.0], [1.0], [10.0], [50.0]])
    w = np.array([1.0, 1.0, 1.0, 0.0])
    km = KMeans(3, init=np.array([[0.0], [10.0], [50.0]]), max_iter=1).fit(
        X, sample_weight=w)
    np.testing.assert_array_equal(km.cluster_centers_, [[0.0], [10.0], [1.0]])
    # final labels: 50 is nearest to c1 = 10; inertia counts only weighted points
    np.testing.assert_array_equal(km.labels_, [0, 2, 1, 1])
    assert km.inertia_ == 0.0


@pytest.mark.parametrize("init", ["array", "k-means++", "random"])
@pytest.mark.parametrize("d", [2, 17])
def test_fewer_distinct_points_than_clusters(init, d):
    # Two distinct locations (5 copies of a, 3 of b), k = 4.  Every run ends
    # with centers on a and b only (inertia 0, finite centers).  With all four
    # init centers at a: iteration 1 sends everything to c0 (ties), c1..c3
    # take rows 5, 6, 7 (the b's, at squared distance d); iteration 2
    # sends the b's to c1 (ties), c2, c3 take rows 0, 1 (all distances 0);
    # iteration 3 repeats the labels (2, 3, 0, 0, 0, 1, 1, 1) -> n_iter = 3,
    # centers a, b, a, a.  The final assignment to these centers sends every
    # a to c0 (ties) -> labels (0, 0, 0, 0, 0, 1, 1, 1).
    a, b = np.ones(d), 2.0 * np.ones(d)
    X = np.array([a] * 5 + [b] * 3)
    init_arg = np.array([a] * 4) if init == "array" else init
    km = KMeans(4, init=init_arg, random_state=0).fit(X)
    assert np.isfinite(km.cluster_centers_).all()
    assert km.inertia_ == 0.0
    for c in km.cluster_centers_:
        assert np.array_equal(c, a) or np.array_equal(c, b)
    np.testing.assert_array_equal(km.cluster_centers_[km.labels_], X)
    if init == "array":
        np.testing.assert_array_equal(km.cluster_centers_, [a, b, a, a])
        np.testing.assert_array_equal(km.labels_, [0, 0, 0, 0, 0, 1, 1, 1])
        assert km.n_iter_ == 3
        _assert_matches_reference(km, X, init_arg)


def test_all_points_identical():
    X = np.full((6, 3), 7.0)
    km = KMeans(3, init="k-means++", random_state=1).fit(X)
    np.testing.assert_array_equal(km.cluster_centers_, np.full((3, 3), 7.0))
    assert km.inertia_ == 0.0
    km = KMeans(1, random_state=1).fit(X[:1])
    np.testing.assert_array_equal(km.cluster_centers_, X[:1])
    assert km.labels_.tolist() == [0] and km.inertia_ == 0.0


def test_k_equals_n():
    X = _gauss(7, 3, seed=2)
    km = KMeans(7, random_state=0).fit(X)
    assert km.inertia_ == 0.0
    np.testing.assert_array_equal(km.cluster_centers_[km.labels_], X)


def test_k_equals_one_is_the_weighted_mean():
    X = _gauss(50, 4, seed=3)
    w = np.random.default_rng(4).uniform(0.0, 2.0, 50)
    km = KMeans(1, random_state=0).fit(X, sample_weight=w)
    mean = (w[:, None] * X).sum(0) / w.sum()
    np.testing.assert_allclose(km.cluster_centers_[0], mean, rtol=1e-12, atol=1e-14)
    assert km.inertia_ == pytest.approx(float((w * ((X - mean) ** 2).sum(1)).sum()),
                                        rel=1e-12)


@pytest.mark.parametrize("init", ["k-means++", "random"])
def test_zero_weight_rows_are_never_initial_centers(init):
    # Only rows 3 and 8 have positive weight and k = 2: the initial centers
    # are those rows, and Lloyd keeps them (weight-0 rows do not move centers).
    X = _gauss(12, 2, seed=5)
    w = np.zeros(12)
    w[[3, 8]] = [1.0, 2.0]
    for seed in range(5):
        km = KMeans(2, init=init, random_state=seed).fit(X, sample_weight=w)
        got = sorted(map(tuple, km.cluster_centers_))
        assert got == sorted(map(tuple, X[[3, 8]]))
        assert km.inertia_ == 0.0


def test_input_types():
    """int / bool / float32 / non-contiguous / Fortran / list inputs."""
    Xi = np.random.default_rng(6).integers(-20, 20, size=(60, 3))
    X = Xi.astype(np.float64)
    init = X[:4]
    base = KMeans(4, init=init).fit(X)
    for Xv in (Xi, Xi.astype(np.int32), np.asfortranarray(X), X.tolist(),
               np.repeat(X, 2, axis=1)[:, ::2], np.repeat(X, 2, axis=0)[::2]):
        _assert_identical(KMeans(4, init=init).fit(Xv), base)
    # float32 keeps its values (converted to float64 in the kernel)
    X32 = _gauss(60, 3, seed=6, dtype=np.float32)
    km32 = KMeans(4, init=X32[:4]).fit(X32)
    assert km32.cluster_centers_.dtype == np.float64
    _assert_matches_reference(km32, X32.astype(np.float64), X32[:4].astype(np.float64))
    km_nc = KMeans(4, init=X32[:4]).fit(np.repeat(X32, 2, axis=1)[:, ::2])
    _assert_identical(km_nc, km32)
    # sample_weight as a list and as a scalar
    w = np.random.default_rng(7).uniform(0.5, 2.0, 60)
    _assert_identical(KMeans(4, init=init).fit(X, sample_weight=list(w)),
                      KMeans(4, init=init).fit(X, sample_weight=w))
    _assert_identical(KMeans(4, init=init).fit(X, sample_weight=1.0), base)
    # bool data
    Xb = np.random.default_rng(8).random((30, 4)) < 0.5
    km = KMeans(2, init=Xb[:2].astype(float)).fit(Xb)
    _assert_matches_reference(km, Xb.astype(float), Xb[:2].astype(float))


# ---------------------------------------------------------------------------
# 5. Determinism: threads, seeds, n_init.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("d", [3, 20])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
def test_threads_bitwise_identical(d, dtype, weighted):
    n, k = 10003, 9
    assert len(_lloyd.part_bounds(n, k, d)) - 1 >= 2  # several parts to share
    rng = np.random.default_rng(9)
    X = rng.normal(size=(n, d)).astype(dtype)
    w = rng.uniform(0.2, 2.0, n) if weighted else None
    runs = [KMeans(k, random_state=3, n_threads=t, max_iter=30).fit(X, sample_weight=w)
            for t in (1, 2, 3)]
    for r in runs[1:]:
        _assert_identical(r, runs[0])
    # with empty clusters to relocate
    init = X[:k].astype(np.float64)
    init[-2:] = 1e3
    runs = [KMeans(k, init=init, n_threads=t, max_iter=5).fit(X, sample_weight=w)
            for t in (1, 2)]
    _assert_identical(runs[1], runs[0])
    # predict / score with threads
    np.testing.assert_array_equal(runs[0].predict(X), runs[1].predict(X))
    assert runs[0].score(X, sample_weight=w) == runs[1].score(X, sample_weight=w)


@pytest.mark.parametrize("init", ["k-means++", "random"])
def test_same_seed_same_result_different_seeds_differ(init):
    X, _ = _blobs(15, 10, 2, seed=2)
    fits = [KMeans(10, init=init, random_state=s).fit(X) for s in range(8)]
    for s in range(3):
        _assert_identical(KMeans(10, init=init, random_state=s).fit(X), fits[s])
    # SeedSequence and Generator seeds are reproducible too
    _assert_identical(KMeans(10, init=init, random_state=np.random.SeedSequence(5)).fit(X),
                      KMeans(10, init=init, random_state=np.random.SeedSequence(5)).fit(X))
    _assert_identical(KMeans(10, init=init, random_state=np.random.default_rng(5)).fit(X),
                      KMeans(10, init=init, random_state=np.random.default_rng(5)).fit(X))
    distinct = {tuple(np.round(f.cluster_centers_, 12).ravel()) for f in fits}
    assert len(distinct) >= 3
    KMeans(10, init=init).fit(X)  # random_state=None runs


@pytest.mark.parametrize("init", ["k-means++", "random"])
@pytest.mark.parametrize("weighted", [False, True])
def test_n_init_keeps_the_best_run(init, weighted):
    # n_init runs draw their inits from one generator in sequence, so the
    # three runs of n_init=3 are the fits of n_init=1 sharing one Generator.
    X, rng = _blobs(15, 10, 2, seed=2)
    w = rng.uniform(0.5, 2.0, len(X)) if weighted else None
    g = np.random.default_rng(11)
    singles = [KMeans(10, init=init, n_init=1, random_state=g).fit(X, sample_weight=w)
               for _ in range(3)]
    inertias = [s.inertia_ for s in singles]
    assert len(set(inertias)) > 1  # the case is informative
    best = KMeans(10, init=init, n_init=3, random_state=11).fit(X, sample_weight=w)
    _assert_identical(best, singles[int(np.argmin(inertias))])
    one = KMeans(10, init=init, n_init=1, random_state=11).fit(X, sample_weight=w)
    _assert_identical(one, singles[0])
    assert best.inertia_ <= one.inertia_


def test_verbose_prints_and_changes_nothing(capsys):
    X = _gauss(80, 2, seed=12)
    init = X[:5].copy()
    init[-1] = 50.0  # one empty cluster in iteration 1
    quiet = KMeans(5, init=init).fit(X)
    loud = KMeans(5, init=init, verbose=1).fit(X)
    out = capsys.readouterr().out
    assert "Lloyd iteration 1" in out and "1 empty cluster(s) relocated" in out
    assert out.count("Lloyd iteration") == loud.n_iter_
    _assert_identical(loud, quiet)


# ---------------------------------------------------------------------------
# 6. predict / transform / score consistency.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("d", [2, 17])
@pytest.mark.parametrize("weighted", [False, True])
def test_predict_transform_score_consistent(d, weighted):
    X, rng = _blobs(30, 5, d, seed=13)
    w = rng.uniform(0.5, 2.0, len(X)) if weighted else None
    km = KMeans(5, random_state=0).fit(X, sample_weight=w)
    labels = km.predict(X)
    assert labels.dtype == np.int32
    np.testing.assert_array_equal(labels, km.labels_)
    np.testing.assert_array_equal(
        KMeans(5, random_state=0).fit_predict(X, sample_weight=w), km.labels_)
    T = km.transform(X)
    assert T.shape == (len(X), 5)
    np.testing.assert_array_equal(T.argmin(axis=1), labels)
    np.testing.assert_allclose(T, np.sqrt(ref.sq_distances(X, km.cluster_centers_)),
                               rtol=1e-9, atol=1e-9)
    assert km.score(X, sample_weight=w) == pytest.approx(-km.inertia_, rel=1e-9)
    # new data, float32 data, a single row
    Y = rng.normal(scale=10.0, size=(41, d))
    np.testing.assert_array_equal(km.predict(Y), ref.assign(Y, km.cluster_centers_)[0])
    np.testing.assert_array_equal(km.predict(Y.astype(np.float32)),
                                  ref.assign(Y.astype(np.float32), km.cluster_centers_)[0])
    assert km.predict(Y[:1]).tolist() == ref.assign(Y[:1], km.cluster_centers_)[0].tolist()
    inertia_Y = float(ref.assign(Y, km.cluster_centers_)[1].sum())
    assert km.score(Y) == pytest.approx(-inertia_Y, rel=1e-12)


@pytest.mark.parametrize("d", [1, 2, 17])
def test_assignment_far_from_the_origin(d):
    # Translating data and centers by 1e8 (coordinates still carry ~1e-8
    # absolute precision) must not change which center is nearest.  Points
    # on a line through two centers 4 apart: the point at 2.1 from c0 is 1.9
    # from c1, a gap of 0.8 in squared distance, far from a tie.
    off = 1e8
    e = np.eye(d)[0]
    C = off + np.array([0.0 * e, 4.0 * e])
    km = KMeans(2, init=C, max_iter=1).fit(C)  # the centers do not move
    np.testing.assert_array_equal(km.cluster_centers_, C)
    ts = np.array([0.5, 1.5, 1.9, 2.1, 2.5, 3.5])
    P = off + ts[:, None] * e
    np.testing.assert_array_equal(km.predict(P), [0, 0, 0, 1, 1, 1])
    # and a full fit on translated blobs equals the reference
    X, rng = _blobs(50, 2, d, seed=14)
    init = X[:2] + off
    km = KMeans(2, init=init).fit(X + off)
    _assert_matches_reference(km, X + off, init)


# ---------------------------------------------------------------------------
# 7. Estimator conventions.
# ---------------------------------------------------------------------------

def test_get_set_params_round_trip_and_repr():
    params = dict(n_clusters=4, init="random", n_init=2, max_iter=50, tol=1e-3,
                  random_state=7, n_threads=2, verbose=0)
    km = KMeans(**params)
    assert km.get_params() == params
    assert km.get_params(deep=False) == params
    clone = KMeans(**km.get_params())
    assert clone.get_params() == params
    assert km.set_params(n_clusters=5, tol=0.0) is km
    assert km.get_params() == {**params, "n_clusters": 5, "tol": 0.0}
    assert KMeans().get_params() == dict(n_clusters=8, init="k-means++", n_init="auto",
                                         max_iter=300, tol=1e-4, random_state=None,
                                         n_threads=None, verbose=0)
    r = repr(km)
    assert r.startswith("KMeans(") and "n_clusters=5" in r and "init='random'" in r
    assert "KMeans(" in repr(KMeans(2, init=np.zeros((2, 2))))  # array params
    # the constructor stores hyper-parameters as given and validates nothing
    odd = KMeans(n_clusters=-1, tol="x")
    assert odd.n_clusters == -1 and odd.tol == "x"
    # a fitted clone-from-params gives the same result
    X = _gauss(40, 2, seed=15)
    a = KMeans(**params).fit(X)
    b = KMeans(**a.get_params()).fit(X)
    _assert_identical(a, b)


def test_refit_replaces_attributes():
    km = KMeans(3, random_state=0).fit(_gauss(30, 2, seed=16))
    km.set_params(n_clusters=2).fit(_gauss(20, 4, seed=17))
    assert km.cluster_centers_.shape == (2, 4)
    assert km.labels_.shape == (20,)
    assert km.n_features_in_ == 4


# ---------------------------------------------------------------------------
# 8. Property: KMeans(init=first k rows) equals the reference on random data.
# ---------------------------------------------------------------------------

def _on_exact_grid(C):
    """Centers on the 2**-20 grid, |c| <= 8: with the 1/8-grid data below every
    score and distance is computed exactly by both implementations."""
    s = C * 2.0 ** 20
    return bool(np.all(np.abs(C) <= 8.0) and np.all(s == np.round(s)))


def _ambiguous(X, w, init, max_iter, tol):
    """True when the reference's path could depend on rounding: a near-tie
    between distinct centers, between relocation candidates, or between the
    center shift and tol_abs (all within 1e-9 of the data's squared scale)."""
    hist = []
    C_end = ref.lloyd(X, init, w, max_iter=max_iter, tol=tol, history=hist)[0]
    scale = 1.0 + float((X ** 2).sum(1).max())
    eps = 1e-9 * scale
    tol_abs = ref.tolerance(X, tol)
    centers = [h["centers"] for h in hist] + [C_end]
    for t, C in enumerate(centers):
        if t > 0:
            shift = float(((C - centers[t - 1]) ** 2).sum())
            if tol_abs > 0 and abs(shift - tol_abs) <= 1e-9 * tol_abs:
                return True
        if _on_exact_grid(C):
            continue
        D = ref.sq_distances(X, C)
        lab = D.argmin(1)
        best = D[np.arange(len(X)), lab]
        for i, c in zip(*np.nonzero(D <= best[:, None] + eps)):
            if not np.array_equal(C[c], C[lab[i]]):
                return True
        if t < len(hist) and hist[t]["relocated"]:
            m = len(hist[t]["relocated"])
            order = np.argsort(-best, kind="stable")[:m + 1]
            for a, b in zip(order[:-1], order[1:]):
                same = np.array_equal(X[a], X[b]) and np.array_equal(C[lab[a]], C[lab[b]])
                if abs(best[a] - best[b]) <= eps and not same:
                    return True
    return False


@st.composite
def _problems(draw):
    n = draw(st.integers(1, 24))
    d = draw(st.sampled_from([1, 2, 3, 7, 16, 17, 20]))
    k = draw(st.integers(1, min(n, 10)))
    X = draw(arrays(np.int64, (n, d), elements=st.integers(-40, 40))) / 8.0
    w = None
    if draw(st.booleans()):
        w = draw(arrays(np.float64, n, elements=st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0])))
        assume(np.count_nonzero(w) >= k)
    max_iter = draw(st.sampled_from([1, 2, 5, 300]))
    tol = draw(st.sampled_from([0.0, 1e-4, 0.1]))
    return X, w, k, max_iter, tol


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(_problems())
def test_property_matches_reference(problem):
    X, w, k, max_iter, tol = problem
    init = X[:k]
    assume(not _ambiguous(X, w, init, max_iter, tol))
    km = KMeans(k, init=init, max_iter=max_iter, tol=tol).fit(X, sample_weight=w)
    _assert_matches_reference(km, X, init, w, max_iter=max_iter, tol=tol)
    assert km.n_iter_ <= max_iter
    assert np.isfinite(km.cluster_centers_).all()


@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (16384, 2), (40_001, 7)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mean_feature_variance_matches_numpy(shape, dtype):
    # The tolerance scale tol * mean(var(X, axis=0)) is computed in chunks;
    # it must agree with numpy's two-pass variance (same definition as
    # scikit-learn's tolerance).
    from pyfkm.core.kmeans import _mean_feature_variance

    X = (np.random.default_rng(3).normal(size=shape) * 5 + 100).astype(dtype)
    want = float(np.mean(np.var(X, axis=0, dtype=np.float64)))
    assert _mean_feature_variance(X) == pytest.approx(want, rel=1e-9, abs=1e-300)


# --- the one-call C Lloyd loop (csrc/fkm_lloyd_loop.c) ------------------------

@pytest.mark.parametrize("seed", range(40))
def test_lloyd_loop_matches_reference(seed):
    # random small problems, weighted or not, with tol 0 or > 0; some seeds
    # start from duplicate / far-away centers so that clusters go empty
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(1, 80)), int(rng.integers(1, 6)), int(rng.integers(1, 7))
    X = rng.normal(size=(n, d)) if seed % 4 else rng.integers(-2, 3, size=(n, d)) * 1.0
    w = None if seed % 3 == 0 else rng.uniform(0.1, 3.0, size=n)
    if seed % 5 == 0:
        C0 = np.repeat(X[:1], k, axis=0) + 0.0
        C0[1:] += 100.0
    else:
        C0 = X[rng.integers(0, n, size=k)] + rng.normal(scale=0.1, size=(k, d))
    tol = 0.0 if seed % 2 else 1e-4
    tol_abs = ref.tolerance(X, tol)
    C, labels, mind, inertia, n_iter = _lloyd.lloyd_loop(X, C0, w, 50, tol_abs)
    rC, rlabels, rinertia, rn_iter = ref.lloyd(X, C0, sample_weight=w, max_iter=50, tol=tol)
    np.testing.assert_allclose(C, rC, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(labels, rlabels)
    assert n_iter == rn_iter
    assert inertia == pytest.approx(rinertia, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(mind, ((X - C[labels]) ** 2).sum(1), rtol=1e-12, atol=1e-14)


def test_lloyd_loop_errors():
    X = np.zeros((3, 2))
    with pytest.raises(ValueError, match="shapes"):
        _lloyd.lloyd_loop(X, np.zeros((2, 3)), None, 10, 0.0)
    with pytest.raises(ValueError, match="length"):
        _lloyd.lloyd_loop(X, np.zeros((2, 2)), np.ones(2), 10, 0.0)
    with pytest.raises(pyfkm.NumericalError):
        _lloyd.lloyd_loop(np.array([[1e200], [-1e200]]), np.array([[0.0]]), None, 5, 0.0)


@pytest.mark.parametrize("X, w, C0", [
    # a cluster left with only a zero-weight point keeps its center (found by review)
    ([[1.0], [-1.0563084650467296], [-7.387512930387672]], [0, 0.3, 1.1],
     [[1.0], [100.0], [200.0]]),
    ([[1.0], [5.3], [-6.7]], [0, 0.1, 0.2], [[1.0], [100.0], [200.0]]),
    # means after a relocation come from the members (no running-sum cancellation)
    ([[1.0], [1e16]], None, [[0.0], [-1e17]]),
])
@pytest.mark.parametrize("big", [False, True])
def test_relocation_recomputes_means_from_members(X, w, C0, big):
    # big: the same problem repeated to n >= 8192 points (the Python-driven path)
    X, C0 = np.array(X), np.array(C0)
    w = None if w is None else np.array(w, dtype=float)
    if big:
        reps = 8192 // len(X) + 1
        X = np.repeat(X, reps, axis=0)
        w = None if w is None else np.repeat(w, reps)
    C, labels, inertia, n_iter = lloyd(X, C0, sample_weight=w, max_iter=1, tol=0.0)
    rC, rlabels, rinertia, rn_iter = ref.lloyd(X, C0, sample_weight=w, max_iter=1, tol=0.0)
    np.testing.assert_allclose(C, rC, rtol=1e-12)
    np.testing.assert_array_equal(labels, rlabels)
    assert inertia == pytest.approx(rinertia, rel=1e-9, abs=1e-9)


def test_centers_of_the_wrong_shape_never_reach_the_kernels():
    """Issue 18: centers of another width (set by a user, or from a tampered
    pickle) made the assignment kernels read past X's rows and the
    workspace's partial sums.  predict refuses them with a clear error, and
    the Cython wrappers check every length they index with themselves."""
    X = np.random.default_rng(0).normal(size=(50, 3))
    km = KMeans(3, random_state=0).fit(X)
    for bad in (np.zeros((3, 1)), np.zeros((3, 7)), np.zeros((0, 3)),
                np.full((3, 3), np.nan), [[0.0, 0.0, 0.0]]):
        km.cluster_centers_ = bad
        with pytest.raises(InvalidInputError, match="cluster_centers_"):
            km.predict(X)
    C = np.zeros((3, 7))
    ct, hn = _lloyd.pack_centers(C, np.zeros(7))
    labels = np.zeros(50, dtype=np.int32)
    with pytest.raises(ValueError, match="do not match"):
        _lloyd.assign_explicit(X, None, np.zeros(0), ct, hn, C, labels, None)
    bounds = np.array([0, 50], dtype=np.int64)
    args = (np.zeros((1, 3, 7)), np.zeros((1, 3)), np.zeros(1), np.zeros(1, dtype=np.int64))
    with pytest.raises(ValueError, match="do not match"):
        _lloyd.assign_parts(X, None, np.zeros(0), ct, hn, C, bounds, 0, 1, labels, None, *args)
    with pytest.raises(ValueError, match="shift"):
        _lloyd.pack_centers(C, np.zeros(3))
    C3 = np.zeros((3, 3))
    ct3, hn3 = _lloyd.pack_centers(C3, np.zeros(3))
    with pytest.raises(ValueError, match="wrong length"):
        _lloyd.assign_explicit(X, None, np.zeros(0), ct3, hn3, C3, labels[:10], None)
    with pytest.raises(ValueError, match="bounds"):
        _lloyd.assign_parts(X, None, np.zeros(0), ct3, hn3, C3, np.array([0, 99]), 0, 1,
                            labels, None, np.zeros((1, 3, 3)), np.zeros((1, 3)), np.zeros(1),
                            np.zeros(1, dtype=np.int64))


# -- scikit-learn's conventions (issue 21) -------------------------------------------


def test_n_init_auto_follows_scikit_learn():
    # "auto": one run for k-means++ (and array inits), ten for "random"
    X, _ = _blobs(15, 10, 2, seed=2)
    for init, runs in (("k-means++", 1), ("random", 10)):
        auto = KMeans(10, init=init, n_init="auto", random_state=5).fit(X)
        explicit = KMeans(10, init=init, n_init=runs, random_state=5).fit(X)
        _assert_identical(auto, explicit)
    other = KMeans(10, init="random", n_init=1, random_state=5).fit(X)
    assert other.inertia_ >= KMeans(10, init="random", random_state=5).fit(X).inertia_


@pytest.mark.parametrize("n_threads", [None, -1, -2, 1, 3])
def test_n_threads_none_and_negative_mean_cores_and_do_not_change_results(n_threads):
    X, _ = _blobs(3000, 5, 3, seed=4)  # 15,000 rows: several parts
    ref = KMeans(5, n_threads=1, random_state=0).fit(X)
    km = KMeans(5, n_threads=n_threads, random_state=0).fit(X)
    _assert_identical(km, ref)
    np.testing.assert_array_equal(km.predict(X), ref.predict(X))


def test_random_state_accepts_a_legacy_random_state():
    X, _ = _blobs(15, 10, 2, seed=2)
    a = KMeans(10, random_state=np.random.RandomState(3)).fit(X)
    b = KMeans(10, random_state=np.random.RandomState(3)).fit(X)
    _assert_identical(a, b)
    rs = np.random.RandomState(3)
    first = KMeans(10, random_state=rs).fit(X)
    second = KMeans(10, random_state=rs).fit(X)  # the RandomState advanced
    _assert_identical(first, a)
    assert not np.array_equal(first.cluster_centers_, second.cluster_centers_)
