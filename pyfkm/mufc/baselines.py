"""Federated clustering baselines that unlearn by retraining: K-FED and DC-k-means.

Both are one-shot: every client clusters its own data with full k-means
(k-means++ seeding and Lloyd, :class:`pyfkm.KMeans`; for K-FED optionally
the paper's Awasthi-Sheffet step) and sends its local centers and cluster
sizes; the server clusters the union of the local centers.  They differ in
the server step:

* :class:`KFed` (Dennis, Li & Smith, ICML 2021): the server starts from the
  local centers of one randomly chosen device, adds the local center
  farthest from the current set until it has ``n_clusters``, then runs Lloyd
  on the (unweighted) local centers.
* :class:`FederatedDCKMeans` (the federated adaptation of Ginart et al.'s
  DC-k-means used as a baseline by Pan et al., ICLR 2023): a tree of height
  one with the clients as leaves; the root runs full k-means (k-means++ and
  Lloyd, ``n_init`` initialisations) on the leaf centroids, weighted by their
  cluster sizes.

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
"""
import copy
import numbers
import time
from dataclasses import dataclass

import numpy as np

from .._base import BaseEstimator
from .._validation import check_clients, check_features, check_ids, check_int
from ..exceptions import InvalidIdError, InvalidInputError, NotFittedError
from ..core.kmeans import KMeans, lloyd, nearest_center
from ..rng import as_generator, spawn
from ..core.seeding import kmeans_plusplus

__all__ = ["KFed", "FederatedDCKMeans", "BaselineRemovalReport"]


@dataclass(frozen=True)
class BaselineRemovalReport:
    """What a removal from a retraining baseline did and cost.

    Attributes
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
    """

    clients: tuple
    n_removed: int
    client_retrained: bool
    server_retrained: bool
    centers_changed: bool
    client_seconds: float
    server_seconds: float

    @property
    def total_seconds(self):
        """``client_seconds + server_seconds``."""
        return self.client_seconds + self.server_seconds


# -- the algorithm steps (private paths: no input validation) -----------------

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


def _separated_sets(P, nu):
    """Awasthi-Sheffet's 1:3 split: ``S[:, r]`` marks the rows of ``P``
    whose distance to ``nu[r]`` is at most a third of their distance to
    every other row of ``nu`` (all of ``P`` when ``nu`` has one row)."""
    D = np.sqrt(((P[:, None, :] - nu[None, :, :]) ** 2).sum(-1))
    S = np.empty(D.shape, dtype=bool)
    for r in range(nu.shape[0]):
        others = np.delete(D, r, axis=1)
        S[:, r] = (3.0 * D[:, [r]] <= others).all(axis=1)
    return S


def _awasthi_sheffet(X, k, *, n_init, max_iter, tol, rng):
    """K-FED's local step (Awasthi & Sheffet, 2012), best of ``n_init`` runs.

    One run: project the rows of ``X`` on its top-``k`` right singular
    vectors (``min(k, n, d)`` of them), seed ``k`` centers there with
    k-means++ (the K-FED authors' choice for the centers of Part I, where
    the analysis asks for a constant-factor approximation), take for each seed
    the mean of the (original) points of its 1:3 separated set (never
    empty: it holds the seed's own point), and run Lloyd on ``X`` from these
    means.  Returns ``(centers, sizes, n_iter)`` of the run with the lowest
    objective, like :func:`_local_kmeans`.
    """
    n, d = X.shape
    k = min(k, n)
    if k == 0:
        return np.zeros((0, d)), np.zeros(0, dtype=np.int64), 0
    X = np.ascontiguousarray(X, dtype=np.float64)
    _, _, Vt = np.linalg.svd(X, full_matrices=False)
    P = X @ Vt[:k].T
    best = None
    for _ in range(n_init):
        nu, _ = kmeans_plusplus(P, k, random_state=rng)
        S = _separated_sets(P, nu)      # S[:, r] holds seed r's own row
        theta = np.array([X[S[:, r]].mean(0) for r in range(k)])
        C, labels, inertia, n_iter = lloyd(X, theta, max_iter=max_iter, tol=tol)
        if best is None or inertia < best[2]:
            best = (C, labels, inertia, n_iter)
    C, labels, _, n_iter = best
    return C, np.bincount(labels, minlength=k).astype(np.int64), n_iter


