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

The modules, by job:

* :mod:`pyfkm.field.primes`: :func:`is_prime`, :func:`prev_prime`,
  :func:`ntt_prime`, :data:`DEFAULT_PRIME` (why this prime) and
  :class:`Field`;
* :mod:`pyfkm.field.poly`: polynomial arithmetic, :func:`berlekamp_massey`,
  :func:`roots`, :func:`factor`, :func:`squarefree_factorization` (and the
  conventions: low degree first, normalized results, reduced inputs);
* :mod:`pyfkm.field.vandermonde`: :class:`VandermondeSolver`,
  :func:`vandermonde_solve`;
* :mod:`pyfkm.field.kernels`: the raw compiled kernels, for the secure
  aggregation.

Bad input (a modulus that is not a prime below ``2**63``, an element not
reduced modulo it) raises :class:`FieldError` (a ``ValueError``).

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
from . import kernels
from ..exceptions import DecodeError, FieldError
from .poly import (berlekamp_massey, factor, poly_derivative, poly_divmod, poly_eval, poly_gcd,
                   poly_mul, poly_powmod, poly_xgcd, roots, squarefree_factorization)
from .primes import DEFAULT_PRIME, Field, is_prime, ntt_prime, prev_prime
from .vandermonde import VandermondeSolver, vandermonde_solve

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
