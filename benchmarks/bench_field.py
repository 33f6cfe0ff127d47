"""Microbenchmarks of the prime-field polynomial kernels of :mod:`pyfkm.field`.

Run with ``python -m pytest benchmarks/bench_field.py --benchmark-only``
(add ``--benchmark-columns=median,iqr,rounds`` for a compact table), or with
``--benchmark-disable`` to run every kernel once as a smoke test.

All kernels work modulo ``pyfkm.field.DEFAULT_PRIME`` (62 bits, NTT friendly),
single-threaded.  Groups:

* ``poly_mul``: two random polynomials of degree 1000, and of degree 10000.
* ``poly_divmod``: random degree 4000 by random degree 2000.
* ``poly_powmod``: b^p mod f for a random b of degree < 1000 and f a product
  of 1000 distinct linear factors (the Frobenius step of root finding).
* ``berlekamp_massey``: the 2m = 2000 power sums S_i = sum_j q_j r_j^i of
  m = 1000 planted roots with multiplicities q_j in [1, 50] (the decoder's
  syndromes).
* ``roots``: ``require_split=True`` on prod (y - r_j), m = 1000.
* ``factor``: a random monic polynomial of degree 200.
* ``crossover``: each decoder fast path against its quadratic twin on both
  sides of its default crossover (issue 22): Berlekamp-Massey on random
  sequences of 6000 and 8000 terms (Massey's iteration vs the Pade form by
  half-gcd), gcd of random degrees n, n - 1 for n = 2048 and 3072
  (classical Euclid vs half-gcd).
* ``vandermonde``: ``vandermonde_solve`` of those syndromes (m = 1000), and
  11 right-hand sides at once: the function on an (m, 11) array, and
  ``VandermondeSolver.solve`` on a solver built once (the reuse case).

Every benchmark checks its result cheaply (Python-int arithmetic on a few
coefficients or points), so the file also passes under
``--benchmark-disable``.  Timings are wall clock; on a busy machine add
``--benchmark-timer=time.process_time``.
"""
import numpy as np
import pytest

from pyfkm import field

pytestmark = pytest.mark.usefixtures("one_thread")

P = field.DEFAULT_PRIME
M = 1000          # planted roots of the decoder workload
N_RHS = 11        # right-hand sides of the VandermondeSolver reuse case


# --------------------------------------------------------------------------- helpers

def _rand_poly(rng, deg, monic=False):
    """Random polynomial of exact degree ``deg`` (uint64, low degree first)."""
    c = rng.integers(0, P, size=deg + 1, dtype=np.uint64)
    c[-1] = 1 if monic else rng.integers(1, P, dtype=np.uint64)
    return c


def _horner(coeffs, x):
    """f(x) mod P with Python ints: the independent check of a result."""
    acc = 0
    for c in reversed([int(v) for v in coeffs]):
        acc = (acc * x + c) % P
    return acc


def _product_linear(xs):
    """prod (y - x_j) with a product tree of poly_mul (setup only, not timed)."""
    level = [np.array([(P - int(x)) % P, 1], dtype=np.uint64) for x in xs]
    while len(level) > 1:
        nxt = [field.poly_mul(a, b, P) for a, b in zip(level[0::2], level[1::2])]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


@pytest.fixture(scope="module")
def decoder():
    """m = 1000 planted roots (sorted), multiplicities, 2m syndromes, f = prod (y - r_j)."""
    rng = np.random.default_rng(0)
    roots = set()
    while len(roots) < M:
        roots.update(int(v) for v in rng.integers(1, P, size=M - len(roots), dtype=np.uint64))
    roots = sorted(roots)
    mult = [int(v) for v in rng.integers(1, 51, size=M)]
    # direct power sums, O(m^2) Python ints (~0.5 s, once per module)
    x = list(mult)
    s = []
    for _ in range(2 * M):
        s.append(sum(x) % P)
        x = [a * r % P for a, r in zip(x, roots)]
    return {
        "roots": np.array(roots, dtype=np.uint64),
        "mult": np.array(mult, dtype=np.uint64),
        "s": np.array(s, dtype=np.uint64),
        "f": _product_linear(roots),
    }


# --------------------------------------------------------------------------- arithmetic

@pytest.mark.parametrize("deg", [1000, 10000])
def test_poly_mul(benchmark, deg):
    benchmark.group = f"poly_mul deg={deg}"
    rng = np.random.default_rng(deg)
    a, b = _rand_poly(rng, deg), _rand_poly(rng, deg)
    c = benchmark(field.poly_mul, a, b, P)
    assert c.dtype == np.uint64 and len(c) == 2 * deg + 1
    x = 123456789
    assert _horner(c, x) == _horner(a, x) * _horner(b, x) % P


def test_poly_divmod(benchmark):
    benchmark.group = "poly_divmod 4000/2000"
    rng = np.random.default_rng(1)
    a, b = _rand_poly(rng, 4000), _rand_poly(rng, 2000)
    q, r = benchmark(field.poly_divmod, a, b, P)
    assert len(q) == 2001 and len(r) <= 2000
    x = 987654321
    assert _horner(a, x) == (_horner(q, x) * _horner(b, x) + _horner(r, x)) % P


