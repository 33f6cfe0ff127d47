"""Distributed (k,z)-center (Guo & Li, NeurIPS 2018, Algorithm 3): the
machines, the traffic accounting and the coordinator's search over guesses.
"""
from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._base import Report
from .._core import _kcenter
from .._validation import check_array, clients_feature_names, set_feature_names
from ..exceptions import InvalidInputError, NumericalError
from ..rng import SeedLike, as_generator
from ._common import _MATRIX_MAX_N, _KZBase, _check_epsilon, _check_kz, _grid_search

__all__ = ["DistributedKZCenter", "CommunicationReport"]


# ---------------------------------------------------------- communication

@dataclass(frozen=True)
class RoundTraffic(Report):
    """Words sent in one round: ``points`` (coordinates), ``weights`` and
    ``scalars``; ``sender`` is "machines" or "coordinator"."""

    name: str
    sender: str
    points: int = 0
    weights: int = 0
    scalars: int = 0

    _summary = ("total",)

    @property
    def total(self) -> int:
        return self.points + self.weights + self.scalars


@dataclass(frozen=True)
class CommunicationReport(Report):
    """Traffic of one fit, in words, round by round.

    A distributed (k, z)-center estimator sets one as ``communication_``.

    Parameters
    ----------
    rounds : tuple of RoundTraffic
        One entry per round: its name, its sender ("machines" or
        "coordinator") and the words sent (``points`` coordinates,
        ``weights``, ``scalars``).

    Attributes
    ----------
    points, weights, scalars, total : int
        Sums over the rounds.
    n_rounds : int
        Number of rounds.

    Examples
    --------
    >>> from pyfkm.outliers import DistributedKZCenter, make_noisy_blobs
    >>> X, _, _ = make_noisy_blobs(200, 2, 2, 10, random_state=0)
    >>> report = DistributedKZCenter(2, 10, random_state=0).fit([X[:100], X[100:]]).communication_
    >>> report.total == report.points + report.weights + report.scalars > 0
    True
    >>> report.n_rounds == len(report.rounds)
    True
    """

    rounds: tuple

    _summary = ("n_rounds", "points", "weights", "scalars", "total")

    @property
    def points(self) -> int:
        return sum(r.points for r in self.rounds)

    @property
    def weights(self) -> int:
        return sum(r.weights for r in self.rounds)

    @property
    def scalars(self) -> int:
        return sum(r.scalars for r in self.rounds)

    @property
    def total(self) -> int:
        return self.points + self.weights + self.scalars

    @property
    def n_rounds(self) -> int:
        return len(self.rounds)


# ----------------------------------------------------------------- machines

