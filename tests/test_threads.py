"""Kernels release the GIL and keep no hidden state: running them from
several threads at once gives exactly the sequential results."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import pyfkm


def _data(seed, n=20_003, d=7):
    return np.random.default_rng(seed).normal(size=(n, d))


def _work(seed):
    X = _data(seed)
    _, ids = pyfkm.kmeans_plusplus(X, 9, random_state=seed)
    km = pyfkm.KMeans(5, random_state=seed, max_iter=20).fit(X)
    s = pyfkm.RemovableSeeding(X, 6, random_state=seed)
    s.remove(s.center_ids_[:2])
    lat = pyfkm.Lattice.random(0.5, X.shape[1], random_state=seed)
    pts = lat.sample(lat.quantize(X[:100]), random_state=seed)
    return ids, km.cluster_centers_, km.labels_, s.center_ids_, s.cluster_sizes_, pts


def test_concurrent_calls_equal_sequential():
    seeds = list(range(8))
    sequential = [_work(s) for s in seeds]
    with ThreadPoolExecutor(4) as pool:
        concurrent = list(pool.map(_work, seeds))
    for a, b in zip(sequential, concurrent):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)


def test_shared_generator_is_used_under_its_lock():
    # Several threads drawing from one Generator: every draw is serialised by
    # the bit generator's lock, so the multiset of results equals the one of
    # a sequential run consuming the same stream (each call takes exactly
    # n_clusters draws).
    X = _data(0, n=2_000)
    g = np.random.default_rng(123)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: tuple(pyfkm.kmeans_plusplus(X, 4, random_state=g)[1]),
                            range(16)))
    g2 = np.random.default_rng(123)
    want = [tuple(pyfkm.kmeans_plusplus(X, 4, random_state=g2)[1]) for _ in range(16)]
    assert sorted(got) == sorted(want)
