"""Clients and state comparisons shared by the tests of K-FED and federated DC-k-means."""
import numpy as np


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


def assert_same_model(a, b):
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
    assert len(a.client_centers_) == len(b.client_centers_)
    for ca, cb, sa, sb in zip(a.client_centers_, b.client_centers_,
                              a.client_sizes_, b.client_sizes_):
        assert np.array_equal(ca, cb) and np.array_equal(sa, sb)
    assert a.inertia_ == b.inertia_ and a.n_iter_ == b.n_iter_
