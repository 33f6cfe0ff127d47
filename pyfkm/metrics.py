"""Clustering objectives and the loss ratio used to judge federated k-means.

* :func:`kmeans_objective`: the centralized k-means objective of a set of
  centers, ``phi_c(X; C) = sum_x min_c ||x - c||^2``;
* :func:`federated_objective`: the federated objective ``phi_f`` of the MUFC
  paper (Pan et al., "Machine Unlearning of Federated Clusters", ICLR 2023,
  Def. 3.1), where a point is charged through its client's local centroid;
* :func:`best_kmeans_objective`: the best centralized objective over several
  runs of k-means++ and Lloyd (:class:`pyfkm.KMeans`), the paper's
  reference ``phi*_c``;
* :func:`loss_ratio` and :func:`federated_loss_ratio`: objective divided by
  that reference;
* :func:`nmi`: normalized mutual information of two labelings.

Everything is plain numpy (no scikit-learn at run time).  Squared
distances are computed from coordinate differences in float64, in row
chunks (no ``n x k x d`` temporary for large inputs); ties between equally
near centers go to the lowest index.
"""
from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import check_array, check_n_clusters, check_sample_weight
from .exceptions import InvalidInputError, NotFittedError, NumericalError
from .rng import SeedLike, spawn

__all__ = [
    "kmeans_objective",
    "federated_objective",
    "best_kmeans_objective",
    "loss_ratio",
    "federated_loss_ratio",
    "nmi",
]

# entries of the (chunk, k, d) difference block evaluated at once
_BLOCK = 1 << 20


