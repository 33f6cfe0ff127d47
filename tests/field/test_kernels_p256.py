"""The 257-bit field kernels of :mod:`pyfkm.field.kernels` (issue 22):
``p256_dots`` (the Lagrange-weighted sums of a Shamir reconstruction) and
``p256_eval`` (the shares of a split), modulo ``P = 2**256 + 297``.

Expected values come from Python integers (``sum(a * b) % P`` and Horner's
rule with ``%`` after every step), written out here; inputs are random and
edge values (0, 1, ``P - 1``, ``2**256 - 1``, ``2**256``, values around the
limb boundaries), and the largest weights everywhere (the accumulator's
worst case).  Errors first.
"""
import random

import numpy as np
import pytest

from pyfkm.exceptions import FieldError
from pyfkm.field import kernels

P = 2 ** 256 + 297
EDGE = [0, 1, 2, 296, 2 ** 64 - 1, 2 ** 64, 2 ** 128 + 5, 2 ** 192 - 1, 2 ** 255,
        2 ** 256 - 1, 2 ** 256, 2 ** 256 + 1, 2 ** 256 + 296, P - 2, P - 1]


def enc(v):
    return v.to_bytes(33, "little")


def dec(out):
    return [int.from_bytes(out[k:k + 33], "little") for k in range(0, len(out), 33)]


def draw(rng, edge=0.3):
    return rng.choice(EDGE) if rng.random() < edge else rng.randrange(P)


def horner(coefs, x):
    acc = 0
    for c in coefs:
        acc = (acc * x + c) % P
    return acc


# ---------------------------------------------------------------- errors first

@pytest.mark.parametrize("bad", [P, P + 1, 2 ** 256 + 512, 2 ** 257, 2 ** 264 - 1])
@pytest.mark.parametrize("where", ["weights", "shares"])
def test_dots_refuse_an_element_not_below_p_naming_the_product(bad, where):
    rng = random.Random(1)
    n, t = 4, 3
    w = [[rng.randrange(P) for _ in range(t)] for _ in range(n)]
    s = [[rng.randrange(P) for _ in range(t)] for _ in range(n)]
    (w if where == "weights" else s)[2][1] = bad
    with pytest.raises(FieldError, match="product 2 "):
        kernels.p256_dots([b"".join(map(enc, r)) for r in w], [enc(v) for r in s for v in r], t)


@pytest.mark.parametrize("weights, shares, t, error", [
    ([enc(1)], [bytearray(enc(1))], 1, TypeError),          # not bytes
    ([enc(1)], [1], 1, TypeError),
    ([bytearray(enc(1))], [enc(1)], 1, TypeError),
    ([enc(1)], [enc(1)[:-1]], 1, ValueError),               # 32 bytes
    ([enc(1) + b"\0"], [enc(1)], 1, ValueError),            # weights not 33 t bytes
    ([enc(1)], [enc(1), enc(2)], 1, ValueError),            # n t shares
    ([enc(1)], [enc(1)], 2, ValueError),
    ([enc(1)], [enc(1)], 0, ValueError),                    # t >= 1
    ([], [], 0, ValueError),
    (5, [enc(1)], 1, TypeError),                            # not sequences
])
def test_dots_refuse_bad_arguments(weights, shares, t, error):
    with pytest.raises(error):
        kernels.p256_dots(weights, shares, t)


def test_eval_refuses_bad_arguments():
    xs = np.array([1, 2], dtype=np.uint64)
    with pytest.raises(FieldError, match="polynomial 1 "):
        kernels.p256_eval(np.frombuffer(enc(3) + enc(P), np.uint8), 2, xs)
    with pytest.raises(ValueError, match="2\\*\\*33"):
        kernels.p256_eval(np.frombuffer(enc(3), np.uint8), 1,
                          np.array([1, 2 ** 33], dtype=np.uint64))
    for coefs, m in [(enc(3)[:-1], 1), (enc(3) * 3, 2), (b"", 1), (enc(3), 0)]:
        with pytest.raises(ValueError):
            kernels.p256_eval(np.frombuffer(coefs, np.uint8), m, xs)


