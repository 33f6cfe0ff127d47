"""Federated k-means with exact unlearning (MUFC; Pan et al., ICLR 2023).

Each client seeds its local data with k-means++ (Alg. 3 of the paper, with
exact removal), quantizes its centers to a public grid of step ``gamma`` and
turns its cluster sizes into a sparse count vector over grid bins.  The
vectors are summed with secure compressed aggregation (:mod:`pyfkm.secagg`)
or, for testing and comparisons, in the clear.  The server builds its own
dataset from the aggregate -- ``q_j`` points uniform inside bin ``j``
(``server_points="uniform"``, the paper's default) or the bin centres
weighted by ``q_j`` (``"centers"``, much cheaper) -- and clusters it with
weighted k-means++ and Lloyd (``n_init`` initialisations).

Unlearning.  Removing points from a client runs the client's exact seeding
removal; its counts change even when its centers do not (a removed point is
never counted anywhere).  The aggregate is then re-summed securely, under fresh
masks: in a *difference round* every participant sends its change since the
last round (zero for all but the removing client), under masks sized for
the number of bins that changed (one for a removal that moves no center),
and the server adds the decoded change to its aggregate; a full round (every participant's whole vector) runs when that
does not fit or the participants changed.  The server reclusters when the
aggregate changed; for ``"centers"``, a change that only lowers counts (a
removal that moves no client center) keeps each init's seeds unless a
coupled draw says a seed was a removed copy (:class:`MufcServer`), and
reruns Lloyd from them.  For ``"uniform"`` the server keeps
its samples and drops uniformly chosen samples of the bins that lost counts
(and draws new ones for bins that gained), so its dataset is distributed
exactly as a fresh draw.  After any sequence of removals the model (client
states, aggregate, server centroids) is distributed exactly as a ``fit`` on
the remaining data with the same ``gamma``.

Roles.  :class:`MufcClient` and :class:`MufcServer` hold the two sides of the
protocol and can be driven over any transport together with the SCMA
messages; :class:`FederatedKMeans` is an in-process driver with the usual
estimator interface.
"""
import copy
import io
import json
import numbers
import os
import tempfile
import threading
import stat
import time
import warnings
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._base import BaseEstimator
from .._validation import check_array, check_clients, check_features, check_ids, check_int
from ..exceptions import (CapacityError, DecodeError, InvalidIdError, InvalidInputError,
                         ModelFileError, NotFittedError, ProtocolError, PyfkmError)
from ..field import DEFAULT_PRIME
from ..core.kernels import lloyd as _lloyd, seeding as _seeding
from ..core.kmeans import KMeans, absolute_tolerance, lloyd, nearest_center, one_call_limit
from ..core.lattice import Lattice, row_keys
from ..rng import as_generator, copy_generator as _copy_generator, spawn_aside as _spawn_aside
from ..core.seeding import RemovableSeeding

__all__ = [
    "FederatedKMeans",
    "MufcClient",
    "MufcServer",
    "FederatedRemovalReport",
    "scale_to_box",
    "merge_sparse",
]


def scale_to_box(X, lower, upper, *, box=(-0.5, 0.5)):
    """Map data known to lie in ``[lower, upper]`` (public bounds) into ``box``.

    Use bounds that are public knowledge (a sensor's range, a score's
    scale), not the data's own extrema, which would leak them.

    >>> scale_to_box([[0.0, 10.0], [5.0, 0.0]], lower=0.0, upper=10.0).tolist()
    [[-0.5, 0.5], [0.0, -0.5]]
    """
    X = check_array(X, "X", allow_empty=True)
    lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), (X.shape[1],))
    hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), (X.shape[1],))
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
        raise InvalidInputError("bounds must be finite with upper > lower")
    if X.size and (np.any(X < lo) or np.any(X > hi)):
        raise InvalidInputError("X has values outside [lower, upper]")
    a, b = box
    return a + (X - lo) * ((b - a) / (hi - lo))


def _rng_state(gen):
    """JSON-able state of a numpy Generator (bit generator name and state)."""
    return gen.bit_generator.state


# merge_sparse sums at most this many rows in Python (the vector path's
# fixed cost is larger)
_SMALL_MERGE = 64
_INT64_MAX = (1 << 63) - 1


def merge_sparse(parts, d):
    """Sum sparse count vectors ``[(bins, counts), ...]`` in the clear.

    Returns ``(bins, counts)`` with distinct bins sorted lexicographically
    (the order :func:`pyfkm.secagg.secure_sum_sparse` returns).  Raises
    :class:`CapacityError` when a bin's total does not fit in int64.
    """
    bins = [np.asarray(b, dtype=np.int64).reshape(-1, d) for b, _ in parts]
    counts = [np.asarray(c, dtype=np.int64).ravel() for _, c in parts]
    if not bins or sum(b.shape[0] for b in bins) == 0:
        return np.zeros((0, d), dtype=np.int64), np.zeros(0, dtype=np.int64)
    B = np.concatenate(bins)
    C = np.concatenate(counts)
    big = max(int(C.max()), -int(C.min())) > _INT64_MAX // C.size   # a total might wrap
    if B.shape[0] <= _SMALL_MERGE or big:
        # a few rows (one client's centers), or huge counts: Python ints
        tot = {}
        for row, c in zip(map(tuple, B.tolist()), C.tolist()):
            tot[row] = tot.get(row, 0) + c
        items = sorted(kv for kv in tot.items() if kv[1] != 0)
        if any(not -_INT64_MAX - 1 <= kv[1] <= _INT64_MAX for kv in items):
            raise CapacityError("a bin's total count does not fit in int64")
        return (np.array([kv[0] for kv in items], dtype=np.int64).reshape(-1, d),
                np.array([kv[1] for kv in items], dtype=np.int64))
    if B.size and B.min() >= 0:
        _, first, inv = np.unique(row_keys(B), return_index=True, return_inverse=True)
        uniq = B[first]
    else:
        uniq, inv = np.unique(B, axis=0, return_inverse=True)
    tot = np.zeros(uniq.shape[0], dtype=np.int64)
    np.add.at(tot, inv.ravel(), C)
    keep = tot != 0
    return uniq[keep], tot[keep]


@dataclass(frozen=True)
class ClientRemovalReport:
    """What a removal did on one client."""

    n_removed: int
    reseeded: bool
    position: Optional[int]
    refit: bool
    seconds: float


