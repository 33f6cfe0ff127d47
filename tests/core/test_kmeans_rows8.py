"""The row path of the blocked assignment (points not packed: d <= 128 there)
scores groups of 8 rows through two panels built on the fly, with the centers
in exact chunks of 4, 5 and 6 (csrc/fkm_lloyd_impl.h, score_rows8, panel8x):
labels are the nearest centers (brute force), the lowest index on exact ties
wherever the tied centers fall among the chunks, for every k (chunk splits
6 + 4, 6 + 5, 4 + 5, ...) and for tails of 1-7 rows; with a mask, the groups
are still the rows' fours (a group of 8 with one flagged half scores that
half only); results do not depend on the number of threads."""
import numpy as np
import pytest

from pyfkm._core import _lloyd
from pyfkm.core.kmeans import _short_shift, nearest_center


def _brute(X, C):
    """Nearest center by exact squared distances, and the gap to the runner-up."""
    D = ((X.astype(np.float64)[:, None, :] - C[None]) ** 2).sum(axis=2)
    lab = D.argmin(axis=1)
    part = np.sort(D, axis=1)
    gap = part[:, 1] - part[:, 0] if C.shape[0] > 1 else np.full(X.shape[0], np.inf)
    return lab, gap


def _assign(X, C, labels, need=None):
    """One part through assign_parts (no packing: the row path)."""
    k, d = C.shape
    shift = _short_shift(C.mean(axis=0))
    ct, hn = _lloyd.pack_centers(C, shift)
    bounds = np.array([0, X.shape[0]], dtype=np.int64)
    sums, wsums = np.zeros((1, k, d)), np.zeros((1, k))
    _lloyd.assign_parts(X, None, np.zeros(0), ct, hn, C, bounds, 0, 1, labels, None, sums,
                        wsums, np.zeros(1), np.zeros(1, dtype=np.int64), need)
    return sums[0], wsums[0]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n, d, k", [(1000, 17, 8), (1003, 24, 9), (1001, 50, 10),
                                     (997, 33, 11), (1005, 20, 13), (999, 50, 62),
                                     (1007, 40, 64), (1002, 128, 10), (1001, 18, 3),
                                     (1006, 19, 7), (7, 50, 5), (15, 30, 12)])
def test_rows8_labels_are_the_nearest_centers(n, d, k, dtype):
    rng = np.random.default_rng(n * d + k)
    X = (rng.standard_normal((n, d)) * 3 + (np.arange(n) % 4)[:, None]).astype(dtype)
    C = X[rng.choice(n, k, replace=False)].astype(np.float64) + 0.05
    _, labels = nearest_center(X, C)
    ref, gap = _brute(X, C)
    clear = gap > 1e-9 * (1 + np.abs(X.astype(np.float64)).sum(axis=1)) ** 2
    assert clear.mean() > 0.99
    np.testing.assert_array_equal(labels[clear], ref[clear])
    # the sums of the assignment are those of the labels
    lab = np.full(n, -1, dtype=np.int32)
    sums, wsums = _assign(X, C, lab)
    np.testing.assert_array_equal(lab, labels)
    np.testing.assert_array_equal(wsums, np.bincount(labels, minlength=k))
    np.testing.assert_allclose(sums, np.stack([X[labels == c].astype(np.float64).sum(axis=0)
                                                for c in range(k)]), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("k, first, dup", [(10, 2, 9), (10, 5, 8), (11, 0, 10), (9, 3, 4),
                                           (13, 1, 12), (64, 7, 63), (62, 30, 57)])
def test_rows8_ties_go_to_the_lowest_index(k, first, dup):
    """Two equal centers in different chunks (or lanes): every point nearest to
    them takes the lower index."""
    rng = np.random.default_rng(k + first)
    n, d = 203, 24
    C = rng.integers(-8, 9, size=(k, d)).astype(np.float64)
    C[dup] = C[first]
    X = C[rng.integers(0, k, size=n)] + rng.integers(-1, 2, size=(n, d))
    _, labels = nearest_center(X, C)
    D = ((X[:, None, :] - C[None]) ** 2).sum(axis=2)  # exact: small integers
    np.testing.assert_array_equal(labels, D.argmin(axis=1))  # first minimum
    assert (labels == first).any() and not (labels == dup).any()


def test_rows8_mask_keeps_the_groups_of_four():
    """Groups of 8 rows with one flagged half: that half is scored, the other
    keeps the labels it holds (here deliberately not the nearest)."""
    rng = np.random.default_rng(5)
    n, d, k = 64 + 5, 50, 10
    X = rng.standard_normal((n, d)) * 4
    C = X[rng.choice(n, k, replace=False)] + 0.01
    ref, _ = _brute(X, C)
    wrong = ((ref + 1) % k).astype(np.int32)
    need = np.zeros(n, dtype=np.uint8)
    need[[1, 13, 16, 17, 35, 40, 44, 66]] = 1  # halves 0, 3, 4, 8, 10, 11 and the tail
    labels = wrong.copy()
    _, wsums = _assign(X, C, labels, need)
    scored = np.zeros(n, dtype=bool)
    for i in range(0, n, 4):
        scored[i:i + 4] = need[i:i + 4].any()
    np.testing.assert_array_equal(labels[scored], ref[scored])
    np.testing.assert_array_equal(labels[~scored], wrong[~scored])
    np.testing.assert_array_equal(wsums, np.bincount(labels, minlength=k))


@pytest.mark.parametrize("n, d, k", [(300, 50, 10), (205, 24, 11)])
def test_rows8_one_call_loop_labels_are_nearest(n, d, k):
    """The one-call loop (fkm_lloyd_label on the row path) ends with every
    point at its nearest returned center."""
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, d)) + (np.arange(n) % 5)[:, None] * 3
    C0 = X[rng.choice(n, k, replace=False)].copy()
    C, labels, _, _, _ = _lloyd.lloyd_loop(X, C0, None, 20, 0.0)
    ref, gap = _brute(X, C)
    clear = gap > 1e-9 * (1 + np.abs(X).sum(axis=1)) ** 2
    np.testing.assert_array_equal(labels[clear], ref[clear])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d, k", [(5, 9), (16, 10), (17, 8), (50, 10), (128, 13)])
