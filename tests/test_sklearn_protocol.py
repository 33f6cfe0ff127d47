"""The scikit-learn estimator protocol (issue 21).

* scikit-learn's own ``check_estimator`` checks, one test per check, for
  ``KMeans``, ``QKMeans`` and ``DCKMeans`` (scikit-learn comes from the test
  extras; pyfkm does not import it).  One check is an expected failure,
  the one scikit-learn itself expects its own ``KMeans`` to fail
  (``PER_ESTIMATOR_XFAIL_CHECKS``): a weighted k-means++ draw is not the
  draw on repeated rows (the law is the same; tests/core/test_seeding.py
  checks it).
* ``Pipeline``, ``GridSearchCV``, ``cross_val_score`` and ``clone`` with each.
* DataFrames: ``feature_names_in_`` and the errors of reordered columns,
  for every estimator that fits on one ``X`` and for the federated ones.
* The federated estimators take a list of clients, which scikit-learn's
  checks cannot build; the checks that apply are written here, parametrized
  over every federated estimator.
"""
import copy
import pickle
import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")  # in the test extras
sklearn = pytest.importorskip("sklearn")  # in the test extras

from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import pyfkm  # noqa: E402
from pyfkm import (DCKMeans, DistributedKZCenter, DPFederatedKMeans,  # noqa: E402
                   FederatedKMeans, InvalidInputError, KMeans, KZCenter, NotFittedError,
                   QKMeans)
from pyfkm.dp import FederatedLloyd, GLloyd, SuLloyd  # noqa: E402
from pyfkm.mufc import FederatedDCKMeans, KFed  # noqa: E402

CENTRALIZED = [KMeans(3, random_state=0), QKMeans(3, random_state=0),
               DCKMeans(3, random_state=0)]

XFAIL = {"check_sample_weight_equivalence_on_dense_data":
         "a weighted k-means++ draw is not the draw on repeated rows (same law); "
         "scikit-learn expects the same failure of its own KMeans"}


def _expected_failures(est):
    return XFAIL if isinstance(est, KMeans) else {}


@parametrize_with_checks(CENTRALIZED, expected_failed_checks=_expected_failures)
def test_check_estimator(estimator, check):
    check(estimator)


