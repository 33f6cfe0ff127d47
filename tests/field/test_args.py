"""Argument checks shared by every pyfkm.field function (pyfkm.field._args):
exception classes, bad moduli, unreduced entries, zero polynomials, inputs
never modified.  The oracles are described in tests/_helpers/field.py."""
import numpy as np
import pytest

import pyfkm.exceptions
from pyfkm.exceptions import InvalidInputError, PyfkmError
from pyfkm.field import (DecodeError, Field, FieldError, VandermondeSolver, berlekamp_massey,
                         factor, poly_derivative, poly_divmod, poly_eval, poly_gcd, poly_mul,
                         poly_powmod, poly_xgcd, roots, squarefree_factorization,
                         vandermonde_solve)
from _helpers.field import DEFAULT, distinct_elems, rand_poly


# --------------------------------------------------------------------------
# Errors (first)
# --------------------------------------------------------------------------

def test_exception_classes():
    assert pyfkm.exceptions.FieldError is FieldError
    assert pyfkm.exceptions.DecodeError is DecodeError
    assert issubclass(FieldError, InvalidInputError)
    assert issubclass(FieldError, ValueError)
    assert issubclass(DecodeError, PyfkmError)
    assert issubclass(DecodeError, ValueError)


CALLS = {
    "Field": lambda p: Field(p),
    "poly_mul": lambda p: poly_mul([1, 1], [1], p),
    "poly_divmod": lambda p: poly_divmod([1, 1], [1], p),
    "poly_gcd": lambda p: poly_gcd([1, 1], [1], p),
    "poly_xgcd": lambda p: poly_xgcd([1, 1], [1], p),
    "poly_powmod": lambda p: poly_powmod([0, 1], 5, [1, 0, 1], p),
    "poly_derivative": lambda p: poly_derivative([1, 1], p),
    "poly_eval": lambda p: poly_eval([1, 1], 1, p),
    "poly_eval_multi": lambda p: poly_eval([1, 1], np.array([1], dtype=np.uint64), p),
    "berlekamp_massey": lambda p: berlekamp_massey([1, 1, 1], p),
    "roots": lambda p: roots([1, 1], p),
    "roots_split": lambda p: roots([1, 1], p, require_split=True),
    "factor": lambda p: factor([1, 1], p),
    "squarefree_factorization": lambda p: squarefree_factorization([1, 1], p),
    "vandermonde_solve": lambda p: vandermonde_solve([1], [1], p),
    "VandermondeSolver": lambda p: VandermondeSolver([1], p),
}
# not prime: 0, 1, 4, 561 (Carmichael), 3215031751 (strong pseudoprime to 2, 3, 5, 7),
# 2**31; out of range: negative, 2**63 - 1 (= 7^2 * 73 * ...), 2**64 - 59 (prime >= 2**63),
# 2**89 - 1 (Mersenne prime, does not fit in 64 bits).
BAD_MODULI = [0, 1, 4, 561, 3215031751, 2**31, -7, 2**63 - 1, 2**64 - 59, 2**89 - 1]


@pytest.mark.parametrize("p", BAD_MODULI)
@pytest.mark.parametrize("name", sorted(CALLS))
def test_bad_modulus(name, p):
    with pytest.raises(FieldError):
        CALLS[name](p)


def _unreduced_calls(p, bad):
    return [
        lambda: poly_mul([1, bad], [1], p),
        lambda: poly_mul([1], [bad, 1], p),
        lambda: poly_divmod([bad, 1], [1, 1], p),
        lambda: poly_divmod([1, 1], [1, bad], p),
        lambda: poly_gcd([bad], [1, 1], p),
        lambda: poly_gcd([1, 1], [0, bad], p),
        lambda: poly_xgcd([bad, 1], [1, 1], p),
        lambda: poly_xgcd([1, 1], [bad, 1], p),
        lambda: poly_powmod([bad, 1], 3, [1, 0, 1], p),
        lambda: poly_powmod([0, 1], 3, [1, bad, 1], p),
        lambda: poly_derivative([1, 1, bad], p),
        lambda: poly_eval([1, bad], 1, p),
        lambda: poly_eval([1, 1], bad, p),
        lambda: poly_eval([1, 1], [1, bad, 2], p),
        lambda: berlekamp_massey([1, bad, 1], p),
        lambda: roots([bad, 1], p),
        lambda: roots([1, bad, 1], p, require_split=True),
        lambda: factor([1, 1, bad], p),
        lambda: squarefree_factorization([bad, 1], p),
        lambda: vandermonde_solve([1, bad], [1, 1], p),
        lambda: vandermonde_solve([1, 2], [1, bad], p),
        lambda: vandermonde_solve([1, 2], [[1, 1], [bad, 1]], p),
        lambda: VandermondeSolver([2, bad], p),
        lambda: VandermondeSolver([1, 2], p).solve([bad, 0]),
        lambda: Field(p).add(bad, 1),
        lambda: Field(p).mul(1, bad),
    ]


