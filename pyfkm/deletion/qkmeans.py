"""Q-k-means: quantized Lloyd with certified exact deletion (Ginart et
al., NeurIPS 2019, Alg. 2).
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._checks import _q_check_state
from ._common import _LockedEstimator, _fitted_attr
from ._qlloyd import (_QParams, _q_certified, _q_certify, _q_replayed, _q_retrained,
                      _q_state)
from .._validation import check_int, check_n_clusters
from ..core.base import FitPredictMixin
from ..exceptions import InvalidInputError
from ..rng import SeedLike

__all__ = ["QKMeans"]


class QKMeans(FitPredictMixin, _LockedEstimator):
    """Quantized k-means (Q-k-means) with certified exact deletion.

    Parameters
    ----------
    n_clusters : int
    epsilon : "auto" or float, default="auto"
        Lattice step.  "auto" is Ginart et al.'s heuristic
        ``epsilon = 2^round(-log10(n / (k d^1.5)) - 3)`` computed from the
        current number of points (see :func:`auto_epsilon`); a deletion that
        would change it retrains.
    gamma : float in [0, 1], default=0.2
        Balance: a cluster with fewer than ``gamma n / k`` points is topped
        up with copies of its previous centroid.
    max_iter : int, default=10
    random_state : None, int, SeedSequence or Generator

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features)
        Centers of lattice cells (or the seeds when the first iteration
        already failed to decrease the loss).
    labels_ : ndarray (n_remaining,), int32
        Cluster of each remaining point, in the order of ``sample_ids_``.
    sample_ids_ : ndarray (n_remaining,), int64
    inertia_ : float
        Sum of squared distances of the remaining points to their centers
        (correctly rounded sum, independent of the order).
    n_iter_ : int
        Accepted Q-Lloyd iterations.
    seed_ids_ : ndarray (n_clusters,), int64
        Ids of the k-means++ seeds, in order.
    epsilon_ : float

    Notes
    -----
    Algorithm (Ginart et al., 2019, Alg. 2): k-means++ seeds; iteration
    ``t`` computes the balanced centroids of the assignment to the centers
    of iteration ``t - 1``, quantizes them on the lattice of step epsilon
    and phase ``theta_t`` (``theta_t`` uniform in ``[-1/2, 1/2)^d``, drawn
    up front) to cell centers, and reassigns; it stops as soon as the loss
    (sum of squared distances to the new centers) is not smaller than the
    previous one, keeping the previous centers.

    Certification.  ``remove(ids)`` returns without retraining only if it
    proves that a fresh fit on the remaining data (same ``random_state``
    and ids) computes the same epsilon, the same seeds, the same lattice
    cells at every computed iteration and the same stop decisions:

    1. no deleted point is a seed (the exponential-race seeding is then
       unchanged, exactly; a deleted seed always retrains);
    2. ``epsilon="auto"`` gives the same value for the new ``n``;
    3. for every computed iteration, with each deleted point removed from
       its cluster's memoized sum and count (exact update of the mean,
       ``(c - x) / (m - 1)`` for one point) and ``n`` decreased (which also
       changes the balance correction of every small cluster), the new
       centroid lies in the same lattice cell *with a margin* larger than a
       rigorous bound on the difference between the updated sums and any
       float summation of the remaining members;
    4. every loss comparison keeps its outcome with a margin larger than the
       rigorous bound on the difference between the updated losses and
       any float summation of the remaining distances.

    The memoized sums and losses are exact sums of the terms rounded to a
    grid (a power of two per coordinate and per iteration, the finest that
    keeps every sum below ``2^53`` grid steps, chosen from the bound on
    ``|x|``, the largest distances and the number of remaining rows):
    removing a deleted row's rounded term is exact, so an updated sum is
    bit for bit the sum of the remaining rows' terms, and the bounds of 3.
    and 4. (half a grid step per term, plus the float rounding of a fresh
    fit's sums) depend on the current counts, grids and losses only, not on
    the history of deletions.

    By induction the centers of every iteration are unchanged, hence so are
    the assignments of the remaining points: the assignment step
    (csrc/fkm_qlloyd.h, with Elkan's triangle-inequality bounds to skip
    most distances) decides each point's label from that point and the
    sequence of centers alone.

    Replay.  When a check of 3. or 4. fails (a cell moves, or a stop
    decision is not sure), the run is replayed on the memo rather than
    refitted: iteration by iteration, the cells of the new centroids are
    computed from the exact grid sums where the bound of 3. makes them
    sure; the assignment to the new centers starts from the memoized one
    (same centers but the moved ones): only the points of a moved center,
    and the points not provably farther from every moved center than from
    their own (triangle inequality, with a margin covering the rounding of
    the distances), are assigned again, by a full scan's arithmetic
    (csrc/fkm_qlloyd.h, ``fkm_qlloyd_rescan_f64``); sums, counts and losses
    change by the points whose label or distance changed, exactly on their
    grids; every stop decision must be sure as in 4.  Iterations before the
    first moved cell, and those whose centers do not move, cost ``O(k d)``.
    A deleted seed, a new epsilon, or a step that the bounds cannot decide
    refits the model on the remaining data with the stored random draws.
    Every way the result equals the fresh fit; the tests replay this
    (``DeletionReport.retrained`` is True for a replay as for a refit).

    What is kept, what is erased.  A fitted QKMeans holds, about its
    training data: a private float64 copy of the remaining rows (never the
    caller's array; needed to retrain) and their ids; for each computed
    iteration, every point's label and squared distance to its center (the
    memo of Ginart et al. that certification and ``labels_``/``inertia_``
    read), the largest of these distances, each cluster's count and sum and
    the total loss (on their grids, see above; a fit leaves the sums and
    losses to the first deletion, which computes them from the rows: a
    model that never deletes does not pay for them); the lattice cells and
    centers of every iteration; the positions and ids of the seeds; a
    per-coordinate bound on ``|x|`` over the remaining rows (the largest
    coordinate of a seed plus the largest distance of a remaining point to
    its seed).  It also holds the model key and the lattice phases (random
    draws, no data) and the hyper-parameters of the fit.  ``remove``
    erases a deleted row at once: its coordinates, labels and distances are
    overwritten (0, -1, 0) in every array, its rounded terms are subtracted
    from every memoized sum and loss (exactly) and it leaves every count;
    the largest distances, the bound on ``|x|`` and the grids are
    recomputed from the remaining rows when they change (the row attained
    a largest distance, or the number of rows halved), the sums and losses
    summed again on the new grids; a retraining builds the whole memo from
    the remaining rows alone.  What stays is, bit for bit, what a fresh fit
    on the remaining rows would hold (no rounding error, error bound or
    binary exponent carried over from the deleted rows: the memo does not
    tell which cluster lost a point, nor in which order points were
    deleted), but for the deleted *ids* (marked dead, so that deleting one
    again says "already removed"; the caller's identifiers, no data), kept
    until the arrays are compacted, when a quarter of the stored rows are
    dead and at every retraining.  Pickles, ``copy`` and ``deepcopy`` hold
    the same; an unpickled state is checked field by field before it is
    installed (types, shapes, index ranges, counts against the labels,
    bounds and grids; :class:`~pyfkm.exceptions.ModelFileError` naming the
    field).

    Failures and threads.  ``fit`` and ``remove`` build the new state aside
    and install it at the end (the in-place erasure of a certified deletion
    is their last step and is undone if it fails): a call that raises
    (bad input, a numerical failure, an interrupt) leaves the model exactly
    as it was, and a ``Generator`` given as ``random_state`` gets its state
    back from a failed ``fit``.  ``remove`` always uses the hyper-parameters
    of the last successful ``fit`` (``set_params`` takes effect at the next
    ``fit``).  The methods that change the model (``fit``, ``remove``,
    ``set_params``) and the fitted attributes take a per-object
    ``threading.RLock``, so several threads may remove from one model: the
    calls run one at a time and a reader sees the model before or after a
    deletion, never in between.  The lock is not pickled; unpickled and
    copied models get their own (``copy.copy`` also copies the fitted
    state, which deletions update in place).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> X[:150] += 8
    >>> q = QKMeans(2, random_state=0).fit(X)
    >>> q.cluster_centers_.shape
    (2, 2)
    >>> report = q.remove([3, 200])
    >>> report.n_deleted, q.labels_.shape
    (2, (298,))
    >>> ref = QKMeans(2, random_state=0).fit(np.delete(X, [3, 200], axis=0),
    ...                                      sample_ids=np.delete(np.arange(300), [3, 200]))
    >>> bool((ref.cluster_centers_ == q.cluster_centers_).all())
    True
    """

    def __init__(self, n_clusters: int, *, epsilon: float | str = "auto", gamma: float = 0.2,
                 max_iter: int = 10, random_state: SeedLike = None) -> None:
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.gamma = gamma
        self.max_iter = max_iter
        self.random_state = random_state

    _check_state = staticmethod(_q_check_state)

    # -- parameters ---------------------------------------------------------
    def _check_params(self, n: int) -> Any:
        k = check_n_clusters(self.n_clusters, n)
        max_iter = check_int(self.max_iter, "max_iter", 1)
        g = self.gamma
        if isinstance(g, bool) or not isinstance(g, numbers.Real) or not 0 <= g <= 1:
            raise InvalidInputError(f"gamma={g!r} must be a number in [0, 1]")
        e = self.epsilon
        if isinstance(e, str):
            if e != "auto":
                raise InvalidInputError(f"epsilon={e!r} must be 'auto' or a number > 0")
        elif isinstance(e, bool) or not isinstance(e, numbers.Real) or not (
                math.isfinite(e) and e > 0):
            raise InvalidInputError(f"epsilon={e!r} must be 'auto' or a finite number > 0")
        else:
            e = float(e)
        return k, max_iter, float(g), e

    @staticmethod
    def _fitted_state(X: NDArray[np.float64], ids: NDArray[np.int64], key: Any, params: Any,
                      rng: np.random.Generator) -> Any:
        k, max_iter, gamma, epsilon = params
        # a private float64 copy, never the caller's buffer: remove
        # overwrites rows
        X = np.array(X, dtype=np.float64)
        # the phases of Lattice.random(eps, d, rng), max_iter times: the
        # generator fills the rows in order, the same draws as one per call
        phases = rng.random((max_iter, X.shape[1])) - 0.5
        return _q_state(X, ids, _QParams(k, gamma, max_iter, epsilon, key, phases, X.shape[1]))

    # -- fitted attributes (read from the fitted state under the lock) ------
    cluster_centers_ = _fitted_attr(lambda s: s.C[s.n_iter].copy())
    labels_ = _fitted_attr(lambda s: s.labels[s.n_iter][s.alive].copy())
    n_iter_ = _fitted_attr(lambda s: s.n_iter)
    seed_ids_ = _fitted_attr(lambda s: s.seed_ids.copy())
    epsilon_ = _fitted_attr(lambda s: s.eps)
    n_samples_ = _fitted_attr(lambda s: s.n_alive)

    @property
    def inertia_(self) -> float:
        with self._lock:
            s = self._fitted()
            if s.inertia is None:
                s.inertia = math.fsum(s.mind[s.n_iter][s.alive])
            return s.inertia

    @staticmethod
    def _removal(s: Any, pos: NDArray[np.int64]) -> tuple[Any, str]:
        reason, update = _q_certify(s, pos)
        if not reason:
            return _q_certified(s, pos, update), ""
        # no seed removed, the same epsilon: replay the run on the memo
        new = None if update is None else _q_replayed(s, pos, update)
        if new is None:
            new = _q_retrained(s, pos, reason, update)
        return new, reason
