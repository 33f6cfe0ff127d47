"""Baselines for distributed (k,z)-center in the same machine/coordinator
framework: Malkomes et al. (NeurIPS 2015), a 2z-bicriteria scheme after
Guha, Li & Zhang (SPAA 2017), and uniform sampling.
"""
from __future__ import annotations

import math
import numbers
from concurrent.futures import Executor
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core import _kcenter
from ..exceptions import InvalidInputError
from ..rng import SeedLike, as_generator
from ._common import _MATRIX_MAX_N, _KZBase, _grid_search
from .distributed import _call, _open, _publish, _run_all, _search_bounds, _SlackBase
from .kzcenter import _charikar

__all__ = ["MalkomesKZCenter", "GuhaKZCenter", "UniformSamplingKZCenter"]


class MalkomesKZCenter(_KZBase):
    """Baseline: Malkomes, Kusner, Chen, Weinberger & Moseley, "Fast
    distributed k-center clustering with outliers on massive data"
    (NeurIPS 2015).

    Each machine runs the farthest-first traversal (Gonzalez) for k + z
    centers (or sends all its points when it has fewer) weighted by the
    number of its points nearest to each; the coordinator runs the weighted
    Charikar greedy (radii r, 3r) on the m (k + z) weighted points with
    outlier budget z.  Communication grows linearly with z.

    Attributes: as :class:`DistributedKZCenter`, except that ``radius_`` is
    the radius after discarding exactly the z farthest points (computed by
    the simulation over all machines; that step is not counted as traffic).

    Parameters
    ----------
    n_clusters : int
        Number of centers k >= 1.
    n_outliers : int
        Number of outliers z >= 0; k + z must not exceed the number of
        points.
    executor : concurrent.futures.Executor or None, default=None
        Runs each machine's work (None: in the calling thread).

    Examples
    --------
    >>> from pyfkm.outliers import make_noisy_blobs
    >>> X, _, _ = make_noisy_blobs(300, 2, 3, 20, random_state=0)
    >>> est = MalkomesKZCenter(3, 20).fit([X[:150], X[150:]])
    >>> est.cluster_centers_.shape
    (3, 2)
    """

    def __init__(self, n_clusters: int, n_outliers: int, *, executor: Executor | None = None
                 ) -> None:
        self.n_clusters = n_clusters
        self.n_outliers = n_outliers
        self.executor = executor

    def fit(self, machines: Sequence[ArrayLike], y: object = None) -> MalkomesKZCenter:
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
        res = _run_all(self.executor, mcs, "gonzalez", k + z)
        Q = np.concatenate([c for c, _ in res])
        w = np.concatenate([c for _, c in res])
        tr.add("weighted centers", "machines", points=Q.size, weights=w.size)
        centers, _ = _charikar(Q, w, k, z)
        _publish(self, self.executor, mcs, centers, _radius_without(mcs, centers, z), tr)
        return self


class GuhaKZCenter(_SlackBase):
    """Baseline with 2z outliers, after Guha, Li & Zhang, "Distributed
    partial clustering" (SPAA 2017).

    For a guess L each machine runs the greedy with k centers and radii
    2L / 4L on its own points and reports the number u_i it leaves
    uncovered; the coordinator answers No when sum u_i > 2z, else gathers
    the k m centers weighted by the points they cover and runs kzc with
    radius 5L and budget 2z - sum u_i.  For L >= L* both steps succeed (each
    machine leaves at most its own outliers, bad aggregated weight is made
    of outliers), so at most 2z points are farther than 24L.  As in
    :class:`DistributedKZCenter` the coordinator then uses the smallest
    accepted L' <= 5L; ``radius_`` = 4L + 4L' <= 24L.  Communication is
    independent of z.

    Parameters
    ----------
    n_clusters : int
        Number of centers k >= 1.
    n_outliers : int
        Number of outliers z >= 0; k + z must not exceed the number of
        points.
    epsilon : float, default=0.1
        eps > 0: the ratio of the grid of guesses is 1 + eps.
    random_state : None, int, SeedSequence or Generator, default=None
        Only picks the anchor point of the diameter estimate.
    executor : concurrent.futures.Executor or None, default=None
        Runs each machine's work (None: in the calling thread).

    Examples
    --------
    >>> from pyfkm.outliers import make_noisy_blobs
    >>> X, _, _ = make_noisy_blobs(300, 2, 3, 20, random_state=0)
    >>> est = GuhaKZCenter(3, 20).fit([X[:150], X[150:]])
    >>> est.n_declared_outliers_ <= 40
    True
    """

    def fit(self, machines: Sequence[ArrayLike], y: object = None) -> GuhaKZCenter:
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
        if R == 0.0:
            L, Lp, centers = 0.0, 0.0, x0[None, :].copy()
        else:
            def probe(L: float) -> tuple[NDArray[np.float64], float] | None:
                tr.add(f"guess L={L:.6g}", "coordinator", scalars=m)
                res = _run_all(ex, mcs, "local_greedy", L, k)
                tr.add("uncovered counts", "machines", scalars=m)
                tr.add("answer", "coordinator", scalars=m)
                u = sum(r[2] for r in res)
                if u > 2 * z:
                    return None
                Q = np.concatenate([r[0] for r in res])
                w = np.concatenate([r[1] for r in res])
                tr.add("weighted centers", "machines", points=Q.size, weights=w.size)
                D = None if len(Q) > _MATRIX_MAX_N else _kcenter.Matrix(Q)
                budget = 2 * z - u

                def kzc(Lp: float) -> NDArray[np.float64] | None:
                    c, unc, _ = _kcenter.greedy(Q, D, w, (2.0 * Lp) ** 2,
                                                (4.0 * Lp) ** 2, k)
                    return Q[c] if unc <= budget else None

                if kzc(5.0 * L) is None:
                    return None
                # same coordinator-only refinement as DistributedKZCenter
                Lp, cen, _ = _grid_search(min(lo, 5.0 * L), 5.0 * L, 1.0 + eps, kzc)
                return cen, Lp

            L, (centers, Lp), _ = _grid_search(lo, R, 1.0 + eps, probe)
        _publish(self, ex, mcs, centers, 4.0 * L + 4.0 * Lp, tr)
        return self