@pytest.mark.parametrize("m", [3, 2 ** 62, pow(33, -1, 2 ** 64), pow(33, -1, 2 ** 64) * 2 % 2 ** 64])
def test_eval_refuses_more_polynomials_than_the_coefficients_hold(m):
    """``m`` above ``len(coefs) / 33``, also an ``m`` whose ``33 m`` wraps
    around 2**64 to a divisor of the length (1 or 2: the remainder test alone
    passes, and the kernel would read and write far out of bounds)."""
    with pytest.raises(ValueError, match="coefficient bytes"):
        kernels.p256_eval(np.frombuffer(enc(0) * 2, np.uint8), m, np.array([1], np.uint64))


# ---------------------------------------------------------------- equalities

@pytest.mark.parametrize("n, t", [(1, 1), (3, 2), (12, 7), (5, 51), (2, 400)])
@pytest.mark.parametrize("seed", range(3))
def test_dots_equal_python_integers(n, t, seed):
    rng = random.Random(seed * 1000 + n * 10 + t)
    w = [[draw(rng) for _ in range(t)] for _ in range(n)]
    s = [[draw(rng) for _ in range(t)] for _ in range(n)]
    out = kernels.p256_dots([b"".join(map(enc, r)) for r in w], [enc(v) for r in s for v in r], t)
    assert isinstance(out, bytes) and len(out) == 33 * n
    assert dec(out) == [sum(a * b for a, b in zip(wr, sr)) % P for wr, sr in zip(w, s)]


@pytest.mark.parametrize("t", [1, 2, 1000, 20000])
@pytest.mark.parametrize("v", [P - 1, 2 ** 256 - 1, 2 ** 256])
def test_dots_with_the_largest_terms_everywhere(t, v):
    out = kernels.p256_dots([enc(P - 1) * t, enc(v) * t], [enc(v)] * t + [enc(P - 1)] * t, t)
    want = t * (P - 1) * v % P
    assert dec(out) == [want, want]


def test_dots_share_weight_objects_and_take_any_sequences():
    rng = random.Random(7)
    t = 4
    w = b"".join(enc(rng.randrange(P)) for _ in range(t))
    s = [enc(rng.randrange(P)) for _ in range(3 * t)]
    wi = [int.from_bytes(w[k:k + 33], "little") for k in range(0, 33 * t, 33)]
    want = [sum(a * int.from_bytes(b, "little") for a, b in zip(wi, s[g * t:(g + 1) * t])) % P
            for g in range(3)]
    assert dec(kernels.p256_dots([w, w, w], s, t)) == want
    assert dec(kernels.p256_dots((w, w, w), tuple(s), t)) == want
    assert kernels.p256_dots([], [], 3) == b""


@pytest.mark.parametrize("m, deg1, n", [(1, 1, 3), (2, 2, 5), (2, 17, 9), (3, 51, 20),
                                        (1, 300, 4)])
def test_eval_equals_horner_on_python_integers(m, deg1, n):
    rng = random.Random(m * 100 + deg1 + n)
    coefs = [[draw(rng) for _ in range(deg1)] for _ in range(m)]
    xs = [rng.choice([0, 1, 2 ** 32, 2 ** 33 - 1, rng.randrange(2 ** 33)]) for _ in range(n)]
    out = kernels.p256_eval(np.frombuffer(b"".join(enc(c) for r in coefs for c in r), np.uint8),
                            m, np.array(xs, dtype=np.uint64))
    assert dec(out) == [horner(coefs[j], x) for x in xs for j in range(m)]


def test_eval_with_the_largest_values_and_no_points():
    coefs = [P - 1] * 40
    xs = [2 ** 33 - 1, 2 ** 32]
    out = kernels.p256_eval(np.frombuffer(enc(P - 1) * 40, np.uint8), 1,
                            np.array(xs, dtype=np.uint64))
    assert dec(out) == [horner(coefs, x) for x in xs]
    assert kernels.p256_eval(np.frombuffer(enc(1), np.uint8), 1,
                             np.zeros(0, dtype=np.uint64)) == b""
