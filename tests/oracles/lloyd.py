"""Pure numpy twin of :func:`pyfkm.kmeans.lloyd` (weighted Lloyd), for tests only.

Nothing here is fast and nothing validates its input: this module exists so
that the C assignment kernel (``csrc/fkm_lloyd.c``) and the Python loop
around it (``pyfkm/kmeans.py``) can be checked against code short enough to
be read in one sitting.  Everything is float64.

Semantics (those of scikit-learn's ``lloyd``, plus a deterministic rule for
empty clusters):

* ``tol_abs = tol * mean(var(X, axis=0))`` (unweighted variance; 0 if
  ``tol == 0``).
* One iteration: every point goes to the center with the smallest squared
  distance (lowest center index on exact ties); each cluster of positive
  total weight moves to the weighted mean of its points.
* Empty clusters: a cluster whose total weight is zero after the
  assignment is "empty".  Empty clusters, in increasing index order, take
  the points of largest squared distance to their assigned center, in the
  stable descending order of those distances (ties to the lowest row): the
  i-th empty cluster takes the i-th point of that order.  The point is moved
  to the empty cluster (its label changes, its old cluster no longer counts
  it) and the empty cluster's new center is that point.  A cluster left with
  no weight because all its points were taken keeps its previous center.
* ``shift`` is the sum over centers of the squared movement; the loop stops
  after the iteration whose labels (after relocation) equal those of the
  previous iteration (strict convergence), or whose shift is at most
  ``tol_abs``, or after ``max_iter`` iterations; ``n_iter`` counts the
  iterations run.
* Finally labels and inertia (``sum_i w_i ||x_i - c_{label_i}||^2``) are
  recomputed for the returned centers.

Weighted means are computed from the members of each cluster (not by
subtracting relocated points from running sums), so they are exact weighted
means up to one rounding per operation.
"""
import numpy as np

__all__ = ["tolerance", "sq_distances", "assign", "update_centers", "lloyd"]


def tolerance(X, tol):
    """Absolute tolerance ``tol * mean(var(X, axis=0))`` (0 when ``tol == 0``)."""
    if tol == 0:
        return 0.0
    X = np.asarray(X, dtype=np.float64)
    return float(np.mean(np.var(X, axis=0)) * tol)


def sq_distances(X, C):
    """Squared distances, shape (n, k), summed over coordinates in order.

    ``D[i, c] = sum_j (X[i, j] - C[c, j])**2`` accumulated for j = 0, 1, ...
    """
    X = np.asarray(X, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    D = np.zeros((X.shape[0], C.shape[0]))
    for j in range(X.shape[1]):
        t = X[:, j, None] - C[None, :, j]
        D += t * t
    return D


def assign(X, C):
    """Nearest center of each row (lowest index on ties) and the squared distance."""
    D = sq_distances(X, C)
    labels = np.argmin(D, axis=1)  # argmin returns the first minimum
    return labels, D[np.arange(D.shape[0]), labels]


def update_centers(X, w, centers, labels, mind):
    """New centers after one assignment, with the empty-cluster rule.

    Parameters
    ----------
    X : (n, d) float64; w : (n,) float64 nonnegative weights
    centers : (k, d) the centers of the assignment
    labels, mind : the assignment and each point's squared distance to its
        center (as returned by :func:`assign`)

    Returns
    -------
    new_centers : (k, d)
    labels : (n,) labels after relocation (a new array)
    relocated : list of (empty cluster, row) pairs, in order
    """
    k = centers.shape[0]
    labels = np.array(labels, copy=True)
    wsum = np.bincount(labels, weights=w, minlength=k)
    empty = np.flatnonzero(wsum == 0)  # weights are >= 0: zero iff no weight
    order = np.argsort(-mind, kind="stable")  # descending, ties to lowest row
    relocated = [(int(e), int(i)) for e, i in zip(empty, order[:empty.size])]
    for e, i in relocated:
        labels[i] = e
    new = centers.copy()
    taken = dict(relocated)
    for c in range(k):
        if c in taken:
            new[c] = X[taken[c]]
            continue
        members = labels == c
        wc = w[members]
        total = wc.sum()
        if total > 0:
            new[c] = (wc[:, None] * X[members]).sum(axis=0) / total
        # else: all its points were taken by empty clusters; keep the center
    return new, labels, relocated


def lloyd(X, centers, sample_weight=None, max_iter=300, tol=1e-4, history=None):
    """Weighted Lloyd from ``centers``; returns (centers, labels, inertia, n_iter).

    ``labels`` is int32.  If ``history`` is a list, one dict per iteration is
    appended: ``centers`` (those of the assignment), ``mind`` (squared
    distance of each point to its assigned center) and ``relocated``.
    """
    X = np.asarray(X, dtype=np.float64)
    C = np.array(centers, dtype=np.float64)
    n = X.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    tol_abs = tolerance(X, tol)
    labels_old = None
    n_iter = 0
    for it in range(max_iter):
        labels, mind = assign(X, C)
        new, labels, relocated = update_centers(X, w, C, labels, mind)
        if history is not None:
            history.append({"centers": C.copy(), "mind": mind, "relocated": relocated})
        shift = float(((new - C) ** 2).sum())
        C = new
        n_iter = it + 1
        if labels_old is not None and np.array_equal(labels, labels_old):
            break
        if shift <= tol_abs:
            break
        labels_old = labels
    labels, mind = assign(X, C)
    inertia = float(np.dot(w, mind))
    return C, labels.astype(np.int32), inertia, n_iter