@pytest.mark.parametrize("p", [13, DEFAULT])
@pytest.mark.parametrize("which", ["p", "p+5", "-1", "2**64"])
def test_unreduced_entries(p, which):
    bad = {"p": p, "p+5": p + 5, "-1": -1, "2**64": 2**64}[which]
    for k, call in enumerate(_unreduced_calls(p, bad)):
        with pytest.raises(FieldError):
            call()


@pytest.mark.parametrize("p", [13, DEFAULT])
def test_unreduced_numpy_arrays(p):
    neg = np.array([1, -1, 1], dtype=np.int64)
    big = np.array([1, p, 1], dtype=np.uint64)
    for a in (neg, big):
        with pytest.raises(FieldError):
            poly_mul(a, [1], p)
        with pytest.raises(FieldError):
            roots(a, p)
        with pytest.raises(FieldError):
            berlekamp_massey(a, p)
        with pytest.raises(FieldError):
            poly_eval([1, 2], a, p)
        with pytest.raises(FieldError):
            Field(p).add(a, np.zeros(3, dtype=np.uint64) if a.dtype == np.uint64 else 0)


@pytest.mark.parametrize("p", [2, 13, DEFAULT])
def test_zero_polynomial_errors(p):
    for z in ([], [0], [0, 0, 0], np.zeros(4, dtype=np.uint64)):
        with pytest.raises(FieldError):
            roots(z, p)
        with pytest.raises(FieldError):
            roots(z, p, require_split=True)
        with pytest.raises(FieldError):
            factor(z, p)
        with pytest.raises(FieldError):
            poly_divmod([1, 1], z, p)  # division by zero
        with pytest.raises(FieldError):
            poly_powmod([0, 1], 3, z, p)  # modulus must be nonconstant


@pytest.mark.parametrize("p", [2, 13, DEFAULT])
def test_powmod_constant_modulus_and_negative_exponent(p):
    with pytest.raises(FieldError):
        poly_powmod([0, 1], 3, [1], p)
    with pytest.raises(FieldError):
        poly_powmod([0, 1], 3, [1, 0, 0], p)  # trailing zeros: still the constant 1
    with pytest.raises(ValueError):
        poly_powmod([0, 1], -1, [1, 1], p)


@pytest.mark.parametrize("p", [13, DEFAULT])
def test_inputs_not_modified(p):
    # every function must leave caller arrays alone (e.g. no in-place monic / reduction)
    rng = np.random.default_rng(37)
    a = rand_poly(rng, 40, p)
    a[-1] = 3              # not monic
    b = rand_poly(rng, 25, p)
    b[-1] = 5
    tz = np.concatenate([a, np.zeros(3, dtype=np.uint64)])   # trailing zeros
    nodes = np.array(distinct_elems(rng, 8, p, low=1), dtype=np.uint64)
    rhs = rng.integers(0, p, (8, 2), dtype=np.uint64)
    xs = rng.integers(0, p, 30, dtype=np.uint64)
    arrays = (a, b, tz, nodes, rhs, xs)
    copies = [x.copy() for x in arrays]
    poly_mul(a, b, p)
    poly_divmod(a, b, p)
    poly_divmod(tz, b, p)
    poly_gcd(a, b, p)
    poly_xgcd(a, b, p)
    poly_powmod(a, 2**70, b, p)
    poly_derivative(tz, p)
    poly_eval(a, xs, p)
    berlekamp_massey(a, p)
    roots(tz, p, random_state=0)
    factor(tz, p, random_state=0)
    squarefree_factorization(tz, p)
    vandermonde_solve(nodes, rhs, p)
    VandermondeSolver(nodes, p).solve(rhs[:, 0])
    Field(p).inv(nodes)
    Field(p).mul(xs, xs)
    for x, c in zip(arrays, copies):
        assert np.array_equal(x, c)
