"""k-means++ (D^2) seeding and seeding with exact removal (MUFC Alg. 3)."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._base import Report
from .._core import _seeding
from .._validation import (check_array, check_ids, check_n_clusters, check_sample_weight,
                          raise_if_not_finite)
from ..exceptions import InvalidIdError, NumericalError
from ..rng import SeedLike, as_generator, copy_generator as _copy_generator

__all__ = ["kmeans_plusplus", "RemovableSeeding", "RemovalReport"]


def _prepare(X: ArrayLike, n_clusters: int, sample_weight: ArrayLike | None
             ) -> tuple[NDArray[np.floating], NDArray[np.float64] | None, int]:
    # NaN/inf in X are detected by the seeding kernel itself (they make the
    # D^2 mass non-finite), which saves a pass over the data: see _seed_call.
    X = check_array(X, "X", check_finite=False)
    w = check_sample_weight(sample_weight, X.shape[0])
    n_pos = X.shape[0] if w is None else int(np.count_nonzero(w > 0))
    k = check_n_clusters(n_clusters, X.shape[0], n_pos)
    return X, w, k


def kmeans_plusplus(X: ArrayLike, n_clusters: int, *, sample_weight: ArrayLike | None = None,
                    random_state: SeedLike = None
                    ) -> tuple[NDArray[np.floating], NDArray[np.int64]]:
    """Weighted k-means++ seeding with one candidate per step.

    The first center is row ``i`` with probability ``w_i / sum(w)``; every
    later one with probability ``w_i D_i^2 / sum_j w_j D_j^2``, ``D_i`` the
    distance from row ``i`` to its nearest chosen center (Arthur &
    Vassilvitskii, 2007).  This is the algorithm the MUFC and Ginart et al.
    analyses assume, unlike scikit-learn's default greedy variant
    (``n_local_trials=2 + log k``).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data; float32 and float64 are used as is, other real types are
        converted to float64.  Distances are computed in float64.
    n_clusters : int
        Number of centers, ``1 <= n_clusters <= n_samples``.
    sample_weight : array-like of shape (n_samples,), optional
        Nonnegative weights; points of weight zero are never chosen.
    random_state : None, int, SeedSequence or Generator
        Source of the ``n_clusters`` uniform draws.

    Returns
    -------
    centers : ndarray of shape (n_clusters, n_features)
        The chosen rows, same dtype as ``X``.
    indices : ndarray of shape (n_clusters,), int64
        Their row indices, in the order they were chosen.

    Raises
    ------
    InvalidInputError
        Bad shapes, NaN/inf, bad weights, or fewer points with positive
        weight than ``n_clusters``.

    Notes
    -----
    If fewer distinct points than ``n_clusters`` exist, once every point
    coincides with a center the remaining centers are drawn proportionally
    to weight among the rows not chosen yet: the returned indices are always
    distinct, but some centers then coincide (their clusters are empty).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [10.0, 10.0], [10.0, 10.1]])
    >>> centers, idx = kmeans_plusplus(X, 2, random_state=0)
    >>> sorted(int(i) // 2 for i in idx)   # one center in each pair
    [0, 1]
    """
    X, w, k = _prepare(X, n_clusters, sample_weight)
    ids, _, _ = _seed_call(X, _seeding.seed, X, w, k, as_generator(random_state), False)
    return X[ids].copy(), ids


def _seed_call(X: NDArray[np.floating], fn: Callable[..., Any], *args: Any) -> Any:
    """Call a seeding kernel entry point; a non-finite D^2 mass caused by
    NaN/inf in X becomes the usual "X contains NaN or infinity" error."""
    try:
        return fn(*args)
    except NumericalError:
        raise_if_not_finite(X)
        raise


@dataclass(frozen=True)
class RemovalReport(Report):
    """What a removal did.

    Returned by :meth:`RemovableSeeding.remove`.

    Parameters
    ----------
    n_removed : int
        Number of points removed by the call.
    reseeded : bool
        Whether a removed point was a center, so that seeding resumed.
    position : int or None
        Index (in seeding order) of the first removed center: centers before
        it were kept, the rest resampled.  None when nothing was reseeded.

    Examples
    --------
    >>> from pyfkm import RemovableSeeding
    >>> X = [[0.0], [1.0], [10.0], [11.0]]
    >>> seeding = RemovableSeeding(X, 2, random_state=0)
    >>> report = seeding.remove([int(seeding.center_ids_[1])])
    >>> report.n_removed, report.reseeded, report.position
    (1, True, 1)
    """

    n_removed: int
    reseeded: bool
    position: Optional[int]


class RemovableSeeding:
    """k-means++ seeding of a dataset that supports exact removal of points.

    Implements MUFC's client-side unlearning (Pan et al., ICLR 2023, Alg. 3).
    Point ids are row positions of ``X`` and stay valid for the life of the
    object.  ``remove(ids)`` marks points as removed; if none of them is a
    chosen center, the centers stay and only the bookkeeping changes (O(1)
    per point, no pass over the data).  Otherwise the centers before the
    first removed one are kept and the rest are resampled by D^2 sampling on
    the remaining points.  The result is distributed exactly as a fresh
    :func:`kmeans_plusplus` run on the remaining points: at each step the
    original draw, rejected when it hits a removed point and redrawn from the
    remaining ones, picks ``c`` with probability
    ``a_c/(A + a_R) + a_R/(A + a_R) * a_c/A = a_c/A``.

    Cost of a removal that hits the center at position ``p``: points whose
    nearest center comes before ``p`` keep it without any distance
    computation; the others are compared with the ``p`` kept centers, then
    the ``k - p`` remaining centers are drawn (one pass over the data each).
    Removing a late center is therefore much cheaper than seeding afresh.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data; the object keeps its own copy (the caller's array is never
        referenced or modified).
    n_clusters : int
        Number of centers.
    sample_weight : array-like of shape (n_samples,), optional
        Nonnegative weights.
    random_state : None, int, SeedSequence or Generator
        Seeds the initial seeding and every later resampling (one stream).

    Attributes
    ----------
    center_ids_ : ndarray of shape (n_clusters,), int64
        Chosen row ids in seeding order.
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    cluster_sizes_ : ndarray of shape (n_clusters,), int64
        Number of remaining points whose nearest center is each center
        (ties go to the earlier center).
    cluster_weights_ : ndarray of shape (n_clusters,), float64
        Total weight of those points (equals sizes without weights).
    labels_ : ndarray of shape (n_samples,), int32
        Position of each point's nearest center; -1 for removed points.
    n_active_ : int
        Number of points not removed.

    Notes
    -----
    **What is kept, what is erased.**  The object keeps its own copy of
    ``X`` (and of ``sample_weight``), the seeding order of the centers, and
    per point its nearest-center label and squared distance; the removed
    mask (which ids were removed, not what they held) is kept so that ids
    stay valid.  A successful :meth:`remove` overwrites the removed rows of
    that copy and their weights with zeros and sets their label to -1 and
    distance to 0, so no value of a removed row remains in the object, its
    pickle or its copies.  A removal that raises changes nothing.

    **Threads.**  :meth:`remove` may be called from several threads: calls
    on one object are serialized by a lock (the seeding kernel releases the
    GIL, other objects run in parallel).

    **Copies.**  ``pickle`` and ``copy.deepcopy`` round-trip exactly: the
    copy's next removals give the same results as the original's.  The
    state read back from a pickle is validated (shapes, ranges, counts)
    before use.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> s = RemovableSeeding(X, 3, random_state=0)
    >>> int(s.cluster_sizes_.sum())
    100
    >>> non_center = next(i for i in range(100) if i not in s.center_ids_)
    >>> s.remove(non_center)
    RemovalReport(n_removed=1, reseeded=False, position=None)
    >>> report = s.remove(s.center_ids_[1])      # a center: reseed from 1
    >>> report.reseeded, report.position
    (True, 1)
    >>> int(s.cluster_sizes_.sum()), s.n_active_
    (98, 98)
    """

    def __init__(self, X: ArrayLike, n_clusters: int, *, sample_weight: ArrayLike | None = None,
                 random_state: SeedLike = None) -> None:
        X, w, k = _prepare(X, n_clusters, sample_weight)
        self.n_clusters = k
        # own copies: removal erases rows, never the caller's buffer
        X = np.array(X, order="C", copy=True)
        w = None if w is None else np.array(w, dtype=np.float64, copy=True)
        self._state = _seed_call(X, _seeding.SeedingState, X, w, k,
                                 as_generator(random_state))
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        # a snapshot taken under the lock (a removal erases rows in place):
        # copies of the data, the state arrays and the generator
        with self._lock:
            st = self._state
            w = st.sample_weight
            return {"n_clusters": self.n_clusters,
                    "seeding": (st.X.copy(), None if w is None else w.copy(),
                                _copy_generator(st.generator), st.export_state())}

    def __setstate__(self, state: dict[str, Any]) -> None:
        X, w, gen, arrays = state["seeding"]
        self.n_clusters = int(state["n_clusters"])
        # validated: a pickle is data from outside
        self._state = _seeding.SeedingState.from_state(X, w, self.n_clusters, gen, arrays)
        self._lock = threading.RLock()

    def remove(self, ids: ArrayLike) -> RemovalReport:
        """Remove one point or a batch of points.

        Parameters
        ----------
        ids : int or sequence of int
            Row ids of ``X``; each must be known, not yet removed and not
            repeated.

        Returns
        -------
        RemovalReport

        Raises
        ------
        InvalidIdError
            An id is out of range, repeated or already removed, or the
            removal would leave fewer positive-weight points than
            ``n_clusters``.  Nothing is removed then.
        """
        with self._lock:
            report, arr = self._remove(ids)
            if report.n_removed:
                self._state.erase(arr)
            return report

    def _remove(self, ids: ArrayLike) -> tuple[RemovalReport, NDArray[np.int64]]:
        """:meth:`remove` without erasing the rows: returns the report and
        the removed ids (int64).  Callers hold the lock."""
        if isinstance(ids, (int, np.integer)) and not isinstance(ids, bool):
            try:
                reseeded, pos = self._state.remove_one(ids)
            except OverflowError:
                raise InvalidIdError(f"id {ids} is out of range [0, {self._state.X.shape[0]}); "
                                     "nothing was removed") from None
            return (RemovalReport(1, reseeded, pos if reseeded else None),
                    np.array([ids], dtype=np.int64))
        arr = check_ids(ids)
        if arr.size == 0:
            return RemovalReport(0, False, None), arr
        reseeded, pos = self._state.remove(arr)
        return RemovalReport(int(arr.size), reseeded, pos if reseeded else None), arr

    # -- a removal prepared aside, committed by the caller ----------------------

    def clone(self, generator: np.random.Generator) -> RemovableSeeding:
        """A copy that removes independently of this object but shares its data.

        The copy's state (removed mask, labels, distances, centers, counts)
        is its own and it draws from ``generator``; its copy of ``X`` (and
        of the weights) is this object's buffer.  Used to prepare a removal
        that commits only if later steps succeed: remove from the clone with
        :meth:`remove_without_erasing` (this object stays as it was), and on
        success erase the removed rows from the shared buffer with
        :meth:`erase_rows`; on failure drop the clone.

        Parameters
        ----------
        generator : numpy.random.Generator
            The clone's stream (a copy of this object's, to continue it).

        Returns
        -------
        RemovableSeeding

        Examples
        --------
        >>> import numpy as np
        >>> X = np.random.default_rng(0).normal(size=(50, 2))
        >>> s = RemovableSeeding(X, 3, random_state=0)
        >>> new = s.clone(np.random.default_rng(1))
        >>> report, ids = new.remove_without_erasing(s.center_ids_[0])
        >>> report.reseeded, s.n_active_, new.n_active_    # s is unchanged
        (True, 50, 49)
        >>> s.erase_rows(ids)               # commit: zero the row in the shared buffer
        >>> s = new
        """
        obj = self.__class__.__new__(self.__class__)
        obj.n_clusters = self.n_clusters
        obj._state = self._state.copy(generator)
        obj._lock = threading.RLock()
        return obj

    def remove_without_erasing(self, ids: ArrayLike) -> tuple[RemovalReport, NDArray[np.int64]]:
        """:meth:`remove`, leaving the removed rows' values in the data buffer.

        For a removal prepared on a :meth:`clone`, whose buffer is shared
        with the original: the original must stay intact until the caller
        commits, then erases the rows with :meth:`erase_rows`.

        Parameters
        ----------
        ids : int or sequence of int
            As for :meth:`remove`.

        Returns
        -------
        report : RemovalReport
        ids : ndarray of int64
            The removed ids.

        Raises
        ------
        InvalidIdError
            As :meth:`remove`; nothing is removed then.
        """
        with self._lock:
            return self._remove(ids)

    def erase_rows(self, ids: ArrayLike | None = None) -> None:
        """Overwrite rows ``ids`` (every row when None) of this object's copy
        of ``X`` with zeros; nothing else changes.

        The rows are not checked to be removed here: the buffer may be
        shared with a :meth:`clone` that removed them (see there).  Erase
        only rows that are removed, or the data of an object that is
        discarded (a departing client's): a kept row that is erased would
        change later resamplings.

        Parameters
        ----------
        ids : array-like of int, optional
            Row positions to erase (default: every row).
        """
        if ids is None:
            self._state.X[...] = 0
        else:
            self._state.X[ids] = 0

    # -- persistence -----------------------------------------------------------

    def export_state(self) -> dict[str, Any]:
        """The seeding's state as plain ints and arrays, for persistence.

        Returns
        -------
        dict
            ``n_active`` and ``n_positive`` (ints) and copies of the arrays
            ``removed``, ``mind``, ``labels``, ``centers``, ``counts`` and
            ``wsizes``.  Neither the data nor the generator is in it: the
            caller stores those (see :meth:`from_state`).

        Examples
        --------
        >>> import numpy as np
        >>> X = np.random.default_rng(0).normal(size=(40, 2))
        >>> gen = np.random.default_rng(5)
        >>> s = RemovableSeeding(X, 3, random_state=gen)
        >>> state = s.export_state()
        >>> sorted(state)
        ['centers', 'counts', 'labels', 'mind', 'n_active', 'n_positive', 'removed', 'wsizes']
        >>> twin = np.random.default_rng()
        >>> twin.bit_generator.state = gen.bit_generator.state
        >>> t = RemovableSeeding.from_state(X.copy(), 3, twin, state)
        >>> c = int(s.center_ids_[0])
        >>> s.remove(c) == t.remove(c), s.center_ids_.tolist() == t.center_ids_.tolist()
        (True, True)
        """
        return self._state.export_state()

    @classmethod
    def from_state(cls, X: ArrayLike, n_clusters: int, generator: np.random.Generator,
                   state: dict[str, Any], sample_weight: ArrayLike | None = None
                   ) -> RemovableSeeding:
        """Rebuild a seeding from :meth:`export_state` output.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The data the state was exported with (its removed rows may be
            zeros).  A writeable array that owns its memory becomes the
            object's buffer, whose rows later removals erase: pass a copy
            to keep yours.
        n_clusters : int
        generator : numpy.random.Generator
            Continues the original's stream (restore its bit-generator state
            first).
        state : dict
            From :meth:`export_state`; validated (shapes, ranges, counts)
            before use.
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        RemovableSeeding

        Raises
        ------
        ValueError
            ``state`` is inconsistent with ``X`` or with itself (the message
            names the field).
        """
        X, w, k = _prepare(X, n_clusters, sample_weight)
        obj = cls.__new__(cls)
        obj.n_clusters = k
        obj._state = _seeding.SeedingState.from_state(X, w, k, generator, state)
        obj._lock = threading.RLock()
        return obj

    @property
    def center_ids_(self) -> NDArray[np.int64]:
        return self._state.center_ids

    @property
    def cluster_centers_(self) -> NDArray[np.floating]:
        return self._state.X[self._state.center_ids].copy()

    @property
    def cluster_sizes_(self) -> NDArray[np.int64]:
        return self._state.counts_array

    @property
    def cluster_weights_(self) -> NDArray[np.float64]:
        return self._state.weights_array

    @property
    def labels_(self) -> NDArray[np.int32]:
        return self._state.labels_array

    @property
    def n_active_(self) -> int:
        return int(self._state.n_active)

    @property
    def removed_(self) -> NDArray[np.bool_]:
        """Boolean mask of removed ids."""
        return self._state.removed_mask

    def inertia(self) -> float:
        """Weighted sum of squared distances of remaining points to their centers.

        Returns
        -------
        inertia : float
            The weighted sum (the k-means objective of the remaining points).
        """
        mind = self._state.min_sq_dist
        w = self._state.sample_weight
        return float(mind.sum() if w is None else (w * mind).sum())
