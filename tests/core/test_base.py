"""Tests of pyfkm.core.base (CenterModelMixin, FitPredictMixin) and of the one
nearest-center kernel, pyfkm.core.kmeans.nearest_center.

Where the expected values come from:

* error cases: the contract in pyfkm/core/base.py and pyfkm/_validation.py
  (NotFittedError before fit; InvalidInputError, naming both widths, for X
  with another number of features; bad weights; unusable centers);
* a brute-force numpy oracle: the full matrix of squared distances from
  coordinate differences, ``argmin`` (lowest index on exact ties) and
  ``min``; on small-integer data every score and distance is exact, so the
  kernel must agree bit for bit, exact ties included;
* hand computations, written out next to each tiny case.

Every estimator of the package that uses the mixin is checked against the
same oracle in tests/test_center_models.py.
"""
import numpy as np
import pytest

from pyfkm import InvalidInputError, NotFittedError
from pyfkm._base import BaseEstimator
from pyfkm.core.base import CenterModelMixin, FitPredictMixin
from pyfkm.core.kmeans import KMeans, nearest_center


class Fixed(CenterModelMixin, FitPredictMixin, BaseEstimator):
    """A model whose fit sets the given centers and labels X by them."""

    def __init__(self, centers=None):
        self.centers = centers

    def fit(self, X, y=None):
        self.cluster_centers_ = np.ascontiguousarray(self.centers, dtype=np.float64)
        self.n_features_in_ = self.cluster_centers_.shape[1]
        self.labels_ = self.predict(X)
        return self


def oracle(X, C):
    """(squared distances n x k, argmin, min) from coordinate differences."""
    D = ((np.asarray(X, float)[:, None, :] - np.asarray(C, float)[None, :, :]) ** 2).sum(-1)
    return D, D.argmin(axis=1), D.min(axis=1)


def grid_data(n, k, d, seed):
    rng = np.random.default_rng(seed)
    return (rng.integers(-4, 5, (n, d)).astype(float),
            rng.integers(-4, 5, (k, d)).astype(float))


# ---------------------------------------------------------------------------
# 1. Errors first.
# ---------------------------------------------------------------------------

def test_not_fitted_is_refused():
    m = Fixed([[0.0, 0.0]])
    for call in (m.predict, m.transform, m.score):
        with pytest.raises(NotFittedError, match="Fixed is not fitted yet"):
            call([[0.0, 0.0]])


@pytest.mark.parametrize("method", ["predict", "transform", "score"])
def test_feature_count_and_bad_X_are_refused(method):
    m = Fixed([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]).fit(np.zeros((2, 3)))
    call = getattr(m, method)
    with pytest.raises(InvalidInputError, match="X has 2 features, but Fixed is expecting 3 features"):
        call(np.zeros((4, 2)))
    with pytest.raises(InvalidInputError, match="X has 4 features, but Fixed is expecting 3 features"):
        call(np.zeros((1, 4)))
    with pytest.raises(InvalidInputError, match="NaN or infinity"):
        call([[0.0, np.nan, 0.0]])
    with pytest.raises(InvalidInputError, match="2-D"):
        call([0.0, 0.0, 0.0])
    with pytest.raises(InvalidInputError, match="empty"):
        call(np.zeros((0, 3)))


def test_bad_sample_weight_is_refused():
    m = Fixed([[0.0], [4.0]]).fit([[0.0]])
    X = [[1.0], [3.0], [5.0]]
    with pytest.raises(InvalidInputError, match="sample_weight has 2 entries but X has 3 rows"):
        m.score(X, sample_weight=[1.0, 1.0])
    with pytest.raises(InvalidInputError, match="nonnegative"):
        m.score(X, sample_weight=[1.0, -1.0, 1.0])
    with pytest.raises(InvalidInputError, match="all zero"):
        m.score(X, sample_weight=[0.0, 0.0, 0.0])


@pytest.mark.parametrize("centers", [
    np.array([[0.0, np.inf]]),                     # not finite
    np.zeros((2, 3)),                              # other width than n_features_in_
    np.zeros((0, 2)),                              # no center
    np.zeros((2, 2), dtype=np.float32),            # not float64
    np.zeros((2, 4))[:, ::2],                      # not C-contiguous
])
def test_unusable_centers_are_refused_before_the_kernel(centers):
    # centers set by hand (or read from a file) never reach the C kernel
    m = Fixed([[0.0, 0.0]]).fit([[0.0, 0.0]])
    m.cluster_centers_ = centers
    for call in (m.predict, m.transform, m.score):
        with pytest.raises(InvalidInputError, match="cluster_centers_ must be"):
            call([[0.0, 0.0]])


# ---------------------------------------------------------------------------
# 2. Hand-computed cases.
# ---------------------------------------------------------------------------

def test_hand_case():
    # centers (0, 0) and (4, 0); points (1, 0), (4, 3), (2, 0) (an exact tie:
    # squared distance 4 to both, the lowest index wins)
    m = Fixed([[0.0, 0.0], [4.0, 0.0]]).fit([[0.0, 0.0]])
    X = [[1.0, 0.0], [4.0, 3.0], [2.0, 0.0]]
    assert m.predict(X).tolist() == [0, 1, 0]
    assert m.predict(X).dtype == np.int32
    assert m.transform(X).tolist() == [[1.0, 3.0], [5.0, 3.0], [2.0, 2.0]]
    # squared distances to the nearest center: 1, 9, 4
    assert m.score(X) == -14.0
    assert m.score(X, sample_weight=[2.0, 1.0, 0.5]) == -(2.0 + 9.0 + 2.0)
    assert m.score(X, sample_weight=3.0) == -42.0
    assert m.fit_predict(X).tolist() == [0, 1, 0]


