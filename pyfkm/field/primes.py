"""Primes and the prime field F_p.

:func:`is_prime`, :func:`prev_prime` and :func:`ntt_prime` find moduli;
:class:`Field` is elementwise, vectorized arithmetic modulo one of them.  The
kernels are C (``csrc/fkm_field.c``) and run without the GIL.

The default prime
-----------------
:data:`DEFAULT_PRIME` ``= 65535 * 2**46 + 1 = 4611615649683210241`` is the
largest prime below ``2**62`` whose multiplicative group has a subgroup of
order ``2**40`` or more.  Below ``2**62`` so the transform's lazy butterflies
keep values under ``4p < 2**64``; close to ``2**62`` so bin indices of up to
61 bits fit in the "index" encoding of the secure aggregation; ``2**46``
divides ``p - 1``, so transforms of every length a decoder can need exist.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core import _field
from ..exceptions import FieldError
from ._args import _as_elements, _as_int, _check_modulus

__all__ = ["DEFAULT_PRIME", "is_prime", "prev_prime", "ntt_prime", "Field"]

DEFAULT_PRIME = 4611615649683210241
"""The protocols' default modulus: ``65535 * 2**46 + 1`` (see module notes)."""


def is_prime(n: int) -> bool:
    """Deterministic primality test for ``0 <= n < 2**64``.

    Miller-Rabin to the first twelve prime bases, which decides every
    64-bit integer.

    Parameters
    ----------
    n : int
        ``0 <= n < 2**64``.

    Returns
    -------
    prime : bool
        Whether ``n`` is prime.

    Raises
    ------
    FieldError
        If ``n`` is out of range.

    Examples
    --------
    >>> is_prime(2**61 - 1), is_prime(3215031751)
    (True, False)
    """
    n = _as_int(n, "n")
    if n < 0 or n >= 1 << 64:
        raise FieldError(f"n must satisfy 0 <= n < 2**64, got {n}")
    return _field.is_prime(n)


def prev_prime(n: int) -> int:
    """The largest prime strictly below ``n`` (``3 <= n <= 2**64``).

    Parameters
    ----------
    n : int
        ``3 <= n <= 2**64``.

    Returns
    -------
    p : int
        The largest prime below ``n``.

    Raises
    ------
    FieldError
        If ``n`` is out of range.

    Examples
    --------
    >>> prev_prime(2**62)
    4611686018427387847
    """
    n = _as_int(n, "n")
    if n < 3 or n > 1 << 64:
        raise FieldError(f"n must satisfy 3 <= n <= 2**64, got {n}")
    return _field.prev_prime(n % (1 << 64))


def ntt_prime(bits: int, two_adicity: int) -> int:
    """The largest prime ``p < 2**bits`` with ``2**two_adicity`` dividing ``p - 1``.

    Such primes admit number-theoretic transforms of every length up to
    ``2**two_adicity``.  ``bits`` at most 64, ``1 <= two_adicity < bits``.

    Parameters
    ----------
    bits : int
        ``2 <= bits <= 64``.
    two_adicity : int
        ``1 <= two_adicity < bits``.

    Returns
    -------
    p : int
        The prime.

    Raises
    ------
    FieldError
        If the arguments are out of range or no such prime exists.

    Examples
    --------
    >>> ntt_prime(62, 40) == DEFAULT_PRIME
    True
    """
    bits, k = _as_int(bits, "bits"), _as_int(two_adicity, "two_adicity")
    if not 2 <= bits <= 64 or not 1 <= k < bits:
        raise FieldError(
            f"need 2 <= bits <= 64 and 1 <= two_adicity < bits, got {bits}, {k}")
    step = 1 << k
    c = ((1 << bits) - 2) // step
    while c > 0:
        cand = c * step + 1
        if _field.is_prime(cand):
            return cand
        c -= 1
    raise FieldError(f"no prime below 2**{bits} is 1 modulo 2**{k}")


