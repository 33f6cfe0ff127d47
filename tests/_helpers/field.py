"""Oracles shared by the tests of pyfkm.field (tests/field/).

Nothing expected here is produced by pyfkm itself.  Expected values come from

(a) sympy's galoistools (gf_mul, gf_div, gf_gcd, gf_gcdex, gf_pow_mod, gf_diff,
    gf_eval, gf_factor, gf_sqf_list, gf_irreducible_p).  Their lists are HIGH
    degree first; pyfkm's arrays are LOW degree first; ``to_gf`` / ``from_gf``
    convert;
(b) exact Python-int arithmetic written here: schoolbook products,
    Kronecker-substitution products (one big-int multiplication, checked
    against the schoolbook in ``test_oracle_kronecker_matches_schoolbook``),
    Horner evaluation, Gaussian elimination mod p, linear complexity from ranks
    of Hankel-type systems (checked against exhaustive enumeration);
(c) planted structure: roots and irreducible factors chosen before the
    polynomial is built; sparse multisets sum_j q_j r_j^i whose connection
    polynomial is prod_j (1 - r_j z); Fermat's little theorem for x^(p^d);
(d) sympy.isprime / sympy.prevprime / sympy.factorint for the prime utilities;
(e) hand computation, written out next to each case.

Large cases (degree 3000 x 2500 products, 4000 / 1500 divisions, >= 2000
evaluation points, m = 2000 split roots, m = 3000 Vandermonde systems) make the
fast paths run.  Randomness comes from numpy.random.default_rng with fixed
seeds; Hypothesis runs derandomized.
"""
import numpy as np


# The primes of the contract, written out (not read from pyfkm).
P31 = 2**31 - 1                     # 2147483647, Mersenne prime
P61 = 2**61 - 1                     # Mersenne prime
DEFAULT = 4611615649683210241       # 65535 * 2**46 + 1, checked in test_default_prime
P63 = 2**63 - 25                    # largest prime below 2**63 (checked with sympy in tests/field/test_primes.py)
PRIMES = [2, 3, 13, P31, P61, DEFAULT]


# --------------------------------------------------------------------------
# Oracles and helpers (plain Python ints)
# --------------------------------------------------------------------------

def strip(c):
    """List of Python ints without trailing zeros (the normal form)."""
    c = [int(v) for v in c]
    while c and c[-1] == 0:
        c.pop()
    return c


def rand_poly(rng, deg, p, monic=False):
    """uint64 coefficients (low first) of a random polynomial of exact degree deg."""
    c = rng.integers(0, p, deg + 1, dtype=np.uint64)
    c[-1] = 1 if monic else rng.integers(1, p, dtype=np.uint64) if p > 2 else 1
    return c


def rand_elems(rng, n, p, low=0):
    return [int(v) for v in rng.integers(low, p, n, dtype=np.uint64)]


def distinct_elems(rng, n, p, low=1):
    """n distinct elements of [low, p) (n small relative to p - low)."""
    if p - low <= 4 * n:
        return [int(v) for v in rng.permutation(np.arange(low, p, dtype=np.int64))[:n]]
    s = set()
    while len(s) < n:
        s.update(rand_elems(rng, n - len(s), p, low))
    return sorted(s, key=lambda _: rng.random())


def monic(a, p):
    a = strip(a)
    if not a:
        return []
    inv = pow(a[-1], -1, p)
    return [v * inv % p for v in a]


def power_sums_obj(q, r, n, p):
    """S_i = sum_j q_j r_j^i mod p for i < n (object arrays, exact)."""
    v = np.array([int(x) for x in q], dtype=object)
    rr = np.array([int(x) for x in r], dtype=object)
    S = []
    for _ in range(n):
        S.append(int(v.sum()) % p)
        v = v * rr % p
    return S


def power_sums_u64(q, r, n, p):
    """Same in uint64 (p < 2**31, fewer than 2**32 terms)."""
    assert p < 2**31
    v = np.asarray(q, dtype=np.uint64).copy()
    rr = np.asarray(r, dtype=np.uint64)
    S = np.empty(n, dtype=np.uint64)
    for i in range(n):
        S[i] = v.sum() % np.uint64(p)
        v = v * rr % np.uint64(p)
    return [int(x) for x in S]


def roots_out(res):
    rts, mult = res
    assert isinstance(rts, np.ndarray) and rts.dtype == np.uint64 and rts.ndim == 1
    assert isinstance(mult, np.ndarray) and mult.dtype == np.int64 and mult.shape == rts.shape
    rts = [int(v) for v in rts]
    assert rts == sorted(rts) and len(set(rts)) == len(rts)
    return rts, [int(v) for v in mult]


# --------------------------------------------------------------------------
# Berlekamp-Massey
# --------------------------------------------------------------------------

def bm_out(C, p):
    assert isinstance(C, np.ndarray) and C.dtype == np.uint64 and C.ndim == 1
    C = [int(v) for v in C]
    assert len(C) >= 1 and C[0] == 1 and all(0 <= v < p for v in C)
    return C


def planted_bm_case(rng, m, p):
    r = distinct_elems(rng, m, p, low=1)
    q = rand_elems(rng, m, p, low=1)
    return r, q
