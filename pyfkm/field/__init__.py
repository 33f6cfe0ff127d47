"""Prime-field algebra: arithmetic in F_p and dense polynomials over F_p.

This is the decoder engine of pyfkm's secure aggregation.  A server receives
power sums ``S_i = sum_j q_j r_j**i mod p`` of a sparse multiset it may not
see otherwise and recovers the ``r_j`` and ``q_j`` exactly:

1. :func:`berlekamp_massey` finds the connection polynomial
   ``C(z) = prod_j (1 - r_j z)`` from ``2m`` power sums;
2. :func:`roots` with ``require_split=True`` finds the ``r_j`` as the roots
   of its reversal, and raises :class:`DecodeError` when that polynomial
   does not split into distinct linear factors (corrupted or over-full
   input);
3. :func:`vandermonde_solve` (or a reusable :class:`VandermondeSolver`)
   recovers the ``q_j`` from the first ``m`` sums.

Conventions
-----------
A polynomial is a 1-D ``numpy.uint64`` array of coefficients, **low degree
first**.  Results are normalized (no trailing zeros; the zero polynomial is
an empty array).  Inputs may be any array-like of integers, may carry
trailing zeros, and must be reduced (``0 <= c < p``).  The modulus must be a
prime ``p < 2**63``; both are checked and violations raise
:class:`FieldError` (a ``ValueError``).

Every kernel is C (``csrc/fkm_field.c``, ``fkm_poly.c``, ``fkm_polyfac.c``,
``fkm_vdm.c``) and runs without the GIL.  Products use a number-theoretic
transform when ``p - 1`` has a large power of two (the default prime), else
Karatsuba.

The default prime
-----------------
:data:`DEFAULT_PRIME` ``= 65535 * 2**46 + 1 = 4611615649683210241`` is the
largest prime below ``2**62`` whose multiplicative group has a subgroup of
order ``2**40`` or more.  Below ``2**62`` so the transform's lazy butterflies
keep values under ``4p < 2**64``; close to ``2**62`` so bin indices of up to
61 bits fit in the "index" encoding of the secure aggregation; ``2**46``
divides ``p - 1``, so transforms of every length a decoder can need exist.

Examples
--------
>>> import numpy as np
>>> from pyfkm import field
>>> p = field.DEFAULT_PRIME
>>> r, q = np.array([3, 10, 7], dtype=np.uint64), [2, 1, 5]
>>> S = [sum(qj * pow(int(rj), i, p) for qj, rj in zip(q, r)) % p for i in range(6)]
>>> C = field.berlekamp_massey(S, p)
>>> len(C) - 1                      # linear complexity = number of distinct r_j
3
>>> roots, mult = field.roots(C[::-1], p, require_split=True)
>>> roots.tolist()
[3, 7, 10]
>>> field.vandermonde_solve(roots, S[:3], p).tolist()   # counts, in root order
[2, 5, 1]
"""
import operator

import numpy as np

from .._core import _field
from . import kernels
from ..exceptions import DecodeError, FieldError
from ..rng import as_generator

__all__ = [
    "kernels",
    "DEFAULT_PRIME",
    "Field",
    "FieldError",
    "DecodeError",
    "is_prime",
    "prev_prime",
    "ntt_prime",
    "poly_mul",
    "poly_divmod",
    "poly_gcd",
    "poly_xgcd",
    "poly_powmod",
    "poly_derivative",
    "poly_eval",
    "berlekamp_massey",
    "roots",
    "factor",
    "squarefree_factorization",
    "vandermonde_solve",
    "VandermondeSolver",
]

DEFAULT_PRIME = 4611615649683210241
"""The protocols' default modulus: ``65535 * 2**46 + 1`` (see module notes)."""

_P_MAX = 1 << 63
_EMPTY = np.zeros(0, dtype=np.uint64)


# ---------------------------------------------------------------------------
# validation

def _as_int(value, name):
    try:
        return operator.index(value)
    except TypeError:
        raise FieldError(f"{name} must be an integer, got {type(value).__name__}") from None


def _check_modulus(p):
    """The modulus as a Python int, checked prime and < 2**63."""
    p = _as_int(p, "p")
    if p < 2 or p >= _P_MAX:
        raise FieldError(f"p must satisfy 2 <= p < 2**63, got {p}")
    if not _field.is_prime(p):
        raise FieldError(f"p = {p} is not prime")
    return p


