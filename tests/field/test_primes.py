"""Tests of pyfkm.field.primes: is_prime, prev_prime, ntt_prime and the Field
class, against sympy and known (pseudo)primes.  The oracles are described in
tests/_helpers/field.py."""
import functools

import numpy as np
import pytest
import sympy

from pyfkm.field import DEFAULT_PRIME, Field, FieldError, is_prime, ntt_prime, prev_prime
from _helpers.field import DEFAULT, P31, P61, P63, PRIMES, rand_elems


@pytest.mark.parametrize("p", [2, 13, DEFAULT])
def test_field_inv_zero(p):
    F = Field(p)
    with pytest.raises(FieldError):
        F.inv(0)
    with pytest.raises(FieldError):
        F.inv(np.array([1, 0, 1], dtype=np.uint64))


# --------------------------------------------------------------------------
# Prime utilities (oracle: sympy)
# --------------------------------------------------------------------------

# Carmichael numbers (Korselt's criterion is re-checked with sympy.factorint in
# test_carmichael_oracle); the last three are Chernick numbers (6k+1)(12k+1)(18k+1).
CARMICHAEL = [561, 1105, 1729, 2465, 2821, 6601, 8911, 41041, 62745, 825265, 321197185,
              5394826801, 232250619601, 9746347772161]
# Strong pseudoprimes to several small prime bases (OEIS A014233 entries).
STRONG_PSEUDOPRIMES = [2047, 1373653, 25326001, 3215031751, 2152302898747,
                       3474749660383, 341550071728321, 3825123056546413051]
KNOWN_PRIMES = [2, 3, 5, 13, 97, 65537, P31, 1000000007, 4294967291, P61, DEFAULT,
                P63, 2**64 - 59]
KNOWN_COMPOSITES = [0, 1, 4, 9, 15, 25, 2**32 + 1, 2**63 - 1, 2**64 - 1,
                    4294967291**2, P31 * 4294967291, 2**62, 3 * DEFAULT]


@functools.lru_cache(maxsize=None)
def chernick_carmichaels(count):
    """(6k+1)(12k+1)(18k+1) with all three factors prime, below 2**64 (largest k first)."""
    res = []
    k = int(round((2**64 / 1296) ** (1 / 3))) + 2
    while len(res) < count:
        n = (6 * k + 1) * (12 * k + 1) * (18 * k + 1)
        if n < 2**64 and all(sympy.isprime(f) for f in (6 * k + 1, 12 * k + 1, 18 * k + 1)):
            res.append(n)
        k -= 1
    return res


def test_carmichael_oracle():
    for n in CARMICHAEL + chernick_carmichaels(3):
        fac = sympy.factorint(n)
        assert len(fac) >= 3 and all(e == 1 for e in fac.values())
        assert all((n - 1) % (q - 1) == 0 for q in fac)


def test_is_prime_known():
    for n in KNOWN_PRIMES:
        assert sympy.isprime(n)
        assert is_prime(n) is True, n
    for n in KNOWN_COMPOSITES + CARMICHAEL + STRONG_PSEUDOPRIMES + chernick_carmichaels(3):
        assert not sympy.isprime(n)
        assert is_prime(n) is False, n


def test_is_prime_vs_sympy():
    for n in range(3000):
        assert is_prime(n) == sympy.isprime(n), n
    rng = np.random.default_rng(11)
    for bits in (20, 32, 33, 48, 62, 63, 64):
        for n in rng.integers(2**(bits - 1), 2**bits - 1, 200, dtype=np.uint64, endpoint=True):
            n = int(n) | 1
            assert is_prime(n) == sympy.isprime(n), n
    for n in list(range(2**64 - 200, 2**64)) + list(range(2**32 - 100, 2**32 + 100)):
        assert is_prime(n) == sympy.isprime(n), n
    # products of two primes near 2**32 (hard for trial division)
    for a, b in [(4294967291, 4294967279), (4294967291, 4294967291), (65521, 65519)]:
        assert is_prime(a * b) is False


