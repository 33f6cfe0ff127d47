"""Tests of pyfkm.baselines: K-FED and federated DC-k-means, removal by retraining.

Expected values are computed by hand (stated next to each case) or by the
plain-numpy reference of K-FED's server step below; the unlearning tests
compare with a fresh ``fit`` on the remaining data, which the seeding design
makes bit-identical.
"""
import doctest

import numpy as np
import pytest

import pyfkm.mufc.baselines as baselines
import pyfkm.mufc.kfed as kfed
from pyfkm.mufc.dckmeans import FederatedDCKMeans, dc_root
from pyfkm.mufc.kfed import KFed, kfed_server
from pyfkm.exceptions import InvalidIdError, InvalidInputError, NotFittedError
from pyfkm.rng import spawn
from pyfkm.core.seeding import kmeans_plusplus

ESTIMATORS = [
    pytest.param(lambda **kw: KFed(4, client_clusters=2, **kw), id="kfed"),
    pytest.param(lambda **kw: KFed(4, client_clusters=2, local_step="awasthi-sheffet", **kw),
                 id="kfed-as"),
    pytest.param(lambda **kw: FederatedDCKMeans(4, **kw), id="dc"),
    pytest.param(lambda **kw: FederatedDCKMeans(4, weighted=False, **kw), id="dc-unweighted"),
]

TRUTH = np.array([[0., 0., 0.], [8., 0., 0.], [0., 8., 0.], [0., 0., 8.]])


def blob_clients(seed, L=5, n_l=30, std=0.3, k_local=2):
    """Non-iid clients: each holds ``k_local`` of the 4 true clusters, and
    every true cluster is held by some client."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(L):
        ks = [i % 4, (i + 1) % 4][:k_local]
        lab = rng.choice(ks, size=n_l)
        out.append(TRUTH[lab] + std * rng.normal(size=(n_l, 3)))
    return out


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


def assert_same_model(a, b):
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
    assert len(a.client_centers_) == len(b.client_centers_)
    for ca, cb, sa, sb in zip(a.client_centers_, b.client_centers_,
                              a.client_sizes_, b.client_sizes_):
        assert np.array_equal(ca, cb) and np.array_equal(sa, sb)
    assert a.inertia_ == b.inertia_ and a.n_iter_ == b.n_iter_


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
    clients = [np.array([[0., 0., 0.], [1., 0., 0.]]), np.zeros((0, 3)),
               np.array([[5., 5., 5.]])]
    m = make(random_state=1).fit(clients)
    m.remove(0, [0, 1])
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


# -- the algorithm steps against hand computations and a plain reference ------

def kfed_server_reference(centers, sizes, k, device):
    """K-FED's server step in plain Python (device given): farthest-first
    completion of the device's centers, then Lloyd until nothing moves."""
    S = [tuple(c) for C, s in zip(centers, sizes) for c, n in zip(C, s) if n > 0]
    M = [tuple(c) for c, n in zip(centers[device], sizes[device]) if n > 0]

    def d2(a, b):
        return sum((x - y) ** 2 for x, y in zip(a, b))

    while len(M) < k:
        far = max(range(len(S)), key=lambda j: (min(d2(S[j], m) for m in M), -j))
        M.append(S[far])
    for _ in range(1000):
        groups = [[] for _ in M]
        for p in S:
            groups[min(range(len(M)), key=lambda i: d2(p, M[i]))].append(p)
        new = [tuple(np.mean(g, axis=0)) if g else m for g, m in zip(groups, M)]
        if new == M:
            break
        M = new
    return np.array(M)


@pytest.mark.parametrize("seed", range(6))
def test_kfed_server_matches_plain_reference(seed):
    rng = np.random.default_rng(seed)
    L, kp, k, d = 5, 3, 6, 2
    centers = [rng.normal(size=(kp, d)) * 5 for _ in range(L)]
    sizes = [rng.integers(1, 10, size=kp) for _ in range(L)]
    sizes[2][1] = 0                        # an empty local cluster is not sent
    C, dev, inertia, _ = kfed_server(centers, sizes, k, tol=0.0, random_state=seed)
    ref = kfed_server_reference(centers, sizes, k, dev)
    assert np.allclose(np.sort(C, axis=0), np.sort(ref, axis=0), atol=1e-12)
    S = np.vstack([c[s > 0] for c, s in zip(centers, sizes)])
    d2 = ((S[:, None, :] - C[None]) ** 2).sum(-1).min(1)
    assert np.isclose(inertia, d2.sum())


