"""Tests of pyfkm.secagg._shamir (Shamir sharing of 32-byte secrets mod 2**256 + 297).

Nothing expected here is produced by the module itself.  Expected values come from

(a) sympy: ``isprime`` / ``nextprime`` for the modulus, and
    ``sympy.polys.polyfuncs.interpolate`` over the rationals, reduced mod the
    prime (reduction is a ring map on rationals whose denominators are prime
    to p; the denominators here are products of node differences < p);
(b) exact rational Lagrange interpolation with ``fractions.Fraction`` and the
    naive per-term formula ``prod x_j * pow(prod (x_j - x_i), -1, p)``;
(c) polynomials with injected coefficients (``_random_coefficients``
    monkeypatched), evaluated in this file with plain integer arithmetic, and
    two vectors worked out by hand;
(d) enumeration over tiny primes (31, 257): every coefficient choice is tried,
    so "t - 1 shares are uniform whatever the secret" is checked exactly;
(e) a fake byte source for the rejection sampler, with hand-derived
    accept / reject decisions.

Error tests come first.  Random cases use ``random.Random`` with fixed seeds
(test inputs only; the module itself draws from ``os.urandom``); Hypothesis
runs derandomized.
"""
import collections
import doctest
import itertools
import os
import random
import time
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from sympy.polys.polyfuncs import interpolate as sympy_interpolate

import pyfkm.secagg._shamir as shamir
from pyfkm.exceptions import InvalidInputError, ProtocolError
from pyfkm.secagg._shamir import (
    MAX_X,
    PRIME,
    SECRET_BYTES,
    SHARE_BYTES,
    lagrange_at_zero,
    reconstruct,
    share_from_bytes,
    share_to_bytes,
    split,
)

# ------------------------------------------------------------------------------------
# oracles and helpers (independent of the module)


def poly_eval(coeffs, x, p):
    """Plain sum of c_k x**k (coefficients low degree first) mod p."""
    return sum(c * x**k for k, c in enumerate(coeffs)) % p


def naive_lagrange_at_zero(xs, p):
    out = []
    for i, xi in enumerate(xs):
        num, den = 1, 1
        for j, xj in enumerate(xs):
            if j != i:
                num *= xj
                den *= xj - xi
        out.append(num * pow(den, -1, p) % p)
    return out


def fraction_at_zero(xs, ys, p):
    """Exact rational Lagrange interpolation at 0, reduced mod p."""
    total = Fraction(0)
    for i, (xi, yi) in enumerate(zip(xs, ys)):
        term = Fraction(yi)
        for j, xj in enumerate(xs):
            if j != i:
                term *= Fraction(xj, xj - xi)
        total += term
    return total.numerator * pow(total.denominator, -1, p) % p


def sympy_at_zero(xs, ys, p):
    v = sympy.Rational(sympy_interpolate(list(zip(xs, ys)), 0))
    return int(v.p) * pow(int(v.q), -1, p) % p


def secret_of(v):
    return v.to_bytes(SECRET_BYTES, "little")


def random_secrets(rng, m):
    return [bytes(rng.randrange(256) for _ in range(SECRET_BYTES)) for _ in range(m)]


class FixedCoefficients:
    """Stand-in for _random_coefficients: hands out given values, records calls."""

    def __init__(self, values):
        self.values = list(values)
        self.calls = []

    def __call__(self, count, prime=PRIME):
        self.calls.append((count, prime))
        out, self.values = self.values[:count], self.values[count:]
        assert len(out) == count, "test supplied too few coefficients"
        return out


# ------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("threshold, xs", [(4, [1, 2, 3]), (1, [])])
def test_split_threshold_above_holders_raises(threshold, xs):
    with pytest.raises(InvalidInputError, match="threshold"):
        split([bytes(32)], threshold, xs)
    assert issubclass(InvalidInputError, ValueError)


@pytest.mark.parametrize("threshold", [0, -1, 1.5, True, "2", None])
def test_split_rejects_bad_threshold(threshold):
    with pytest.raises(InvalidInputError, match="threshold"):
        split([bytes(32)], threshold, [1, 2, 3])


@pytest.mark.parametrize("xs", [[1, 1, 2], [0, 1, 2], [1, 2, MAX_X + 1], [-3, 1, 2],
                                [True, 2, 3], [1.0, 2, 3], ["1", 2, 3], 5, "123"])
