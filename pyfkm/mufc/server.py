"""The server side of MUFC: it clusters the dataset it builds from the aggregate.

A :class:`MufcServer` takes the decoded aggregate (bins and counts) and
builds its own dataset from it -- ``q_j`` points uniform inside bin ``j``
(``server_points="uniform"``, the paper's choice) or the bin centres
weighted by ``q_j`` (``"centers"``, the default) -- then clusters it with weighted
k-means++ and Lloyd (``n_init`` initialisations).  After a removal it
updates exactly: resampling only the bins that changed, or (``"centers"``)
the coupled update of its seeds described in the class notes.
"""
from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_int
from ..exceptions import InvalidInputError
from ..core.kernels import lloyd as _lloyd, seeding as _seeding
from ..core.kmeans import KMeans, absolute_tolerance, lloyd, one_call_limit
from ..core.lattice import Lattice
from ..rng import SeedLike, as_generator
from ._rngstate import _rng_from_state, _rng_state

__all__ = ["MufcServer"]


def _lloyd_run(P, c0, w, max_iter, tol_abs, trace=None):
    """One init's Lloyd run: ``(centers, inertia, n_iter)``.

    Without ``trace``: :func:`pyfkm.core.kmeans.lloyd`, exactly as
    :meth:`pyfkm.core.kmeans.KMeans.fit` runs it.  With a
    :class:`pyfkm._core._lloyd.LloydTrace` on ``P`` (only for
    ``P.shape[0] < one_call_limit()``, where ``lloyd`` is one ``lloyd_loop``
    call): the same results bit for bit, cheap when rerun from the same
    centers with slightly changed weights.
    """
    if trace is None:
        C, _, inertia, n_iter = lloyd(P, c0, sample_weight=w, max_iter=max_iter,
                                      tol_abs=tol_abs)
        return C, inertia, n_iter
    # the kernel raises NumericalError on non-finite centers or inertia
    C, _, _, inertia, n_iter = trace.run(c0, w, max_iter, tol_abs)
    return C, inertia, n_iter


