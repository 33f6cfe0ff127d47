"""Tests of pyfkm.field.poly (polynomial algebra over F_p): products,
division, gcd, powmod, derivative, evaluation, Berlekamp-Massey, roots,
factoring, square-free factoring, and Hypothesis properties.  The oracles
are described in tests/_helpers/field.py."""
import itertools

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from sympy.polys.domains import ZZ
from sympy.polys.galoistools import (
    gf_diff,
    gf_div,
    gf_eval,
    gf_factor,
    gf_gcd,
    gf_gcdex,
    gf_irreducible_p,
    gf_mul,
    gf_pow_mod,
    gf_sqf_list,
)

from pyfkm.field import (DecodeError, berlekamp_massey, factor, poly_derivative, poly_divmod,
                         poly_eval, poly_gcd, poly_mul, poly_powmod, poly_xgcd, roots,
                         squarefree_factorization)
from _helpers.field import (DEFAULT, P31, P61, P63, PRIMES, bm_out, distinct_elems, monic,
                            planted_bm_case, power_sums_obj, power_sums_u64, rand_elems,
                            rand_poly, roots_out, strip)


SMALL_PRIMES = [2, 3, 13]
BIG_PRIMES = [P31, P61, DEFAULT]

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)


def to_gf(a):
    """Low-first coefficients -> sympy galoistools list (high first)."""
    return [ZZ(v) for v in reversed(strip(a))]


def from_gf(g):
    """sympy galoistools list (high first) -> low-first list of ints."""
    return strip(int(v) for v in reversed(g))


def out(a):
    """Check a returned polynomial (normalized 1-D uint64) and return it as ints."""
    assert isinstance(a, np.ndarray), type(a)
    assert a.dtype == np.uint64, a.dtype
    assert a.ndim == 1
    lst = [int(v) for v in a]
    assert not lst or lst[-1] != 0, "output has trailing zeros"
    return lst


def schoolbook_mul(a, b, p):
    a, b = strip(a), strip(b)
    if not a or not b:
        return []
    c = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                c[i + j] += x * y
    return strip(v % p for v in c)


def schoolbook_mul_u64(a, b, p):
    """Schoolbook product with numpy uint64 rows; needs p < 2**31 (no overflow)."""
    assert p < 2**31
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    c = np.zeros(len(a) + len(b) - 1, dtype=np.uint64)
    for i, x in enumerate(a):
        c[i:i + len(b)] = (c[i:i + len(b)] + (x * b) % np.uint64(p)) % np.uint64(p)
    return strip(c)