class _Machine:
    """One machine's data and its index, built once and reused for every
    guess (not pickled, so process executors rebuild it): a KD-tree
    (:class:`pyfkm._core._kcenter.Tree`) for the nearest-neighbour summary
    and the aggregating, and the squared-distance matrix only for the
    baselines' local greedy.  Both give exact, identical decisions."""

    def __init__(self, X):
        self.X = X
        self._D = None
        self._T = None

    def __getstate__(self):
        return {"X": self.X, "_D": None, "_T": None}

    def _dist(self):
        if self._D is None and self.X.shape[0] <= _MATRIX_MAX_N:
            self._D = _kcenter.Matrix(self.X)
        return self._D

    def _tree(self):
        """The KD-tree, or None when some squared distance might overflow
        (the matrix-free kernels then report it exactly)."""
        if self._T is None:
            try:
                self._T = _kcenter.Tree(self.X)
            except NumericalError:
                self._T = False
        return self._T or None

    def nn_summary(self, n_quantiles):
        """Sorted nearest-neighbour distances at ranks ceil(q n / Q) (1-based)."""
        n = self.X.shape[0]
        T = self._tree()
        nn2 = T.nn_sqdist() if T is not None else _kcenter.nn_sqdist(self.X, self._dist())
        nn = np.sort(np.sqrt(nn2))
        ranks = np.unique(np.ceil(np.arange(1, n_quantiles + 1) * n / n_quantiles)
                          .astype(np.int64))
        return ranks, nn[ranks - 1]

    def max_dist(self, x0):
        mind, _ = _kcenter.nearest(self.X, x0[None, :])
        return float(np.sqrt(mind.max()))

    def aggregate(self, L, y, max_reps):
        T = self._tree()
        if T is not None:
            reps, w, _, stopped = T.aggregate((2.0 * L) ** 2, (4.0 * L) ** 2, y, max_reps)
        else:
            reps, w, _, stopped = _kcenter.aggregate(
                self.X, self._dist(), (2.0 * L) ** 2, (4.0 * L) ** 2, y, max_reps)
        return self.X[reps], w, stopped

    def local_greedy(self, L, k):
        c, unc, covered_by = self._greedy_cover(L, k)
        return self.X[c], covered_by, unc

    def _greedy_cover(self, L, k):
        D = self._dist()
        c, unc, uncovered = _kcenter.greedy(self.X, D, None, (2.0 * L) ** 2,
                                            (4.0 * L) ** 2, k)
        # weight of each center: covered points whose nearest center it is
        w = np.zeros(len(c), dtype=np.int64)
        if len(c):
            _, arg = _kcenter.nearest(self.X[~uncovered], self.X[c])
            w = np.bincount(arg, minlength=len(c)).astype(np.int64)
        return c, unc, w

    def gonzalez(self, n_centers):
        """Farthest-first traversal (Gonzalez 1985) from point 0; every point
        goes to its nearest center; returns (centers, counts)."""
        X = self.X
        if X.shape[0] <= n_centers:
            return X.copy(), np.ones(X.shape[0], dtype=np.int64)
        idx = [0]
        mind, _ = _kcenter.nearest(X, X[:1])
        for _ in range(n_centers - 1):
            j = int(np.argmax(mind))
            idx.append(j)
            np.minimum(mind, ((X - X[j]) ** 2).sum(axis=1), out=mind)
        C = X[idx]
        _, arg = _kcenter.nearest(X, C)
        return C, np.bincount(arg, minlength=len(idx)).astype(np.int64)

    def sample(self, size, seed):
        rng = np.random.default_rng(seed)
        return self.X[rng.choice(self.X.shape[0], size=min(size, self.X.shape[0]),
                                 replace=False)]

    def labels(self, centers, radius):
        mind, arg = _kcenter.nearest(self.X, centers)
        lab = arg.astype(np.int64)
        lab[np.sqrt(mind) > radius] = -1
        return lab


def _call(machine, method, *args):
    return getattr(machine, method)(*args)


def _run_all(executor, machines, method, *args):
    """Run ``method`` on every machine (through the executor if any)."""
    if executor is None:
        return [_call(mc, method, *args) for mc in machines]
    futures = [executor.submit(_call, mc, method, *args) for mc in machines]
    return [f.result() for f in futures]


def _check_machines(machines, n_clusters, n_outliers):
    """Validated list of float64 arrays (same d, finite) and n.  Machines
    without points take no part in the protocol (they would send nothing),
    as empty clients of the federated estimators; not all may be empty."""
    if isinstance(machines, np.ndarray) or not isinstance(machines, (list, tuple)):
        raise InvalidInputError(
            "machines must be a list of 2-D arrays, one per machine")
    if not machines:
        raise InvalidInputError("need at least one machine")
    arrs = []
    for i, X in enumerate(machines):
        X = check_array(X, f"machines[{i}]", dtype=(np.float64,), allow_empty=True)
        if X.ndim != 2:
            raise InvalidInputError(f"machines[{i}] must be a 2-D array")
        arrs.append(X)
    ds = sorted({a.shape[1] for a in arrs})
    if len(ds) != 1:
        raise InvalidInputError(f"machines have different numbers of features: {ds}")
    if not any(a.shape[0] for a in arrs):
        raise InvalidInputError("all machines are empty")
    n = sum(a.shape[0] for a in arrs)
    _check_kz(n_clusters, n_outliers, n)
    return arrs, n


def _check_executor(executor):
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise InvalidInputError("executor must be a concurrent.futures.Executor "
                                "(an object with submit) or None")


class _Traffic:
    def __init__(self):
        self.rounds = []
        # set by _open: the input's machine slots that take part, their
        # count, the number of features and the feature names
        self.slots, self.n_machines, self.d, self.feature_names = [], 0, 0, None

    def add(self, name, sender, points=0, weights=0, scalars=0):
        self.rounds.append(RoundTraffic(name, sender, int(points), int(weights),
                                        int(scalars)))

    def report(self):
        return CommunicationReport(tuple(self.rounds))


def _anchor_extent(executor, machines, rng, traffic, d):
    """Upper bound R >= L*: a random data point x0 and the largest distance
    of any point to it (one center at x0 covers everything)."""
    m = len(machines)
    i = int(rng.integers(m))
    x0 = machines[i].X[int(rng.integers(machines[i].X.shape[0]))]
    traffic.add("anchor to coordinator", "machines", points=d)
    traffic.add("anchor broadcast", "coordinator", points=m * d)
    R = max(_run_all(executor, machines, "max_dist", x0))
    traffic.add("extent", "machines", scalars=m)
    return x0, R


