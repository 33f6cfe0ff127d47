"""Built-in synthetic data (no downloads) and federated splits of a dataset.

* :func:`make_blobs`: isotropic Gaussian blobs anywhere in space;
* :func:`make_gaussian_mixture`: a mixture like the synthetic "Gaussian"
  data of the MUFC paper (Pan et al., ICLR 2023), inside the box every
  federated client must use;
* :func:`split_iid` and :func:`split_non_iid`: partitions of a dataset into
  clients, the latter with at most ``K'`` true clusters per client (the
  paper's non-iid setting).
"""
from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import check_array, check_n_clusters
from .exceptions import InvalidInputError
from .rng import SeedLike, as_generator

__all__ = ["make_blobs", "make_gaussian_mixture", "split_iid", "split_non_iid"]


def make_blobs(n_samples: int = 10_000, n_features: int = 2, n_clusters: int = 5, *,
               cluster_std: float = 1.0, center_box: tuple[float, float] = (-10.0, 10.0),
               random_state: SeedLike = None
               ) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """Isotropic Gaussian blobs with random centers.

    Parameters
    ----------
    n_samples : int
        Total number of points, split as evenly as possible over clusters.
    n_features : int
    n_clusters : int
    cluster_std : float
        Standard deviation of every blob.
    center_box : (float, float)
        Centers are uniform in this box in every coordinate.
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
        Points, shuffled.
    y : ndarray of shape (n_samples,), int64
        True blob of each point.
    centers : ndarray of shape (n_clusters, n_features)

    Examples
    --------
    >>> X, y, centers = make_blobs(100, 3, 4, random_state=0)
    >>> X.shape, centers.shape, sorted(set(y.tolist()))
    ((100, 3), (4, 3), [0, 1, 2, 3])
    """
    if int(n_samples) < 1 or int(n_features) < 1:
        raise InvalidInputError("n_samples and n_features must be >= 1")
    k = check_n_clusters(n_clusters, int(n_samples))
    if not cluster_std >= 0:
        raise InvalidInputError(f"cluster_std={cluster_std!r} must be >= 0")
    rng = as_generator(random_state)
    lo, hi = center_box
    centers = rng.uniform(lo, hi, size=(k, int(n_features)))
    y = np.arange(int(n_samples)) % k
    rng.shuffle(y)
    X = centers[y] + cluster_std * rng.standard_normal((int(n_samples), int(n_features)))
    return X, y.astype(np.int64), centers


def _check_int(value: int, name: str, lo: int, hi: int | None = None) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise InvalidInputError(f"{name} must be an int, got {value!r}")
    value = int(value)
    if value < lo:
        raise InvalidInputError(f"{name}={value} must be >= {lo}")
    if hi is not None and value > hi:
        raise InvalidInputError(f"{name}={value} must be <= {hi}")
    return value


