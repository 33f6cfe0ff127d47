"""The compiled prime-field kernels behind :mod:`pyfkm.field`, for the parts
of pyfkm built on it (the SCMA codec and the masks of :mod:`pyfkm.secagg`).

These are the raw kernels: arguments must already be C-contiguous
``uint64`` arrays with every element reduced below the prime ``p`` (an odd
prime below 2^63); the kernels check what protects memory and raise
:class:`pyfkm.exceptions.PyfkmError` subclasses, but do not convert or
validate the way the functions of :mod:`pyfkm.field` do.  Use those unless
the conversion cost matters.

Examples
--------
>>> import numpy as np
>>> from pyfkm.field import kernels
>>> a = np.array([5, 6], dtype=np.uint64)
>>> kernels.elementwise("mul", a, a, 7).tolist()
[4, 1]
"""
from .._core._field import (Vandermonde, add_inplace, add_streams, affine_rows,
                            berlekamp_massey, elementwise, mul, power_sums, roots,
                            stream_accumulate)

__all__ = ["Vandermonde", "add_inplace", "add_streams", "affine_rows", "berlekamp_massey",
           "elementwise", "mul", "power_sums", "roots", "stream_accumulate"]