def test_integer_input_and_float32_input_are_read_as_float64():
    m = Fixed([[0.0], [10.0]]).fit([[0.0]])
    assert m.predict([[3], [7]]).tolist() == [0, 1]
    X32 = np.array([[0.1], [9.7]], dtype=np.float32)
    np.testing.assert_array_equal(m.transform(X32),
                                  np.abs(X32.astype(np.float64) - [[0.0, 10.0]]))


# ---------------------------------------------------------------------------
# 3. The oracle.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n, k, d", [(1, 1, 1), (7, 3, 2), (300, 9, 5), (5000, 17, 3)])
def test_nearest_center_equals_the_oracle_exactly_on_grid_data(seed, n, k, d):
    # small integers: every distance and score is exact, ties are exact ties
    X, C = grid_data(n, k, d, seed)
    _, lab, mind = oracle(X, C)
    d2, labels = nearest_center(X, C)
    assert labels.dtype == np.int32 and d2.dtype == np.float64
    np.testing.assert_array_equal(labels, lab)
    np.testing.assert_array_equal(d2, mind)
    if n >= 300:
        D = oracle(X, C)[0]
        assert ((D == mind[:, None]).sum(1) > 1).any()   # the case has exact ties


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("weighted", [False, True])
def test_mixin_equals_the_oracle_on_gaussian_data(seed, weighted):
    rng = np.random.default_rng(seed)
    C = rng.normal(size=(6, 4))
    X = rng.normal(size=(500, 4))
    D, lab, mind = oracle(X, C)
    Ds = np.sort(D, axis=1)
    assert (Ds[:, 1] - Ds[:, 0] > 1e-9 * Ds[:, 1]).all()  # no near-tie: labels are defined
    m = Fixed(C).fit(X[:1])
    np.testing.assert_array_equal(m.predict(X), lab)
    np.testing.assert_allclose(m.transform(X), np.sqrt(D), rtol=1e-13, atol=0)
    w = rng.uniform(0.5, 2.0, len(X)) if weighted else None
    expected = -(mind.sum() if w is None else w @ mind)
    assert m.score(X, sample_weight=w) == pytest.approx(expected, rel=1e-12)
    # the score is the negative sum, not a mean: doubling the data doubles it
    assert m.score(np.vstack([X, X])) == pytest.approx(2 * m.score(X), rel=1e-12)


@pytest.mark.parametrize("d", [1, 3])
def test_far_from_the_origin(d):
    # translating points and centers by 1e8 changes no label and no distance
    X, C = grid_data(400, 5, d, seed=3)
    near = nearest_center(X, C)
    far = nearest_center(X + 1e8, C + 1e8)
    np.testing.assert_array_equal(far[1], near[1])
    np.testing.assert_array_equal(far[0], near[0])


@pytest.mark.parametrize("offset", [0.0, 1e6, 1.7e9, -3e12])
@pytest.mark.parametrize("d", [1, 2])
def test_real_valued_data_far_from_the_origin(offset, d):
    # Unix-timestamp-like data: 100 centers 1 apart around 1.7e9, points
    # between them.  The kernel's own shift (16 significant bits) sits up to
    # 2**14 away from such centers; nearest_center must still pick the
    # nearest one (found with 5 of 20,000 points wrong before it moved the
    # data first).  Continuous data: no exact ties to break.
    rng = np.random.default_rng(11)
    C = offset + np.repeat(np.arange(100.0)[:, None], d, axis=1)
    C[:, 1:] += rng.uniform(-0.25, 0.25, size=(100, d - 1))
    X = offset + rng.uniform(-1.0, 100.0, size=(20000, d))
    D, lab, mind = oracle(X, C)
    d2, labels = nearest_center(X, C)
    np.testing.assert_array_equal(labels, lab)
    # the distances to the chosen centers, up to the rounding of x - c
    np.testing.assert_allclose(d2, mind, rtol=1e-12, atol=1e-12)


def test_deletion_estimators_predict_exactly_far_from_the_origin():
    from pyfkm import DCKMeans, QKMeans
    rng = np.random.default_rng(0)
    C0 = 1.7e9 + np.sort(rng.uniform(0, 20, 20))
    X = (C0[rng.integers(20, size=5000)] + rng.normal(size=5000))[:, None]
    for m in (QKMeans(20, random_state=0).fit(X),
              DCKMeans(20, n_leaves=4, random_state=0).fit(X)):
        D = (X - m.cluster_centers_.T) ** 2            # exact in 1-D
        np.testing.assert_array_equal(m.predict(X), D.argmin(1))
        assert m.score(X) == pytest.approx(-D.min(1).sum(), rel=1e-12)


def test_nearest_center_does_not_depend_on_threads():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(20011, 3))
    C = rng.normal(size=(7, 3))
    one = nearest_center(X, C)
    for t in (2, 3):
        other = nearest_center(X, C, n_threads=t)
        np.testing.assert_array_equal(other[1], one[1])
        np.testing.assert_array_equal(other[0], one[0])
    assert nearest_center(X[:0], C)[0].shape == (0,)


def test_kmeans_uses_the_mixin_with_its_threads():
    X, _ = grid_data(9000, 4, 3, seed=4)
    X += np.random.default_rng(4).normal(scale=0.1, size=X.shape)
    a = KMeans(4, random_state=0, n_threads=1).fit(X)
    b = KMeans(4, random_state=0, n_threads=3).fit(X)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert a.score(X) == b.score(X)
    assert isinstance(a, CenterModelMixin)
    _, lab, mind = oracle(X, a.cluster_centers_)
    np.testing.assert_array_equal(a.predict(X), lab)
    assert a.score(X) == pytest.approx(-mind.sum(), rel=1e-12)
    np.testing.assert_array_equal(KMeans(4, random_state=0).fit_predict(X), a.labels_)
