"""Tests of pyfkm.field.vandermonde (transposed Vandermonde solves) against
dense Gaussian elimination mod p and geometric checks.  The oracles are
described in tests/_helpers/field.py."""
import numpy as np
import pytest

from pyfkm.field import FieldError, VandermondeSolver, berlekamp_massey, roots, vandermonde_solve
from _helpers.field import (DEFAULT, P31, P61, P63, PRIMES, bm_out, distinct_elems,
                            planted_bm_case, power_sums_obj, power_sums_u64, rand_elems, roots_out)


def solve_mod_p(A, b, p):
    """Solve the square nonsingular system A x = b over F_p (Gauss-Jordan)."""
    n = len(A)
    M = [[int(v) % p for v in A[i]] + [int(b[i]) % p] for i in range(n)]
    for col in range(n):
        piv = next(i for i in range(col, n) if M[i][col])
        M[col], M[piv] = M[piv], M[col]
        inv = pow(M[col][col], -1, p)
        M[col] = [v * inv % p for v in M[col]]
        for i in range(n):
            if i != col and M[i][col]:
                f = M[i][col]
                M[i] = [(v - f * w) % p for v, w in zip(M[i], M[col])]
    return [M[i][n] for i in range(n)]


@pytest.mark.parametrize("p", [13, DEFAULT])
def test_vandermonde_bad_nodes(p):
    for nodes in ([0], [1, 0, 2], [3, 5, 3], [7, 7]):
        with pytest.raises(FieldError):
            vandermonde_solve(nodes, [1] * len(nodes), p)
        with pytest.raises(FieldError):
            VandermondeSolver(nodes, p)


def test_vandermonde_rhs_wrong_length():
    with pytest.raises(ValueError):
        vandermonde_solve([1, 2, 3], [1, 2], 13)
    with pytest.raises(ValueError):
        VandermondeSolver([1, 2, 3], 13).solve(np.ones((4, 2), dtype=np.uint64))


@pytest.mark.parametrize("p", [13, DEFAULT])
def test_failed_solve_leaves_solver_usable(p):
    solver = VandermondeSolver([1, 2, 3], p)
    rhs = np.array([4, 5, 6], dtype=np.uint64)
    before = solver.solve(rhs)
    with pytest.raises(FieldError):
        solver.solve([p, 0, 0])
    assert np.array_equal(solver.solve(rhs), before)


# --------------------------------------------------------------------------
# Vandermonde
# --------------------------------------------------------------------------

def dense_vandermonde_solve(nodes, rhs, p):
    m = len(nodes)
    A = [[pow(int(x), i, p) for x in nodes] for i in range(m)]   # A[i][j] = x_j^i
    return solve_mod_p(A, rhs, p)


def test_vandermonde_hand():
    # m = 1: c0 * x0^0 = r0
    assert [int(v) for v in vandermonde_solve([5], [7], 13)] == [7]
    # nodes 1, 2 over F_13: c0 + c1 = r0, c0 + 2 c1 = r1 -> c1 = r1 - r0, c0 = 2 r0 - r1
    c = vandermonde_solve([1, 2], [3, 10], 13)
    assert [int(v) for v in c] == [(2 * 3 - 10) % 13, (10 - 3) % 13]
    # over F_2 the only allowed node is 1
    assert [int(v) for v in vandermonde_solve([1], [1], 2)] == [1]


@pytest.mark.parametrize("p", PRIMES + [P63])
def test_vandermonde_small_dense(p):
    rng = np.random.default_rng(30)
    for m in (1, 2, 3, 5, 12, 25):
        if m > p - 1:
            continue
        nodes = distinct_elems(rng, m, p, low=1)
        rhs = rand_elems(rng, m, p)
        c = vandermonde_solve(np.array(nodes, dtype=np.uint64), rhs, p)
        assert isinstance(c, np.ndarray) and c.dtype == np.uint64 and c.shape == (m,)
        assert [int(v) for v in c] == dense_vandermonde_solve(nodes, rhs, p)
        # matrix right-hand side: each column solved independently
        R = rng.integers(0, p, (m, 3), dtype=np.uint64)
        C = vandermonde_solve(nodes, R, p)
        assert isinstance(C, np.ndarray) and C.dtype == np.uint64 and C.shape == (m, 3)
        for j in range(3):
            assert [int(v) for v in C[:, j]] == dense_vandermonde_solve(nodes, R[:, j], p)
        solver = VandermondeSolver(nodes, p)
        assert [int(v) for v in solver.solve(rhs)] == [int(v) for v in c]
        assert np.array_equal(solver.solve(R), C)


