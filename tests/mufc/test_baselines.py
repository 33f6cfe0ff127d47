"""Tests of the removal-by-retraining baselines (pyfkm.mufc.baselines), run on
both K-FED and federated DC-k-means: bad input, removals equal a fit on the
remaining data, reproducibility, erasure.

Expected values are computed by hand (stated next to each case); the
unlearning tests compare with a fresh ``fit`` on the remaining data, which
the seeding design makes bit-identical.
"""
import doctest

import numpy as np
import pytest

import pyfkm.mufc.baselines as baselines
from pyfkm.mufc.dckmeans import FederatedDCKMeans
from pyfkm.mufc.kfed import KFed
from pyfkm.exceptions import InvalidIdError, InvalidInputError, NotFittedError
from _helpers.mufc_baselines import TRUTH, assert_same_model, blob_clients


ESTIMATORS = [
    pytest.param(lambda **kw: KFed(4, client_clusters=2, **kw), id="kfed"),
    pytest.param(lambda **kw: KFed(4, client_clusters=2, local_step="awasthi-sheffet", **kw),
                 id="kfed-as"),
    pytest.param(lambda **kw: FederatedDCKMeans(4, **kw), id="dc"),
    pytest.param(lambda **kw: FederatedDCKMeans(4, weighted=False, **kw), id="dc-unweighted"),
]


def uniform_clients(seed, L=4, n_l=25, d=2):
    rng = np.random.default_rng(seed)
    return [rng.uniform(size=(n_l, d)) for _ in range(L)]


def state(model):
    """Everything a failed call must leave untouched."""
    return (model.cluster_centers_.copy(),
            [c.copy() for c in model.client_centers_],
            [s.copy() for s in model.client_sizes_],
            [r.copy() for r in model._removed],
            model._left.copy())


def assert_same_state(a, b):
    assert np.array_equal(a[0], b[0])
    for x, y in zip(a[1:], b[1:]):
        if isinstance(x, list):
            assert len(x) == len(y) and all(np.array_equal(u, v) for u, v in zip(x, y))
        else:
            assert np.array_equal(x, y)


# -- errors first -------------------------------------------------------------

@pytest.mark.parametrize("make, msg", [
    (lambda: KFed(0), "n_clusters"),
    (lambda: KFed(True), "n_clusters"),
    (lambda: KFed("3"), "n_clusters"),
    (lambda: KFed(3, client_clusters=0), "client_clusters"),
    (lambda: KFed(3, client_clusters=4), "client_clusters=4 must be <= n_clusters=3"),
    (lambda: KFed(3, n_init=0), "n_init"),
    (lambda: KFed(3, local_step="spectral"), "local_step='spectral' must be one of"),
    (lambda: KFed(3, local_step=None), "local_step"),
    (lambda: KFed(3, max_iter=0), "max_iter"),
    (lambda: KFed(3, tol=-1.0), "tol"),
    (lambda: KFed(3, tol=float("nan")), "tol"),
    (lambda: KFed(3, random_state=-1), "random_state"),
    (lambda: FederatedDCKMeans(3, weighted="yes"), "weighted"),
    (lambda: FederatedDCKMeans(3, random_state="seed"), "random_state"),
    (lambda: FederatedDCKMeans(0), "n_clusters"),
])
def test_bad_parameters_raise(make, msg):
    with pytest.raises(InvalidInputError, match=msg):
        make().fit(uniform_clients(0))


@pytest.mark.parametrize("clients, msg", [
    (np.zeros((2, 5, 2)), "sequence of 2-D arrays"),
    ([], "at least one client"),
    ([np.zeros((3, 2)), np.zeros((3, 3))], "different numbers of features"),
    ([np.zeros((0, 2)), np.zeros((0, 2))], "all clients are empty"),
    ([np.array([[0., np.nan]])], "NaN"),
    ([np.zeros(3)], "2-D"),
    ([[["a", "b"]]], "numeric"),
])
@pytest.mark.parametrize("cls", [KFed, FederatedDCKMeans])
def test_bad_clients_raise(cls, clients, msg):
    with pytest.raises(InvalidInputError, match=msg):
        cls(2).fit(clients)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_use_before_fit_raises(make):
    m = make()
    with pytest.raises(NotFittedError):
        m.remove(0, [0])
    with pytest.raises(NotFittedError):
        m.remove_clients([0])
    with pytest.raises(NotFittedError):
        m.predict(np.zeros((1, 3)))
    with pytest.raises(NotFittedError):
        m.score(np.zeros((1, 3)))