def test_split_rejects_bad_xs(xs):
    with pytest.raises(InvalidInputError, match="xs"):
        split([bytes(32)], 2, xs)


@pytest.mark.parametrize("secrets", [[bytes(31)], [bytes(33)], ["a" * 32], [7], [None],
                                     bytes(32), "x" * 32, 3])
def test_split_rejects_bad_secrets(secrets):
    with pytest.raises(InvalidInputError, match="secret"):
        split(secrets, 2, [1, 2, 3])


def test_reconstruct_fewer_than_threshold_raises():
    shares = split([bytes(32)], 3, [1, 2, 3])
    with pytest.raises(ProtocolError, match="threshold"):
        reconstruct([1, 2], shares[:2], 3)
    with pytest.raises(ProtocolError, match="threshold"):
        reconstruct([], [], 1)


@pytest.mark.parametrize("xs", [[1, 1, 2], [0, 1, 2], [1, 2, MAX_X + 1], [-1, 1, 2],
                                [1.0, 2, 3], [True, 2, 3], ["1", 2, 3], [None, 2, 3]])
def test_reconstruct_rejects_bad_xs(xs):
    shares = split([bytes(32)], 2, [1, 2, 3])
    with pytest.raises(ProtocolError, match="xs"):
        reconstruct(xs, shares, 2)


@pytest.mark.parametrize("bad, match", [
    (-1, r"\[0, PRIME\)"), (PRIME, r"\[0, PRIME\)"), (PRIME + 5, r"\[0, PRIME\)"),
    (2**300, r"\[0, PRIME\)"), (1.0, "integer or bytes"), (True, "integer or bytes"),
    (None, "integer or bytes"), ("5", "integer or bytes"), (bytes(32), "33 bytes"),
    (bytes(34), "33 bytes"), (b"\xff" * 33, "below PRIME"),
    ((PRIME).to_bytes(33, "little"), "below PRIME")])
@pytest.mark.parametrize("n", [2, 3])      # without and with an extra point
@pytest.mark.parametrize("where", [0, 1])
def test_reconstruct_rejects_bad_share_values(bad, match, n, where):
    shares = [list(r) for r in split([bytes(32), b"\x01" * 32], 2, [1, 2, 3])][:n]
    shares[where][1] = bad
    with pytest.raises(ProtocolError, match=match):
        reconstruct([1, 2, 3][:n], shares, 2)


def test_reconstruct_rejects_ragged_shares():
    shares = [list(r) for r in split([bytes(32), bytes(32)], 2, [1, 2, 3])]
    with pytest.raises(ProtocolError, match="rows"):
        reconstruct([1, 2, 3], shares[:2], 2)            # fewer rows than xs
    with pytest.raises(ProtocolError, match="rows"):
        reconstruct([1, 2], shares, 2)                   # more rows than xs
    ragged = [shares[0], shares[1][:1], shares[2]]
    with pytest.raises(ProtocolError, match="row 1"):
        reconstruct([1, 2, 3], ragged, 2)
    ragged = [shares[0], shares[1], shares[2] + [5]]
    with pytest.raises(ProtocolError, match="row 2"):
        reconstruct([1, 2, 3], ragged, 2)
    # a bare encoded share is not a row of shares (it would read as 33 small ints)
    with pytest.raises(ProtocolError, match="list or tuple"):
        reconstruct([1, 2], [share_to_bytes(shares[0][0]), [shares[1][0]]], 2)
    with pytest.raises(ProtocolError, match="list or tuple"):
        reconstruct([1, 2], [shares[0][0], shares[1][0]], 2)
    with pytest.raises(ProtocolError, match="shares"):
        reconstruct([1, 2], 12, 2)


@pytest.mark.parametrize("threshold", [0, -2, 1.5, None, True])
def test_reconstruct_rejects_bad_threshold(threshold):
    shares = split([bytes(32)], 2, [1, 2, 3])
    with pytest.raises(InvalidInputError, match="threshold"):
        reconstruct([1, 2, 3], shares, threshold)