class UniformSamplingKZCenter(_SlackBase):
    """Baseline: every machine sends a uniform sample of a ``sample_fraction``
    of its points; the coordinator runs :class:`KZCenter` on the sample with
    the proportional outlier budget round((1+eps) z s / n).  No guarantee;
    ``radius_`` is the radius after discarding exactly z points (computed
    by the simulation, not counted as traffic).

    Parameters
    ----------
    n_clusters : int
        Number of centers k >= 1.
    n_outliers : int
        Number of outliers z >= 0; k + z must not exceed the number of
        points.
    sample_fraction : float, default=0.05
        Fraction of each machine's points it sends, in (0, 1] (at least
        one point per machine).
    epsilon : float, default=0.1
        eps > 0: the coordinator's outlier budget is round((1+eps) z s / n)
        for a sample of s of the n points.
    random_state : None, int, SeedSequence or Generator, default=None
        Draws the samples.
    executor : concurrent.futures.Executor or None, default=None
        Runs each machine's work (None: in the calling thread).

    Examples
    --------
    >>> from pyfkm.outliers import make_noisy_blobs
    >>> X, _, _ = make_noisy_blobs(400, 2, 3, 20, random_state=0)
    >>> est = UniformSamplingKZCenter(3, 20, random_state=0).fit([X[:200], X[200:]])
    >>> est.cluster_centers_.shape
    (3, 2)
    """

    def __init__(self, n_clusters: int, n_outliers: int, *, sample_fraction: float = 0.05,
                 epsilon: float = 0.1, random_state: SeedLike = None,
                 executor: Executor | None = None) -> None:
        super().__init__(n_clusters, n_outliers, epsilon=epsilon, random_state=random_state,
                         executor=executor)
        self.sample_fraction = sample_fraction

    def _check_fit_params(self) -> None:
        super()._check_fit_params()
        f = self.sample_fraction
        if not (isinstance(f, numbers.Real) and 0 < f <= 1):
            raise InvalidInputError(f"sample_fraction={f!r} must be in (0, 1]")

    def fit(self, machines: Sequence[ArrayLike], y: object = None) -> UniformSamplingKZCenter:
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
        eps, f = float(self.epsilon), self.sample_fraction
        rng = as_generator(self.random_state)
        seeds = rng.integers(0, 2 ** 63, size=len(mcs))
        if self.executor is None:
            parts = [mc.sample(max(1, math.ceil(f * mc.X.shape[0])), int(s))
                     for mc, s in zip(mcs, seeds)]
        else:
            futs = [self.executor.submit(_call, mc, "sample",
                                         max(1, math.ceil(f * mc.X.shape[0])), int(s))
                    for mc, s in zip(mcs, seeds)]
            parts = [fu.result() for fu in futs]
        S = np.concatenate(parts)
        tr.add("samples", "machines", points=S.size)
        kk = min(k, S.shape[0])
        zs = min(int(round((1 + eps) * z * S.shape[0] / n)), S.shape[0] - kk)
        centers, _ = _charikar(S, None, kk, zs)
        _publish(self, self.executor, mcs, centers, _radius_without(mcs, centers, z), tr)
        return self


def _radius_without(mcs: Sequence[Any], centers: NDArray[np.float64], z: int) -> float:
    """The radius after discarding exactly the z points farthest from the
    centers (over all machines; a step of the simulation, not counted as
    traffic)."""
    dist = np.concatenate([np.sqrt(_kcenter.nearest(mc.X, centers)[0]) for mc in mcs])
    j = dist.size - 1 - z
    return float(np.partition(dist, j)[j])
