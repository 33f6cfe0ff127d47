"""The distance-bound path of the blocked Lloyd step (issue 22:
``LloydWorkspace(..., bounds=True)``, csrc/fkm_lloyd_loop.c,
``fkm_lloyd_assign_bounded_f64``) against the full scan of every point
(``bounds=False``): the bounds only skip the scoring of points proven to keep
their label, so labels, sums, weights, distances and inertia must be bit for
bit the same, whatever the thread count.  The full scan itself is checked
against a numpy brute-force oracle here too (labels of points whose nearest
center is clear).
"""
import numpy as np
import pytest

from pyfkm._core import _lloyd
from pyfkm.core import kmeans as km
from pyfkm.core.kmeans import LloydWorkspace, lloyd


@pytest.fixture(autouse=True)
def _bounds_at_every_d(monkeypatch):
    # lloyd() uses the bounds only where they paid (LloydWorkspace._BOUNDS_D);
    # the tests force them at every d so that every kernel path is covered
    monkeypatch.setattr(LloydWorkspace, "_BOUNDS_D", (0, 1 << 30))
    # and set them up from the first step on (as soon as labels exist)
    monkeypatch.setattr(LloydWorkspace, "_BOUNDS_START", 1.0)
    # whatever the steps left to pay for them (at least 4)
    monkeypatch.setattr(LloydWorkspace, "_BOUNDS_PAYBACK", 0)


def _oracle_labels(X, C):
    D = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
    order = np.sort(D, axis=1)
    clear = order[:, 1] - order[:, 0] > 1e-9 * (1.0 + order[:, 1])
    return D.argmin(axis=1), clear


def _blobs(n, d, k, seed, spread=6.0):
    rng = np.random.default_rng(seed)
    c = rng.uniform(-spread, spread, size=(k, d))
    return c[rng.integers(0, k, size=n)] + rng.standard_normal((n, d))


def _same_steps(X, C0, w, n_steps, n_threads=1, distances=(False, True)):
    """Lloyd steps on a plain and a bounded workspace, compared step by step;
    returns the points scored by the bounded one at each step, the centers
    of the last step and its labels."""
    k = C0.shape[0]
    a = LloydWorkspace(X, w, k, n_threads)
    b = LloydWorkspace(X, w, k, n_threads, bounds=True)
    C = C0.copy()
    scored = []
    try:
        for it in range(n_steps):
            dist = distances[it % len(distances)]
            sa = a.step(C, distances=dist)
            sb = b.step(C, distances=dist)
            for u, v in zip(sa[:2], sb[:2]):
                assert u.tobytes() == v.tobytes()
            assert float(sa[2]).hex() == float(sb[2]).hex()
            np.testing.assert_array_equal(a.labels, b.labels)
            assert a.n_changed == b.n_changed
            if dist:
                assert a.mind.tobytes() == b.mind.tobytes()
            scored.append(b.n_scored)
            last = C.copy()
            pos = sa[1] > 0
            C[pos] = sa[0][pos] / sa[1][pos, None]
    finally:
        a.close()
        b.close()
    return scored, last, a.labels.copy()


# --- errors first --------------------------------------------------------------

def test_bounded_kernel_checks_lengths():
    X = np.zeros((10, 2))
    C = np.array([[0.0, 0.0], [1.0, 1.0]])
    shift = np.zeros(2)
    ct, hn = _lloyd.pack_centers(C, shift)
    parts = np.array([0, 10])
    labels = np.full(10, -1, dtype=np.int32)
    outs = (np.empty((1, 2, 2)), np.empty((1, 2)), np.empty(1), np.zeros(1, np.int64),
            np.zeros(1, np.int64))
    xn = _lloyd.bounds_norms(X)
    good = (np.empty(10), np.empty(10), np.empty(10, np.uint8), xn)
    with pytest.raises(ValueError, match="wrong length"):
        _lloyd.assign_parts_bounded(X, None, np.zeros(0), ct, hn, shift, C, parts, 0, 1,
                                    labels, None, *outs, np.empty(9), *good[1:],
                                    None, -1, 0.0, 0.0)
    with pytest.raises(ValueError, match="wrong length"):
        _lloyd.assign_parts_bounded(X, None, np.zeros(0), ct, hn, shift, C, parts, 0, 1,
                                    labels, None, *outs, *good, np.zeros(3), 0, 0.0, 0.0)
    with pytest.raises(ValueError, match="out of range"):
        _lloyd.assign_parts_bounded(X, None, np.zeros(0), ct, hn, shift, C,
                                    np.array([0, 11]), 0, 1, labels, None, *outs, *good,
                                    None, -1, 0.0, 0.0)
    with pytest.raises(ValueError, match="shape"):
        _lloyd.bounds_moves(C, C[:1])