def test_rows8_results_do_not_depend_on_threads(d, k, dtype):
    """nearest_center on 1 and 2 threads gives the same labels and distances
    bit for bit, with unpacked rows at d <= 16 too, integer-valued data
    (exact ties between duplicated centers) and a tail that is not a
    multiple of 8; the labels are the brute-force nearest, lowest index on
    ties."""
    rng = np.random.default_rng(d * 100 + k)
    n = 4001                                          # < 4096: rows not packed
    X = rng.integers(-3, 4, size=(n, d)).astype(dtype)
    C = X[rng.choice(n, k, replace=False)].astype(np.float64)
    C[k - 1] = C[1]                                   # a duplicated center: exact ties
    d1, l1 = nearest_center(X, C, n_threads=1)
    d2, l2 = nearest_center(X, C, n_threads=2)
    assert d1.tobytes() == d2.tobytes() and l1.tobytes() == l2.tobytes()
    D = ((X.astype(np.float64)[:, None, :] - C[None]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(l1, D.argmin(axis=1))
    np.testing.assert_array_equal(d1, D.min(axis=1))


def _chunks(k):
    """Pure-Python twin of the center chunks of panel8x for k >= 8
    (fkm_lloyd_chunk_w: widths 4, 5 and 6, 6 first), for the test below."""
    out, c = [], 0
    while c < k:
        r = k - c
        w = r if r <= 6 else 6 if r in (10, 11, 12) or r >= 14 else 4
        out.append((c, w))
        c += w
    return out


@pytest.mark.parametrize("k", list(range(8, 31)) + [62, 64, 65, 67])
def test_rows8_every_chunk_split_with_ties_at_its_edges(k):
    """Every k from 8 to 30 and beyond (each split of k into chunks of 6, 5
    and 4: 13 = 4 + 4 + 5, 14 = 6 + 4 + 4, 64 = 10 x 6 + 4, ...): labels
    are the brute-force nearest centers, and a center duplicated at the
    first lane of each later chunk loses its ties to the last lane of the
    chunk before (the lowest index), on 1 and 2 threads alike."""
    chunks = _chunks(k)
    assert sum(w for _, w in chunks) == k and all(w in (4, 5, 6) for _, w in chunks)
    rng = np.random.default_rng(k)
    n, d = 4001, 20                                   # < 4096: rows not packed
    C = rng.integers(-6, 7, size=(k, d)).astype(np.float64)
    for (c, _), (c2, _) in zip(chunks, chunks[1:]):
        C[c2] = C[c2 - 1]                             # equal across the edge
    X = C[rng.integers(0, k, size=n)] + rng.integers(-1, 2, size=(n, d))
    D = ((X[:, None, :] - C[None]) ** 2).sum(axis=2)  # exact: small integers
    d1, l1 = nearest_center(X, C, n_threads=1)
    d2, l2 = nearest_center(X, C, n_threads=2)
    assert l1.tobytes() == l2.tobytes() and d1.tobytes() == d2.tobytes()
    np.testing.assert_array_equal(l1, D.argmin(axis=1))  # first minimum
    np.testing.assert_array_equal(d1, D.min(axis=1))
    dups = [c2 for _, (c2, _) in zip(chunks, chunks[1:])]
    assert not np.isin(l1, dups).any() and np.isin(l1, [c - 1 for c in dups]).any()
