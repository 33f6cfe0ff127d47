"""Dense polynomials over F_p: arithmetic, Berlekamp-Massey, roots and
factorization.

Conventions
-----------
A polynomial is a 1-D ``numpy.uint64`` array of coefficients, **low degree
first**.  Results are normalized (no trailing zeros; the zero polynomial is
an empty array).  Inputs may be any array-like of integers, may carry
trailing zeros, and must be reduced (``0 <= c < p``).  The modulus must be a
prime ``p < 2**63``; both are checked and violations raise
:class:`~pyfkm.exceptions.FieldError` (a ``ValueError``).

Every kernel is C (``csrc/fkm_poly.c``, ``fkm_polyfac.c``) and runs without
the GIL.  Products use a number-theoretic transform when ``p - 1`` has a
large power of two (the default prime), else Karatsuba.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core import _field
from ..exceptions import FieldError
from ..rng import SeedLike, as_generator
from ._args import _EMPTY, _as_elements, _as_int, _as_poly, _check_modulus, _trim
from .primes import Field

__all__ = ["poly_mul", "poly_divmod", "poly_gcd", "poly_xgcd", "poly_powmod",
           "poly_derivative", "poly_eval", "berlekamp_massey", "roots", "factor",
           "squarefree_factorization"]


# ---------------------------------------------------------------------------
# polynomial arithmetic

def poly_mul(a: ArrayLike, b: ArrayLike, p: int) -> NDArray[np.uint64]:
    """The product ``a * b``.

    Parameters
    ----------
    a : array-like of int
        Coefficients, low degree first, reduced modulo ``p``.
    b : array-like of int
        Coefficients, low degree first, reduced modulo ``p``.
    p : int
        Prime modulus, ``p < 2**63``.

    Returns
    -------
    product : ndarray of uint64
        ``a * b``, low degree first, normalized.

    Raises
    ------
    FieldError
        If ``p`` is not a prime below ``2**63`` or a coefficient is not reduced.

    Examples
    --------
    >>> poly_mul([1, 1], [12, 1], 13).tolist()     # (1 + x)(x - 1) = x^2 - 1
    [12, 0, 1]
    """
    p = _check_modulus(p)
    a, b = _as_poly(a, p, "a"), _as_poly(b, p, "b")
    if a.size == 0 or b.size == 0:
        return _EMPTY.copy()
    return _field.mul(a, b, p)


def poly_divmod(a: ArrayLike, b: ArrayLike, p: int) -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
    """Quotient and remainder: ``a = q b + r`` with ``deg r < deg b``.

    Parameters
    ----------
    a : array-like of int
        Dividend, low degree first, reduced modulo ``p``.
    b : array-like of int
        Nonzero divisor, low degree first, reduced modulo ``p``.
    p : int
        Prime modulus, ``p < 2**63``.

    Returns
    -------
    q : ndarray of uint64
        Quotient, low degree first, normalized.
    r : ndarray of uint64
        Remainder, ``deg r < deg b``, low degree first, normalized.

    Raises
    ------
    FieldError
        If ``p`` is not a prime below ``2**63`` or a coefficient is not reduced. Also if ``b`` is zero.

    Examples
    --------
    >>> [x.tolist() for x in poly_divmod([12, 0, 1], [1, 1], 13)]
    [[12, 1], []]
    """
    p = _check_modulus(p)
    a, b = _as_poly(a, p, "a"), _as_poly(b, p, "b")
    if b.size == 0:
        raise FieldError("polynomial division by zero")
    if a.size < b.size:
        return _EMPTY.copy(), a.copy()
    q, r = _field.divrem(a, b, p)
    return q, _trim(r)


def poly_gcd(a: ArrayLike, b: ArrayLike, p: int) -> NDArray[np.uint64]:
    """The monic greatest common divisor (empty when ``a = b = 0``).

    Parameters
    ----------
    a : array-like of int
        Coefficients, low degree first, reduced modulo ``p``.
    b : array-like of int
        Coefficients, low degree first, reduced modulo ``p``.
    p : int
        Prime modulus, ``p < 2**63``.

    Returns
    -------
    g : ndarray of uint64
        The monic gcd, low degree first, normalized.

    Raises
    ------
    FieldError
        If ``p`` is not a prime below ``2**63`` or a coefficient is not reduced.

    Examples
    --------
    >>> poly_gcd([12, 0, 1], [1, 2, 1], 13).tolist()   # gcd(x^2-1, (x+1)^2)
    [1, 1]
    """
    p = _check_modulus(p)
    return _field.gcd(_as_poly(a, p, "a"), _as_poly(b, p, "b"), p)


def poly_xgcd(a: ArrayLike, b: ArrayLike, p: int) -> tuple[NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64]]:
    """``(g, s, t)`` with ``s a + t b = g`` and ``g`` the monic gcd.

    Parameters
    ----------
    a, b : array-like of int
        Coefficients, low degree first, reduced modulo ``p``.
    p : int
        Prime modulus, ``p < 2**63``.

    Returns
    -------
    g, s, t : ndarray of uint64
        ``s a + t b = g``, ``g`` monic (low degree first).

    Examples
    --------
    >>> g, s, t = poly_xgcd([12, 0, 1], [1, 2, 1], 13)   # gcd(x^2-1, (x+1)^2)
    >>> g.tolist()
    [1, 1]
    """
    p = _check_modulus(p)
    return _field.xgcd(_as_poly(a, p, "a"), _as_poly(b, p, "b"), p)


def poly_powmod(base: ArrayLike, e: int, f: ArrayLike, p: int) -> NDArray[np.uint64]:
    """``base**e mod f`` for an integer ``e >= 0`` of any size and ``deg f >= 1``.

    Parameters
    ----------
    base : array-like of int
        Coefficients, low degree first, reduced modulo ``p``.
    e : int
        Exponent >= 0 (any size).
    f : array-like of int
        Modulus polynomial of degree >= 1, low degree first, reduced modulo ``p``.
    p : int
        Prime modulus, ``p < 2**63``.

    Returns
    -------
    r : ndarray of uint64
        ``base**e mod f``, low degree first, normalized.

    Raises
    ------
    FieldError
        If ``p`` is not a prime below ``2**63`` or a coefficient is not reduced. Also if ``e < 0`` or ``deg f < 1``.

    Examples
    --------
    >>> poly_powmod([0, 1], 13, [1, 0, 1], 13).tolist()   # x^13 mod x^2 + 1
    [0, 1]
    """
    p = _check_modulus(p)
    e = _as_int(e, "e")
    if e < 0:
        raise FieldError(f"e must be >= 0, got {e}")
    base, f = _as_poly(base, p, "base"), _as_poly(f, p, "f")
    if f.size < 2:
        raise FieldError("the modulus polynomial f must have degree >= 1")
    nbytes = max(8, -(-e.bit_length() // 64) * 8)
    limbs = np.frombuffer(e.to_bytes(nbytes, "little"), dtype="<u8").astype(np.uint64)
    return _trim(_field.powmod(base, limbs, f, p))


def poly_derivative(f: ArrayLike, p: int) -> NDArray[np.uint64]:
    """The formal derivative ``f'``.

    Parameters
    ----------
    f : array-like of int
        Coefficients, low degree first, reduced modulo ``p``.
    p : int
        Prime modulus, ``p < 2**63``.

    Returns
    -------
    df : ndarray of uint64
        ``f'``, low degree first, normalized.

    Raises
    ------
    FieldError
        If ``p`` is not a prime below ``2**63`` or a coefficient is not reduced.

    Examples
    --------
    >>> poly_derivative([2, 0, 0, 1], 3).tolist()   # (x^3 + 2)' = 3x^2 = 0 mod 3
    []
    """
    p = _check_modulus(p)
    return _trim(_field.derivative(_as_poly(f, p, "f"), p))


def poly_eval(f: ArrayLike, x: int | ArrayLike, p: int) -> int | NDArray[np.uint64]:
    """``f(x)``: an int for a scalar ``x``, a uint64 array for a 1-D array
    (multipoint evaluation through a subproduct tree when large).

    Parameters
    ----------
    f : array-like of int
        Coefficients, low degree first, reduced modulo ``p``.
    x : int or array-like of int
        Point(s), reduced modulo ``p``.
    p : int
        Prime modulus, ``p < 2**63``.

    Returns
    -------
    value : int or ndarray of uint64
        ``f(x)`` (an array of the values for an array ``x``).

    Raises
    ------
    FieldError
        If ``p`` is not a prime below ``2**63`` or a coefficient is not reduced.

    Examples
    --------
    >>> poly_eval([1, 0, 1], 5, 13), poly_eval([1, 0, 1], [0, 5], 13).tolist()
    (0, [1, 0])
    """
    p = _check_modulus(p)
    f = _as_poly(f, p, "f")
    if np.ndim(x) == 0:
        xv = _as_int(x, "x")
        if not 0 <= xv < p:
            raise FieldError(f"x = {xv} is not reduced modulo p = {p}")
        return _field.evaluate(f, xv, p)
    return _field.evaluate_many(f, _as_elements(x, p, "x"), p)


# ---------------------------------------------------------------------------
# decoding

def berlekamp_massey(seq: ArrayLike, p: int) -> NDArray[np.uint64]:
    """The shortest linear recurrence of ``seq`` (Berlekamp-Massey).

    Returns the connection polynomial ``C`` (low degree first, ``C[0] = 1``,
    ``len(C) = L + 1`` with ``L`` the linear complexity, so ``C[L]`` may be
    zero) such that ``sum_k C[k] seq[i - k] = 0 mod p`` for ``L <= i < N``.
    For power sums of ``m`` distinct nonzero ``r_j`` with nonzero counts and
    ``N >= 2m``, ``C = prod_j (1 - r_j z)``.  O(N^2) with lazily reduced
    dot products.

    Parameters
    ----------
    seq : array-like of int
        The sequence, reduced modulo ``p``.
    p : int
        Prime modulus, ``p < 2**63``.

    Returns
    -------
    C : ndarray of uint64
        The connection polynomial, low degree first, normalized.

    Raises
    ------
    FieldError
        If ``p`` is not a prime below ``2**63`` or a coefficient is not reduced.

    Examples
    --------
    >>> berlekamp_massey([1, 1, 2, 3, 5, 8], 13).tolist()   # Fibonacci
    [1, 12, 12]
    """
    p = _check_modulus(p)
    return _field.berlekamp_massey(_as_elements(seq, p, "seq"), p)


def roots(f: ArrayLike, p: int, *, require_split: bool = False, random_state: SeedLike = None
          ) -> tuple[NDArray[np.uint64], NDArray[np.int64]]:
    """Distinct roots of a nonzero ``f`` in F_p, with multiplicities.

    Parameters
    ----------
    f : array-like of int
        Coefficients, low degree first; must not be the zero polynomial.
    p : int
        Prime modulus.
    require_split : bool, default False
        The decoder's fast path: ``f`` must be a nonzero constant times a
        product of distinct linear factors, which one modular power decides
        (``x**p = x mod f``); otherwise :class:`~pyfkm.exceptions.DecodeError` is raised.
    random_state : None, int or numpy Generator
        Drives the random splitting (Rabin / Cantor-Zassenhaus).  The result
        does not depend on it; the running time does, slightly.

    Returns
    -------
    roots : ndarray of uint64, ascending
    multiplicities : ndarray of int64

    Examples
    --------
    >>> r, m = roots([12, 0, 1, 0], 13)      # x^2 - 1
    >>> r.tolist(), m.tolist()
    ([1, 12], [1, 1])
    """
    p = _check_modulus(p)
    f = _as_poly(f, p, "f")
    if f.size == 0:
        raise FieldError("the zero polynomial has every element as a root")
    if f.size == 1:
        return _EMPTY.copy(), np.zeros(0, dtype=np.int64)
    r, m = _field.roots(f, p, bool(require_split), as_generator(random_state))
    order = np.argsort(r, kind="stable")
    return r[order], m[order]


def _monic_of(f: ArrayLike, p: int, zero_message: str) -> tuple[int, int, NDArray[np.uint64]]:
    """``(p, lc, g)`` for the factorizations: the checked modulus, the
    leading coefficient of ``f`` and ``f / lc`` (monic, uint64); FieldError
    with ``zero_message`` for the zero polynomial."""
    p = _check_modulus(p)
    f = _as_poly(f, p, "f")
    if f.size == 0:
        raise FieldError(zero_message)
    lc = int(f[-1])
    if lc != 1:
        f = Field(p).mul(f, pow(lc, -1, p))
    return p, lc, np.ascontiguousarray(f, dtype=np.uint64)


def _sort_key(item: tuple[NDArray[np.uint64], int]) -> tuple[int, tuple[int, ...], int]:
    g, e = item
    return (g.size, tuple(int(c) for c in g), e)


def factor(f: ArrayLike, p: int, *, random_state: SeedLike = None
           ) -> tuple[int, list[tuple[NDArray[np.uint64], int]]]:
    """Factor ``f`` into monic irreducibles over F_p.

    Returns ``(lc, [(factor, exponent), ...])`` with ``f = lc * prod factor**exponent``,
    factors as uint64 arrays (low degree first), sorted by degree then
    coefficients.  Square-free, distinct-degree, then equal-degree
    factorization (Cantor-Zassenhaus; trace map for p = 2).

    Parameters
    ----------
    f : array-like of int
        Nonzero polynomial, low degree first, reduced modulo ``p``.
    p : int
        Prime modulus, ``p < 2**63``.
    random_state : None, int or numpy Generator, default=None
        Drives the random splitting; the result does not depend on it.

    Returns
    -------
    lc : int
        Leading coefficient of ``f``.
    factors : list of (ndarray of uint64, int)
        Monic irreducible factors and their exponents.

    Raises
    ------
    FieldError
        If ``p`` is not a prime below ``2**63`` or a coefficient is not reduced. Also for the zero polynomial.

    Examples
    --------
    >>> lc, facs = factor([2, 0, 2], 3)           # 2x^2 + 2 = 2 (x^2 + 1), irreducible mod 3
    >>> lc, [(g.tolist(), e) for g, e in facs]
    (2, [([1, 0, 1], 1)])
    """
    p, lc, g = _monic_of(f, p, "cannot factor the zero polynomial")
    if g.size == 1:
        return lc, []
    facs = _field.factor(g, p, as_generator(random_state))
    return lc, sorted(facs, key=_sort_key)


def squarefree_factorization(f: ArrayLike, p: int) -> tuple[int, list[tuple[NDArray[np.uint64], int]]]:
    """Square-free factorization ``f = lc * prod g_i**i``.

    Returns ``(lc, [(g, i), ...])`` with monic, square-free, pairwise coprime
    ``g`` sorted by multiplicity ``i``.

    Parameters
    ----------
    f : array-like of int
        Nonzero polynomial, low degree first, reduced modulo ``p``.
    p : int
        Prime modulus, ``p < 2**63``.

    Returns
    -------
    lc : int
        Leading coefficient of ``f``.
    factors : list of (ndarray of uint64, int)
        Square-free parts ``g_i`` and multiplicities ``i``.

    Raises
    ------
    FieldError
        If ``p`` is not a prime below ``2**63`` or a coefficient is not reduced. Also for the zero polynomial.

    Examples
    --------
    >>> lc, facs = squarefree_factorization([1, 2, 1], 13)   # (x + 1)^2
    >>> lc, [(g.tolist(), i) for g, i in facs]
    (1, [([1, 1], 2)])
    """
    p, lc, g = _monic_of(f, p, "the zero polynomial has no square-free factorization")
    if g.size == 1:
        return lc, []
    facs = _field.squarefree(g, p)
    return lc, sorted(facs, key=lambda t: (t[1], t[0].size, tuple(int(c) for c in t[0])))
