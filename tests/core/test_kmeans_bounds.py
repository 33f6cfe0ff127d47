"""The distance-bound path of the one-call C Lloyd loop (csrc/fkm_lloyd_loop.c,
``_lloyd.lloyd_loop(..., bounds=True)``) against the full scan of every point
(``bounds=False``): the bounds only skip the scoring of points proven to keep
their label, so every output must be bit for bit the same.  The full scan
itself is checked against the numpy reference in tests/core/test_kmeans.py.
"""
import numpy as np
import pytest

import pyfkm
from pyfkm._core import _lloyd


def _run(X, C0, w, max_iter, tol_abs, bounds):
    return _lloyd.lloyd_loop(np.ascontiguousarray(X, dtype=np.float64), C0, w, max_iter,
                             tol_abs, bounds)


def _assert_same(X, C0, w, max_iter=100, tol_abs=0.0):
    a = _run(X, C0, w, max_iter, tol_abs, False)
    b = _run(X, C0, w, max_iter, tol_abs, True)
    assert a[0].tobytes() == b[0].tobytes()  # centers, bit for bit
    np.testing.assert_array_equal(a[1], b[1])  # labels
    assert a[2].tobytes() == b[2].tobytes()  # mind
    assert float(a[3]).hex() == float(b[3]).hex()  # inertia
    assert a[4] == b[4]  # n_iter
    return a


# --- errors first --------------------------------------------------------------

def test_bounds_errors_unchanged():
    # the same checks and the same overflow error with and without bounds
    X = np.zeros((3, 2))
    for bounds in (False, True):
        with pytest.raises(ValueError, match="shapes"):
            _lloyd.lloyd_loop(X, np.zeros((2, 3)), None, 10, 0.0, bounds)
        with pytest.raises(pyfkm.NumericalError):
            _lloyd.lloyd_loop(np.array([[1e200], [-1e200], [3e199]]),
                              np.array([[0.0], [1.0]]), None, 5, 0.0, bounds)


def test_bounds_huge_values_same():
    # norms above 2**400 are never skipped (no overflow analysis there); the
    # run must still match the full scan
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3)) * 1e130
    _assert_same(X, X[:4].copy(), None, 30)


# --- bit-identity on many instances ----------------------------------------------

def _data(rng, kind, n, d):
    if kind == "tight":  # well separated, tight clusters: most points skipped
        cent = rng.normal(size=(6, d)) * 20
        return cent[rng.integers(0, 6, n)] + rng.normal(scale=0.3, size=(n, d))
    if kind == "overlap":  # heavy overlap: many near-ties
        return rng.normal(size=(n, d))
    if kind == "grid":  # integer grid: duplicates and exact distance ties
        return rng.integers(-2, 3, size=(n, d)) * 1.0
    if kind == "far":  # far from the origin: rounding of the scores ~ 1e6 |c - s|
        return rng.normal(size=(n, d)) + 1e6
    if kind == "dup":  # every point three times
        base = rng.normal(size=((n + 2) // 3, d))
        return np.repeat(base, 3, axis=0)[:n]
    raise AssertionError(kind)


@pytest.mark.parametrize("d", [1, 2, 3, 10, 17, 40])
@pytest.mark.parametrize("kind", ["tight", "overlap", "grid", "far", "dup"])
def test_bounds_bit_identical(kind, d):
    rng = np.random.default_rng(100 * ["tight", "overlap", "grid", "far", "dup"].index(kind) + d)
    for t in range(8):
        n = int(rng.integers(5, 400))
        k = int(rng.integers(1, 21))
        X = _data(rng, kind, n, d)
        w = None if t % 2 == 0 else rng.uniform(0.1, 3.0, size=n)
        if t % 4 == 3 and w is not None:
            w[rng.random(n) < 0.2] = 0.0  # zero weights
        C0 = X[rng.integers(0, n, size=k)].copy()
        if t % 3 == 1:
            C0 += rng.normal(scale=0.05, size=C0.shape)
        max_iter = [1, 2, 5, 300][t % 4]
        _assert_same(X, C0, w, max_iter, 0.0 if t % 2 else 1e-6)


@pytest.mark.parametrize("seed", range(12))
def test_bounds_empty_clusters(seed):
    # k close to n and duplicated initial centers: clusters go empty and are
    # relocated (the bounds are dropped and rebuilt)
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(3, 40)), int(rng.choice([1, 2, 5, 12]))
    k = int(rng.integers(max(1, n - 3), n + 1))
    X = rng.normal(size=(n, d)) if seed % 2 else rng.integers(-1, 2, size=(n, d)) * 1.0
    C0 = np.repeat(X[:1], k, axis=0).copy()
    C0[k // 2:] += 50.0
    w = None if seed % 3 == 0 else rng.uniform(0.0, 2.0, size=n)
    _assert_same(X, C0, w, 50)


def test_bounds_server_like_problem():
    # the federated server's problem shape: ~1000 weighted points, d = k = 10
    rng = np.random.default_rng(7)
    cent = rng.normal(size=(10, 10)) * 2
    X = cent[rng.integers(0, 10, 1000)] + rng.normal(scale=0.8, size=(1000, 10))
    w = rng.integers(1, 80, size=1000).astype(float)
    for r in range(5):
        C0 = X[np.random.default_rng(r).choice(1000, 10, replace=False)].copy()
        a = _assert_same(X, C0, w, 300)
        assert a[4] >= 2  # several iterations: the bounds were used


def test_bounds_near_ties_with_shifted_centers():
    # points exactly halfway between two centers, and centers a few ulps
    # apart: the computed scores decide, the bounds must never skip them
    X = np.array([[0.0], [1.0], [0.5], [0.5 + 2**-52], [0.5 - 2**-53], [2.0], [-1.0], [0.5]])
    C0 = np.array([[0.0], [1.0], [1.0 + 2**-52]])
    _assert_same(X, C0, None, 20)
    _assert_same(X, C0, np.arange(1.0, 9.0), 20)


@pytest.mark.parametrize("d", [2, 10, 17, 40])
def test_bounds_far_near_bisector(d):
    # zero-weight probes within ~1e-8 of the bisector of the two converged
    # centers, 1e6 from the origin: the kernel's scores err by about
    # eps * 1e6 * |c - s| * d there, so the computed scores, not the exact
    # distances, decide the probes' labels; a bound test without the
    # rounding margin skips probes whose label the scan would change (this
    # test fails when the margins of fkm_lloyd_loop.c are set to 0)
    rng = np.random.default_rng(d)
    for t in range(8):
        u = rng.normal(size=d)
        u /= np.linalg.norm(u)
        core = np.vstack([1e6 + u + rng.normal(scale=0.1, size=(40, d)),
                          1e6 - u + rng.normal(scale=0.1, size=(40, d))])
        C0 = core[[0, 40]].copy()
        C1 = _run(core, C0, np.ones(80), 50, 0.0, False)[0]
        m, v = (C1[0] + C1[1]) / 2, C1[0] - C1[1]
        v /= np.linalg.norm(v)
        side = rng.normal(size=(600, d))
        side -= np.outer(side @ v, v)
        probes = m + side + np.outer(rng.normal(scale=10.0 ** -rng.integers(6, 10), size=600), v)
        X = np.vstack([core, probes])
        w = np.concatenate([np.ones(80), np.zeros(600)])
        _assert_same(X, C0, w, 50)