class MufcClient:
    """Client side of MUFC: local seeding with exact removal, quantized counts.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Local data, inside the box ``[lower, upper]^d``.  Point ids are row
        positions, stable for the client's life.
    n_clusters : int
        Local number of centers ``K`` (``min(K, n_active)`` are used).
    gamma : float
        Grid step.
    lower, upper : float
        The public box.
    client_init : {"k-means++", "means", "full"}
        Seeding only (the paper's default: the centers are the seeds);
        ``"means"``: the centers are the means of the seeds' cells (one
        centroid step after the seeding: the weighted mean of a client's
        centers is then its data mean, which the server's clustering
        inherits); ``"full"``: seeding followed by Lloyd (paper App. M.3).
        After a removal the centers are recomputed from the (exactly
        unlearned) seeding, so every variant unlearns exactly.
    max_iter, tol : Lloyd parameters for ``client_init="full"``.
    random_state : None, int or Generator
    """

    def __init__(self, X, n_clusters, *, gamma, lower=-0.5, upper=0.5,
                 client_init="k-means++", max_iter=300, tol=1e-4, random_state=None):
        X = check_array(X, "X", allow_empty=True)
        if X.size and (np.any(X < lower) or np.any(X > upper)):
            raise InvalidInputError(
                f"client data must lie in the public box [{lower}, {upper}]^d; "
                "scale it with public bounds (pyfkm.mufc.scale_to_box)")
        if client_init not in ("k-means++", "means", "full"):
            raise InvalidInputError(
                f"client_init={client_init!r} must be 'k-means++', 'means' or 'full'")
        self.X = np.array(X, order="C", copy=True)   # own copy: removal erases rows
        self.n_clusters = int(n_clusters)
        self.gamma = float(gamma)
        self.lower, self.upper = float(lower), float(upper)
        self.n_bins_per_dim = _n_bins(self.lower, self.upper, self.gamma)
        self.client_init = client_init
        self.max_iter, self.tol = max_iter, tol
        self._rng = as_generator(random_state)
        self._lattice = Lattice(self.gamma)
        self.removed_ = np.zeros(X.shape[0], dtype=bool)
        self._fit_local()

    # -- local model -----------------------------------------------------------

    def _fit_local(self):
        """(Re)seed on the active points with k = min(K, n_active)."""
        self._active = np.flatnonzero(~self.removed_)
        k = min(self.n_clusters, self._active.size)
        self.k_ = k
        self._seeding = None
        if k > 0:
            self._seeding = RemovableSeeding(self.X[self._active], k, random_state=self._rng)
        self._pos = np.full(self.X.shape[0], -1, dtype=np.int64)
        self._pos[self._active] = np.arange(self._active.size)
        self._finish()

    def _finish(self):
        """Centers, sizes and the sparse count vector from the seeding state."""
        d = self.X.shape[1]
        if self._seeding is None:
            self.cluster_centers_ = np.zeros((0, d))
            self.cluster_sizes_ = np.zeros(0, dtype=np.int64)
        elif self.client_init == "k-means++":
            self.cluster_centers_ = self._seeding.cluster_centers_
            self.cluster_sizes_ = self._seeding.cluster_sizes_.astype(np.int64)
        elif self.client_init == "means":
            keep = ~self._seeding.removed_
            lab = self._seeding.labels_[keep]
            C = self._seeding.cluster_centers_
            order = np.argsort(lab, kind="stable")
            sizes = np.bincount(lab, minlength=C.shape[0])
            pos = sizes > 0
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])[pos]
            Xs = self.X[self._active[keep][order]]
            means = C.copy()
            means[pos] = np.add.reduceat(Xs, starts, axis=0) / sizes[pos, None]
            # a mean of points of the box stays in it (up to rounding)
            self.cluster_centers_ = np.clip(means, self.lower, self.upper)
            self.cluster_sizes_ = sizes.astype(np.int64)
        else:
            keep = ~self._seeding.removed_
            Xa = self.X[self._active][keep]
            c, labels, _, _ = lloyd(Xa, self._seeding.cluster_centers_,
                                    max_iter=self.max_iter, tol=self.tol)
            self.cluster_centers_ = c
            self.cluster_sizes_ = np.bincount(labels, minlength=c.shape[0]).astype(np.int64)
        self.bins_, self.counts_ = self._quantize()

    def _quantize(self):
        c, s = self.cluster_centers_, self.cluster_sizes_
        d = self.X.shape[1]
        if c.shape[0] == 0:
            return np.zeros((0, d), dtype=np.int64), np.zeros(0, dtype=np.int64)
        b = self._lattice.quantize(c - self.lower)
        np.clip(b, 0, self.n_bins_per_dim - 1, out=b)
        keep = s > 0
        return merge_sparse([(b[keep], s[keep])], d)

    @property
    def n_active_(self):
        return int((~self.removed_).sum())

    def _export(self, prefix, arrays):
        """Header dict; arrays go into ``arrays`` under ``prefix``."""
        # copies: a removal erases rows in place, and a save or a pickle
        # writes these arrays after the estimator's lock is released
        arrays[prefix + "X"] = self.X.copy()
        arrays[prefix + "removed"] = self.removed_.copy()
        arrays[prefix + "active"] = self._active
        head = {"n_clusters": self.n_clusters, "gamma": self.gamma, "lower": self.lower,
                "upper": self.upper, "client_init": self.client_init,
                "max_iter": self.max_iter, "tol": self.tol, "k": self.k_,
                "rng": _rng_state(self._rng), "seeding": None}
        if self._seeding is not None:
            st = self._seeding._export()
            head["seeding"] = {"n_active": st.pop("n_active"), "n_positive": st.pop("n_positive")}
            for name, a in st.items():
                arrays[prefix + "s." + name] = a
        return head

    @classmethod
    def _restore(cls, head, prefix, arrays, rng=None):
        """Rebuild from :meth:`_export` output (validated by the caller:
        see ``_ModelReader``); ``rng`` replaces the header's generator."""
        obj = cls.__new__(cls)
        obj.X = np.array(arrays[prefix + "X"], order="C", copy=True)
        obj.removed_ = arrays[prefix + "removed"].astype(bool)
        obj._active = arrays[prefix + "active"].astype(np.int64)
        obj.n_clusters = int(head["n_clusters"])
        obj.gamma, obj.lower, obj.upper = (float(head[k]) for k in ("gamma", "lower", "upper"))
        obj.n_bins_per_dim = _n_bins(obj.lower, obj.upper, obj.gamma)
        obj.client_init = head["client_init"]
        obj.max_iter, obj.tol = int(head["max_iter"]), float(head["tol"])
        obj._rng = _rng_from_state(head["rng"]) if rng is None else rng
        obj._lattice = Lattice(obj.gamma)
        obj.k_ = int(head["k"])
        obj._seeding = None
        if head["seeding"] is not None:
            st = dict(head["seeding"])
            for name in ("removed", "mind", "labels", "centers", "counts", "wsizes"):
                st[name] = arrays[prefix + "s." + name]
            obj._seeding = RemovableSeeding._restore(obj.X[obj._active], obj.k_, obj._rng, st)
        obj._pos = np.full(obj.X.shape[0], -1, dtype=np.int64)
        obj._pos[obj._active] = np.arange(obj._active.size)
        obj._finish()
        return obj

    def sparse_counts(self):
        """This client's sparse count vector ``(bins, counts)``."""
        return self.bins_, self.counts_

    # -- unlearning ---------------------------------------------------------

    def remove(self, ids):
        """Remove local points (one id or a batch) exactly and erase them.

        Raises :class:`InvalidIdError` (nothing changes) for unknown,
        repeated or already removed ids.
        """
        new, report, arr = self._removal(ids)
        self._commit(new, arr)
        return report

    def _removal(self, ids):
        """Prepare a removal without changing this client: returns
        ``(client, report, ids)``, the client after the removal (sharing
        this one's data buffers, which :meth:`_commit` erases)."""
        t0 = time.perf_counter()
        arr = np.atleast_1d(check_ids(ids))
        n = self.X.shape[0]
        if arr.size == 0:
            return self, ClientRemovalReport(0, False, None, False, 0.0), arr
        if arr.min() < 0 or arr.max() >= n:
            raise InvalidIdError(f"ids must lie in [0, {n}); nothing was removed")
        if np.unique(arr).size != arr.size:
            raise InvalidIdError("repeated ids; nothing was removed")
        if self.removed_[arr].any():
            bad = int(arr[self.removed_[arr]][0])
            raise InvalidIdError(f"id {bad} was already removed; nothing was removed")
        new = self._clone()
        new.removed_[arr] = True
        if self.n_active_ - arr.size < self.k_:
            # a fit on the remaining data would use fewer centers: refit
            new._fit_local()
            report = ClientRemovalReport(int(arr.size), True, 0, True, 0.0)
        else:
            rep, _ = new._seeding._remove(self._pos[arr])
            new._finish()
            report = ClientRemovalReport(int(arr.size), rep.reseeded, rep.position, False, 0.0)
        return new, _replace_seconds(report, time.perf_counter() - t0), arr

    def _clone(self):
        """A copy with its own generator and state arrays; the data buffers
        (``X`` and the seeding's copy of the active rows) are shared."""
        obj = copy.copy(self)
        obj._rng = _copy_generator(self._rng)
        obj.removed_ = self.removed_.copy()
        if self._seeding is not None:
            obj._seeding = self._seeding._clone(obj._rng)
        return obj

    def _commit(self, new, ids):
        """Become ``new`` (from :meth:`_removal`) and erase the removed rows
        ``ids`` from every buffer: the data, the seeding's copy of it (the
        one before a refit too) and nothing else holds a removed value."""
        if new is self:
            return
        old_seeding, old_pos = self._seeding, self._pos
        self.__dict__.update(new.__dict__)
        self.X[ids] = 0.0
        if old_seeding is not None:
            pos = old_pos[ids]
            old_seeding._state.X[pos[pos >= 0]] = 0


    def _erase(self):
        """Zero every buffer holding this client's rows (a departing or
        dropped client)."""
        self.X[...] = 0.0
        if self._seeding is not None:
            self._seeding._state.X[...] = 0


# bins per dimension: at most this many (a smaller gamma is a mistake: the
# grid would be far finer than float64 data)
_MAX_BINS = 1 << 40


def _n_bins(lower, upper, gamma):
    """Bins per dimension of the grid of step ``gamma`` on ``[lower, upper]``:
    ``ceil((upper - lower) / gamma)`` (a ratio within 1e-12 above an integer
    rounds to it), and at least 1."""
    return max(1, int(np.ceil((upper - lower) / gamma - 1e-12)))


def _replace_seconds(report, seconds):
    return ClientRemovalReport(report.n_removed, report.reseeded, report.position,
                               report.refit, seconds)


def _lloyd_run(P, c0, w, max_iter, tol_abs, trace=None):
    """One init's Lloyd run: ``(centers, inertia, n_iter)``.

    Without ``trace``: :func:`pyfkm.kmeans.lloyd`, exactly as
    :meth:`pyfkm.kmeans.KMeans.fit` runs it.  With a
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
    server_points : {"uniform", "centers"}
    n_init, max_iter, tol : k-means parameters.
    random_state : None, int or Generator

    Notes
    -----
    With ``server_points="centers"`` the server runs the ``n_init``
    initialisations of :class:`pyfkm.kmeans.KMeans` itself (same generator
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
    law (the same argument as :class:`pyfkm.seeding.RemovableSeeding`'s; the
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

    def __init__(self, n_clusters, *, gamma, n_features, lower=-0.5,
                 server_points="uniform", n_init=10, max_iter=300, tol=1e-4,
                 random_state=None):
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

    def update(self, bins, counts):
        """Take a new aggregate and recluster if it changed.  Returns whether
        the model changed.

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

    def points(self):
        """The server's dataset and weights (None for unit weights)."""
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
        :meth:`pyfkm.kmeans.KMeans.fit` with each init's seeds kept.  The
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
            ids, _, _ = _seeding.seed(P, w, k, self._rng)
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


def _fit_client_task(X, n_clusters, kw, rng_state):
    """A client's local fit, runnable on any executor (threads, processes,
    Dask): returns the client's state as plain arrays and a JSON-able dict,
    which the driver turns back into a :class:`MufcClient`."""
    c = MufcClient(X, n_clusters, random_state=_rng_from_state(rng_state), **kw)
    arrays = {}
    head = c._export("", arrays)
    del arrays["X"]
    return head, arrays