def test_kfed_server_hand_example():
    # Device 0 sends (0,0), (10,0); device 1 sends (0,10), (0.2,0).  From
    # device 0 the farthest local center is (0,10) (distance^2 100 vs 0.04);
    # from device 1 it is (10,0) (96.04 vs 0.04).  Either way Lloyd merges
    # (0,0) and (0.2,0) into (0.1,0).
    centers = [np.array([[0., 0.], [10., 0.]]), np.array([[0., 10.], [0.2, 0.]])]
    sizes = [np.array([5, 5]), np.array([1, 1])]
    seen = set()
    for seed in range(20):
        C, dev, inertia, _ = kfed_server(centers, sizes, 3, random_state=seed)
        seen.add(dev)
        assert np.allclose(sorted(C.tolist()), [[0., 10.], [0.1, 0.], [10., 0.]])
        assert np.isclose(inertia, 2 * 0.1 ** 2)
    assert seen == {0, 1}


def test_kfed_server_picks_devices_uniformly_and_never_empty_ones():
    centers = [np.array([[0.]]), np.zeros((0, 1)), np.array([[1.]]), np.array([[2.]]),
               np.array([[3.]])]
    sizes = [np.array([1]), np.zeros(0, dtype=np.int64), np.array([1]), np.array([1]),
             np.array([0])]                # client 4 only has an empty cluster
    devs = [kfed_server(centers, sizes, 2, random_state=s)[1] for s in range(300)]
    counts = np.bincount(devs, minlength=5)
    assert counts[1] == 0 and counts[4] == 0
    # 300 draws over 3 devices: each count is Binomial(300, 1/3), sd 8.2;
    # the bounds are 4.9 sd away
    assert all(60 <= c <= 140 for c in counts[[0, 2, 3]])


def test_kfed_server_caps_clusters_at_distinct_centers():
    centers = [np.array([[1., 1.], [1., 1.]]), np.array([[1., 1.]])]
    sizes = [np.array([2, 3]), np.array([4])]
    C, _, inertia, _ = kfed_server(centers, sizes, 5, random_state=0)
    assert np.array_equal(C, [[1., 1.]]) and inertia == 0.0


def test_dc_root_hand_example_weighted_and_unweighted():
    # leaf centroids 0 (size 1), 10 (size 5), 1 (size 3) on a line, k = 2:
    # weighted, {0, 1} merge at (0*1 + 1*3)/4 = 0.75, inertia
    # 1*0.75^2 + 3*0.25^2 = 0.75; unweighted, at 0.5 with inertia 0.5.
    centers = [np.array([[0.], [10.]]), np.array([[1.]])]
    sizes = [np.array([1, 5]), np.array([3])]
    C, inertia, _ = dc_root(centers, sizes, 2, random_state=0)
    assert sorted(C.ravel().tolist()) == [0.75, 10.0] and inertia == 0.75
    C, inertia, _ = dc_root(centers, sizes, 2, weighted=False, random_state=0)
    assert sorted(C.ravel().tolist()) == [0.5, 10.0] and inertia == 0.5


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


def test_kfed_one_center_per_client_from_each_true_cluster():
    # k' = 1, each client holds one blob: the server's farthest-point
    # initialisation visits every blob, and K-FED finds them exactly
    rng = np.random.default_rng(0)
    clients = [TRUTH[i % 4] + 0.1 * rng.normal(size=(20, 3)) for i in range(8)]
    m = KFed(4, client_clusters=1, random_state=0).fit(clients)
    means = np.array([np.vstack(clients[i::4]).mean(0) for i in range(4)])
    assert np.allclose(np.sort(m.cluster_centers_, axis=0), np.sort(means, axis=0))


# -- K-FED's Awasthi-Sheffet local step ----------------------------------------

def separated_sets_loops(P, nu):
    """The 1:3 split written out point by point."""
    k = nu.shape[0]
    S = np.zeros((P.shape[0], k), dtype=bool)
    for i, p in enumerate(P):
        for r in range(k):
            dr = np.sqrt(((p - nu[r]) ** 2).sum())
            S[i, r] = all(3 * dr <= np.sqrt(((p - nu[s]) ** 2).sum())
                          for s in range(k) if s != r)
    return S


@pytest.mark.parametrize("seed", range(6))
def test_separated_sets_match_the_loops(seed):
    rng = np.random.default_rng(seed)
    k = 1 + seed % 4
    nu = rng.normal(size=(k, 3)) * 4
    P = np.vstack([nu[rng.integers(k, size=40)] + rng.normal(size=(40, 3)),
                   rng.normal(size=(10, 3)) * 4])
    S = kfed._separated_sets(P, nu)
    assert np.array_equal(S, separated_sets_loops(P, nu))
    if k == 1:
        assert S.all()
    else:
        assert S.sum(1).max() <= 1 and S.any() and not S.all()


def test_separated_sets_boundary_is_inclusive():
    # distances 1 and 3 exactly: the point is in S_0; at 1 and 2.9 it is in none
    nu = np.array([[1.0, 0.0], [-3.0, 0.0]])
    P = np.array([[0.0, 0.0]])
    assert kfed._separated_sets(P, nu).tolist() == [[True, False]]
    nu[1, 0] = -2.9
    assert kfed._separated_sets(P, nu).tolist() == [[False, False]]


