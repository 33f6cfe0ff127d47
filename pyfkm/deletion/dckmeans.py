"""DC-k-means: divide-and-conquer k-means with exact deletion (Ginart et
al., NeurIPS 2019, Sec. 4.2).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._checks import _dc_check_state
from ._common import _LockedEstimator, _fitted_attr
from ..core.base import FitPredictMixin
from ._dctree import _dc_deleted, _dc_fit, _dc_root_n_iter
from .._validation import check_int, check_n_clusters
from ..core.kmeans import nearest_center
from ..exceptions import InvalidInputError
from ..rng import SeedLike

__all__ = ["DCKMeans", "auto_n_leaves"]


def auto_n_leaves(n_samples: int) -> int:
    """``n^0.3`` rounded to the nearest power of two (at least 1).

    Parameters
    ----------
    n_samples : int
        Number of points n (>= 1).

    Returns
    -------
    n_leaves : int
        A power of two.

    Examples
    --------
    >>> auto_n_leaves(100_000)
    32
    """
    return int(2 ** max(0, round(math.log2(n_samples ** 0.3))))


class DCKMeans(FitPredictMixin, _LockedEstimator):
    """Divide-and-conquer k-means (DC-k-means) with exact deletion.

    Points go to ``n_leaves`` leaves uniformly at random (a keyed hash of
    their id); every leaf runs k-means (keyed k-means++ + Lloyd) on its
    points; every internal node runs k-means on its children's centroids
    weighted by their cluster masses; the root's centroids are the model.
    ``remove`` recomputes only the leaves holding removed points and their
    paths to the root; the result is identical to a fresh fit on the
    remaining data with the same ``random_state``, ``sample_ids`` and
    ``n_leaves_``.

    Parameters
    ----------
    n_clusters : int
    n_leaves : "auto" or int, default="auto"
        A power of two; "auto" is ``n^0.3`` rounded to a power of two,
        fixed at fit and kept under deletions (as the analysis requires).
    height : int, default=1
        Tree height; ``n_leaves`` must be ``w^height`` for an integer
        branching factor ``w``.
    max_iter : int, default=10
        Lloyd iterations at each node.
    n_init : int, default=1
        k-means runs (keyed seedings) per node, the one of lowest inertia
        kept.
    n_local_trials : "auto" or int, default="auto"
        Greedy k-means++ at every node: each seeding step draws this many
        candidates (independent keyed races) and keeps the one that lowers
        the potential most; "auto" is scikit-learn's ``2 + int(ln k)``.  1 is
        plain k-means++ (Ginart et al.'s algorithm), which misses a cluster
        fairly often in high dimension (unit-variance clusters in d = 25: a
        third of the leaves of the benchmark), pulling the root centers
        (loss ratio 1.11 there, 1.005 with "auto", at the same speed:
        Lloyd converges faster from better seeds).  Deletion stays exact
        either way: it recomputes the affected nodes.
    random_state : None, int, SeedSequence or Generator

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features)
    inertia_ : float
        Sum of squared distances of the remaining points to the centers.
    labels_ : ndarray of shape (n_remaining,), int32
        Nearest center of each remaining point, in ``sample_ids_`` order.
    n_iter_ : int
        Lloyd iterations of the root's k-means (the run that gives the
        centers; 0 when at most ``n_clusters`` points reach the root).
    n_leaves_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str, shape (``n_features_in_``,)
        Column names of ``X`` when it was a DataFrame with string names.

    Notes
    -----
    Ginart et al., NeurIPS 2019, Sec. 4.2.  Leaves with at most
    ``n_clusters`` points pass their points up as they are (empty leaves
    pass nothing).

    The points are stored leaf by leaf (each leaf its own array, in row
    order).  A deletion reruns Lloyd at each touched leaf, but not its
    seeding when that is certified unchanged: the leaf keeps the
    candidates and potentials of its last (greedy) k-means++ race, and a
    removed point that is no seed and no candidate, and leaves every pick
    the lowest potential with a margin larger than the float rounding
    bounds, cannot change the seeds of a fresh race (see ``_RaceTrace``);
    about 0.5% of the deletions of the benchmark rerun the race.

    What is kept, what is erased.  A fitted DCKMeans holds, about its
    training data: a private float64 copy of the remaining rows (never the
    caller's array), one array per leaf, with their ids and row numbers;
    each id's leaf (a keyed hash of the id, no data); the centroids and
    cluster masses of every node (a leaf with at most ``n_clusters``
    points passes its points up as they are, so its node holds copies of
    them); for each leaf, the trace of its last k-means++ race: the
    positions of its seeds and candidates and bounds on the race
    potentials (sums over the leaf's points), whose widths depend on the
    binary exponents of the potentials and the number of deletions only.
    It also holds the model key (no data) and the hyper-parameters of the
    fit.  ``remove`` erases a removed row at once: its leaf's arrays are
    replaced by new ones without it (the old ones are no longer
    reachable); its leaf and every node on the path to the root are
    recomputed from the remaining points, so no centroid or mass keeps
    it; its leaf's race trace is rebuilt by a fresh race or, when the seeds
    are certified unchanged, has the point's term subtracted from the
    potential bounds (which then widen by an amount that does not depend
    on the point's term).  What stays is what a fresh fit on the remaining
    rows would hold, but for the race bounds of the leaves whose seeds were
    kept and the deleted *ids* and their leaves (so that deleting one again
    says "already removed"; the caller's identifiers, no data), kept until
    a quarter of the ids are dead.  Those race bounds keep two traces of
    the deleted points of their leaf: the binary exponent of a potential
    that once included a deleted point (a width is a multiple of the power
    of two above the bounds before the removal: one bit per step and
    candidate, whether the deleted point's term pushed that potential past
    a power of two), and the float rounding of the subtraction in their low
    bits (they are the old bounds minus the term, not a fresh sum of the
    remaining terms); a fresh race of the leaf replaces them.  Pickles,
    ``copy`` and ``deepcopy`` hold the same; an unpickled state is checked
    field by field before it is installed (types, shapes, index ranges,
    the leaves of the ids, every remaining row once in its leaf, the node
    keys, the traces' positions, the sizes and masses of the node results;
    :class:`~pyfkm.exceptions.ModelFileError` naming the field).

    Failures and threads.  ``fit`` and ``remove`` build the new state aside
    (a removal builds new arrays for the touched leaves) and install it at
    the end (clearing the deleted ids' flags in place is the last step and
    is undone if it fails): a call that raises (bad input, a numerical
    failure, an interrupt) leaves the model exactly as it was, and a
    ``Generator`` given as ``random_state`` gets its state back from a
    failed ``fit``.  ``remove`` always uses the hyper-parameters of the
    last successful ``fit``.  The methods that change the model (``fit``,
    ``remove``, ``set_params``) and the fitted attributes take a
    per-object ``threading.RLock``, so several threads may remove from one
    model: the calls run one at a time and a reader sees the model before
    or after a deletion, never in between.  The lock is not pickled;
    unpickled and copied models get their own (``copy.copy`` also copies
    the fitted state, which deletions update in place).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(400, 2))
    >>> X[:200] += 8
    >>> dc = DCKMeans(2, n_leaves=4, random_state=0).fit(X)
    >>> report = dc.remove(5)
    >>> report.retrained, dc.n_leaves_
    (True, 4)
    >>> ref = DCKMeans(2, n_leaves=4, random_state=0).fit(
    ...     np.delete(X, 5, axis=0), sample_ids=np.delete(np.arange(400), 5))
    >>> bool((ref.cluster_centers_ == dc.cluster_centers_).all())
    True
    """

    def __init__(self, n_clusters: int, *, n_leaves: int | str = "auto", height: int = 1,
                 max_iter: int = 10, n_init: int = 1, n_local_trials: int | str = "auto",
                 random_state: SeedLike = None) -> None:
        self.n_clusters = n_clusters
        self.n_leaves = n_leaves
        self.height = height
        self.max_iter = max_iter
        self.n_init = n_init
        self.n_local_trials = n_local_trials
        self.random_state = random_state

    _check_state = staticmethod(_dc_check_state)

    def _check_params(self, n: int) -> dict[str, Any]:
        """The validated hyper-parameters (changes nothing)."""
        k = check_n_clusters(self.n_clusters, n)
        h = check_int(self.height, "height", 1)
        max_iter = check_int(self.max_iter, "max_iter", 1)
        n_init = check_int(self.n_init, "n_init", 1)
        t = self.n_local_trials
        if isinstance(t, str):
            if t != "auto":
                raise InvalidInputError(f"n_local_trials={t!r} must be 'auto' or an int")
            t = 2 + int(math.log(k))
        n_trials = min(check_int(t, "n_local_trials", 1), 16)
        L = self.n_leaves
        if isinstance(L, str):
            if L != "auto":
                raise InvalidInputError(f"n_leaves={L!r} must be 'auto' or a power of two")
            L = auto_n_leaves(n)
        else:
            L = check_int(L, "n_leaves", 1)
            if L & (L - 1):
                raise InvalidInputError(f"n_leaves={L} must be a power of two")
        w = round(L ** (1.0 / h))
        if w ** h != L:
            which = (f"n_leaves='auto' gives {L} leaves for {n} points" if self.n_leaves == "auto"
                     else f"n_leaves={L}")
            raise InvalidInputError(
                f"{which}, which is not w**height for an integer w >= 2 (height={h}); use a "
                f"height that divides log2(n_leaves)={L.bit_length() - 1}, or set n_leaves")
        return dict(k=k, L=L, h=h, w=max(w, 1), max_iter=max_iter, n_init=n_init,
                    n_trials=n_trials)

    @staticmethod
    def _fitted_state(X: NDArray[np.float64], ids: NDArray[np.int64], key: Any,
                      params: dict[str, Any], rng: np.random.Generator) -> Any:
        return _dc_fit(X, ids, key, **params)

    n_leaves_ = _fitted_attr(lambda st: st.L)
    n_iter_ = _fitted_attr(_dc_root_n_iter)

    @property
    def cluster_centers_(self) -> NDArray[np.float64]:
        with self._lock:
            st = self._fitted()
            C, m = st.levels[-1][0]
            if C.shape[0] < st.k:  # fewer points than k reached the root
                C = np.concatenate([C, np.repeat(C[:1], st.k - C.shape[0], axis=0)])
            return C.copy()

    @property
    def inertia_(self) -> float:
        with self._lock:
            st = self._fitted()
            if st.inertia is None:
                X = np.concatenate(st.X)
                st.inertia = math.fsum(nearest_center(X, self.cluster_centers_)[0])
            return st.inertia

    @property
    def labels_(self) -> NDArray[np.int32]:
        with self._lock:
            st = self._fitted()
            C = self.cluster_centers_
            out = np.empty(st.ids.shape[0], dtype=np.int32)
            for Xj, rj in zip(st.X, st.rows):
                if Xj.shape[0]:
                    out[rj] = nearest_center(Xj, C)[1]
            return out[st.alive]

    @staticmethod
    def _removal(st: Any, pos: NDArray[np.int64]) -> tuple[Any, str]:
        return _dc_deleted(st, pos), "leaf path"