@dataclass(frozen=True)
class FederatedRemovalReport:
    """What a federated removal cost.

    Attributes
    ----------
    clients : tuple of int
        Clients whose data changed.
    reseeded : bool
        Whether some client resampled centers.
    position : int or None
        Earliest reseeding position over the clients (None if none reseeded).
    aggregate_changed, server_reclustered : bool
    client_seconds, aggregation_seconds, server_seconds : float
        Online time of each stage.
    offline_seconds : float
        Time of the offline phase run after the round: every participant
        precomputes its mask for the next round (secure aggregation only).
    bytes_sent : int
        Bytes of all messages of the aggregation round (0 in the clear).
    incremental_decode : bool
    dropped : tuple of int
        Clients that went silent in the round.  In a removal round an
        unchanged client that drops changes nothing (its contribution is
        the one already in the aggregate); a removing client that drops
        makes the removal fail.
    """

    clients: tuple
    reseeded: bool
    position: Optional[int]
    aggregate_changed: bool
    server_reclustered: bool
    client_seconds: float
    aggregation_seconds: float
    server_seconds: float
    bytes_sent: int
    incremental_decode: bool = False
    offline_seconds: float = 0.0
    details: tuple = field(default=(), repr=False)
    dropped: tuple = ()


class _ClearAggregator:
    """Sums in the clear (``secure=False``), with the secure path's rule on
    dropouts: fewer than ``threshold`` survivors fail the round."""

    def __init__(self, d, threshold=1):
        self.d = d
        self.threshold = threshold
        self.offline_seconds = 0.0

    def mark(self, i):
        pass

    def invalidate(self, participants):
        pass

    def forget(self, changed, departed=()):
        pass

    def round(self, clients, participants, silent=(), prepare_next=True, first=False):
        t0 = time.perf_counter()
        parts = [i for i in participants if i not in set(silent)]
        if len(parts) < self.threshold:
            raise ProtocolError(f"{len(parts)} clients survive, below the threshold "
                                f"{self.threshold}")
        bins, counts = merge_sparse([clients[i].sparse_counts() for i in parts], self.d)
        return bins, counts, 0, False, time.perf_counter() - t0, tuple(sorted(silent))


def resolve_neighbors(neighbors, n_clients):
    """The graph degree of a run of ``n_clients``: ``"auto"`` is the complete
    graph up to 64 clients and beyond, the sparse ring of
    :func:`pyfkm.secagg._masking.sparse_degree` (36 neighbours at 1000
    clients, 40 at 10,000: a client's work grows like log L; sized for up to
    5% colluding clients and 10% dropouts); an int is taken as given (even;
    0 means complete)."""
    if isinstance(neighbors, str) and neighbors == "auto":
        if n_clients <= 64:
            return 0
        from ..secagg import sparse_degree
        return sparse_degree(n_clients)
    if not isinstance(neighbors, numbers.Integral) or isinstance(neighbors, bool) \
            or neighbors < 0 or neighbors % 2:
        raise InvalidInputError(f"neighbors={neighbors!r} must be 'auto', 0 (complete graph) "
                                "or an even int >= 2")
    return int(neighbors)


def resolve_threshold(threshold, n_clients):
    """The run's threshold: a strict majority by default (two sets of ``t``
    clients then always share one, which the consistency rule needs), else
    the given int (a smaller one is accepted and weakens that rule; see the
    threat model)."""
    if threshold is None:
        return n_clients // 2 + 1
    if not isinstance(threshold, numbers.Integral) or isinstance(threshold, bool) \
            or not 1 <= threshold:
        raise InvalidInputError(f"threshold={threshold!r} must be None or an int >= 1")
    return min(int(threshold), n_clients) if n_clients == 1 else int(threshold)


class _SecureAggregator:
    """Drives the SCMA roles in process, every message through its bytes
    (broadcasts are parsed once for all clients).

    A round has an offline part (key shares: no data involved) and an
    online part (masked inputs, unmasking, decoding).  After each round the
    next round's offline part is run at once over the same participants
    (timed as ``offline_seconds``), and the clients precompute their masks
    for a one-bin difference round, so that an unlearning request pays only
    the online part.

    After the first round, a round in which few clients changed their data
    (an unlearning request) is a *difference round*: every participant
    sends its change since the last round, under fresh masks sized for the
    number of bins that changed (the changed clients report it; the server
    learns that number from the decoded change anyway).  The decoded
    aggregate is the same as a full round's; when the change is too large
    to be worth it, or the difference round fails, a full round runs.

    A client that goes silent in a round is recovered from: the round
    completes over the survivors (``dropped`` names the others).  In a
    difference round an unchanged client that drops changes nothing (its
    change is zero); a changed client that drops makes the round fail.
    """

    def __init__(self, d, n_bins, max_nonzeros, client_ids, modulus, *, threshold=None,
                 neighbors="auto", progress=False, precompute_nonzeros=1):
        from .. import secagg
        from ..secagg import RoundTrip, setup_in_process
        self.secagg = secagg
        self._RoundTrip = RoundTrip
        self.params = secagg.ScmaParams.create(d, n_bins, max_nonzeros, modulus=modulus)
        L = len(client_ids)
        t = resolve_threshold(threshold, L)
        if t > L:
            raise InvalidInputError(f"threshold={t} exceeds the {L} participating clients")
        # roles (a dict by client id) only for the clients that take part:
        # a departed client costs no key agreement
        self.server, self.roles = setup_in_process(
            self.params, L, client_ids=client_ids, threshold=t,
            degree=resolve_neighbors(neighbors, L))
        self._dirty = set(self.roles)
        self._precompute_nonzeros = int(precompute_nonzeros)
        self._prepared = None      # a RoundTrip whose offline part ran
        self._last = None          # participants of the last decoded round
        self.progress = progress
        self.offline_seconds = 0.0

    def mark(self, i):
        self._dirty.add(i)

    def invalidate(self, participants):
        """After a round whose result is not committed: every participant
        sets its data again and the next round is a full one."""
        self._dirty.update(participants)
        self._last = None
        self._prepared = None

    def forget(self, changed, departed=()):
        """After a committed round: the clients whose data changed drop
        what they sent in the rounds it replaced (the others sent the same
        data in every round), departed clients all of theirs."""
        last = self.server.last_decoded
        for i in changed:
            if last is not None:
                self.roles[i].forget_rounds_before(last[0])
        for i in departed:
            self.roles[i].forget_data()

    def _delta_size(self, changed):
        """Bins of the difference round for these changed clients (0: a
        full round is as cheap, or a client cannot tell its change)."""
        last = self.server.last_decoded
        if last is None:
            return 0
        try:
            m = sum(self.roles[i].changed_bins(last[0]) for i in changed)
        except ProtocolError:
            return 0
        m = max(m, 1)
        words = self.secagg._roles.delta_params(self.params, m).message_words
        return m if 2 * words <= self.params.message_words else 0

    def _trip(self, parts, silent):
        trip = self._prepared
        self._prepared = None
        if trip is None or trip.parts != parts or silent:
            trip = self._RoundTrip(self.server, self.roles, parts, silent=silent,
                                   progress=self.progress).share()
        return trip

    def round(self, clients, participants, silent=(), prepare_next=True, first=False):
        """Run one round over ``participants`` (``silent``: clients that go
        silent after sharing keys); returns (bins, counts, bytes, incremental
        decode, online seconds, dropped).  ``prepare_next``: run the next
        round's offline part afterwards (a fit does not: its next round is
        a removal's, prepared when the first removal asks).  ``first``: the
        run's first round (a fit or a join), whose dropped clients leave the
        model; in any later full round a dropout would drop a client's whole
        vector from a model that still lists it, so it raises."""
        t0 = time.perf_counter()
        self.offline_seconds = 0.0
        parts0 = tuple(sorted(participants))
        if self._prepared is None and self._last == parts0 and not silent and prepare_next:
            self.precompute(parts0)            # data-independent: offline
            t0 += self.offline_seconds
        changed = sorted(self._dirty & set(participants))
        for i in changed:
            if i not in silent:
                self.roles[i].set_data(*clients[i].sparse_counts())
        parts = tuple(sorted(participants))
        dn = self._delta_size(changed) if self._last == parts and not silent else 0
        res = None
        nbytes = 0
        if dn:
            trip = self._trip(parts, silent)
            try:
                res = trip.inputs(dn).finish()
                if set(changed) & set(res.dropped):
                    raise ProtocolError(
                        f"clients {sorted(set(changed) & set(res.dropped))} changed their "
                        "data and dropped out of the round")
            except (DecodeError, CapacityError, ProtocolError):
                res = None         # the change did not fit: a full round below
            nbytes += trip.bytes_up + trip.bytes_down
        if res is None:
            trip = self._trip(parts, silent)
            res = trip.inputs(0).finish()
            nbytes += trip.bytes_up + trip.bytes_down
            if res.dropped and not first:
                self.invalidate(parts)
                raise ProtocolError(
                    f"clients {list(res.dropped)} dropped out of a full round; nothing changed "
                    "(retry)")
        # only now: a round that raised leaves the clients marked changed
        self._dirty.difference_update(changed)
        # dropped clients keep what the aggregate holds for them (an unchanged
        # client's change is zero): difference rounds go on from here, and a
        # client that missed rounds answers from the last round it was summed in
        self._last = parts
        t_online = time.perf_counter() - t0
        offline = self.offline_seconds
        if prepare_next:
            self.precompute(parts)
            offline += self.offline_seconds
        self.offline_seconds = offline
        return res.bins, res.counts, nbytes, res.report.incremental, t_online, res.dropped

    def precompute(self, participants):
        """Offline phase (timed separately as ``offline_seconds``): the next
        round's key shares over ``participants``, and every client's mask
        for a difference round of ``precompute_nonzeros`` bins; a round
        with a larger message computes its masks online."""
        t0 = time.perf_counter()
        self._prepared = None
        try:
            trip = self._RoundTrip(self.server, self.roles, participants).share()
        except ProtocolError:
            trip = None                # the online part will try again
        if trip is not None and not trip.failed:
            dn = min(self._precompute_nonzeros, self.params.max_nonzeros)
            for i in trip.sharers:
                self.roles[i].precompute_mask(dn)
            self._prepared = trip
        self.offline_seconds = time.perf_counter() - t0