def _as_elements(a, p, name, *, ndim=1):
    """Reduced field elements as a C-contiguous uint64 array."""
    arr = np.asarray(a)
    if arr.dtype == object or arr.dtype.kind in "iu":
        pass
    elif arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.uint64)
    else:
        raise FieldError(f"{name} must hold integers, got dtype {arr.dtype}")
    if ndim is not None and arr.ndim != ndim:
        raise FieldError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    if arr.dtype == object:
        flat = arr.ravel()
        for i, v in enumerate(flat):
            try:
                v = operator.index(v)
            except TypeError:
                raise FieldError(f"{name} must hold integers, got {type(v).__name__}") from None
            if not 0 <= v < p:
                raise FieldError(f"{name}[{i}] = {v} is not reduced modulo p = {p}")
        out = np.array([int(v) for v in flat], dtype=np.uint64).reshape(arr.shape)
        return np.ascontiguousarray(out)
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= p:
            bad = int(np.flatnonzero(((arr < 0) | (arr.astype(object) >= p)).ravel())[0]) \
                if arr.dtype.kind == "i" else int(np.flatnonzero(arr.ravel() >= p)[0])
            raise FieldError(
                f"{name}[{bad}] = {int(arr.ravel()[bad])} is not reduced modulo p = {p}")
    return np.ascontiguousarray(arr, dtype=np.uint64)


def _trim(a):
    """``a`` without trailing zero coefficients (the empty array for zero)."""
    nz = np.flatnonzero(a)
    return a[: nz[-1] + 1] if nz.size else _EMPTY.copy()


def _as_poly(a, p, name):
    """A normalized polynomial (trailing zeros stripped)."""
    return _trim(_as_elements(a, p, name))


# ---------------------------------------------------------------------------
# primes and field arithmetic

def is_prime(n):
    """Deterministic primality test for ``0 <= n < 2**64``.

    Miller-Rabin to the first twelve prime bases, which decides every
    64-bit integer.

    >>> is_prime(2**61 - 1), is_prime(3215031751)
    (True, False)
    """
    n = _as_int(n, "n")
    if n < 0 or n >= 1 << 64:
        raise FieldError(f"n must satisfy 0 <= n < 2**64, got {n}")
    return _field.is_prime(n)


def prev_prime(n):
    """The largest prime strictly below ``n`` (``3 <= n <= 2**64``).

    >>> prev_prime(2**62)
    4611686018427387847
    """
    n = _as_int(n, "n")
    if n < 3 or n > 1 << 64:
        raise FieldError(f"n must satisfy 3 <= n <= 2**64, got {n}")
    return _field.prev_prime(n % (1 << 64))


def ntt_prime(bits, two_adicity):
    """The largest prime ``p < 2**bits`` with ``2**two_adicity`` dividing ``p - 1``.

    Such primes admit number-theoretic transforms of every length up to
    ``2**two_adicity``.  ``bits`` at most 64, ``1 <= two_adicity < bits``.

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

    >>> F = Field(13)
    >>> F.mul(7, 5), F.inv(7), F.pow([2, 3], 12).tolist()
    (9, 2, [1, 1])
    """

    def __init__(self, p):
        self.p = _check_modulus(p)

    def __repr__(self):
        return f"Field({self.p})"

    def __eq__(self, other):
        return isinstance(other, Field) and other.p == self.p

    def __hash__(self):
        return hash(("Field", self.p))

    def _run(self, op, a, b=None, *, b_is_exponent=False):
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

    def add(self, a, b):
        """``(a + b) mod p``."""
        return self._run("add", a, b)

    def sub(self, a, b):
        """``(a - b) mod p``."""
        return self._run("sub", a, b)

    def neg(self, a):
        """``-a mod p``."""
        return self._run("neg", a)

    def mul(self, a, b):
        """``a * b mod p``."""
        return self._run("mul", a, b)

    def pow(self, a, e):
        """``a**e mod p`` for integer exponents ``e >= 0`` (``0**0 = 1``)."""
        return self._run("pow", a, e, b_is_exponent=True)

    def inv(self, a):
        """The inverse of nonzero ``a``; :class:`FieldError` if any ``a == 0``."""
        A = _as_elements(np.atleast_1d(a), self.p, "a", ndim=None)
        if np.any(A == 0):
            raise FieldError("0 has no inverse")
        return self._run("inv", a)


