"""Tests of the decoder's fast paths (issue 22): the half-gcd gcd, the Pade
form of Berlekamp-Massey and the 2-adic descent of root finding.

Oracles: python-flint's nmod_poly (gcd, roots, factor) and
fmpz_mod_poly_ctx.minpoly (Berlekamp-Massey when the shortest recurrence is
unique), and pyfkm's quadratic paths (classical Euclid, Massey's iteration)
which the fast paths must reproduce exactly.  Crossovers are forced down
through the private kernels' ``cut`` argument so that every path runs at
small sizes; the default crossovers (gcd 2500, BM 7000 terms) are crossed
once each with sizes on both sides.
"""
import numpy as np
import pytest

flint = pytest.importorskip("flint")

from pyfkm._core import _field as K  # noqa: E402
from pyfkm.exceptions import PyfkmError  # noqa: E402
from pyfkm.field import roots  # noqa: E402
from _helpers.field import DEFAULT, P31, P61  # noqa: E402

# NTT primes of small 2-adicity (the descent runs out of levels and restarts
# nodes with fresh shifts) and of large 2-adicity
NTT_SMALL = [97, 257, 7681]           # 3 2^5 + 1, 2^8 + 1, 15 2^9 + 1
NTT_BIG = [998244353, DEFAULT]        # 119 2^23 + 1, 65535 2^46 + 1
GCD_CUTS = [-1, 4, 5, 16, 0]          # classical, forced half-gcd, default
BM_CUTS = [-1, 1, 4, 9, 0]            # Massey's iteration, forced Pade, default


def u64(a):
    return np.array([int(v) for v in a], dtype=np.uint64)


def fl(a, p):
    return flint.nmod_poly([int(v) for v in a], p)


def coeffs(f):
    return [int(c) for c in f.coeffs()]


def rand_poly(rng, deg, p):
    c = [int(v) for v in rng.integers(0, p, deg + 1, dtype=np.uint64)]
    c[-1] = c[-1] or 1
    return c


def product_of_linears(rs, p):
    level = [flint.nmod_poly([(-r) % p, 1], p) for r in rs]
    if not level:
        return flint.nmod_poly([1], p)
    while len(level) > 1:
        nxt = [a * b for a, b in zip(level[0::2], level[1::2])]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def distinct(rng, n, p, low=1):
    out = set()
    while len(out) < n:
        out.update(int(v) for v in rng.integers(low, p, n - len(out), dtype=np.uint64))
    return sorted(out)


def planted_sequence(rng, m, N, p):
    """s_i = sum_j q_j r_j^i (i < N): m distinct nonzero r_j, q_j nonzero."""
    rs = distinct(rng, m, p)
    qs = [int(v) for v in rng.integers(1, p, m, dtype=np.uint64)]
    s = [0] * N
    for r, q in zip(rs, qs):
        x = q
        for i in range(N):
            s[i] = (s[i] + x) % p
            x = x * r % p
    return s


def bm_all_paths(s, p, cuts=BM_CUTS):
    """The connection polynomial from every path; they must agree."""
    a = u64(s)
    outs = [[int(v) for v in K.berlekamp_massey_path(a, p, cut)] for cut in cuts]
    for cut, o in zip(cuts[1:], outs[1:]):
        assert o == outs[0], f"cut={cut}: {o[:8]} != Massey {outs[0][:8]}"
    return outs[0]


def check_minpoly(C, s, p):
    """When 2 L <= N the shortest recurrence is unique: FLINT's minpoly."""
    L = len(C) - 1
    if 2 * L <= len(s) and any(s):
        want = coeffs(flint.fmpz_mod_poly_ctx(p).minpoly(s))
        assert [int(c) for c in C[::-1]] == want


# --------------------------------------------------------------------------- errors first

def test_bm_path_rejects_unreduced_terms():
    with pytest.raises(PyfkmError):
        K.berlekamp_massey_path(u64([1, 2, 13]), 13, 1)