def geometric_check(nodes, c, rhs, p, rng, trials=3):
    """Randomized exact check of sum_j c_j x_j^i = rhs_i for all i < m: with
    w_i = t^i, sum_i t^i rhs_i must equal sum_j c_j ((t x_j)^m - 1) / (t x_j - 1)
    (m when t x_j = 1).  A wrong c survives one t with probability <= m / p."""
    m = len(nodes)
    for _ in range(trials):
        t = int(rng.integers(2, p, dtype=np.uint64))
        lhs = 0
        tp = 1
        for v in rhs:
            lhs = (lhs + tp * int(v)) % p
            tp = tp * t % p
        rhs_sum = 0
        for x, cj in zip(nodes, c):
            u = t * int(x) % p
            geo = m % p if u == 1 else (pow(u, m, p) - 1) * pow(u - 1, -1, p) % p
            rhs_sum = (rhs_sum + int(cj) * geo) % p
        assert lhs == rhs_sum


def test_vandermonde_large_full_check_u64():
    p, m = P31, 3000
    rng = np.random.default_rng(31)
    nodes = np.array(distinct_elems(rng, m, p, low=1), dtype=np.uint64)
    rhs = rng.integers(0, p, m, dtype=np.uint64)
    c = vandermonde_solve(nodes, rhs, p)
    assert c.dtype == np.uint64 and c.shape == (m,)
    assert power_sums_u64(c, nodes, m, p) == [int(v) for v in rhs]
    # planted: rhs built from chosen c
    c0 = rng.integers(0, p, m, dtype=np.uint64)
    rhs0 = power_sums_u64(c0, nodes, m, p)
    assert np.array_equal(vandermonde_solve(nodes, np.array(rhs0, dtype=np.uint64), p), c0)


@pytest.mark.parametrize("p", [P61, DEFAULT, P63])
def test_vandermonde_large_big_p(p):
    m = 3000
    rng = np.random.default_rng(32)
    nodes = distinct_elems(rng, m, p, low=1)
    R = rng.integers(0, p, (m, 2), dtype=np.uint64)
    C = vandermonde_solve(nodes, R, p)
    assert C.dtype == np.uint64 and C.shape == (m, 2)
    for j in range(2):
        geometric_check(nodes, C[:, j], R[:, j], p, rng)
    c1 = vandermonde_solve(nodes, R[:, 1], p)
    assert np.array_equal(c1, C[:, 1])
    # exact check of the first 40 equations
    co = np.array([int(v) for v in c1], dtype=object)
    xo = np.array(nodes, dtype=object)
    v = co.copy()
    for i in range(40):
        assert int(v.sum()) % p == int(R[i, 1])
        v = v * xo % p


def test_vandermonde_solver_reuse():
    p, m = DEFAULT, 700
    rng = np.random.default_rng(33)
    nodes = distinct_elems(rng, m, p, low=1)
    solver = VandermondeSolver(np.array(nodes, dtype=np.uint64), p)
    for k in range(4):
        rhs = rng.integers(0, p, m, dtype=np.uint64)
        c = solver.solve(rhs)
        assert np.array_equal(c, vandermonde_solve(nodes, rhs, p))
        geometric_check(nodes, c, rhs, p, rng, trials=2)
    R = rng.integers(0, p, (m, 4), dtype=np.uint64)
    assert np.array_equal(solver.solve(R), vandermonde_solve(nodes, R, p))
    # solving again with the first right-hand side gives the same answer (no state drift)
    rhs = np.arange(m, dtype=np.uint64)
    assert np.array_equal(solver.solve(rhs), solver.solve(rhs.copy()))


def test_vandermonde_connects_to_bm_and_roots():
    # decoder pipeline on a planted sparse multiset: BM -> roots -> Vandermonde gives the counts
    p, m = DEFAULT, 200
    rng = np.random.default_rng(34)
    r, q = planted_bm_case(rng, m, p)
    S = power_sums_obj(q, r, 2 * m, p)
    C = bm_out(berlekamp_massey(S, p), p)
    # C(z) = prod (1 - r_j z): its reversal z^m C(1/z) = prod (z - r_j) has roots r_j
    rts, mult = roots_out(roots(C[::-1], p, require_split=True, random_state=0))
    assert rts == sorted(r) and mult == [1] * m
    counts = vandermonde_solve(rts, S[:m], p)
    assert dict(zip(rts, (int(v) for v in counts))) == dict(zip(r, q))
