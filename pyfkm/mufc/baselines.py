"""Federated clustering baselines that unlearn by retraining: K-FED and DC-k-means.

Both are one-shot: every client clusters its own data with full k-means
(k-means++ seeding and Lloyd, :class:`pyfkm.KMeans`; for K-FED optionally
the paper's Awasthi-Sheffet step) and sends its local centers and cluster
sizes; the server clusters the union of the local centers.  They differ in
the server step:

* :class:`~pyfkm.mufc.kfed.KFed` (:mod:`pyfkm.mufc.kfed`; Dennis, Li & Smith,
  ICML 2021): the server starts from the local centers of one randomly
  chosen device, adds the local center farthest from the current set until
  it has ``n_clusters``, then runs Lloyd on the (unweighted) local centers.
* :class:`~pyfkm.mufc.dckmeans.FederatedDCKMeans` (:mod:`pyfkm.mufc.dckmeans`;
  the federated adaptation of Ginart et al.'s DC-k-means used as a baseline
  by Pan et al., ICLR 2023): a tree of height one with the clients as
  leaves; the root runs full k-means (k-means++ and Lloyd, ``n_init``
  initialisations) on the leaf centroids, weighted by their cluster sizes.

Unlearning is by retraining the affected parts: removing points of a client
refits that client's k-means on its remaining data and reruns the server
step; a client that leaves is dropped and the server step reruns.

Seeding.  ``fit`` spawns one generator per client and one for the server
from ``random_state`` (:func:`pyfkm.rng.spawn`) and keeps them unused; every
local fit and every server step runs on a fresh copy of its generator.  A
client's model is therefore a deterministic function of its remaining data
and its seed, and so is the server's model of the local models.  After any
sequence of removals the model is *identical* (not just equal in
distribution) to a ``fit`` with the same ``random_state`` on the remaining
data, where a client that left is given as an empty ``(0, n_features)``
array so the other clients keep their generators.

This module holds what the two share: the estimators' base (fit, removal by
retraining, prediction), the local k-means step and the removal report.
"""
from __future__ import annotations

import copy
import numbers
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._base import BaseEstimator, Report
from .._validation import (check_clients, check_ids, check_int, clients_feature_names,
                           set_feature_names)
from ..exceptions import InvalidIdError, InvalidInputError, NotFittedError
from ..core.base import CenterModelMixin
from ..core.kmeans import KMeans
from ..rng import SeedLike, spawn

__all__ = ["BaselineRemovalReport"]


@dataclass(frozen=True)
class BaselineRemovalReport(Report):
    """What a removal from a retraining baseline did and cost.

    Returned by ``remove`` and ``remove_clients`` of :class:`KFed` and
    :class:`FederatedDCKMeans`; ``total_seconds`` is the sum of the two
    times.

    Parameters
    ----------
    clients : tuple of int
        Clients whose data changed (the client of a point removal, or the
        clients that left).
    n_removed : int
        Points removed (for clients that left: the points they still held).
    client_retrained : bool
        Whether a client refitted its local model.
    server_retrained : bool
        Whether the server step ran again.
    centers_changed : bool
        Whether ``cluster_centers_`` differ from before the removal.
    client_seconds, server_seconds : float
        Time spent retraining the client and rerunning the server step.

    Examples
    --------
    >>> rep = BaselineRemovalReport(clients=(0,), n_removed=3, client_retrained=True,
    ...                             server_retrained=True, centers_changed=False,
    ...                             client_seconds=0.25, server_seconds=0.5)
    >>> rep.total_seconds
    0.75
    """

    clients: tuple
    n_removed: int
    client_retrained: bool
    server_retrained: bool
    centers_changed: bool
    client_seconds: float
    server_seconds: float

    _summary = ("total_seconds",)

    @property
    def total_seconds(self) -> float:
        """``client_seconds + server_seconds``."""
        return self.client_seconds + self.server_seconds


# -- steps both baselines use (private paths: no input validation) ------------

