"""The compiled prime-field kernels behind :mod:`pyfkm.field`, for the parts
of pyfkm built on it (the SCMA codec and the masks of :mod:`pyfkm.secagg`).

These are the raw kernels: arguments must already be C-contiguous
``uint64`` arrays with every element reduced below the prime ``p`` (an odd
prime below 2^63); the kernels check what protects memory and raise
:class:`pyfkm.exceptions.PyfkmError` subclasses, but do not convert or
validate the way the functions of :mod:`pyfkm.field` do.  Use those unless
the conversion cost matters.

Two kernels work in the 257-bit field of the Shamir sharing of
:mod:`pyfkm.secagg` instead, modulo ``P = 2**256 + 297``, on elements given
as 33-byte little-endian encodings (csrc/fkm_bigmod.h):
``p256_dots(weights, shares, t)`` (dot products of ``t`` terms, the
Lagrange-weighted sums of a reconstruction) and ``p256_eval(coefs, m, xs)``
(``m`` polynomials at points below ``2**33``, the shares of a split).  They
check that every element is below ``P`` (:class:`~pyfkm.exceptions.FieldError`
otherwise) and every argument's type and length.

Examples
--------
>>> import numpy as np
>>> from pyfkm.field import kernels
>>> a = np.array([5, 6], dtype=np.uint64)
>>> kernels.elementwise("mul", a, a, 7).tolist()
[4, 1]
>>> P = 2**256 + 297
>>> enc = lambda v: v.to_bytes(33, "little")
>>> out = kernels.p256_dots([enc(2) + enc(P - 1)], [enc(5), enc(3)], 2)
>>> int.from_bytes(out, "little") == (2 * 5 + (P - 1) * 3) % P
True
"""
from .._core._field import (Vandermonde, add_inplace, add_streams, affine_rows,
                            berlekamp_massey, elementwise, mul, p256_dots, p256_eval,
                            power_sums, roots, stream_accumulate)

__all__ = ["Vandermonde", "add_inplace", "add_streams", "affine_rows", "berlekamp_massey",
           "elementwise", "mul", "p256_dots", "p256_eval", "power_sums", "roots",
           "stream_accumulate"]