@pytest.mark.parametrize("p", [P31] + NTT_SMALL)
def test_roots_require_split_reports_non_split(p):
    """Irreducible quadratics, repeated roots: FKM_ENOTSPLIT on every path."""
    rng = np.random.default_rng(1)
    for k in range(12):
        rs = distinct(rng, int(rng.integers(0, 12)), p, low=0)
        f = product_of_linears(rs, p)
        if k % 3 == 0:      # a repeated root
            r = int(rng.integers(0, p))
            f = f * flint.nmod_poly([(-r) % p, 1], p) ** 2
        else:               # an irreducible factor of degree 2 or 3
            while True:
                g = flint.nmod_poly(rand_poly(rng, 2 + k % 2, p), p)
                if not g.roots():     # degree 2 or 3 without a root: irreducible
                    break
            f = f * g
        with pytest.raises(PyfkmError):
            roots(coeffs(f), p, require_split=True, random_state=k)
        # without require_split the linear part is still found
        got = sorted(int(x) for x in roots(coeffs(f), p, random_state=k)[0])
        want = sorted(int(r) for r, _ in f.roots())
        assert got == want


# --------------------------------------------------------------------------- gcd

@pytest.mark.parametrize("p", [13, P31, P61, DEFAULT])
def test_gcd_paths_edge_cases(p):
    rng = np.random.default_rng(2)
    a = rand_poly(rng, 40, p)
    b = rand_poly(rng, 25, p)
    cases = [([], []), ([], a), (a, []), (a, a), (a, [3]), (a, b), (b, a),
             (a, coeffs(fl(a, p) * fl(b, p))),           # a divides the other
             (coeffs(fl(a, p) * fl(b, p)), b),
             (a, coeffs(fl(a, p) + fl([1], p)))]         # equal degrees
    for x, y in cases:
        want = fl(x, p).gcd(fl(y, p)) if (x or y) else None
        for cut in GCD_CUTS:
            got = [int(v) for v in K.gcd_path(u64(x), u64(y), p, cut)]
            assert got == ([] if want is None else coeffs(want)), (cut, len(x), len(y))


@pytest.mark.parametrize("p", [13, P31, DEFAULT])
def test_gcd_paths_planted_common_factor(p):
    rng = np.random.default_rng(3)
    for k in range(25):
        g = fl(rand_poly(rng, int(rng.integers(0, 120)), p), p)
        a = g * fl(rand_poly(rng, int(rng.integers(0, 150)), p), p)
        b = g * fl(rand_poly(rng, int(rng.integers(0, 150)), p), p)
        want = coeffs(a.gcd(b))
        for cut in GCD_CUTS:
            assert [int(v) for v in K.gcd_path(u64(coeffs(a)), u64(coeffs(b)), p, cut)] == want


