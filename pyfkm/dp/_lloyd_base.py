"""The federated Lloyd driver shared by :mod:`pyfkm.dp.estimator` and
:mod:`pyfkm.dp.baselines`.

``_FederatedLloydBase`` validates the parameters and the clients' data, sets
up masked secure aggregation (:func:`pyfkm.secagg.setup_msa`) and runs the
iterations: each client's local step (``_LocalData.stats``: per-cluster sums
and counts of the points within the radius), one :func:`pyfkm.secagg.msa_round`
with the noise the subclass plans, and the center update of
:mod:`pyfkm.dp.steps`.  A subclass says what differs: ``_check_params``,
``_plan`` (per-iteration radius and noise scales, the privacy report, the
accountant), ``_converged`` and ``_record``.  The parameter checks shared by
the estimators (``_check_epsilon``, ``_check_delta``, ``_check_max_iter``) are
here too.
"""
from __future__ import annotations

import logging
import math
import numbers
from concurrent.futures import Executor
from typing import Any, Callable, Sequence, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from .._base import BaseEstimator
from .._validation import (check_array, check_bounds, check_clients, check_n_clusters,
                           clients_feature_names, set_feature_names)
from ..exceptions import CapacityError, InvalidInputError
from ..core.base import CenterModelMixin
from ..core.kernels import lloyd as _lloyd
from ..core.kmeans import LloydWorkspace
from ..rng import SeedLike, as_generator
from ..secagg import msa_round, setup_msa
from ..secagg.msa import max_batch_rounds, msa_key_batch
from .steps import (_damped_update, _relocate_empty, _update_centers, reduce_candidates,
                    sphere_packing_init)

_log = logging.getLogger(__name__)


class _LocalData:
    """A client's points and its Lloyd workspace (rebuilt after pickling, so
    instances run on process pools too)."""

    def __init__(self, X):
        self.X = X
        self._ws = None

    def __getstate__(self):
        return {"X": self.X, "_ws": None}

    def stats(self, centers, eta, relative):
        """Per-cluster sums (relative to the centers if ``relative``) and
        counts of the points within ``eta`` of their nearest center (all
        points if ``eta`` is None), flattened as ``[sums (k*d), counts (k)]``.

        One assignment kernel call over the workspace's fixed parts (the
        plain path of :meth:`LloydWorkspace.step`, without its bookkeeping:
        these steps never use distance bounds), the parts' sums merged in
        order, the far points' share removed and the relative sums written
        into the flat output directly."""
        k, d = centers.shape
        X = self.X
        kd = k * d
        out = np.zeros(kd + k)
        if X.shape[0] == 0:
            return out
        ws = self._ws
        if ws is None or ws.k != k:
            ws = self._ws = LloydWorkspace(X, None, k, 1, pack=X.shape[0] >= 64)
        centers = np.ascontiguousarray(centers, dtype=np.float64)
        # the workspace's shift (its step's): the centers' mean to 16 bits
        m, e = np.frexp(np.add.reduce(centers, axis=0) / k)
        shift = np.ldexp(np.round(np.ldexp(m, 16)), e - 16)
        ct, hn = _lloyd.pack_centers(centers, shift)
        P = len(ws.bounds) - 1
        mind = ws.mind if eta is not None else None
        _lloyd.assign_parts(X, ws.P, ws.w, ct, hn, centers, ws.bounds, 0, P, ws.labels, mind,
                            ws.part_sums, ws.part_wsums, ws.part_inertia, ws.part_changed)
        sums, counts = out[:kd].reshape(k, d), out[kd:]
        if P == 1:
            sums[...] = ws.part_sums[0]
            counts[...] = ws.part_wsums[0]
        else:
            s, c, _ = _lloyd.merge(ws.part_sums, ws.part_wsums, ws.part_inertia)
            sums[...] = s
            counts[...] = c
        if eta is not None:
            # exact squared distances from the kernel; the dropped points'
            # share removed (per cluster: their sum and their number)
            far = np.flatnonzero(mind > eta * eta)
            if far.size:
                lab = ws.labels[far]
                onehot = np.zeros((far.size, k))
                onehot[np.arange(far.size), lab] = 1.0
                sums -= onehot.T @ X[far]
                counts -= np.bincount(lab, minlength=k)
        if relative:
            sums -= counts[:, None] * centers
        return out

_Lloyd = TypeVar("_Lloyd", bound="_FederatedLloydBase")


