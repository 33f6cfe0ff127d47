"""Weighted Lloyd k-means over the C assignment/update kernel."""
from __future__ import annotations

import numbers
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._base import BaseEstimator
from .._core import _lloyd, _seeding
from .._validation import (check_array, check_n_clusters, check_n_threads,
                           check_sample_weight, feature_names, set_feature_names,
                           warn_if_fewer_distinct)
from ..exceptions import InvalidInputError, NumericalError
from ..rng import SeedLike, as_generator
from .base import CenterModelMixin, FitPredictMixin

__all__ = ["KMeans", "lloyd", "nearest_center", "LloydWorkspace", "absolute_tolerance",
           "one_call_limit"]


def _mean_feature_variance(X, chunk=16384):
    """Mean over features of the (population) variance of each column.

    Two passes in row chunks with matrix-vector products: several times
    faster than ``np.var(X, axis=0)`` on tall arrays, without an n-by-d
    temporary.
    """
    n, d = X.shape
    ones = np.ones(min(chunk, n))
    total = np.zeros(d)
    for a in range(0, n, chunk):
        b = min(a + chunk, n)
        total += ones[: b - a] @ X[a:b].astype(np.float64, copy=False)
    mean = total / n
    ss = np.zeros(d)
    for a in range(0, n, chunk):
        b = min(a + chunk, n)
        c = X[a:b] - mean
        c *= c
        ss += ones[: b - a] @ c
    return float((ss / n).mean())


# Below 2 * _SMALL_N points part_bounds gives one part: lloyd runs in one C call.
_SMALL_N = 4096


def one_call_limit() -> int:
    """Below this many points :func:`lloyd` runs in one C call (one part), so
    a ``kernels.lloyd.LloydTrace`` of the run replays it bit for bit."""
    return 2 * _SMALL_N


def absolute_tolerance(X: NDArray[np.floating], tol: float) -> float:
    """Absolute tolerance: tol times the mean per-feature variance (as scikit-learn).

    Examples
    --------
    >>> import numpy as np
    >>> absolute_tolerance(np.array([[0.0], [2.0]]), 1e-4)
    0.0001
    """
    if tol == 0:
        return 0.0
    return _mean_feature_variance(X) * tol


def _short_shift(s, bits=16):
    """``s`` rounded to ``bits`` significant bits per coordinate.

    Only its rough size matters for precision; with few significant bits,
    ``x - s`` and the products in the score stay exact for simple data
    (small integers, dyadic values), so exact distance ties stay exact ties.
    """
    s = np.asarray(s, dtype=np.float64)
    m, e = np.frexp(s)
    return np.ascontiguousarray(np.ldexp(np.round(np.ldexp(m, bits)), e - bits))