class MufcServer:
    """Server side of MUFC: clusters the dataset it builds from the aggregate.

    Parameters
    ----------
    n_clusters : int
    gamma, lower : grid step and box corner (the clients' grid).
    n_features : int
    server_points : {"centers", "uniform"}, default="centers"
    n_init, max_iter, tol : k-means parameters.
    random_state : None, int or Generator

    Notes
    -----
    With ``server_points="centers"`` the server runs the ``n_init``
    initialisations of :class:`pyfkm.core.kmeans.KMeans` itself (same generator
    use, same results for the same generator state) and keeps each init's
    seeds (row positions in its point array, in seeding order).

    *Coupled update.*  When a new aggregate has the same bins in the same
    order and only smaller counts, none reaching 0 (what a removal that
    moves no client center does), the server does not recluster from
    scratch.  A bin ``b`` of weight ``q_b`` is ``q_b`` identical copies of its
    centre, and each seeding step drew one copy: uniformly at random among
    the copies of the bin it chose.  For each init, its seeds are walked in
    order; at a position whose bin lost ``r_b = q_b - q'_b`` copies, one
    ``rng.random()`` decides with probability ``r_b / q_b`` that the draw
    hit a removed copy; then the positions from there on are reseeded from
    the kept prefix by D^2 sampling on the new weights (the walk stops),
    otherwise the seed stands.  This is exact: with ``a_c`` the new D^2 mass
    of copy ``c`` given the prefix, ``A`` the kept and ``a_R`` the removed
    mass, a kept seed is ``c`` with probability ``a_c / (A + a_R)`` and a
    redraw happens with probability ``a_R / (A + a_R)``, so
    ``P(c) = a_c/(A + a_R) + a_R/(A + a_R) * a_c/A = a_c/A``, the new D^2
    law (the same argument as :class:`pyfkm.core.seeding.RemovableSeeding`'s; the
    first step, proportional to weight, and the zero-mass fallback, by
    weight among unchosen bins, are the case ``D = 1``).  Each init's seeds
    are therefore distributed as a fresh seeding of the new aggregate, the
    inits stay independent, and Lloyd from the seeds (a deterministic
    function) gives the model a fresh recluster would, in distribution.
    Lloyd reruns from unchanged seeds reuse a recorded run
    (:class:`pyfkm._core._lloyd.LloydTrace`, bit for bit a plain run).
    Any other change (a bin appears or empties, a count grows) reclusters
    from scratch.

    Examples
    --------
    >>> import numpy as np
    >>> srv = MufcServer(2, gamma=0.25, n_features=1, server_points="centers",
    ...                  n_init=3, random_state=0)
    >>> bins, counts = np.array([[0], [1], [3]]), np.array([4, 2, 5])
    >>> srv.update(bins, counts)
    True
    >>> srv.cluster_centers_.shape
    (2, 1)
    >>> srv.update(bins, np.array([3, 2, 5]))   # a removal: the coupled update
    True
    >>> srv.counts_.tolist()
    [3, 2, 5]
    """

    # for the type checker (mypy reads the rest of __init__ as unreachable
    # after its numbers.Real check of a float: typeshed's float is no Real)
    d: int
    server_points: str
    n_init: int
    bins_: NDArray[np.int64]
    counts_: NDArray[np.int64]
    _rng: np.random.Generator
    _samples: dict[tuple[int, ...], NDArray[np.float64]]

    def __init__(self, n_clusters: int, *, gamma: float, n_features: int, lower: float = -0.5,
                 server_points: str = "centers", n_init: int = 10, max_iter: int = 300,
                 tol: float = 1e-4, random_state: SeedLike = None) -> None:
        if server_points not in ("uniform", "centers"):
            raise InvalidInputError(
                f"server_points={server_points!r} must be 'uniform' or 'centers'")
        check_int(n_init, "n_init", 1)
        check_int(max_iter, "max_iter", 1)
        if not isinstance(tol, numbers.Real) or not np.isfinite(tol) or tol < 0:
            raise InvalidInputError(f"tol={tol!r} must be a finite number >= 0")
        self.n_clusters = int(n_clusters)
        self.gamma, self.lower, self.d = float(gamma), float(lower), int(n_features)
        self.server_points = server_points
        self.n_init, self.max_iter, self.tol = n_init, max_iter, tol
        self._rng = as_generator(random_state)
        self._lattice = Lattice(self.gamma)
        self.bins_ = np.zeros((0, self.d), dtype=np.int64)
        self.counts_ = np.zeros(0, dtype=np.int64)
        self._samples = {}
        self._clear_inits()

    def _clear_inits(self):
        """Forget the per-init state (``"centers"``): the next update reclusters."""
        self._seeds = None      # (n_init, k) int64 seeds of each init, or None
        self._traces = None     # per-init LloydTrace (or None), built lazily
        self._P = None          # the point array the seeds and traces refer to
        self._tol_abs = None

    def _export(self, arrays):
        arrays["s.bins"], arrays["s.counts"] = self.bins_, self.counts_
        arrays["s.centers"] = self.cluster_centers_
        keys = list(map(tuple, self.bins_.tolist()))
        arrays["s.samples"] = (np.vstack([self._samples[k] for k in keys])
                               if self._samples else np.zeros((0, self.d)))
        if self._seeds is not None:
            arrays["s.seeds"] = self._seeds
        return {"n_clusters": self.n_clusters, "gamma": self.gamma, "lower": self.lower,
                "d": self.d, "server_points": self.server_points, "n_init": self.n_init,
                "max_iter": self.max_iter, "tol": self.tol, "rng": _rng_state(self._rng),
                "inertia": self.inertia_, "n_iter": self.n_iter_,
                "seeds": self._seeds is not None}

    @classmethod
    def _restore(cls, head, arrays, rng=None):
        """Rebuild a server written by :meth:`_export` (validated by the
        caller: see ``_ModelReader``).  A ``"centers"`` server saved without
        seeds (format version 1) reclusters from scratch at its next update,
        as the pyfkm that wrote it did."""
        obj = cls(head["n_clusters"], gamma=head["gamma"], n_features=head["d"],
                  lower=head["lower"], server_points=head["server_points"],
                  n_init=head["n_init"], max_iter=head["max_iter"], tol=head["tol"],
                  random_state=_rng_from_state(head["rng"]) if rng is None else rng)
        obj.bins_ = arrays["s.bins"].astype(np.int64).reshape(-1, obj.d)
        obj.counts_ = arrays["s.counts"].astype(np.int64)
        obj.cluster_centers_ = arrays["s.centers"]
        obj.inertia_, obj.n_iter_ = float(head["inertia"]), int(head["n_iter"])
        if obj.server_points == "uniform":
            samples, off = arrays["s.samples"], 0
            for b, q in zip(map(tuple, obj.bins_.tolist()), obj.counts_.tolist()):
                obj._samples[b] = samples[off:off + q]
                off += q
        elif head.get("seeds"):
            seeds = np.ascontiguousarray(arrays["s.seeds"], dtype=np.int64)
            k = min(obj.n_clusters, int(np.count_nonzero(obj.counts_ > 0)))
            n = obj.bins_.shape[0]
            if seeds.shape != (obj.n_init, k) or (seeds.size and (
                    seeds.min() < 0 or seeds.max() >= n or
                    any(np.unique(r).size != k for r in seeds))):
                raise InvalidInputError(
                    f"server seeds have shape {seeds.shape} or values inconsistent with "
                    f"n_init={obj.n_init}, k={k} and {n} bins; the model file is corrupt")
            if k:
                obj._P = obj.points()[0]
                obj._tol_abs = absolute_tolerance(obj._P, obj.tol)
                obj._seeds = seeds
                obj._traces = [None] * obj.n_init
        return obj

    def _sample(self, bin_row, n):
        b = np.repeat(np.asarray(bin_row, dtype=np.int64)[None, :], n, axis=0)
        return self._lattice.sample(b, self._rng) + self.lower

    def update(self, bins: ArrayLike, counts: ArrayLike) -> bool:
        """Take a new aggregate and recluster if it changed.

        Parameters
        ----------
        bins : array-like of int, shape (n_bins, n_features)
            Grid cells of the aggregate (as :func:`merge_sparse` returns).
        counts : array-like of int, shape (n_bins,)
            Their counts.

        Returns
        -------
        changed : bool
            Whether the model changed (False for the same aggregate).

        With ``server_points="centers"``, an aggregate with the same bins and
        smaller counts (none reaching 0) takes the coupled update (see the
        class notes); its model is distributed exactly as a recluster's.
        On error the server's state (generator included) is unchanged.
        """
        # copies: the server keeps them, the caller may reuse its buffers
        bins = np.array(bins, dtype=np.int64, copy=True).reshape(-1, self.d)
        counts = np.array(counts, dtype=np.int64, copy=True).ravel()
        same_bins = np.array_equal(bins, self.bins_)
        if same_bins and np.array_equal(counts, self.counts_) \
                and hasattr(self, "cluster_centers_"):
            return False
        rng_state = self._rng.bit_generator.state
        try:
            if self.server_points == "uniform":
                samples = self._resample(bins, counts)
                model = self._recluster_points(*self._points_of(bins, counts, samples))
                self._samples = samples
            elif self._decrement_only(same_bins, counts):
                model = self._coupled_update(counts)
            else:
                model = self._recluster_centers(bins, counts)
        except BaseException:
            self._rng.bit_generator.state = rng_state
            if self.server_points == "centers":
                self._traces = None if self._seeds is None else [None] * self.n_init
            raise
        self.bins_, self.counts_ = bins, counts
        self.cluster_centers_, self.inertia_, self.n_iter_ = model
        return True

    def _resample(self, bins, counts):
        new = {}
        for b, q in zip(map(tuple, bins.tolist()), counts.tolist()):
            old = self._samples.get(b)
            if old is None:
                new[b] = self._sample(b, q)
            elif old.shape[0] >= q:
                # drop old - q uniformly chosen samples: the rest stay iid uniform
                keep = np.sort(self._rng.choice(old.shape[0], size=q, replace=False))
                new[b] = old[keep]
            else:
                new[b] = np.vstack([old, self._sample(b, q - old.shape[0])])
        return new

    def _points_of(self, bins, counts, samples):
        if self.server_points == "centers":
            return self._lattice.centers(bins) + self.lower, counts.astype(np.float64)
        if not samples:
            return np.zeros((0, self.d)), None
        keys = list(map(tuple, bins.tolist()))
        return np.vstack([samples[k] for k in keys]), None

    def points(self) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
        """The server's dataset and weights.

        Returns
        -------
        X : ndarray of shape (n_points, n_features)
            The points the server clusters (bin centres or samples inside
            the bins).
        weights : ndarray of shape (n_points,) or None
            Their weights (None for unit weights).
        """
        return self._points_of(self.bins_, self.counts_, self._samples)

    def _empty_model(self):
        return np.zeros((0, self.d)), 0.0, 0

    def _recluster_points(self, X, w):
        """``"uniform"``: KMeans on the samples; returns (centers, inertia, n_iter)."""
        n_pos = X.shape[0] if w is None else int(np.count_nonzero(w > 0))
        k = min(self.n_clusters, n_pos)
        if k == 0:
            return self._empty_model()
        km = KMeans(k, n_init=self.n_init, max_iter=self.max_iter, tol=self.tol,
                    random_state=self._rng).fit(X, sample_weight=w)
        return km.cluster_centers_, km.inertia_, km.n_iter_

    def _recluster_centers(self, bins, counts):
        """``"centers"``: a fresh recluster, the loop of
        :meth:`pyfkm.core.kmeans.KMeans.fit` with each init's seeds kept.  The
        per-init state is replaced only on success."""
        P, w = self._points_of(bins, counts, None)
        k = min(self.n_clusters, int(np.count_nonzero(w > 0)))
        if k == 0:
            self._clear_inits()
            return self._empty_model()
        P = np.ascontiguousarray(P, dtype=np.float64)
        tol_abs = absolute_tolerance(P, self.tol)
        seeds = np.empty((self.n_init, k), dtype=np.int64)
        best = None
        for i in range(self.n_init):
            ids, _, _ = _seeding.seed(P, w, k, self._rng, labels=False)
            seeds[i] = ids
            res = _lloyd_run(P, P[ids], w, self.max_iter, tol_abs)
            if best is None or res[1] < best[1]:
                best = res
        self._P, self._tol_abs, self._seeds = P, tol_abs, seeds
        self._traces = [None] * self.n_init
        return best

    def _decrement_only(self, same_bins, counts):
        """Same support (bins and order: ``same_bins``) as now, counts <= now
        and > 0."""
        return (self._seeds is not None and same_bins and bool((counts > 0).all())
                and bool((counts <= self.counts_).all()))

    def _coupled_update(self, counts):
        """The coupled update of the class notes; returns the new model and
        replaces the per-init state only on success."""
        P, k = self._P, self._seeds.shape[1]
        old = self.counts_
        w = counts.astype(np.float64)
        lost = old - counts
        seeds = self._seeds.copy()
        reseeded = np.zeros(self.n_init, dtype=bool)
        # the inits with a seed in a bin that lost copies, in order (one
        # array operation: most inits have none)
        for i in np.flatnonzero((lost[seeds] > 0).any(axis=1)).tolist():
            s = seeds[i]
            for p in np.flatnonzero(lost[s] > 0).tolist():
                b = s[p]
                if self._rng.random() < lost[b] / old[b]:
                    # this draw hit a removed copy: redraw from the kept prefix
                    s[:] = _seeding.seed_from(P, w, s[:p], k, self._rng)
                    reseeded[i] = True
                    break
        traces = list(self._traces)
        traced = P.shape[0] < one_call_limit()
        best = None
        starts = P[seeds]                   # (n_init, k, d): every init's seeds
        for i in range(self.n_init):
            if reseeded[i] or not traced:
                traces[i] = None
                res = _lloyd_run(P, starts[i], w, self.max_iter, self._tol_abs)
            else:
                if traces[i] is None:  # one copy of P for all the traces
                    like = next((t for t in traces if t is not None), None)
                    traces[i] = _lloyd.LloydTrace(P, like)
                res = _lloyd_run(P, starts[i], w, self.max_iter, self._tol_abs, traces[i])
            if best is None or res[1] < best[1]:
                best = res
        self._seeds, self._traces = seeds, traces
        return best