# ---------------------------------------------------------------------------
# polynomial arithmetic

def poly_mul(a, b, p):
    """The product ``a * b``.

    >>> poly_mul([1, 1], [12, 1], 13).tolist()     # (1 + x)(x - 1) = x^2 - 1
    [12, 0, 1]
    """
    p = _check_modulus(p)
    a, b = _as_poly(a, p, "a"), _as_poly(b, p, "b")
    if a.size == 0 or b.size == 0:
        return _EMPTY.copy()
    return _field.mul(a, b, p)


def poly_divmod(a, b, p):
    """Quotient and remainder: ``a = q b + r`` with ``deg r < deg b``.

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


def poly_gcd(a, b, p):
    """The monic greatest common divisor (empty when ``a = b = 0``).

    >>> poly_gcd([12, 0, 1], [1, 2, 1], 13).tolist()   # gcd(x^2-1, (x+1)^2)
    [1, 1]
    """
    p = _check_modulus(p)
    return _field.gcd(_as_poly(a, p, "a"), _as_poly(b, p, "b"), p)


def poly_xgcd(a, b, p):
    """``(g, s, t)`` with ``s a + t b = g`` and ``g`` the monic gcd."""
    p = _check_modulus(p)
    return _field.xgcd(_as_poly(a, p, "a"), _as_poly(b, p, "b"), p)


def poly_powmod(base, e, f, p):
    """``base**e mod f`` for an integer ``e >= 0`` of any size and ``deg f >= 1``.

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


def poly_derivative(f, p):
    """The formal derivative ``f'``.

    >>> poly_derivative([2, 0, 0, 1], 3).tolist()   # (x^3 + 2)' = 3x^2 = 0 mod 3
    []
    """
    p = _check_modulus(p)
    return _trim(_field.derivative(_as_poly(f, p, "f"), p))


