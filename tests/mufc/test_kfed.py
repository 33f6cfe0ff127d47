"""Tests of K-FED (pyfkm.mufc.kfed): the server step against a plain-numpy
reference written here, hand examples, the Awasthi-Sheffet local step."""
import numpy as np
import pytest

import pyfkm.mufc.kfed as kfed
from pyfkm.mufc.kfed import KFed, kfed_server
from pyfkm.rng import spawn
from pyfkm.core.seeding import kmeans_plusplus
from _helpers.mufc_baselines import TRUTH, assert_same_model, blob_clients


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