def test_reconstruct_detects_tampered_extra_share():
    rng = random.Random(1)
    xs = [3, 17, 99, 1000, 2**32, 5]
    secrets = random_secrets(rng, 2)
    shares = split(secrets, 3, xs)
    for i in range(len(xs)):             # any single point, base or extra
        for j in range(2):
            bad = [list(r) for r in shares]
            bad[i][j] = (bad[i][j] + 1) % PRIME
            with pytest.raises(ProtocolError, match="does not lie on the polynomial"):
                reconstruct(xs, bad, 3)
    # the message names the secret and the point
    bad = [list(r) for r in shares]
    bad[4][1] = (bad[4][1] + rng.randrange(1, PRIME)) % PRIME
    with pytest.raises(ProtocolError, match=r"secret 1 at x=4294967296"):
        reconstruct(xs, bad, 3)
    # consistent, but shares of other polynomials mixed in: caught too
    other = split(secrets, 3, xs)
    mixed = shares[:3] + other[3:]
    with pytest.raises(ProtocolError):
        reconstruct(xs, mixed, 3)


def test_reconstruct_from_exactly_threshold_cannot_detect_tampering():
    # documented limitation: t points always lie on some polynomial of degree < t
    secret = b"\x42" * 32
    shares = [list(r) for r in split([secret], 2, [1, 2])]
    shares[1][0] = (shares[1][0] + 1) % PRIME
    try:
        got = reconstruct([1, 2], shares, 2)
    except ProtocolError:                 # the wrong value was >= 2**256 (probability ~2**-248)
        return
    assert got != [secret]


def test_reconstruct_rejects_value_that_is_not_a_secret():
    for v in (2**256, 2**256 + 296):
        for t in (1, 3):
            shares = shamir._split([v, 5], t, [1, 2, 3, 4], PRIME)
            with pytest.raises(ProtocolError, match="32-byte"):
                reconstruct([1, 2, 3, 4], shares, t)


@pytest.mark.parametrize("b", [bytes(32), bytes(34), b"", (PRIME).to_bytes(33, "little"),
                               b"\xff" * 33, 5, "a" * 33, None, [0] * 33])
def test_share_from_bytes_rejects(b):
    with pytest.raises(ProtocolError):
        share_from_bytes(b)


@pytest.mark.parametrize("v", [-1, PRIME, 2**264, 1.0, True, "1", None])
def test_share_to_bytes_rejects(v):
    with pytest.raises(InvalidInputError):
        share_to_bytes(v)


@pytest.mark.parametrize("xs", [[], [0, 1], [PRIME, 1], [1, 2, 1], [1, PRIME + 1],
                                [True, 2], ["1", 2], [1.5, 2], 3])
def test_lagrange_at_zero_rejects(xs):
    with pytest.raises(InvalidInputError):
        lagrange_at_zero(xs)


# ------------------------------------------------------------------------------------
# constants


def test_prime_is_the_smallest_prime_above_2_256():
    assert sympy.isprime(PRIME)
    assert sympy.nextprime(2**256) == PRIME
    assert PRIME == 2**256 + 297
    assert not any(sympy.isprime(2**256 + k) for k in range(1, 297))


def test_sizes():
    assert 2 ** (8 * SECRET_BYTES) - 1 < PRIME                # every secret is an element
    assert PRIME - 1 < 2 ** (8 * SHARE_BYTES)                # every share fits in 33 bytes
    assert 2 ** (8 * (SHARE_BYTES - 1)) <= PRIME - 1         # and 32 bytes would not do
    assert SHARE_BYTES == 33 and SECRET_BYTES == 32 and MAX_X == 2**32
    assert shamir._urandom is os.urandom


# ------------------------------------------------------------------------------------
# encoding


def test_share_bytes_round_trip():
    for v in [0, 1, 255, 256, 2**256 - 1, 2**256, PRIME - 1]:
        b = share_to_bytes(v)
        assert isinstance(b, bytes) and len(b) == SHARE_BYTES
        assert b == v.to_bytes(33, "little")                 # little-endian, by definition
        assert share_from_bytes(b) == v
        assert share_from_bytes(bytearray(b)) == v
    assert share_to_bytes(np.int64(7)) == bytes([7]) + bytes(32)


# ------------------------------------------------------------------------------------
# known vectors (coefficients injected)