_LOCAL_STEPS = {"k-means": _local_kmeans, "awasthi-sheffet": _awasthi_sheffet}


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


def _n_distinct(S):
    return np.unique(S, axis=0).shape[0] if S.shape[0] else 0


def _farthest_point_completion(S, init_rows, k):
    """Indices of ``k`` rows of ``S``: ``init_rows`` (distinct points), then
    repeatedly the row farthest from the chosen set (largest distance to its
    nearest chosen row; ties to the lowest index).  Needs ``k`` at most the
    number of distinct rows of ``S``."""
    chosen = list(init_rows)
    diff = S[:, None, :] - S[chosen][None, :, :]
    mind = (diff * diff).sum(-1).min(axis=1)
    while len(chosen) < k:
        j = int(np.argmax(mind))
        chosen.append(j)
        dj = S - S[j]
        np.minimum(mind, (dj * dj).sum(1), out=mind)
    return np.asarray(chosen, dtype=np.int64)


def kfed_server(centers, sizes, n_clusters, *, max_iter=300, tol=1e-4, random_state=None):
    """K-FED's server step on the clients' local centers.

    Picks one device uniformly among those that sent centers, takes its
    (distinct) local centers, adds the local center farthest from the chosen
    set until there are ``min(n_clusters, #distinct local centers)``, and
    runs Lloyd on the unweighted local centers from there.

    Parameters
    ----------
    centers : list of ndarray (k_l, n_features)
        Local centers per client (empty arrays for clients without data).
    sizes : list of ndarray (k_l,)
        Local cluster sizes; centers of empty clusters are ignored.
    n_clusters : int
    max_iter, tol : Lloyd parameters (see :func:`pyfkm.kmeans.lloyd`).
    random_state : None, int, SeedSequence or Generator
        Used only for the choice of the device.

    Returns
    -------
    cluster_centers : ndarray (k, n_features)
    device : int
        The client whose centers initialised the server.
    inertia : float
        Objective of the local centers (unweighted) on the result.
    n_iter : int

    Examples
    --------
    >>> import numpy as np
    >>> centers = [np.array([[0., 0.], [10., 0.]]), np.array([[0., 10.], [0.2, 0.]])]
    >>> sizes = [np.array([5, 5]), np.array([5, 5])]
    >>> C, dev, inertia, _ = kfed_server(centers, sizes, 3, random_state=0)
    >>> sorted(C.round(6).tolist())
    [[0.0, 10.0], [0.1, 0.0], [10.0, 0.0]]
    """
    rng = as_generator(random_state)
    S, _, device = _gather(centers, sizes)
    k = min(int(n_clusters), _n_distinct(S))
    candidates = np.unique(device)
    z = int(candidates[rng.integers(candidates.size)])
    rows = np.flatnonzero(device == z)
    _, first = np.unique(S[rows], axis=0, return_index=True)
    init = rows[np.sort(first)][:k]
    idx = _farthest_point_completion(S, init, k)
    C, _, inertia, n_iter = lloyd(S, S[idx], max_iter=max_iter, tol=tol)
    return C, z, inertia, n_iter


def dc_root(centers, sizes, n_clusters, *, weighted=True, n_init=10, max_iter=300,
            tol=1e-4, random_state=None):
    """The root of federated DC-k-means: full k-means on the leaf centroids.

    Runs :class:`pyfkm.KMeans` (k-means++ and Lloyd, ``n_init`` times) with
    ``min(n_clusters, #distinct leaf centroids)`` clusters on the centers of
    the nonempty local clusters, weighted by their sizes when ``weighted``.

    Returns ``(cluster_centers, inertia, n_iter)``.

    Examples
    --------
    >>> import numpy as np
    >>> centers = [np.array([[0., 0.], [10., 0.]]), np.array([[1., 0.]])]
    >>> sizes = [np.array([1, 5]), np.array([3])]
    >>> C, inertia, _ = dc_root(centers, sizes, 2, random_state=0)
    >>> sorted(C.tolist()), float(inertia)
    ([[0.75, 0.0], [10.0, 0.0]], 0.75)
    """
    S, w, _ = _gather(centers, sizes)
    k = min(int(n_clusters), _n_distinct(S))
    km = KMeans(k, n_init=n_init, max_iter=max_iter, tol=tol,
                random_state=as_generator(random_state)).fit(
                    S, sample_weight=w if weighted else None)
    return km.cluster_centers_, km.inertia_, km.n_iter_