def test_bounded_kernel_labels_out_of_range_are_scored():
    # labels that are not valid on entry are never "proven": scored like the plain step
    rng = np.random.default_rng(0)
    X = rng.standard_normal((37, 3))
    C = X[:5].copy()
    shift = km._short_shift(C.mean(axis=0))
    ct, hn = _lloyd.pack_centers(C, shift)
    parts = np.array([0, 37])
    ref = np.full(37, -1, dtype=np.int32)
    outs_a = (np.empty((1, 5, 3)), np.empty((1, 5)), np.empty(1), np.zeros(1, np.int64))
    _lloyd.assign_parts(X, None, np.zeros(0), ct, hn, C, parts, 0, 1, ref, None, *outs_a)
    labels = np.full(37, 99, dtype=np.int32)
    labels[::2] = -7
    outs_b = (np.empty((1, 5, 3)), np.empty((1, 5)), np.empty(1), np.zeros(1, np.int64))
    scored = np.zeros(1, np.int64)
    U, L = np.zeros(37), np.full(37, 1e300)  # bounds that would "prove" anything
    move = _lloyd.bounds_moves(C, C)
    _lloyd.assign_parts_bounded(X, None, np.zeros(0), ct, hn, shift, C, parts, 0, 1, labels,
                                None, *outs_b, scored, U, L, np.empty(37, np.uint8),
                                _lloyd.bounds_norms(X), *move)
    np.testing.assert_array_equal(labels, ref)
    assert outs_a[0].tobytes() == outs_b[0].tobytes()
    assert scored[0] == 37


# --- bit for bit the plain step --------------------------------------------------

@pytest.mark.parametrize("n, d, k", [
    (9_001, 1, 2),     # d = 1, a tail of 1 point after the panels
    (8_203, 3, 9),     # k not a multiple of the panel (8), tail of 3
    (8_194, 10, 13),   # packed points (d <= 16), 12-lane tile remainder
    (9_000, 17, 8),    # rows path (d > 16), one full panel
    (8_197, 50, 21),   # rows path, k % 8 = 5, tail of 1
    (8_200, 130, 5),   # d beyond one coordinate block (128), k < 8
])
def test_bounded_steps_bit_identical(n, d, k):
    X = _blobs(n, d, k, seed=n + d + k)
    C0 = X[np.random.default_rng(1).choice(n, k, replace=False)].copy()
    scored, C, labels = _same_steps(X, C0, None, 12)
    assert scored[0] == n  # first step scores everything
    assert min(scored[1:]) < n // 2  # the bounds proved points later on
    ref, clear = _oracle_labels(X, C)
    assert clear.mean() > 0.99
    np.testing.assert_array_equal(labels[clear], ref[clear])


@pytest.mark.parametrize("d, k", [(2, 5), (20, 12)])
def test_bounded_steps_weights_duplicates_ties(d, k):
    # integer data with many duplicate points and exact distance ties between
    # centers; zero and fractional weights
    rng = np.random.default_rng(d * k)
    n = 8_500
    X = rng.integers(-3, 4, size=(n, d)).astype(np.float64)
    w = rng.choice([0.0, 0.5, 1.0, 3.0], size=n)
    C0 = rng.integers(-3, 4, size=(k, d)).astype(np.float64) + 0.5
    C0[1] = C0[0]  # two identical centers: every tie goes to the lower index
    scored, _, _ = _same_steps(X, C0, w, 8)
    assert min(scored[1:]) < n


@pytest.mark.parametrize("n_threads", [2, 3])
def test_bounded_steps_thread_count_independent(n_threads):
    n, d, k = 3 * 4096 + 77, 6, 10
    X = _blobs(n, d, k, seed=5)
    C0 = X[:k].copy()
    s1, C1, l1 = _same_steps(X, C0, None, 8, n_threads=1)
    s2, C2, l2 = _same_steps(X, C0, None, 8, n_threads=n_threads)
    assert C1.tobytes() == C2.tobytes()
    np.testing.assert_array_equal(l1, l2)
    assert s1 == s2


def test_bounded_step_far_from_origin_and_jumps():
    # data far from the origin (scores relative to a shift) and centers that
    # jump between steps (large moves: bounds prove nothing, then settle)
    n, d, k = 8_300, 4, 6
    X = _blobs(n, d, k, seed=9) + 1e7
    a = LloydWorkspace(X, None, k, 1)
    b = LloydWorkspace(X, None, k, 1, bounds=True)
    rng = np.random.default_rng(3)
    C = X[:k].copy()
    try:
        for it in range(10):
            sa, sb = a.step(C), b.step(C)
            assert sa[0].tobytes() == sb[0].tobytes()
            assert a.mind.tobytes() == b.mind.tobytes()
            np.testing.assert_array_equal(a.labels, b.labels)
            pos = sa[1] > 0
            C[pos] = sa[0][pos] / sa[1][pos, None]
            if it in (4, 7):
                C = C + rng.standard_normal(C.shape) * 3.0
    finally:
        a.close()
        b.close()


# --- the oracle and the whole run --------------------------------------------------