def test_poly_powmod(benchmark, decoder):
    """b^p mod f == b for every b when f splits into distinct linear factors (Frobenius)."""
    benchmark.group = f"poly_powmod b^p mod f deg={M}"
    f = decoder["f"]
    b = _rand_poly(np.random.default_rng(2), M - 1)
    out = benchmark(field.poly_powmod, b, P, f, P)
    assert np.array_equal(out, b)


# --------------------------------------------------------------------------- decoder

def test_berlekamp_massey(benchmark, decoder):
    benchmark.group = f"berlekamp_massey m={M} (2m terms)"
    C = benchmark(field.berlekamp_massey, decoder["s"], P)
    assert len(C) == M + 1 and int(C[0]) == 1
    assert np.array_equal(C[::-1], decoder["f"])  # reverse(C) is the monic minimal polynomial


def test_roots_require_split(benchmark, decoder):
    benchmark.group = f"roots require_split m={M}"
    x, e = benchmark(field.roots, decoder["f"], P, require_split=True, random_state=0)
    assert np.array_equal(x, decoder["roots"])
    assert len(e) == M and np.all(e == 1)


@pytest.mark.parametrize("path", ["quadratic", "fast"])
@pytest.mark.parametrize("n", [6000, 8000])
def test_crossover_berlekamp_massey(benchmark, n, path):
    from pyfkm._core import _field as kernels
    benchmark.group = f"crossover berlekamp_massey N={n} random"
    s = np.random.default_rng(n).integers(0, P, n, dtype=np.uint64)
    C = benchmark(kernels.berlekamp_massey_path, s, P, -1 if path == "quadratic" else 64)
    assert int(C[0]) == 1 and len(C) - 1 <= n


@pytest.mark.parametrize("path", ["quadratic", "fast"])
@pytest.mark.parametrize("n", [2048, 3072])
def test_crossover_gcd(benchmark, n, path):
    from pyfkm._core import _field as kernels
    benchmark.group = f"crossover gcd deg={n},{n - 1} random"
    rng = np.random.default_rng(n)
    a = rng.integers(0, P, n + 1, dtype=np.uint64)
    b = rng.integers(0, P, n, dtype=np.uint64)
    a[-1] = a[-1] or 1
    g = benchmark(kernels.gcd_path, a, b, P, -1 if path == "quadratic" else 64)
    assert len(g) >= 1 and int(g[-1]) == 1


def test_factor(benchmark):
    benchmark.group = "factor deg=200 random"
    f = _rand_poly(np.random.default_rng(3), 200)
    lc, factors = benchmark(field.factor, f, P, random_state=0)
    assert lc == int(f[-1])
    assert sum((len(g) - 1) * k for g, k in factors) == 200
    assert all(int(g[-1]) == 1 for g, _ in factors)
    x = 31415926535
    value = lc
    for g, k in factors:
        value = value * pow(_horner(g, x), k, P) % P
    assert value == _horner(f, x)


class TestVandermonde:
    def test_vandermonde_solve(self, benchmark, decoder):
        benchmark.group = f"vandermonde_solve m={M}"
        rhs = decoder["s"][:M].copy()
        c = benchmark(field.vandermonde_solve, decoder["roots"], rhs, P)
        assert np.array_equal(c, decoder["mult"])

    @pytest.fixture(scope="class")
    def rhs(self):
        return np.random.default_rng(4).integers(0, P, size=(M, N_RHS), dtype=np.uint64)

    @staticmethod
    def _check(nodes, rhs, c):
        """Rows i = 0, 1 and m - 1 of sum_j c[j, k] x_j^i == rhs[i, k], for every column k."""
        assert c.shape == rhs.shape
        xs = [int(v) for v in nodes]
        for i in (0, 1, M - 1):
            powers = [pow(x, i, P) for x in xs]
            for k in range(rhs.shape[1]):
                got = sum(int(cj) * w for cj, w in zip(c[:, k], powers)) % P
                assert got == int(rhs[i, k]), (i, k)

    def test_vandermonde_solve_2d(self, benchmark, decoder, rhs):
        benchmark.group = f"vandermonde m={M} r={N_RHS}"
        c = benchmark(field.vandermonde_solve, decoder["roots"], rhs, P)
        self._check(decoder["roots"], rhs, c)

    def test_solver_reuse(self, benchmark, decoder, rhs):
        benchmark.group = f"vandermonde m={M} r={N_RHS}"
        solver = field.VandermondeSolver(decoder["roots"], P)
        c = benchmark(solver.solve, rhs)
        self._check(decoder["roots"], rhs, c)

    def test_solver_build(self, benchmark, decoder):
        benchmark.group = f"vandermonde m={M} r={N_RHS}"
        solver = benchmark(field.VandermondeSolver, decoder["roots"], P)
        c = solver.solve(decoder["s"][:M])
        assert np.array_equal(c, decoder["mult"])