# -- estimators -------------------------------------------------------------

class _RetrainingFederatedBase(BaseEstimator):
    """One-shot federated clustering with a local clustering per client
    (full k-means unless a subclass's ``_local`` says otherwise); removal by
    retraining the affected client and rerunning the server step.

    Subclasses give the local number of clusters (``_client_k``) and the
    server step (``_server``).

    What is kept, what is erased: a private copy of every client's data
    (the caller's arrays are never referenced), the clients' local models
    and the server's model.  ``remove`` overwrites the removed rows with
    zeros (in a new array: a shallow copy of the model keeps its own) and
    refits the client and the server from the remaining points;
    ``remove_clients`` drops the departed clients' data and local models.
    No value of a removed row stays in the object or its pickle.  Calls
    are not serialized: do not remove from several threads at once.
    """

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

    def fit(self, clients, y=None):
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
        arrs = check_clients(clients)
        k = self._check_params()
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

    def remove(self, client, ids):
        """Remove points ``ids`` (one id or a batch) of client ``client``.

        The client refits its local model on its remaining points (with its
        own seed) and the server step reruns.

        Returns
        -------
        BaselineRemovalReport

        Raises
        ------
        InvalidIdError
            Unknown client or a client that left; ids out of range, repeated
            or already removed; a removal that would leave no point in the
            whole federation.  Nothing changes.
        NotFittedError
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

    def remove_clients(self, ids):
        """Remove whole clients; the server step reruns without them.

        The clients' data and local models are dropped; their entries of
        ``client_centers_`` and ``client_sizes_`` become empty.

        Returns
        -------
        BaselineRemovalReport

        Raises
        ------
        InvalidIdError
            Unknown, repeated or already removed clients; removing every
            client that still holds data.  Nothing changes.
        NotFittedError
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

    # -- using the model --------------------------------------------------------

    def _check_X(self, X):
        self._check_fitted()
        return check_features(X, self.n_features_in_, self).astype(np.float64, copy=False)

    def predict(self, X):
        """Index of the nearest server centroid for each row of ``X``."""
        return nearest_center(self._check_X(X), self.cluster_centers_)[1]

    def score(self, X, y=None):
        """Negative k-means objective of ``X`` under the server centroids."""
        return -float(nearest_center(self._check_X(X), self.cluster_centers_)[0].sum())