class _FederatedLloydBase(CenterModelMixin, BaseEstimator):
    """Shared driver: validation, MSA setup, the iteration loop."""

    _relative = True
    _POSTPROCESS: tuple[str, ...] = ("fold", "truncate", "none")

    def __init__(self, n_clusters: int, *, max_iter: int | str, init: str | ArrayLike,
                 postprocess: str, bounds: tuple[float, float], random_state: SeedLike,
                 executor: Executor | None) -> None:
        # the hyper-parameters every federated Lloyd has; a subclass's
        # constructor states its own signature (defaults) and adds the rest
        self.n_clusters = n_clusters
        self.max_iter = max_iter
        self.init = init
        self.postprocess = postprocess
        self.bounds = bounds
        self.random_state = random_state
        self.executor = executor

    # -- subclasses define _plan(n, k, d) -> list of per-iteration dicts
    #    {"eta": float|None, "sum_scale": float, "count_scale": float} and set
    #    self._privacy_report.
    _check_params: Callable[[], object]
    _plan: Callable[..., Any]

    def _check_common(self):
        k = check_n_clusters(self.n_clusters)
        lo, hi = check_bounds(self.bounds)
        if self.postprocess not in self._POSTPROCESS:
            raise InvalidInputError(
                "postprocess must be " + ", ".join(repr(p) for p in self._POSTPROCESS[:-1])
                + f" or {self._POSTPROCESS[-1]!r}, got {self.postprocess!r}")
        ex = self.executor
        if ex is not None and not callable(getattr(ex, "submit", None)):
            raise InvalidInputError("executor must be a concurrent.futures.Executor "
                                    "(an object with submit) or None")
        if self.random_state is not None:
            as_generator(self.random_state)  # raises on a bad seed
        return k, (lo, hi)

    def _check_init(self, k, d, bounds):
        init = self.init
        if isinstance(init, str):
            if init != "sphere_packing":
                raise InvalidInputError(f"init must be 'sphere_packing' or an array, got {init!r}")
            return None
        C = check_array(init, "init")
        if C.shape != (k, d):
            raise InvalidInputError(f"init has shape {C.shape}, expected ({k}, {d})")
        if (C < bounds[0]).any() or (C > bounds[1]).any():
            raise InvalidInputError("init centers must lie inside bounds")
        return C.astype(np.float64)

    def _check_data(self, clients, k, bounds):
        arrs = check_clients(clients)
        n = sum(a.shape[0] for a in arrs)
        check_n_clusters(k, n)
        for i, a in enumerate(arrs):
            if a.size and (float(a.min()) < bounds[0] or float(a.max()) > bounds[1]):
                raise InvalidInputError(
                    f"clients[{i}] has values outside bounds={bounds}; scale the features into "
                    "the bounds first from public ranges (pyfkm.scale_to_box(X, lower, upper, "
                    f"box={bounds}))")
        return [np.ascontiguousarray(a, dtype=np.float64) for a in arrs], n

    def fit(self: _Lloyd, clients: Sequence[ArrayLike], y: object = None) -> _Lloyd:
        """Fit on a sequence of client arrays (each ``(n_l, d)``, same ``d``).

        Parameters
        ----------
        clients : sequence of array-like
            One 2-D array per client; values inside ``bounds``.
        y : None
            Ignored; accepted for scikit-learn's API.

        Returns
        -------
        self
        """
        k, bounds = self._check_common()
        self._check_params()
        names = clients_feature_names(clients)
        arrs, n = self._check_data(clients, k, bounds)
        d = arrs[0].shape[1]
        init = self._check_init(k, d, bounds)
        self._check_bounds_public(arrs, bounds)
        try:
            plan, report, accountant, noise_mode = self._plan(n, k, d, bounds)
            gen = None if self.random_state is None else as_generator(self.random_state)
            init_gen = gen.spawn(1)[0] if gen is not None else None
            m0 = plan[0].get("n_centers", k) if plan else k
            centers = init if init is not None else sphere_packing_init(m0, d, bounds, init_gen)
            # the planned pipeline's public post-processing seed (reduction)
            reduce_gen = (gen.spawn(1)[0] if gen is not None else as_generator(None)) \
                if any("phase" in s for s in plan) else None
            m_max = max([m0] + [s.get("n_centers", k) for s in plan])
            n_words = m_max * d + m_max
            # the private mode's noise is distributed: every client adds its
            # share (variance sigma**2 / threshold), which no party can remove;
            # the baselines' modes model a trusted curator (the server adds it)
            distributed = noise_mode == "discrete_gaussian"
            server, msa = setup_msa(len(arrs), n_words,
                                    noise=None if distributed else noise_mode)
            if self._fixed_rounds and plan:
                # the run's rounds are fixed: their keys (fresh per round)
                # are shared in one flight (docs/threat_model.md); rounds
                # beyond the largest batch share their own
                msa_key_batch(server, msa, min(len(plan), max_batch_rounds(len(msa))))
            local = [_LocalData(a) for a in arrs]
            centers, n_iter = self._iterate(plan, local, centers, server, msa, k, d, bounds,
                                            noise_mode, distributed, reduce_gen)
        except CapacityError as e:
            raise CapacityError(self._capacity_advice(str(e))) from None
        report = dict(report)
        if accountant is not None:
            self._record(accountant, plan[0], n_iter)
            report["epsilon_spent"], report["delta_spent"] = accountant.spent()
        # fitted state only now: a fit that raised left the estimator as it was
        self.cluster_centers_ = centers
        self.n_iter_ = n_iter
        self.n_features_in_ = d
        self.n_samples_ = n
        self.privacy_ = report
        self.accountant_ = accountant
        set_feature_names(self, names)
        _log.info("fitted %d clients, %d points: %d iterations%s", len(arrs), n, n_iter,
                  "" if accountant is None else
                  " (epsilon spent %.4g, delta %.3g)" % accountant.spent())
        return self

    def _capacity_advice(self, message):
        """The masked aggregation's capacity error told in this estimator's
        terms: its message names MsaServer's own parameters; the advice
        names only parameters this estimator has, for the actual cause."""
        what = message.split("; ")[0]
        params = self.get_params()
        fixes = []
        if "fixed-point overflow" not in what:  # the noise, not the data, is out of range
            if "epsilon" in params:
                # a share below the grid is too little noise: a smaller
                # epsilon; a sigma outside the sampler's range may be either
                fixes.append("a smaller epsilon" if "is below" in what else "another epsilon")
            if "noise" in params and params["noise"] != "gaussian":
                fixes.append("noise='gaussian' (continuous noise, no share-size limit)")
        fixes.append("data in a box of width about 1 to 100 (bounds, with the data mapped by "
                     "pyfkm.scale_to_box)")
        return (f"{type(self).__name__}: the secure aggregation cannot carry this fit: {what}; "
                f"use {', or '.join(fixes)}")

    def _iterate(self, plan, local, centers, server, msa, k, d, bounds, noise_mode,
                 distributed, reduce_gen=None):
        """The planned iterations (masked rounds and center updates) from
        ``centers``; returns (centers, iterations run)."""
        n_iter = 0
        for step in plan:
            eta = step["eta"]
            R, C = self._masked_round(step, local, centers, server, msa, noise_mode,
                                      distributed)
            if step.get("update") == "damped":
                new = _damped_update(centers, R, C, eta, step.get("sum_scale", 0.0), bounds,
                                     self._postprocess_mode())
            else:
                new = _update_centers(centers, R, C, eta, self._relative, bounds,
                                      self._postprocess_mode())
            if step.get("reduce"):
                new = reduce_candidates(new, C, k, step["threshold"], reduce_gen)
            elif step.get("phase") == "lloyd":
                new = _relocate_empty(new, C, step["threshold"], reduce_gen, bounds)
            n_iter += 1
            done = self._converged(centers, new)
            centers = new
            if done:
                break
        return centers, n_iter

    def _masked_round(self, step, local, centers, server, msa, noise_mode, distributed):
        """One masked round over the ``m`` current centers: the clients'
        relative sums and counts within ``step["eta"]``, with the step's
        noise (the clients' shares when ``distributed``, else the server's);
        returns the released ``(R~ (m, d), C~ (m,))``."""
        ex = self.executor
        eta = step["eta"]
        m, d = centers.shape
        if ex is None:
            vecs = [c.stats(centers, eta, self._relative) for c in local]
        else:
            futs = [ex.submit(c.stats, centers, eta, self._relative) for c in local]
            vecs = [f.result() for f in futs]
        pad = msa[0].n_words - (m * d + m)
        if pad:   # one session carries the wider initialisation rounds too
            vecs = [np.concatenate([v, np.zeros(pad)]) for v in vecs]
        segments = ()
        if noise_mode is not None:
            segments = ((m * d, step["sum_scale"], b"SUM"), (m, step["count_scale"], b"CNT"))
            if pad:   # noise on the zero padding, discarded
                segments += ((pad, step["count_scale"], b"PAD"),)
        out, _ = msa_round(server, msa, vecs, noise=segments if distributed else (),
                           server_noise=() if distributed else segments)
        return out[:m * d].reshape(m, d), out[m * d:m * d + m]

    # every planned round runs (no early stop): the key batch covers them
    _fixed_rounds = True

    def _converged(self, old, new):
        return False

    def _postprocess_mode(self):
        return self.postprocess

    def _check_bounds_public(self, arrs, bounds):
        pass

    def _record(self, accountant, step, count):
        pass

    # -- prediction: predict, transform and score are CenterModelMixin's

    def nicv(self, X: ArrayLike) -> float:
        """Normalized intra-cluster variance: k-means objective of ``X`` on
        the fitted centers divided by ``len(X)`` (lower is better; the
        FastLloyd paper's metric).  ``score(X) == -nicv(X) * len(X)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite data with the fitted number of features, at least one
            row.

        Returns
        -------
        nicv : float
            Mean squared distance of a row to its nearest center.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        InvalidInputError
            If ``X`` is invalid.
        """
        X, C = self._checked(X)
        return float(self._nearest_center(X, C)[0].sum() / X.shape[0])


