"""Input validation at the edge of the public API (private)."""
import math
import numbers
import os
import sys
import warnings

import numpy as np

from .exceptions import InvalidIdError, InvalidInputError

_FLOATS = (np.float64, np.float32)


class _NotNumericError(InvalidInputError, TypeError):
    """Data holding objects that are not numbers (an InvalidInputError that
    is also the TypeError numpy and scikit-learn raise for them)."""


def check_array(X, name="X", *, dtype=_FLOATS, ndim=2, allow_empty=False,
                check_finite=True):
    """Return ``X`` as a C-contiguous float32/float64 array of ``ndim`` dims.

    Integer and other real inputs are converted to float64; non-contiguous
    arrays are copied.  Raises InvalidInputError on wrong dimensionality,
    emptiness, complex or non-numeric data, NaN or infinity (the last check
    is skipped with ``check_finite=False``, for callers whose kernel detects
    non-finite values itself, see ``raise_if_not_finite``).
    """
    if _is_sparse(X):
        raise InvalidInputError(
            f"{name} is a sparse matrix: sparse input is not supported; pass a dense "
            f"array ({name}.toarray()) of shape (n_samples, n_features)")
    try:
        arr = np.asarray(X)
    except Exception as e:  # ragged lists and the like
        raise InvalidInputError(f"{name} could not be converted to an array: {e}") from None
    if arr.dtype.kind == "c":
        raise InvalidInputError(
            f"Complex data not supported: {name} has dtype {arr.dtype}; pass real values")
    if arr.dtype.kind == "O":
        # numbers held as Python objects (e.g. from a mixed DataFrame):
        # converted as numpy converts them; anything else raises numpy's
        # TypeError/ValueError, named here
        try:
            arr = arr.astype(np.float64)
        except TypeError as e:
            if "NAType" in str(e) or "NoneType" in str(e):
                raise InvalidInputError(
                    f"{name} contains missing values (None or pandas NA); drop or impute them "
                    "first") from None
            raise _NotNumericError(f"{name} must be numeric: {e}") from None
        except ValueError as e:
            raise InvalidInputError(f"{name} must be numeric: {e}") from None
    if arr.dtype.kind not in "biuf":
        raise InvalidInputError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        hint = ""
        if ndim == 2 and arr.ndim == 1:
            hint = (f"; Reshape your data: {name}.reshape(1, -1) if it is one sample, "
                    f"{name}.reshape(-1, 1) if it has a single feature")
        elif ndim == 2 and arr.ndim == 0:
            hint = f"; pass {name} as [[value]] (one sample, one feature)"
        raise InvalidInputError(
            f"{name} must be a {ndim}-D array, got {arr.ndim}-D with shape {arr.shape}{hint}")
    target = arr.dtype if arr.dtype in dtype else dtype[0]
    arr = np.ascontiguousarray(arr, dtype=target)
    if not allow_empty and arr.size == 0:
        if ndim == 2 and arr.shape[1] == 0:
            raise InvalidInputError(
                f"{name} is empty: 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required.")
        raise InvalidInputError(
            f"{name} is empty: 0 sample(s) (shape={arr.shape}) while a minimum of 1 is required.")
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


def check_bounds(bounds, name="bounds"):
    """``bounds`` as ``(lower, upper)`` floats: a pair of finite numbers
    with ``upper > lower`` (the public box every value of the data lies in)."""
    try:
        if isinstance(bounds, (str, bytes)) or len(bounds) != 2:
            raise TypeError
        lo, hi = float(bounds[0]), float(bounds[1])
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"{name}={bounds!r} must be a pair (lower, upper) of numbers, the public range "
            "of every feature, e.g. bounds=(-1.0, 1.0)") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise InvalidInputError(
            f"{name}={bounds!r} must be finite with upper > lower")
    return lo, hi


def warn_if_fewer_distinct(centers, n_clusters, owner, stacklevel=3):
    """A ``UserWarning`` when the fitted ``centers`` hold fewer than
    ``n_clusters`` distinct rows (the data had fewer distinct points, or
    weight, than clusters): the model is degenerate, not wrong."""
    n = np.unique(centers, axis=0).shape[0]
    if n < n_clusters:
        warnings.warn(
            f"{type(owner).__name__} found {n} distinct clusters, fewer than "
            f"n_clusters={n_clusters}: the data has fewer distinct points than clusters "
            "(some centers are repeated); use a smaller n_clusters", UserWarning,
            stacklevel=stacklevel)


def check_n_threads(n_threads, name="n_threads"):
    """The number of threads for ``n_threads``: a positive int as given;
    None or -1 every core available to this process; ``-k`` all but
    ``k - 1`` of them (at least 1), as joblib's ``n_jobs``."""
    if n_threads is None:
        n_threads = -1
    if (not isinstance(n_threads, numbers.Integral) or isinstance(n_threads, bool)
            or n_threads == 0):
        raise InvalidInputError(
            f"{name}={n_threads!r} must be None (every core), a positive int, or a negative "
            "int (-1: every core, -2: all but one)")
    n_threads = int(n_threads)
    if n_threads > 0:
        return n_threads
    return max(1, available_cores() + 1 + n_threads)


