"""Federated k-means with exact unlearning (MUFC; Pan et al., ICLR 2023).

Each client seeds its local data with k-means++ (Alg. 3 of the paper, with
exact removal), quantizes its centers to a public grid of step ``gamma`` and
turns its cluster sizes into a sparse count vector over grid bins.  The
vectors are summed with secure compressed aggregation (:mod:`pyfkm.secagg`)
or, for testing and comparisons, in the clear.  The server builds its own
dataset from the aggregate -- ``q_j`` points uniform inside bin ``j``
(``server_points="uniform"``, the paper's choice) or the bin centres
weighted by ``q_j`` (``"centers"``, the default: same quality, far cheaper
to fit and to update) -- and clusters it with
weighted k-means++ and Lloyd (``n_init`` initialisations).

Unlearning.  Removing points from a client runs the client's exact seeding
removal; its counts change even when its centers do not (a removed point is
never counted anywhere).  The aggregate is then re-summed securely, under fresh
masks: in a *difference round* every participant sends its change since the
last round (zero for all but the removing client), under masks sized for
the number of bins that changed (one for a removal that moves no center),
and the server adds the decoded change to its aggregate; a full round
(every participant's whole vector) runs when that does not fit or the
participants changed.  The server reclusters when the
aggregate changed; for ``"centers"``, a change that only lowers counts (a
removal that moves no client center) keeps each init's seeds unless a
coupled draw says a seed was a removed copy (:class:`MufcServer`), and
reruns Lloyd from them.  For ``"uniform"`` the server keeps
its samples and drops uniformly chosen samples of the bins that lost counts
(and draws new ones for bins that gained), so its dataset is distributed
exactly as a fresh draw.  After any sequence of removals the model (client
states, aggregate, server centroids) is distributed exactly as a ``fit`` on
the remaining data with the same ``gamma``.

Roles.  :class:`MufcClient` (:mod:`pyfkm.mufc.client`) and
:class:`MufcServer` (:mod:`pyfkm.mufc.server`) hold the two sides of the
protocol and can be driven over any transport together with the SCMA
messages; :class:`FederatedKMeans`, here, is an in-process driver with the
usual estimator interface.  Its rounds run through the aggregators of
:mod:`pyfkm.mufc.aggregation`; :meth:`FederatedKMeans.save`,
:meth:`FederatedKMeans.load` and pickling use the file format of
:mod:`pyfkm.mufc.persistence`.

Why one module.  :class:`FederatedKMeans` is one class of about 700 lines,
a fifth of them its documentation.  Its four calls that change the model
(``fit``, ``remove``, ``remove_clients``, ``add_clients``) follow one
discipline on one private state (``_clients``, ``_server``, ``_agg``,
``_participants``): build the new state aside under the object's lock, run
the round and the server update, and commit in one step only when both
succeeded; ``_update``, ``_make_aggregator`` and ``_publish`` are the
pieces they share.  Everything that is not that state machine lives in the
modules above; splitting the class itself (mixins in several files) would
put the halves of one commit protocol in different files.
"""
from __future__ import annotations

import contextlib
import logging
import math
import numbers
import os
import threading
import time
import warnings
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._base import BaseEstimator, Report
from .._validation import (available_cores, check_bounds, check_clients, check_ids, check_int,
                           clients_feature_names, warn_if_fewer_distinct)
from ..exceptions import (InvalidIdError, InvalidInputError, ModelFileError, NotFittedError,
                         ProtocolError, PyfkmError)
from ..field import DEFAULT_PRIME
from ..core.base import CenterModelMixin
from ..rng import (SeedLike, as_generator, copy_generator as _copy_generator,
                   spawn_aside as _spawn_aside)
from ._rngstate import _rng_state
from .aggregation import _ClearAggregator, _SecureAggregator, resolve_neighbors, resolve_threshold
from .client import _MAX_BINS, MufcClient, _fit_client_task, _n_bins
from .persistence import _ModelReader, _read_model, write_model
from .server import MufcServer

_log = logging.getLogger(__name__)

__all__ = ["FederatedKMeans", "FederatedRemovalReport"]