class FederatedKMeans(BaseEstimator):
    """Federated k-means with secure aggregation and exact unlearning (MUFC).

    Parameters
    ----------
    n_clusters : int, default=8
        ``K``: centers per client and at the server.
    gamma : float or "auto", default="auto"
        Grid step; "auto" is ``(upper - lower) / sqrt(n)`` for the ``n``
        points at fit (the paper's ``1/sqrt(n)`` on the unit box), then
        fixed for the model's life (``gamma_``): unlearning is exact with
        respect to a fit with that ``gamma``.
    server_points : {"uniform", "centers"}, default="uniform"
    client_init : {"k-means++", "means", "full"}, default="k-means++"
        What a client sends: its k-means++ seeds (the paper's default), the
        means of the seeds' cells (``"means"``: same cost, usually a lower
        loss), or the centers after Lloyd (``"full"``); see
        :class:`MufcClient`.  Every variant unlearns exactly.
    secure : bool, default=True
        Aggregate through SCMA; False sums in the clear (same model for the
        same seed).
    n_init, max_iter, tol : server k-means parameters (and client Lloyd for
        ``client_init="full"``).
    bounds : (float, float), default=(-0.5, 0.5)
        The public box every client's data must lie in.
    modulus : int, optional
        SCMA prime (default :data:`pyfkm.field.DEFAULT_PRIME`).
    random_state : None, int, SeedSequence or Generator
        Seeds the algorithm (local seeding, server sampling and k-means):
        the same seed gives the same model.  It never seeds key material:
        keys, run ids and masks come from the operating system, fresh for
        every run and round (see ``docs/threat_model.md``).
    executor : concurrent.futures.Executor, optional
        Runs the clients' local fits (e.g. a ``ThreadPoolExecutor``, a
        ``ProcessPoolExecutor`` or Dask's ``Client.get_executor()``); the
        model is identical to the in-process one.  Each task returns the
        client's state as plain arrays (no live objects cross the executor).
    threshold : int, optional
        Fewest clients any secure round may have; clients refuse rounds
        below it, and a round completes when at most ``L - threshold``
        clients drop.  Default: a strict majority of the participating
        clients.
    neighbors : "auto" or int, default="auto"
        Neighbours per client in the secure aggregation graph (even; 0 is
        every pair).  "auto": every pair up to 64 clients, else the
        SecAgg+ ring sized for at most 5% colluding clients and 10% dropouts
        (36 neighbours at 1000 clients: a client's cost grows like log L).
        The guarantee against ``threshold - 1`` colluders holds for the
        complete graph; the sparse graph's holds for the stated fractions
        (see ``docs/threat_model.md``).
    client_timeout : float, optional
        Seconds to wait for a client's local fit on the ``executor``; a
        client whose task times out or raises is dropped from the round
        (the model is the one fitted without it; ``dropped_clients_``).
        None waits for every client.
    progress : bool or callable, default=False
        Report progress of the clients' fits and of the secure rounds
        (:mod:`pyfkm._progress`: a tqdm bar when installed).

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features)
    client_centers_ : list of ndarray
    client_sizes_ : list of ndarray
    aggregate_bins_, aggregate_counts_ : the decoded aggregate
    gamma_ : float
    n_bins_per_dim_ : int
    n_iter_ : int (server Lloyd iterations of the best init)
    bytes_sent_ : int (bytes of the fit's aggregation round)
    dropped_clients_ : tuple of int
        Clients whose local fit failed or timed out, or whose message did
        not arrive, during ``fit`` (or a later :meth:`add_clients`): the
        model is the model fitted without them.  :meth:`add_clients` lets
        them join later.

    Notes
    -----
    **What is kept, what is erased.**  Each participating client keeps its
    own copy of its data (never the caller's array: ``fit`` copies), its
    removable seeding state (center ids, per-point labels and squared
    distances, a copy of the rows it seeds), its quantized count vector and
    its secure-aggregation state (keys, the vector sent in the last decoded
    round).  The server keeps the decoded aggregate (bins and counts), its
    sample points or bin centres and the model.  :meth:`remove` erases the
    removed rows from every buffer that held them (their rows become zeros;
    labels -1, distances 0), recomputes everything derived from them (the
    client's centers, sizes and vector; the aggregate; the server's samples
    of bins that lost counts and its model) and drops what the clients sent
    in the rounds the new one replaced.  :meth:`remove_clients` drops the
    departed clients' data, local models and aggregation data entirely
    (their entries in ``client_centers_`` become empty arrays).  The same
    holds for pickles and for files written by :meth:`save`: the removed
    values are in none of them.  Kept on purpose: the removed ids (a mask,
    so that ids stay valid) and the counts of rounds and bytes.

    **Failures.**  ``fit``, ``remove`` and ``remove_clients`` build their new
    state aside and commit it only when every stage (clients, secure round,
    server) succeeded; a call that raises leaves the model exactly as it
    was (a failed secure round makes the next round a full one).

    **Threads.**  Calls that change the model (``fit``, ``remove``,
    ``remove_clients``) and ``save`` and pickling take a lock per object,
    so they may come from several threads; they run one at a time.

    **Copies and files.**  ``pickle`` and ``copy.deepcopy`` go through the
    same state as :meth:`save` and the same validation as :meth:`load`,
    without key material (a copy runs the key agreement again before its next
    secure round) or the ``executor`` (a live resource: set it again); a
    copy continues unlearning with results identical to the original's.
    :meth:`load` trusts nothing in the file (see its Raises section).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> clients = [rng.uniform(-0.5, 0.5, size=(50, 2)) for _ in range(3)]
    >>> fkm = FederatedKMeans(3, server_points="centers", random_state=0).fit(clients)
    >>> fkm.cluster_centers_.shape
    (3, 2)
    >>> rep = fkm.remove(0, [4, 5])
    >>> rep.clients, int(fkm.aggregate_counts_.sum())
    ((0,), 148)
    """

    def __init__(self, n_clusters=8, *, gamma="auto", server_points="uniform",
                 client_init="k-means++", secure=True, n_init=10, max_iter=300, tol=1e-4,
                 bounds=(-0.5, 0.5), modulus=None, random_state=None, executor=None,
                 threshold=None, neighbors="auto", client_timeout=None, progress=False):
        self.n_clusters = n_clusters
        self.gamma = gamma
        self.server_points = server_points
        self.client_init = client_init
        self.secure = secure
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.bounds = bounds
        self.modulus = modulus
        self.random_state = random_state
        self.executor = executor
        self.threshold = threshold
        self.neighbors = neighbors
        self.client_timeout = client_timeout
        self.progress = progress

    def _check_params(self, n, d):
        K = self.n_clusters
        if not isinstance(K, numbers.Integral) or isinstance(K, bool) or K < 1:
            raise InvalidInputError(f"n_clusters={K!r} must be an int >= 1")
        lo, hi = (float(v) for v in self.bounds)
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
            raise InvalidInputError(f"bounds={self.bounds!r} must be finite with upper > lower")
        g = self.gamma
        if isinstance(g, str):
            if g != "auto":
                raise InvalidInputError(f"gamma={g!r} must be a positive float or 'auto'")
            g = (hi - lo) / np.sqrt(n)
        if not isinstance(g, numbers.Real) or not np.isfinite(g) or g <= 0:
            raise InvalidInputError(f"gamma={g!r} must be a positive float or 'auto'")
        if (hi - lo) / g > _MAX_BINS:
            raise InvalidInputError(
                f"gamma={g!r} gives more than {_MAX_BINS} bins per dimension on "
                f"bounds={self.bounds!r}; use a larger gamma")
        check_int(self.n_init, "n_init", 1)
        check_int(self.max_iter, "max_iter", 1)
        if self.executor is not None and not callable(getattr(self.executor, "submit", None)):
            raise InvalidInputError("executor must be a concurrent.futures.Executor "
                                    "(an object with submit) or None")
        resolve_neighbors(self.neighbors, 1)
        resolve_threshold(self.threshold, 1)
        ct = self.client_timeout
        if ct is not None and (not isinstance(ct, numbers.Real) or isinstance(ct, bool)
                               or not ct > 0):
            raise InvalidInputError(f"client_timeout={ct!r} must be None or a positive number")
        return int(K), float(g), lo, hi

    # -- locking and copies ------------------------------------------------------

    @property
    def _lock(self):
        # created on first use (the constructor holds hyper-parameters only);
        # dict.setdefault is atomic, so two threads get the same lock
        return self.__dict__.setdefault("_lock_obj", threading.RLock())

    def __getstate__(self):
        """Pickle through the same arrays and header as :meth:`save` (no
        key material, nothing of a removed row), read back by the same
        validating loader; an executor is a live resource and is not kept."""
        with self._lock:
            state = {k: v for k, v in self.__dict__.items() if k != "_lock_obj"}
            if not hasattr(self, "_server"):
                state["executor"] = None
                return {"params": state}
            head, arrays = self._to_arrays()
            params = self.get_params()
            params["executor"] = None
            return {"params": params, "head": head, "arrays": arrays}

    def __setstate__(self, state):
        if "head" not in state:
            self.__dict__.update(state["params"])
            return
        obj = type(self)._from_arrays(state["head"], state["arrays"], "pickle")
        obj.set_params(**state["params"])
        self.__dict__.update(obj.__dict__)
        self.__dict__.pop("_lock_obj", None)

    # -- fit and unlearning ------------------------------------------------------

    def fit(self, clients, y=None):
        """Fit on a sequence of client datasets (2-D arrays, one per client).

        Parameters
        ----------
        clients : sequence of array-like of shape (n_l, n_features)
            One array per client, inside the box ``bounds``; copied.
        y : ignored

        Returns
        -------
        self

        Raises
        ------
        InvalidInputError
            Bad data or parameters.  A fit that raises (at any stage: the
            clients, the secure round, the server) leaves a fitted model
            exactly as it was.
        """
        with self._lock:
            state, commit_rng = self._fit_state(clients)
            state.update(self._published(state["_server"], state["_clients"],
                                         state["n_features_in_"]))
            stale = [k for k in self.__dict__
                     if k.endswith("_") and not k.startswith("_") and k not in state]
            # one dict update: a predict running meanwhile sees the old
            # model or the new one, never a mix
            self.__dict__.update(state)
            for k in stale:
                del self.__dict__[k]
            commit_rng()
            return self

    def _fit_state(self, clients):
        """The fitted state of a fit on ``clients``, built aside (self is
        not touched)."""
        arrs = check_clients(clients)
        n, d = sum(a.shape[0] for a in arrs), arrs[0].shape[1]
        K, g, lo, hi = self._check_params(n, d)
        rng = as_generator(self.random_state)
        gens, commit_rng = _spawn_aside(rng, len(arrs) + 2)
        t0 = time.perf_counter()
        kw = dict(gamma=g, lower=lo, upper=hi, client_init=self.client_init,
                  max_iter=self.max_iter, tol=self.tol)
        clients_, failed = self._fit_clients(arrs, K, kw, gens)
        t1 = time.perf_counter()
        B = _n_bins(lo, hi, g)
        L = len(arrs)
        agg_rng = gens[L + 1]
        participants = list(range(L))
        agg = self._make_aggregator(d, B, [a.shape[0] for a in arrs], participants)
        server = MufcServer(K, gamma=g, n_features=d, lower=lo,
                            server_points=self.server_points, n_init=self.n_init,
                            max_iter=self.max_iter, tol=self.tol, random_state=gens[L])
        bins, counts, nbytes, _, t_agg, dropped = agg.round(
            clients_, participants, silent=sorted(failed), prepare_next=False, first=True)
        t2 = time.perf_counter()
        server.update(bins, counts)
        t3 = time.perf_counter()
        gone = set(dropped) | set(failed)
        for i in gone:
            if clients_[i] is not None:
                clients_[i]._erase()
            clients_[i] = None
        if gone:
            agg.forget((), departed=sorted(gone))
        return {"_clients": clients_, "_server": server, "_agg": agg, "_agg_rng": agg_rng,
                "_participants": [i for i in participants if i not in gone],
                "dropped_clients_": tuple(sorted(gone)),
                "gamma_": g, "n_bins_per_dim_": B,
                "n_features_in_": d, "bytes_sent_": nbytes,
                "fit_seconds_": {"clients": t1 - t0, "aggregation": t2 - t1,
                                 "server": t3 - t2}}, commit_rng

    def _fit_clients(self, arrs, K, kw, gens, first=0):
        """The clients' local fits (``MufcClient`` per array, or None for a
        client whose task raised or timed out) and the failures.  Data the
        driver can check (the box) is checked here, for every client, before
        any task runs: bad input raises, only a failing task drops."""
        from .._progress import progress_bar
        lo, hi = kw["lower"], kw["upper"]
        for i, X in enumerate(arrs):
            if X.size and (float(X.min()) < lo or float(X.max()) > hi):
                raise InvalidInputError(
                    f"clients[{first + i}] has values outside bounds=({lo}, {hi}); scale the "
                    "features into the box first (e.g. pyfkm.mufc.scale_to_box)")
        bar = progress_bar(self.progress, len(arrs), "client fits")
        clients_, failed = [], {}
        try:
            if self.executor is None:
                for i, X in enumerate(arrs):
                    clients_.append(MufcClient(X, K, random_state=gens[i], **kw))
                    bar.update()
                return clients_, failed
            futures = [self.executor.submit(_fit_client_task, X, K, kw, _rng_state(gens[i]))
                       for i, X in enumerate(arrs)]
            deadline = None if self.client_timeout is None else \
                time.monotonic() + float(self.client_timeout)
            for i, (X, fut) in enumerate(zip(arrs, futures)):
                try:
                    wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                    head, arrays = fut.result(timeout=wait)
                except Exception as e:            # noqa: BLE001 - a failed client drops
                    fut.cancel()
                    failed[first + i] = e
                    clients_.append(None)
                    warnings.warn(f"client {first + i} dropped from the round: its local fit "
                                  f"failed ({type(e).__name__}: {e})", RuntimeWarning,
                                  stacklevel=4)
                    bar.update()
                    continue
                arrays["X"] = X
                clients_.append(MufcClient._restore(head, "", arrays))
                bar.update()
            return clients_, failed
        finally:
            bar.close()

    def _publish(self):
        self.__dict__.update(self._published(self._server, self._clients,
                                             self.n_features_in_))

    @staticmethod
    def _published(s, clients, d):
        """The public fitted attributes of a server and clients."""
        return {"cluster_centers_": s.cluster_centers_, "n_iter_": s.n_iter_,
                "aggregate_bins_": s.bins_, "aggregate_counts_": s.counts_,
                "client_centers_": [np.zeros((0, d)) if c is None else c.cluster_centers_
                                    for c in clients],
                "client_sizes_": [np.zeros(0, dtype=np.int64) if c is None
                                  else c.cluster_sizes_ for c in clients]}

    def _check_fitted(self):
        if not hasattr(self, "_server"):
            raise NotFittedError("FederatedKMeans is not fitted; call fit first")

    def _update(self, clients, participants, changed, client_reports, t_client, agg=None,
                keep=None):
        """Run the round and the server update for ``clients`` (some of them
        new objects) over ``participants``; commit only if both succeed.
        Returns the report; on error nothing is committed and the
        aggregator is told to start over with a full round."""
        agg = self._agg if agg is None else agg
        for i in changed:
            agg.mark(i)
        try:
            bins, counts, nbytes, inc, t_agg, dropped = agg.round(clients, participants)
            lost = sorted(set(dropped) & set(changed if keep is None else keep))
            if lost:
                # checked before the server changes: a changed client that
                # dropped (its change is missing), or a client that must not
                # leave silently
                raise ProtocolError(f"clients {lost} dropped out of the round; nothing "
                                    "changed (retry)")
            t0 = time.perf_counter()
            changed_model = self._server.update(bins, counts)
            t_server = time.perf_counter() - t0
        except BaseException:
            agg.invalidate(self._participants)
            raise
        positions = [r.position for r in client_reports if r.reseeded and r.position is not None]
        return FederatedRemovalReport(
            clients=tuple(changed), reseeded=any(r.reseeded for r in client_reports),
            position=min(positions) if positions else None,
            aggregate_changed=changed_model, server_reclustered=changed_model,
            client_seconds=t_client, aggregation_seconds=t_agg, server_seconds=t_server,
            bytes_sent=nbytes, incremental_decode=inc,
            offline_seconds=getattr(agg, "offline_seconds", 0.0),
            details=tuple(client_reports), dropped=tuple(dropped))

    def remove(self, client, ids):
        """Remove points ``ids`` (one or many) of client ``client`` and erase them.

        Parameters
        ----------
        client : int
            Index of the client in the list given to :meth:`fit`.
        ids : int or sequence of int
            Row positions in that client's data.

        Returns
        -------
        FederatedRemovalReport

        Raises
        ------
        InvalidIdError
            Unknown, repeated or already removed ids, or a client that left.
        NotFittedError
            Before :meth:`fit`.

        A removal that raises (bad ids, a failed secure round or server
        update) changes nothing; after one that succeeds no value of the
        removed rows remains in the object, its pickle or its saved file.
        """
        with self._lock:
            self._check_fitted()
            if not isinstance(client, numbers.Integral) or isinstance(client, bool) \
                    or not 0 <= client < len(self._clients):
                raise InvalidIdError(f"unknown client {client!r}")
            client = int(client)
            if client not in self._participants:
                raise InvalidIdError(f"client {client} has left the federation")
            t0 = time.perf_counter()
            old = self._clients[client]
            new, rep, arr = old._removal(ids)
            t_client = time.perf_counter() - t0
            clients = list(self._clients)
            clients[client] = new
            report = self._update(clients, self._participants, [client], [rep], t_client)
            # commit (nothing below raises)
            old._commit(new, arr)
            self._agg.forget([client])
            self._publish()
            return report

    def remove_clients(self, ids):
        """Remove whole clients and erase their data.

        Parameters
        ----------
        ids : int or sequence of int
            Client indices; the next rounds run over the remaining roster.

        Returns
        -------
        FederatedRemovalReport

        Raises
        ------
        InvalidIdError
            Unknown, repeated or already removed clients, or all of them.

        A departed client's data, local model and secure-aggregation data
        are dropped (its slot in ``client_centers_`` becomes empty); a call
        that raises changes nothing.
        """
        with self._lock:
            self._check_fitted()
            arr = np.atleast_1d(check_ids(ids))
            if np.unique(arr).size != arr.size:
                raise InvalidIdError("repeated client ids; nothing was removed")
            bad = [int(i) for i in arr if int(i) not in self._participants]
            if bad:
                raise InvalidIdError(
                    f"clients {bad} are unknown or already removed; nothing was removed")
            if arr.size == len(self._participants):
                raise InvalidIdError("cannot remove every client")
            gone = set(arr.tolist())
            participants = [i for i in self._participants if i not in gone]
            # a new run over the remaining clients: within a run, clients
            # refuse to resend unchanged data to a smaller set (differencing)
            agg = self._make_aggregator(
                self.n_features_in_, self.n_bins_per_dim_,
                [None if c is None else c.X.shape[0] for c in self._clients], participants)
            # never silently: a client that dropped would leave the model (and
            # the server would learn its vector with the departing ones)
            report = self._update(self._clients, participants, [], [], 0.0, agg=agg,
                                  keep=participants)
            # commit
            old_agg = self._agg
            self._participants = [i for i in participants if i not in set(report.dropped)]
            clients = list(self._clients)
            for i in sorted(gone | set(report.dropped)):
                clients[i]._erase()
                clients[i] = None
            self._clients = clients
            self._agg = agg
            old_agg.forget((), departed=[i for i in old_agg.roles] if hasattr(old_agg, "roles")
                           else ())
            agg.forget((), departed=sorted(set(report.dropped)))
            self.dropped_clients_ = tuple(sorted(set(self.dropped_clients_)
                                                 | set(report.dropped)))
            self._publish()
            return report

    def add_clients(self, new_clients):
        """Let new clients join (or dropped ones return, with their data).

        Parameters
        ----------
        new_clients : sequence of array-like of shape (n_l, n_features)
            One array per joining client, inside ``bounds``; copied.  They
            get the next client indices.

        Returns
        -------
        FederatedRemovalReport
            Of the joining round (``clients``: the new indices).

        Each new client fits locally with the model's ``gamma_`` exactly
        as in :meth:`fit`, then every participant takes part in a round of
        a new secure run (fresh keys) and the server reclusters: the model
        is distributed exactly as a fit on all the included clients (with
        this ``gamma_``).  The server learns the new aggregate, whose
        difference to the old one is the joining clients' sum: joining is
        what reveals it (see ``docs/threat_model.md``).  A client that
        drops in that round is left out of the model (``dropped``).
        A call that raises changes nothing.
        """
        with self._lock:
            self._check_fitted()
            arrs = check_clients(new_clients)
            d = self.n_features_in_
            if arrs[0].shape[1] != d:
                raise InvalidInputError(
                    f"new clients have {arrs[0].shape[1]} features, the model has {d}")
            lo, hi = (float(v) for v in self.bounds)
            kw = dict(gamma=self.gamma_, lower=lo, upper=hi, client_init=self.client_init,
                      max_iter=self.max_iter, tol=self.tol)
            # from the generator's state (saved with the model), not its seed
            # sequence (a loaded model's is fresh): copies join identically
            twin = _copy_generator(self._agg_rng)
            root = np.random.SeedSequence(twin.integers(0, 2 ** 63, size=4).tolist())
            gens = [np.random.Generator(type(twin.bit_generator)(c))
                    for c in root.spawn(len(arrs))]

            def commit_rng():
                self._agg_rng.bit_generator.state = twin.bit_generator.state
            t0 = time.perf_counter()
            L0 = len(self._clients)
            fresh, failed = self._fit_clients(arrs, int(self.n_clusters), kw, gens, first=L0)
            t_client = time.perf_counter() - t0
            clients = list(self._clients) + fresh
            new_ids = list(range(L0, L0 + len(arrs)))
            participants = list(self._participants) + new_ids
            sizes = [None if c is None else c.X.shape[0] for c in self._clients] + \
                [a.shape[0] for a in arrs]
            agg = self._make_aggregator(d, self.n_bins_per_dim_, sizes, participants)
            failed_set = set(failed)
            try:
                for i in new_ids:
                    agg.mark(i)
                bins, counts, nbytes, inc, t_agg, dropped = agg.round(
                    clients, participants, silent=sorted(failed_set), prepare_next=False,
                    first=True)
                old_gone = sorted(set(dropped) - set(new_ids))
                if old_gone:
                    raise ProtocolError(
                        f"clients {old_gone} dropped out of the joining round; nothing "
                        "changed (retry)")
                t1 = time.perf_counter()
                server = self._server
                changed_model = server.update(bins, counts)   # atomic
                t_server = time.perf_counter() - t1
            except BaseException:
                agg.invalidate(participants)
                raise
            gone = set(dropped) | failed_set
            report = FederatedRemovalReport(
                clients=tuple(new_ids), reseeded=False, position=None,
                aggregate_changed=changed_model, server_reclustered=changed_model,
                client_seconds=t_client, aggregation_seconds=t_agg, server_seconds=t_server,
                bytes_sent=nbytes, incremental_decode=inc,
                offline_seconds=agg.offline_seconds, dropped=tuple(sorted(gone)))
            # commit (nothing below raises)
            old_agg = self._agg
            for i in sorted(gone):
                if clients[i] is not None:
                    clients[i]._erase()
                clients[i] = None
            self._clients = clients
            self._participants = [i for i in participants if i not in gone]
            self._server = server
            self._agg = agg
            if hasattr(old_agg, "roles"):
                old_agg.forget((), departed=list(old_agg.roles))
            if gone:
                agg.forget((), departed=sorted(gone & set(agg.roles)) if hasattr(agg, "roles")
                           else ())
            self.dropped_clients_ = tuple(sorted(set(self.dropped_clients_) | gone))
            commit_rng()
            self._publish()
            return report

    # -- persistence -------------------------------------------------------------

    _FORMAT = "pyfkm.FederatedKMeans"
    # 2: a "centers" server also stores its inits' seeds (s.seeds); version 1
    # files load too, their server reclusters from scratch at its next update.
    # 3: removed rows are zeros, a departed client is null (nothing stored);
    # versions 1 and 2 are erased that way when read.
    _VERSION = 3
    _READS = (1, 2, 3)

    def _to_arrays(self):
        """(header dict, arrays dict) of the fitted state."""
        arrays = {}
        params = self.get_params()
        rs = params.get("random_state")
        params["random_state"] = int(rs) if isinstance(rs, numbers.Integral) else None
        params["executor"] = None
        params["progress"] = False
        params["bounds"] = [float(v) for v in params["bounds"]]
        head = {"format": self._FORMAT, "version": self._VERSION, "params": params,
                "gamma": self.gamma_, "n_bins_per_dim": self.n_bins_per_dim_,
                "n_features": self.n_features_in_, "participants": list(self._participants),
                "bytes_sent": self.bytes_sent_,
                "clients": [None if c is None else c._export(f"c{i}.", arrays)
                            for i, c in enumerate(self._clients)],
                "server": self._server._export(arrays),
                "agg_rng": _rng_state(self._agg_rng),
                "dropped": list(self.dropped_clients_),
                "fit_seconds": dict(self.fit_seconds_)}
        return head, arrays

    def save(self, path):
        """Write the fitted model (client states included) to ``path``.

        Format: one ``.npz`` archive (no pickle) holding the arrays and a
        JSON header (format name, version, parameters, generator states).
        The file is written to a temporary name in the same folder, flushed
        and synced to disk, then renamed, so a crash never leaves a
        half-written model; the temporary file is removed on any error.
        Removed rows are not in the file (their rows are zeros) and
        departed clients store nothing.  Secret key material is not
        stored: a loaded model runs the key agreement again before its
        next secure round; its results are identical to
        the original object's because the aggregate is exact.
        """
        with self._lock:
            self._check_fitted()
            head, arrays = self._to_arrays()
        arrays["header"] = np.frombuffer(json.dumps(head).encode(), dtype=np.uint8)
        path = os.fspath(path)
        d = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(d):
            raise InvalidInputError(f"cannot save to {path!r}: folder {d!r} does not exist")
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".pyfkm-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        _fsync_dir(d)

    @classmethod
    def load(cls, path, *, max_bytes=None):
        """Read a model written by :meth:`save`, validating every field.

        Parameters
        ----------
        path : str or path-like
        max_bytes : int, optional
            Largest total size the arrays may take once read (default:
            ``max(4 * file size, 64 MiB)``); checked from the archive's
            directory and each array's header before anything is allocated.

        Returns
        -------
        FederatedKMeans

        Raises
        ------
        ModelFileError
            The file cannot be read, is not a pyfkm model (not a zip, a
            truncated or damaged archive), has an unsupported version, or
            any field is inconsistent with the header or the others (the
            message names it).  Nothing in the file is trusted: dtypes,
            shapes, ranges, labels, ids, counts, finiteness, client data in
            the box and the aggregate equal to the sum of the clients'
            vectors are all checked before use.
        """
        path = os.fspath(path)
        arrays = _read_npz(path, max_bytes)
        hdr = arrays.pop("header", None)
        if hdr is None or hdr.dtype != np.uint8 or hdr.ndim != 1:
            raise ModelFileError(f"{path}: header: missing or not a byte array")
        try:
            head = json.loads(hdr.tobytes().decode())
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise ModelFileError(f"{path}: header: not JSON ({e})") from None
        return cls._from_arrays(head, arrays, path)

    @classmethod
    def _from_arrays(cls, head, arrays, where):
        """Rebuild from :meth:`_to_arrays` output (read from a file or a
        pickle: validated field by field).  Every error is a ModelFileError
        naming ``where`` and the field."""
        try:
            return _ModelReader(cls, head, arrays, where).read()
        except ModelFileError:
            raise
        except PyfkmError as e:
            raise ModelFileError(f"{where}: inconsistent model ({e})") from None
        except (ValueError, TypeError, KeyError, IndexError, OverflowError, AttributeError,
                ZeroDivisionError, RecursionError) as e:
            raise ModelFileError(
                f"{where}: inconsistent model ({type(e).__name__}: {e})") from None

    def _make_aggregator(self, d, B, sizes, participants):
        """The aggregator of ``participants`` (a new run: fresh keys); its
        messages are sized for their centers (at most ``min(K, n_l)`` for a
        client of ``n_l`` points, which removals only lower)."""
        if not self.secure:
            return _ClearAggregator(d, resolve_threshold(self.threshold, len(participants)))
        M = sum(min(int(self.n_clusters), sizes[i]) for i in participants)
        return _SecureAggregator(d, B, max(M, 1), list(participants),
                                 self.modulus or DEFAULT_PRIME, threshold=self.threshold,
                                 neighbors=self.neighbors, progress=self.progress)

    def _check_X(self, X):
        self._check_fitted()
        C = self.cluster_centers_
        if C.shape[0] == 0:
            raise InvalidInputError("the model has no centers: every point was removed")
        return check_features(X, self.n_features_in_, self).astype(np.float64, copy=False), C

    def predict(self, X):
        """Index of the nearest server centroid for each row of ``X``."""
        return nearest_center(*self._check_X(X))[1]

    def score(self, X):
        """Negative k-means objective of ``X`` under the server centroids."""
        return -float(nearest_center(*self._check_X(X))[0].sum())