@pytest.mark.parametrize("make", ESTIMATORS)
def test_bad_removals_raise_and_change_nothing(make):
    m = make(random_state=0).fit(blob_clients(0))
    m.remove(1, [3])
    m.remove_clients([4])
    before = state(m)
    bad_point_removals = [
        ((0, [30]), InvalidIdError, "ids must lie in"),
        ((0, [-1]), InvalidIdError, "ids must lie in"),
        ((0, [2, 5, 2]), InvalidIdError, "repeated"),
        ((1, [0, 3]), InvalidIdError, "id 3 was already removed"),
        ((0, [1.0]), InvalidInputError, "integers"),
        ((0, [[1]]), InvalidInputError, "1-D"),
        ((-1, [0]), InvalidIdError, "unknown client"),
        ((5, [0]), InvalidIdError, "unknown client"),
        ((1.0, [0]), InvalidIdError, "unknown client"),
        ((True, [0]), InvalidIdError, "unknown client"),
        ((4, [0]), InvalidIdError, "has left"),
    ]
    for (client, ids), exc, msg in bad_point_removals:
        with pytest.raises(exc, match=msg):
            m.remove(client, ids)
        assert_same_state(before, state(m))
    for ids, msg in [([0, 0], "repeated"), ([4], "already removed"), ([7], "unknown"),
                     ([-1], "unknown"), ([0, 9], "unknown")]:
        with pytest.raises(InvalidIdError, match=msg):
            m.remove_clients(ids)
        assert_same_state(before, state(m))
    with pytest.raises(InvalidInputError, match="features"):
        m.predict(np.zeros((2, 2)))


@pytest.mark.parametrize("make", ESTIMATORS)
def test_removal_that_would_leave_no_data_raises_and_changes_nothing(make):
    # enough points to fit (at least n_clusters), then all but one removed
    clients = [np.array([[0., 0., 0.], [1., 0., 0.], [0., 1., 0.], [0., 0., 1.]]),
               np.zeros((0, 3)), np.array([[5., 5., 5.]])]
    m = make(random_state=1).fit(clients)
    m.remove(0, [0, 1, 2, 3])
    before = state(m)
    with pytest.raises(InvalidIdError, match="no data"):
        m.remove(2, [0])
    with pytest.raises(InvalidIdError, match="no data"):
        m.remove_clients([2])
    with pytest.raises(InvalidIdError, match="no data"):
        m.remove_clients([0, 1, 2])
    assert_same_state(before, state(m))
    # removing the clients without data is fine
    rep = m.remove_clients([0, 1])
    assert rep.n_removed == 0 and rep.clients == (0, 1)
    assert np.allclose(m.cluster_centers_, [[5., 5., 5.]])


# -- the estimators -------------------------------------------------------------

def match_error(C, truth):
    """Largest distance from a true center to its nearest found center, and
    whether the found centers hit distinct true centers."""
    d = np.sqrt(((truth[:, None, :] - C[None]) ** 2).sum(-1))
    return d.min(1).max(), len(set(d.argmin(0).tolist())) == C.shape[0]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("make", ESTIMATORS)
def test_recovers_well_separated_blobs(make, seed):
    # 4 blobs (std 0.3, centers 8 apart); each client holds 2 of them
    m = make(random_state=seed).fit(blob_clients(seed))
    err, distinct = match_error(m.cluster_centers_, TRUTH)
    assert m.cluster_centers_.shape == (4, 3)
    assert distinct and err < 0.3
    X = np.vstack(blob_clients(seed))
    assert len(set(m.predict(TRUTH).tolist())) == 4
    assert -m.score(X) < 2 * 3 * 0.3 ** 2 * X.shape[0]


@pytest.mark.parametrize("make", ESTIMATORS)
def test_local_models_are_full_kmeans_with_min_k_nl(make):
    clients = blob_clients(3)
    clients[1] = clients[1][:1]            # fewer points than clusters
    clients[2] = np.zeros((0, 3))          # no data at all
    m = make(random_state=5).fit(clients)
    kp = 2 if isinstance(m, KFed) else 4
    assert m.client_centers_[1].shape == (1, 3)
    assert np.array_equal(m.client_centers_[1], clients[1])
    assert m.client_centers_[2].shape == (0, 3) and m.client_sizes_[2].size == 0
    for i in (0, 3, 4):
        assert m.client_centers_[i].shape == (kp, 3)
    for X, C, s in zip(clients, m.client_centers_, m.client_sizes_):
        assert s.sum() == X.shape[0]
        if X.shape[0]:
            # the sizes are those of the nearest-center partition
            lab = ((X[:, None, :] - C[None]) ** 2).sum(-1).argmin(1)
            assert np.array_equal(np.bincount(lab, minlength=C.shape[0]), s)
            # and the centers are the means of their clusters (Lloyd converged)
            for j in np.flatnonzero(s):
                assert np.allclose(C[j], X[lab == j].mean(0))
    if isinstance(m, KFed):
        assert m.server_device_ != 2


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("make", ESTIMATORS)
def test_removals_equal_a_fit_on_the_remaining_data(make, seed):
    clients = blob_clients(seed, L=5, n_l=30) if seed else uniform_clients(seed, d=3)
    rng = np.random.default_rng(100 + seed)
    m = make(random_state=seed).fit(clients)
    remaining = [X.copy() for X in clients]
    keep = [np.ones(len(X), dtype=bool) for X in clients]

    def check():
        ref = make(random_state=seed).fit([X[k] for X, k in zip(remaining, keep)])
        assert_same_model(m, ref)

    # one point, a batch, the point nearest a local center, all of a
    # client's data, a client leaving, an emptied client leaving
    rep = m.remove(0, [4])
    keep[0][4] = False
    assert rep.n_removed == 1 and rep.client_retrained and rep.server_retrained
    check()
    ids = rng.choice(np.flatnonzero(keep[1]), size=7, replace=False)
    m.remove(1, ids)
    keep[1][ids] = False
    check()
    C = m.client_centers_[2]
    near = int(((clients[2] - C[0]) ** 2).sum(1).argmin())
    m.remove(2, [near])
    keep[2][near] = False
    check()
    rep = m.remove(3, np.flatnonzero(keep[3]))
    keep[3][:] = False
    assert m.client_centers_[3].shape == (0, 3)
    check()
    rep = m.remove_clients([1])
    assert rep.n_removed == len(clients[1]) - 7
    assert not rep.client_retrained and rep.server_retrained
    keep[1][:] = False
    check()
    # the emptied client can still leave
    rep = m.remove_clients([3])
    assert rep.n_removed == 0
    check()