def make_gaussian_mixture(n_samples: int = 30_000, n_features: int = 10, n_clusters: int = 10,
                          *, cluster_std: float | None = None,
                          box: tuple[float, float] = (-0.5, 0.5), random_state: SeedLike = None
                          ) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """Equal-size isotropic Gaussian clusters inside a box, like the MUFC paper's data.

    The defaults are the paper's synthetic "Gaussian" setting: 30000 points
    in 10 dimensions from 10 clusters of 3000 points, in the unit hypercube
    centred at 0 (the box :class:`pyfkm.mufc.FederatedKMeans` expects).

    Parameters
    ----------
    n_samples : int, default=30000
        Total number of points; cluster sizes differ by at most one
        (``n_samples // n_clusters`` or one more).
    n_features : int, default=10
    n_clusters : int, default=10
        Must be <= ``n_samples``.
    cluster_std : float, optional
        Standard deviation of every coordinate around its cluster's center.
        Default ``(upper - lower) / 10`` (0.1 in the unit box).
    box : (float, float), default=(-0.5, 0.5)
        ``(lower, upper)``: every coordinate of every point lies in it.
    random_state : None, int, SeedSequence or Generator
        The output is a deterministic function of an int or SeedSequence
        seed.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
        Points in random order, inside ``[lower, upper]^n_features``.
    y : ndarray of shape (n_samples,), int64
        Cluster of each point, in ``[0, n_clusters)``.
    centers : ndarray of shape (n_clusters, n_features), float64
        The cluster means.

    Raises
    ------
    InvalidInputError
        ``n_samples`` or ``n_features`` < 1, ``n_clusters`` not an int in
        ``[1, n_samples]``, ``cluster_std`` negative or not finite, ``box``
        not two finite numbers with ``lower < upper``.

    Notes
    -----
    Centers are uniform in the shrunken box ``[lower + m, upper - m]^d``
    with margin ``m = min(2 * cluster_std, (upper - lower) / 4)``, so most of
    each cluster lies inside the box.  Each point is its center plus
    ``N(0, cluster_std^2 I)`` noise, then **clipped** coordinate-wise into
    ``[lower, upper]``: a coordinate that falls outside is set to the
    nearest bound (a point is never redrawn or dropped).  Clusters are
    therefore clipped Gaussians.  While ``m = 2 * cluster_std`` (std at most
    an eighth of the box width), each coordinate of a point is clipped with
    probability at most about 2.3% (a center on the margin), far less on
    average: about 0.3% of all coordinates with the defaults.

    The default std keeps the clusters apart (with the defaults, centers
    are about 0.8 apart while points lie about 0.3 from their center) but
    not so far apart that plain k-means++ seeding often misses one: with
    std 0.05 a single run of :class:`pyfkm.KMeans` found the generating
    partition in only 10-45% of the seeds tried, which makes the
    best-of-a-few-runs reference of :func:`pyfkm.metrics.loss_ratio`
    unreliable.

    The draws happen in a fixed order (centers, the labels' permutation,
    the noise) from one generator.

    The paper (Pan et al., "Machine Unlearning of Federated Clusters",
    ICLR 2023, App.) describes this dataset as 10 Gaussian clusters of 3000
    points in dimension 10; the margin, the default std and the clipping
    are pyfkm's choices.

    Examples
    --------
    >>> X, y, centers = make_gaussian_mixture(1000, 3, 4, random_state=0)
    >>> X.shape, y.shape, centers.shape
    ((1000, 3), (1000,), (4, 3))
    >>> np.bincount(y).tolist()
    [250, 250, 250, 250]
    >>> bool(X.min() >= -0.5 and X.max() <= 0.5)
    True
    >>> X2, _, _ = make_gaussian_mixture(1000, 3, 4, random_state=0)
    >>> bool((X == X2).all())
    True
    """
    n = _check_int(n_samples, "n_samples", 1)
    d = _check_int(n_features, "n_features", 1)
    k = check_n_clusters(n_clusters, n)
    try:
        lo, hi = (float(v) for v in box)
    except (TypeError, ValueError):
        raise InvalidInputError(f"box={box!r} must be a pair (lower, upper)") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise InvalidInputError(f"box={box!r} must be finite with lower < upper")
    if cluster_std is None:
        std = (hi - lo) / 10.0
    else:
        if not isinstance(cluster_std, numbers.Real) or isinstance(cluster_std, bool):
            raise InvalidInputError(f"cluster_std must be a number, got {cluster_std!r}")
        std = float(cluster_std)
        if not (np.isfinite(std) and std >= 0):
            raise InvalidInputError(f"cluster_std={cluster_std!r} must be finite and >= 0")
    rng = as_generator(random_state)
    m = min(2.0 * std, (hi - lo) / 4.0)
    centers = rng.uniform(lo + m, hi - m, size=(k, d))
    y = np.arange(n, dtype=np.int64) % k
    rng.shuffle(y)
    X = centers[y] + std * rng.standard_normal((n, d))
    np.clip(X, lo, hi, out=X)
    return X, y, centers


def split_iid(X: ArrayLike, n_clients: int, *, random_state: SeedLike = None
              ) -> list[NDArray[np.int64]]:
    """Split the rows of ``X`` uniformly at random into ``n_clients`` clients.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Only its number of rows is used.
    n_clients : int
        Between 1 and ``n_samples``.
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    parts : list of ndarray of int64
        ``parts[l]`` holds the row ids of client ``l``, sorted.  Every row
        is in exactly one part; sizes are ``n_samples // n_clients`` or one
        more (the larger parts come first).

    Raises
    ------
    InvalidInputError
        ``X`` not a non-empty 2-D numeric array; ``n_clients`` not an int
        in ``[1, n_samples]`` (a client would be empty).

    Notes
    -----
    A uniformly random permutation of the rows is cut into consecutive
    pieces, so the client of each row is exchangeable.

    Examples
    --------
    >>> X = np.arange(20.0).reshape(10, 2)
    >>> parts = split_iid(X, 3, random_state=0)
    >>> [p.size for p in parts]
    [4, 3, 3]
    >>> sorted(np.concatenate(parts).tolist()) == list(range(10))
    True
    >>> clients = [X[p] for p in parts]
    """
    X = check_array(X, "X", check_finite=False)
    n = X.shape[0]
    L = _check_int(n_clients, "n_clients", 1)
    if L > n:
        raise InvalidInputError(
            f"n_samples={n} should be >= n_clients={L} (every client needs a point)")
    rng = as_generator(random_state)
    perm = rng.permutation(n).astype(np.int64)
    return [np.sort(p) for p in np.array_split(perm, L)]