@pytest.mark.parametrize("seed", range(4))
def test_awasthi_sheffet_one_run_matches_a_reference(seed):
    # reference: projection from the eigenvectors of X^T X (not an SVD), the
    # same k-means++ draws, the split by loops, one Lloyd step by hand
    rng = np.random.default_rng(seed)
    k = 2 + seed % 3
    X = np.vstack([rng.normal(size=(30, 5)) + 1.5 * rng.normal(size=5) for _ in range(k)])
    g = np.random.default_rng(100 + seed)
    C, sizes, n_iter = kfed._awasthi_sheffet(X, k, n_init=1, max_iter=1, tol=0.0,
                                             rng=np.random.default_rng(100 + seed))
    w, V = np.linalg.eigh(X.T @ X)
    P = X @ V[:, np.argsort(w)[::-1][:k]]
    nu, ids = kmeans_plusplus(P, k, random_state=g)
    S = separated_sets_loops(P, nu)
    assert S[ids, np.arange(k)].all()        # each seed's set holds the seed
    theta = np.array([X[S[:, r]].mean(0) for r in range(k)])
    lab = ((X[:, None, :] - theta[None]) ** 2).sum(-1).argmin(1)
    want = np.array([X[lab == r].mean(0) if (lab == r).any() else theta[r] for r in range(k)])
    assert n_iter == 1
    assert np.allclose(C, want, rtol=0, atol=1e-12)
    final = ((X[:, None, :] - C[None]) ** 2).sum(-1).argmin(1)
    assert np.array_equal(sizes, np.bincount(final, minlength=k))


def test_awasthi_sheffet_keeps_the_best_of_its_runs():
    # n_init runs draw from one generator in turn, so n_init=1 calls in a row
    # replay them; the kept run is the one of lowest objective
    X = np.random.default_rng(3).uniform(size=(60, 4))
    best = kfed._awasthi_sheffet(X, 4, n_init=5, max_iter=300, tol=1e-4,
                                 rng=np.random.default_rng(7))
    g = np.random.default_rng(7)
    runs = [kfed._awasthi_sheffet(X, 4, n_init=1, max_iter=300, tol=1e-4, rng=g)
            for _ in range(5)]
    cost = [((X[:, None, :] - C[None]) ** 2).sum(-1).min(1).sum() for C, _, _ in runs]
    assert len({round(c, 9) for c in cost}) > 1          # the runs differ
    i = int(np.argmin(cost))
    assert np.array_equal(best[0], runs[i][0]) and np.array_equal(best[1], runs[i][1])


@pytest.mark.parametrize("seed", range(3))
def test_kfed_clients_run_the_chosen_local_step(seed):
    # each client's model is the local step run on its data with its own
    # spawned generator; the two steps give different local models here
    clients = blob_clients(seed, L=4, n_l=40, std=2.0)
    gens = spawn(seed, len(clients) + 1)
    m = KFed(4, client_clusters=3, local_step="awasthi-sheffet", n_init=2, max_iter=50,
             random_state=seed).fit(clients)
    for X, g, C, s in zip(clients, gens, m.client_centers_, m.client_sizes_):
        want = kfed._awasthi_sheffet(X, 3, n_init=2, max_iter=50, tol=1e-4, rng=g)
        assert np.array_equal(C, want[0]) and np.array_equal(s, want[1])
    km = KFed(4, client_clusters=3, n_init=2, max_iter=50, random_state=seed).fit(clients)
    assert any(not np.array_equal(a, b)
               for a, b in zip(m.client_centers_, km.client_centers_))


def test_kfed_removal_keeps_the_local_step_of_the_fit():
    clients = blob_clients(4, std=2.0)
    m = KFed(4, client_clusters=2, local_step="awasthi-sheffet", n_init=1,
             random_state=1).fit(clients)
    m.set_params(local_step="k-means", n_init=10)
    m.remove(0, [3])
    ref = KFed(4, client_clusters=2, local_step="awasthi-sheffet", n_init=1,
               random_state=1).fit([np.delete(clients[0], 3, axis=0)] + clients[1:])
    assert_same_model(m, ref)


def test_awasthi_sheffet_tiny_clients():
    # fewer points than k': every point is a center; no points: no centers
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    C, s, _ = kfed._awasthi_sheffet(X, 3, n_init=2, max_iter=10, tol=0.0,
                                    rng=np.random.default_rng(0))
    assert sorted(C.tolist()) == X.tolist() and s.tolist() == [1, 1]
    C, s, _ = kfed._awasthi_sheffet(X[:0], 3, n_init=1, max_iter=10, tol=0.0,
                                    rng=np.random.default_rng(0))
    assert C.shape == (0, 2) and s.size == 0


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