class _GaussianLloydBase(_FederatedLloydBase):
    """What the Gaussian-noise estimators (:class:`~pyfkm.dp.DPFederatedKMeans`,
    :class:`~pyfkm.dp.GLloyd`) add: the budget (epsilon, delta), the noise
    kind, their checks and their accounting (T identical releases of
    sensitivity 1)."""

    def __init__(self, n_clusters: int, *, epsilon: float, delta: float | str,
                 max_iter: int | str, init: str | ArrayLike, postprocess: str, noise: str,
                 bounds: tuple[float, float], random_state: SeedLike, executor: Executor | None) -> None:
        super().__init__(n_clusters, max_iter=max_iter, init=init, postprocess=postprocess,
                         bounds=bounds, random_state=random_state, executor=executor)
        self.epsilon = epsilon
        self.delta = delta
        self.noise = noise

    def _check_budget(self, allow_inf):
        _check_epsilon(self.epsilon, allow_inf=allow_inf)
        _check_delta(self.delta)
        _check_max_iter(self.max_iter)

    def _check_noise(self):
        if self.noise not in ("discrete_gaussian", "gaussian"):
            raise InvalidInputError(
                f"noise must be 'discrete_gaussian' or 'gaussian', got {self.noise!r}")

    def _delta(self, n):
        """delta, "auto" resolved for ``n`` points."""
        from . import accounting
        return accounting.default_delta(n) if self.delta == "auto" else float(self.delta)

    def _record(self, accountant, step, count):
        # T identical releases (R / eta_t, C) of sensitivity 1 and noise sigma
        accountant.spend(self.noise, sigma=step["sigma"], sensitivity=1.0, count=count)


