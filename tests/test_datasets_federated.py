"""Tests of the federated data utilities of pyfkm.datasets: make_gaussian_mixture,
split_iid and split_non_iid.

Where the expected values come from:

* error cases: the contract in the docstrings (InvalidInputError, a
  ValueError subclass);
* exact properties checked on every output over a fixed range of seeds: the
  split is a partition of the row ids (every id exactly once), each client
  holds at most K' distinct labels (exactly K' when every cluster has at
  least n_clients points), no client is empty when that is possible, sizes
  of equal-size clusters differ by at most one, points lie in the box;
* the construction itself: with cluster_std=0 every point is its center;
  same seed gives the same output;
* statistics with fixed seeds and a stated tolerance: per-cluster means and
  stds near the requested ones (no clipping with a tiny std); each label
  equally likely to be held by a given client (chi-square, p > 1e-4); shares
  of a cluster about equal (multinomial, within 6 standard deviations).
"""
import numpy as np
import pytest
from scipy import stats

from pyfkm import InvalidInputError
from pyfkm.datasets import make_blobs, make_gaussian_mixture, split_iid, split_non_iid

SEEDS = range(10)


def _assert_partition(parts, n):
    allids = np.concatenate(parts)
    assert allids.dtype == np.int64
    assert allids.size == n
    np.testing.assert_array_equal(np.sort(allids), np.arange(n))
    for p in parts:
        assert np.all(np.diff(p) > 0), "each part is sorted, without repeats"


# -- errors ------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    dict(n_samples=0),
    dict(n_samples=2.5),
    dict(n_samples=True),
    dict(n_features=0),
    dict(n_samples=5, n_clusters=6),
    dict(n_clusters=0),
    dict(n_clusters=2.0),
    dict(cluster_std=-0.1),
    dict(cluster_std=float("nan")),
    dict(cluster_std=float("inf")),
    dict(cluster_std="0.1"),
    dict(box=(0.5, -0.5)),
    dict(box=(0.0, 0.0)),
    dict(box=(-np.inf, 0.5)),
    dict(box=(0.0, 1.0, 2.0)),
    dict(box="ab"),
    dict(random_state=-1),
    dict(random_state="seed"),
])
def test_make_gaussian_mixture_rejects_bad_parameters(kwargs):
    base = dict(n_samples=100, n_features=2, n_clusters=3)
    base.update(kwargs)
    with pytest.raises(InvalidInputError):
        make_gaussian_mixture(**base)


def test_split_iid_rejects_bad_input():
    X = np.zeros((5, 2))
    for bad in (0, 6, 2.0, True, None):
        with pytest.raises(InvalidInputError):
            split_iid(X, bad)
    with pytest.raises(InvalidInputError):
        split_iid(np.zeros(5), 2)                    # 1-D
    with pytest.raises(InvalidInputError):
        split_iid(np.zeros((0, 2)), 1)               # empty


def test_split_non_iid_rejects_bad_input():
    X = np.zeros((12, 2))
    y = np.repeat([0, 1, 2], 4)
    with pytest.raises(InvalidInputError, match="entries"):
        split_non_iid(X, y[:-1], 2, 2)
    with pytest.raises(InvalidInputError, match="1-D"):
        split_non_iid(X, y.reshape(3, 4), 2, 2)
    with pytest.raises(InvalidInputError):
        split_non_iid(X, y, 0, 1)
    with pytest.raises(InvalidInputError):
        split_non_iid(X, y, 13, 1)                   # more clients than points
    with pytest.raises(InvalidInputError):
        split_non_iid(X, y, 2, 0)
    with pytest.raises(InvalidInputError):
        split_non_iid(X, y, 2, 4)                    # K' > number of labels
    with pytest.raises(InvalidInputError, match="could not be placed"):
        split_non_iid(X, y, 2, 1)                    # 2 * 1 < 3 labels
    with pytest.raises(InvalidInputError):
        split_non_iid(X, y, 2, 1.5)
    with pytest.raises(InvalidInputError, match="sortable"):
        split_non_iid(X, np.array([1, "a"] * 6, dtype=object), 2, 2)