def kron_mul(a, b, p):
    """Exact product by Kronecker substitution: pack, one big-int multiply, unpack."""
    a, b = strip(a), strip(b)
    if not a or not b:
        return []
    bound = min(len(a), len(b)) * (p - 1) ** 2
    nb = max(1, (bound.bit_length() + 7) // 8)
    A = int.from_bytes(b"".join(v.to_bytes(nb, "little") for v in a), "little")
    B = int.from_bytes(b"".join(v.to_bytes(nb, "little") for v in b), "little")
    n = len(a) + len(b) - 1
    raw = (A * B).to_bytes(n * nb, "little")
    return strip(int.from_bytes(raw[k * nb:(k + 1) * nb], "little") % p for k in range(n))


def padd(a, b, p):
    a, b = strip(a), strip(b)
    n = max(len(a), len(b))
    a += [0] * (n - len(a))
    b += [0] * (n - len(b))
    return strip((x + y) % p for x, y in zip(a, b))


def prod_polys(polys, p):
    """Product of a list of polynomials (product tree of Kronecker products)."""
    polys = [strip(f) for f in polys]
    if not polys:
        return [1]
    while len(polys) > 1:
        nxt = [kron_mul(polys[i], polys[i + 1], p) for i in range(0, len(polys) - 1, 2)]
        if len(polys) % 2:
            nxt.append(polys[-1])
        polys = nxt
    return polys[0]


def from_roots(rs, p, lc=1):
    """lc * prod (x - r) over the list rs (repetitions allowed)."""
    return prod_polys([[lc % p]] + [[(-int(r)) % p, 1] for r in rs], p)


def horner(f, x, p):
    acc = 0
    for c in reversed(strip(f)):
        acc = (acc * x + c) % p
    return acc


def horner_many_obj(f, xs, p):
    """Horner on an object array of Python ints (exact, vectorized)."""
    xs = np.array([int(v) for v in xs], dtype=object)
    acc = np.zeros(len(xs), dtype=object)
    for c in reversed(strip(f)):
        acc = (acc * xs + c) % p
    return [int(v) for v in acc]


def horner_many_u64(f, xs, p):
    """Horner in uint64; needs p < 2**31 (acc * x < 2**62)."""
    assert p < 2**31
    xs = np.asarray(xs, dtype=np.uint64)
    acc = np.zeros(len(xs), dtype=np.uint64)
    for c in reversed(strip(f)):
        acc = (acc * xs + np.uint64(c)) % np.uint64(p)
    return [int(v) for v in acc]


def rank_mod_p(rows, p):
    """Rank over F_p of a list of rows (Gaussian elimination; zero columns allowed)."""
    M = [[int(v) % p for v in r] for r in rows]
    if not M or not M[0]:
        return 0
    ncol = len(M[0])
    rank = 0
    for col in range(ncol):
        piv = next((i for i in range(rank, len(M)) if M[i][col]), None)
        if piv is None:
            continue
        M[rank], M[piv] = M[piv], M[rank]
        inv = pow(M[rank][col], -1, p)
        M[rank] = [v * inv % p for v in M[rank]]
        for i in range(len(M)):
            if i != rank and M[i][col]:
                f = M[i][col]
                M[i] = [(v - f * w) % p for v, w in zip(M[i], M[rank])]
        rank += 1
    return rank


def linear_complexity(s, p):
    """Smallest L such that some C with C[0] = 1, deg C <= L satisfies
    sum_k C[k] s[i-k] = 0 for L <= i < N: the system in C[1..L] is consistent
    iff rank(A) == rank([A | b])."""
    s = [int(v) for v in s]
    N = len(s)
    for L in range(N + 1):
        aug = [[s[i - k] for k in range(1, L + 1)] + [(-s[i]) % p] for i in range(L, N)]
        A = [r[:-1] for r in aug]
        if rank_mod_p(A, p) == rank_mod_p(aug, p):
            return L
    raise AssertionError("unreachable: L = N always works")


def linear_complexity_enum(s, p):
    """The same by exhaustive enumeration of all C (tiny p and N only)."""
    s = [int(v) for v in s]
    for L in range(len(s) + 1):
        for tail in itertools.product(range(p), repeat=L):
            C = (1,) + tail
            if all(sum(C[k] * s[i - k] for k in range(L + 1)) % p == 0
                   for i in range(L, len(s))):
                return L
    raise AssertionError("unreachable")


def check_recurrence(C, s, p):
    C = [int(v) for v in C]
    s = [int(v) for v in s]
    assert C[0] == 1
    assert all(0 <= v < p for v in C)
    L = len(C) - 1
    for i in range(L, len(s)):
        assert sum(C[k] * s[i - k] for k in range(L + 1)) % p == 0, i


def gf_factor_lists(f, p):
    """sympy's factorization as (lc, [(low-first factor, exponent)]) in pyfkm's order."""
    lc, facs = gf_factor(to_gf(f), p, ZZ)
    facs = [(from_gf(g), int(e)) for g, e in facs]
    return int(lc), sorted(facs, key=lambda fe: (len(fe[0]), tuple(fe[0])))


def check_factor_output(res, p):
    lc, facs = res
    facs = [(out(g), int(e)) for g, e in facs]
    for g, e in facs:
        assert len(g) >= 2 and g[-1] == 1 and e >= 1
    keys = [(len(g), tuple(g)) for g, _ in facs]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    return int(lc), facs


def multiplicity_oracle(f, p):
    """{root: multiplicity} from sympy's factorization (exponents of linear factors)."""
    _, facs = gf_factor_lists(f, p)
    return {(-g[0]) % p: e for g, e in facs if len(g) == 2}


def root_multiplicity(f, r, p):
    """Number of times (x - r) divides f (repeated synthetic division)."""
    f = strip(f)
    k = 0
    while f:
        q = [0] * (len(f) - 1)
        acc = 0
        for i in range(len(f) - 1, 0, -1):
            acc = (acc * r + f[i]) % p
            q[i - 1] = acc
        if (acc * r + f[0]) % p:
            return k
        f = strip(q)
        k += 1
    raise AssertionError("zero polynomial")


def random_irreducible(rng, deg, p):
    """Monic irreducible of degree deg, by rejection with sympy's gf_irreducible_p."""
    while True:
        g = [int(v) for v in rand_poly(rng, deg, p, monic=True)]
        if gf_irreducible_p(to_gf(g), p, ZZ):
            return g


def check_divmod(a, b, q, r, p):
    q, r = out(q), out(r)
    assert len(r) < len(strip(b))
    assert padd(kron_mul(q, b, p), r, p) == strip(a)
    return q, r


# --------------------------------------------------------------------------
# Oracle self-checks
# --------------------------------------------------------------------------

def test_oracle_kronecker_matches_schoolbook():
    rng = np.random.default_rng(0)
    for p in PRIMES + [P63]:
        for _ in range(10):
            a = rand_poly(rng, int(rng.integers(0, 70)), p)
            b = rand_poly(rng, int(rng.integers(0, 70)), p)
            assert kron_mul(a, b, p) == schoolbook_mul(a, b, p) == \
                from_gf(gf_mul(to_gf(a), to_gf(b), p, ZZ))
    a = rand_poly(rng, 400, P31)
    b = rand_poly(rng, 300, P31)
    assert schoolbook_mul_u64(a, b, P31) == kron_mul(a, b, P31)


def test_oracle_linear_complexity_matches_enumeration():
    for p, nmax in ((2, 6), (3, 4)):
        for n in range(nmax + 1):
            for s in itertools.product(range(p), repeat=n):
                assert linear_complexity(s, p) == linear_complexity_enum(s, p), s


# --------------------------------------------------------------------------
# poly_mul
# --------------------------------------------------------------------------

def test_poly_mul_hand():
    # (1 + x)^2 = 1 + 2x + x^2; over F_2 the middle term vanishes.
    assert out(poly_mul([1, 1], [1, 1], 13)) == [1, 2, 1]
    assert out(poly_mul([1, 1], [1, 1], 2)) == [1, 0, 1]
    # (x - 1)(x + 1) = x^2 - 1 = x^2 + 12 over F_13
    assert out(poly_mul([12, 1], [1, 1], 13)) == [12, 0, 1]
    # (2**61 - 2) * (2**61 - 2) = (-1)(-1) = 1 over F_{2**61 - 1}
    assert out(poly_mul([P61 - 1], [P61 - 1], P61)) == [1]


@pytest.mark.parametrize("p", [2, 13, DEFAULT])
def test_poly_mul_zero_and_constants(p):
    for z in ([], [0], [0, 0], np.zeros(3, dtype=np.uint64)):
        assert out(poly_mul(z, [1, 2 % p, 1], p)) == []
        assert out(poly_mul([1, 1], z, p)) == []
        assert out(poly_mul(z, z, p)) == []
    assert out(poly_mul([1], [1], p)) == [1]
    assert out(poly_mul([p - 1], [0, 1], p)) == [0, p - 1]


@pytest.mark.parametrize("p", PRIMES + [P63])
def test_poly_mul_random(p):
    rng = np.random.default_rng(1)
    for _ in range(25):
        a = rand_poly(rng, int(rng.integers(0, 60)), p)
        b = rand_poly(rng, int(rng.integers(0, 60)), p)
        exp = from_gf(gf_mul(to_gf(a), to_gf(b), p, ZZ))
        assert out(poly_mul(a, b, p)) == exp
        # other input forms: Python lists, trailing zeros, int64 arrays
        assert out(poly_mul([int(v) for v in a] + [0, 0], list(b), p)) == exp
        assert out(poly_mul(a.astype(np.int64), b, p)) == exp


@pytest.mark.parametrize("p", PRIMES + [P63])
@pytest.mark.parametrize("da,db", [(3000, 2500), (5000, 17), (1, 4000), (1025, 1023)])
def test_poly_mul_large(p, da, db):
    rng = np.random.default_rng(da + db)
    a = rand_poly(rng, da, p)
    b = rand_poly(rng, db, p)
    res = out(poly_mul(a, b, p))
    if p < 2**31:
        assert res == schoolbook_mul_u64(a, b, p)
    else:
        assert res == kron_mul(a, b, p)
    assert out(poly_mul(b, a, p)) == res


# Primes whose p - 1 has a large power of two (transform-friendly), small and large,
# including ones above 2**62 (values near 4p no longer fit in 64 bits there); written
# out, each checked with sympy.isprime and its 2-adicity in the test.
NTT_FRIENDLY = [
    (12289, 12),                    # 3 * 2**12 + 1 (too little 2-adicity for long products)
    (65537, 16),                    # 2**16 + 1
    (7340033, 20),                  # 7 * 2**20 + 1
    (998244353, 23),                # 119 * 2**23 + 1
    (1125845146009601, 30),         # ntt_prime(50, 30)
    (4601552919265804289, 50),      # ntt_prime(62, 50)
    (7097673012735901697, 55),      # ntt_prime(63, 55)
    (9198602238904238081, 50),      # ntt_prime(63, 50)
    (9223369837831520257, 40),      # ntt_prime(63, 40)
    (9223372036836950017, 20),      # ntt_prime(63, 20)
]


@pytest.mark.parametrize("p,t", NTT_FRIENDLY)
def test_poly_mul_transform_friendly_primes(p, t):
    assert sympy.isprime(p) and (p - 1) % 2**t == 0
    rng = np.random.default_rng(t)
    for da, db in ((3000, 2500), (700, 9), (4096, 4095)):
        a = rand_poly(rng, da, p)
        b = rand_poly(rng, db, p)
        assert out(poly_mul(a, b, p)) == kron_mul(a, b, p), (da, db)
    # extreme coefficients: all equal to p - 1
    a = np.full(2049, p - 1, dtype=np.uint64)
    b = np.full(2000, p - 1, dtype=np.uint64)
    assert out(poly_mul(a, b, p)) == kron_mul(a, b, p)
    assert out(poly_mul(a, a, p)) == kron_mul(a, a, p)
    # division (Newton iteration runs on products) and multipoint evaluation
    a = rand_poly(rng, 4000, p)
    b = rand_poly(rng, 1500, p)
    q, r = poly_divmod(a, b, p)
    check_divmod(a, b, q, r, p)
    xs = rng.integers(0, p, 2048, dtype=np.uint64)
    f = rand_poly(rng, 2100, p)
    v = poly_eval(f, xs, p)
    assert [int(y) for y in v[::64]] == horner_many_obj(f, xs[::64], p)


@pytest.mark.parametrize("p", [2, 3, 13, P31, P61, DEFAULT, P63])
def test_poly_ops_extreme_coefficients(p):
    # every coefficient p - 1 (largest reduced value) for the arithmetic paths
    big = np.full(3000, p - 1, dtype=np.uint64)
    mid = np.full(1200, p - 1, dtype=np.uint64)
    assert out(poly_mul(big, mid, p)) == kron_mul(big, mid, p)
    q, r = poly_divmod(big, mid, p)
    check_divmod(big, mid, q, r, p)
    xs = np.full(2000, p - 1, dtype=np.uint64)
    xs[::2] = 1
    v = poly_eval(mid, xs, p)
    assert [int(y) for y in v[:4]] == [horner(mid, int(x), p) for x in xs[:4]]
    assert len(set(int(y) for y in v[::2])) == 1 and len(set(int(y) for y in v[1::2])) == 1
    s = np.full(40, p - 1, dtype=np.uint64)
    C = bm_out(berlekamp_massey(s, p), p)
    assert C == [1, p - 1]          # constant sequence: s_i = s_{i-1}
    assert out(poly_powmod(mid, 2**65 + 3, big[:7], p)) == \
        from_gf(gf_pow_mod(to_gf(mid), 2**65 + 3, to_gf(big[:7]), p, ZZ))


def test_poly_mul_large_against_python_schoolbook():
    # one big product against the literal Python-int schoolbook, for the NTT prime
    rng = np.random.default_rng(5)
    a = rand_poly(rng, 700, DEFAULT)
    b = rand_poly(rng, 600, DEFAULT)
    assert out(poly_mul(a, b, DEFAULT)) == schoolbook_mul(a, b, DEFAULT)


# --------------------------------------------------------------------------
# poly_divmod
# --------------------------------------------------------------------------

def test_poly_divmod_hand():
    # x^2 - 1 = (x + 1)(x - 1) over F_13
    q, r = poly_divmod([12, 0, 1], [12, 1], 13)
    assert out(q) == [1, 1] and out(r) == []
    # x^3 + 1 = (x + 1)(x^2 + x + 1) over F_2
    q, r = poly_divmod([1, 0, 0, 1], [1, 1], 2)
    assert out(q) == [1, 1, 1] and out(r) == []
    # x^3 + x^2 + 1 = x (x^2 + x) + 1 over F_2
    q, r = poly_divmod([1, 0, 1, 1], [0, 1, 1], 2)
    assert out(q) == [0, 1] and out(r) == [1]
    # 5 / 3 = 5 * 9 = 45 = 6 mod 13
    q, r = poly_divmod([5], [3], 13)
    assert out(q) == [6] and out(r) == []


@pytest.mark.parametrize("p", [2, 13, DEFAULT])
def test_poly_divmod_small_cases(p):
    q, r = poly_divmod([], [1, 1], p)
    assert out(q) == [] and out(r) == []
    q, r = poly_divmod([1, 2 % p], [0, 0, 1], p)  # deg a < deg b: q = 0, r = a
    assert out(q) == [] and out(r) == strip([1, 2 % p])
    q, r = poly_divmod([1, 1, 0, 0], [1, 1], p)  # trailing zeros ignored
    assert out(q) == [1] and out(r) == []


@pytest.mark.parametrize("p", PRIMES + [P63])
def test_poly_divmod_random(p):
    rng = np.random.default_rng(2)
    for _ in range(25):
        a = rand_poly(rng, int(rng.integers(0, 60)), p)
        b = rand_poly(rng, int(rng.integers(0, 40)), p)
        q_exp, r_exp = gf_div(to_gf(a), to_gf(b), p, ZZ)
        q, r = poly_divmod(a, b, p)
        assert out(q) == from_gf(q_exp)
        assert out(r) == from_gf(r_exp)


@pytest.mark.parametrize("p", [13, P31, P61, DEFAULT, P63])
@pytest.mark.parametrize("da,db", [(4000, 1500), (4000, 3990), (6000, 3000), (4000, 1),
                                   (5000, 0), (3000, 64)])
def test_poly_divmod_large(p, da, db):
    rng = np.random.default_rng(da * 7 + db)
    a = rand_poly(rng, da, p)
    b = rand_poly(rng, db, p)
    q, r = poly_divmod(a, b, p)
    q, r = check_divmod(a, b, q, r, p)
    assert len(q) == da - db + 1
    # exact multiple: remainder zero, quotient recovered
    c = rand_poly(rng, da - db, p)
    q2, r2 = poly_divmod(kron_mul(c, b, p), b, p)
    assert out(r2) == [] and out(q2) == strip(c)


# --------------------------------------------------------------------------
# poly_gcd / poly_xgcd
# --------------------------------------------------------------------------

@pytest.mark.parametrize("p", [2, 13, DEFAULT])
def test_poly_gcd_edge(p):
    assert out(poly_gcd([], [], p)) == []
    assert out(poly_gcd([0, 0], [0], p)) == []
    a = [3 % p, 2 % p, p - 1]          # leading coefficient -1
    assert out(poly_gcd(a, [], p)) == monic(a, p)
    assert out(poly_gcd([], a, p)) == monic(a, p)
    assert out(poly_gcd([p - 1], [0, 1], p)) == [1]   # a nonzero constant is a unit
    assert out(poly_gcd([0, 1], [0, 0, 1], p)) == [0, 1]


@pytest.mark.parametrize("p", PRIMES + [P63])
def test_poly_gcd_random(p):
    rng = np.random.default_rng(3)
    for _ in range(20):
        c = rand_poly(rng, int(rng.integers(0, 8)), p)
        u = rand_poly(rng, int(rng.integers(0, 25)), p)
        v = rand_poly(rng, int(rng.integers(0, 25)), p)
        a, b = kron_mul(c, u, p), kron_mul(c, v, p)
        g = out(poly_gcd(a, b, p))
        assert g == from_gf(gf_gcd(to_gf(a), to_gf(b), p, ZZ))
        # the planted factor divides the gcd
        assert from_gf(gf_div(to_gf(g), to_gf(c), p, ZZ)[1]) == []


@pytest.mark.parametrize("p", PRIMES + [P63])
def test_poly_xgcd_random(p):
    rng = np.random.default_rng(4)
    for k in range(20):
        c = rand_poly(rng, int(rng.integers(0, 6)), p)
        a = kron_mul(c, rand_poly(rng, int(rng.integers(0, 20)), p), p)
        b = kron_mul(c, rand_poly(rng, int(rng.integers(0, 20)), p), p)
        if k == 0:
            a = []
        if k == 1:
            b = []
        g, s, t = poly_xgcd(a, b, p)
        g, s, t = out(g), out(s), out(t)
        assert g == from_gf(gf_gcd(to_gf(a), to_gf(b), p, ZZ))
        if a and b:
            # sympy's cofactors need not equal ours (they are not unique); its gcd must
            assert g == from_gf(gf_gcdex(to_gf(a), to_gf(b), p, ZZ)[2])
        assert padd(schoolbook_mul(s, a, p), schoolbook_mul(t, b, p), p) == g


@pytest.mark.parametrize("p", [2, 13, DEFAULT])
def test_poly_xgcd_edge(p):
    g, s, t = poly_xgcd([], [], p)
    assert out(g) == []
    g, s, t = poly_xgcd([0, 2 % p or 1], [], p)
    assert out(g) == [0, 1]
    assert padd(schoolbook_mul(out(s), [0, 2 % p or 1], p), [], p) == [0, 1]


@pytest.mark.parametrize("p", [P31, DEFAULT])
def test_poly_gcd_large_certificate(p):
    # g = gcd(a, b) is certified by: g monic, g | a, g | b, s a + t b = g.
    rng = np.random.default_rng(6)
    c = rand_poly(rng, 500, p, monic=True)
    a = kron_mul(c, rand_poly(rng, 1500, p), p)
    b = kron_mul(c, rand_poly(rng, 1400, p), p)
    g = out(poly_gcd(a, b, p))
    g2, s, t = poly_xgcd(a, b, p)
    assert out(g2) == g
    assert g[-1] == 1
    assert padd(kron_mul(out(s), a, p), kron_mul(out(t), b, p), p) == g
    for x, d in ((a, g), (b, g), (g, strip(c))):   # g | a, g | b, and c | g
        q, r = poly_divmod(x, d, p)
        assert out(r) == []
        assert kron_mul(out(q), d, p) == strip(x)


# --------------------------------------------------------------------------
# poly_powmod
# --------------------------------------------------------------------------

EXPONENTS = [0, 1, 2, 3, 1000003, 2**63 - 1, 2**64 - 1, 2**64, 2**64 + 1, 2**200 + 12345]


@pytest.mark.parametrize("p", PRIMES + [P63])
def test_poly_powmod_random(p):
    rng = np.random.default_rng(8)
    for k in range(4):
        f = rand_poly(rng, int(rng.integers(1, 15)), p)
        dbase = int(rng.integers(0, 2 * len(f)))   # sometimes deg base >= deg f
        base = rand_poly(rng, dbase, p)
        for e in EXPONENTS + [int(rng.integers(0, 2**62))]:
            exp = from_gf(gf_pow_mod(to_gf(base), e, to_gf(f), p, ZZ))
            assert out(poly_powmod(base, e, f, p)) == exp, (k, e)


@pytest.mark.parametrize("p", [2, 13, DEFAULT])
def test_poly_powmod_edge(p):
    assert out(poly_powmod([0, 1], 0, [1, 1], p)) == [1]
    assert out(poly_powmod([5 % p, 1], 0, [0, 0, 1], p)) == [1]
    assert out(poly_powmod([], 5, [1, 0, 1], p)) == []
    assert out(poly_powmod([0, 1], 5, [0, 0, 1], p)) == []   # x^5 mod x^2
    assert out(poly_powmod([0, 1], 1, [0, 0, 1], p)) == [0, 1]


@pytest.mark.parametrize("p", [3, 13, P31, P61, DEFAULT])
def test_poly_powmod_frobenius(p):
    # Fermat in F_p[x]/(f), f irreducible of degree d: x^(p^d) = x, and x^(p^d - 1) = 1.
    rng = np.random.default_rng(9)
    for d in (2, 3, 5):
        f = random_irreducible(rng, d, p)
        assert out(poly_powmod([0, 1], p**d, f, p)) == [0, 1]
        assert out(poly_powmod([0, 1], p**d - 1, f, p)) == [1]
        g = [int(v) for v in rand_poly(rng, d - 1, p)]
        assert out(poly_powmod(g, p**d, f, p)) == strip(g)


@pytest.mark.parametrize("p", [P31, DEFAULT])
def test_poly_powmod_large_modulus_crt(p):
    # f = prod (x - r_i) over 400 distinct r_i: by the CRT, h = base^e mod f is the unique
    # polynomial of degree < 400 with h(r_i) = base(r_i)^e for every i.
    rng = np.random.default_rng(35)
    rs = distinct_elems(rng, 400, p, low=0)
    f = from_roots(rs, p, lc=2)
    base = rand_poly(rng, 700, p)
    eval_many = horner_many_u64 if p < 2**31 else horner_many_obj
    base_at = eval_many(base, rs, p)
    for e in (2**100 + 7, p, 12345):
        h = out(poly_powmod(base, e, f, p))
        assert len(h) <= 400
        assert eval_many(h, rs, p) == [pow(v, e, p) for v in base_at]
    # x^p = x modulo a product of distinct linear factors
    assert out(poly_powmod([0, 1], p, f, p)) == [0, 1]


# --------------------------------------------------------------------------
# poly_derivative
# --------------------------------------------------------------------------

def test_poly_derivative_hand():
    assert out(poly_derivative([1, 1, 1], 2)) == [1]         # (1 + x + x^2)' = 1 + 2x = 1
    assert out(poly_derivative([0, 0, 0, 1], 3)) == []       # (x^3)' = 3x^2 = 0 over F_3
    assert out(poly_derivative([4, 3, 2, 1], 13)) == [3, 4, 3]
    assert out(poly_derivative([7], 13)) == []
    assert out(poly_derivative([], 13)) == []


@pytest.mark.parametrize("p", PRIMES + [P63])
def test_poly_derivative_random(p):
    rng = np.random.default_rng(10)
    for _ in range(30):
        f = rand_poly(rng, int(rng.integers(0, 80)), p)
        assert out(poly_derivative(f, p)) == from_gf(gf_diff(to_gf(f), p, ZZ))


# --------------------------------------------------------------------------
# poly_eval
# --------------------------------------------------------------------------

def test_poly_eval_hand():
    assert poly_eval([1, 2, 3], 2, 13) == (1 + 4 + 12) % 13
    assert poly_eval([], 5, 13) == 0
    assert poly_eval([7], 5, 13) == 7
    assert poly_eval([1, 1, 1], 1, 2) == 1
    assert isinstance(poly_eval([1, 2, 3], 2, 13), int)
    assert isinstance(poly_eval([1, 2, 3], 2, DEFAULT), int)


@pytest.mark.parametrize("p", PRIMES + [P63])
def test_poly_eval_scalar_random(p):
    rng = np.random.default_rng(13)
    for _ in range(30):
        f = rand_poly(rng, int(rng.integers(0, 50)), p)
        for x in [0, 1, p - 1] + rand_elems(rng, 3, p):
            v = poly_eval(f, x, p)
            assert isinstance(v, int)
            assert v == int(gf_eval(to_gf(f), x, p, ZZ)) == horner(f, x, p)


@pytest.mark.parametrize("p", PRIMES + [P63])
def test_poly_eval_multipoint_small(p):
    rng = np.random.default_rng(14)
    for n in (0, 1, 2, 7, 100):
        f = rand_poly(rng, int(rng.integers(0, 40)), p)
        xs = rng.integers(0, p, n, dtype=np.uint64)
        v = poly_eval(f, xs, p)
        assert isinstance(v, np.ndarray) and v.dtype == np.uint64 and v.shape == (n,)
        assert [int(y) for y in v] == [horner(f, int(x), p) for x in xs]
    v = poly_eval([], np.arange(5, dtype=np.uint64) % p, p)   # zero polynomial
    assert v.dtype == np.uint64 and list(v) == [0] * 5


@pytest.mark.parametrize("p", [13, DEFAULT])
def test_poly_eval_input_forms(p):
    f = [3, 0, 2]                      # 3 + 2 x^2
    exp = [horner(f, x, p) for x in (0, 1, 5)]
    for xs in ([0, 1, 5], (0, 1, 5), np.array([0, 1, 5], dtype=np.int64),
               np.array([0, 1, 5], dtype=np.uint64)):
        v = poly_eval(f, xs, p)
        assert isinstance(v, np.ndarray) and v.dtype == np.uint64
        assert [int(y) for y in v] == exp
    for x in (np.uint64(5), np.int64(5), 5):
        v = poly_eval(f, x, p)
        assert isinstance(v, int) and v == exp[2]
    assert poly_eval(f + [0, 0], 5, p) == exp[2]


@pytest.mark.parametrize("p", [13, P31])
@pytest.mark.parametrize("deg,n", [(2500, 3000), (0, 2000), (10, 4096), (5000, 2100)])
def test_poly_eval_multipoint_large_u64(p, deg, n):
    # full check with uint64 Horner (p < 2**31); points repeat and include 0 for p = 13
    rng = np.random.default_rng(deg + n)
    f = rand_poly(rng, deg, p)
    xs = rng.integers(0, p, n, dtype=np.uint64)
    xs[:2] = [0, p - 1]
    v = poly_eval(f, xs, p)
    assert v.dtype == np.uint64 and v.shape == (n,)
    assert [int(y) for y in v] == horner_many_u64(f, xs, p)


@pytest.mark.parametrize("p", [P61, DEFAULT, P63])
def test_poly_eval_multipoint_large_big_p(p):
    rng = np.random.default_rng(15)
    # full check of every point, moderate degree
    f = rand_poly(rng, 150, p)
    xs = rng.integers(0, p, 2500, dtype=np.uint64)
    xs[:3] = [0, 1, p - 1]
    xs[3] = xs[4]
    v = poly_eval(f, xs, p)
    assert v.dtype == np.uint64 and v.shape == xs.shape
    assert [int(y) for y in v] == horner_many_obj(f, xs, p)
    # large degree: every 32nd point checked exactly
    f = rand_poly(rng, 3000, p)
    xs = rng.integers(0, p, 3000, dtype=np.uint64)
    v = poly_eval(f, xs, p)
    assert [int(y) for y in v[::32]] == horner_many_obj(f, xs[::32], p)
    # evaluation at planted roots gives zeros
    rs = distinct_elems(rng, 2000, p, low=0)
    f = from_roots(rs, p, lc=5)
    v = poly_eval(f, np.array(rs, dtype=np.uint64), p)
    assert not np.any(v)


def test_bm_hand():
    # Fibonacci mod 13: s_i = s_{i-1} + s_{i-2}  ->  C = 1 - z - z^2 = [1, 12, 12]
    fib = [0, 1]
    while len(fib) < 12:
        fib.append((fib[-1] + fib[-2]) % 13)
    assert bm_out(berlekamp_massey(fib, 13), 13) == [1, 12, 12]
    # geometric s_i = 3^i mod 13  ->  C = 1 - 3z
    assert bm_out(berlekamp_massey([pow(3, i, 13) for i in range(8)], 13), 13) == [1, 10]
    # constant 1 sequence over F_2  ->  C = 1 + z
    assert bm_out(berlekamp_massey([1, 1, 1, 1], 2), 2) == [1, 1]
    # empty and all-zero sequences have linear complexity 0
    assert bm_out(berlekamp_massey([], 13), 13) == [1]
    assert bm_out(berlekamp_massey([0] * 7, 13), 13) == [1]
    assert bm_out(berlekamp_massey(np.zeros(5, dtype=np.uint64), DEFAULT), DEFAULT) == [1]
    # 0, 0, 0, 1: complexity 4 (the first nonzero term comes at index 3); C may have
    # trailing zeros since len(C) = L + 1
    C = bm_out(berlekamp_massey([0, 0, 0, 1], 13), 13)
    assert len(C) == 5
    check_recurrence(C, [0, 0, 0, 1], 13)
    # a single nonzero term: L = 1, C = 1 + c z for any c
    C = bm_out(berlekamp_massey([5], 13), 13)
    assert len(C) == 2


@pytest.mark.parametrize("p,nmax", [(2, 8), (3, 5)])
def test_bm_exhaustive_tiny(p, nmax):
    for n in range(nmax + 1):
        for s in itertools.product(range(p), repeat=n):
            C = bm_out(berlekamp_massey(list(s), p), p)
            assert len(C) - 1 == linear_complexity(s, p), s
            check_recurrence(C, s, p)


@pytest.mark.parametrize("p", [5, 13, P31, P61, DEFAULT, P63])
def test_bm_random_short(p):
    rng = np.random.default_rng(16)
    for _ in range(60):
        n = int(rng.integers(0, 11))
        kind = rng.integers(0, 3)
        if kind == 0:
            s = rand_elems(rng, n, p)
        else:   # low complexity: random recurrence of length L <= 3 from random seeds
            L = int(rng.integers(1, 4))
            c = rand_elems(rng, L, p)
            s = rand_elems(rng, min(L, n), p)
            while len(s) < n:
                s.append(sum(c[k] * s[-1 - k] for k in range(L)) % p)
            if kind == 2 and n:
                s[int(rng.integers(0, n))] = int(rng.integers(0, p))  # perturb one term
        C = bm_out(berlekamp_massey(s, p), p)
        assert len(C) - 1 == linear_complexity(s, p), s
        check_recurrence(C, s, p)


@pytest.mark.parametrize("p", [13, P31, P61, DEFAULT])
def test_bm_recurrence_random_long(p):
    rng = np.random.default_rng(17)
    for n in (1, 2, 51, 200):
        s = rand_elems(rng, n, p)
        C = bm_out(berlekamp_massey(s, p), p)
        check_recurrence(C, s, p)
        # Massey: a random sequence has complexity near n/2; never more than n
        assert len(C) - 1 <= n


@pytest.mark.parametrize("p,m", [(2, 1), (3, 1), (3, 2), (13, 1), (13, 5), (13, 12),
                                 (P31, 1), (P31, 40), (P31, 1500),
                                 (P61, 3), (P61, 300), (DEFAULT, 1), (DEFAULT, 7),
                                 (DEFAULT, 300), (DEFAULT, 600), (P63, 50)])
def test_bm_planted_sparse_multiset(p, m):
    rng = np.random.default_rng(m * 31 + p % 97)
    r, q = planted_bm_case(rng, m, p)
    if p < 2**31:
        S = power_sums_u64(q, r, 2 * m, p)
    else:
        S = power_sums_obj(q, r, 2 * m, p)
    expected = prod_polys([[1, (-x) % p] for x in r], p)   # prod_j (1 - r_j z), low first
    assert len(expected) == m + 1
    C = bm_out(berlekamp_massey(np.array(S, dtype=np.uint64), p), p)
    assert len(C) == m + 1
    assert C == expected
    # more terms than needed do not change C
    if m <= 300:
        S3 = power_sums_obj(q, r, 3 * m + 1, p)
        assert bm_out(berlekamp_massey(S3, p), p) == expected


# --------------------------------------------------------------------------
# roots
# --------------------------------------------------------------------------

def test_roots_hand():
    # over F_2: x^2 + x = x (x + 1); x^2 + x + 1 irreducible; (x + 1)^2 = x^2 + 1
    assert roots_out(roots([0, 1, 1], 2)) == ([0, 1], [1, 1])
    assert roots_out(roots([1, 1, 1], 2)) == ([], [])
    assert roots_out(roots([1, 0, 1], 2)) == ([1], [2])
    # over F_13: 2 x^2 - 2 = 2 (x - 1)(x + 1) -> roots 1, 12
    assert roots_out(roots([11, 0, 2], 13)) == ([1, 12], [1, 1])
    # x^13 - 1 = (x - 1)^13 over F_13 (multiplicity = p)
    assert roots_out(roots([12] + [0] * 12 + [1], 13)) == ([1], [13])
    # x^3 - x = x (x - 1)(x + 1) over F_3 (every element is a root)
    assert roots_out(roots([0, 2, 0, 1], 3)) == ([0, 1, 2], [1, 1, 1])


@pytest.mark.parametrize("p", [2, 13, DEFAULT])
def test_roots_constants_and_degree_one(p):
    for c in ([1], [p - 1], [5 % p or 1, 0, 0]):
        assert roots_out(roots(c, p)) == ([], [])
        assert roots_out(roots(c, p, require_split=True)) == ([], [])
    rng = np.random.default_rng(18)
    for _ in range(10):
        a = int(rng.integers(1, p, dtype=np.uint64)) if p > 2 else 1
        b = int(rng.integers(0, p, dtype=np.uint64))
        r = (-b) * pow(a, -1, p) % p   # root of a x + b
        assert roots_out(roots([b, a], p)) == ([r], [1])
        assert roots_out(roots([b, a], p, require_split=True)) == ([r], [1])


@pytest.mark.parametrize("p", SMALL_PRIMES + [5, 7, 61, 67, 257])
def test_roots_small_p_brute_force(p):
    rng = np.random.default_rng(19)
    for k in range(80):
        if k % 3 == 0:   # planted roots with multiplicities times a random cofactor
            rs = [int(v) for v in rng.integers(0, p, int(rng.integers(1, 6)))]
            f = kron_mul(from_roots(rs, p), rand_poly(rng, int(rng.integers(0, 8)), p), p)
        else:
            f = strip(rand_poly(rng, int(rng.integers(0, 30)), p))
        rts, mult = roots_out(roots(f, p, random_state=k))
        assert rts == [x for x in range(p) if horner(f, x, p) == 0]
        assert mult == [root_multiplicity(f, r, p) for r in rts]
        if k < 10:   # the same multiplicities from sympy's factorization
            assert dict(zip(rts, mult)) == multiplicity_oracle(f, p)


@pytest.mark.parametrize("p", BIG_PRIMES + [P63])
def test_roots_planted_with_irreducibles(p):
    rng = np.random.default_rng(20)
    for k in range(6):
        n_lin = int(rng.integers(0, 12))
        rs = distinct_elems(rng, n_lin, p, low=0)
        mults = [int(rng.integers(1, 4)) for _ in rs]
        irr = [random_irreducible(rng, int(rng.integers(2, 5)), p)
               for _ in range(int(rng.integers(0, 4)))]
        irr_exp = [int(rng.integers(1, 3)) for _ in irr]
        lc = int(rng.integers(1, p, dtype=np.uint64))
        pieces = [[lc]]
        for r, e in zip(rs, mults):
            pieces += [[(-r) % p, 1]] * e
        for g, e in zip(irr, irr_exp):
            pieces += [g] * e
        f = prod_polys(pieces, p)
        rts, mult = roots_out(roots(f, p, random_state=k))
        exp = sorted(zip(rs, mults))
        assert list(zip(rts, mult)) == exp
        assert all(horner(f, r, p) == 0 for r in rts)


@pytest.mark.parametrize("p", [P61, DEFAULT])
def test_roots_planted_large_with_irreducibles(p):
    rng = np.random.default_rng(21)
    rs = distinct_elems(rng, 400, p, low=0)
    mults = [1] * 390 + [2] * 7 + [3] * 3
    irr = [random_irreducible(rng, d, p) for d in (2, 2, 2, 3, 3, 4, 6)]
    pieces = [[7]]
    for r, e in zip(rs, mults):
        pieces += [[(-r) % p, 1]] * e
    pieces += irr + irr[:2]   # two irreducible quadratics squared
    f = prod_polys(pieces, p)
    rts, mult = roots_out(roots(f, p, random_state=0))
    assert list(zip(rts, mult)) == sorted(zip(rs, mults))
    with pytest.raises(DecodeError):
        roots(f, p, require_split=True, random_state=0)


@pytest.mark.parametrize("p,m", [(13, 12), (13, 13), (61, 61), (67, 67), (67, 40),
                                 (257, 257), (P31, 500), (P61, 500),
                                 (DEFAULT, 2000), (DEFAULT, 1), (DEFAULT, 2), (2, 2), (3, 3),
                                 (P63, 300)])
def test_roots_require_split_distinct_linear(p, m):
    rng = np.random.default_rng(22 + m)
    rs = distinct_elems(rng, m, p, low=0)
    lc = int(rng.integers(1, p, dtype=np.uint64)) if p > 2 else 1
    f = from_roots(rs, p, lc=lc)
    rts, mult = roots_out(roots(f, p, require_split=True, random_state=1))
    assert rts == sorted(rs)
    assert mult == [1] * m
    if m <= 500:
        rts2, mult2 = roots_out(roots(f, p, random_state=2))
        assert rts2 == sorted(rs) and mult2 == [1] * m


@pytest.mark.parametrize("p", [2, 3, 13, P31, DEFAULT])
def test_roots_require_split_rejects(p):
    rng = np.random.default_rng(23)
    m = min(6, p)
    rs = distinct_elems(rng, m, p, low=0)
    lin = from_roots(rs, p, lc=1)
    q2 = random_irreducible(rng, 2, p)
    q3 = random_irreducible(rng, 3, p)
    cases = [
        kron_mul(lin, from_roots([rs[0]], p), p),          # a repeated root
        from_roots([rs[-1]] * 2, p),                        # (x - r)^2 alone
        kron_mul(lin, q2, p),                               # irreducible quadratic factor
        q2,                                                 # no roots at all
        kron_mul(lin, q3, p),                               # irreducible cubic factor
        kron_mul(from_roots(rs[:1], p), kron_mul(q2, q2, p), p),
    ]
    if p in (2, 3):
        cases.append(from_roots([1] * p, p))                # (x - 1)^p: f' = 0
    for f in cases:
        with pytest.raises(DecodeError):
            roots(f, p, require_split=True, random_state=0)
        # without require_split these are fine and give the planted roots
        rts, mult = roots_out(roots(f, p, random_state=0))
        assert all(horner(f, r, p) == 0 for r in rts)


def test_roots_require_split_rejects_large():
    # m = 1500 distinct roots plus one repeated root / one irreducible quadratic
    p = DEFAULT
    rng = np.random.default_rng(24)
    rs = distinct_elems(rng, 1500, p, low=1)
    base = from_roots(rs, p, lc=3)
    for extra in ([(-rs[700]) % p, 1], random_irreducible(rng, 2, p)):
        f = kron_mul(base, extra, p)
        with pytest.raises(DecodeError):
            roots(f, p, require_split=True, random_state=5)


@pytest.mark.parametrize("p", [13, P61, DEFAULT])
def test_roots_reproducible_and_state_independent(p):
    rng = np.random.default_rng(25)
    rs = distinct_elems(rng, min(12, p - 1), p, low=0)
    f = kron_mul(from_roots(rs + rs[:2], p), random_irreducible(rng, 3, p), p)
    ref = roots_out(roots(f, p, random_state=0))
    assert ref[0] == sorted(rs)
    for rs_state in (0, 1, 2, 12345, 2**40, np.random.default_rng(3),
                     np.random.SeedSequence(4), None):
        assert roots_out(roots(f, p, random_state=rs_state)) == ref
        g = from_roots(rs, p)
        assert roots_out(roots(g, p, require_split=True, random_state=rs_state))[0] == sorted(rs)
    # a Generator passed twice keeps giving the same (sorted) answer
    gen = np.random.default_rng(99)
    assert roots_out(roots(f, p, random_state=gen)) == roots_out(roots(f, p, random_state=gen))


@pytest.mark.parametrize("p", [2, 13, DEFAULT])
def test_roots_input_forms(p):
    f = from_roots([1, 0], p)                    # x^2 - x
    for form in (f, f + [0, 0], np.array(f, dtype=np.uint64), np.array(f, dtype=np.int64)):
        assert roots_out(roots(form, p)) == ([0, 1], [1, 1])
        assert roots_out(roots(form, p, require_split=True)) == ([0, 1], [1, 1])


# --------------------------------------------------------------------------
# factor
# --------------------------------------------------------------------------

def test_factor_hand():
    # x^4 + 1 over F_17 (17 = 1 mod 8): four linear factors x - r with r^4 = -1
    lc, facs = check_factor_output(factor([1, 0, 0, 0, 1], 17), 17)
    assert lc == 1 and [len(g) for g, _ in facs] == [2, 2, 2, 2]
    assert sorted((-g[0]) % 17 for g, _ in facs) == [2, 8, 9, 15]
    assert [x for x in range(17) if (x**4 + 1) % 17 == 0] == [2, 8, 9, 15]
    # over F_13, x^4 = -1 has no solution (4k = 6 mod 12 is impossible): two quadratics
    lc, facs = check_factor_output(factor([1, 0, 0, 0, 1], 13), 13)
    assert [(len(g), e) for g, e in facs] == [(3, 1), (3, 1)]
    # x^2 + x + 1 over F_2 is irreducible; 3 x^2 + 3 over F_13 = 3 (x^2 + 1), and -1 is a
    # square mod 13 (5^2 = 25 = -1): 3 (x - 5)(x + 5) = 3 (x + 8)(x + 5)
    assert check_factor_output(factor([1, 1, 1], 2), 2) == (1, [([1, 1, 1], 1)])
    assert check_factor_output(factor([3, 0, 3], 13), 13) == (3, [([5, 1], 1), ([8, 1], 1)])
    # (x + 1)^4 over F_2 = x^4 + 1
    assert check_factor_output(factor([1, 0, 0, 0, 1], 2), 2) == (1, [([1, 1], 4)])


@pytest.mark.parametrize("p", [2, 13, DEFAULT])
def test_factor_constants_and_linear(p):
    for c in (1, p - 1, 7 % p or 1):
        lc, facs = factor([c, 0, 0], p)
        assert int(lc) == c and list(facs) == []
    lc, facs = check_factor_output(factor([3 % p, p - 1], p), p)   # -x + 3 = -(x - 3)
    assert lc == p - 1 and facs == [([(3 % p) * pow(p - 1, -1, p) % p, 1], 1)]


def test_factor_output_types():
    lc, facs = factor([1, 2, 3, 4], 13)
    assert isinstance(lc, int)
    assert isinstance(facs, list)
    for g, e in facs:
        out(g)
        assert isinstance(e, int)


@pytest.mark.parametrize("p", PRIMES + [67, P63])
def test_factor_random_vs_sympy(p):
    rng = np.random.default_rng(26)
    for k in range(12 if p < 2**30 else 6):
        f = rand_poly(rng, int(rng.integers(1, 13)), p)
        assert check_factor_output(factor(f, p, random_state=k), p) == gf_factor_lists(f, p)


@pytest.mark.parametrize("p", PRIMES + [67])
def test_factor_planted_with_exponents(p):
    rng = np.random.default_rng(27)
    for k in range(6):
        pieces = [[int(rng.integers(1, p, dtype=np.uint64)) if p > 2 else 1]]
        expected = {}
        for _ in range(int(rng.integers(1, 5))):
            d = int(rng.integers(1, 5))
            g = random_irreducible(rng, d, p)
            e = int(rng.integers(1, 2 * p + 2 if p < 10 else 5))  # exponents >= p for tiny p
            pieces += [g] * e
            expected[tuple(g)] = expected.get(tuple(g), 0) + e
        f = prod_polys(pieces, p)
        lc, facs = check_factor_output(factor(f, p, random_state=k), p)
        assert lc == pieces[0][0]
        assert {tuple(g): e for g, e in facs} == expected
        assert (lc, facs) == gf_factor_lists(f, p)


@pytest.mark.parametrize("p", [P61, DEFAULT])
def test_factor_planted_large(p):
    # several distinct irreducibles of the same degree (equal-degree splitting must
    # separate them), with exponents; degree about 90
    rng = np.random.default_rng(36)
    expected = {}
    for d, count in ((1, 6), (2, 4), (3, 4), (4, 2), (6, 2), (9, 1)):
        for _ in range(count):
            g = tuple(random_irreducible(rng, d, p))
            expected[g] = expected.get(g, 0) + int(rng.integers(1, 4))
    f = prod_polys([[5]] + [list(g) for g, e in expected.items() for _ in range(e)], p)
    lc, facs = check_factor_output(factor(f, p, random_state=1), p)
    assert lc == 5
    assert {tuple(g): e for g, e in facs} == expected
    lc2, sq = check_sqf_output(squarefree_factorization(f, p), p)
    assert (lc2, sq) == sqf_oracle(f, p)


@pytest.mark.parametrize("p", [13, DEFAULT])
def test_factor_reproducible(p):
    rng = np.random.default_rng(28)
    f = prod_polys([random_irreducible(rng, d, p) for d in (1, 1, 2, 3, 3, 5)] +
                   [random_irreducible(rng, 2, p)] * 2, p)
    ref = check_factor_output(factor(f, p, random_state=0), p)
    for s in (1, 7, np.random.default_rng(5), None):
        assert check_factor_output(factor(f, p, random_state=s), p) == ref


# --------------------------------------------------------------------------
# squarefree_factorization
# --------------------------------------------------------------------------

def sqf_oracle(f, p):
    lc, facs = gf_sqf_list(to_gf(f), p, ZZ)
    return int(lc), sorted(((from_gf(g), int(k)) for g, k in facs), key=lambda t: t[1])


def check_sqf_output(res, p):
    lc, facs = res
    facs = [(out(g), int(k)) for g, k in facs]
    for g, _ in facs:
        assert len(g) >= 2 and g[-1] == 1
    ks = [k for _, k in facs]
    assert ks == sorted(ks)
    return int(lc), facs


def test_sqf_hand():
    # x^2 + 2x + 1 = (x + 1)^2 over F_13; x^4 + x^2 = x^2 (x + 1)^2 over F_2
    assert check_sqf_output(squarefree_factorization([1, 2, 1], 13), 13) == (1, [([1, 1], 2)])
    assert check_sqf_output(squarefree_factorization([0, 0, 1, 0, 1], 2), 2) == \
        (1, [([0, 1, 1], 2)])
    assert check_sqf_output(squarefree_factorization([5], 13), 13) == (5, [])
    assert check_sqf_output(squarefree_factorization([0, 2], 13), 13) == (2, [([0, 1], 1)])


@pytest.mark.parametrize("p", PRIMES + [67])
def test_sqf_vs_sympy(p):
    rng = np.random.default_rng(29)
    for k in range(15):
        pieces = [[int(rng.integers(1, p, dtype=np.uint64)) if p > 2 else 1]]
        for _ in range(int(rng.integers(0, 5))):
            g = rand_poly(rng, int(rng.integers(1, 4)), p, monic=True)
            pieces += [g] * int(rng.integers(1, 2 * p + 3 if p < 10 else 6))
        f = prod_polys(pieces, p)
        res = check_sqf_output(squarefree_factorization(f, p), p)
        assert res == sqf_oracle(f, p)
        # lc * prod g^k reproduces f
        lc, facs = res
        assert prod_polys([[lc]] + [g for g, k in facs for _ in range(k)], p) == f


# --------------------------------------------------------------------------
# Hypothesis properties
# --------------------------------------------------------------------------

@st.composite
def prime_and_polys(draw, primes=tuple(PRIMES), n=1, max_deg=20, nonzero=True):
    p = draw(st.sampled_from(primes))
    polys = []
    for _ in range(n):
        c = draw(st.lists(st.integers(0, p - 1), min_size=0, max_size=max_deg))
        if nonzero:
            c.append(draw(st.integers(1, p - 1)))
        polys.append(c)
    return (p, *polys)


@SETTINGS
@given(prime_and_polys(n=2, max_deg=40, nonzero=False))
def test_prop_mul_schoolbook(case):
    p, a, b = case
    assert out(poly_mul(a, b, p)) == schoolbook_mul(a, b, p)


@SETTINGS
@given(prime_and_polys(n=2, max_deg=40, nonzero=True))
def test_prop_divmod_identity(case):
    p, a, b = case
    q, r = poly_divmod(a, b, p)
    q, r = out(q), out(r)
    assert len(r) < len(strip(b))
    assert padd(schoolbook_mul(q, b, p), r, p) == strip(a)


@SETTINGS
@given(prime_and_polys(max_deg=25), st.integers(0, 2**32))
def test_prop_roots_evaluate_to_zero(case, seed):
    p, f = case
    rts, mult = roots_out(roots(f, p, random_state=seed))
    assert all(horner(f, r, p) == 0 for r in rts)
    assert all(m >= 1 for m in mult) and sum(mult) <= len(strip(f)) - 1
    if p <= 13:
        assert rts == [x for x in range(p) if horner(f, x, p) == 0]


@SETTINGS
@given(st.sampled_from([P31, P61, DEFAULT]),
       st.lists(st.integers(0, 2**62), min_size=1, max_size=12),
       st.lists(st.integers(1, 3), min_size=12, max_size=12))
def test_prop_roots_planted(p, raw, mults):
    rs = sorted({v % p for v in raw})
    ms = mults[:len(rs)]
    f = from_roots([r for r, e in zip(rs, ms) for _ in range(e)], p, lc=3)
    assert roots_out(roots(f, p, random_state=0)) == (rs, ms)
    if all(e == 1 for e in ms):
        assert roots_out(roots(f, p, require_split=True)) == (rs, ms)
    else:
        with pytest.raises(DecodeError):
            roots(f, p, require_split=True)


@SETTINGS
@given(prime_and_polys(max_deg=14), st.integers(0, 2**32))
def test_prop_factor_reproduces(case, seed):
    p, f = case
    lc, facs = check_factor_output(factor(f, p, random_state=seed), p)
    assert lc == strip(f)[-1]
    assert prod_polys([[lc]] + [g for g, e in facs for _ in range(e)], p) == strip(f)
    for g, _ in facs:
        assert gf_irreducible_p(to_gf(g), p, ZZ)


@SETTINGS
@given(st.sampled_from(PRIMES), st.data())
def test_prop_bm_recurrence(p, data):
    s = data.draw(st.lists(st.integers(0, p - 1), max_size=30))
    C = bm_out(berlekamp_massey(s, p), p)
    check_recurrence(C, s, p)
    if len(s) <= 12:
        assert len(C) - 1 == linear_complexity(s, p)


# --------------------------------------------------------------------------
# Regressions found by the sanitizer build (SANITIZE=1 in .ci/run)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("p", [2, 13, DEFAULT])
def test_poly_powmod_zero_base_empty_array(p):
    # The zero base reaches fkm_poly_powmod as a NULL pointer with length 0,
    # which it passed to memcpy (undefined even for 0 bytes; UBSan stops).
    # Every modulus degree (linear f takes its own path), exponents that are
    # 0, small, p and more than one limb.  Oracle: sympy's gf_pow_mod.
    for f in ([1, 1], [0, 1], [0, 0, 1], [1, 0, 1], [3 % p, 1, 0, 1], [0, 0, 0, 0, 0, 1]):
        for e in (0, 1, 2, p, 2**64 + 1):
            exp = from_gf(gf_pow_mod([], e, to_gf(f), p, ZZ))
            assert exp == ([1] if e == 0 else [])   # 0**0 = 1
            for base in ([], [0], [0, 0, 0], np.zeros(0, dtype=np.uint64)):
                assert out(poly_powmod(base, e, f, p)) == exp, (f, e, base)