def available_cores():
    """Cores this process may run on (its CPU affinity where the OS has it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_int(value, name, lo):
    """``value`` as an int >= ``lo`` (bools refused)."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < lo:
        raise InvalidInputError(f"{name}={value!r} must be an int >= {lo}")
    return int(value)


def check_features(X, n_features, owner):
    """``X`` (2-D, finite) with the ``n_features`` columns ``owner`` was
    fitted with, and the same feature names (``feature_names_in_``) in the
    same order when ``owner`` was fitted on a DataFrame."""
    check_feature_names(owner, X)
    X = check_array(X, "X")
    if X.shape[1] != n_features:
        raise InvalidInputError(
            f"X has {X.shape[1]} features, but {type(owner).__name__} is expecting "
            f"{n_features} features as input (the number it was fitted with)")
    return X


def _is_sparse(X):
    """A scipy.sparse matrix or array (without importing scipy.sparse)."""
    sp = sys.modules.get("scipy.sparse")
    return sp is not None and sp.issparse(X)


def feature_names(X, name="X"):
    """The column names of a DataFrame-like ``X`` as an object array, when
    they are all strings; None for arrays, lists and non-string columns
    (as scikit-learn, which treats integer column labels as no names).
    Mixed string and non-string names raise InvalidInputError."""
    cols = getattr(X, "columns", None)
    if cols is None or isinstance(X, np.ndarray):
        return None
    names = np.asarray(list(cols), dtype=object)
    if names.size == 0:
        return None
    strings = [isinstance(c, str) for c in names]
    if all(strings):
        # plain str (numpy's str_ and other subclasses converted): what
        # pickles, copies and saved files keep and check
        return np.array([str(c) for c in names], dtype=object)
    if any(strings):
        kinds = sorted({type(c).__name__ for c in names})
        raise InvalidInputError(
            f"{name} has feature names of mixed types {kinds}; use strings for all "
            f"column names (e.g. {name}.columns = {name}.columns.astype(str))")
    return None


def clients_feature_names(clients):
    """The common feature names of DataFrame clients (see feature_names);
    clients with different names, or some with names and some without,
    raise InvalidInputError."""
    if isinstance(clients, np.ndarray) or not hasattr(clients, "__len__"):
        return None
    found = [feature_names(c, f"clients[{i}]") for i, c in enumerate(clients)]
    named = [i for i, f in enumerate(found) if f is not None]
    if not named:
        return None
    first = found[named[0]]
    for i, f in enumerate(found):
        if f is None or f.shape != first.shape or (f != first).any():
            raise InvalidInputError(
                f"clients[{i}] has feature names {None if f is None else f.tolist()} but "
                f"clients[{named[0]}] has {first.tolist()}; every client must have the same "
                "columns in the same order")
    return first


def set_feature_names(owner, names):
    """Record ``names`` (from :func:`feature_names`) as ``feature_names_in_``
    at the end of a successful fit, or forget an earlier fit's."""
    if names is None:
        owner.__dict__.pop("feature_names_in_", None)
    else:
        owner.feature_names_in_ = names


def check_feature_names(owner, X):
    """Compare the feature names of ``X`` with ``owner.feature_names_in_``:
    different names or order raise InvalidInputError (its message names
    the reordered, unseen and missing names); names on one side only warn,
    as in scikit-learn."""
    fitted = getattr(owner, "feature_names_in_", None)
    names = feature_names(X)
    cls = type(owner).__name__
    if fitted is None and names is None:
        return
    if fitted is None:
        warnings.warn(f"X has feature names, but {cls} was fitted without feature names",
                      UserWarning, stacklevel=5)
        return
    if names is None:
        warnings.warn(f"X does not have valid feature names, but {cls} was fitted with "
                      "feature names", UserWarning, stacklevel=5)
        return
    if names.shape == fitted.shape and (names == fitted).all():
        return
    msg = "The feature names should match those that were passed during fit.\n"
    seen, now = set(fitted.tolist()), set(names.tolist())
    if seen == now:
        msg += "Feature names must be in the same order as they were in fit.\n"
    else:
        for title, diff in (("Feature names unseen at fit time:", now - seen),
                            ("Feature names seen at fit time, yet now missing:", seen - now)):
            if diff:
                items = sorted(diff)
                msg += title + "\n" + "".join(f"- {n}\n" for n in items[:5])
                if len(items) > 5:
                    msg += "- ...\n"
    raise InvalidInputError(msg + f"(X has columns {names.tolist()}; {cls} was fitted with "
                            f"{fitted.tolist()}: select them as X[{fitted.tolist()}])")


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