@pytest.mark.parametrize("deg", [2000, 3200])   # both sides of the default crossover (2500)
def test_gcd_default_crossover(deg):
    p = DEFAULT
    rng = np.random.default_rng(4)
    g = fl(rand_poly(rng, deg // 3, p), p)
    a = g * fl(rand_poly(rng, deg - deg // 3, p), p)
    b = g * fl(rand_poly(rng, deg - deg // 3 - 7, p), p)
    want = coeffs(a.gcd(b))
    assert [int(v) for v in K.gcd_path(u64(coeffs(a)), u64(coeffs(b)), p, 0)] == want
    assert [int(v) for v in K.gcd_path(u64(coeffs(a)), u64(coeffs(b)), p, -1)] == want


# --------------------------------------------------------------------------- Berlekamp-Massey

@pytest.mark.parametrize("p", [13, P31, DEFAULT])
def test_bm_paths_degenerate_sequences(p):
    rng = np.random.default_rng(5)
    seqs = [[], [0], [1], [0] * 40, [0] * 39 + [1], [1] + [0] * 39, [5 % p] * 40,
            [0] * 20 + [1] + [0] * 19, [int(v) for v in rng.integers(0, p, 41)],
            [int(v) for v in rng.integers(0, p, 40)]]
    seqs += [[0] * 25 + [int(v) for v in rng.integers(0, p, 15)]]    # leading zeros
    for s in seqs:
        C = bm_all_paths(s, p)
        assert C[0] == 1
        check_minpoly(C, s, p)
    assert bm_all_paths([0] * 40, p) == [1]


@pytest.mark.parametrize("p", [13, P31, P61, DEFAULT])
def test_bm_paths_random_and_planted(p):
    rng = np.random.default_rng(6)
    for k in range(30):
        N = int(rng.integers(1, 160))
        if k % 3 == 0:       # random: complexity about N/2, unique or not
            s = [int(v) for v in rng.integers(0, p, N)]
        else:                # planted: minimal polynomial much shorter than N/2
            m = min(int(rng.integers(1, 40)), p - 1)
            s = planted_sequence(rng, m, N, p)
        C = bm_all_paths(s, p)
        check_minpoly(C, s, p)


@pytest.mark.parametrize("N", [6000, 8000])    # both sides of the default crossover (7000)
def test_bm_default_crossover_planted(N):
    p = DEFAULT
    rng = np.random.default_rng(7)
    m = N // 2
    rs = distinct(rng, m, p)
    qs = [int(v) for v in rng.integers(1, 50, m)]
    # syndromes as the series sum_j q_j / (1 - r_j z) mod z^N (product tree)
    ctx = flint.fmpz_mod_poly_ctx(p)
    nodes = [(ctx([q]), ctx([1, p - r])) for r, q in zip(rs, qs)]
    while len(nodes) > 1:
        nxt = [(a[0] * b[1] + b[0] * a[1], a[1] * b[1]) for a, b in zip(nodes[0::2], nodes[1::2])]
        if len(nodes) % 2:
            nxt.append(nodes[-1])
        nodes = nxt
    num, den = nodes[0]
    s = [int(c) for c in num.mul_low(den.inverse_series_trunc(N), N).coeffs()]
    s += [0] * (N - len(s))
    C = bm_all_paths(s, p, cuts=[0, -1])
    assert [int(c) for c in C[::-1]] == coeffs(product_of_linears(rs, p))


def test_bm_default_path_random_long_sequence():
    """Random 8001 terms: 2 L > N, the Pade form declines, Massey answers."""
    p = DEFAULT
    rng = np.random.default_rng(8)
    for N in (8000, 8001):
        s = [int(v) for v in rng.integers(0, p, N)]
        C = bm_all_paths(s, p, cuts=[0, -1])
        check_minpoly(C, s, p)


# --------------------------------------------------------------------------- roots

@pytest.mark.parametrize("p", NTT_SMALL + NTT_BIG + [P31])
def test_roots_split_planted(p):
    rng = np.random.default_rng(9)
    sizes = [1, 2, 3, 5, 17, 64, 200]
    for k, n in enumerate(sizes):
        n = min(n, p - 1)
        rs = distinct(rng, n, p, low=0)
        f = product_of_linears(rs, p)
        for require_split in (True, False):
            x, e = roots(coeffs(f), p, require_split=require_split, random_state=k)
            assert sorted(int(v) for v in x) == rs
            assert all(int(v) == 1 for v in e)


@pytest.mark.parametrize("p", NTT_SMALL)
def test_roots_every_element(p):
    """x^p - x and x^(p-1) - 1: every shift is minus a root (or all but one)."""
    xp = [0, p - 1] + [0] * (p - 2) + [1]
    x, _ = roots(xp, p, require_split=True, random_state=1)
    assert sorted(int(v) for v in x) == list(range(p))
    xq = [p - 1] + [0] * (p - 2) + [1]
    x, _ = roots(xq, p, require_split=True, random_state=2)
    assert sorted(int(v) for v in x) == list(range(1, p))


@pytest.mark.parametrize("seed", range(4))
def test_roots_large_split_default_prime(seed):
    p = DEFAULT
    rng = np.random.default_rng(10 + seed)
    rs = distinct(rng, 1500, p)
    f = coeffs(product_of_linears(rs, p))
    x, e = roots(f, p, require_split=True, random_state=seed)
    assert sorted(int(v) for v in x) == rs
    # one more factor x^2 + 1 ... irreducible or not, FLINT decides
    g = product_of_linears(rs[:700], p) * flint.nmod_poly([3, 0, 1], p)
    if len(flint.nmod_poly([3, 0, 1], p).roots()) == 0:
        with pytest.raises(PyfkmError):
            roots(coeffs(g), p, require_split=True, random_state=seed)


def test_roots_mixed_multiplicities_descent():
    """Not split: square-free stage, linear part, then the descent."""
    p = DEFAULT
    rng = np.random.default_rng(11)
    rs = distinct(rng, 300, p)
    f = product_of_linears(rs, p) * product_of_linears(rs[:50], p) * fl(rand_poly(rng, 30, p), p)
    got = sorted((int(x), int(e)) for x, e in zip(*roots(coeffs(f), p, random_state=3)))
    want = sorted((int(r), int(e)) for r, e in f.roots())
    assert got == want