# -- make_gaussian_mixture ----------------------------------------------------

@pytest.mark.parametrize("n, k", [(30, 3), (31, 3), (10, 10), (7, 1), (1000, 7)])
def test_gaussian_mixture_shapes_sizes_and_box(n, k):
    X, y, centers = make_gaussian_mixture(n, 4, k, random_state=0)
    assert X.shape == (n, 4) and X.dtype == np.float64
    assert y.shape == (n,) and y.dtype == np.int64
    assert centers.shape == (k, 4)
    sizes = np.bincount(y, minlength=k)
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == n
    assert X.min() >= -0.5 and X.max() <= 0.5
    # default std = 0.1, margin 2 * std: centers in [-0.3, 0.3]
    assert centers.min() >= -0.3 and centers.max() <= 0.3


def test_gaussian_mixture_is_deterministic_for_a_seed():
    a = make_gaussian_mixture(500, 3, 4, random_state=7)
    b = make_gaussian_mixture(500, 3, 4, random_state=np.random.SeedSequence(7))
    c = make_gaussian_mixture(500, 3, 4, random_state=8)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[0], c[0])


def test_gaussian_mixture_with_zero_std_puts_every_point_on_its_center():
    X, y, centers = make_gaussian_mixture(200, 3, 5, cluster_std=0.0, random_state=1)
    np.testing.assert_array_equal(X, centers[y])


def test_gaussian_mixture_moments_without_clipping():
    # std 0.01: the margin 0.02 is 2 std, clipping is rare; each cluster of
    # 4000 points has sample mean within 5 standard errors of its center and
    # sample std within 5% of 0.01
    X, y, centers = make_gaussian_mixture(20_000, 3, 5, cluster_std=0.01, random_state=2)
    for j in range(5):
        P = X[y == j]
        se = 0.01 / np.sqrt(P.shape[0])
        assert np.all(np.abs(P.mean(axis=0) - centers[j]) < 5 * se)
        assert np.all(np.abs(P.std(axis=0) / 0.01 - 1) < 0.05)


def test_gaussian_mixture_clips_into_a_custom_box():
    X, y, centers = make_gaussian_mixture(2000, 2, 3, cluster_std=5.0, box=(0.0, 10.0),
                                          random_state=3)
    assert X.min() >= 0.0 and X.max() <= 10.0
    # huge std: the margin is capped at a quarter of the width
    assert centers.min() >= 2.5 and centers.max() <= 7.5
    # a large fraction of coordinates sits exactly on the bounds
    assert np.mean((X == 0.0) | (X == 10.0)) > 0.3


def test_make_blobs_is_unchanged():
    X, y, centers = make_blobs(100, 3, 4, random_state=0)
    assert X.shape == (100, 3) and np.bincount(y).tolist() == [25, 25, 25, 25]
    assert centers.min() >= -10 and centers.max() <= 10


# -- split_iid ------------------------------------------------------------------

@pytest.mark.parametrize("n, L", [(10, 3), (10, 10), (10, 1), (1001, 17)])
def test_split_iid_is_a_balanced_partition(n, L):
    X = np.zeros((n, 2))
    for seed in SEEDS:
        parts = split_iid(X, L, random_state=seed)
        assert len(parts) == L
        _assert_partition(parts, n)
        sizes = [p.size for p in parts]
        assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


def test_split_iid_is_reproducible():
    X = np.zeros((50, 2))
    a = split_iid(X, 4, random_state=5)
    b = split_iid(X, 4, random_state=np.random.default_rng(5))
    c = split_iid(X, 4, random_state=6)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not all(np.array_equal(u, v) for u, v in zip(a, c))


# -- split_non_iid ----------------------------------------------------------------

