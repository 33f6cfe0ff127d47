"""Federated DC-k-means: the baseline of Pan et al. (ICLR 2023) after Ginart et al.

A tree of height one with the clients as leaves: each leaf runs full
k-means and sends its centroids and cluster sizes, the root runs full
k-means on the leaf centroids, weighted by their sizes (:func:`dc_root`).
:class:`FederatedDCKMeans` unlearns by retraining
(:mod:`pyfkm.mufc.baselines`).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..exceptions import InvalidInputError
from ..core.kmeans import KMeans
from ..rng import SeedLike, as_generator
from .baselines import _RetrainingFederatedBase, _centers_and_sizes, _gather, _n_distinct

__all__ = ["FederatedDCKMeans", "dc_root"]


def dc_root(centers: Sequence[ArrayLike], sizes: Sequence[ArrayLike], n_clusters: int, *,
            weighted: bool = True, n_init: int = 10, max_iter: int = 300, tol: float = 1e-4,
            random_state: SeedLike = None) -> tuple[NDArray[np.float64], float, int]:
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
    inertia_ : float
        Root objective on the (weighted) leaf centroids.
    n_iter_ : int
        Root Lloyd iterations of the best initialisation.
    client_centers_, client_sizes_, client_n_iter_, n_clients_, n_features_in_, fit_seconds_
        The clients' local models and the fit's sizes and times, as for
        :class:`KFed`.

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

    def __init__(self, n_clusters: int = 8, *, n_init: int = 10, max_iter: int = 300,
                 tol: float = 1e-4, weighted: bool = True, random_state: SeedLike = None
                 ) -> None:
        super().__init__(n_clusters, n_init=n_init, max_iter=max_iter, tol=tol,
                         random_state=random_state)
        self.weighted = weighted

    def _check_params(self) -> int:
        K = self._check_common()
        if not isinstance(self.weighted, (bool, np.bool_)):
            raise InvalidInputError(f"weighted={self.weighted!r} must be True or False")
        return K

    def _server(self, locals_: list[Any], gen: np.random.Generator, p: dict[str, Any]
                ) -> tuple[NDArray[np.float64], float, int]:
        centers, sizes = _centers_and_sizes(locals_)
        return dc_root(centers, sizes, p["n_clusters"], weighted=bool(p["weighted"]),
                       n_init=p["n_init"], max_iter=p["max_iter"], tol=p["tol"],
                       random_state=self._fresh(gen))

    def _set_server(self, server: tuple[NDArray[np.float64], float, int]) -> None:
        C, inertia, n_iter = server
        self.cluster_centers_, self.inertia_, self.n_iter_ = C, inertia, n_iter
