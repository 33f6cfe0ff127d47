"""Pure numpy twins of :mod:`pyfkm.seeding`, for tests only.

Nothing here is fast and nothing validates its input: these functions exist
so that the C kernel (``csrc/fkm_seeding.c``) can be checked against code
that is short enough to be read in one sitting.

* :func:`d2_seeding` is weighted D^2 seeding (Arthur & Vassilvitskii, 2007)
  with one candidate per step, consuming the generator exactly as the kernel
  does (one ``Generator.random()`` per drawn center, in order, inverse-CDF
  selection ``searchsorted(cumsum(mass), u * total, side="right")``).  Given
  the same seed it returns the same indices as the kernel, including when it
  resumes from a prefix of centers with some points removed (MUFC, Pan et
  al. 2023, Alg. 3).
* :func:`sequence_probabilities` enumerates every ordered center sequence of
  a tiny dataset with its exact probability, the oracle of the statistical
  tests.

Both apply the same rule when the whole weighted D^2 mass is zero (fewer
distinct points than centers): the next center is drawn proportionally to
weight among the active rows that are not centers yet.
"""
import numpy as np

__all__ = ["sq_distances", "nearest_centers", "d2_seeding",
           "sequence_probabilities"]


def sq_distances(X, c):
    """Squared Euclidean distances from every row of ``X`` to the point ``c``.

    Computed in float64 with the summation order the C kernel documents
    (csrc/fkm_seeding_impl.h, dist2), so both give bit-identical distances
    and index-for-index comparisons do not depend on rounding:

    - for d > 16 only: sixteen partial sums over the first ``16 * (d // 16)``
      coordinates (coordinate ``j`` to sum ``j % 16``), folded into four as
      ``V_l = (L_l + L_{4+l}) + (L_{8+l} + L_{12+l})``;
    - four partial sums ``V_0..V_3`` (zero when d <= 16) continue over the
      next coordinates up to a multiple of 4 (coordinate ``j`` to ``j % 4``);
    - result ``((V0 + V1) + (V2 + V3)) + tail``, the tail summing the last
      ``d % 4`` coordinates in order.
    """
    X = np.asarray(X, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    n, d = X.shape
    diff = X - c
    sq = diff * diff
    j = 0
    V = [np.zeros(n) for _ in range(4)]
    if d > 16:
        q16 = 16 * (d // 16)
        L = [np.zeros(n) for _ in range(16)]
        for j in range(q16):
            L[j % 16] = L[j % 16] + sq[:, j]
        V = [(L[l] + L[4 + l]) + (L[8 + l] + L[12 + l]) for l in range(4)]
        j = q16
    q = d - d % 4
    for jj in range(j, q):
        V[jj % 4] = V[jj % 4] + sq[:, jj]
    tail = np.zeros(n)
    for jj in range(q, d):
        tail = tail + sq[:, jj]
    return ((V[0] + V[1]) + (V[2] + V[3])) + tail


def _active_mask(n, removed):
    """Boolean mask of active rows; ``removed`` is None, a mask or ids."""
    active = np.ones(n, dtype=bool)
    if removed is None:
        return active
    removed = np.asarray(removed)
    if removed.dtype == bool:
        return ~removed
    active[removed.astype(np.int64)] = False
    return active


def nearest_centers(X, center_ids, removed=None):
    """Nearest center of every active row, first center on ties.

    Returns ``(min_sq_dist, labels)``: float64[n] (0 for removed rows) and
    int64[n] positions into ``center_ids`` (-1 for removed rows).
    """
    X = np.asarray(X)
    n = X.shape[0]
    active = _active_mask(n, removed)
    mind = np.where(active, np.inf, 0.0)
    labels = np.full(n, -1, dtype=np.int64)
    for pos, c in enumerate(center_ids):
        dd = sq_distances(X, X[c])
        closer = active & (dd < mind)
        mind[closer] = dd[closer]
        labels[closer] = pos
    return mind, labels


def _draw(generator, mass):
    """Index drawn with probability ``mass / mass.sum()`` (one uniform)."""
    cum = np.cumsum(mass)
    target = generator.random() * cum[-1]
    i = int(np.searchsorted(cum, target, side="right"))
    if i >= mass.shape[0]:  # u * total rounded up to total: last positive row
        i = int(np.flatnonzero(mass > 0)[-1])
    return i


def d2_seeding(X, n_clusters, sample_weight=None, random_state=None, *,
               removed=None, prefix=()):
    """Weighted D^2 seeding; returns the chosen row ids (int64, in order).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    n_clusters : int
    sample_weight : ndarray of shape (n,), optional
        Nonnegative weights (unit weights when None).
    random_state : int or numpy.random.Generator
        Drawn from ``n_clusters - len(prefix)`` times with ``random()``.
    removed : None, boolean mask or sequence of ids
        Rows that do not exist for this seeding.
    prefix : sequence of int
        Centers kept as they are (the seeding resumes after them).

    No input validation: the caller guarantees that the prefix rows are active
    and distinct and that enough active rows have positive weight.
    """
    X = np.asarray(X)
    n = X.shape[0]
    g = np.random.default_rng(random_state)
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    active = _active_mask(n, removed)
    centers = [int(c) for c in prefix]
    mind = np.where(active, np.inf, 0.0)
    for pos in range(n_clusters):
        if pos >= len(prefix):
            if pos == 0:
                mass = np.where(active, w, 0.0)
            else:
                mass = np.where(active, w * mind, 0.0)
                if not np.isfinite(mass.sum()):
                    raise OverflowError("squared distances overflow")
                if not mass.sum() > 0:  # zero-mass fallback
                    fresh = active.copy()
                    fresh[centers] = False
                    mass = np.where(fresh, w, 0.0)
            centers.append(_draw(g, mass))
        dd = sq_distances(X, X[centers[pos]])
        mind = np.where(active, np.minimum(mind, dd), 0.0)
    return np.array(centers, dtype=np.int64)


def sequence_probabilities(X, k, w=None, removed=None):
    """Exact probability of every ordered sequence of ``k`` centers.

    Recursive enumeration of weighted D^2 seeding on a tiny dataset: the
    first center is row ``i`` with probability ``w_i / W``, every later one
    with probability ``w_i D_i^2 / sum_j w_j D_j^2`` over the active rows,
    and, when that total is zero, with probability proportional to ``w_i``
    among the active rows not chosen yet.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    k : int
    w : ndarray of shape (n,), optional
    removed : None, boolean mask or sequence of ids

    Returns
    -------
    dict
        ``{(i_1, ..., i_k): probability}`` over the sequences of positive
        probability; the values sum to 1 (up to rounding).
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    w = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
    active = _active_mask(n, removed)
    D2 = np.stack([sq_distances(X, X[i]) for i in range(n)])
    out = {}

    def walk(prefix, mind, p):
        if len(prefix) == k:
            out[prefix] = out.get(prefix, 0.0) + p
            return
        if not prefix:
            mass = np.where(active, w, 0.0)
        else:
            mass = np.where(active, w * mind, 0.0)
            if not mass.sum() > 0:
                fresh = active.copy()
                fresh[list(prefix)] = False
                mass = np.where(fresh, w, 0.0)
        total = mass.sum()
        if not total > 0:
            raise ValueError("fewer positive-weight active rows than k")
        for i in np.flatnonzero(mass > 0):
            walk(prefix + (int(i),), np.minimum(mind, D2[i]), p * mass[i] / total)

    walk((), np.full(n, np.inf), 1.0)
    return out
