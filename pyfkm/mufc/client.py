"""The client side of MUFC: local seeding with exact removal, quantized counts.

A :class:`MufcClient` seeds its data with k-means++ (Alg. 3 of Pan et al.,
ICLR 2023, through :class:`pyfkm.core.RemovableSeeding`), quantizes its
centers to the public grid of step ``gamma`` and turns its cluster sizes
into a sparse count vector over grid bins, the vector it sends to the
aggregation.  A removal reruns the seeding's exact removal; it is prepared
aside and committed by the caller, which then erases the removed rows from
every buffer.  :func:`pyfkm.scale_to_box` maps data into the public box the
grid covers.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._base import Report
from .._validation import check_array, check_ids
from ..exceptions import InvalidIdError, InvalidInputError
from ..core.kmeans import lloyd
from ..core.box import scale_to_box
from ..core.lattice import Lattice
from ..core.seeding import RemovableSeeding
from ..rng import SeedLike, as_generator, copy_generator as _copy_generator
from ._rngstate import _rng_from_state, _rng_state
from .aggregation import merge_sparse

__all__ = ["MufcClient", "ClientRemovalReport", "scale_to_box"]


@dataclass(frozen=True)
class ClientRemovalReport(Report):
    """What a removal did on one client.

    Attributes
    ----------
    n_removed : int
        Points removed.
    reseeded : bool
        Whether seeding resumed (a removed point was a center).
    position : int or None
        First resampled center position (None if none was).
    refit : bool
        Whether the client refitted from scratch (fewer points than
        centers remained); also ``retrained``, the name of the other
        removal reports.
    seconds : float
        Wall time of the removal.
    """

    n_removed: int
    reseeded: bool
    position: Optional[int]
    refit: bool
    seconds: float

    @property
    def retrained(self) -> bool:
        """``refit`` under the name the deletion reports use."""
        return self.refit


class MufcClient:
    """Client side of MUFC: local seeding with exact removal, quantized counts.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Local data, inside the box ``[lower, upper]^d``.  Point ids are row
        positions, stable for the client's life.
    n_clusters : int
        Local number of centers ``K`` (``min(K, n_active)`` are used).
    gamma : float
        Grid step.
    lower, upper : float
        The public box.
    client_init : {"k-means++", "means", "full"}
        Seeding only (the paper's default: the centers are the seeds);
        ``"means"``: the centers are the means of the seeds' cells (one
        centroid step after the seeding: the weighted mean of a client's
        centers is then its data mean, which the server's clustering
        inherits); ``"full"``: seeding followed by Lloyd (paper App. M.3).
        After a removal the centers are recomputed from the (exactly
        unlearned) seeding, so every variant unlearns exactly.
    max_iter, tol : int, float
        Lloyd parameters for ``client_init="full"``.
    random_state : None, int or Generator
        Seed of the local seeding.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[-0.4, -0.4], [-0.39, -0.4], [0.4, 0.4], [0.41, 0.4]])
    >>> client = MufcClient(X, 2, gamma=0.1, random_state=0)
    >>> client.cluster_centers_.shape
    (2, 2)
    >>> bins, counts = client.sparse_counts()
    >>> int(counts.sum())
    4
    >>> client.remove([0]).n_removed, int(client.sparse_counts()[1].sum())
    (1, 3)
    """

    def __init__(self, X: ArrayLike, n_clusters: int, *, gamma: float,
                 lower: float = -0.5, upper: float = 0.5,
                 client_init: str = "k-means++", max_iter: int = 300, tol: float = 1e-4,
                 random_state: SeedLike = None) -> None:
        X = check_array(X, "X", allow_empty=True)
        if X.size and (np.any(X < lower) or np.any(X > upper)):
            raise InvalidInputError(
                f"client data must lie in the public box [{lower}, {upper}]^d; "
                "scale it with public bounds (pyfkm.scale_to_box)")
        if client_init not in ("k-means++", "means", "full"):
            raise InvalidInputError(
                f"client_init={client_init!r} must be 'k-means++', 'means' or 'full'")
        self.X = np.array(X, order="C", copy=True)   # own copy: removal erases rows
        self.n_clusters = int(n_clusters)
        self.gamma = float(gamma)
        self.lower, self.upper = float(lower), float(upper)
        self.n_bins_per_dim = _n_bins(self.lower, self.upper, self.gamma)
        self.client_init = client_init
        self.max_iter, self.tol = max_iter, tol
        self._rng = as_generator(random_state)
        self._lattice = Lattice(self.gamma)
        self.removed_ = np.zeros(X.shape[0], dtype=bool)
        self._fit_local()

    # -- local model -----------------------------------------------------------

    def _fit_local(self):
        """(Re)seed on the active points with k = min(K, n_active)."""
        self._active = np.flatnonzero(~self.removed_)
        k = min(self.n_clusters, self._active.size)
        self.k_ = k
        self._seeding = None
        if k > 0:
            self._seeding = RemovableSeeding(self.X[self._active], k, random_state=self._rng)
        self._pos = np.full(self.X.shape[0], -1, dtype=np.int64)
        self._pos[self._active] = np.arange(self._active.size)
        self._finish()

    def _finish(self):
        """Centers, sizes and the sparse count vector from the seeding state."""
        d = self.X.shape[1]
        if self._seeding is None:
            self.cluster_centers_ = np.zeros((0, d))
            self.cluster_sizes_ = np.zeros(0, dtype=np.int64)
        elif self.client_init == "k-means++":
            self.cluster_centers_ = self._seeding.cluster_centers_
            self.cluster_sizes_ = self._seeding.cluster_sizes_.astype(np.int64)
        elif self.client_init == "means":
            keep = ~self._seeding.removed_
            lab = self._seeding.labels_[keep]
            C = self._seeding.cluster_centers_
            order = np.argsort(lab, kind="stable")
            sizes = np.bincount(lab, minlength=C.shape[0])
            pos = sizes > 0
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])[pos]
            Xs = self.X[self._active[keep][order]]
            means = C.copy()
            means[pos] = np.add.reduceat(Xs, starts, axis=0) / sizes[pos, None]
            # a mean of points of the box stays in it (up to rounding)
            self.cluster_centers_ = np.clip(means, self.lower, self.upper)
            self.cluster_sizes_ = sizes.astype(np.int64)
        else:
            keep = ~self._seeding.removed_
            Xa = self.X[self._active][keep]
            c, labels, _, _ = lloyd(Xa, self._seeding.cluster_centers_,
                                    max_iter=self.max_iter, tol=self.tol)
            self.cluster_centers_ = c
            self.cluster_sizes_ = np.bincount(labels, minlength=c.shape[0]).astype(np.int64)
        self.bins_, self.counts_ = self._quantize()

    def _quantize(self):
        c, s = self.cluster_centers_, self.cluster_sizes_
        d = self.X.shape[1]
        if c.shape[0] == 0:
            return np.zeros((0, d), dtype=np.int64), np.zeros(0, dtype=np.int64)
        b = self._lattice.quantize(c - self.lower)
        np.clip(b, 0, self.n_bins_per_dim - 1, out=b)
        keep = s > 0
        return merge_sparse([(b[keep], s[keep])], d)

    @property
    def n_active_(self) -> int:
        return int((~self.removed_).sum())

    @property
    def center_rows_(self) -> NDArray[np.int64]:
        """Row ids (in the data given to fit) of the local centers, in
        seeding order; empty when no row is left."""
        if self._seeding is None:
            return np.zeros(0, dtype=np.int64)
        return self._active[self._seeding.center_ids_].astype(np.int64)

    def _export(self, prefix, arrays):
        """Header dict; arrays go into ``arrays`` under ``prefix``."""
        # copies: a removal erases rows in place, and a save or a pickle
        # writes these arrays after the estimator's lock is released
        arrays[prefix + "X"] = self.X.copy()
        arrays[prefix + "removed"] = self.removed_.copy()
        arrays[prefix + "active"] = self._active
        head = {"n_clusters": self.n_clusters, "gamma": self.gamma, "lower": self.lower,
                "upper": self.upper, "client_init": self.client_init,
                "max_iter": self.max_iter, "tol": self.tol, "k": self.k_,
                "rng": _rng_state(self._rng), "seeding": None}
        if self._seeding is not None:
            st = self._seeding.export_state()
            head["seeding"] = {"n_active": st.pop("n_active"), "n_positive": st.pop("n_positive")}
            for name, a in st.items():
                arrays[prefix + "s." + name] = a
        return head

    @classmethod
    def _restore(cls, head, prefix, arrays, rng=None):
        """Rebuild from :meth:`_export` output (validated by the caller:
        see ``_ModelReader``); ``rng`` replaces the header's generator."""
        obj = cls.__new__(cls)
        obj.X = np.array(arrays[prefix + "X"], order="C", copy=True)
        obj.removed_ = arrays[prefix + "removed"].astype(bool)
        obj._active = arrays[prefix + "active"].astype(np.int64)
        obj.n_clusters = int(head["n_clusters"])
        obj.gamma, obj.lower, obj.upper = (float(head[k]) for k in ("gamma", "lower", "upper"))
        obj.n_bins_per_dim = _n_bins(obj.lower, obj.upper, obj.gamma)
        obj.client_init = head["client_init"]
        obj.max_iter, obj.tol = int(head["max_iter"]), float(head["tol"])
        obj._rng = _rng_from_state(head["rng"]) if rng is None else rng
        obj._lattice = Lattice(obj.gamma)
        obj.k_ = int(head["k"])
        obj._seeding = None
        if head["seeding"] is not None:
            st = dict(head["seeding"])
            for name in ("removed", "mind", "labels", "centers", "counts", "wsizes"):
                st[name] = arrays[prefix + "s." + name]
            obj._seeding = RemovableSeeding.from_state(obj.X[obj._active], obj.k_, obj._rng, st)
        obj._pos = np.full(obj.X.shape[0], -1, dtype=np.int64)
        obj._pos[obj._active] = np.arange(obj._active.size)
        obj._finish()
        return obj

    def sparse_counts(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """This client's sparse count vector.

        Returns
        -------
        bins : ndarray of shape (n_bins, n_features), int64
            Grid cells of the client's centers.
        counts : ndarray of shape (n_bins,), int64
            Number of the client's points in the cluster of each center.
        """
        return self.bins_, self.counts_

    # -- unlearning ---------------------------------------------------------

    def remove(self, ids: ArrayLike) -> ClientRemovalReport:
        """Remove local points (one id or a batch) exactly and erase them.

        Parameters
        ----------
        ids : int or sequence of int
            Row positions in the client's data.

        Returns
        -------
        report : ClientRemovalReport
            Points removed, whether seeding resumed and from which
            position, and the time taken.

        Raises
        ------
        InvalidIdError
            Unknown, repeated or already removed ids (nothing changes).
        """
        new, report, arr = self._removal(ids)
        self._commit(new, arr)
        return report

    def _removal(self, ids):
        """Prepare a removal without changing this client: returns
        ``(client, report, ids)``, the client after the removal (sharing
        this one's data buffers, which :meth:`_commit` erases)."""
        t0 = time.perf_counter()
        arr = np.atleast_1d(check_ids(ids))
        n = self.X.shape[0]
        if arr.size == 0:
            return self, ClientRemovalReport(0, False, None, False, 0.0), arr
        if arr.min() < 0 or arr.max() >= n:
            raise InvalidIdError(f"ids must lie in [0, {n}); nothing was removed")
        if np.unique(arr).size != arr.size:
            raise InvalidIdError("repeated ids; nothing was removed")
        if self.removed_[arr].any():
            bad = int(arr[self.removed_[arr]][0])
            raise InvalidIdError(f"id {bad} was already removed; nothing was removed")
        new = self._clone()
        new.removed_[arr] = True
        if self.n_active_ - arr.size < self.k_:
            # a fit on the remaining data would use fewer centers: refit
            new._fit_local()
            report = ClientRemovalReport(int(arr.size), True, 0, True, 0.0)
        else:
            rep, _ = new._seeding.remove_without_erasing(self._pos[arr])
            new._finish()
            report = ClientRemovalReport(int(arr.size), rep.reseeded, rep.position, False, 0.0)
        return new, replace(report, seconds=time.perf_counter() - t0), arr

    def _clone(self):
        """A copy with its own generator and state arrays; the data buffers
        (``X`` and the seeding's copy of the active rows) are shared."""
        obj = copy.copy(self)
        obj._rng = _copy_generator(self._rng)
        obj.removed_ = self.removed_.copy()
        if self._seeding is not None:
            obj._seeding = self._seeding.clone(obj._rng)
        return obj

    def _commit(self, new, ids):
        """Become ``new`` (from :meth:`_removal`) and erase the removed rows
        ``ids`` from every buffer: the data, the seeding's copy of it (the
        one before a refit too) and nothing else holds a removed value."""
        if new is self:
            return
        old_seeding, old_pos = self._seeding, self._pos
        self.__dict__.update(new.__dict__)
        self.X[ids] = 0.0
        if old_seeding is not None:
            pos = old_pos[ids]
            old_seeding.erase_rows(pos[pos >= 0])


    def _erase(self):
        """Zero every buffer holding this client's rows (a departing or
        dropped client)."""
        self.X[...] = 0.0
        if self._seeding is not None:
            self._seeding.erase_rows()


# bins per dimension: at most this many (a smaller gamma is a mistake: the
# grid would be far finer than float64 data)
_MAX_BINS = 1 << 40


def _n_bins(lower, upper, gamma):
    """Bins per dimension of the grid of step ``gamma`` on ``[lower, upper]``:
    ``ceil((upper - lower) / gamma)`` (a ratio within 1e-12 above an integer
    rounds to it), and at least 1."""
    return max(1, int(np.ceil((upper - lower) / gamma - 1e-12)))


def _fit_client_task(X, n_clusters, kw, rng_state, live=False):
    """A client's local fit, runnable on any executor (threads, processes,
    Dask): returns the client's state as plain arrays and a JSON-able dict,
    which the driver turns back into a :class:`MufcClient`.  ``live``: a
    task run in the driver's process (a thread pool), whose ``rng_state`` is
    the client's Generator itself and which returns the client."""
    if live:
        return MufcClient(X, n_clusters, random_state=rng_state, **kw)
    c = MufcClient(X, n_clusters, random_state=_rng_from_state(rng_state), **kw)
    arrays = {}
    head = c._export("", arrays)
    del arrays["X"]
    return head, arrays