def _check_epsilon(epsilon, allow_inf=True):
    if not isinstance(epsilon, numbers.Real) or isinstance(epsilon, bool) \
            or math.isnan(epsilon) or epsilon <= 0 or (math.isinf(epsilon) and not allow_inf):
        raise InvalidInputError(
            f"epsilon={epsilon!r} must be a positive number"
            + (" (math.inf turns the noise off)" if allow_inf else ""))
    return float(epsilon)


def _check_delta(delta):
    if isinstance(delta, str):
        if delta != "auto":
            raise InvalidInputError(f"delta must be 'auto' or a number in (0, 1), got {delta!r}")
        return delta
    if not isinstance(delta, numbers.Real) or isinstance(delta, bool) or not 0 < delta < 1:
        raise InvalidInputError(f"delta={delta!r} must be 'auto' or a number in (0, 1)")
    return float(delta)


def _check_max_iter(max_iter, allow_auto=True):
    if allow_auto and isinstance(max_iter, str) and max_iter == "auto":
        return max_iter
    if not isinstance(max_iter, numbers.Integral) or isinstance(max_iter, bool) or max_iter < 1:
        raise InvalidInputError(
            f"max_iter={max_iter!r} must be " + ("'auto' or " if allow_auto else "")
            + "an int >= 1")
    return int(max_iter)