def test_known_vector_by_hand(monkeypatch):
    # f0(z) = 7 + 3 z + 5 z**2, f1(z) = (2**256 - 1) + (p - 1) z + (p - 2) z**2
    #       = (2**256 - 1) - z - 2 z**2  (mod p)
    fake = FixedCoefficients([3, 5, PRIME - 1, PRIME - 2])
    monkeypatch.setattr(shamir, "_random_coefficients", fake)
    s0, s1 = secret_of(7), b"\xff" * 32
    shares = split([s0, s1], 3, [1, 2, 2**32])
    assert fake.calls == [(4, PRIME)]     # one draw per split: secret-major, degree 1 first
    assert shares == [
        [15, 2**256 - 4],                                    # 7+3+5; 2**256-1-1-2
        [33, 2**256 - 11],                                   # 7+6+20; 2**256-1-2-8
        [7 + 3 * 2**32 + 5 * 2**64, 2**256 - 1 - 2**32 - 2**65],
    ]
    assert reconstruct([1, 2, 2**32], shares, 3) == [s0, s1]


def test_known_vector_threshold_one_is_the_secret(monkeypatch):
    fake = FixedCoefficients([])
    monkeypatch.setattr(shamir, "_random_coefficients", fake)
    s = [b"\x11" * 32, bytes(32)]
    assert split(s, 1, [9, 4]) == [[int.from_bytes(s[0], "little"), 0]] * 2
    assert fake.calls == [(0, PRIME)]


@pytest.mark.parametrize("t", [2, 15, 16, 17, 32, 33, 40])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_known_vectors_random_coefficients(monkeypatch, t, m):
    # coefficients of every size, near 0 and near p; abscissas up to 2**32:
    # exercises the packed Horner evaluation around its reduction chunks
    rng = random.Random(1000 * t + m)
    edge = [0, 1, PRIME - 1, PRIME - 2, 2**256, 2**256 - 1]
    coeffs = [rng.choice(edge) if rng.random() < 0.2 else rng.randrange(PRIME)
              for _ in range(m * (t - 1))]
    monkeypatch.setattr(shamir, "_random_coefficients", FixedCoefficients(coeffs))
    secrets = random_secrets(rng, m)
    xs = [1, 2, MAX_X, MAX_X - 1] + rng.sample(range(3, MAX_X - 1), t)
    shares = split(secrets, t, xs)
    for i, x in enumerate(xs):
        for j, s in enumerate(secrets):
            f = [int.from_bytes(s, "little")] + coeffs[j * (t - 1):(j + 1) * (t - 1)]
            assert shares[i][j] == poly_eval(f, x, PRIME)


# ------------------------------------------------------------------------------------
# the coefficient source