class KFed(_RetrainingFederatedBase):
    """K-FED: one-shot federated clustering, with removal by retraining.

    Each client clusters its data into ``k' = client_clusters`` clusters
    (``min(k', n_l)`` for a client with fewer points), keeping the best of
    ``n_init`` runs of its ``local_step``, and sends its centers and sizes.
    The server takes the centers of one device chosen uniformly at random,
    adds the local center farthest from the chosen set until it has
    ``n_clusters`` (or as many as there are distinct local centers), and
    runs Lloyd on the local centers (:func:`kfed_server`).

    Parameters
    ----------
    n_clusters : int
        ``k``, the number of server clusters.
    client_clusters : int, optional
        ``k'``, clusters per client; default ``n_clusters``; at most
        ``n_clusters``.  Set it to the number of clusters a client holds:
        with ``k' = k`` the chosen device alone supplies all ``k`` initial
        server centers, so on non-iid data (clients holding few true
        clusters) the farthest-point step never runs and Lloyd starts from
        centers that cover only that device's clusters.
    local_step : {"k-means", "awasthi-sheffet"}, default "k-means"
        A client's run: ``"k-means"`` is k-means++ seeding and Lloyd;
        ``"awasthi-sheffet"`` is the paper's step: k-means++ seeding in the
        projection on the top-``k'`` right singular vectors, the means of
        the seeds' 1:3 separated sets, then Lloyd.  The paper runs it once
        (``n_init=1``).
    n_init, max_iter, tol : int, int, float
        Local runs per client (the one of lowest objective is kept) and
        Lloyd parameters (``max_iter`` and ``tol`` also for the server's
        Lloyd).
    random_state : None, int, SeedSequence or Generator

    Attributes
    ----------
    cluster_centers_ : ndarray (k, n_features)
    client_centers_, client_sizes_ : list of ndarray, one per client
        Empty for clients without data or that left.
    client_n_iter_ : list of int
    server_device_ : int
        The client whose centers initialised the server.
    inertia_ : float
        Server objective: squared distances of the local centers to the
        server centers (unweighted).
    n_iter_ : int
        Server Lloyd iterations.
    n_clients_, n_features_in_ : int
    fit_seconds_ : dict

    Notes
    -----
    Dennis, Li & Smith, "Heterogeneity for the Win: One-Shot Federated
    Clustering", ICML 2021.  ``local_step="awasthi-sheffet", n_init=1`` is
    the paper's client (Awasthi & Sheffet, "Improved spectral-norm bounds
    for clustering", APPROX 2012), as the K-FED authors implement it: the
    centers of its first part are k-means++ seeds in the projection, not a
    constant-factor approximation; here the separated sets are averaged in
    the original space.  The defaults (the best of 10 k-means runs per
    client) are stronger on the data sets of
    ``benchmarks/compare_mufc.py``.  Other differences from the
    paper: the server's Lloyd runs to convergence (``max_iter``, ``tol``)
    where the paper's analysis needs one step (``max_iter=1`` gives that,
    but also caps the clients' Lloyd); a client's empty local clusters are
    not sent; duplicated local centers count once when capping the number
    of server clusters.

    Removal retrains the affected client with its own seed and reruns the
    server step with the server's seed: the model after removals is
    identical to a fit on the remaining data with the same ``random_state``
    (clients that left given as empty arrays).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> truth = np.array([[0., 0.], [10., 0.], [0., 10.], [10., 10.]])
    >>> clients = [truth[[0, 1]], truth[[1, 2]], truth[[2, 3]]]
    >>> clients = [np.repeat(c, 20, axis=0) + 0.1 * rng.normal(size=(40, 2))
    ...            for c in clients]
    >>> kf = KFed(4, client_clusters=2, random_state=0).fit(clients)
    >>> sorted(kf.cluster_centers_.round().astype(int).tolist())
    [[0, 0], [0, 10], [10, 0], [10, 10]]
    >>> rep = kf.remove(0, [0, 1, 2])
    >>> rep.client_retrained, [int(s.sum()) for s in kf.client_sizes_]
    (True, [37, 40, 40])
    >>> rep = kf.remove_clients([2])
    >>> rep.clients, rep.server_retrained, [c.shape[0] for c in kf.client_centers_]
    ((2,), True, [2, 2, 0])
    """

    def __init__(self, n_clusters=8, *, client_clusters=None, local_step="k-means", n_init=10,
                 max_iter=300, tol=1e-4, random_state=None):
        self.n_clusters = n_clusters
        self.client_clusters = client_clusters
        self.local_step = local_step
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _check_params(self):
        K = self._check_common()
        kp = K if self.client_clusters is None else \
            check_int(self.client_clusters, "client_clusters", 1)
        if kp > K:
            raise InvalidInputError(
                f"client_clusters={kp} must be <= n_clusters={K} (K-FED assumes k' <= k)")
        if not isinstance(self.local_step, str) or self.local_step not in _LOCAL_STEPS:
            raise InvalidInputError(
                f"local_step={self.local_step!r} must be one of {sorted(_LOCAL_STEPS)}")
        return kp

    def _local(self, X, k, gen, p):
        return _LOCAL_STEPS[p["local_step"]](X, k, n_init=p["n_init"], max_iter=p["max_iter"],
                                             tol=p["tol"], rng=self._fresh(gen))

    def _server(self, locals_, gen, p):
        centers = [c for c, _, _ in locals_]
        sizes = [s for _, s, _ in locals_]
        return kfed_server(centers, sizes, p["n_clusters"], max_iter=p["max_iter"],
                           tol=p["tol"], random_state=self._fresh(gen))

    def _set_server(self, server):
        C, z, inertia, n_iter = server
        self.cluster_centers_, self.server_device_ = C, z
        self.inertia_, self.n_iter_ = inertia, n_iter