def _local_kmeans(X, k, *, n_init, max_iter, tol, rng):
    """Full k-means of one client with ``min(k, n_l)`` centers.

    Returns ``(centers, sizes, n_iter)``; an empty client gives no centers.
    """
    n, d = X.shape
    k = min(k, n)
    if k == 0:
        return np.zeros((0, d)), np.zeros(0, dtype=np.int64), 0
    km = KMeans(k, n_init=n_init, max_iter=max_iter, tol=tol, random_state=rng).fit(X)
    sizes = np.bincount(km.labels_, minlength=k).astype(np.int64)
    return km.cluster_centers_, sizes, km.n_iter_


def _gather(centers, sizes):
    """Stack the nonempty local clusters of all clients.

    Returns ``(S, w, device)``: centers, sizes (float) and the client each
    row came from.  Local clusters with no points carry no information and
    are not sent.
    """
    keep = [s > 0 for s in sizes]
    S = np.concatenate([c[m] for c, m in zip(centers, keep)]).astype(np.float64)
    w = np.concatenate([s[m] for s, m in zip(sizes, keep)]).astype(np.float64)
    device = np.concatenate([np.full(int(m.sum()), i, dtype=np.int64)
                             for i, m in enumerate(keep)])
    return S, w, device


def _centers_and_sizes(locals_):
    """The clients' local centers and cluster sizes (two lists) from their
    ``(centers, sizes, n_iter)`` results."""
    return [c for c, _, _ in locals_], [s for _, s, _ in locals_]


def _n_distinct(S):
    return np.unique(S, axis=0).shape[0] if S.shape[0] else 0


# -- the estimators' base ----------------------------------------------------

_Retraining = TypeVar("_Retraining", bound="_RetrainingFederatedBase")


