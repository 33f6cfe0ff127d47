"""Argument conversion shared by the modules of :mod:`pyfkm.field`.

Every public function of the package converts and checks its arguments here
before a kernel sees them: the modulus must be a prime ``p < 2**63``,
elements any integer array-like reduced modulo ``p`` (``0 <= c < p``),
polynomials such arrays with trailing zeros stripped; a violation raises
:class:`~pyfkm.exceptions.FieldError` (a ``ValueError``) naming the argument
and the first bad entry.  What comes out is a C-contiguous ``uint64`` array,
as the kernels of ``pyfkm._core._field`` require.
"""
import operator

import numpy as np

from .._core import _field
from ..exceptions import FieldError

_P_MAX = 1 << 63
_EMPTY = np.zeros(0, dtype=np.uint64)


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