@dataclass(frozen=True)
class FederatedRemovalReport(Report):
    """What a federated removal cost.

    Returned by :meth:`FederatedKMeans.remove` and
    :meth:`FederatedKMeans.remove_clients`.

    Parameters
    ----------
    clients : tuple of int
        Clients whose data changed: the client of a point removal, the
        joining clients of :meth:`FederatedKMeans.add_clients`; empty for
        :meth:`FederatedKMeans.remove_clients` (the departed clients are
        no longer in the model).
    reseeded : bool
        Whether some client resampled centers.
    position : int or None
        Earliest reseeding position over the clients (None if none reseeded).
    aggregate_changed, server_reclustered : bool
        Whether the securely summed bins changed, and so whether the server
        clustered again (the two are equal).
    client_seconds, aggregation_seconds, server_seconds : float
        Online time of each stage.
    offline_seconds : float
        Time of the offline phase run after the round: every participant
        precomputes its mask for the next round (secure aggregation only).
    bytes_sent : int
        Bytes of all messages of the aggregation round (0 in the clear).
    incremental_decode : bool, default=False
        Whether the secure aggregation decoded only the change from the
        previous round (SCMA's incremental decode).
    details : tuple of RemovalReport, default=()
        The reports of the clients' removals (not shown by ``str``).
    dropped : tuple of int, default=()
        Clients that went silent in the round.  In a removal round an
        unchanged client that drops changes nothing (its contribution is
        the one already in the aggregate); a removing client that drops
        makes the removal fail.

    Examples
    --------
    >>> import numpy as np
    >>> from pyfkm import FederatedKMeans
    >>> rng = np.random.default_rng(0)
    >>> clients = [rng.uniform(-0.5, 0.5, size=(30, 2)) for _ in range(3)]
    >>> fkm = FederatedKMeans(2, server_points="centers", random_state=0).fit(clients)
    >>> report = fkm.remove(0, [3, 4])
    >>> report.clients, report.dropped
    ((0,), ())
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


def _online_seconds(report):
    return report.client_seconds + report.aggregation_seconds + report.server_seconds


class FederatedKMeans(CenterModelMixin, BaseEstimator):
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
    server_points : {"centers", "uniform"}, default="centers"
        The server's dataset: each grid bin's centre weighted by its count
        (``"centers"``), or ``q_j`` points drawn uniformly inside bin ``j``
        (``"uniform"``, the paper's).  Both give the same clustering quality
        on the benchmarks (``benchmarks/RESULTS.md``, table 5); ``"centers"``
        clusters at most ``K * L`` weighted points instead of ``n`` and
        updates after a removal without reclustering from scratch, which
        makes a removal 100x or more cheaper than a refit, where
        ``"uniform"`` reclusters all ``n`` samples after every change.
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
    random_state : None, int, SeedSequence, Generator or RandomState
        Seeds the algorithm (local seeding, server sampling and k-means):
        the same seed gives the same model.  It never seeds key material:
        keys, run ids and masks come from the operating system, fresh for
        every run and round (see ``docs/threat_model.md``).  A saved or
        pickled model keeps an int seed as it is and any other as None
        (the generators' states it continues from are saved with it).
    executor : concurrent.futures.Executor, optional
        Runs the clients' local fits (e.g. a ``ThreadPoolExecutor``, a
        ``ProcessPoolExecutor`` or Dask's ``Client.get_executor()``); the
        model is identical to the in-process one.  Each task returns the
        client's state as plain arrays (no live objects cross the executor),
        except on a ``ThreadPoolExecutor``, whose tasks build the clients
        in this process.  Meanwhile the driver runs the secure round's key
        agreement and key shares (no data involved).  The round's roles
        hold live keys and stay in this process: a ``ThreadPoolExecutor``
        also computes the clients' masks (beside the key shares) and masked
        inputs (kernels that release the GIL); with another executor
        (processes, Dask), threads of this process do (one per available
        core, at most 16), for the duration of the fit or
        :meth:`add_clients`.
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

    # for the type checker: the fitted state that fit installs in one
    # __dict__ update
    cluster_centers_: NDArray[np.float64]
    n_features_in_: int
    n_bins_per_dim_: int
    gamma_: float
    dropped_clients_: tuple[int, ...]
    _participants: list[int]
    _clients: list[Any]
    _agg: Any
    _agg_rng: np.random.Generator
    _server: MufcServer

    def __init__(self, n_clusters: int = 8, *, gamma: float | str = "auto",
                 server_points: str = "centers", client_init: str = "k-means++",
                 secure: bool = True, n_init: int = 10, max_iter: int = 300, tol: float = 1e-4,
                 bounds: tuple[float, float] = (-0.5, 0.5), modulus: int | None = None,
                 random_state: SeedLike = None, executor: Executor | None = None,
                 threshold: int | None = None, neighbors: int | str = "auto",
                 client_timeout: float | None = None,
                 progress: bool | Callable[..., Any] = False) -> None:
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
        lo, hi = check_bounds(self.bounds)
        g = self.gamma
        if isinstance(g, str):
            if g != "auto":
                raise InvalidInputError(f"gamma={g!r} must be a positive float or 'auto'")
            g = (hi - lo) / np.sqrt(n)
        if not isinstance(g, numbers.Real) or not np.isfinite(g) or g <= 0:
            raise InvalidInputError(f"gamma={g!r} must be a positive float or 'auto'")
        if g > hi - lo:
            raise InvalidInputError(
                f"gamma={g!r} is larger than the data box bounds={self.bounds!r} (width "
                f"{hi - lo:g}): every point would fall into one bin; use gamma <= {hi - lo:g} "
                "(or gamma='auto'), in the units of bounds")
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

    # -- the federation's state, read-only ----------------------------------------

    @property
    def participants_(self) -> list[int]:
        """Indices of the clients in the roster (those that left through
        :meth:`remove_clients` are not), ascending."""
        self._check_fitted()
        return sorted(self._participants)

    @property
    def removed_(self) -> list[NDArray[np.bool_] | None]:
        """Per client, a boolean mask over the rows given to :meth:`fit`:
        True at the rows removed since (a copy; ``None`` for a client that
        left, whose data the model no longer holds)."""
        self._check_fitted()
        return [None if c is None else c.removed_.copy() for c in self._clients]

    @property
    def client_center_rows_(self) -> list[NDArray[np.int64] | None]:
        """Per client, the row ids (in the rows given to :meth:`fit`) of its
        local centers in seeding order (``None`` for a client that left):
        removing the first of them reseeds that client from scratch."""
        self._check_fitted()
        return [None if c is None else c.center_rows_ for c in self._clients]

    @property
    def inertia_(self) -> float:
        """The k-means objective of the model on the federation's remaining
        data: the sum over every participating client's remaining points of
        the squared distance to the nearest center of ``cluster_centers_``
        (computed from the clients' data on access; in a deployment each
        client would compute its own term).  Removed points and departed
        clients do not count."""
        with self._lock:
            self._check_fitted()
            C = self._fitted_centers()
            total = 0.0
            for c in self._clients:
                if c is not None:
                    keep = ~c.removed_
                    if keep.any():
                        total += math.fsum(self._nearest_center(c.X[keep], C)[0])
            return total

    @property
    def threshold_(self) -> int:
        """The threshold of the current aggregation: the fewest participants
        a round completes with (with ``secure=True``, also the fewest
        colluders that could unmask one client's input)."""
        self._check_fitted()
        return int(self._agg.threshold)

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

    def fit(self, clients: Sequence[ArrayLike], y: object = None) -> FederatedKMeans:
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
            t = state["fit_seconds_"]
            _log.info("fitted %d clients, %d centers: clients %.3g s, secure aggregation "
                      "%.3g s (%d bytes), server %.3g s%s", len(state["_clients"]),
                      self.cluster_centers_.shape[0], t["clients"], t["aggregation"],
                      state["bytes_sent_"], t["server"],
                      f"; dropped {list(self.dropped_clients_)}" if self.dropped_clients_ else "")
            return self

    def _fit_state(self, clients):
        """The fitted state of a fit on ``clients``, built aside (self is
        not touched)."""
        names = clients_feature_names(clients)
        arrs = check_clients(clients)
        n, d = sum(a.shape[0] for a in arrs), arrs[0].shape[1]
        K, g, lo, hi = self._check_params(n, d)
        if n < K:
            raise InvalidInputError(
                f"n_samples={n} should be >= n_clusters={K}: the clients hold {n} points in "
                "all; use a smaller n_clusters")
        rng = as_generator(self.random_state)
        gens, commit_rng = _spawn_aside(rng, len(arrs) + 2)
        t0 = time.perf_counter()
        kw = dict(gamma=g, lower=lo, upper=hi, client_init=self.client_init,
                  max_iter=self.max_iter, tol=self.tol)
        B = _n_bins(lo, hi, g)
        L = len(arrs)
        agg_rng = gens[L + 1]
        participants = list(range(L))
        # the round's client steps run on ``pool`` (see _round_pool)
        with self._round_pool() as pool:
            submitted = time.monotonic()
            futures = self._submit_fits(arrs, K, kw, gens)
            if futures is None:
                clients_, failed = self._collect_fits(arrs, futures, K, kw, gens)
                t1 = time.perf_counter()
                agg = self._make_aggregator(d, B, [a.shape[0] for a in arrs], participants)
            else:
                # while the executor runs the clients' fits, this thread runs what
                # needs no data: the key agreement and the round's key shares
                try:
                    agg = self._make_aggregator(d, B, [a.shape[0] for a in arrs], participants)
                    agg.open_round(participants, pool)
                except BaseException:
                    for fut in futures:
                        fut.cancel()
                    raise
                clients_, failed = self._collect_fits(arrs, futures, K, kw, gens,
                                                      submitted=submitted)
                t1 = time.perf_counter()
            server = MufcServer(K, gamma=g, n_features=d, lower=lo,
                                server_points=self.server_points, n_init=self.n_init,
                                max_iter=self.max_iter, tol=self.tol, random_state=gens[L])
            bins, counts, nbytes, _, t_agg, dropped = agg.round(
                clients_, participants, silent=sorted(failed), prepare_next=False, first=True,
                executor=pool)
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
        warn_if_fewer_distinct(server.cluster_centers_, K, self, stacklevel=4)
        return {**({} if names is None else {"feature_names_in_": names}),
                "_clients": clients_, "_server": server, "_agg": agg, "_agg_rng": agg_rng,
                "_participants": [i for i in participants if i not in gone],
                "dropped_clients_": tuple(sorted(gone)),
                "gamma_": g, "n_bins_per_dim_": B,
                "n_features_in_": d, "bytes_sent_": nbytes,
                "fit_seconds_": {"clients": t1 - t0, "aggregation": t2 - t1,
                                 "server": t3 - t2}}, commit_rng

    def _submit_fits(self, arrs, K, kw, gens, first=0):
        """Check every client's data against the box, then submit their
        local fits to the executor (one task a client, in order; None
        without an executor: :meth:`_collect_fits` fits in process).  Data
        the driver can check (the box) is checked here, for every client,
        before any task runs: bad input raises, only a failing task drops."""
        lo, hi = kw["lower"], kw["upper"]
        for i, X in enumerate(arrs):
            if X.size and (float(X.min()) < lo or float(X.max()) > hi):
                raise InvalidInputError(
                    f"clients[{first + i}] has values outside bounds=({lo}, {hi}); scale the "
                    "features into the box first from public ranges (pyfkm.scale_to_box(X, "
                    f"lower, upper, box=({lo}, {hi})))")
        if self.executor is None:
            return None
        if isinstance(self.executor, ThreadPoolExecutor):
            # same process: the task builds the client in place (its
            # generator is used by that task only), nothing is copied back
            return [self.executor.submit(_fit_client_task, X, K, kw, gens[i], live=True)
                    for i, X in enumerate(arrs)]
        return [self.executor.submit(_fit_client_task, X, K, kw, _rng_state(gens[i]))
                for i, X in enumerate(arrs)]

    def _collect_fits(self, arrs, futures, K, kw, gens, first=0, stacklevel=4,
                      submitted=None):
        """The fits of :meth:`_submit_fits`: ``(clients, failed)``, a
        ``MufcClient`` per array or None for a client whose task raised or
        timed out (``failed``: its error by client index).  ``client_timeout``
        counts from ``submitted`` (``time.monotonic()`` when the tasks were
        submitted; now if None), so the work the driver overlaps with the
        fits does not lengthen it."""
        from .._progress import progress_bar
        bar = progress_bar(self.progress, len(arrs), "client fits")
        clients_, failed = [], {}
        try:
            if futures is None:
                for i, X in enumerate(arrs):
                    clients_.append(MufcClient(X, K, random_state=gens[i], **kw))
                    bar.update()
                return clients_, failed
            start = time.monotonic() if submitted is None else submitted
            deadline = None if self.client_timeout is None else \
                start + float(self.client_timeout)
            for i, (X, fut) in enumerate(zip(arrs, futures)):
                try:
                    wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                    res = fut.result(timeout=wait)
                except Exception as e:            # noqa: BLE001 - a failed client drops
                    fut.cancel()
                    failed[first + i] = e
                    clients_.append(None)
                    warnings.warn(f"client {first + i} dropped from the round: its local fit "
                                  f"failed ({type(e).__name__}: {e})", RuntimeWarning,
                                  stacklevel=stacklevel)
                    bar.update()
                    continue
                if isinstance(res, MufcClient):   # built in place (a thread pool)
                    clients_.append(res)
                else:
                    head, arrays = res
                    arrays["X"] = X
                    clients_.append(MufcClient._restore(head, "", arrays))
                bar.update()
            return clients_, failed
        finally:
            bar.close()

    @contextlib.contextmanager
    def _round_pool(self):
        """The thread pool on which the clients of a fit's (or a join's)
        secure round compute their masks and encodings (kernels that release
        the GIL; the roles, which hold live keys, never leave this process):
        the executor itself when it is a ``ThreadPoolExecutor``; with
        another executor (a ``ProcessPoolExecutor``, Dask's), threads of
        this process for the call, one per available core (at most 16: a
        step runs in at most 16 batches); without one, None (the driver
        computes them)."""
        ex = self.executor
        if ex is None or isinstance(ex, ThreadPoolExecutor):
            yield ex
            return
        pool = ThreadPoolExecutor(min(available_cores(), 16), thread_name_prefix="pyfkm-round")
        try:
            yield pool
        finally:
            pool.shutdown(wait=True)      # no task runs any more: the steps waited

    def _thread_pool(self):
        """The executor when its tasks run in this process (a
        ``ThreadPoolExecutor``: it may run the clients' steps of the secure
        round, whose roles hold live keys and never leave the process),
        else None."""
        return self.executor if isinstance(self.executor, ThreadPoolExecutor) else None

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

    def remove(self, client: int, ids: ArrayLike) -> FederatedRemovalReport:
        """Remove points ``ids`` (one or many) of client ``client`` and erase them.

        Parameters
        ----------
        client : int
            Index of the client in the list given to :meth:`fit`.
        ids : int or sequence of int
            Row positions in that client's data.

        Returns
        -------
        report : FederatedRemovalReport
            What the removal did (reseeding, re-aggregation, reclustering)
            and cost.

        Raises
        ------
        InvalidIdError
            Unknown, repeated or already removed ids, or a client that left.
        NotFittedError
            Before :meth:`fit`.

        Notes
        -----
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
            _log.info("removal from client %d: %s in %.3g s", client,
                      "server reclustered" if report.server_reclustered else "model unchanged",
                      _online_seconds(report))
            return report

    def remove_clients(self, ids: ArrayLike) -> FederatedRemovalReport:
        """Remove whole clients and erase their data.

        Parameters
        ----------
        ids : int or sequence of int
            Client indices; the next rounds run over the remaining roster.

        Returns
        -------
        report : FederatedRemovalReport
            Of the round over the remaining clients (``clients`` is empty;
            ``dropped``: clients that went silent and left too).

        Raises
        ------
        InvalidIdError
            Unknown, repeated or already removed clients, or all of them.

        Notes
        -----
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
            _log.info("clients left: %d participants remain; %.3g s",
                      len(self._participants), _online_seconds(report))
            return report

    def add_clients(self, new_clients: Sequence[ArrayLike]) -> FederatedRemovalReport:
        """Let new clients join (or dropped ones return, with their data).

        Parameters
        ----------
        new_clients : sequence of array-like of shape (n_l, n_features)
            One array per joining client, inside ``bounds``; copied.  They
            get the next client indices.

        Returns
        -------
        report : FederatedRemovalReport
            Of the joining round (``clients``: the new indices).

        Notes
        -----
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
            names = clients_feature_names(new_clients)
            fitted = getattr(self, "feature_names_in_", None)
            if (names is None) != (fitted is None) or (
                    names is not None and (names.shape != fitted.shape  # type: ignore[union-attr]
                                           or (names != fitted).any())):
                raise InvalidInputError(
                    f"new clients have feature names {None if names is None else names.tolist()}"
                    f", the model was fitted with {None if fitted is None else fitted.tolist()}")
            arrs = check_clients(new_clients)
            d = self.n_features_in_
            if arrs[0].shape[1] != d:
                raise InvalidInputError(
                    f"new clients have {arrs[0].shape[1]} features, the model has {d}")
            lo, hi = check_bounds(self.bounds)
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
            new_ids = list(range(L0, L0 + len(arrs)))
            participants = list(self._participants) + new_ids
            sizes = [None if c is None else c.X.shape[0] for c in self._clients] + \
                [a.shape[0] for a in arrs]
            K = int(self.n_clusters)
            with self._round_pool() as pool:
                submitted = time.monotonic()
                futures = self._submit_fits(arrs, K, kw, gens, first=L0)
                if futures is None:
                    fresh, failed = self._collect_fits(arrs, futures, K, kw, gens, first=L0,
                                                       stacklevel=3)
                    t_client = time.perf_counter() - t0
                    agg = self._make_aggregator(d, self.n_bins_per_dim_, sizes, participants)
                else:
                    # as in fit: the new run's keys and key shares while the new
                    # clients fit on the executor
                    try:
                        agg = self._make_aggregator(d, self.n_bins_per_dim_, sizes, participants)
                        agg.open_round(participants, pool)
                    except BaseException:
                        for fut in futures:
                            fut.cancel()
                        raise
                    fresh, failed = self._collect_fits(arrs, futures, K, kw, gens, first=L0,
                                                       stacklevel=3, submitted=submitted)
                    t_client = time.perf_counter() - t0
                clients = list(self._clients) + fresh
                failed_set = set(failed)
                try:
                    for i in new_ids:
                        agg.mark(i)
                    bins, counts, nbytes, inc, t_agg, dropped = agg.round(
                        clients, participants, silent=sorted(failed_set), prepare_next=False,
                        first=True, executor=pool)
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
            _log.info("%d client(s) joined in %.3g s", len(arrs), _online_seconds(report))
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
        names = getattr(self, "feature_names_in_", None)
        if names is not None:
            head["feature_names"] = [str(v) for v in names]
        return head, arrays

    def save(self, path: str | os.PathLike[str]) -> None:
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

        Parameters
        ----------
        path : str or path-like
            Where to write the model (conventionally a ``.npz`` name).

        Raises
        ------
        NotFittedError
            Before ``fit``.
        OSError
            If the file cannot be written (no file is left behind).

        Examples
        --------
        >>> import os, tempfile
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> clients = [rng.uniform(-0.5, 0.5, size=(30, 2)) for _ in range(2)]
        >>> fkm = FederatedKMeans(2, server_points="centers", random_state=0).fit(clients)
        >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
        >>> fkm.save(path)
        >>> bool((FederatedKMeans.load(path).cluster_centers_ == fkm.cluster_centers_).all())
        True
        """
        with self._lock:
            self._check_fitted()
            head, arrays = self._to_arrays()
        write_model(path, head, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, max_bytes: int | None = None
             ) -> FederatedKMeans:
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
        head, arrays = _read_model(path, max_bytes)
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

    def _fitted_centers(self):
        if self.cluster_centers_.shape[0] == 0:
            raise InvalidInputError("the model has no centers: every point was removed")
        return super()._fitted_centers()