def test_random_coefficients_rejection_sampling(monkeypatch):
    # prime 257: 3 bytes a draw, kept iff v < limit = floor(2**24 / 257) * 257
    p = 257
    limit = (2**24 // p) * p
    assert limit == 16776960
    draws = [limit, 2**24 - 1, limit - 1, 0, 258]      # reject, reject, 256, 0, 1
    requested = []

    def fake_urandom(n):
        requested.append(n)
        out = b"".join(v.to_bytes(3, "little") for v in draws[:n // 3])
        del draws[:n // 3]
        return out

    monkeypatch.setattr(shamir, "_urandom", fake_urandom)
    assert shamir._random_coefficients(3, p) == [256, 0, 1]
    assert requested == [9, 6]                           # 3 draws, then the 2 rejected again

    # PRIME: 34 bytes a draw
    big_limit = (2**272 // PRIME) * PRIME
    draws2 = [2**272 - 1, big_limit - 1, 5]

    def fake_urandom2(n):
        out = b"".join(v.to_bytes(34, "little") for v in draws2[:n // 34])
        del draws2[:n // 34]
        return out

    monkeypatch.setattr(shamir, "_urandom", fake_urandom2)
    assert shamir._random_coefficients(2) == [(big_limit - 1) % PRIME, 5]


@pytest.mark.statistical
def test_random_coefficients_uniform_on_a_small_field(monkeypatch):
    # fed with seeded bytes, the sampler's output over F_257 passes a chi-square test
    gen = np.random.default_rng(7)
    monkeypatch.setattr(shamir, "_urandom", lambda n: gen.bytes(n))
    n = 257 * 200
    counts = collections.Counter(shamir._random_coefficients(n, 257))
    assert set(counts) <= set(range(257))
    expected = n / 257
    chi2 = sum((counts.get(v, 0) - expected) ** 2 / expected for v in range(257))
    # 256 degrees of freedom: mean 256, sd ~22.6; 400 is > 6 sd
    assert chi2 < 400


def test_split_uses_fresh_os_randomness():
    s = [b"\x33" * 32]
    a, b = split(s, 2, [1, 2]), split(s, 2, [1, 2])
    assert a != b                                          # equal with probability 1/p
    v = shamir._random_coefficients(1000)
    assert all(0 <= c < PRIME for c in v) and len(set(v)) == 1000
    assert max(v) > 2**255                                 # the top bits are used


# ------------------------------------------------------------------------------------
# secrecy, by enumeration over tiny fields


@pytest.mark.parametrize("x", [1, 2, 100, 256])
def test_one_share_of_threshold_two_is_uniform_whatever_the_secret(monkeypatch, x):
    p = 257
    for s in [0, 1, 128, 256]:
        seen = []
        for a in range(p):
            monkeypatch.setattr(shamir, "_random_coefficients", FixedCoefficients([a]))
            (share,), = shamir._split([s], 2, [x], p)
            seen.append(share)
        # each of the p polynomials gives a different share: uniform over F_p,
        # so the share's distribution does not depend on s
        assert sorted(seen) == list(range(p))
    # and a share y is consistent with every candidate secret
    y = 77
    assert {(y - a * x) % p for a in range(p)} == set(range(p))


def test_two_shares_of_threshold_three_are_uniform_whatever_the_secret(monkeypatch):
    p, xs = 31, [3, 29]
    for s in [0, 5, 30]:
        pairs = collections.Counter()
        for a1, a2 in itertools.product(range(p), repeat=2):
            monkeypatch.setattr(shamir, "_random_coefficients", FixedCoefficients([a1, a2]))
            pairs[tuple(r[0] for r in shamir._split([s], 3, xs, p))] += 1
        assert len(pairs) == p * p and set(pairs.values()) == {1}


def test_threshold_shares_determine_the_secret_on_a_small_field(monkeypatch):
    p, xs = 31, [1, 7, 30, 12]
    for s in range(p):
        for a1, a2 in [(0, 0), (1, 30), (17, 4)]:
            monkeypatch.setattr(shamir, "_random_coefficients", FixedCoefficients([a1, a2]))
            rows = shamir._split([s], 3, xs, p)
            for subset in itertools.permutations(range(4), 3):
                assert shamir._interpolate([xs[i] for i in subset],
                                           [rows[i] for i in subset], 3, p) == [s]
            assert shamir._interpolate(xs, rows, 3, p) == [s]    # with one checked extra


# ------------------------------------------------------------------------------------
# oracles


@pytest.mark.parametrize("case", ["single", "pair", "small", "consecutive", "u32", "edges",
                                  "large"])
def test_lagrange_at_zero_matches_naive_formula(case):
    rng = random.Random(hash(case) % 1000)
    xs = {
        "single": [5],
        "pair": [1, 2],
        "small": [4, 1, 9, 7],
        "consecutive": list(range(1, 61)),
        "u32": rng.sample(range(1, MAX_X + 1), 50),
        "edges": [MAX_X, 1, MAX_X - 1, 2],
        "large": rng.sample(range(1, 10**6), 200),
    }[case]
    shamir._weights.cache_clear()
    assert lagrange_at_zero(xs) == naive_lagrange_at_zero(xs, PRIME)
    assert lagrange_at_zero(xs) == naive_lagrange_at_zero(xs, PRIME)    # from the cache
    assert shamir._weights.cache_info().hits >= 1


def test_lagrange_at_zero_reduces_nodes_and_interpolates():
    assert lagrange_at_zero([1, PRIME + 2]) == lagrange_at_zero([1, 2])
    assert lagrange_at_zero([-1, 1]) == naive_lagrange_at_zero([PRIME - 1, 1], PRIME)
    # sum lam_i x_i**k = [k == 0] for k < n (interpolation of 1, z, ..., z**(n-1))
    xs = [3, 10, 2**31, 77, 5]
    lam = lagrange_at_zero(xs)
    for k in range(len(xs)):
        assert sum(c * pow(x, k, PRIME) for c, x in zip(lam, xs)) % PRIME == (k == 0)


def test_barycentric_weights_match_naive_formula():
    rng = random.Random(3)
    for xs in [(1,), (2, 9), tuple(rng.sample(range(1, MAX_X), 30))]:
        _, w = shamir._weights(xs, PRIME)
        for i, xi in enumerate(xs):
            den = 1
            for j, xj in enumerate(xs):
                if j != i:
                    den *= xi - xj
            assert w[i] == pow(den, -1, PRIME)


@pytest.mark.parametrize("seed", range(5))
def test_reconstruct_matches_sympy_and_fraction_interpolation(seed):
    rng = random.Random(seed)
    t = rng.randrange(1, 9)
    n = t + rng.randrange(0, 4)
    xs = rng.sample(range(1, MAX_X + 1), n)
    secrets = random_secrets(rng, 2)
    shares = split(secrets, t, xs)
    for j, s in enumerate(secrets):
        ys = [r[j] for r in shares[:t]]
        expect = sympy_at_zero(xs[:t], ys, PRIME)
        assert expect == fraction_at_zero(xs[:t], ys, PRIME) == int.from_bytes(s, "little")
    assert reconstruct(xs, shares, t) == secrets
    # arbitrary values (no secret behind them): the module agrees with sympy
    ys = [rng.randrange(PRIME) for _ in range(t)]
    assert shamir._interpolate(xs[:t], [[y] for y in ys], t, PRIME) == \
        [sympy_at_zero(xs[:t], ys, PRIME)]


def test_value_at_matches_plain_evaluation():
    rng = random.Random(11)
    t = 37
    f = [rng.randrange(PRIME) for _ in range(t)]
    xs = tuple(rng.sample(range(1, MAX_X + 1), t))
    _, w = shamir._weights(xs, PRIME)
    u = [wi * poly_eval(f, x, PRIME) % PRIME for wi, x in zip(w, xs)]
    for x in [0, 1, MAX_X, rng.randrange(1, MAX_X)]:
        if x not in xs:
            assert shamir._value_at(x, xs, u, PRIME) == poly_eval(f, x, PRIME)


def test_fraction_oracle_at_larger_threshold():
    rng = random.Random(5)
    t = 40
    xs = rng.sample(range(1, MAX_X + 1), 60)
    secrets = random_secrets(rng, 1)
    shares = split(secrets, t, xs)
    idx = rng.sample(range(60), t)
    ys = [shares[i][0] for i in idx]
    assert fraction_at_zero([xs[i] for i in idx], ys, PRIME) == \
        int.from_bytes(secrets[0], "little")


# ------------------------------------------------------------------------------------
# round trips


@pytest.mark.parametrize("t, n", [(1, 1), (1, 5), (2, 2), (2, 7), (5, 5), (16, 30), (30, 30),
                                  (60, 100)])
@pytest.mark.parametrize("seed", [0, 1])
def test_round_trip_random_subsets(t, n, seed):
    rng = random.Random(100 * t + 10 * n + seed)
    xs = rng.sample(range(1, MAX_X + 1), n)
    secrets = random_secrets(rng, 3) + [bytes(32), b"\xff" * 32]
    shares = split(secrets, t, xs)
    assert len(shares) == n and all(len(r) == len(secrets) for r in shares)
    assert all(isinstance(v, int) and 0 <= v < PRIME for r in shares for v in r)
    for _ in range(3):
        k = rng.randrange(t, n + 1)
        idx = rng.sample(range(n), k)                    # random subset, random order
        assert reconstruct([xs[i] for i in idx], [shares[i] for i in idx], t) == secrets
        idx = rng.sample(range(n), t)
        assert reconstruct([xs[i] for i in idx], [shares[i] for i in idx], t) == secrets


def test_round_trip_many_secrets_and_edge_values():
    secrets = [bytes(32), b"\xff" * 32, b"\x00" * 31 + b"\x80", b"\x01" + bytes(31)] + \
        [bytes([i]) * 32 for i in range(20)]
    xs = [1, 2, MAX_X, MAX_X - 1, 12345]
    shares = split(secrets, 3, xs)
    assert reconstruct(xs[2:], shares[2:], 3) == secrets
    assert reconstruct(xs, shares, 3) == secrets
    with pytest.raises(ProtocolError):      # shares of degree-2 polynomials are not constant
        reconstruct(xs, shares, 1)


def test_round_trip_input_forms():
    secrets = [bytearray(b"\x05" * 32), b"\x06" * 32]
    xs = (np.int64(7), np.uint32(8), 9)
    shares = split(secrets, 2, xs)
    want = [bytes(s) for s in secrets]
    enc = [[share_to_bytes(v) for v in r] for r in shares]
    assert reconstruct([7, 8, 9], enc, 2) == want                       # bytes
    assert reconstruct(np.array([9, 7]), [tuple(shares[2]), enc[0]], 2) == want   # mixed
    assert reconstruct([8, 9], [[bytearray(enc[1][0]), shares[1][1]], shares[2]], 2) == want
    assert reconstruct(range(7, 10), shares, np.int64(2)) == want
    assert split([], 2, [1, 2]) == [[], []]
    assert reconstruct([1, 2], [[], []], 2) == []


def test_reconstruct_cache_gives_the_same_result():
    rng = random.Random(9)
    xs = rng.sample(range(1, 1000), 40)
    secrets = random_secrets(rng, 2)
    shares = split(secrets, 25, xs)
    shamir._weights.cache_clear()
    first = reconstruct(xs, shares, 25)
    hits = shamir._weights.cache_info().hits
    assert reconstruct(xs, shares, 25) == first == secrets
    assert shamir._weights.cache_info().hits == hits + 1


@pytest.mark.slow
@settings(derandomize=True, max_examples=150, deadline=None)
@given(st.data())
def test_property_round_trip_and_tamper_detection(data):
    m = data.draw(st.integers(0, 4), label="m")
    secrets = data.draw(st.lists(st.binary(min_size=32, max_size=32), min_size=m, max_size=m))
    n = data.draw(st.integers(1, 24), label="n")
    xs = data.draw(st.lists(st.integers(1, MAX_X), min_size=n, max_size=n, unique=True))
    t = data.draw(st.integers(1, n), label="t")
    shares = split(secrets, t, xs)
    order = data.draw(st.permutations(range(n)))
    k = data.draw(st.integers(t, n), label="k")
    idx = order[:k]
    sub_x, sub_s = [xs[i] for i in idx], [list(shares[i]) for i in idx]
    assert reconstruct(sub_x, sub_s, t) == secrets
    if m and k > t:
        # one changed share among more than t points is always caught (the
        # points are then no codeword of the Reed-Solomon code of distance k-t+1)
        i = data.draw(st.integers(0, k - 1), label="i")
        j = data.draw(st.integers(0, m - 1), label="j")
        delta = data.draw(st.integers(1, PRIME - 1), label="delta")
        sub_s[i][j] = (sub_s[i][j] + delta) % PRIME
        with pytest.raises(ProtocolError):
            reconstruct(sub_x, sub_s, t)


# ------------------------------------------------------------------------------------
# docstring examples (pyfkm.secagg._shamir is not in test_doctests.MODULES)


def test_docstring_examples():
    result = doctest.testmod(shamir, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 10
    assert result.failed == 0


# ------------------------------------------------------------------------------------
# speed report (printed, never asserted; run with -s to see it)


def _best(fn, number, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def test_speed_report():
    rng = random.Random(0)
    secrets = random_secrets(rng, 2)
    xs30 = list(range(1, 31))
    xs999 = list(range(1, 1000))
    t_small = _best(lambda: split(secrets, 16, xs30), 300)
    t_big = _best(lambda: split(secrets, 500, xs999), 1, 2)
    shares = split(secrets, 500, xs999)
    idx = rng.sample(range(999), 500)
    sx, ss = [xs999[i] for i in idx], [shares[i] for i in idx]

    def uncached():
        shamir._weights.cache_clear()
        assert reconstruct(sx, ss, 500) == secrets

    t_unc = _best(uncached, 1, 2)
    t_cached = _best(lambda: reconstruct(sx, ss, 500), 5)
    print(f"\nsplit 2 secrets, 30 holders, t=16:   {t_small * 1e6:8.1f} us"
          f"\nsplit 2 secrets, 999 holders, t=500: {t_big * 1e3:8.1f} ms"
          f"\nreconstruct 2 secrets, 500 shares, t=500: uncached {t_unc * 1e3:.1f} ms,"
          f" cached {t_cached * 1e3:.2f} ms")
