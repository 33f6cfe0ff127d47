"""Every estimator's predict / transform / score is the one of
pyfkm.core.base.CenterModelMixin (issue 20: one implementation, one meaning
of score), checked against a brute-force numpy oracle.

Where the expected values come from: the full matrix of squared distances
of the points to the fitted centers, from coordinate differences; predict is
its ``argmin`` (for the (k, z)-center estimators: -1 beyond ``radius_``),
transform its square root, score the negative (weighted) sum of its row
minima.  The data are Gaussian blobs; the oracle's labels are used only where
the two nearest centers are not a near-tie (checked).
"""
import numpy as np
import pytest

from pyfkm import (DCKMeans, DistributedKZCenter, DPFederatedKMeans, FederatedKMeans,
                   InvalidInputError, KMeans, KZCenter, NotFittedError, QKMeans)
from pyfkm.core.base import CenterModelMixin
from pyfkm.dp import FederatedLloyd, GLloyd, SuLloyd
from pyfkm.mufc import FederatedDCKMeans, KFed
from pyfkm.outliers import GuhaKZCenter, MalkomesKZCenter, UniformSamplingKZCenter


def _split(X):
    return [X[0::3], X[1::3], X[2::3]]


FITS = {
    "KMeans": lambda X: KMeans(3, random_state=0).fit(X),
    "QKMeans": lambda X: QKMeans(3, random_state=0).fit(X),
    "DCKMeans": lambda X: DCKMeans(3, n_leaves=2, random_state=0).fit(X),
    "FederatedKMeans": lambda X: FederatedKMeans(3, secure=False, random_state=0).fit(_split(X)),
    "KFed": lambda X: KFed(3, random_state=0).fit(_split(X)),
    "FederatedDCKMeans": lambda X: FederatedDCKMeans(3, random_state=0).fit(_split(X)),
    "DPFederatedKMeans": lambda X: DPFederatedKMeans(3, epsilon=2.0, random_state=0).fit(
        _split(X)),
    "GLloyd": lambda X: GLloyd(3, epsilon=2.0, random_state=0).fit(_split(X)),
    "SuLloyd": lambda X: SuLloyd(3, epsilon=2.0, random_state=0).fit(_split(X)),
    "FederatedLloyd": lambda X: FederatedLloyd(3, random_state=0).fit(_split(X)),
    "KZCenter": lambda X: KZCenter(3, 4).fit(X),
    "DistributedKZCenter": lambda X: DistributedKZCenter(3, 4, random_state=0).fit(_split(X)),
    "MalkomesKZCenter": lambda X: MalkomesKZCenter(3, 4).fit(_split(X)),
    "GuhaKZCenter": lambda X: GuhaKZCenter(3, 4, random_state=0).fit(_split(X)),
    "UniformSamplingKZCenter": lambda X: UniformSamplingKZCenter(
        3, 4, sample_fraction=0.5, random_state=0).fit(_split(X)),
}
OUTLIERS = {"KZCenter", "DistributedKZCenter", "MalkomesKZCenter", "GuhaKZCenter",
            "UniformSamplingKZCenter"}


def _blobs(n=300, d=3, seed=0):
    """Three blobs inside [-0.45, 0.45]^d (every estimator's default box)."""
    rng = np.random.default_rng(seed)
    C = np.array([[-0.25] * d, [0.25] * d, [0.25, -0.25] + [0.0] * (d - 2)])
    X = C[rng.integers(3, size=n)] + rng.normal(scale=0.05, size=(n, d))
    return np.clip(X, -0.45, 0.45)


@pytest.fixture(scope="module")
def fitted():
    X = _blobs()
    return X, {name: fit(X) for name, fit in FITS.items()}


def _oracle(X, C):
    D = ((X[:, None, :] - C[None, :, :]) ** 2).sum(-1)
    return D, D.argmin(axis=1), D.min(axis=1)