class FederatedDCKMeans(_RetrainingFederatedBase):
    """Federated DC-k-means (leaf = client), with removal by retraining.

    Each client (a leaf) runs full k-means (k-means++ and Lloyd, ``n_init``
    runs) with ``min(n_clusters, n_l)`` clusters and sends its centroids and
    cluster sizes; the root runs full k-means with ``n_clusters`` clusters on
    the union of the leaf centroids, weighted by cluster sizes when
    ``weighted`` (:func:`dc_root`).

    Parameters
    ----------
    n_clusters : int
    n_init, max_iter, tol : int, int, float
        k-means parameters, at the leaves and at the root.
    weighted : bool, default=True
        Weight the leaf centroids by their cluster sizes at the root.
    random_state : None, int, SeedSequence or Generator

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features)
    client_centers_, client_sizes_ : list of ndarray, one per client
        Empty for clients without data or that left.
    client_n_iter_ : list of int
    inertia_ : float
        Root objective on the (weighted) leaf centroids.
    n_iter_ : int
        Root Lloyd iterations of the best initialisation.
    n_clients_, n_features_in_ : int
    fit_seconds_ : dict

    Notes
    -----
    DC-k-means is from Ginart et al., "Making AI Forget You: Data Deletion in
    Machine Learning" (NeurIPS 2019), a w-ary tree of k-means problems whose
    deletion recomputes one root path; Pan et al., "Machine Unlearning of
    Federated Clusters" (ICLR 2023) adapt it to the federated setting as a
    tree of height one whose leaves are the clients, with full k-means at
    leaves and root.  A client's empty local clusters are not sent; the root
    uses at most as many clusters as there are distinct leaf centroids.

    Removal reruns the affected leaf with its own seed and the root with the
    root's seed: the model after removals is identical to a fit on the
    remaining data with the same ``random_state`` (clients that left given
    as empty arrays).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> truth = np.array([[0., 0.], [10., 0.], [0., 10.]])
    >>> clients = [np.repeat(truth, 10, axis=0) + 0.1 * rng.normal(size=(30, 2))
    ...            for _ in range(3)]
    >>> dc = FederatedDCKMeans(3, random_state=0).fit(clients)
    >>> sorted(dc.cluster_centers_.round().astype(int).tolist())
    [[0, 0], [0, 10], [10, 0]]
    >>> rep = dc.remove(1, np.arange(30))       # client 1 deletes all its data
    >>> rep.server_retrained, dc.client_centers_[1].shape
    (True, (0, 2))
    """

    def __init__(self, n_clusters=8, *, n_init=10, max_iter=300, tol=1e-4, weighted=True,
                 random_state=None):
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.weighted = weighted
        self.random_state = random_state

    def _check_params(self):
        K = self._check_common()
        if not isinstance(self.weighted, (bool, np.bool_)):
            raise InvalidInputError(f"weighted={self.weighted!r} must be True or False")
        return K

    def _server(self, locals_, gen, p):
        centers = [c for c, _, _ in locals_]
        sizes = [s for _, s, _ in locals_]
        return dc_root(centers, sizes, p["n_clusters"], weighted=bool(p["weighted"]),
                       n_init=p["n_init"], max_iter=p["max_iter"], tol=p["tol"],
                       random_state=self._fresh(gen))

    def _set_server(self, server):
        C, inertia, n_iter = server
        self.cluster_centers_, self.inertia_, self.n_iter_ = C, inertia, n_iter