@pytest.mark.parametrize("sizes, L, Kp", [
    ([300] * 10, 100, 3),     # the paper's setting, scaled down
    ([50] * 10, 4, 3),        # L * K' = 12 >= C = 10: the covering step matters
    ([40, 30, 20], 5, 1),
    ([40, 30, 20], 5, 3),     # K' = C: every client holds every label
    ([500, 20, 5, 100], 5, 2),
])
def test_split_non_iid_properties(sizes, L, Kp):
    y = np.repeat(np.arange(len(sizes)), sizes)
    y = np.random.default_rng(0).permutation(y)
    X = np.zeros((y.size, 1))
    for seed in SEEDS:
        parts = split_non_iid(X, y, L, Kp, random_state=seed)
        assert len(parts) == L
        _assert_partition(parts, y.size)
        n_labels = [np.unique(y[p]).size for p in parts]
        assert max(n_labels) <= Kp
        assert min(p.size for p in parts) >= 1
        if min(sizes) >= L:
            # every holder gets a point of each of its labels: exactly K'
            assert n_labels == [Kp] * L


def test_split_non_iid_accepts_any_sortable_labels():
    y = np.array(["b", "a", "c"] * 20)
    parts = split_non_iid(np.zeros((60, 2)), y, 6, 2, random_state=0)
    _assert_partition(parts, 60)
    assert max(np.unique(y[p]).size for p in parts) <= 2


def test_split_non_iid_is_reproducible():
    X, y, _ = make_gaussian_mixture(600, 2, 6, random_state=0)
    a = split_non_iid(X, y, 10, 2, random_state=3)
    b = split_non_iid(X, y, 10, 2, random_state=np.random.SeedSequence(3))
    c = split_non_iid(X, y, 10, 2, random_state=4)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not all(np.array_equal(u, v) for u, v in zip(a, c))


def test_split_non_iid_repairs_empty_clients_when_possible():
    # labels 0 and 1 have one point each, label 2 has 100; with L = 3 and
    # K' = 2 a client may hold {0, 1} and receive neither point, but a point
    # can always be moved to it (see the Notes of split_non_iid)
    y = np.array([0, 1] + [2] * 100)
    X = np.zeros((y.size, 1))
    for seed in range(50):
        parts = split_non_iid(X, y, 3, 2, random_state=seed)
        _assert_partition(parts, y.size)
        assert min(p.size for p in parts) >= 1
        assert max(np.unique(y[p]).size for p in parts) <= 2


def test_split_non_iid_leaves_a_client_empty_only_when_forced():
    # one point of label 0, K' = 1: if two clients hold label 0, one of them
    # cannot get a point; the output is still a partition
    y = np.array([0] + [1] * 30)
    X = np.zeros((y.size, 1))
    saw_empty = False
    for seed in range(30):
        parts = split_non_iid(X, y, 3, 1, random_state=seed)
        _assert_partition(parts, y.size)
        empty = [l for l, p in enumerate(parts) if p.size == 0]
        assert len(empty) <= 1
        saw_empty |= bool(empty)
        for p in parts:
            assert np.unique(y[p]).size <= 1
    assert saw_empty  # the forced case occurs for some seed in this range


@pytest.mark.statistical
def test_split_non_iid_label_sets_are_uniform():
    # by symmetry client 0 holds each of the C = 6 labels with probability
    # K'/C = 1/3; chi-square over 600 seeded splits
    C, L, Kp, runs = 6, 4, 2, 600
    y = np.repeat(np.arange(C), 20)
    X = np.zeros((y.size, 1))
    counts = np.zeros(C)
    for seed in range(runs):
        parts = split_non_iid(X, y, L, Kp, random_state=seed)
        counts[np.unique(y[parts[0]])] += 1
    assert counts.sum() == runs * Kp
    p = stats.chisquare(counts).pvalue
    assert p > 1e-4, (counts, p)


def test_split_non_iid_shares_are_about_equal():
    # K' = C = 2: all 4 clients hold both labels; each gets 1 + Binomial(3996, 1/4)
    # points of each label: mean 1000, sd ~27.4; allow 6 sd
    y = np.repeat([0, 1], 4000)
    X = np.zeros((y.size, 1))
    parts = split_non_iid(X, y, 4, 2, random_state=0)
    for p in parts:
        for c in (0, 1):
            share = int(np.sum(y[p] == c))
            assert abs(share - 1000) < 6 * np.sqrt(3996 * 0.25 * 0.75)