@pytest.mark.parametrize("make", ESTIMATORS)
def test_removal_report_and_empty_batch(make):
    m = make(random_state=0).fit(blob_clients(1))
    before = state(m)
    rep = m.remove(2, [])
    assert (rep.n_removed, rep.client_retrained, rep.server_retrained,
            rep.centers_changed) == (0, False, False, False)
    assert_same_state(before, state(m))
    old = m.cluster_centers_.copy()
    rep = m.remove(2, np.int64(5))
    assert rep.clients == (2,) and rep.n_removed == 1
    assert rep.client_seconds >= 0 and rep.server_seconds >= 0
    assert rep.total_seconds == rep.client_seconds + rep.server_seconds
    assert rep.centers_changed == (not np.array_equal(old, m.cluster_centers_))
    assert m.client_sizes_[2].sum() == 29


@pytest.mark.parametrize("make", ESTIMATORS)
def test_reproducible_from_random_state(make):
    clients = uniform_clients(7)
    a = make(random_state=11).fit(clients)
    b = make(random_state=11).fit(clients)
    assert_same_model(a, b)
    c = make(random_state=np.random.SeedSequence(11)).fit(clients)
    assert_same_model(a, c)                # an int and its SeedSequence agree
    # refitting the same object gives the same model again
    a.fit(clients)
    assert_same_model(a, b)
    # different seeds give different local optima on structureless data
    others = [make(random_state=s).fit(clients) for s in range(12, 16)]
    assert any(not np.array_equal(a.cluster_centers_, o.cluster_centers_) for o in others)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_removals_use_the_parameters_of_the_fit(make):
    clients = uniform_clients(2)
    m = make(random_state=3).fit(clients)
    ref_params = m.get_params()
    m.set_params(n_clusters=2, n_init=1, max_iter=1)
    m.remove(0, [0, 1])
    ref = make(random_state=3).set_params(**ref_params).fit(
        [clients[0][2:]] + clients[1:])
    assert_same_model(m, ref)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_predict_and_score_brute_force(make):
    clients = uniform_clients(4)
    m = make(random_state=0).fit(clients)
    X = np.random.default_rng(9).uniform(-1, 2, size=(50, 2))
    D = ((X[:, None, :] - m.cluster_centers_[None]) ** 2).sum(-1)
    assert np.array_equal(m.predict(X), D.argmin(1))
    assert np.isclose(m.score(X), -D.min(1).sum())
    assert m.predict(X.astype(np.float32)).dtype == np.int32


def test_params_and_repr():
    m = KFed(3, client_clusters=2, random_state=1)
    assert m.get_params() == {"n_clusters": 3, "client_clusters": 2, "local_step": "k-means",
                              "n_init": 10, "max_iter": 300, "tol": 1e-4, "random_state": 1}
    assert "KFed(" in repr(m)
    d = FederatedDCKMeans(3, weighted=False)
    assert d.get_params()["weighted"] is False
    with pytest.raises(InvalidInputError):
        d.set_params(client_clusters=2)


def test_docstring_examples():
    result = doctest.testmod(baselines,
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("cls", ["KFed", "FederatedDCKMeans"])
def test_removal_erases_rows_and_departed_clients(cls):
    """Issue 18: no value of a removed row or of a departed client stays in
    the model or its pickle; the caller's arrays are copied, not kept."""
    import pyfkm.mufc as b
    from oracles.forensics import patterns, search_object, search_pickle
    rng = np.random.default_rng(21)
    data = [rng.uniform(-0.5, 0.5, size=(40, 3)) for _ in range(3)]
    before = [a.copy() for a in data]
    m = getattr(b, cls)(3, random_state=0).fit(data)
    m.remove(0, [1, 5, 7])
    m.remove_clients([2])
    for a, c in zip(data, before):
        np.testing.assert_array_equal(a, c)           # the caller's data untouched
    gone = patterns(np.vstack([data[0][[1, 5, 7]], data[2]]))
    kept = patterns(data[1][:5])
    del data, before
    assert search_object(m, gone) == [] and search_pickle(m, gone) == []
    assert search_object(m, kept) != [] and search_pickle(m, kept) != []