def test_prev_prime():
    assert prev_prime(3) == 2
    assert prev_prime(4) == 3
    assert prev_prime(14) == 13
    assert prev_prime(2**31) == P31
    assert prev_prime(2**61) == P61
    assert prev_prime(2**63) == P63
    assert prev_prime(2**64) == 2**64 - 59
    assert prev_prime(P61) == sympy.prevprime(P61)
    rng = np.random.default_rng(12)
    cases = [int(n) for n in rng.integers(3, 2**64 - 1, 60, dtype=np.uint64, endpoint=True)]
    cases += list(range(3, 200)) + [DEFAULT, DEFAULT + 1, 2**62, 2**32]
    for n in cases:
        assert prev_prime(n) == sympy.prevprime(n), n


def ntt_prime_oracle(bits, t):
    k = (2**bits - 2) >> t
    while not sympy.isprime(k * 2**t + 1):
        k -= 1
    return k * 2**t + 1


def test_default_prime():
    assert DEFAULT_PRIME == DEFAULT == 65535 * 2**46 + 1
    assert sympy.isprime(DEFAULT)
    assert (DEFAULT - 1) % 2**40 == 0 and DEFAULT < 2**62
    assert ntt_prime_oracle(62, 40) == DEFAULT
    assert ntt_prime(62, 40) == DEFAULT


@pytest.mark.parametrize("bits,t", [(62, 40), (63, 32), (31, 20), (32, 16), (50, 25),
                                    (20, 10), (61, 1), (40, 30), (63, 1), (8, 2),
                                    (64, 40), (64, 1)])
def test_ntt_prime(bits, t):
    p = ntt_prime(bits, t)
    assert p == ntt_prime_oracle(bits, t)
    assert p < 2**bits and (p - 1) % 2**t == 0 and sympy.isprime(p)


# --------------------------------------------------------------------------
# Field (oracle: Python ints)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("p", PRIMES + [P63])
def test_field_scalars(p):
    F = Field(p)
    assert F.p == p
    rng = np.random.default_rng(p % 1000)
    vals = [0, 1, p - 1, p // 2] + rand_elems(rng, 20, p)
    for a in vals:
        assert int(F.neg(a)) == (-a) % p
        if a:
            assert int(F.inv(a)) == pow(a, -1, p)
        for e in (0, 1, 2, 5, p - 1, p, 2**64 - 1):
            assert int(F.pow(a, e)) == pow(a, e, p), (a, e)
        for b in vals[:8]:
            assert int(F.add(a, b)) == (a + b) % p
            assert int(F.sub(a, b)) == (a - b) % p
            assert int(F.mul(a, b)) == (a * b) % p


@pytest.mark.parametrize("p", [13, DEFAULT])
def test_field_pow_huge_exponent(p):
    F = Field(p)
    for e in (2**64, 2**64 + 1, 2**200 + 12345, 3**100):
        for a in (0, 1, 2, p - 1, 12):
            assert int(F.pow(a, e)) == pow(a, e, p)
        arr = np.array([1, 2, 3, p - 1], dtype=np.uint64)
        assert [int(v) for v in F.pow(arr, e)] == [pow(int(a), e, p) for a in arr]


@pytest.mark.parametrize("p", PRIMES + [P63])
def test_field_arrays(p):
    F = Field(p)
    rng = np.random.default_rng(7)
    a = rng.integers(0, p, 1000, dtype=np.uint64)
    b = rng.integers(0, p, 1000, dtype=np.uint64)
    a[:3] = [0, p - 1, p - 1]
    b[:3] = [p - 1, p - 1, 0]
    ao, bo = a.astype(object), b.astype(object)

    def chk(res, exp):
        res = np.asarray(res)
        assert res.dtype == np.uint64 and res.shape == a.shape
        assert [int(v) for v in res] == [int(v) for v in exp]

    chk(F.add(a, b), (ao + bo) % p)
    chk(F.sub(a, b), (ao - bo) % p)
    chk(F.neg(a), (-ao) % p)
    chk(F.mul(a, b), (ao * bo) % p)
    chk(F.pow(a, 12345), [pow(int(v), 12345, p) for v in a])
    nz = a.copy()
    nz[nz == 0] = 1
    res = np.asarray(F.inv(nz))
    assert res.dtype == np.uint64
    assert [int(v) for v in res] == [pow(int(v), -1, p) for v in nz]
    # broadcasting a scalar against an array
    assert [int(v) for v in F.mul(a, 3 % p)] == [int(v) * (3 % p) % p for v in a]