# ---------------------------------------------------------------------------
# Errors first
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FITS))
def test_errors(name, fitted):
    X, models = fitted
    m = models[name]
    cls = type(m).__name__
    for method in ("predict", "transform", "score"):
        with pytest.raises(InvalidInputError,
                           match=f"X has 4 features, but {cls} is expecting 3 features"):
            getattr(m, method)(np.zeros((2, 4)))
        with pytest.raises(InvalidInputError, match="NaN or infinity"):
            getattr(m, method)([[0.0, np.inf, 0.0]])
    with pytest.raises(InvalidInputError, match="sample_weight has 3 entries but X has 2 rows"):
        m.score(X[:2], sample_weight=[1.0, 1.0, 1.0])
    with pytest.raises(NotFittedError):
        type(m)(**m.get_params()).predict(X)


# ---------------------------------------------------------------------------
# Against the oracle
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FITS))
def test_every_estimator_uses_the_mixin(name, fitted):
    _, models = fitted
    assert isinstance(models[name], CenterModelMixin)


@pytest.mark.parametrize("name", sorted(FITS))
def test_predict_transform_score_against_the_oracle(name, fitted):
    X, models = fitted
    m = models[name]
    C = m.cluster_centers_
    Y = np.vstack([X, _blobs(200, seed=1)])            # training and new points
    D, lab, mind = _oracle(Y, C)
    if C.shape[0] > 1:
        Ds = np.sort(D, axis=1)
        clear = Ds[:, 1] - Ds[:, 0] > 1e-9 * (1.0 + Ds[:, 1])
        assert clear.mean() > 0.99
    else:
        clear = np.ones(len(Y), bool)
    got = m.predict(Y)
    if name in OUTLIERS:
        lab = np.where(np.sqrt(mind) > m.radius_, -1, lab)
        np.testing.assert_array_equal(m.is_outlier(Y), lab < 0)
    np.testing.assert_array_equal(got[clear], lab[clear])
    T = m.transform(Y)
    assert T.shape == (len(Y), C.shape[0])
    np.testing.assert_allclose(T, np.sqrt(D), rtol=1e-12, atol=1e-15)
    # score: the negative sum (not a mean), weighted by sample_weight
    assert m.score(Y) == pytest.approx(-mind.sum(), rel=1e-12)
    w = np.random.default_rng(2).uniform(0.0, 3.0, len(Y))
    assert m.score(Y, sample_weight=w) == pytest.approx(-(w @ mind), rel=1e-12)
    assert m.score(np.vstack([Y, Y])) == pytest.approx(2 * m.score(Y), rel=1e-12)


def test_dp_score_is_the_negative_sum_and_nicv_the_mean(fitted):
    X, models = fitted
    for name in ("DPFederatedKMeans", "GLloyd", "SuLloyd", "FederatedLloyd"):
        m = models[name]
        mind = _oracle(X, m.cluster_centers_)[2]
        assert m.nicv(X) == pytest.approx(mind.mean(), rel=1e-12)
        assert m.score(X) == pytest.approx(-m.nicv(X) * len(X), rel=1e-12)


def test_fit_predict_where_a_fit_keeps_labels(fitted):
    X, models = fitted
    np.testing.assert_array_equal(QKMeans(3, random_state=0).fit_predict(X),
                                  models["QKMeans"].labels_)
    ids = np.arange(len(X)) * 2 + 5
    q = QKMeans(3, random_state=0)
    np.testing.assert_array_equal(q.fit_predict(X, sample_ids=ids), q.labels_)
    np.testing.assert_array_equal(q.sample_ids_, ids)
    np.testing.assert_array_equal(KMeans(3, random_state=0).fit_predict(X),
                                  models["KMeans"].labels_)
    # scikit-learn's positional form fit_predict(X, y, sample_weight)
    w = np.linspace(0.5, 2.0, len(X))
    np.testing.assert_array_equal(KMeans(3, random_state=0).fit_predict(X, None, w),
                                  KMeans(3, random_state=0).fit(X, sample_weight=w).labels_)
    # KZCenter keeps labels_ (-1 for declared outliers): fit_predict gives them
    from pyfkm import KZCenter
    np.testing.assert_array_equal(KZCenter(3, 4).fit_predict(X), KZCenter(3, 4).fit(X).labels_)