def _fsync_dir(d):
    """Sync a folder after a rename into it (POSIX; a no-op where folders
    cannot be opened)."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- reading saved models: nothing read is trusted ---------------------------

_BIT_GENERATORS = {"PCG64": np.random.PCG64, "PCG64DXSM": np.random.PCG64DXSM,
                   "Philox": np.random.Philox, "SFC64": np.random.SFC64,
                   "MT19937": np.random.MT19937}


def _rng_from_state(state):
    """A Generator in the saved ``state``; only numpy's bit generators are
    accepted by name (a name read from a file is never looked up)."""
    if not isinstance(state, dict) or state.get("bit_generator") not in _BIT_GENERATORS:
        raise ModelFileError(
            "generator state: unknown bit generator "
            f"{state.get('bit_generator') if isinstance(state, dict) else state!r}")
    bitgen = _BIT_GENERATORS[state["bit_generator"]]()
    try:
        bitgen.state = state
    except (ValueError, TypeError, KeyError, OverflowError) as e:
        raise ModelFileError(f"generator state: invalid ({e})") from None
    return np.random.Generator(bitgen)


def _read_npz(path, max_bytes=None):
    """The arrays of an npz file, each parsed from its bytes after checking
    that the archive's directory and the array headers promise no more than
    ``max_bytes`` in all (so a small file cannot make the reader allocate
    much more than its size)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ModelFileError(f"{path}: not a regular file")
            if max_bytes is not None and st.st_size > int(max_bytes):
                raise ModelFileError(f"{path}: the file is larger than max_bytes={max_bytes}")
            data = f.read(st.st_size + 1)
    except OSError as e:
        raise ModelFileError(f"{path}: cannot read the file ({e})") from None
    if len(data) != st.st_size:
        raise ModelFileError(f"{path}: the file changed while it was read")
    limit = max(4 * len(data), 64 << 20) if max_bytes is None else int(max_bytes)
    buf = io.BytesIO(data)
    try:
        if not zipfile.is_zipfile(buf):
            raise ModelFileError(f"{path}: not a pyfkm model file (not an npz archive)")
        out = {}
        with zipfile.ZipFile(buf) as z:
            infos = z.infolist()
            if sum(i.file_size for i in infos) > limit:
                raise ModelFileError(
                    f"{path}: the archive's arrays take more than max_bytes={limit} bytes")
            for info in infos:
                name = info.filename
                if not name.endswith(".npy") or name[:-4] in out:
                    raise ModelFileError(f"{path}: unexpected archive member {name!r}")
                if info.flag_bits & 0x1 or \
                        info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                    raise ModelFileError(
                        f"{path}: archive member {name!r} is encrypted or compressed "
                        "with a method pyfkm does not write")
                with z.open(info) as f:
                    raw = f.read(info.file_size + 1)
                out[name[:-4]] = _parse_npy(raw, f"{path}: {name[:-4]}")
        return out
    except ModelFileError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError,
            ValueError, NotImplementedError, KeyError, OverflowError, RuntimeError) as e:
        raise ModelFileError(
            f"{path}: damaged or truncated model file ({type(e).__name__}: {e})") from None


