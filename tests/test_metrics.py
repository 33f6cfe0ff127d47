"""Tests of pyfkm.metrics.

Where the expected values come from:

* error cases: the contract in the docstrings (InvalidInputError, a
  ValueError subclass; NotFittedError for an unfitted model; NumericalError
  on overflow);
* hand computations, written next to each tiny case;
* plain-Python oracles with explicit loops (nearest center by scanning,
  ties to the first) on small random inputs, and exactly on small-integer
  data with Hypothesis (all sums are exact there, ties included);
* exact properties: phi_f >= phi_c on the pooled data; phi_f == phi_c when
  every client's local centroids are the server centroids; the loss ratio
  of one of the reference runs' own solution is >= 1;
* the FederatedKMeans model: its clients' k-means++ labels are the nearest
  local centers; federated_loss_ratio equals the ratio assembled by hand,
  also after point and client removals;
* scikit-learn's normalized_mutual_info_score for nmi (skipped if absent).
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyfkm import InvalidInputError, KMeans, NotFittedError, NumericalError
from pyfkm.datasets import make_gaussian_mixture, split_non_iid
from pyfkm.metrics import (best_kmeans_objective, federated_loss_ratio,
                           federated_objective, kmeans_objective, loss_ratio, nmi)
from pyfkm.mufc import FederatedKMeans
from pyfkm.rng import spawn


# -- oracles -----------------------------------------------------------------

def _sq(a, b):
    return sum((float(u) - float(v)) ** 2 for u, v in zip(a, b))


def _nearest_oracle(x, C):
    best, arg = None, None
    for j, c in enumerate(C):
        d = _sq(x, c)
        if best is None or d < best:
            best, arg = d, j
    return arg, best


def _kmeans_oracle(X, C, w=None):
    total = 0.0
    for i, x in enumerate(X):
        total += (1.0 if w is None else float(w[i])) * _nearest_oracle(x, C)[1]
    return total


def _federated_oracle(clients, labels, local_centers, S):
    total = 0.0
    for X, lab, C in zip(clients, labels, local_centers):
        for x, j in zip(X, lab):
            s, _ = _nearest_oracle(C[j], S)
            total += _sq(x, S[s])
    return total


def _random_federation(rng, L=3, d=2, k_server=3):
    clients, labels, centers = [], [], []
    for _ in range(L):
        n = int(rng.integers(1, 8))
        k = int(rng.integers(1, 4))
        clients.append(rng.normal(size=(n, d)))
        centers.append(rng.normal(size=(k, d)))
        labels.append(rng.integers(0, k, size=n))
    return clients, labels, centers, rng.normal(size=(k_server, d))


# -- errors --------------------------------------------------------------------

def test_kmeans_objective_rejects_bad_input():
    X = np.zeros((3, 2))
    C = np.zeros((2, 2))
    with pytest.raises(InvalidInputError):
        kmeans_objective(np.zeros(3), C)
    with pytest.raises(InvalidInputError, match="features"):
        kmeans_objective(X, np.zeros((2, 3)))
    with pytest.raises(InvalidInputError):
        kmeans_objective(X, np.zeros((0, 2)))
    with pytest.raises(InvalidInputError, match="NaN"):
        kmeans_objective([[0.0, np.nan]], C)
    with pytest.raises(InvalidInputError, match="NaN"):
        kmeans_objective(X, [[0.0, np.inf], [0.0, 0.0]])
    with pytest.raises(InvalidInputError):
        kmeans_objective(X, C, sample_weight=[1.0, 1.0])
    with pytest.raises(InvalidInputError):
        kmeans_objective(X, C, sample_weight=[1.0, -1.0, 1.0])
    with pytest.raises(NumericalError):
        kmeans_objective([[1e200]], [[-1e200]])


def test_federated_objective_rejects_bad_input():
    clients = [np.zeros((2, 1)), np.ones((1, 1))]
    labels = [[0, 0], [0]]
    centers = [np.zeros((1, 1)), np.ones((1, 1))]
    S = np.zeros((2, 1))
    federated_objective(clients, labels, centers, S)  # valid
    cases = [
        (np.zeros((2, 2, 1)), labels, centers, S, "sequence"),
        ([], [], [], S, "at least one"),
        (clients, labels, centers[:1], S, "entries"),
        (clients, labels[:1], centers, S, "entries"),
        (clients, [[0, 1], [0]], centers, S, "outside"),
        (clients, [[0, -1], [0]], centers, S, "outside"),
        (clients, [[0], [0]], centers, S, "entries"),
        (clients, [[0.0, 0.0], [0]], centers, S, "integers"),
        (clients, labels, centers, np.zeros((2, 2)), "features"),
        (clients, labels, [np.zeros((1, 2)), np.ones((1, 1))], S, "features"),
        (clients, labels, [np.zeros((0, 1)), np.ones((1, 1))], S, "no local centers"),
        ([np.zeros((2, 1)), np.array([[np.nan]])], labels, centers, S, "NaN"),
    ]
    for c, lab, cen, s, msg in cases:
        with pytest.raises(InvalidInputError, match=msg):
            federated_objective(c, lab, cen, s)
    with pytest.raises(InvalidInputError, match="outside"):
        federated_objective(clients, labels, centers, S, server_labels=[[2], [0]])
    with pytest.raises(InvalidInputError, match="entries"):
        federated_objective(clients, labels, centers, S, server_labels=[[0, 0], [0]])


def test_loss_ratio_rejects_bad_input():
    X = np.arange(8.0).reshape(4, 2)
    for bad in (-1.0, np.nan, np.inf, "1", True, None):
        with pytest.raises(InvalidInputError):
            loss_ratio(bad, X, 2)
    with pytest.raises(InvalidInputError):
        loss_ratio(1.0, X, 5)
    for bad in (0, 1.5, True):
        with pytest.raises(InvalidInputError):
            loss_ratio(1.0, X, 2, n_runs=bad)
    with pytest.raises(InvalidInputError):
        best_kmeans_objective(X, 0)


def test_federated_loss_ratio_rejects_bad_input():
    clients = [np.random.default_rng(i).uniform(-0.5, 0.5, size=(20, 2)) for i in range(3)]
    with pytest.raises(NotFittedError):
        federated_loss_ratio(FederatedKMeans(2), clients)
    model = FederatedKMeans(2, server_points="centers", secure=False,
                            random_state=0).fit(clients)
    with pytest.raises(InvalidInputError, match="entries"):
        federated_loss_ratio(model, clients[:2])
    with pytest.raises(InvalidInputError, match="rows"):
        federated_loss_ratio(model, [c[:10] for c in clients])
    with pytest.raises(InvalidInputError, match="sequence"):
        federated_loss_ratio(model, np.stack(clients))


def test_nmi_rejects_bad_input():
    with pytest.raises(InvalidInputError):
        nmi([0, 1], [0])
    with pytest.raises(InvalidInputError):
        nmi([[0, 1]], [[0, 1]])
    with pytest.raises(InvalidInputError):
        nmi([], [])


# -- kmeans_objective --------------------------------------------------------------

def test_kmeans_objective_hand_computed():
    X = [[0.0, 0.0], [0.0, 2.0], [5.0, 0.0], [2.5, 0.0]]
    C = [[0.0, 1.0], [5.0, 0.0]]
    # 1 + 1 + 0 + min(2.5^2 + 1, 2.5^2) = 2 + 6.25
    assert kmeans_objective(X, C) == 8.25
    assert kmeans_objective(X, C, sample_weight=[2, 0, 1, 4]) == 2 + 25.0
    assert kmeans_objective(X, C, sample_weight=3.0) == 3 * 8.25


@pytest.mark.parametrize("seed", range(5))
def test_kmeans_objective_matches_the_loop_oracle(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 3))
    C = rng.normal(size=(4, 3))
    w = rng.uniform(0, 2, size=40)
    assert kmeans_objective(X, C) == pytest.approx(_kmeans_oracle(X, C), rel=1e-12)
    assert kmeans_objective(X, C, w) == pytest.approx(_kmeans_oracle(X, C, w), rel=1e-12)
    assert kmeans_objective(X.astype(np.float32), C) == pytest.approx(
        _kmeans_oracle(X.astype(np.float32), C), rel=1e-12)


def test_kmeans_objective_in_chunks_equals_one_block(monkeypatch):
    import pyfkm.metrics as m

    rng = np.random.default_rng(0)
    X, C = rng.normal(size=(1000, 3)), rng.normal(size=(7, 3))
    whole = kmeans_objective(X, C)
    monkeypatch.setattr(m, "_BLOCK", 50)  # 2 rows per chunk
    assert kmeans_objective(X, C) == pytest.approx(whole, rel=1e-12)
    assert kmeans_objective(X, C) == pytest.approx(_kmeans_oracle(X, C), rel=1e-12)


# -- federated_objective ---------------------------------------------------------------

def test_federated_objective_hand_computed():
    # client 0: local cluster {0, 4} with centroid 2; client 1: {10} with
    # centroid 10; server centroids 0 and 5.  Centroid 2 -> server 0 (2 < 3),
    # so 4 costs 16; centroid 10 -> server 5: 25.  Total 41, while the
    # centralized objective is 0 + 1 + 25 = 26.
    clients = [np.array([[0.0], [4.0]]), np.array([[10.0]])]
    centers = [np.array([[2.0]]), np.array([[10.0]])]
    S = np.array([[0.0], [5.0]])
    assert federated_objective(clients, [[0, 0], [0]], centers, S) == 41.0
    assert kmeans_objective(np.vstack(clients), S) == 26.0
    # a tie: centroid 2.5 is as near 0 as 5, it goes to the lowest index
    assert federated_objective([np.array([[5.0]])], [[0]], [[[2.5]]], S) == 25.0
    # server_labels overrides the nearest server centroid
    assert federated_objective(clients, [[0, 0], [0]], centers, S,
                               server_labels=[[1], [1]]) == 25 + 1 + 25


@pytest.mark.parametrize("seed", range(5))
def test_federated_objective_matches_the_loop_oracle(seed):
    rng = np.random.default_rng(seed)
    clients, labels, centers, S = _random_federation(rng)
    got = federated_objective(clients, labels, centers, S)
    assert got == pytest.approx(_federated_oracle(clients, labels, centers, S), rel=1e-12)
    # phi_f is never below the centralized objective of the same centers
    assert got >= kmeans_objective(np.vstack(clients), S) * (1 - 1e-12)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_federated_objective_exact_on_small_integers(data):
    d = data.draw(st.integers(1, 2))
    coord = st.integers(-3, 3)
    S = np.array(data.draw(st.lists(st.lists(coord, min_size=d, max_size=d),
                                    min_size=1, max_size=3)), dtype=float)
    L = data.draw(st.integers(1, 3))
    clients, labels, centers = [], [], []
    for _ in range(L):
        n = data.draw(st.integers(0, 4))
        k = data.draw(st.integers(1, 3))
        clients.append(np.array(data.draw(st.lists(
            st.lists(coord, min_size=d, max_size=d), min_size=n, max_size=n)),
            dtype=float).reshape(n, d))
        centers.append(np.array(data.draw(st.lists(
            st.lists(coord, min_size=d, max_size=d), min_size=k, max_size=k)), dtype=float))
        labels.append(data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    got = federated_objective(clients, [np.array(l, dtype=np.int64) for l in labels],
                              centers, S)
    assert got == _federated_oracle(clients, labels, centers, S)


def test_local_labels_none_means_nearest_local_centroid():
    rng = np.random.default_rng(3)
    clients, _, centers, S = _random_federation(rng, L=4)
    nearest = [[_nearest_oracle(x, C)[0] for x in X] for X, C in zip(clients, centers)]
    assert federated_objective(clients, None, centers, S) == pytest.approx(
        federated_objective(clients, nearest, centers, S), rel=1e-15)


def test_federated_equals_centralized_when_local_centroids_are_the_server_centroids():
    rng = np.random.default_rng(4)
    S = rng.normal(size=(4, 3))
    clients = [rng.normal(size=(n, 3)) for n in (5, 9, 1)]
    pooled = np.vstack(clients)
    got = federated_objective(clients, None, [S] * 3, S)
    assert got == pytest.approx(kmeans_objective(pooled, S), rel=1e-12)
    # one client whose local centroids are the server's
    assert federated_objective([pooled], None, [S], S) == pytest.approx(
        kmeans_objective(pooled, S), rel=1e-12)


def test_empty_clients_contribute_nothing():
    rng = np.random.default_rng(5)
    clients, labels, centers, S = _random_federation(rng)
    base = federated_objective(clients, labels, centers, S)
    with_empty = federated_objective(
        clients + [np.zeros((0, 2))], labels + [np.zeros(0, dtype=np.int64)],
        centers + [np.zeros((0, 2))], S)
    assert with_empty == base
    assert federated_objective(clients + [np.zeros((0, 2))], None,
                               centers + [np.zeros((0, 2))], S) == pytest.approx(
        federated_objective(clients, None, centers, S), rel=1e-15)


# -- best_kmeans_objective and loss_ratio ----------------------------------------------

def test_best_kmeans_objective_is_the_min_over_seeded_runs():
    X, _, _ = make_gaussian_mixture(600, 3, 6, random_state=0)
    objs = [kmeans_objective(X, KMeans(6, random_state=g).fit(X).cluster_centers_)
            for g in spawn(11, 4)]
    assert best_kmeans_objective(X, 6, n_runs=4, random_state=11) == min(objs)
    assert best_kmeans_objective(X, 6, n_runs=4, random_state=11) == \
        best_kmeans_objective(X, 6, n_runs=4, random_state=11)


def test_loss_ratio_hand_computed_and_degenerate_reference():
    X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    assert loss_ratio(2.0, X, 2, random_state=0) == 2.0   # optimum 0.25 * 4 = 1
    # as many clusters as distinct points: the reference is 0
    assert loss_ratio(0.0, X, 4, random_state=0) == 1.0
    assert loss_ratio(0.5, X, 4, random_state=0) == np.inf


@pytest.mark.parametrize("seed", range(5))
def test_loss_ratio_of_kmeans_own_solution(seed):
    X, _, _ = make_gaussian_mixture(800, 3, 5, random_state=seed)
    # the solution of the reference's first run: the ratio is exactly >= 1
    g = spawn(seed, 3)[0]
    own = kmeans_objective(X, KMeans(5, random_state=g).fit(X).cluster_centers_)
    assert loss_ratio(own, X, 5, n_runs=3, random_state=seed) >= 1.0
    # an independent best-of-10 solution: >= 1 up to local-optimum luck
    best = best_kmeans_objective(X, 5, n_runs=10, random_state=1000 + seed)
    assert loss_ratio(best, X, 5, n_runs=10, random_state=seed) >= 0.98


# -- federated_loss_ratio on FederatedKMeans ------------------------------------------

def _federation(seed=0, n=900, k=3, L=6, Kp=2):
    # std 0.03: three clusters clearly apart in the plane
    X, y, _ = make_gaussian_mixture(n, 2, k, cluster_std=0.03, random_state=seed)
    parts = split_non_iid(X, y, L, Kp, random_state=seed)
    return [X[p] for p in parts]


def _by_hand(model, data, local, seed):
    phi = federated_objective(data, None, local, model.cluster_centers_)
    return loss_ratio(phi, np.vstack(data), model.n_clusters, random_state=seed)


def test_client_seeding_labels_are_the_nearest_local_centers():
    clients = _federation()
    model = FederatedKMeans(3, server_points="centers", secure=False,
                            random_state=0).fit(clients)
    labels = [model._clients[l]._seeding.labels_ for l in range(len(clients))]
    S = model.cluster_centers_
    assert federated_objective(clients, labels, model.client_centers_, S) == pytest.approx(
        federated_objective(clients, None, model.client_centers_, S), rel=1e-12)


@pytest.mark.parametrize("server_points", ["centers", "uniform"])
def test_federated_loss_ratio_equals_the_ratio_by_hand(server_points):
    clients = _federation(seed=1)
    model = FederatedKMeans(3, server_points=server_points, secure=False,
                            random_state=1).fit(clients)
    r = federated_loss_ratio(model, clients, random_state=5)
    assert r == _by_hand(model, clients, model.client_centers_, 5)
    # sanity: MUFC on clearly separated clusters is near centralized k-means
    # (1.05 to 1.18 for seeds 0-7 of this setting)
    assert 0.95 < r < 1.5


def test_federated_loss_ratio_after_removals_uses_the_remaining_data():
    clients = _federation(seed=2)
    model = FederatedKMeans(3, server_points="centers", secure=False,
                            random_state=2).fit(clients)
    model.remove(0, [0, 1, 2])
    model.remove_clients([3])
    data = [clients[l][3:] if l == 0 else clients[l] for l in range(len(clients)) if l != 3]
    local = [model.client_centers_[l] for l in range(len(clients)) if l != 3]
    assert federated_loss_ratio(model, clients, random_state=7) == \
        _by_hand(model, data, local, 7)


# -- nmi ----------------------------------------------------------------------------

def test_nmi_hand_computed():
    assert nmi([0, 0, 1, 1], [1, 1, 0, 0]) == 1.0
    assert nmi([0, 0, 1, 1], [0, 1, 0, 1]) == 0.0
    assert nmi([3, 3, 3], [7, 7, 7]) == 1.0
    assert nmi([0, 0, 1, 1], [0, 0, 0, 0]) == 0.0
    # U = {a,a,b,b}, V = {x,x,x,y}: I = ln2 - (3/4)ln(3/2)... by the formula
    a, b = [0, 0, 1, 1], [0, 0, 0, 1]
    mi = 0.5 * np.log(0.5 / (0.5 * 0.75)) + 0.25 * np.log(0.25 / (0.5 * 0.75)) \
        + 0.25 * np.log(0.25 / (0.5 * 0.25))
    hu = np.log(2)
    hv = -(0.75 * np.log(0.75) + 0.25 * np.log(0.25))
    assert nmi(a, b) == pytest.approx(mi / ((hu + hv) / 2), rel=1e-12)


def test_nmi_matches_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(1, 60))
        a = rng.integers(0, rng.integers(1, 6), size=n)
        b = rng.integers(0, rng.integers(1, 6), size=n)
        assert nmi(a, b) == pytest.approx(
            metrics.normalized_mutual_info_score(a, b), abs=1e-12)


def test_loss_ratio_data_leaves_out_removed_rows_and_departed_clients():
    # the data the federated objective is computed on: each remaining
    # client's rows minus those it removed, for FederatedKMeans and for the
    # retraining baselines alike (both say so through removed_/participants_)
    from pyfkm.metrics import _remaining_data
    from pyfkm.mufc import FederatedKMeans, KFed
    rng = np.random.default_rng(5)
    clients = [rng.uniform(-0.4, 0.4, size=(30, 2)) for _ in range(4)]
    for model in (FederatedKMeans(3, random_state=0), KFed(3, client_clusters=2, random_state=0)):
        model.fit(clients)
        model.remove(0, [1, 4])
        model.remove_clients([2])
        data, local = _remaining_data(model, clients)
        assert len(data) == len(local) == 3
        np.testing.assert_array_equal(data[0], np.delete(clients[0], [1, 4], axis=0))
        np.testing.assert_array_equal(data[1], clients[1])
        np.testing.assert_array_equal(data[2], clients[3])
        with pytest.raises(InvalidInputError, match="pass the data given to fit"):
            _remaining_data(model, [c[:-1] for c in clients])
