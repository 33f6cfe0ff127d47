"""K-FED (Dennis, Li & Smith, ICML 2021): one-shot federated clustering.

Each client clusters its data (full k-means, or the paper's Awasthi-Sheffet
step) and sends its local centers and sizes; the server starts from the
local centers of one randomly chosen device, adds the local center
farthest from the current set until it has ``n_clusters``, then runs Lloyd
on the (unweighted) local centers (:func:`kfed_server`).  :class:`KFed`
unlearns by retraining (:mod:`pyfkm.mufc.baselines`).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_int
from ..exceptions import InvalidInputError
from ..core.kmeans import lloyd
from ..core.seeding import kmeans_plusplus
from ..rng import SeedLike, as_generator
from .baselines import (_RetrainingFederatedBase, _centers_and_sizes, _gather, _local_kmeans,
                        _n_distinct)

__all__ = ["KFed", "kfed_server"]


# -- the algorithm steps (private paths: no input validation) -----------------

def _separated_sets(P: NDArray[np.floating], nu: NDArray[np.floating]) -> NDArray[np.bool_]:
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


def _farthest_point_completion(S: NDArray[np.float64], init_rows: NDArray[np.integer], k: int
                               ) -> NDArray[np.int64]:
    """Indices of ``k`` rows of ``S``: ``init_rows`` (distinct points), then
    repeatedly the row farthest from the chosen set (largest distance to its
    nearest chosen row; ties to the lowest index).  Needs ``k`` at most the
    number of distinct rows of ``S``."""
    # deliberately not pyfkm.core.kmeans.nearest_center: a running minimum of
    # exact squared distances to a growing set (farthest-first traversal),
    # updated by one np.minimum per chosen row; the kernel would rescan every
    # chosen row each step, and picks labels by score (not the exact minimum)
    chosen = list(init_rows)
    diff = S[:, None, :] - S[chosen][None, :, :]
    mind = (diff * diff).sum(-1).min(axis=1)
    while len(chosen) < k:
        j = int(np.argmax(mind))
        chosen.append(j)
        dj = S - S[j]
        np.minimum(mind, (dj * dj).sum(1), out=mind)
    return np.asarray(chosen, dtype=np.int64)


def kfed_server(centers: Sequence[ArrayLike], sizes: Sequence[ArrayLike], n_clusters: int, *,
                max_iter: int = 300, tol: float = 1e-4, random_state: SeedLike = None
                ) -> tuple[NDArray[np.float64], int, float, int]:
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
    max_iter, tol : Lloyd parameters (see :func:`pyfkm.core.kmeans.lloyd`).
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

    def __init__(self, n_clusters: int = 8, *, client_clusters: int | None = None,
                 local_step: str = "k-means", n_init: int = 10, max_iter: int = 300,
                 tol: float = 1e-4, random_state: SeedLike = None) -> None:
        super().__init__(n_clusters, n_init=n_init, max_iter=max_iter, tol=tol,
                         random_state=random_state)
        self.client_clusters = client_clusters
        self.local_step = local_step

    def _check_params(self) -> int:
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

    def _local(self, X: NDArray[np.float64], k: int, gen: np.random.Generator, p: dict[str, Any]) -> tuple[NDArray[np.float64], NDArray[np.int64], int]:
        return _LOCAL_STEPS[p["local_step"]](X, k, n_init=p["n_init"], max_iter=p["max_iter"],
                                             tol=p["tol"], rng=self._fresh(gen))

    def _server(self, locals_: list[Any], gen: np.random.Generator, p: dict[str, Any]
                ) -> tuple[NDArray[np.float64], int, float, int]:
        centers, sizes = _centers_and_sizes(locals_)
        return kfed_server(centers, sizes, p["n_clusters"], max_iter=p["max_iter"],
                           tol=p["tol"], random_state=self._fresh(gen))

    def _set_server(self, server: tuple[NDArray[np.float64], int, float, int]) -> None:
        C, z, inertia, n_iter = server
        self.cluster_centers_, self.server_device_ = C, z
        self.inertia_, self.n_iter_ = inertia, n_iter