def poly_eval(f, x, p):
    """``f(x)``: an int for a scalar ``x``, a uint64 array for a 1-D array
    (multipoint evaluation through a subproduct tree when large).

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

def berlekamp_massey(seq, p):
    """The shortest linear recurrence of ``seq`` (Berlekamp-Massey).

    Returns the connection polynomial ``C`` (low degree first, ``C[0] = 1``,
    ``len(C) = L + 1`` with ``L`` the linear complexity, so ``C[L]`` may be
    zero) such that ``sum_k C[k] seq[i - k] = 0 mod p`` for ``L <= i < N``.
    For power sums of ``m`` distinct nonzero ``r_j`` with nonzero counts and
    ``N >= 2m``, ``C = prod_j (1 - r_j z)``.  O(N^2) with lazily reduced
    dot products.

    >>> berlekamp_massey([1, 1, 2, 3, 5, 8], 13).tolist()   # Fibonacci
    [1, 12, 12]
    """
    p = _check_modulus(p)
    return _field.berlekamp_massey(_as_elements(seq, p, "seq"), p)


def roots(f, p, *, require_split=False, random_state=None):
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
        (``x**p = x mod f``); otherwise :class:`DecodeError` is raised.
    random_state : None, int or numpy Generator
        Drives the random splitting (Rabin / Cantor-Zassenhaus).  The result
        does not depend on it; the running time does, slightly.

    Returns
    -------
    roots : ndarray of uint64, ascending
    multiplicities : ndarray of int64

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


def _monic(f, p):
    lc = int(f[-1])
    if lc != 1:
        f = Field(p).mul(f, pow(lc, -1, p))
    return lc, np.ascontiguousarray(f, dtype=np.uint64)


def _sort_key(item):
    g, e = item
    return (g.size, tuple(int(c) for c in g), e)


def factor(f, p, *, random_state=None):
    """Factor ``f`` into monic irreducibles over F_p.

    Returns ``(lc, [(factor, exponent), ...])`` with ``f = lc * prod factor**exponent``,
    factors as uint64 arrays (low degree first), sorted by degree then
    coefficients.  Square-free, distinct-degree, then equal-degree
    factorization (Cantor-Zassenhaus; trace map for p = 2).

    >>> lc, facs = factor([2, 0, 2], 3)           # 2x^2 + 2 = 2 (x^2 + 1), irreducible mod 3
    >>> lc, [(g.tolist(), e) for g, e in facs]
    (2, [([1, 0, 1], 1)])
    """
    p = _check_modulus(p)
    f = _as_poly(f, p, "f")
    if f.size == 0:
        raise FieldError("cannot factor the zero polynomial")
    lc, g = _monic(f, p)
    if g.size == 1:
        return lc, []
    facs = _field.factor(g, p, as_generator(random_state))
    return lc, sorted(facs, key=_sort_key)


def squarefree_factorization(f, p):
    """Square-free factorization ``f = lc * prod g_i**i``.

    Returns ``(lc, [(g, i), ...])`` with monic, square-free, pairwise coprime
    ``g`` sorted by multiplicity ``i``.

    >>> lc, facs = squarefree_factorization([1, 2, 1], 13)   # (x + 1)^2
    >>> lc, [(g.tolist(), i) for g, i in facs]
    (1, [([1, 1], 2)])
    """
    p = _check_modulus(p)
    f = _as_poly(f, p, "f")
    if f.size == 0:
        raise FieldError("the zero polynomial has no square-free factorization")
    lc, g = _monic(f, p)
    if g.size == 1:
        return lc, []
    facs = _field.squarefree(g, p)
    return lc, sorted(facs, key=lambda t: (t[1], t[0].size, tuple(int(c) for c in t[0])))


class VandermondeSolver:
    """Transposed Vandermonde systems over fixed nodes, shared precomputation.

    Solves ``sum_j c[j] * nodes[j]**i = rhs[i] (mod p)`` for ``i < m``.
    Construction builds the subproduct tree of the nodes and ``1/F'(x_j)``
    (``F = prod (y - x_j)``), O(M(m) log m); each solve is one product and
    one multipoint evaluation.

    Parameters
    ----------
    nodes : array-like of int, shape (m,)
        Distinct, nonzero, reduced.
    p : int
        Prime modulus.

    >>> V = VandermondeSolver([2, 3], 13)
    >>> V.solve([5, 12]).tolist()          # c0 + c1 = 5, 2 c0 + 3 c1 = 12
    [3, 2]
    """

    def __init__(self, nodes, p):
        self.p = _check_modulus(p)
        nodes = _as_elements(nodes, self.p, "nodes")
        if nodes.size == 0:
            raise FieldError("nodes must not be empty")
        if np.any(nodes == 0):
            raise FieldError(f"nodes must be nonzero; nodes[{int(np.argmin(nodes))}] = 0")
        try:
            self._impl = _field.Vandermonde(nodes, self.p)
        except FieldError:
            u, inv, cnt = np.unique(nodes, return_inverse=True, return_counts=True)
            dup = np.flatnonzero(cnt[inv] > 1)
            raise FieldError(
                f"nodes must be distinct; nodes[{dup[0]}] = nodes[{dup[1]}] = "
                f"{int(nodes[dup[0]])}") from None
        self.nodes = nodes
        self.m = nodes.size

    def solve(self, rhs):
        """``c`` with the shape of ``rhs``: (m,) or (m, r) (one system per column)."""
        rhs = _as_elements(rhs, self.p, "rhs", ndim=None)
        if rhs.ndim not in (1, 2) or rhs.shape[0] != self.m:
            raise FieldError(f"rhs must have shape ({self.m},) or ({self.m}, r), got {rhs.shape}")
        if rhs.ndim == 1:
            return self._impl.solve(rhs[None, :])[0]
        return np.ascontiguousarray(self._impl.solve(np.ascontiguousarray(rhs.T)).T)


def vandermonde_solve(nodes, rhs, p):
    """Solve ``sum_j c[j] * nodes[j]**i = rhs[i] (mod p)``, ``i < m``.

    ``rhs`` of shape (m,) or (m, r); see :class:`VandermondeSolver` to reuse
    the precomputation across calls.

    >>> vandermonde_solve([2, 3], [5, 12], 13).tolist()
    [3, 2]
    """
    return VandermondeSolver(nodes, p).solve(rhs)