def _parse_npy(raw, where):
    """An array from the bytes of one .npy member (no pickles, no object
    dtypes, the data exactly as long as the header says)."""
    f = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"npy version {version}")
    except ValueError as e:
        raise ModelFileError(f"{where}: bad array header ({e})") from None
    if dtype.hasobject or dtype.kind not in "biuf" or dtype.fields is not None:
        raise ModelFileError(f"{where}: dtype {dtype} is not a plain numeric type")
    count = 1
    for s in shape:
        count *= int(s)
    body = raw[f.tell():]
    if count * dtype.itemsize != len(body):
        raise ModelFileError(
            f"{where}: the header announces {count * dtype.itemsize} bytes, "
            f"the archive holds {len(body)}")
    a = np.frombuffer(body, dtype=dtype, count=count)
    return a.reshape(shape, order="F" if fortran else "C").copy()


class _ModelReader:
    """Validates a saved model's header and arrays field by field, then
    builds the estimator (the constructors it calls trust their input)."""

    def __init__(self, cls, head, arrays, where):
        self.cls, self.head, self.arrays, self.where = cls, head, arrays, where
        self.used = {"header"}

    def fail(self, field, why):
        raise ModelFileError(f"{self.where}: {field}: {why}; the model is corrupt "
                             "or was not written by pyfkm")

    # scalars of the JSON header
    def value(self, d, key, field, kind, lo=None, hi=None, choices=None):
        if not isinstance(d, dict) or key not in d:
            self.fail(field, "missing")
        v = d[key]
        if kind == "int":
            if not isinstance(v, int) or isinstance(v, bool):
                self.fail(field, f"{v!r} is not an integer")
        elif kind == "float":
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v):
                self.fail(field, f"{v!r} is not a finite number")
            v = float(v)
        elif kind == "bool":
            if not isinstance(v, bool):
                self.fail(field, f"{v!r} is not a boolean")
        elif kind == "str":
            if not isinstance(v, str):
                self.fail(field, f"{v!r} is not a string")
        if lo is not None and v < lo or hi is not None and v > hi:
            self.fail(field, f"{v!r} is out of range [{lo}, {hi}]")
        if choices is not None and v not in choices:
            self.fail(field, f"{v!r} is not one of {sorted(choices)}")
        return v

    def same(self, d, key, field, expected, kind):
        v = self.value(d, key, field, kind)
        if v != expected:
            self.fail(field, f"{v!r} differs from the model's {expected!r}")
        return v

    def rng(self, state, field):
        try:
            return _rng_from_state(state)
        except ModelFileError as e:
            self.fail(field, str(e))

    def array(self, name, kinds, shape, dtype=None):
        """Array ``name`` of a dtype kind in ``kinds`` and the given shape
        (None: any length on that axis), converted to ``dtype`` exactly."""
        a = self.arrays.get(name)
        if a is None:
            self.fail(name, "missing")
        self.used.add(name)
        if a.dtype.kind not in kinds:
            self.fail(name, f"dtype {a.dtype} is not of kind {kinds!r}")
        if a.ndim != len(shape) or any(s is not None and s != t for s, t in zip(shape, a.shape)):
            self.fail(name, f"shape {a.shape} is not {tuple('n' if s is None else s for s in shape)}")
        if dtype is not None and a.dtype != dtype:
            b = a.astype(dtype)
            if not np.array_equal(b, a):
                self.fail(name, f"values do not fit {np.dtype(dtype).name}")
            a = b
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            self.fail(name, "NaN or infinite values")
        return np.ascontiguousarray(a)

    def read(self):
        h = self.head
        if not isinstance(h, dict):
            self.fail("header", "not a JSON object")
        if h.get("format") != self.cls._FORMAT:
            self.fail("format", f"{h.get('format')!r} is not {self.cls._FORMAT!r}")
        version = h.get("version")
        if type(version) is not int or version not in self.cls._READS:
            self.fail("version", f"{version!r} is not supported (this pyfkm reads versions "
                      f"{', '.join(map(str, self.cls._READS))})")
        self.version = version
        obj = self.params(h.get("params"))
        self.d = d = self.value(h, "n_features", "n_features", "int", 1, 1 << 20)
        self.K, _, self.lo, self.hi = obj._check_params(1, d)
        self.gamma = g = self.value(h, "gamma", "gamma", "float")
        if g <= 0 or (not isinstance(obj.gamma, str) and g != float(obj.gamma)):
            self.fail("gamma", f"{g!r} is not positive or differs from the parameter")
        self.B = self.value(h, "n_bins_per_dim", "n_bins_per_dim", "int", 1)
        if (self.hi - self.lo) / g > _MAX_BINS or self.B != _n_bins(self.lo, self.hi, g):
            self.fail("n_bins_per_dim", f"{self.B} does not match gamma and bounds")
        self.obj = obj
        heads = h.get("clients")
        if not isinstance(heads, list) or not 1 <= len(heads) <= 1 << 24:
            self.fail("clients", "not a non-empty list")
        L = len(heads)
        parts = h.get("participants")
        if not isinstance(parts, list) or not parts or \
                any(not isinstance(i, int) or isinstance(i, bool) for i in parts) or \
                parts != sorted(set(parts)) or parts[0] < 0 or parts[-1] >= L:
            self.fail("participants", f"must be distinct sorted client indices in [0, {L})")
        clients = []
        part_set = set(parts)
        for i, ch in enumerate(heads):
            if i not in part_set:   # departed: nothing of it is read (versions < 3
                clients.append(None)  # stored its data: dropped here)
                if version >= 3 and ch is not None:
                    self.fail(f"clients[{i}]", "a departed client must store nothing")
                continue
            clients.append(self.client(i, ch, version))
        server = self.server(h.get("server"))
        agg = merge_sparse([clients[i].sparse_counts() for i in parts], d)
        if not (np.array_equal(agg[0], server.bins_) and np.array_equal(agg[1], server.counts_)):
            self.fail("s.bins/s.counts", "the aggregate is not the sum of the clients' vectors")
        if version >= 3:
            extra = sorted(set(self.arrays) - self.used)
            if extra:
                self.fail(extra[0], "unexpected array")
        obj._clients, obj._server, obj._participants = clients, server, parts
        obj.gamma_, obj.n_bins_per_dim_, obj.n_features_in_ = g, self.B, d
        obj.bytes_sent_ = self.value(h, "bytes_sent", "bytes_sent", "int", 0)
        fs = h.get("fit_seconds", {})          # absent before version 3
        obj.fit_seconds_ = {k: self.value(fs, k, f"fit_seconds.{k}", "float", lo=0)
                            for k in (("clients", "aggregation", "server") if fs else ())}
        obj._agg_rng = self.rng(h.get("agg_rng"), "agg_rng")
        dr = h.get("dropped", [])
        if not isinstance(dr, list) or any(not isinstance(i, int) or isinstance(i, bool)
                                           for i in dr):
            self.fail("dropped", "must be a list of client indices")
        obj.dropped_clients_ = tuple(i for i, c in enumerate(clients) if c is None
                                     and i in set(dr))
        obj._agg = obj._make_aggregator(
            d, self.B, [None if c is None else c.X.shape[0] for c in clients], parts)
        obj._publish()
        return obj

    # parameters added after a format version, with the value older files meant
    _NEW_PARAMS = {"threshold": None, "neighbors": "auto", "client_timeout": None,
                   "progress": False}

    def params(self, p):
        names = set(self.cls._param_names())
        if isinstance(p, dict):
            p = {**{k: v for k, v in self._NEW_PARAMS.items() if k in names}, **p}
        if not isinstance(p, dict) or set(p) != names:
            self.fail("params", f"must have exactly the keys {sorted(names)}")
        p = dict(p)
        b = p["bounds"]
        if not isinstance(b, list) or len(b) != 2 or \
                any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in b):
            self.fail("params.bounds", f"{b!r} is not two numbers")
        p["bounds"] = (float(b[0]), float(b[1]))
        rs = p["random_state"]
        if rs is not None and (not isinstance(rs, int) or isinstance(rs, bool) or rs < 0):
            self.fail("params.random_state", f"{rs!r} is not None or an int >= 0")
        if p["executor"] is not None:
            self.fail("params.executor", "must be null")
        for key, kind, kw in (("n_clusters", "int", dict(lo=1, hi=1 << 24)),
                              ("n_init", "int", dict(lo=1, hi=1 << 16)),
                              ("max_iter", "int", dict(lo=1, hi=1 << 30)),
                              ("tol", "float", dict(lo=0)),
                              ("secure", "bool", {}),
                              ("server_points", "str", dict(choices={"uniform", "centers"})),
                              ("client_init", "str",
                               dict(choices={"k-means++", "means", "full"}))):
            self.value(p, key, f"params.{key}", kind, **kw)
        if p["gamma"] != "auto":
            self.value(p, "gamma", "params.gamma", "float", lo=0)
        if p["modulus"] is not None:
            self.value(p, "modulus", "params.modulus", "int", 3, (1 << 63) - 1)
        if p["threshold"] is not None:
            self.value(p, "threshold", "params.threshold", "int", 1, 1 << 32)
        if p["neighbors"] != "auto":
            self.value(p, "neighbors", "params.neighbors", "int", 0, 1 << 32)
            if p["neighbors"] % 2:
                self.fail("params.neighbors", "must be even")
        if p["client_timeout"] is not None:
            self.value(p, "client_timeout", "params.client_timeout", "float", lo=0)
        if p["progress"] is not False:
            self.fail("params.progress", "must be false (a callable is not stored)")
        return self.cls(**p)

    def client(self, i, ch, version):
        f, pre = f"clients[{i}]", f"c{i}."
        if not isinstance(ch, dict):
            self.fail(f, "not an object")
        obj = self.obj
        for key, expected, kind in (("n_clusters", self.K, "int"), ("gamma", self.gamma, "float"),
                                    ("lower", self.lo, "float"), ("upper", self.hi, "float"),
                                    ("client_init", obj.client_init, "str"),
                                    ("max_iter", obj.max_iter, "int"),
                                    ("tol", float(obj.tol), "float")):
            self.same(ch, key, f"{f}.{key}", expected, kind)
        X = self.array(pre + "X", "f", (None, self.d))
        if X.dtype not in (np.float64, np.float32):
            self.fail(pre + "X", f"dtype {X.dtype} is not native float64 or float32")
        n = X.shape[0]
        removed = self.array(pre + "removed", "b", (n,))
        active = self.array(pre + "active", "iu", (None,), np.int64)
        if active.size and (active[0] < 0 or active[-1] >= n or (np.diff(active) <= 0).any()):
            self.fail(pre + "active", f"must be increasing ids in [0, {n})")
        inactive = np.ones(n, dtype=bool)
        inactive[active] = False
        if not removed[inactive].all():
            self.fail(pre + "removed", "a point outside the seeding is not marked removed")
        X = X.copy()
        if version < 3:
            X[removed] = 0              # erase what older versions kept
        elif (X[removed] != 0).any():
            self.fail(pre + "X", "a removed row is not erased")
        live = X[~removed]
        if live.size and (live.min() < self.lo or live.max() > self.hi):
            self.fail(pre + "X", f"values outside the box [{self.lo}, {self.hi}]")
        k = self.same(ch, "k", f"{f}.k", min(self.K, active.size), "int")
        rng = self.rng(ch.get("rng"), f"{f}.rng")
        st = ch.get("seeding")
        arrays = {pre + "X": X, pre + "removed": removed, pre + "active": active}
        head = dict(ch, rng=None)
        if k == 0:
            if st is not None:
                self.fail(f"{f}.seeding", "must be null for a client without points")
        else:
            if not isinstance(st, dict):
                self.fail(f"{f}.seeding", "missing")
            for key in ("n_active", "n_positive"):
                self.value(st, key, f"{f}.seeding.{key}", "int", 0, active.size)
            for name in ("removed", "mind", "labels", "centers", "counts", "wsizes"):
                kinds = "f" if name in ("mind", "wsizes") else "biu"
                size = active.size if name in ("removed", "mind", "labels") else k
                arrays[pre + "s." + name] = self.array(pre + "s." + name, kinds, (size,))
            if not np.array_equal(arrays[pre + "s.removed"].astype(bool), removed[active]):
                self.fail(pre + "s.removed", "differs from the client's removed points")
        try:
            return MufcClient._restore(head, pre, arrays, rng=rng)
        except (ValueError, TypeError) as e:
            self.fail(f, str(e))

    def server(self, sh):
        obj = self.obj
        if not isinstance(sh, dict):
            self.fail("server", "not an object")
        for key, expected, kind in (("n_clusters", self.K, "int"), ("gamma", self.gamma, "float"),
                                    ("lower", self.lo, "float"), ("d", self.d, "int"),
                                    ("server_points", obj.server_points, "str"),
                                    ("n_init", obj.n_init, "int"),
                                    ("max_iter", obj.max_iter, "int"),
                                    ("tol", float(obj.tol), "float")):
            self.same(sh, key, f"server.{key}", expected, kind)
        self.value(sh, "inertia", "server.inertia", "float", lo=0)
        self.value(sh, "n_iter", "server.n_iter", "int", 0)
        if "seeds" in sh:
            self.value(sh, "seeds", "server.seeds", "bool")
        rng = self.rng(sh.get("rng"), "server.rng")
        d, B = self.d, self.B
        bins = self.array("s.bins", "iu", (None, d), np.int64)
        m = bins.shape[0]
        if bins.size and (bins.min() < 0 or bins.max() >= B):
            self.fail("s.bins", f"coordinates outside [0, {B})")
        counts = self.array("s.counts", "iu", (m,), np.int64)
        if (counts <= 0).any():
            self.fail("s.counts", "counts must be positive")
        uniform = obj.server_points == "uniform"
        n_pts = int(counts.sum(dtype=object)) if uniform else m
        kk = min(self.K, n_pts)
        centers = self.array("s.centers", "f", (kk, d), np.float64)
        slack = self.gamma + 1e-9 * max(abs(self.lo), abs(self.hi))
        if centers.size and (centers.min() < self.lo - slack or centers.max() > self.hi + slack):
            self.fail("s.centers", f"centers outside the box [{self.lo}, {self.hi}]")
        samples = self.array("s.samples", "f", (n_pts if uniform else 0, d), np.float64)
        if uniform and n_pts:
            b = np.repeat(bins, counts, axis=0)
            lo = self.lo + b * self.gamma
            tol = 1e-9 * max(abs(self.lo), abs(self.hi), self.gamma)
            if (samples < lo - tol).any() or (samples > lo + self.gamma + tol).any():
                self.fail("s.samples", "a sample lies outside its bin")
        arrays = {"s.bins": bins, "s.counts": counts, "s.centers": centers,
                  "s.samples": samples}
        if not sh.get("seeds") and self.version >= 2 and obj.server_points == "centers" and kk:
            self.fail("s.seeds", "missing (a fitted 'centers' server keeps its seeds)")
        if sh.get("seeds"):
            arrays["s.seeds"] = self.array("s.seeds", "iu", (obj.n_init, None), np.int64)
        return MufcServer._restore(dict(sh, rng=None), arrays, rng=rng)
