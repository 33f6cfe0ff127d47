"""k-means++ seeding on clustered data, where the kernel may skip work (issue 22).

Triangle-inequality pruning (per point today, per group of points in a
follow-up) only decides which distances the kernel computes: the chosen ids,
the squared distances to the nearest center and the labels must be exactly
those of a brute-force computation.  Tight, well-separated blobs make pruning
trigger on most points once every blob holds a center.

Where the expected values come from:

* index-for-index: tests/oracles/seeding.py's ``d2_seeding`` (the numpy twin
  that consumes the generator as the kernel does) and ``nearest_centers``
  (brute-force distances to every chosen center, first center on ties);
* statistical: ``sequence_probabilities``, the exact enumeration of ordered
  center sequences of a tiny dataset; chi-square at ALPHA = 1e-3 on 20,000
  draws with fixed seeds, cells of expected count < 5 pooled, and a negative
  control (one weight doubled) that the same procedure must reject.
"""
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from pyfkm import RemovableSeeding, kmeans_plusplus
from pyfkm._core import _seeding
from oracles.seeding import d2_seeding, nearest_centers, sequence_probabilities

ALPHA = 1e-3
N_DRAWS = 20_000

# Four tight pairs at the corners of a large square, and one point between
# two of them: with k = 6 every later center lies in a blob that already
# holds one, far from all the others.
XT = np.array([[0.0, 0.0], [1.0, 0.0], [100.0, 0.0], [100.0, 1.0],
               [0.0, 100.0], [1.0, 101.0], [100.0, 100.0], [101.0, 100.0],
               [50.0, 0.5]])
WT = np.array([1.0, 2.0, 1.0, 0.5, 1.5, 1.0, 1.0, 3.0, 0.2])


def _blobs(n, d, n_blobs, seed, spread=0.05, dtype=np.float64):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-100, 100, size=(n_blobs, d))
    y = rng.integers(0, n_blobs, size=n)
    return (centers[y] + spread * rng.standard_normal((n, d))).astype(dtype)


def _assert_state(X, ids, mind, labels, removed=None):
    """mind/labels equal a brute-force computation from the chosen ids."""
    m2, l2 = nearest_centers(np.asarray(X, dtype=np.float64), ids, removed)
    np.testing.assert_array_equal(np.asarray(mind), m2)
    np.testing.assert_array_equal(np.asarray(labels), l2)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,d,n_blobs,k", [(3000, 2, 6, 20), (2500, 10, 8, 30),
                                           (1500, 17, 5, 16), (1200, 50, 7, 25)])
def test_clustered_seeding_matches_reference(n, d, n_blobs, k, dtype, weighted):
    X = _blobs(n, d, n_blobs, seed=n + d, dtype=dtype)
    rng = np.random.default_rng(d)
    w = rng.uniform(0.1, 3.0, size=n) if weighted else None
    for seed in range(3):
        ids, mind, labels = _seeding.seed(X, w, k, np.random.default_rng(seed))
        expected = d2_seeding(X, k, w, np.random.default_rng(seed))
        np.testing.assert_array_equal(ids, expected, err_msg=f"seed={seed}")
        _assert_state(X, expected, mind, labels)


@pytest.mark.parametrize("d", [3, 10, 17])
def test_clustered_resume_matches_reference(d):
    """seed_from a prefix, and removals of centers (warm resume with removed
    rows): ids, labels and squared distances as the twin's."""
    n, k = 2000, 24
    X = _blobs(n, d, 6, seed=d)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=n)
    full = d2_seeding(X, k, w, np.random.default_rng(3))
    for m in (1, 6, 15):
        got = _seeding.seed_from(X, w, full[:m], k, np.random.default_rng(40 + m))
        np.testing.assert_array_equal(got, d2_seeding(X, k, w, np.random.default_rng(40 + m),
                                                      prefix=full[:m]))
    s = RemovableSeeding(X, k, sample_weight=w, random_state=5)
    g = np.random.default_rng(5)
    ids = d2_seeding(X, k, w, g)
    removed = np.zeros(n, dtype=bool)
    for pos in (k - 1, 7, 2):
        batch = [int(s.center_ids_[pos])] + np.flatnonzero(~removed)[10:40:3].tolist()
        batch = sorted(set(batch) - set(np.flatnonzero(removed).tolist()))
        s.remove(batch)
        removed[batch] = True
        hits = [j for j, c in enumerate(ids) if c in batch]
        ids = d2_seeding(X, k, w, g, removed=removed, prefix=ids[: min(hits)])
        np.testing.assert_array_equal(s.center_ids_, ids)
        mind, labels = nearest_centers(X, ids, removed)
        np.testing.assert_array_equal(s.labels_, labels)
        np.testing.assert_array_equal(s._state.min_sq_dist, mind)


def _pvalue(counts, probs):
    cells, cur, cur_p = [], [], 0.0
    for key in sorted(probs, key=lambda s: (probs[s], s)):
        cur.append(key)
        cur_p += probs[key]
        if cur_p * N_DRAWS >= 5:
            cells.append(cur)
            cur, cur_p = [], 0.0
    if cur:
        cells[-1].extend(cur)
    if set(counts) - set(probs):
        return 0.0
    obs = np.array([sum(counts[s] for s in c) for c in cells], dtype=float)
    p = np.array([sum(probs[s] for s in c) for c in cells])
    return float(stats.chisquare(obs, N_DRAWS * p / p.sum()).pvalue)


def _marginal(probs, positions):
    out = Counter()
    for seq, p in probs.items():
        out[tuple(seq[i] for i in positions)] += p
    return dict(out)


@pytest.mark.slow
@pytest.mark.statistical
def test_clustered_law_of_the_last_two_seeds():
    """Law of the 5th and 6th of k = 6 seeds on XT (pruning territory), and of
    the whole sequence; a doubled weight is rejected by the same test."""
    k = 6
    probs = sequence_probabilities(XT, k, WT)
    g = np.random.default_rng(2026)
    draws = [tuple(kmeans_plusplus(XT, k, sample_weight=WT, random_state=g)[1].tolist())
             for _ in range(N_DRAWS)]
    for pos in ((4,), (5,), (4, 5)):
        law = _marginal(probs, pos)
        counts = Counter(tuple(s[i] for i in pos) for s in draws)
        assert _pvalue(counts, law) > ALPHA, pos
    assert _pvalue(Counter(draws), probs) > ALPHA
    wrong = WT.copy()
    wrong[7] *= 2.0
    g = np.random.default_rng(7)
    bad = Counter(tuple(kmeans_plusplus(XT, k, sample_weight=wrong, random_state=g)[1][4:].tolist())
                  for _ in range(N_DRAWS))
    assert _pvalue(bad, _marginal(probs, (4, 5))) < ALPHA