def _lower_bound(executor, machines, n, z, k, traffic, n_quantiles=32):
    """A lower bound on the optimal (k,z)-center radius L* (continuous
    centers) from nearest-neighbour distances within each machine.

    Two inliers of one optimal cluster on one machine are within 2 L*, so
    every inlier has a same-machine neighbour within 2 L* except at most one
    per (cluster, machine): at least t = n - z - k m points have their
    machine-local nearest-neighbour distance <= 2 L*, i.e. the t-th smallest
    such distance V_t is <= 2 L*.  Each machine sends Q sorted quantiles of
    its distances (Q scalars); the coordinator takes the largest summary
    value v for which the summaries prove fewer than t values are below v,
    so v <= V_t <= 2 L*.  Returns 0 when t < 1 (no bound).
    """
    m = len(machines)
    t = n - z - k * m
    summaries = _run_all(executor, machines, "nn_summary", n_quantiles)
    traffic.add("nearest-neighbour quantiles", "machines",
                scalars=sum(len(v) for _, v in summaries))
    if t < 1:
        return 0.0
    cands = np.unique(np.concatenate([v for _, v in summaries]))
    cands = cands[np.isfinite(cands)]
    best = 0.0
    for v in cands[::-1]:
        below = 0  # upper bound on the number of values < v
        for (ranks, vals), mc in zip(summaries, machines):
            pos = np.searchsorted(vals, v, side="left")  # first summary value >= v
            below += (ranks[pos] - 1) if pos < len(vals) else mc.X.shape[0]
        if below <= t - 1:
            best = float(v)
            break
    return best / 2.0

def _open(est, machines):
    """The start of every distributed fit: the machines, k and z checked,
    then the estimator's other parameters (``_check_fit_params``), then the
    executor; one :class:`_Machine` per machine and an empty traffic
    record.  Returns (machines, n, k, z, traffic)."""
    names = clients_feature_names(machines)
    arrs, n = _check_machines(machines, est.n_clusters, est.n_outliers)
    k, z = _check_kz(est.n_clusters, est.n_outliers, n)
    est._check_fit_params()
    _check_executor(est.executor)
    traffic = _Traffic()
    # machines without points take no part; their slots get empty labels
    traffic.slots = [i for i, X in enumerate(arrs) if X.shape[0]]
    traffic.n_machines, traffic.d, traffic.feature_names = len(arrs), arrs[0].shape[1], names
    return [_Machine(arrs[i]) for i in traffic.slots], n, k, z, traffic


def _search_bounds(executor, machines, rng, traffic, n, z, k):
    """The rounds before a search over guesses: sizes, the anchor and the
    extent R (an upper bound), the lower bound lo (positive, at most R;
    R 2^-32 when the nearest-neighbour bound is 0).  Returns (x0, R, lo); R
    is 0 (and lo too) when all points coincide."""
    m, d = len(machines), machines[0].X.shape[1]
    traffic.add("sizes", "machines", scalars=m)
    x0, R = _anchor_extent(executor, machines, rng, traffic, d)
    if R == 0.0:
        return x0, R, 0.0
    lo = _lower_bound(executor, machines, n, z, k, traffic)
    return x0, R, (min(lo, R) if lo > 0 else R * 2.0 ** -32)


def _publish(est, executor, machines, centers, radius, traffic):
    """The end of every distributed fit: the coordinator broadcasts the
    centers, each machine labels its points (-1 beyond ``radius``) and
    sends its outlier count; then the fitted attributes (set only once
    everything that can fail has run)."""
    m = len(machines)
    traffic.add("centers broadcast", "coordinator", points=m * centers.size, scalars=m)
    labels = _run_all(executor, machines, "labels", centers, radius)
    traffic.add("outlier counts", "machines", scalars=m)
    full = [np.zeros(0, dtype=np.int64) for _ in range(traffic.n_machines)]
    for slot, lab in zip(traffic.slots, labels):
        full[slot] = lab
    est.cluster_centers_ = centers
    est.radius_ = float(radius)
    est.labels_ = full
    est.n_declared_outliers_ = int(sum((lab < 0).sum() for lab in labels))
    est.communication_ = traffic.report()
    est.n_features_in_ = traffic.d
    set_feature_names(est, traffic.feature_names)