def _blobs(n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    means = rng.uniform(-10, 10, size=(3, d))
    return np.concatenate([m + rng.normal(size=(n // 3, d)) for m in means])


@pytest.mark.parametrize("est", CENTRALIZED + [KZCenter(3, 2)], ids=lambda e: type(e).__name__)
def test_pipeline_and_grid_search_give_finite_scores(est):
    X = _blobs()
    pipe = make_pipeline(StandardScaler(), clone(est))
    labels = pipe.fit(X).predict(X)
    assert labels.shape == (X.shape[0],)
    grid = GridSearchCV(pipe, {f"{type(est).__name__.lower()}__n_clusters": [2, 3]}, cv=3,
                        error_score="raise")
    grid.fit(X)
    scores = grid.cv_results_["mean_test_score"]
    assert np.isfinite(scores).all() and (scores <= 0).all()
    assert grid.best_params_ in ({f"{type(est).__name__.lower()}__n_clusters": 3},
                                 {f"{type(est).__name__.lower()}__n_clusters": 2})
    cv = cross_val_score(clone(est), X, cv=3, error_score="raise")
    assert np.isfinite(cv).all()


@pytest.mark.parametrize("est", CENTRALIZED + [KZCenter(3, 2)], ids=lambda e: type(e).__name__)
def test_dataframe_sets_feature_names_and_reordered_columns_raise(est):
    X = _blobs()
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    m = clone(est).fit(df)
    assert m.feature_names_in_.tolist() == ["a", "b", "c"]
    assert m.feature_names_in_.dtype == object
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same names: no warning
        labels = m.predict(df)
    with pytest.warns(UserWarning):
        np.testing.assert_array_equal(labels, m.predict(X))
    with pytest.raises(InvalidInputError, match="same order"):
        m.predict(df[["c", "b", "a"]])
    with pytest.raises(InvalidInputError, match="unseen at fit time:\n- d"):
        m.transform(df.rename(columns={"c": "d"}))
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        m.predict(X)
    # refitting on an array forgets the names
    m.fit(X)
    assert not hasattr(m, "feature_names_in_")
    with pytest.warns(UserWarning, match="fitted without feature names"):
        m.predict(df)


def test_numpy_string_column_names_are_kept_as_str_and_pickle():
    # pandas keeps numpy str_ labels as they are; the model stores plain str
    df = pd.DataFrame(_blobs(), columns=list(np.array(["a", "b", "c"])))
    for est in CENTRALIZED:
        m = clone(est).fit(df)
        assert [type(v) for v in m.feature_names_in_] == [str, str, str]
        twin = pickle.loads(pickle.dumps(m))
        assert twin.feature_names_in_.tolist() == ["a", "b", "c"]


def test_mixed_type_column_names_raise():
    df = pd.DataFrame(_blobs(), columns=["a", 1, "c"])
    with pytest.raises(InvalidInputError, match="mixed types"):
        KMeans(3).fit(df)


def test_not_fitted_error_is_scikit_learns_too():
    from sklearn.exceptions import NotFittedError as SkNotFitted
    from sklearn.utils.validation import check_is_fitted
    for est in CENTRALIZED + [FederatedKMeans(2), DPFederatedKMeans(2, epsilon=1.0)]:
        with pytest.raises(SkNotFitted):
            est.predict([[0.0, 0.0]])
        with pytest.raises(NotFittedError):
            est.predict([[0.0, 0.0]])
        with pytest.raises(SkNotFitted):
            check_is_fitted(est)
    e = pickle.loads(pickle.dumps(NotFittedError("x")))
    assert isinstance(e, (NotFittedError, SkNotFitted)) and e.args == ("x",)


# -- the federated estimators: the checks that apply to a list of clients ------

def _clients(seed=0, n=(40, 30, 50), d=2):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-0.45, 0.45, size=(m, d)) for m in n]


FEDERATED = [
    lambda: FederatedKMeans(3, server_points="centers", random_state=0),
    lambda: FederatedKMeans(3, random_state=0),
    lambda: KFed(3, random_state=0),
    lambda: FederatedDCKMeans(3, random_state=0),
    lambda: DPFederatedKMeans(3, epsilon=2.0, random_state=0),
    lambda: FederatedLloyd(3, random_state=0),
    lambda: GLloyd(3, epsilon=2.0, random_state=0),
    lambda: SuLloyd(3, epsilon=2.0, random_state=0),
    lambda: DistributedKZCenter(3, 2, random_state=0),
]
FED_IDS = ["FederatedKMeans-centers", "FederatedKMeans", "KFed", "FederatedDCKMeans",
           "DPFederatedKMeans", "FederatedLloyd", "GLloyd", "SuLloyd", "DistributedKZCenter"]
federated = pytest.mark.parametrize("make", FEDERATED, ids=FED_IDS)


@federated
def test_federated_clone_params_and_repr(make):
    est = make()
    params = est.get_params()
    twin = clone(est)
    assert twin is not est and twin.get_params() == params
    assert est.set_params(random_state=5) is est and est.get_params()["random_state"] == 5
    with pytest.raises(InvalidInputError, match="invalid parameter"):
        est.set_params(not_a_parameter=1)
    assert repr(est).startswith(type(est).__name__ + "(")
    from sklearn.utils import get_tags
    tags = get_tags(est)
    assert tags.estimator_type == "clusterer" and not tags.target_tags.required


@federated
def test_federated_fit_returns_self_accepts_y_none_and_does_not_touch_input(make):
    clients = _clients()
    before = [c.copy() for c in clients]
    est = make()
    assert est.fit(clients, None) is est
    for a, b in zip(clients, before):
        np.testing.assert_array_equal(a, b)
    assert est.cluster_centers_.shape == (3, 2) and est.n_features_in_ == 2
    assert est.predict(clients[0]).shape == (40,)
    assert est.transform(clients[0]).shape == (40, 3)
    score = est.score(clients[0])
    assert np.isfinite(score) and score <= 0


@federated
def test_federated_same_seed_same_model_and_dtypes(make):
    clients = _clients()
    a = make().fit(clients)
    b = make().fit([c.astype(np.float32) for c in clients])
    c = make().fit([list(map(list, x)) for x in clients])  # nested lists
    if "epsilon" not in a.get_params():
        # the DP estimators' noise comes from the OS, never from random_state
        np.testing.assert_allclose(a.cluster_centers_, c.cluster_centers_)
    assert b.cluster_centers_.dtype == np.float64
    assert a.cluster_centers_.dtype == np.float64


@federated
def test_federated_bad_input_raises_clearly_and_changes_nothing(make):
    import scipy.sparse as sp
    clients = _clients()
    est = make().fit(clients)
    C = est.cluster_centers_.copy()
    bad = [c.copy() for c in clients]
    bad[1][0, 0] = np.nan
    cases = [
        (bad, "NaN or infinity"),
        ([clients[0], clients[1][:, :1]], "different numbers of features"),
        ([sp.csr_matrix(c) for c in clients], "sparse input is not supported"),
        ([c.astype(complex) for c in clients], "Complex data not supported"),
        ([np.zeros((0, 2)), np.zeros((0, 2))], "empty"),
        (clients[0], "sequence|list"),
        ([[c[:1] for c in clients][0]], "n_clusters|n_samples"),
    ]
    for data, match in cases:
        with pytest.raises(InvalidInputError, match=match):
            est.fit(data)
        np.testing.assert_array_equal(est.cluster_centers_, C)
    with pytest.raises(InvalidInputError, match="is expecting 2 features"):
        est.predict(np.zeros((3, 5)))
    with pytest.raises(InvalidInputError, match="Reshape your data"):
        est.predict(clients[0][0])


@federated
def test_federated_empty_clients_are_accepted(make):
    clients = _clients()
    with_empty = clients[:1] + [np.zeros((0, 2))] + clients[1:]
    est = make().fit(with_empty)
    assert est.cluster_centers_.shape == (3, 2)


@federated
def test_federated_pickle_and_deepcopy_predict_the_same(make):
    clients = _clients()
    est = make().fit(clients)
    X = np.concatenate(clients)
    for twin in (pickle.loads(pickle.dumps(est)), copy.deepcopy(est)):
        np.testing.assert_array_equal(twin.predict(X), est.predict(X))


@federated
def test_federated_dataframe_clients_set_feature_names(make):
    clients = [pd.DataFrame(c, columns=["x", "y"]) for c in _clients()]
    est = make().fit(clients)
    assert est.feature_names_in_.tolist() == ["x", "y"]
    with pytest.raises(InvalidInputError, match="same order"):
        est.predict(clients[0][["y", "x"]])
    with pytest.raises(InvalidInputError, match="same columns in the same order"):
        make().fit([clients[0], clients[1][["y", "x"]]])


def test_federated_kmeans_inertia_is_the_objective_of_the_remaining_data():
    clients = _clients()
    est = FederatedKMeans(3, server_points="centers", random_state=0).fit(clients)
    X = np.concatenate(clients)
    assert est.inertia_ == pytest.approx(-est.score(X), rel=1e-12)
    est.remove(0, [0, 1, 2])
    rest = np.concatenate([clients[0][3:]] + clients[1:])
    assert est.inertia_ == pytest.approx(-est.score(rest), rel=1e-12)
    est.remove_clients([2])
    assert est.inertia_ == pytest.approx(-est.score(np.concatenate([clients[0][3:], clients[1]])),
                                         rel=1e-12)


# -- errors a user can act on: one test per item of issue 21 -------------------

def test_gamma_larger_than_the_box_raises():
    with pytest.raises(InvalidInputError, match="gamma=10 is larger than the data box"):
        FederatedKMeans(3, gamma=10).fit(_clients())


def test_more_clusters_than_points_raises_for_the_federated_estimators():
    for est in (FederatedKMeans(1000), KFed(1000), DPFederatedKMeans(1000, epsilon=1.0)):
        with pytest.raises(InvalidInputError, match="n_samples=120 should be >= n_clusters=1000"):
            est.fit(_clients())


def test_fewer_distinct_points_than_clusters_warns():
    X = np.repeat([[0.0, 0.0], [1.0, 1.0]], 5, axis=0)
    with pytest.warns(UserWarning, match="2 distinct clusters, fewer than n_clusters=3"):
        KMeans(3, random_state=0).fit(X)
    clients = [np.repeat([[0.1, 0.1]], 10, axis=0), np.repeat([[-0.2, 0.3]], 10, axis=0)]
    with pytest.warns(UserWarning, match="distinct clusters"):
        FederatedKMeans(3, server_points="centers", random_state=0).fit(clients)


@pytest.mark.parametrize("cls", [FederatedKMeans, DPFederatedKMeans])
@pytest.mark.parametrize("bounds", [(1, 2, 3), 5, "ab", (1, None)])
def test_bad_bounds_name_the_argument(cls, bounds):
    kw = {"epsilon": 1.0} if cls is DPFederatedKMeans else {}
    with pytest.raises(InvalidInputError, match=r"bounds=.* must be a pair \(lower, upper\)"):
        cls(3, bounds=bounds, **kw).fit(_clients())


def test_dp_fit_accepts_y_none():
    est = DPFederatedKMeans(3, epsilon=1.0, random_state=0)
    assert est.fit(_clients(), None) is est


@pytest.mark.parametrize("est, box", [
    (DPFederatedKMeans(3, epsilon=1.0, random_state=0), 1e6),     # noise beyond the sampler
    (DPFederatedKMeans(3, epsilon=1.0, random_state=0), 1e15),    # data beyond fixed point
    (DPFederatedKMeans(3, epsilon=1.0, noise="gaussian", random_state=0), 1e15),
    (FederatedLloyd(3, random_state=0), 1e15),
    (SuLloyd(3, epsilon=1.0, random_state=0), 1e15),
    (GLloyd(3, epsilon=1.0, noise="gaussian", random_state=0), 1e15),
], ids=["dp-noise", "dp-data", "dp-gaussian", "lloyd", "sulloyd", "glloyd-gaussian"])
def test_dp_capacity_error_names_only_existing_parameters(est, box):
    est.set_params(bounds=(-box, box))
    with pytest.raises(pyfkm.CapacityError) as info:
        est.fit([c * box for c in _clients()])
    msg = str(info.value)
    assert msg.startswith(type(est).__name__) and "scale_bits" not in msg
    params = est.get_params()
    assert "bounds" in msg and "scale_to_box" in msg
    assert ("epsilon" in msg) <= ("epsilon" in params)
    assert ("noise=" in msg) <= (params.get("noise", "gaussian") != "gaussian")
    advice = msg.split("; use")[1]
    if "fixed-point overflow" in msg:  # the data overflow the fixed point: only the box helps
        assert "epsilon" not in advice and "noise=" not in advice
    else:  # the noise is out of the sampler's range: epsilon and the noise kind help
        assert "another epsilon" in advice and "noise='gaussian'" in advice
    if box == 1e6:
        assert "fixed-point overflow" not in msg


def test_sparse_and_object_input():
    import scipy.sparse as sp
    X = _blobs()
    with pytest.raises(InvalidInputError, match="sparse input is not supported.*toarray"):
        KMeans(3).fit(sp.csr_matrix(X))
    obj = X.astype(object)
    np.testing.assert_array_equal(KMeans(3, random_state=0).fit(obj).cluster_centers_,
                                  KMeans(3, random_state=0).fit(X).cluster_centers_)
    obj[0, 0] = "text"
    with pytest.raises(InvalidInputError, match="X must be numeric"):
        KMeans(3).fit(obj)
    obj[0, 0] = {"a": 1}
    with pytest.raises(TypeError, match="X must be numeric"):
        KMeans(3).fit(obj)
    with pytest.raises(InvalidInputError):  # the TypeError is a pyfkm error too
        KMeans(3).fit(obj)


def test_one_sample_predict_suggests_the_right_reshape():
    m = KMeans(2, random_state=0).fit(_blobs())
    with pytest.raises(InvalidInputError, match=r"X.reshape\(1, -1\) if it is one sample"):
        m.predict(_blobs()[0])


def test_save_into_a_missing_folder_names_the_folder(tmp_path):
    est = FederatedKMeans(2, server_points="centers", random_state=0).fit(_clients())
    with pytest.raises(InvalidInputError, match="folder .*nodir.* does not exist"):
        est.save(tmp_path / "nodir" / "m.npz")
    assert not any(tmp_path.iterdir())  # no temporary file left behind


def test_score_means_the_same_everywhere():
    # the negative weighted sum of squared distances to the nearest center
    X = _blobs()
    clients = [X[:40] / 40, X[40:] / 40]
    for est, data in ((KMeans(3, random_state=0), X), (QKMeans(3, random_state=0), X),
                      (FederatedKMeans(3, server_points="centers", random_state=0), clients),
                      (DPFederatedKMeans(3, epsilon=2.0, random_state=0), clients)):
        est.fit(data)
        Z = X if data is X else np.concatenate(clients)
        d2 = ((Z[:, None, :] - est.cluster_centers_[None]) ** 2).sum(-1).min(1)
        assert est.score(Z) == pytest.approx(-d2.sum(), rel=1e-10)
        w = np.linspace(0.5, 2.0, Z.shape[0])
        assert est.score(Z, sample_weight=w) == pytest.approx(-(w @ d2), rel=1e-10)


def test_warnings_are_not_errors_by_default():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        KMeans(3, random_state=0).fit(_blobs()).predict(_blobs())


@pytest.mark.parametrize("est", CENTRALIZED + [KZCenter(3, 2)], ids=lambda e: type(e).__name__)
def test_feature_names_survive_pickle_and_deepcopy(est):
    df = pd.DataFrame(_blobs(), columns=["a", "b", "c"])
    m = clone(est).fit(df)
    for twin in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert twin.feature_names_in_.tolist() == ["a", "b", "c"]
        np.testing.assert_array_equal(twin.predict(df), m.predict(df))
        with pytest.raises(InvalidInputError, match="same order"):
            twin.predict(df[["b", "a", "c"]])


def test_deletion_pickle_with_tampered_feature_names_is_refused():
    m = QKMeans(3, random_state=0).fit(pd.DataFrame(_blobs(), columns=["a", "b", "c"]))
    state = m.__getstate__()
    for bad in (np.array(["a", "b"], dtype=object), np.array([1, 2, 3], dtype=object),
                ["a", "b", "c"]):
        twin = QKMeans.__new__(QKMeans)
        with pytest.raises(pyfkm.ModelFileError, match="feature_names_in_"):
            twin.__setstate__({**state, "feature_names_in_": bad})


def test_federated_feature_names_survive_save_load_and_pickle(tmp_path):
    clients = [pd.DataFrame(c, columns=["x", "y"]) for c in _clients()]
    est = FederatedKMeans(3, server_points="centers", random_state=0).fit(clients)
    est.save(tmp_path / "m.npz")
    for twin in (FederatedKMeans.load(tmp_path / "m.npz"), pickle.loads(pickle.dumps(est))):
        assert twin.feature_names_in_.tolist() == ["x", "y"]
        with pytest.raises(InvalidInputError, match="same order"):
            twin.predict(clients[0][["y", "x"]])


@pytest.mark.parametrize("est", CENTRALIZED, ids=lambda e: type(e).__name__)
def test_get_feature_names_out(est):
    X = _blobs()
    pipe = make_pipeline(StandardScaler(), clone(est)).fit(X)
    name = type(est).__name__.lower()
    assert pipe.get_feature_names_out().tolist() == [f"{name}{j}" for j in range(3)]
    assert pipe[-1].get_feature_names_out(["a", "b", "c"]).tolist() == [
        f"{name}{j}" for j in range(3)]
    with pytest.raises(InvalidInputError, match="input_features has 2 names"):
        clone(est).fit(X).get_feature_names_out(["a", "b"])


def test_missing_values_in_a_nullable_column_are_named():
    df = pd.DataFrame({"a": pd.array([1, None, 3, 4], dtype="Int64"), "b": [1.0, 2, 3, 4]})
    with pytest.raises(InvalidInputError, match="missing values .*drop or impute"):
        KMeans(2).fit(df)