@pytest.mark.parametrize("d, k", [(1, 3), (7, 11), (33, 19)])
def test_lloyd_bounded_matches_oracle_and_plain(monkeypatch, d, k):
    n = 2 * km._SMALL_N + 13  # the blocked path
    X = _blobs(n, d, k, seed=d + k)
    C0 = X[np.random.default_rng(2).choice(n, k, replace=False)].copy()
    with_bounds = lloyd(X, C0, max_iter=30, tol=0)
    monkeypatch.setattr(LloydWorkspace, "_BOUNDS_START", -1.0)  # never start bounds
    plain = lloyd(X, C0, max_iter=30, tol=0)
    assert with_bounds[0].tobytes() == plain[0].tobytes()
    np.testing.assert_array_equal(with_bounds[1], plain[1])
    assert float(with_bounds[2]).hex() == float(plain[2]).hex()
    assert with_bounds[3] == plain[3]
    ref, clear = _oracle_labels(X, with_bounds[0])
    np.testing.assert_array_equal(with_bounds[1][clear], ref[clear])


def test_lloyd_bounded_empty_cluster_relocation(monkeypatch):
    # an empty cluster relocates a point (labels changed outside the step):
    # the bounds are dropped and results still match the plain run
    n, d = 2 * km._SMALL_N + 5, 3
    X = _blobs(n, d, 4, seed=11)
    C0 = np.vstack([X[:4], X[:4].mean(axis=0) + 1e4])  # the last center attracts nothing
    a = lloyd(X, C0, max_iter=20, tol=0)
    monkeypatch.setattr(LloydWorkspace, "_BOUNDS_START", -1.0)
    b = lloyd(X, C0, max_iter=20, tol=0)
    assert a[0].tobytes() == b[0].tobytes()
    np.testing.assert_array_equal(a[1], b[1])
    assert a[3] == b[3]


def test_bounds_policy_by_dimension(monkeypatch):
    monkeypatch.undo()
    X = np.zeros((8, 40))
    for d, used in ((16, False), (17, True), (256, True), (257, False)):
        ws = LloydWorkspace(np.zeros((8, d)), None, 2, 1, bounds=True)
        assert (ws._bnd is not None) == used
    ws = LloydWorkspace(X.astype(np.float32), None, 2, 1, bounds=True)
    assert ws._bnd is None  # float64 only
    assert LloydWorkspace(X, None, 2, 1)._bnd is None  # off by default


def _count_bounded_calls(monkeypatch):
    """A list that grows by one at each call of the bounded assignment."""
    calls = []
    real = _lloyd.assign_parts_bounded

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(km._lloyd, "assign_parts_bounded", counted)
    return calls


def test_bounds_start_needs_steps_to_pay_back(monkeypatch):
    # the set-up of the bounds costs a few plain steps: lloyd() sets them up
    # only with enough iterations left to pay it back (more at small k d);
    # results are the same either way
    monkeypatch.undo()
    n, d, k = 2 * km._SMALL_N + 13, 50, 10
    ws = LloydWorkspace(np.zeros((8, d)), None, k, 1, bounds=True)
    assert ws._bounds_min_steps() == -(-LloydWorkspace._BOUNDS_PAYBACK // (k * d)) > 10
    assert LloydWorkspace(np.zeros((8, d)), None, 64, 1, bounds=True)._bounds_min_steps() == 4
    X = _blobs(n, d, k, seed=5)
    C0 = X[np.random.default_rng(3).choice(n, k, replace=False)].copy()
    calls = _count_bounded_calls(monkeypatch)
    short = lloyd(X, C0, max_iter=10, tol=0)
    assert not calls  # 10 iterations do not pay for the set-up at (d, k) = (50, 10)
    monkeypatch.setattr(LloydWorkspace, "_BOUNDS_PAYBACK", 0)
    forced = lloyd(X, C0, max_iter=10, tol=0)
    assert calls  # the same run on the bounds
    assert short[0].tobytes() == forced[0].tobytes()
    np.testing.assert_array_equal(short[1], forced[1])
    assert float(short[2]).hex() == float(forced[2]).hex()
    assert short[3] == forced[3]
    monkeypatch.setattr(LloydWorkspace, "_BOUNDS_PAYBACK", 8192)
    del calls[:]
    lloyd(X, C0, max_iter=300, tol=0)
    assert calls  # a long run sets them up once labels settle


def test_keep_labels_step_does_not_start_bounds(monkeypatch):
    # a keep_labels step (the relocation of an empty cluster) changes no
    # label but says nothing about how settled they are: the next step must
    # not set up the bounds on its account (only on the last scoring step's)
    monkeypatch.setattr(LloydWorkspace, "_BOUNDS_START", 0.01)
    n, d, k = 2 * km._SMALL_N + 13, 20, 5
    X = _blobs(n, d, k, seed=7)
    C0 = X[:k].copy()
    calls = _count_bounded_calls(monkeypatch)
    ws = LloydWorkspace(X, None, k, 1, bounds=True)
    plain = LloydWorkspace(X, None, k, 1)
    try:
        ws.step(C0)  # every label changes
        ws.step(C0, keep_labels=True)
        assert ws.n_changed == 0
        a = ws.step(C0 + 0.25)
        assert not calls
        plain.step(C0)
        b = plain.step(C0 + 0.25)
        for u, v in zip(a[:2], b[:2]):
            assert u.tobytes() == v.tobytes()
    finally:
        ws.close()
        plain.close()
