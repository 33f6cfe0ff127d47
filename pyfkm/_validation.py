"""Input validation at the edge of the public API (private)."""
import math
import numbers

import numpy as np

from .exceptions import InvalidIdError, InvalidInputError

_FLOATS = (np.float64, np.float32)


def check_array(X, name="X", *, dtype=_FLOATS, ndim=2, allow_empty=False,
                check_finite=True):
    """Return ``X`` as a C-contiguous float32/float64 array of ``ndim`` dims.

    Integer and other real inputs are converted to float64; non-contiguous
    arrays are copied.  Raises InvalidInputError on wrong dimensionality,
    emptiness, complex or non-numeric data, NaN or infinity (the last check
    is skipped with ``check_finite=False``, for callers whose kernel detects
    non-finite values itself, see ``raise_if_not_finite``).
    """
    try:
        arr = np.asarray(X)
    except Exception as e:  # ragged lists and the like
        raise InvalidInputError(f"{name} could not be converted to an array: {e}") from None
    if arr.dtype.kind == "c":
        raise InvalidInputError(f"{name} must be real, got complex dtype {arr.dtype}")
    if arr.dtype.kind not in "biuf":
        raise InvalidInputError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        hint = " (reshape 1-D data with X.reshape(-1, 1))" if ndim == 2 and arr.ndim == 1 else ""
        raise InvalidInputError(
            f"{name} must be a {ndim}-D array, got {arr.ndim}-D with shape {arr.shape}{hint}")
    target = arr.dtype if arr.dtype in dtype else dtype[0]
    arr = np.ascontiguousarray(arr, dtype=target)
    if not allow_empty and arr.size == 0:
        raise InvalidInputError(f"{name} is empty (shape {arr.shape})")
    if check_finite and not _all_finite(arr):
        raise InvalidInputError(f"{name} contains NaN or infinity")
    return arr


def raise_if_not_finite(X, name="X"):
    """Raise the InvalidInputError of check_array if ``X`` has NaN or inf.

    For kernels that report non-finite values as an overflow: call this in
    the error path to give the precise message.
    """
    if not _all_finite(X):
        raise InvalidInputError(f"{name} contains NaN or infinity") from None


def _all_finite(arr):
    """Whether every entry is finite, without an n-sized temporary in the
    common case: the sum of finite values is finite unless it overflows, and
    only then is the elementwise check needed."""
    if arr.dtype.kind != "f":
        return True
    with np.errstate(over="ignore", invalid="ignore"):
        total = arr.sum(dtype=np.float64)
    return bool(np.isfinite(total)) or bool(np.isfinite(arr).all())


def check_sample_weight(sample_weight, n, name="sample_weight"):
    """Return weights as float64[n] (None stays None), nonnegative, not all zero."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, numbers.Real) and not isinstance(sample_weight, bool):
        w = np.full(n, float(sample_weight))
    else:
        w = check_array(sample_weight, name, dtype=(np.float64,), ndim=1)
        if w.shape[0] != n:
            raise InvalidInputError(
                f"{name} has {w.shape[0]} entries but X has {n} rows")
    if not np.isfinite(w).all():
        raise InvalidInputError(f"{name} contains NaN or infinity")
    if (w < 0).any():
        raise InvalidInputError(f"{name} must be nonnegative; found {int((w < 0).sum())} negative entries")
    if not (w > 0).any():
        raise InvalidInputError(f"{name} is all zero; at least n_clusters points need positive weight")
    return w


def check_n_clusters(n_clusters, n_samples=None, n_positive=None):
    """Validate ``n_clusters`` (an int >= 1, <= the number of usable points)."""
    if not isinstance(n_clusters, numbers.Integral) or isinstance(n_clusters, bool):
        raise InvalidInputError(f"n_clusters must be an int, got {n_clusters!r}")
    n_clusters = int(n_clusters)
    if n_clusters < 1:
        raise InvalidInputError(f"n_clusters={n_clusters} must be >= 1")
    if n_samples is not None and n_clusters > n_samples:
        raise InvalidInputError(f"n_samples={n_samples} should be >= n_clusters={n_clusters}")
    if n_positive is not None and n_clusters > n_positive:
        raise InvalidInputError(
            f"only {n_positive} points have positive sample_weight, fewer than "
            f"n_clusters={n_clusters}")
    return n_clusters


def check_ids(ids, name="ids"):
    """Return ids as a 1-D C-contiguous int64 array (a scalar becomes length 1)."""
    arr = np.asarray(ids)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be an int or a 1-D sequence of ints")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise InvalidInputError(f"{name} must be integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize >= 8 and (arr > np.iinfo(np.int64).max).any():
        big = int(arr[arr > np.iinfo(np.int64).max][0])
        raise InvalidIdError(f"id {big} is out of range; nothing was removed")
    return np.ascontiguousarray(arr, dtype=np.int64)


def check_clients(clients):
    """Federated data: a non-empty sequence of 2-D float arrays (one per
    client) with the same number of columns, not all empty."""
    if isinstance(clients, np.ndarray) or not hasattr(clients, "__len__"):
        raise InvalidInputError("clients must be a sequence of 2-D arrays (one per client)")
    arrs = [check_array(X, f"clients[{i}]", allow_empty=True) for i, X in enumerate(clients)]
    if not arrs:
        raise InvalidInputError("need at least one client")
    d = {a.shape[1] for a in arrs}
    if len(d) != 1:
        raise InvalidInputError(f"clients have different numbers of features: {sorted(d)}")
    if sum(a.shape[0] for a in arrs) == 0:
        raise InvalidInputError("all clients are empty")
    return arrs


def check_int(value, name, lo):
    """``value`` as an int >= ``lo`` (bools refused)."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < lo:
        raise InvalidInputError(f"{name}={value!r} must be an int >= {lo}")
    return int(value)


def check_features(X, n_features, owner):
    """``X`` (2-D, finite) with the ``n_features`` columns ``owner`` was fitted with."""
    X = check_array(X, "X")
    if X.shape[1] != n_features:
        raise InvalidInputError(
            f"X has {X.shape[1]} features, but {type(owner).__name__} was fitted "
            f"with {n_features}")
    return X


def check_positive(x, name, *, allow_inf=False):
    """``x`` as a float > 0, finite unless ``allow_inf`` (bools refused)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise InvalidInputError(f"{name} must be a real number, got {type(x).__name__}")
    x = float(x)
    if math.isnan(x) or x <= 0 or (math.isinf(x) and not allow_inf):
        raise InvalidInputError(f"{name}={x} must be a positive finite number")
    return x


def check_nonnegative(x, name):
    """``x`` as a finite float >= 0 (bools refused)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise InvalidInputError(f"{name} must be a real number, got {type(x).__name__}")
    x = float(x)
    if not math.isfinite(x) or x < 0:
        raise InvalidInputError(f"{name}={x} must be a nonnegative finite number")
    return x