class _SlackBase(_KZBase):
    """The parameters (k, z, the slack epsilon, the seed, the executor) of
    the distributed estimators with an outlier slack, and their check."""

    def __init__(self, n_clusters: int, n_outliers: int, *, epsilon: float = 0.1,
                 random_state: SeedLike = None, executor: Executor | None = None) -> None:
        self.n_clusters = n_clusters
        self.n_outliers = n_outliers
        self.epsilon = epsilon
        self.random_state = random_state
        self.executor = executor

    def _check_fit_params(self):
        _check_epsilon(self.epsilon)


class DistributedKZCenter(_SlackBase):
    """Distributed (k,z)-center with (1+eps)z outliers (Guo & Li, Algorithm 3).

    For a guess L, every machine i runs the aggregating procedure on its
    points P_i with threshold y = eps z / (k m) and radii 2L / 4L
    (Algorithm 2, kernel ``fkm_kcenter_aggregate``) and reports ``|P'_i|``; the
    coordinator answers "No" when ``sum_i |P'_i| > k m (1 + 1/eps)``, otherwise
    collects the weighted points (P', w) and runs the weighted greedy
    kzc(k, z', (P', w), 5L) of Charikar et al. (radii 10L and 20L, kernel
    ``fkm_kcenter_greedy``) with the outlier budget

        z' = (1 + eps) z + w(P') - n,

    i.e. (1+eps)z minus the points the machines left unaggregated; "No" when
    the uncovered weight exceeds z'.  Guesses run over the grid
    R (1+eps)^(j-J), j = 0..J, between a lower bound L_lo <= L* and an upper
    bound R >= L*, by bisection that keeps the last feasible guess.  On a
    Yes the coordinator, at no extra traffic, also looks for the smallest
    L' <= 5L on the same kind of grid that kzc(k, z', (P', w), L') accepts
    and returns those centers (any accepted L' <= 5L keeps the guarantee).

    Guarantee (Guo & Li, Theorem 3, re-derived in the Notes): at most
    (1+eps)z points are farther than ``radius_`` = 4L + 4L' <= 24L from the
    centers, and L <= (1+eps) L* where L* is the optimal radius with z
    outliers (centers anywhere in space), when the lower bound is positive.

    Parameters
    ----------
    n_clusters : int
        Number of centers k >= 1.
    n_outliers : int
        Number of outliers z >= 0; k + z must not exceed the number of
        points.
    epsilon : float, default=0.1
        eps > 0: the outlier slack, (1+eps)z points may be discarded.
    random_state : None, int, SeedSequence or Generator
        Only picks the anchor point of the diameter estimate.
    executor : concurrent.futures.Executor or None
        Runs each machine's work (threads share each machine's KD-tree
        index across guesses; process executors rebuild it per task).

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_centers, n_features)
        At most ``n_clusters`` centers (fewer only when they already cover
        every aggregated point).
    radius_ : float
        4L + 4L' <= 24L: every point farther than it from all centers is a
        declared outlier; there are at most (1+eps)z of them.
    guess_ : float
        The final guess L.
    coordinator_guess_ : float
        L' (<= 5L), the radius parameter of the coordinator's kzc.
    lower_bound_, upper_bound_ : float
        The search interval [L_lo, R].
    n_guesses_ : int
        Guesses tried (each is 4 communication rounds).
    n_declared_outliers_ : int
    labels_ : list of ndarray of int64
        Per machine: nearest center, -1 for declared outliers.
    communication_ : CommunicationReport
    n_features_in_ : int

    Notes
    -----
    Why z' and "the last feasible guess" (the two points where a reading of
    the paper can go wrong).  Let L >= L* and call an aggregated point p
    "bad" if it is farther than 5L from every optimal center.  Its 4L ball
    then holds no inlier (an inlier within 4L would put p within 4L + L* of
    a center), so the bad weight is made of aggregated outliers:
    bad <= z - u_out, where u_out outliers were left unaggregated.  Each
    machine leaves at most y inliers per optimal cluster unaggregated (more
    would give each of them a 2L ball holding > y points of U), so
    n - w(P') <= k m y + u_out = eps z + u_out, hence
    z' >= z - u_out >= bad, and kzc with radius 5L succeeds (Charikar's
    argument: the 5L balls around the optimal centers miss weight <= z').
    Every covered aggregated point is within 4L' of a center and represents
    points within 4L of it, so all but (n - w(P')) + z' = (1+eps)z points
    are within 4L + 4L'.  Also, with L >= L* no machine picks more than
    k + z_i / y points (a pick either is within 2L of an optimal cluster,
    whose points it then removes, or has > y outliers in its 2L ball), so
    the sum stays <= k m (1 + 1/eps).  The budget (1+eps)z applied to the received weight
    alone would ignore the n - w(P') points already dropped by the machines
    and can discard about twice as many.  Feasibility is not monotone in L,
    so bisection keeps the smallest guess that was *answered Yes*, never the
    last guess tried.  If a machine alone picks more than k m (1+1/eps)
    points it stops early (the answer is No either way).

    Algorithm 2 may pick any point whose 2L ball holds more than y points;
    pyfkm picks the one with the most (lowest index on ties), which puts the
    first pick of each cluster at its densest point (fewer, better placed
    aggregated points than the first eligible point in index order, at the
    same guarantee).

    The lower bound is explained in ``_lower_bound`` (nearest-neighbour
    quantiles, Q = 32 scalars per machine); when it is 0 (t = n - z - km < 1
    or duplicate points) the search starts at R 2^-32 instead.

    Examples
    --------
    >>> from pyfkm.outliers import make_noisy_blobs
    >>> X, noise, C = make_noisy_blobs(600, 2, 3, 30, random_state=0)
    >>> machines = [X[i::3] for i in range(3)]
    >>> est = DistributedKZCenter(3, 30, random_state=0).fit(machines)
    >>> est.cluster_centers_.shape[1], est.n_declared_outliers_ <= 33
    (2, True)
    """

    def fit(self, machines: Sequence[ArrayLike], y: object = None) -> DistributedKZCenter:
        """Run the protocol on ``machines``.

        Parameters
        ----------
        machines : list of array-like of shape (n_i, n_features)
            The points of each machine (same number of features, finite);
            ``n_clusters + n_outliers`` must not exceed their total number.
        y : None
            Ignored; accepted for scikit-learn's API.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        InvalidInputError
            If ``machines`` or a parameter is invalid.
        """
        mcs, n, k, z, tr = _open(self, machines)
        eps, ex, m = float(self.epsilon), self.executor, len(mcs)
        x0, R, lo = _search_bounds(ex, mcs, as_generator(self.random_state), tr, n, z, k)
        if R == 0.0:  # all points coincide
            L, Lp, centers, n_guess = 0.0, 0.0, x0[None, :].copy(), 0
        else:
            y_thr = eps * z / (k * m)
            cap = k * m * (1.0 + 1.0 / eps)
            max_reps = int(min(math.floor(cap), n))

            def probe(L):
                tr.add(f"guess L={L:.6g}", "coordinator", scalars=m)
                res = _run_all(ex, mcs, "aggregate", L, y_thr, max_reps)
                sizes = [len(w) + (1 if st else 0) for _, w, st in res]
                tr.add("aggregated sizes", "machines", scalars=m)
                tr.add("answer", "coordinator", scalars=m)
                if any(st for _, _, st in res) or sum(sizes) > cap:
                    return None
                Q = np.concatenate([p for p, _, _ in res])
                w = np.concatenate([w for _, w, _ in res])
                tr.add("weighted points", "machines", points=Q.size, weights=w.size)
                z_prime = (1.0 + eps) * z + float(w.sum()) - n
                if z_prime < 0:
                    return None
                if Q.shape[0] == 0:
                    # nothing aggregated: z' >= 0 means n <= (1+eps)z, so
                    # every point may be declared an outlier; one center
                    # (any point) with radius 0 answers within budget
                    return x0[None, :].copy(), 0.0
                D = _kcenter.Matrix(Q) if Q.shape[0] <= _MATRIX_MAX_N else None

                def kzc(Lp):  # Algorithm 1 with radii 2L', 4L'
                    c, unc, _ = _kcenter.greedy(Q, D, w, (2.0 * Lp) ** 2,
                                                (4.0 * Lp) ** 2, k)
                    return Q[c] if unc <= z_prime else None

                if kzc(5.0 * L) is None:  # the answer of Algorithm 3
                    return None
                # Coordinator-only refinement: the smallest L' <= 5L on the
                # grid that kzc accepts (any accepted L' <= 5L keeps the
                # guarantee; no extra traffic).
                Lp, cen, _ = _grid_search(min(lo, 5.0 * L), 5.0 * L, 1.0 + eps, kzc)
                return cen, Lp

            L, (centers, Lp), n_guess = _grid_search(lo, R, 1.0 + eps, probe)
        _publish(self, ex, mcs, centers, 4.0 * L + 4.0 * Lp, tr)
        self.guess_ = float(L)
        self.coordinator_guess_ = float(Lp)
        self.lower_bound_, self.upper_bound_ = float(lo), float(R)
        self.n_guesses_ = int(n_guess)
        return self