class _RetrainingFederatedBase(CenterModelMixin, BaseEstimator):
    """One-shot federated clustering with a local clustering per client
    (full k-means unless a subclass's ``_local`` says otherwise); removal by
    retraining the affected client and rerunning the server step.

    Subclasses give the local number of clusters (``_client_k``) and the
    server step (``_server``, on the clients' ``(centers, sizes, n_iter)``:
    :func:`_centers_and_sizes` splits them); ``predict``, ``transform`` and ``score`` are
    :class:`pyfkm.core.base.CenterModelMixin`'s.

    What is kept, what is erased: a private copy of every client's data
    (the caller's arrays are never referenced), the clients' local models
    and the server's model.  ``remove`` overwrites the removed rows with
    zeros (in a new array: a shallow copy of the model keeps its own) and
    refits the client and the server from the remaining points;
    ``remove_clients`` drops the departed clients' data and local models.
    No value of a removed row stays in the object or its pickle.  Calls
    are not serialized: do not remove from several threads at once.
    """

    # for the type checker: the subclass's steps, and what _publish sets
    _check_params: Callable[[], int]
    _server: Callable[..., Any]
    cluster_centers_: NDArray[np.float64]

    def __init__(self, n_clusters: int, *, n_init: int, max_iter: int, tol: float,
                 random_state: SeedLike) -> None:
        # the hyper-parameters of every retraining baseline; a subclass's
        # constructor states its own signature (defaults) and adds the rest
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _check_common(self):
        K = check_int(self.n_clusters, "n_clusters", 1)
        check_int(self.n_init, "n_init", 1)
        check_int(self.max_iter, "max_iter", 1)
        tol = self.tol
        if not isinstance(tol, numbers.Real) or isinstance(tol, bool) \
                or not np.isfinite(tol) or tol < 0:
            raise InvalidInputError(f"tol={tol!r} must be a finite number >= 0")
        return K

    def _fresh(self, gen):
        # every use starts from the stored, never advanced generator
        return copy.deepcopy(gen)

    def _local(self, X, k, gen, p):
        return _local_kmeans(X, k, n_init=p["n_init"], max_iter=p["max_iter"],
                             tol=p["tol"], rng=self._fresh(gen))

    # -- fit ------------------------------------------------------------------

    def fit(self: _Retraining, clients: Sequence[ArrayLike], y: object = None) -> _Retraining:
        """Fit on a sequence of client datasets.

        Parameters
        ----------
        clients : sequence of array-like (n_l, n_features)
            One 2-D array per client (empty ``(0, n_features)`` arrays are
            allowed, not all empty).  Point ids for :meth:`remove` are row
            positions, stable for the model's life.
        y : ignored

        Returns
        -------
        self

        Raises
        ------
        InvalidInputError
            Bad parameters; clients not a sequence of 2-D finite arrays with
            the same number of columns; every client empty.
        """
        names = clients_feature_names(clients)
        arrs = check_clients(clients)
        k = self._check_params()
        n = sum(a.shape[0] for a in arrs)
        if n < k:
            raise InvalidInputError(
                f"n_samples={n} should be >= n_clusters={k}: the clients hold {n} points in "
                "all; use a smaller n_clusters")
        p = self.get_params()  # removals keep using the parameters of the fit
        L, d = len(arrs), arrs[0].shape[1]
        gens = spawn(self.random_state, L + 1)
        t0 = time.perf_counter()
        locals_ = [self._local(X, k, g, p) for X, g in zip(arrs, gens[:L])]
        t1 = time.perf_counter()
        server = self._server(locals_, gens[L], p)
        t2 = time.perf_counter()
        # commit: the generators are kept unused, for retraining after removals
        self._k_client, self._client_rngs, self._server_rng = k, gens[:L], gens[L]
        self._params = p
        self._X = [np.array(a, dtype=np.float64, order="C", copy=True) for a in arrs]
        self._removed = [np.zeros(a.shape[0], dtype=bool) for a in arrs]
        self._left = np.zeros(L, dtype=bool)
        self._locals = locals_
        self.n_features_in_ = d
        self.n_clients_ = L
        self.fit_seconds_ = {"clients": t1 - t0, "server": t2 - t1}
        self._publish(server)
        set_feature_names(self, names)
        return self

    def _publish(self, server):
        self.client_centers_ = [c for c, _, _ in self._locals]
        self.client_sizes_ = [s for _, s, _ in self._locals]
        self.client_n_iter_ = [it for _, _, it in self._locals]
        self._set_server(server)

    def _check_fitted(self, attr="_locals"):
        if not hasattr(self, attr):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit first")

    @property
    def participants_(self) -> list[int]:
        """Indices of the clients that have not left, ascending (as
        :attr:`FederatedKMeans.participants_`)."""
        self._check_fitted()
        return [i for i in range(self.n_clients_) if not self._left[i]]

    @property
    def removed_(self) -> list[NDArray[np.bool_] | None]:
        """Per client, a boolean mask over the rows given to :meth:`fit`:
        True at the rows removed since (a copy; ``None`` for a client that
        left), as :attr:`FederatedKMeans.removed_`."""
        self._check_fitted()
        return [None if self._left[i] else self._removed[i].copy()
                for i in range(self.n_clients_)]

    # -- unlearning -----------------------------------------------------------

    def _check_client(self, client):
        if not isinstance(client, numbers.Integral) or isinstance(client, bool) \
                or not 0 <= client < self.n_clients_:
            raise InvalidIdError(f"unknown client {client!r}; nothing was removed")
        client = int(client)
        if self._left[client]:
            raise InvalidIdError(f"client {client} has left the federation; nothing was removed")
        return client

    def _n_points(self, i):
        return 0 if self._left[i] else int((~self._removed[i]).sum())

    def remove(self, client: int, ids: ArrayLike) -> BaselineRemovalReport:
        """Remove points ``ids`` (one id or a batch) of client ``client``.

        The client refits its local model on its remaining points (with its
        own seed) and the server step reruns.

        Parameters
        ----------
        client : int
            Index of the client in the list given to ``fit``.
        ids : int or sequence of int
            Row positions in that client's data.

        Returns
        -------
        report : BaselineRemovalReport
            What was retrained and the time it took.

        Raises
        ------
        InvalidIdError
            Unknown client or a client that left; ids out of range, repeated
            or already removed; a removal that would leave no point in the
            whole federation.  Nothing changes.
        NotFittedError
            Before ``fit``.
        """
        self._check_fitted()
        client = self._check_client(client)
        arr = check_ids(ids)
        n = self._X[client].shape[0]
        if arr.size == 0:
            return BaselineRemovalReport((client,), 0, False, False, False, 0.0, 0.0)
        if arr.min() < 0 or arr.max() >= n:
            raise InvalidIdError(f"ids must lie in [0, {n}); nothing was removed")
        if np.unique(arr).size != arr.size:
            raise InvalidIdError("repeated ids; nothing was removed")
        removed = self._removed[client]
        if removed[arr].any():
            bad = int(arr[removed[arr]][0])
            raise InvalidIdError(f"id {bad} was already removed; nothing was removed")
        others = sum(self._n_points(i) for i in range(self.n_clients_) if i != client)
        if others + self._n_points(client) - arr.size == 0:
            raise InvalidIdError(
                "removing these points would leave no data in the federation; "
                "nothing was removed (discard the model instead)")
        new_removed = removed.copy()
        new_removed[arr] = True
        t0 = time.perf_counter()
        local = self._local(self._X[client][~new_removed], self._k_client,
                            self._client_rngs[client], self._params)
        t1 = time.perf_counter()
        locals_ = list(self._locals)
        locals_[client] = local
        server = self._server(locals_, self._server_rng, self._params)
        t2 = time.perf_counter()
        # commit (nothing above changed self); new containers, never changed
        # in place, so that a shallow copy of the model stays as it was
        old = self.cluster_centers_
        removed_all = list(self._removed)
        removed_all[client] = new_removed
        X_all = list(self._X)
        X_all[client] = self._X[client].copy()     # erased: the removed rows are zeros
        X_all[client][arr] = 0.0
        self._removed, self._X = removed_all, X_all
        self._locals = locals_
        self._publish(server)
        return BaselineRemovalReport(
            (client,), int(arr.size), True, True, not np.array_equal(old, self.cluster_centers_),
            t1 - t0, t2 - t1)

    def remove_clients(self, ids: ArrayLike) -> BaselineRemovalReport:
        """Remove whole clients; the server step reruns without them.

        The clients' data and local models are dropped; their entries of
        ``client_centers_`` and ``client_sizes_`` become empty.

        Parameters
        ----------
        ids : int or sequence of int
            Indices of the clients that leave.

        Returns
        -------
        report : BaselineRemovalReport
            ``clients``: the clients that left; ``n_removed``: the points
            they still held.

        Raises
        ------
        InvalidIdError
            Unknown, repeated or already removed clients; removing every
            client that still holds data.  Nothing changes.
        NotFittedError
            Before ``fit``.
        """
        self._check_fitted()
        arr = check_ids(ids, "client ids")
        if np.unique(arr).size != arr.size:
            raise InvalidIdError("repeated client ids; nothing was removed")
        bad = [int(i) for i in arr if not (0 <= i < self.n_clients_) or self._left[i]]
        if bad:
            raise InvalidIdError(
                f"clients {bad} are unknown or already removed; nothing was removed")
        if arr.size == 0:
            return BaselineRemovalReport((), 0, False, False, False, 0.0, 0.0)
        gone = set(arr.tolist())
        if sum(self._n_points(i) for i in range(self.n_clients_) if i not in gone) == 0:
            raise InvalidIdError(
                "removing these clients would leave no data in the federation; "
                "nothing was removed (discard the model instead)")
        d = self.n_features_in_
        empty = (np.zeros((0, d)), np.zeros(0, dtype=np.int64), 0)
        locals_ = [empty if i in gone else loc for i, loc in enumerate(self._locals)]
        n_removed = sum(self._n_points(i) for i in gone)
        t0 = time.perf_counter()
        server = self._server(locals_, self._server_rng, self._params)
        t1 = time.perf_counter()
        old = self.cluster_centers_
        left, X, removed = self._left.copy(), list(self._X), list(self._removed)
        for i in gone:
            left[i] = True
            X[i] = np.zeros((0, d))                 # not a view: nothing of it stays
            removed[i] = np.zeros(0, dtype=bool)
        self._left, self._X, self._removed = left, X, removed
        self._locals = locals_
        self._publish(server)
        return BaselineRemovalReport(
            tuple(sorted(gone)), n_removed, False, True,
            not np.array_equal(old, self.cluster_centers_), 0.0, t1 - t0)