def _nearest(X: NDArray[np.float64], C: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Index of the nearest row of ``C`` (ties to the lowest) and the squared
    distance to it, for every row of ``X`` (no input validation).

    Deliberate specialization of :func:`pyfkm.core.kmeans.nearest_center`
    (the estimators' kernel): the metrics judge the estimators, so they
    compute in plain numpy, independently of the kernel they judge, from
    coordinate differences (the documented tie rule holds for any data, not
    only where the kernel's scores are exact), and let an overflow reach the
    NumericalError of the totals."""
    n, d = X.shape
    k = C.shape[0]
    labels = np.empty(n, dtype=np.int64)
    mind = np.empty(n, dtype=np.float64)
    C = C.astype(np.float64, copy=False)
    step = max(1, _BLOCK // max(1, k * d))
    with np.errstate(over="ignore", invalid="ignore"):
        for a in range(0, n, step):
            b = min(a + step, n)
            diff = X[a:b, None, :].astype(np.float64, copy=False) - C[None, :, :]
            d2 = np.einsum("ijk,ijk->ij", diff, diff)
            lab = d2.argmin(axis=1)
            labels[a:b] = lab
            mind[a:b] = d2[np.arange(b - a), lab]
    return labels, mind


def _sq_dist_rows(X: NDArray[np.float64], Y: NDArray[np.float64]) -> NDArray[np.float64]:
    """``||X[i] - Y[i]||^2`` for every i (no input validation)."""
    out = np.empty(X.shape[0], dtype=np.float64)
    step = max(1, _BLOCK // max(1, X.shape[1]))
    with np.errstate(over="ignore", invalid="ignore"):
        for a in range(0, X.shape[0], step):
            b = min(a + step, X.shape[0])
            diff = X[a:b].astype(np.float64, copy=False) - Y[a:b]
            out[a:b] = np.einsum("ij,ij->i", diff, diff)
    return out


def _finite_total(value: float, what: str) -> float:
    value = float(value)
    if not np.isfinite(value):
        raise NumericalError(
            f"{what} is not finite (squared distances overflow float64); rescale the data")
    return value


def _check_centers(centers: ArrayLike, d: int, name: str) -> NDArray[np.float64]:
    C = check_array(centers, name)
    if C.shape[1] != d:
        raise InvalidInputError(
            f"{name} has {C.shape[1]} features but the data have {d}")
    return C


def kmeans_objective(X: ArrayLike, centers: ArrayLike, sample_weight: ArrayLike | None = None
                     ) -> float:
    """Centralized k-means objective: (weighted) sum of squared distances of
    the points to their nearest center.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    centers : array-like of shape (n_centers, n_features)
    sample_weight : array-like of shape (n_samples,), optional
        Nonnegative weights, not all zero (default: all ones).

    Returns
    -------
    float
        ``sum_i w_i * min_j ||X[i] - centers[j]||^2``.

    Raises
    ------
    InvalidInputError
        Empty, non-2-D or non-finite ``X`` or ``centers``; different
        numbers of features; bad weights.
    NumericalError
        The sum overflows float64.

    Examples
    --------
    >>> X = [[0.0, 0.0], [0.0, 2.0], [5.0, 0.0]]
    >>> kmeans_objective(X, [[0.0, 1.0], [5.0, 0.0]])   # 1 + 1 + 0
    2.0
    >>> kmeans_objective(X, [[0.0, 1.0], [5.0, 0.0]], sample_weight=[1, 3, 1])
    4.0
    """
    X = check_array(X, "X")
    C = _check_centers(centers, X.shape[1], "centers")
    w = check_sample_weight(sample_weight, X.shape[0])
    _, mind = _nearest(X, C)
    total = mind.sum() if w is None else w @ mind
    return _finite_total(total, "the objective")


def _check_sequence(seq: Any, name: str, n: int | None = None) -> list[Any]:
    if isinstance(seq, np.ndarray) or not hasattr(seq, "__len__") or isinstance(seq, str):
        raise InvalidInputError(f"{name} must be a sequence with one entry per client")
    if n is not None and len(seq) != n:
        raise InvalidInputError(f"{name} has {len(seq)} entries but there are {n} clients")
    return list(seq)


def _check_index_array(a: ArrayLike, name: str, length: int, upper: int) -> NDArray[np.int64]:
    """A 1-D int array of ``length`` entries with values in [0, upper)."""
    arr = np.asarray(a)
    if arr.ndim != 1 or arr.shape[0] != length:
        raise InvalidInputError(
            f"{name} must be 1-D with {length} entries, got shape {arr.shape}")
    if length == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise InvalidInputError(f"{name} must be integers, got dtype {arr.dtype}")
    if arr.min() < 0 or arr.max() >= upper:
        raise InvalidInputError(
            f"{name} has values outside [0, {upper}): min {arr.min()}, max {arr.max()}")
    return arr.astype(np.int64, copy=False)


def federated_objective(clients: Sequence[ArrayLike], local_labels: Sequence[ArrayLike] | None,
                        local_centers: Sequence[ArrayLike], server_centers: ArrayLike, *,
                        server_labels: Sequence[ArrayLike] | None = None) -> float:
    """Federated k-means objective ``phi_f`` (MUFC paper, Def. 3.1).

    Each point ``x`` of client ``l`` belongs to a local cluster with local
    centroid ``c = local_centers[l][local_labels[l][i]]``.  The point is
    charged to the server centroid ``s(c)`` nearest to ``c`` -- not to the
    server centroid nearest to ``x``:

        ``phi_f = sum_l sum_{x in X^(l)} ||x - s(c^(l)(x))||^2``,
        ``s(c) = argmin_j ||c - server_centers[j]||^2`` (ties to the lowest j).

    So a server model is judged through the assignment it induces on the
    clients' data via their local clusterings.  Always
    ``phi_f >= kmeans_objective(pooled data, server_centers)``, with
    equality when every point's server centroid through its local centroid
    is also its nearest server centroid (e.g. when every local centroid is
    itself a server centroid and every point is assigned to its nearest
    local centroid).

    Parameters
    ----------
    clients : sequence of array-like of shape (n_l, n_features)
        Each client's points (an empty client is an array of shape
        ``(0, n_features)``).
    local_labels : sequence of array-like of int, or None
        ``local_labels[l][i]`` is the local cluster of point ``i`` of client
        ``l``, in ``[0, len(local_centers[l]))``.  ``None``: each point is
        assigned to its nearest local centroid (ties to the lowest index),
        which is what k-means++ seeding and Lloyd both return.
    local_centers : sequence of array-like of shape (k_l, n_features)
        Each client's local centroids, as the client computed them
        (unquantized; pass the quantized ones to charge through the bins).
    server_centers : array-like of shape (k, n_features)
    server_labels : sequence of array-like of int, optional
        ``server_labels[l][j]`` is the server centroid that local centroid
        ``j`` of client ``l`` is charged to, overriding the nearest one
        (for methods such as K-FED whose server assigns local centroids to
        clusters itself).

    Returns
    -------
    float

    Raises
    ------
    InvalidInputError
        Sequences of different lengths, inconsistent numbers of features,
        labels out of range or of the wrong length, a non-empty client
        without local centroids, non-finite data.
    NumericalError
        The sum overflows float64.

    Notes
    -----
    The paper's reference implementation charges each point to the server
    cluster of a point the server sampled in the bin of its local centroid;
    this function uses the definition (the nearest server centroid to the
    local centroid), which does not depend on the server's samples.

    Examples
    --------
    One client with local cluster ``{0, 4}`` (centroid 2) and one with ``{10}``;
    server centroids 0 and 5.  Centroid 2 is nearer to 0, so the point 4 is
    charged ``(4 - 0)^2 = 16`` although 5 is nearer to it; the point 10 goes
    through centroid 10 to 5: 25.

    >>> clients = [np.array([[0.0], [4.0]]), np.array([[10.0]])]
    >>> federated_objective(clients, [[0, 0], [0]], [[[2.0]], [[10.0]]], [[0.0], [5.0]])
    41.0
    >>> kmeans_objective(np.vstack(clients), [[0.0], [5.0]])   # 0 + 1 + 25
    26.0
    """
    S = check_array(server_centers, "server_centers")
    d = S.shape[1]
    clients = _check_sequence(clients, "clients")
    L = len(clients)
    if L == 0:
        raise InvalidInputError("clients is empty; need at least one client")
    local_centers = _check_sequence(local_centers, "local_centers", L)
    if local_labels is not None:
        local_labels = _check_sequence(local_labels, "local_labels", L)
    if server_labels is not None:
        server_labels = _check_sequence(server_labels, "server_labels", L)
    prepared = []
    for l in range(L):
        X = check_array(clients[l], f"clients[{l}]", allow_empty=True)
        if X.shape[1] != d:
            raise InvalidInputError(
                f"clients[{l}] has {X.shape[1]} features but server_centers has {d}")
        c = np.asarray(local_centers[l])
        if c.size == 0:
            if X.shape[0] > 0:
                raise InvalidInputError(
                    f"client {l} has {X.shape[0]} points but no local centers")
            c = np.zeros((0, d))
        else:
            c = check_array(c, f"local_centers[{l}]")
            if c.shape[1] != d:
                raise InvalidInputError(
                    f"local_centers[{l}] has {c.shape[1]} features but server_centers has {d}")
        k_l = c.shape[0]
        if local_labels is None:
            lab = _nearest(X, c)[0] if X.shape[0] else np.zeros(0, dtype=np.int64)
        else:
            lab = _check_index_array(local_labels[l], f"local_labels[{l}]", X.shape[0], k_l)
        if server_labels is None:
            to_server = _nearest(c, S)[0] if k_l else np.zeros(0, dtype=np.int64)
        else:
            to_server = _check_index_array(server_labels[l], f"server_labels[{l}]",
                                           k_l, S.shape[0])
        prepared.append((X, lab, to_server))
    total = 0.0
    for X, lab, to_server in prepared:
        if X.shape[0]:
            total += _sq_dist_rows(X, S[to_server[lab]]).sum()
    return _finite_total(total, "the federated objective")


def _check_runs(n_runs: object) -> int:
    if not isinstance(n_runs, numbers.Integral) or isinstance(n_runs, bool) or n_runs < 1:
        raise InvalidInputError(f"n_runs={n_runs!r} must be an int >= 1")
    return int(n_runs)


def best_kmeans_objective(X: ArrayLike, n_clusters: int, *, n_runs: int = 5,
                          random_state: SeedLike = None, max_iter: int = 300,
                          tol: float = 1e-4) -> float:
    """Best centralized k-means objective over ``n_runs`` runs of k-means++
    seeding followed by Lloyd (:class:`pyfkm.KMeans`).

    This is the reference ``phi*_c(X)`` of the loss ratio.  Compute it once
    and divide several methods' objectives by it to compare them against
    the same reference.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The pooled data of all clients.
    n_clusters : int
        Between 1 and ``n_samples``.
    n_runs : int, default=5
        Independent runs; run ``r`` uses the ``r``-th child of
        ``random_state`` (:func:`pyfkm.rng.spawn`).
    random_state : None, int, SeedSequence or Generator
    max_iter, tol : Lloyd parameters, as in :class:`pyfkm.KMeans`.

    Returns
    -------
    float
        ``min_r kmeans_objective(X, centers_r)``.

    Examples
    --------
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> best_kmeans_objective(X, 2, n_runs=3, random_state=0)
    1.0
    """
    from .core.kmeans import KMeans

    X = check_array(X, "X")
    k = check_n_clusters(n_clusters, X.shape[0])
    runs = _check_runs(n_runs)
    best = np.inf
    for gen in spawn(random_state, runs):
        km = KMeans(k, n_init=1, max_iter=max_iter, tol=tol, random_state=gen).fit(X)
        best = min(best, kmeans_objective(X, km.cluster_centers_))
    return float(best)


def loss_ratio(objective_value: float, X: ArrayLike, n_clusters: int, *, n_runs: int = 5,
               random_state: SeedLike = None) -> float:
    """Objective value divided by the best centralized k-means objective on ``X``.

    The quality measure of the MUFC paper: ``phi / phi*_c(X)``, where
    ``phi*_c`` is :func:`best_kmeans_objective` (the best of ``n_runs`` runs
    of k-means++ and Lloyd on the pooled data).  Values near 1 mean the
    clustering is as good as centralized k-means.  ``phi*_c`` is itself a
    heuristic's result, so a ratio below 1 is possible: :class:`pyfkm.KMeans`
    seeds with plain k-means++ (one candidate per step), which on
    well-separated mixtures with many clusters can miss a cluster in most
    runs; raise ``n_runs`` when the reference must be near the optimum, or
    compare with the objective of known generating centers.

    Parameters
    ----------
    objective_value : float
        A finite value >= 0, e.g. from :func:`federated_objective` or
        :func:`kmeans_objective` on the same ``X``.
    X : array-like of shape (n_samples, n_features)
        The pooled data (``np.vstack(clients)``).
    n_clusters : int
    n_runs : int, default=5
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    float
        The ratio; if ``phi*_c`` is 0 (at most ``n_clusters`` distinct
        points), 1.0 when ``objective_value`` is 0 too, else ``inf``.

    Examples
    --------
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> loss_ratio(2.0, X, 2, random_state=0)    # the optimum is 1.0
    2.0
    """
    if not isinstance(objective_value, numbers.Real) or isinstance(objective_value, bool):
        raise InvalidInputError(
            f"objective_value must be a number, got {type(objective_value).__name__}")
    value = float(objective_value)
    if not (np.isfinite(value) and value >= 0):
        raise InvalidInputError(f"objective_value={objective_value!r} must be finite and >= 0")
    ref = best_kmeans_objective(X, n_clusters, n_runs=n_runs, random_state=random_state)
    if ref == 0.0:
        return 1.0 if value == 0.0 else float("inf")
    return value / ref


def _remaining_data(model: Any, clients: Sequence[ArrayLike]) -> tuple[list[NDArray[np.float64]], list[NDArray[np.float64]]]:
    """The data a fitted federated model currently represents: for each
    participating client, its rows not removed since ``fit``, with the
    client's local centers."""
    for attr in ("cluster_centers_", "client_centers_"):
        if not hasattr(model, attr):
            raise NotFittedError(
                f"{type(model).__name__} is not fitted (no {attr}); call fit first")
    centers = list(model.client_centers_)
    clients = _check_sequence(clients, "clients", len(centers))
    # FederatedKMeans says which clients remain and which rows they removed
    # (participants_, removed_); the retraining baselines do not track rows
    masks = getattr(model, "removed_", None)
    participants = list(getattr(model, "participants_", range(len(centers))))
    data, local = [], []
    for l in participants:
        X = check_array(clients[l], f"clients[{l}]", allow_empty=True)
        removed = None if masks is None else masks[l]
        if removed is not None:
            if removed.shape[0] != X.shape[0]:
                raise InvalidInputError(
                    f"clients[{l}] has {X.shape[0]} rows but the model's client {l} was "
                    f"fitted on {removed.shape[0]}; pass the data given to fit")
            X = X[~removed]
        data.append(X)
        local.append(centers[l])
    return data, local


def federated_loss_ratio(model: Any, clients: Sequence[ArrayLike], *, n_runs: int = 5,
                         random_state: SeedLike = None) -> float:
    """Loss ratio ``phi_f(X; C_s) / phi*_c(X)`` of a fitted federated model.

    Parameters
    ----------
    model : fitted :class:`pyfkm.mufc.FederatedKMeans`
        Or any estimator with ``cluster_centers_`` (server centroids) and
        ``client_centers_`` (one array of local centroids per client).
    clients : sequence of array-like
        The client datasets given to ``fit`` (row positions are point ids).
        Points removed since then (the model's per-client ``removed_``
        masks) and clients that left are left out, so after unlearning the
        ratio is that of the remaining data.
    n_runs : int, default=5
        Runs of centralized k-means++ and Lloyd for ``phi*_c``.
    random_state : None, int, SeedSequence or Generator
        Seeds those runs.

    Returns
    -------
    float

    Notes
    -----
    The numerator is :func:`federated_objective` with each remaining point
    assigned to its nearest local centroid (what a client's k-means++
    seeding or Lloyd assigns it to); the denominator is
    :func:`best_kmeans_objective` on the pooled remaining data with
    ``model.n_clusters`` clusters (at most the number of points).

    Examples
    --------
    >>> from pyfkm.datasets import make_gaussian_mixture, split_non_iid
    >>> from pyfkm.mufc import FederatedKMeans
    >>> X, y, _ = make_gaussian_mixture(600, 2, 3, random_state=0)
    >>> parts = split_non_iid(X, y, n_clients=4, clusters_per_client=2, random_state=0)
    >>> clients = [X[p] for p in parts]
    >>> model = FederatedKMeans(3, server_points="centers", secure=False,
    ...                         random_state=0).fit(clients)
    >>> ratio = federated_loss_ratio(model, clients, random_state=0)
    >>> bool(0.99 < ratio < 1.5)
    True
    """
    data, local = _remaining_data(model, clients)
    if not data or sum(X.shape[0] for X in data) == 0:
        raise InvalidInputError("the model represents no data (every point was removed)")
    S = np.asarray(model.cluster_centers_)
    phi_f = federated_objective(data, None, local, S)
    pooled = np.vstack(data)
    k = getattr(model, "n_clusters", S.shape[0])
    k = min(int(k), pooled.shape[0])  # type: ignore[arg-type]
    return loss_ratio(phi_f, pooled, k, n_runs=n_runs, random_state=random_state)


def _entropy(counts: NDArray[np.integer]) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def nmi(labels_true: ArrayLike, labels_pred: ArrayLike) -> float:
    """Normalized mutual information of two labelings (arithmetic mean).

    ``NMI = I(U; V) / ((H(U) + H(V)) / 2)`` with natural logarithms, the
    definition of scikit-learn's ``normalized_mutual_info_score`` default
    (``average_method="arithmetic"``): 1 for identical partitions up to
    renaming, 0 for independent ones.  Two single-cluster labelings give 1.

    Parameters
    ----------
    labels_true, labels_pred : array-like of shape (n_samples,)
        Any sortable labels.

    Returns
    -------
    float in [0, 1]

    Examples
    --------
    >>> nmi([0, 0, 1, 1], [5, 5, 3, 3])
    1.0
    >>> nmi([0, 0, 1, 1], [0, 1, 0, 1])
    0.0
    """
    a, b = np.asarray(labels_true), np.asarray(labels_pred)
    if a.ndim != 1 or b.ndim != 1:
        raise InvalidInputError("labels_true and labels_pred must be 1-D")
    if a.shape[0] != b.shape[0]:
        raise InvalidInputError(
            f"labels_true has {a.shape[0]} entries but labels_pred has {b.shape[0]}")
    if a.shape[0] == 0:
        raise InvalidInputError("labels_true and labels_pred are empty")
    try:
        _, u = np.unique(a, return_inverse=True)
        _, v = np.unique(b, return_inverse=True)
    except TypeError:
        raise InvalidInputError("labels must be sortable (e.g. all ints)") from None
    u, v = u.ravel(), v.ravel()
    ku, kv = int(u.max()) + 1, int(v.max()) + 1
    if ku == kv == 1:
        return 1.0
    table = np.bincount(u * kv + v, minlength=ku * kv).reshape(ku, kv).astype(np.float64)
    n = float(a.shape[0])
    hu, hv = _entropy(table.sum(axis=1)), _entropy(table.sum(axis=0))
    nz = table > 0
    outer = np.outer(table.sum(axis=1), table.sum(axis=0))
    mi = float((table[nz] / n * np.log(table[nz] * n / outer[nz])).sum())
    mi = max(mi, 0.0)
    denom = (hu + hv) / 2.0
    if mi == 0.0 or denom <= 0.0:
        return 0.0
    return float(min(mi / denom, 1.0))