class Field:
    """The prime field F_p with elementwise, vectorized arithmetic.

    Methods accept Python ints or integer arrays (broadcast like numpy) of
    reduced elements and return a Python int for scalar input, else a
    uint64 array.

    Parameters
    ----------
    p : int
        Prime modulus, ``p < 2**63``.

    Raises
    ------
    FieldError
        If ``p`` is not a prime below ``2**63``.

    Examples
    --------
    >>> F = Field(13)
    >>> F.mul(7, 5), F.inv(7), F.pow([2, 3], 12).tolist()
    (9, 2, [1, 1])
    """

    def __init__(self, p: int) -> None:
        self.p = _check_modulus(p)

    def __repr__(self) -> str:
        return f"Field({self.p})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Field) and other.p == self.p

    def __hash__(self) -> int:
        return hash(("Field", self.p))

    def _run(self, op: str, a: ArrayLike, b: ArrayLike | None = None, *,
             b_is_exponent: bool = False) -> int | NDArray[np.uint64]:
        scalar = np.ndim(a) == 0 and (b is None or np.ndim(b) == 0)
        A = _as_elements(np.atleast_1d(a), self.p, "a", ndim=None)
        if b is None:
            B = A
        elif b_is_exponent:
            B = np.asarray(b)
            if B.dtype.kind not in "iu" and B.dtype != object:
                raise FieldError("exponents must be integers")
            if B.size and int(np.min(B)) < 0:
                raise FieldError("exponents must be >= 0")
            if B.size and int(np.max(B)) >= 1 << 64:
                # a**e = a**e' with e' = 1 + (e - 1) mod (p - 1) for e >= 1,
                # which also keeps 0**e = 0
                q = self.p - 1
                B = np.array([int(e) if int(e) < 1 << 64 else 1 + (int(e) - 1) % q
                              for e in B.ravel()], dtype=object).reshape(B.shape)
            B = np.atleast_1d(B.astype(np.uint64))
        else:
            B = _as_elements(np.atleast_1d(b), self.p, "b", ndim=None)
        A, B = np.broadcast_arrays(A, B)
        shape = A.shape
        out = _field.elementwise(op, np.ascontiguousarray(A).ravel(),
                                 np.ascontiguousarray(B).ravel(), self.p)
        out = out.reshape(shape)
        return int(out[0]) if scalar else out

    def add(self, a: ArrayLike, b: ArrayLike) -> int | NDArray[np.uint64]:
        """``(a + b) mod p``.

        Parameters
        ----------
        a : int or array-like of int
            Reduced element(s).
        b : int or array-like of int
            Reduced element(s).

        Returns
        -------
        result : int or ndarray of uint64
            ``(a + b) mod p`` (an int for scalar input).
        """
        return self._run("add", a, b)

    def sub(self, a: ArrayLike, b: ArrayLike) -> int | NDArray[np.uint64]:
        """``(a - b) mod p``.

        Parameters
        ----------
        a : int or array-like of int
            Reduced element(s).
        b : int or array-like of int
            Reduced element(s).

        Returns
        -------
        result : int or ndarray of uint64
            ``(a - b) mod p`` (an int for scalar input).
        """
        return self._run("sub", a, b)

    def neg(self, a: ArrayLike) -> int | NDArray[np.uint64]:
        """``-a mod p``.

        Parameters
        ----------
        a : int or array-like of int
            Reduced element(s).

        Returns
        -------
        result : int or ndarray of uint64
            ``-a mod p`` (an int for scalar input).
        """
        return self._run("neg", a)

    def mul(self, a: ArrayLike, b: ArrayLike) -> int | NDArray[np.uint64]:
        """``a * b mod p``.

        Parameters
        ----------
        a : int or array-like of int
            Reduced element(s).
        b : int or array-like of int
            Reduced element(s).

        Returns
        -------
        result : int or ndarray of uint64
            ``a * b mod p`` (an int for scalar input).
        """
        return self._run("mul", a, b)

    def pow(self, a: ArrayLike, e: ArrayLike) -> int | NDArray[np.uint64]:
        """``a**e mod p`` for integer exponents ``e >= 0`` (``0**0 = 1``).

        Parameters
        ----------
        a : int or array-like of int
            Reduced element(s).
        e : int or array-like of int
            Exponents >= 0 (any size).

        Returns
        -------
        result : int or ndarray of uint64
            ``a**e mod p`` (an int for scalar input).
        """
        return self._run("pow", a, e, b_is_exponent=True)

    def inv(self, a: ArrayLike) -> int | NDArray[np.uint64]:
        """The inverse of nonzero ``a``; :class:`~pyfkm.exceptions.FieldError` if any
        ``a == 0``.

        Parameters
        ----------
        a : int or array-like of int
            Nonzero reduced element(s).

        Returns
        -------
        result : int or ndarray of uint64
            ``a**-1 mod p`` (an int for scalar input).

        Raises
        ------
        FieldError
            If any ``a == 0``.
        """
        A = _as_elements(np.atleast_1d(a), self.p, "a", ndim=None)
        if np.any(A == 0):
            raise FieldError("0 has no inverse")
        return self._run("inv", a)