class LloydWorkspace:
    """Buffers and the fixed partition for repeated Lloyd steps on one X.

    The building block of :func:`lloyd`, for estimators that run their own
    iteration (the DP Lloyd of :mod:`pyfkm.dp` adds noise between steps):
    ``step(centers)`` assigns every point of ``X`` to its nearest center and
    returns the per-cluster sums, weights and inertia, merged in a fixed
    order so that results do not depend on ``n_threads``.  Call
    :meth:`close` to release the thread pool.

    ``bounds=True`` (float64 ``X``; used by :func:`lloyd`) keeps Hamerly
    distance bounds between steps and skips the scoring of the points they
    prove to keep their label (csrc/fkm_lloyd_loop.h,
    ``fkm_lloyd_assign_bounded_f64``): the results are bit for bit those of
    ``bounds=False``; only the work differs.  Labels changed outside
    :meth:`step` need :meth:`forget_bounds`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [4.0, 0.0]])
    >>> ws = LloydWorkspace(X, None, 2, 1)
    >>> sums, wsums, inertia = ws.step(np.array([[0.0, 0.0], [4.0, 0.0]]))
    >>> wsums.tolist(), float(inertia)
    ([2.0, 1.0], 1.0)
    >>> ws.close()
    """

    # Bounds policy (``bounds=True``): set up the distance bounds (a full
    # scan plus the bounds of every point, 2-3 scans) once at most this
    # fraction of the labels changed in the previous step, and drop them
    # after a step in which the moved bounds proved less than 3/4 of the
    # points (the others cost about a scan each: the prune did not pay;
    # data without cluster structure).  Only for _BOUNDS_D[0] < d <= _BOUNDS_D[1]: below,
    # the packed kernel scores faster than the bounds are kept (measured at
    # d = 10, k = 62 and d = 16, k = 256); above, the bounds' failures cost
    # more than they save (d = 784, k = 10).  Measured per shape (issue 22).
    _BOUNDS_START = 0.01
    _BOUNDS_STOP = 0.25
    _BOUNDS_D = (16, 256)
    # The set-up costs about 2-4 plain steps more than a plain step, and a
    # step on the bounds saves a part of a plain step that grows with k * d
    # (the scores skipped; the pass that accumulates every point stays):
    # measured on blobs (issue 22), the set-up paid back after about 3-4
    # steps at k d >= 1280, 10 at (d, k) = (24, 32), 15 or more at (50, 10)
    # and never at (24, 10).  So, when the caller says how many steps are left
    # (step(steps_left=...): the rest of max_iter and the final assignment),
    # the bounds are set up only if at least _bounds_min_steps(k, d) are.
    _BOUNDS_PAYBACK = 8192

    def _bounds_min_steps(self):
        """Steps on the bounds needed to pay for their set-up (see above)."""
        return max(4, -(-self._BOUNDS_PAYBACK // (self.k * self.d)))

    def __init__(self, X, w, k, n_threads, pack=True, explicit=False, bounds=False):
        n, d = X.shape
        if explicit:
            # one part, the rules of the one-call loop (_lloyd.lloyd_loop)
            X, n_threads = np.ascontiguousarray(X, dtype=np.float64), 1
        self.explicit = explicit
        self.X, self.k, self.d = X, k, d
        self.w = np.empty(0) if w is None else w
        self.bounds = _lloyd.part_bounds(n, k, d)
        P = len(self.bounds) - 1
        self.part_sums = np.empty((P, k, d))
        self.part_wsums = np.empty((P, k))
        self.part_inertia = np.empty(P)
        self.labels = np.full(n, -1, dtype=np.int32)  # -1: every label "changes"
        self.part_changed = np.zeros(P, dtype=np.int64)
        self.mind = np.empty(n)
        self.P = _lloyd.pack_points(X) if pack else None
        self.n_threads = max(1, min(int(n_threads), P))
        self._pool = ThreadPoolExecutor(self.n_threads) if self.n_threads > 1 else None
        self.n_changed = n
        # labels changed by the last step that scored (a keep_labels step
        # changes none, but says nothing about how settled the labels are)
        self._scored_changed = n
        self.n_scored = n  # points of the last step not proven by the moved bounds
        self._keep = None  # all-zero mask of step(keep_labels=True), made on first use
        # Hamerly bounds (float64 X, k >= 2, the blocked path): the same
        # results bit for bit, fewer points scored once labels settle
        self._bnd = None
        lo_d, hi_d = self._BOUNDS_D
        if (bounds and not explicit and X.dtype == np.float64 and k >= 2 and n >= 1
                and lo_d < d <= hi_d):
            self._bnd = {"U": np.empty(n), "L": np.empty(n),
                         "need": np.empty(n, dtype=np.uint8),
                         "xn": None,  # the point norms, on the bounds' first use
                         "scored": np.zeros(P, dtype=np.int64), "centers": None}

    def close(self):
        if self._pool is not None:
            self._pool.shutdown()

    def step(self, centers, distances=True, keep_labels=False, steps_left=None):
        """Assign to ``centers``; return (sums, wsums, inertia) merged in part order.

        With ``distances=False`` the per-point squared distances (``mind``)
        and the inertia are not computed (inertia is returned as nan).
        ``keep_labels=True`` (the labels must be the last step's assignment
        to these same centers) skips the scoring: the same results bit for
        bit (the masked kernel accumulates the kept labels with the same
        code), at the cost of the accumulation alone.  ``steps_left`` (the
        steps after this one, None: unknown) only decides whether distance
        bounds are set up (``bounds=True``); results do not depend on it.
        """
        # Scores are computed relative to a shift near the data (the mean of
        # the centers), else they lose all precision far from the origin.
        shift = _short_shift(centers.mean(axis=0))
        ct, hn = _lloyd.pack_centers(centers, shift)
        if self.explicit:
            sums, wsums, inertia, self.n_changed = _lloyd.assign_explicit(
                self.X, self.P, self.w, ct, hn, centers, self.labels,
                self.mind if distances else None)
            return sums, wsums, inertia
        P = len(self.bounds) - 1
        n = self.X.shape[0]
        outs = (self.labels, self.mind if distances else None, self.part_sums,
                self.part_wsums, self.part_inertia, self.part_changed)
        b = self._bnd
        move = None
        if keep_labels:
            b = None  # the bounds stay as the last step left them
        elif b is not None and b["centers"] is not None:
            move = _lloyd.bounds_moves(b["centers"], centers)
        if b is not None and (move is not None or (
                self._scored_changed <= self._BOUNDS_START * n
                and (steps_left is None or steps_left >= self._bounds_min_steps()))):
            kernel = _lloyd.assign_parts_bounded
            if b["xn"] is None:  # a pass over X: only for runs that use the bounds
                b["xn"] = _lloyd.bounds_norms(self.X)
            args = (self.X, self.P, self.w, ct, hn, shift, centers, self.bounds)
            mv = (None, -1, 0.0, 0.0) if move is None else move
            outs = outs + (b["scored"], b["U"], b["L"], b["need"], b["xn"]) + mv
        else:
            kernel = _lloyd.assign_parts
            args = (self.X, self.P, self.w, ct, hn, centers, self.bounds)
            b = None
            if keep_labels:
                if self._keep is None:
                    self._keep = np.zeros(n, dtype=np.uint8)  # no point flagged
                outs = outs + (self._keep,)
        if self._pool is None:
            kernel(*args, 0, P, *outs)
        else:
            cuts = np.linspace(0, P, self.n_threads + 1).astype(int)
            futures = [self._pool.submit(kernel, *args, int(a), int(b_), *outs)
                       for a, b_ in zip(cuts[:-1], cuts[1:]) if b_ > a]
            for f in futures:
                f.result()
        sums, wsums, inertia = _lloyd.merge(self.part_sums, self.part_wsums,
                                            self.part_inertia)
        self.n_changed = int(self.part_changed.sum())
        if not keep_labels:
            self._scored_changed = self.n_changed
        self.n_scored = 0 if keep_labels else n
        if b is not None:
            self.n_scored = int(b["scored"].sum())
            keep = move is None or self.n_scored <= self._BOUNDS_STOP * n
            b["centers"] = centers.copy() if keep else None
        return sums, wsums, (inertia if distances else float("nan"))

    def forget_bounds(self):
        """Drop the distance bounds (after labels were changed outside
        :meth:`step`, e.g. by the relocation of an empty cluster)."""
        if self._bnd is not None:
            self._bnd["centers"] = None


def _farthest(mind, m):
    """The m indices of largest ``mind``, ties to the lowest index: the first
    m of ``np.argsort(-mind, kind="stable")``, without sorting all of it."""
    neg = -mind
    if m >= neg.size:
        return np.argsort(neg, kind="stable")[:m]
    thr = np.partition(neg, m - 1)[m - 1]  # the m-th smallest of -mind
    if np.isnan(thr):
        return np.argsort(neg, kind="stable")[:m]
    cand = np.flatnonzero(neg <= thr)  # increasing: the stable sort keeps ties in index order
    return cand[np.argsort(neg[cand], kind="stable")][:m]


def _new_centers(ws, centers, sums, wsums):
    """Centers from sums; empty clusters are relocated deterministically.

    Each empty cluster (total weight 0) takes the point farthest from its
    assigned center (largest squared distance, ties to the lowest index) not
    taken by another empty cluster; that point moves to the empty cluster,
    and its old cluster's sums lose it.  Returns the number relocated.
    """
    if (wsums > 0).all():
        return sums / wsums[:, None], 0
    empty = np.flatnonzero(wsums <= 0)
    new = centers.copy()
    if empty.size:
        order = _farthest(ws.mind, empty.size)
        X = ws.X
        lost = set()
        for e, i in zip(empty, order):
            lost.add(int(ws.labels[i]))
            ws.labels[i] = e
            ws.mind[i] = 0.0
            new[e] = X[i]
        # A cluster that lost points: its sums and weight again from its
        # members (no cancellation in running sums; weight exactly 0, so
        # the center is kept, when only zero-weight points are left).
        for j in lost - set(int(e) for e in empty):
            members = ws.labels == j
            wj = np.ones(int(members.sum())) if ws.w.size == 0 else ws.w[members]
            sums[j] = wj @ X[members].astype(np.float64)
            wsums[j] = wj.sum()
        wsums[empty] = 0.0  # their centers are the taken points
    pos = wsums > 0
    new[pos] = sums[pos] / wsums[pos, None]
    return new, int(empty.size)


def lloyd(X: NDArray[np.floating], centers: ArrayLike, *,
          sample_weight: NDArray[np.float64] | None = None, max_iter: int = 300,
          tol: float = 1e-4, n_threads: int = 1, verbose: int = 0,
          tol_abs: float | None = None
          ) -> tuple[NDArray[np.float64], NDArray[np.int32], float, int]:
    """Run weighted Lloyd iterations from ``centers`` (no input validation).

    Semantics follow scikit-learn's ``lloyd``: each iteration assigns points
    to the current centers and recomputes them; it stops when labels do not
    change (strict convergence) or when the total squared center shift is
    at most ``tol`` times the mean feature variance; without strict
    convergence a final assignment makes labels consistent with the returned
    centers.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Finite data (float64 or float32; not checked).
    centers : array-like of shape (n_clusters, n_features)
        Initial centers.
    sample_weight : ndarray of shape (n_samples,), float64, optional
        Nonnegative weights (default: all ones).
    max_iter : int, default=300
        Largest number of iterations.
    tol : float, default=1e-4
        Relative tolerance on the total squared center shift.
    n_threads : int, default=1
        Threads of the assignment step (results do not depend on it).
    verbose : int, default=0
        Print the inertia of each iteration when positive.
    tol_abs : float, optional
        The absolute tolerance already computed from ``X`` and ``tol``
        (callers running several inits compute it once).

    Returns
    -------
    centers : ndarray of shape (n_clusters, n_features), float64
        Final centers.
    labels : ndarray of shape (n_samples,), int32
        Index of each point's center.
    inertia : float
        Weighted sum of squared distances to the assigned centers.
    n_iter : int
        Iterations run.

    Raises
    ------
    NumericalError
        If squared distances overflow float64.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [10.0], [11.0]])
    >>> C, labels, inertia, n_iter = lloyd(X, [[0.0], [1.0]])
    >>> C.ravel().tolist(), labels.tolist(), inertia
    ([0.5, 10.5], [0, 0, 1, 1], 1.0)
    """
    X = np.ascontiguousarray(X)
    if tol_abs is None:
        tol_abs = absolute_tolerance(X, tol)
    centers = np.ascontiguousarray(centers, dtype=np.float64)
    k = centers.shape[0]
    if X.shape[0] < 2 * _SMALL_N and not verbose:
        # one fixed part (see part_bounds): the whole run in one C call gives
        # the same assignments and sums without the per-iteration overhead
        C, labels, _, inertia, n_iter = _lloyd.lloyd_loop(
            np.ascontiguousarray(X, dtype=np.float64), centers, sample_weight, max_iter,
            tol_abs)
        if not (np.isfinite(inertia) and np.isfinite(C).all()):
            raise NumericalError(
                "squared distances overflow float64 (inertia is not finite); "
                "rescale the data")
        return C, labels, float(inertia), n_iter
    # small and verbose: step by step, by the rules of the one-call loop
    ws = LloydWorkspace(X, sample_weight, k, n_threads,
                         explicit=X.shape[0] < 2 * _SMALL_N, bounds=True)
    labels_prev = np.empty_like(ws.labels)
    n_iter = 0
    try:
        for it in range(max_iter):
            # Distances are only needed to report progress or to relocate
            # empty clusters (then the step is redone with them).
            # steps after this one: the iterations left and the final assignment
            sums, wsums, inertia = ws.step(centers, distances=bool(verbose),
                                           steps_left=max_iter - it)
            n_changed = ws.n_changed  # labels that differ from the last iteration's
            if not verbose and (wsums <= 0).any():
                # the relocation needs the distances: those of these labels,
                # accumulated again without scoring (the same results)
                sums, wsums, inertia = ws.step(centers, distances=True, keep_labels=True)
            new, n_reloc = _new_centers(ws, centers, sums, wsums)
            if n_reloc:
                ws.forget_bounds()
            shift = float(((new - centers) ** 2).sum())
            centers = new
            n_iter = it + 1
            if verbose:
                print(f"Lloyd iteration {n_iter}: inertia {inertia:.6g}, "
                      f"center shift {shift:.3g}"
                      + (f", {n_reloc} empty cluster(s) relocated" if n_reloc else ""))
            # Strict convergence: no label changed since the last iteration.
            # The kernel counts changes; after a relocation (which moves
            # labels again) compare with the kept copy instead.
            if it > 0 and (np.array_equal(ws.labels, labels_prev) if n_reloc
                           else n_changed == 0):
                break
            if shift <= tol_abs:
                break
            np.copyto(labels_prev, ws.labels)
        # Final assignment to the returned centers: makes labels consistent
        # with them (scikit-learn skips it on strict convergence, where the
        # labels cannot change) and gives the exact inertia.
        _, _, inertia = ws.step(centers, steps_left=0)
        if not (np.isfinite(inertia) and np.isfinite(centers).all()):
            raise NumericalError(
                "squared distances overflow float64 (inertia is not finite); "
                "rescale the data")
        return centers, ws.labels.copy(), float(inertia), n_iter
    finally:
        ws.close()


def nearest_center(X: NDArray[np.floating], C: ArrayLike, *, n_threads: int = 1
                   ) -> tuple[NDArray[np.float64], NDArray[np.int32]]:
    """Squared distance of each row of ``X`` to its nearest row of ``C`` and
    that row's index (no input validation).

    The one nearest-center kernel of the package: the C assignment step of
    :func:`lloyd` (csrc/fkm_lloyd.h), which scores the centers around a shift
    near them (moved close to them first when they sit far from the origin),
    gives the lowest index on exact
    ties of the score and recomputes the squared distance to the chosen
    center exactly, as ``sum_j (x_j - c_j)^2``.  Results do not depend on
    ``n_threads``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64
    C : ndarray of shape (n_clusters, n_features), float64, finite
    n_threads : int, default=1

    Returns
    -------
    d2 : ndarray of shape (n_samples,), float64
    labels : ndarray of shape (n_samples,), int32

    Examples
    --------
    >>> import numpy as np
    >>> d2, labels = nearest_center(np.array([[0.0, 1.0], [3.0, 0.0]]),
    ...                             np.array([[0.0, 0.0], [4.0, 0.0]]))
    >>> d2.tolist(), labels.tolist()
    ([1.0, 1.0], [0, 1])
    """
    X = np.ascontiguousarray(X)
    if X.dtype not in (np.float64, np.float32):
        X = X.astype(np.float64)
    C = np.ascontiguousarray(C, dtype=np.float64)
    if X.shape[0] == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int32)
    # The kernel scores around the centers' mean rounded to 16 significant
    # bits.  Far from the origin that shift can sit farther from the centers
    # than they are from each other (at 1.7e9, up to 2**14 away from centers
    # 1 apart), and the scores then lose the precision that separates them.
    # Then move X and C by that shift first (in float64: x - s and c - s are
    # exact for data near s), so that the kernel's own shift of the moved
    # centers is close to them.  Elsewhere nothing moves: on simple data
    # (small integers, dyadic values) exact ties stay exact ties.
    m = C.mean(axis=0)
    s = _short_shift(m)
    if np.abs(m - s).max() > np.abs(C - m).max():
        X = X - s
        C = C - s
    ws = LloydWorkspace(X, None, C.shape[0], n_threads, pack=X.shape[0] >= 4096)
    try:
        ws.step(C)
        return ws.mind, ws.labels
    finally:
        ws.close()


class KMeans(CenterModelMixin, FitPredictMixin, BaseEstimator):
    """Weighted k-means (Lloyd's algorithm) with k-means++ seeding.

    Parameters
    ----------
    n_clusters : int, default=8
    init : "k-means++", "random" or array of shape (n_clusters, n_features)
        "k-means++" uses :func:`pyfkm.kmeans_plusplus` (one candidate per
        step); "random" picks ``n_clusters`` distinct rows with probability
        proportional to weight; an array is used as given (then ``n_init``
        must be 1).
    n_init : int or "auto", default="auto"
        Number of initialisations; the run with the lowest inertia is kept.
        "auto" (scikit-learn's rule): 1 for ``init="k-means++"`` or an
        array of centers, 10 for ``init="random"``.
    max_iter : int, default=300
    tol : float, default=1e-4
        Relative tolerance on the total squared center shift (times the mean
        feature variance), as in scikit-learn.
    random_state : None, int, SeedSequence, Generator or RandomState
        Seeds the initialisation (see :func:`pyfkm.rng.as_generator`).
    n_threads : int or None, default=None
        Threads for the assignment step (the C kernel releases the GIL).
        None or -1: every core available to the process; ``-k``: all but
        ``k - 1`` of them.  Results do not depend on it: points are split
        into fixed parts whose partial sums are merged in order.
    verbose : int, default=0
        Print one line per Lloyd iteration.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features), float64
    labels_ : ndarray of shape (n_samples,), int32
    inertia_ : float
        Weighted sum of squared distances to the closest center.
    n_iter_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str, shape (``n_features_in_``,)
        Column names of ``X`` when it was a DataFrame with string names;
        ``predict``, ``transform`` and ``score`` then require the same
        columns in the same order.

    Notes
    -----
    Empty clusters: after an assignment, each cluster that received no
    weight takes as its new center the point farthest from its own center
    (ties to the lowest row index), a different point for each empty
    cluster; that point is moved to the empty cluster.  This is
    deterministic and matches scikit-learn's rule in spirit.

    All arithmetic is float64 (float32 input is read as is and converted in
    the kernel).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0., 0.], [0., 1.], [10., 10.], [10., 11.]])
    >>> km = KMeans(2, random_state=0).fit(X)
    >>> sorted(km.cluster_centers_.tolist())
    [[0.0, 0.5], [10.0, 10.5]]
    >>> float(km.inertia_)
    1.0
    >>> km.predict([[9., 9.]]) == km.predict([[10., 10.]])
    array([ True])
    """

    def __init__(self, n_clusters: int = 8, *, init: str | ArrayLike = "k-means++",
                 n_init: int | str = "auto", max_iter: int = 300, tol: float = 1e-4,
                 random_state: SeedLike = None, n_threads: int | None = None,
                 verbose: int = 0) -> None:
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.n_threads = n_threads
        self.verbose = verbose

    def _check_params(self, X, w):
        n_pos = X.shape[0] if w is None else int(np.count_nonzero(w > 0))
        k = check_n_clusters(self.n_clusters, X.shape[0], n_pos)
        n_init = self.n_init
        if isinstance(n_init, str) and n_init == "auto":
            n_init = 10 if isinstance(self.init, str) and self.init == "random" else 1
        for name, v in (("n_init", n_init), ("max_iter", self.max_iter)):
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1:
                raise InvalidInputError(
                    f"{name}={v!r} must be an int >= 1" + (" or 'auto'" if name == "n_init" else ""))
        n_threads = check_n_threads(self.n_threads)
        if not isinstance(self.tol, numbers.Real) or not np.isfinite(self.tol) or self.tol < 0:
            raise InvalidInputError(f"tol={self.tol!r} must be a finite number >= 0")
        init = self.init
        if isinstance(init, str):
            if init not in ("k-means++", "random"):
                raise InvalidInputError(
                    f"init={init!r} must be 'k-means++', 'random' or an array of centers")
        else:
            init = check_array(init, "init")
            if init.shape != (k, X.shape[1]):
                raise InvalidInputError(
                    f"init has shape {init.shape}, expected (n_clusters, n_features) = "
                    f"{(k, X.shape[1])}")
            if n_init != 1:
                raise InvalidInputError(
                    f"n_init={self.n_init} must be 1 (or 'auto') when init is an array of "
                    "centers")
            init = init.astype(np.float64)
        return k, init, int(n_init), n_threads

    def _init_centers(self, X, w, k, init, rng):
        if isinstance(init, np.ndarray):
            return init.copy()
        if init == "k-means++":
            ids, _, _ = _seeding.seed(X, w, k, rng, labels=False)
        else:
            p = None if w is None else w / w.sum()
            ids = rng.choice(X.shape[0], size=k, replace=False, p=p)
        return X[ids].astype(np.float64)

    def fit(self, X: ArrayLike, y: object = None, sample_weight: ArrayLike | None = None
            ) -> KMeans:
        """Compute k-means clustering.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        sample_weight : array-like of shape (n_samples,), optional
            Nonnegative weights, not all zero.

        Returns
        -------
        self
        """
        names = feature_names(X)
        X = check_array(X, "X")
        w = check_sample_weight(sample_weight, X.shape[0])
        k, init, n_init, n_threads = self._check_params(X, w)
        rng = as_generator(self.random_state)
        best = None
        tol_abs = absolute_tolerance(X, self.tol)
        for _ in range(n_init):
            c0 = self._init_centers(X, w, k, init, rng)
            res = lloyd(X, c0, sample_weight=w, max_iter=self.max_iter, tol=self.tol,
                        n_threads=n_threads, verbose=self.verbose, tol_abs=tol_abs)
            if best is None or res[2] < best[2]:
                best = res
        self.cluster_centers_, self.labels_, self.inertia_, self.n_iter_ = best  # type: ignore[misc]
        self.n_features_in_ = X.shape[1]
        set_feature_names(self, names)
        warn_if_fewer_distinct(self.cluster_centers_, k, self)
        return self

    def _nearest_center(self, X, C):
        return nearest_center(X, C, n_threads=check_n_threads(self.n_threads))