def split_non_iid(X: ArrayLike, y: ArrayLike, n_clients: int, clusters_per_client: int, *,
                  random_state: SeedLike = None) -> list[NDArray[np.int64]]:
    """Non-iid split: each client holds points of at most ``K'`` true clusters.

    The non-iid setting of the MUFC paper: client ``l`` draws a set of
    ``K' = clusters_per_client`` labels and receives a share of the points
    of each.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Only its number of rows is used (checked against ``y``).
    y : array-like of shape (n_samples,)
        True cluster label of each row (any sortable values, e.g. ints).
    n_clients : int
        ``L``, between 1 and ``n_samples``.
    clusters_per_client : int
        ``K'``, between 1 and the number ``C`` of distinct labels, with
        ``n_clients * clusters_per_client >= C`` (else some cluster could
        not be placed).
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    parts : list of ndarray of int64
        ``parts[l]`` holds the row ids of client ``l``, sorted.  Every row
        is in exactly one part; ``y[parts[l]]`` has at most ``K'``
        distinct values.

    Raises
    ------
    InvalidInputError
        Bad shapes or lengths, ``n_clients`` or ``clusters_per_client`` out
        of range, ``n_clients * clusters_per_client`` below the number of
        distinct labels.

    Notes
    -----
    How the split is drawn (all from one generator):

    1. *Label sets.*  Each client gets exactly ``K'`` distinct labels.  To
       make sure every label is held by some client, a random permutation
       of the labels is first dealt round robin to a random permutation of
       the clients (label ``j`` of the permutation goes to client
       ``j mod L``; no client gets more than ``ceil(C / L) <= K'``).  Each
       client then completes its set with labels drawn uniformly without
       replacement among those it does not hold yet.
    2. *Shares.*  The points of a label are shuffled and split among the
       ``h`` clients holding it: if there are at least ``h`` points, each
       holder first receives one; every remaining point then goes to a
       holder chosen uniformly at random (so shares are multinomial with
       equal probabilities, about ``n_c / h`` each).
    3. *Repair.*  A client left empty (possible only when some label has
       fewer points than holders) takes one point of one of its labels
       from a holder that keeps at least one point.  A client stays empty
       only if none of its labels has such a point.

    So every client is non-empty whenever each label has at least as many
    points as holders -- for instance whenever every cluster has at least
    ``n_clients`` points.

    Examples
    --------
    >>> X, y, _ = make_gaussian_mixture(3000, 2, 10, random_state=0)
    >>> parts = split_non_iid(X, y, n_clients=20, clusters_per_client=3,
    ...                       random_state=0)
    >>> len(parts), sum(p.size for p in parts)
    (20, 3000)
    >>> max(np.unique(y[p]).size for p in parts)
    3
    >>> clients = [X[p] for p in parts]
    """
    X = check_array(X, "X", check_finite=False)
    n = X.shape[0]
    y = np.asarray(y)
    if y.ndim != 1:
        raise InvalidInputError(f"y must be 1-D, got shape {y.shape}")
    if y.shape[0] != n:
        raise InvalidInputError(f"y has {y.shape[0]} entries but X has {n} rows")
    try:
        _, codes = np.unique(y, return_inverse=True)
    except TypeError:
        raise InvalidInputError("the labels in y must be sortable (e.g. all ints)") from None
    codes = codes.ravel()
    C = int(codes.max()) + 1
    L = _check_int(n_clients, "n_clients", 1)
    if L > n:
        raise InvalidInputError(
            f"n_samples={n} should be >= n_clients={L} (every client needs a point)")
    Kp = _check_int(clusters_per_client, "clusters_per_client", 1, C)
    if L * Kp < C:
        raise InvalidInputError(
            f"n_clients * clusters_per_client = {L * Kp} is less than the number of "
            f"distinct labels {C}: some cluster could not be placed")
    rng = as_generator(random_state)

    # 1. label sets: cover every label, then complete each set to K'
    holds = np.zeros((L, C), dtype=bool)
    client_order = rng.permutation(L)
    for j, c in enumerate(rng.permutation(C)):
        holds[client_order[j % L], c] = True
    for l in range(L):
        missing = Kp - int(holds[l].sum())
        if missing > 0:
            free = np.flatnonzero(~holds[l])
            holds[l, rng.choice(free, size=missing, replace=False)] = True

    # 2. shares: one point per holder when possible, the rest uniformly
    owner = np.empty(n, dtype=np.int64)
    by_label = [np.flatnonzero(codes == c) for c in range(C)]
    for c in range(C):
        idx = rng.permutation(by_label[c])
        holders = np.flatnonzero(holds[:, c])
        h = holders.size
        if idx.size >= h:
            owner[idx[:h]] = holders
            owner[idx[h:]] = holders[rng.integers(0, h, size=idx.size - h)]
        else:
            owner[idx] = holders[rng.integers(0, h, size=idx.size)]

    # 3. repair empty clients where a point can be moved
    sizes = np.bincount(owner, minlength=L)
    for e in np.flatnonzero(sizes == 0):
        for c in rng.permutation(np.flatnonzero(holds[e])):
            pts = by_label[c]
            movable = pts[sizes[owner[pts]] >= 2]
            if movable.size:
                i = movable[rng.integers(0, movable.size)]
                sizes[owner[i]] -= 1
                owner[i] = e
                sizes[e] += 1
                break

    order = np.argsort(owner, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    return [order[bounds[l]:bounds[l + 1]].astype(np.int64) for l in range(L)]
