"""What QKMeans and DCKMeans share: the keyed randomness and the
exponential-race seeding (see the package docstring, "How the randomness is
laid out"), the deletion report and the id index, all-or-nothing writes,
and the locked estimator base with the field-by-field checks of an
unpickled state (a pickle is data from outside).
"""
from __future__ import annotations

import contextlib
import copy
import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from .._base import BaseEstimator, Report
from .._deprecated import renamed_method
from ..core.base import CenterModelMixin
from ..core.kernels import seeding as _seeding
from .._validation import check_array, check_ids, feature_names, set_feature_names
from ..exceptions import InvalidIdError, InvalidInputError, ModelFileError, NotFittedError
from ..rng import as_generator

_log = logging.getLogger(__name__)

_U = 2.0 ** -53  # unit roundoff of float64


# ----------------------------------------------------------------------------
# Keyed randomness and the exponential-race D^2 seeding
# ----------------------------------------------------------------------------

def _splitmix64(z):
    """splitmix64 finalizer on a uint64 array (wrapping arithmetic)."""
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _keyed_uniform(key, ids, step):
    """Uniform draws in (0, 1), one per id, a function of (key, id, step) only."""
    ids = np.asarray(ids, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        h = _splitmix64(ids * np.uint64(0x100000001B3) + np.uint64(step))
        h = _splitmix64(h ^ np.uint64(key))
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * _U


def _sqdist(X, c):
    """Squared distance of every row of ``X`` to the point ``c`` (float64).

    Row-wise and elementwise only: the value for a row does not depend on
    the other rows (the seeding relies on it)."""
    diff = X - c
    diff *= diff
    return diff.sum(axis=1)


def _race_seeding(X, ids, k, key, alive=None, n_trials=1):
    """k-means++ seeding as an exponential race keyed by ``ids`` (C kernel,
    csrc/fkm_race.h).

    Returns the seed positions (rows of ``X``) in order.  Rows with
    ``alive == False`` take no part.  Point ``i`` draws
    ``E_ij = -log u(key, id_i, j)``; the first seed is ``argmin E_i0``, seed
    ``j`` is ``argmin E_ij / D_i^2`` (probability ``D_i^2 / sum D^2``).
    When every remaining point coincides with a seed (fewer distinct points
    than ``k``), the next seed is the unchosen point with the smallest
    ``E_ij`` (uniform among them).  ``n_trials > 1``: greedy k-means++
    (the best of ``n_trials`` independent races per step by potential).
    """
    excluded = None if alive is None else ~alive
    seeds, _ = _seeding.race_seeding(X, np.ascontiguousarray(ids, dtype=np.int64), k,
                                     int(key) & 0xFFFFFFFFFFFFFFFF, excluded, n_trials)
    return seeds


@dataclass(frozen=True)
class DeletionReport(Report):
    """What a call to ``remove`` did.

    Returned by :meth:`QKMeans.remove <pyfkm.deletion.QKMeans.remove>` and
    :meth:`DCKMeans.remove <pyfkm.deletion.DCKMeans.remove>`.

    Parameters
    ----------
    n_deleted : int
        Number of points removed by the call (also ``n_removed``, the name
        of the other removal reports).
    retrained : bool
        False when the result was certified from the memoized training
        metadata; True when (part of) the model was recomputed.
    reason : str
        Why it retrained ("seed", "epsilon", "centroid", "early stop",
        "leaf path"), or "" when certified.
    seconds : float
        Wall time of the call.

    Examples
    --------
    >>> from pyfkm.deletion import QKMeans
    >>> X = [[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0], [0.0, 0.1]]
    >>> report = QKMeans(2, random_state=0).fit(X).remove([4])
    >>> report.n_removed, isinstance(report.retrained, bool)
    (1, True)
    """

    n_deleted: int
    retrained: bool
    reason: str
    seconds: float

    @property
    def n_removed(self) -> int:
        """``n_deleted`` under the name every other removal report uses."""
        return self.n_deleted


def _check_sample_ids(sample_ids, n):
    if sample_ids is None:
        return np.arange(n, dtype=np.int64)
    ids = check_ids(sample_ids, "sample_ids")
    if ids.shape[0] != n:
        raise InvalidInputError(f"sample_ids has {ids.shape[0]} entries but X has {n} rows")
    if (ids < 0).any():
        raise InvalidInputError("sample_ids must be nonnegative")
    if np.unique(ids).shape[0] != n:
        raise InvalidInputError("sample_ids must be distinct")
    return ids.copy()


class _IdIndex:
    """Positions of alive ids (validation of deletion requests)."""

    @staticmethod
    def lookup(ids_sorted, order, alive, req, n_alive, k):
        """Positions of the requested ids; raise InvalidIdError (and change
        nothing) if one is unknown, repeated or already removed, or if fewer
        than ``k`` points would remain."""
        req = check_ids(req)
        if req.size == 0:
            return req
        if req.size > 1 and np.unique(req).shape[0] != req.shape[0]:
            raise InvalidIdError("ids contain repeats; nothing was removed")
        j = np.searchsorted(ids_sorted, req)
        j = np.minimum(j, len(ids_sorted) - 1)
        bad = ids_sorted[j] != req
        pos = order[j]
        if bad.any():
            raise InvalidIdError(f"id {int(req[bad][0])} is unknown; nothing was removed")
        dead = ~alive[pos]
        if dead.any():
            raise InvalidIdError(f"id {int(req[dead][0])} was already removed; "
                                 "nothing was removed")
        if n_alive - req.size < k:
            raise InvalidIdError(
                f"removing {req.size} points would leave {n_alive - req.size} < "
                f"n_clusters={k}; nothing was removed")
        return pos


# ----------------------------------------------------------------------------
# State that cannot be corrupted: all-or-nothing commits, a lock per object
# ----------------------------------------------------------------------------

@contextlib.contextmanager
def _generator_rollback(random_state):
    """The generator of ``random_state``; if the block raises, a Generator
    or RandomState passed by the user gets its state back (a fit that fails
    draws nothing)."""
    legacy = (random_state.get_state() if isinstance(random_state, np.random.RandomState)
              else None)
    gen = as_generator(random_state)
    saved = gen.bit_generator.state if gen is random_state else None
    try:
        yield gen
    except BaseException:
        if saved is not None:
            gen.bit_generator.state = saved
        if legacy is not None:
            random_state.set_state(legacy)
        raise


def _write_rows(a, index, value):
    """``a[index] = value``: one write of :func:`_overwrite` (a function of
    its own so that the tests can make it fail)."""
    a[index] = value


def _overwrite(targets):
    """``a[index] = value`` for every ``(a, index, value)`` of ``targets``,
    all or nothing: when a write raises, the earlier ones are undone before
    the exception propagates.

    The last step of a deletion, which erases the deleted rows in place in
    arrays too large to copy on every call; everything that can fail has
    been computed before it."""
    if len(targets) == 1:  # one write: nothing to undo
        _write_rows(*targets[0])
        return
    done = []
    try:
        for a, index, value in targets:
            old = a[index]  # a copy for an index array, a view for a slice
            done.append((a, index, old.copy() if isinstance(index, slice) else old))
            _write_rows(a, index, value)
    except BaseException:
        for a, index, old in reversed(done):
            a[index] = old
        raise


def _shallow(state):
    """A new state object of the same class with the same attributes (a
    cheaper ``copy.copy``)."""
    new = type(state).__new__(type(state))
    new.__dict__.update(state.__dict__)
    return new


def _writable(state, names):
    """Give ``state`` a private writable copy of each of its arrays
    ``names`` that is read-only (an unpickled buffer can be)."""
    for name in names:
        v = getattr(state, name)
        if not v.flags.writeable:
            setattr(state, name, v.copy())


def _fitted_attr(read: Callable[[Any], Any]) -> Any:
    """A read-only fitted attribute: ``read(state)`` of the fitted state,
    under the lock (NotFittedError before fit)."""

    def get(self: Any) -> Any:
        with self._lock:
            return read(self._fitted())

    return property(get)


_Locked = TypeVar("_Locked", bound="_LockedEstimator")


class _LockedEstimator(CenterModelMixin, BaseEstimator):
    """Base of the deletion estimators: the fitted state lives in one
    attribute ``_state`` that fit and remove replace as a whole; a per-object
    ``threading.RLock`` serializes the calls that change it and the reads of
    the fitted attributes.

    ``fit`` and ``remove`` are here; a subclass gives the steps:
    ``_check_params(n)`` (the validated hyper-parameters),
    ``_fitted_state(X, ids, key, params, rng)`` (a new state from checked
    data, its ids, the model key and the generator), ``_removal(state,
    pos)`` (the new state after removing the alive rows ``pos``, and why it
    retrained, "" when certified) and ``_check_state`` (the checks of an
    unpickled state).  A state has ``ids``, ``ids_sorted``, ``order``,
    ``alive``, ``n_alive``, ``k`` and ``d``.  ``predict``, ``transform``
    and ``score`` are :class:`~pyfkm.core.base.CenterModelMixin`'s (on the
    centers read under the lock).

    The lock is not pickled or copied: every instance (constructed,
    unpickled or copied) gets its own.  ``__getstate__`` (used by pickle,
    ``copy.copy`` and ``copy.deepcopy``) takes a copy of ``_state`` under
    the lock, so a concurrent remove cannot tear it, and ``copy.copy``
    therefore copies ``_state`` too: a removal overwrites rows in place, so
    a shallow copy sharing the state would be corrupted by the original's
    deletions.  ``__setstate__`` (pickle, ``copy.copy``) checks the state
    field by field first (``_check_state`` of the subclass, see
    _check_pickled): a pickle is data from outside.
    """

    # for the type checker: the subclass's steps and hyper-parameter
    _check_params: Callable[..., Any]
    _fitted_state: Callable[..., Any]
    _removal: Callable[..., Any]
    random_state: Any

    def __new__(cls, *args, **kwargs):
        obj = super().__new__(cls)
        obj._lock = threading.RLock()
        return obj

    def __getstate__(self):
        with self._lock:
            state = {k: v for k, v in self.__dict__.items() if k != "_lock"}
            if "_state" in state:
                state["_state"] = copy.deepcopy(state["_state"])
        return state

    def __setstate__(self, state):
        # a pickle is data from outside: every field is checked before
        # anything is installed (ModelFileError naming the field)
        state = _unmapped(state, set())
        _check_pickled(type(self), state)
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __deepcopy__(self, memo):  # the default would copy _state twice
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        state = self.__getstate__()
        new.__dict__.update({k: v if k == "_state" else copy.deepcopy(v, memo)
                             for k, v in state.items()})
        return new

    def set_params(self: _Locked, **params: Any) -> _Locked:
        """Set hyper-parameters, taking effect at the next :meth:`fit`.

        Serialized with the other calls that change the model (the lock).

        Parameters
        ----------
        **params : dict
            Constructor argument names and their new values.

        Returns
        -------
        self : object
            The estimator.

        Raises
        ------
        InvalidInputError
            If a name is not a constructor argument (nothing is set then).
        """
        with self._lock:
            return super().set_params(**params)

    def _fitted(self):
        """The fitted state (call with the lock held)."""
        state = self.__dict__.get("_state")
        if state is None:
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit first")
        return state

    def _check_fitted(self, attr=None):
        with self._lock:
            self._fitted()

    def _checked(self, X):
        with self._lock:  # the centers and their width from one fitted state
            return super()._checked(X)

    sample_ids_ = _fitted_attr(lambda s: s.ids[s.alive].copy())
    n_features_in_ = _fitted_attr(lambda s: s.d)

    def fit(self: _Locked, X: ArrayLike, y: object = None, *, sample_ids: ArrayLike | None = None
            ) -> _Locked:
        """Fit on ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite training data, at least ``n_clusters`` rows.
        y : None
            Ignored; accepted for scikit-learn's API.
        sample_ids : array-like of int, shape (n_samples,), optional
            Distinct nonnegative ids of the rows (default ``0..n-1``), used
            by :meth:`remove` and as the keys of the per-point random draws
            (the seeding races; DC-k-means's leaf assignment): fitting a
            subset with its ids replays the draws of a full fit.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        InvalidInputError
            Bad parameters or data (NaN, infinity, fewer rows than
            ``n_clusters``, repeated ids), or data whose squared distances
            overflow (:class:`NumericalError`).  The model is unchanged then.
        """
        with self._lock:
            names = feature_names(X)
            X = check_array(X, "X")
            params = self._check_params(X.shape[0])
            ids = _check_sample_ids(sample_ids, X.shape[0])
            with _generator_rollback(self.random_state) as rng:
                key = int(rng.integers(0, 2 ** 63))
                state = self._fitted_state(X, ids, key, params, rng)
            self._state = state  # the commit: one assignment
            set_feature_names(self, names)
        return self

    def remove(self, ids: ArrayLike) -> DeletionReport:
        """Remove points by id; the model becomes, bit for bit, the fit on
        the remaining points with the same ``random_state`` and ids.

        Q-k-means certifies the removal from its memo or retrains;
        DC-k-means recomputes the root paths of the touched leaves (see the
        class Notes).

        Parameters
        ----------
        ids : int or sequence of int
            Ids (``sample_ids`` given to fit, default row positions) of
            remaining points, without repeats.

        Returns
        -------
        report : DeletionReport
            How many points were removed, whether the model retrained and
            why, and the time taken.

        Raises
        ------
        InvalidIdError
            An id is unknown, repeated or already removed, or fewer than
            ``n_clusters`` points would remain.  Nothing is removed then
            (nor after any other exception).
        """
        t0 = time.perf_counter()
        with self._lock:
            s = self._fitted()
            pos = _IdIndex.lookup(s.ids_sorted, s.order, s.alive, ids, s.n_alive, s.k)
            if pos.size == 0:
                return DeletionReport(0, False, "", time.perf_counter() - t0)
            new, reason = self._removal(s, pos)
            self._state = new  # the commit
        seconds = time.perf_counter() - t0
        _log.info("%s: removed %d point(s) in %.3g s (%s)", type(self).__name__, int(pos.size),
                  seconds, reason or "certified: no retraining")
        return DeletionReport(int(pos.size), bool(reason), reason, seconds)

    delete = renamed_method("delete", "remove")


# ----------------------------------------------------------------------------
# Checks of an unpickled state (a pickle is data from outside)
# ----------------------------------------------------------------------------

def _short(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Fields:
    """Field-by-field checks of a fitted state read from a pickle: every
    failure raises ModelFileError naming the field.  Values are checked,
    never converted: a valid state is installed as it is."""

    def __init__(self, where):
        self.where = where

    def fail(self, field, what):
        raise ModelFileError(f"{self.where}: field {field}: {what}")

    def attrs(self, obj, cls, names, field, absent=()):
        """The attributes ``names`` of ``obj``, an instance of exactly
        ``cls`` without other attributes (nor any of ``absent``)."""
        if type(obj) is not cls:
            self.fail(field, f"a {type(obj).__name__}, not a {cls.__name__}")
        got = {}
        for name in names:
            if not hasattr(obj, name):
                self.fail(f"{field}.{name}", "missing")
            got[name] = getattr(obj, name)
        extra = sorted(map(repr, set(getattr(obj, "__dict__", {})) - set(names)))
        extra += [repr(name) for name in absent if hasattr(obj, name)]
        if extra:
            self.fail(field, f"unexpected attribute {extra[0]}")
        return got

    def int(self, value, field, lo, hi=None):
        if type(value) is not int or value < lo or (hi is not None and value > hi):
            self.fail(field, f"{_short(value)} is not an int in [{lo}, "
                             f"{'inf' if hi is None else hi}]")
        return value

    def real(self, value, field, lo=-math.inf, hi=math.inf):
        if not isinstance(value, float) or not (math.isfinite(value) and lo <= value <= hi):
            self.fail(field, f"{_short(value)} is not a finite float in [{lo}, {hi}]")
        return value

    def array(self, value, field, dtype, shape, finite=False):
        """``value``, a C-contiguous ndarray of ``dtype`` and ``shape`` (None:
        any length)."""
        if type(value) is not np.ndarray:
            self.fail(field, f"a {type(value).__name__}, not a numpy array")
        if value.dtype != np.dtype(dtype):
            self.fail(field, f"dtype {value.dtype}, expected {np.dtype(dtype)}")
        if value.ndim != len(shape) or any(want is not None and got != want
                                           for got, want in zip(value.shape, shape)):
            want = "(" + ", ".join("any" if s is None else str(s) for s in shape)
            self.fail(field, f"shape {value.shape}, expected {want}{',' * (len(shape) == 1)})")
        if not value.flags.c_contiguous:
            self.fail(field, "not C-contiguous")
        if finite and not np.isfinite(value).all():
            self.fail(field, "NaN or infinity")
        return value

    def index(self, value, field, n):
        """An integer array with entries in [0, n)."""
        if value.size and (value.min() < 0 or value.max() >= n):
            self.fail(field, f"entries outside [0, {n})")
        return value

    def list(self, value, field, n):
        if type(value) is not list or len(value) != n:
            self.fail(field, f"not a list of {n} entries")
        return value

    def ids(self, v):
        """The id arrays ``ids``, ``order``, ``ids_sorted`` of ``v``:
        distinct nonnegative ids, ``ids[order]`` strictly increasing."""
        ids = self.array(v["ids"], "ids", np.int64, (None,))
        n = ids.shape[0]
        if n and ids.min() < 0:
            self.fail("ids", "negative entries")
        order = self.index(self.array(v["order"], "order", np.int64, (n,)), "order", n)
        ids_sorted = self.array(v["ids_sorted"], "ids_sorted", np.int64, (n,))
        if not (ids_sorted[1:] > ids_sorted[:-1]).all():
            self.fail("ids_sorted", "not strictly increasing")
        if not np.array_equal(ids[order], ids_sorted):
            self.fail("order", "ids[order] is not ids_sorted")
        return ids

    def alive(self, v, n, k):
        """The flags ``alive`` (n,) and their count ``n_alive`` (>= k)."""
        alive = self.array(v["alive"], "alive", np.bool_, (n,))
        n_alive = self.int(v["n_alive"], "n_alive", k, n)
        if int(np.count_nonzero(alive)) != n_alive:
            self.fail("n_alive", "not the number of remaining rows")
        return alive, n_alive

    def unshared(self, written, others):
        """The arrays ``written`` (updated in place by deletions) share no
        memory with each other nor with ``others`` (name -> array)."""
        for name, a in written.items():
            for other, b in {**written, **others}.items():
                if other != name and np.may_share_memory(a, b):
                    self.fail(name, f"shares memory with {other}")


def _unmapped(value, seen):
    """``value`` with every numpy memmap in it (joblib's ``load(...,
    mmap_mode="r")`` gives them) replaced by an in-memory copy, so that the
    model never writes to, nor keeps, a file it was read from; containers
    and the attributes of the state's objects are updated in place (they
    come fresh from the unpickler)."""
    if isinstance(value, np.memmap):
        return np.array(value)
    if id(value) in seen:
        return value
    seen.add(id(value))
    if type(value) is dict:
        for k, v in value.items():
            value[k] = _unmapped(v, seen)
    elif type(value) is list:
        value[:] = [_unmapped(v, seen) for v in value]
    elif type(value) is tuple:
        return tuple(_unmapped(v, seen) for v in value)
    elif not isinstance(value, (type, np.ndarray)):
        if isinstance(getattr(value, "__dict__", None), dict):
            for k, v in vars(value).items():
                vars(value)[k] = _unmapped(v, seen)
        for k in getattr(type(value), "__slots__", ()):
            if hasattr(value, k):
                setattr(value, k, _unmapped(getattr(value, k), seen))
    return value


def _check_pickled(cls, state):
    """Check the pickled ``state`` of a ``cls`` (a _LockedEstimator) before
    anything is installed: the hyper-parameters (validated by the next fit)
    and the fitted state, if any, field by field."""
    where = f"{cls.__name__} pickle"
    if type(state) is not dict:
        raise ModelFileError(f"{where}: the state is a {type(state).__name__}, not a dict")
    names = set(cls._param_names())
    for name in state:
        if name not in names and name not in ("_state", "feature_names_in_"):
            raise ModelFileError(f"{where}: unexpected field {_short(name)}")
    for name in sorted(names):
        if name not in state:
            raise ModelFileError(f"{where}: field {name}: missing")
    if "_state" in state:
        cls._check_state(_Fields(where), state["_state"])
    if "feature_names_in_" in state:
        f = state["feature_names_in_"]
        d = getattr(state.get("_state"), "d", None)
        if not (type(f) is np.ndarray and f.dtype == object and f.ndim == 1
                and f.shape[0] == d and all(type(v) is str for v in f)):
            raise ModelFileError(
                f"{where}: field feature_names_in_: not an object array of {d} strings "
                "(one per feature of the fitted state)")
