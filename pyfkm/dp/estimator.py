"""Differentially private federated k-means (FastLloyd) and its baselines.

FastLloyd (Diaa, Humphries and Kerschbaum, "FastLloyd: Federated, Accurate,
Secure, and Tunable k-Means Clustering with Differential Privacy") runs
Lloyd's algorithm across clients that hold horizontally partitioned data:

1. every client starts from the same data-independent *sphere-packing*
   centers (Su et al. 2016; drawn from a public seed);
2. each iteration ``t``, a client assigns its points to the nearest center
   and *drops* points farther than the radius ``eta_t``; it sends, per
   cluster ``j``, the *relative* sum ``R_j = sum (x - mu_j)`` (L2
   sensitivity ``eta_t``: one point moves one ``R_j`` by at most ``eta_t``)
   and the count ``C_j`` (sensitivity 1) through masked secure aggregation
   (:mod:`pyfkm.secagg._msa`: fixed point in Z_2^64, pairwise masks, an
   output mask the server does not know);
3. the server adds Gaussian noise with standard deviations
   ``eta_t * sigma_R`` and ``sigma_C`` (FastLloyd's split of a
   per-iteration sigma, see :func:`pyfkm.privacy.fastlloyd_noise_scales`)
   and broadcasts;
4. clients decode ``R~, C~`` and set ``mu_j <- mu_j + R~_j / max(C~_j, 1)``,
   clipped to distance ``eta_t`` of the old ``mu_j`` and folded back into
   the domain (reflection at the bounds).

Radius ("step" schedule of the paper): ``diag / 2`` at the first iteration,
then ``alpha * diag / (2 k^(1/d))`` (``diag`` the domain diagonal), never
above ``diag``.  Privacy: the per-iteration release ``(R / eta_t, C)`` has
L2 sensitivity 1 and is a Gaussian mechanism with sigma ``sigma_it``; ``T``
of them compose to ``mu = sqrt(T) / sigma_it`` Gaussian DP, and
``sigma_it = sqrt(T) sigma_1`` with ``sigma_1`` the analytic Gaussian sigma
of (epsilon, delta) at sensitivity 1 (Balle & Wang 2018) makes the whole run
(epsilon, delta)-DP (add/remove one point) for Gaussian noise on the reals.
What each noise mode claims is stated in :mod:`pyfkm.privacy`: the default
discrete Gaussian on the fixed-point integers has the same zCDP guarantee
exactly and the same (epsilon, delta) up to the (negligible, sigma ~ 1e4+
grid units) discrete-vs-continuous tail difference; the continuous
``noise="gaussian"`` mode (the paper's) carries no formal guarantee in
floating point.  The fixed-point
rounding of each client's sums moves a neighbour's vector by at most
``sqrt(d) 2**-16`` more, which the sum noise includes (its sensitivity is
taken as ``eta_t + sqrt(d) 2**-16``).  The total number of points ``n`` is
public (it sets ``delta="auto"`` and the iteration count), as in the paper.

Baselines in the same framework: :class:`FederatedLloyd` (no noise, no
radius), :class:`GLloyd` (Gaussian noise on absolute sums, no radius) and
:class:`SuLloyd` (Laplace noise, Su et al. 2016).
"""
import math
import numbers

import numpy as np

from .._base import BaseEstimator
from .._validation import check_array, check_clients, check_features, check_n_clusters
from ..exceptions import InvalidInputError
from ..core.kmeans import LloydWorkspace, nearest_center
from ..rng import as_generator
from ..secagg import DEFAULT_SCALE_BITS, check_discrete_sigma, msa_round, setup_msa

__all__ = [
    "DPFederatedKMeans",
    "FederatedLloyd",
    "GLloyd",
    "SuLloyd",
    "sphere_packing_init",
    "step_radius",
    "fold_into_bounds",
]

_MAX_RETRIES = 100
_RHO = 0.225          # Su et al. (2016)'s rho, used by the SuLloyd / GLloyd splits


# ------------------------------------------------------------------ pieces

def sphere_packing_init(n_clusters, n_features, bounds=(-1.0, 1.0), random_state=None):
    """Data-independent initial centers (sphere packing, Su et al. 2016).

    Draws centers uniformly in the box shrunk by a margin ``a`` and keeps a
    candidate only if it lies at least ``2 a`` from the centers kept so far;
    ``a`` starts at half the box width and is halved after 100 consecutive
    rejections.  Depends only on the seed, so every client computes the
    same centers.

    Examples
    --------
    >>> C = sphere_packing_init(3, 2, random_state=0)
    >>> C.shape, bool((abs(C) <= 1).all())
    ((3, 2), True)
    """
    lo, hi = float(bounds[0]), float(bounds[1])
    gen = as_generator(random_state)
    k, d, width = int(n_clusters), int(n_features), hi - lo
    margin = width / 2.0
    while True:
        centers = np.empty((k, d))
        got = rejected = 0
        while got < k and rejected < _MAX_RETRIES:
            cand = lo + margin + gen.random(d) * (width - 2 * margin)
            if got == 0 or np.sqrt(((centers[:got] - cand) ** 2).sum(1).min()) >= 2 * margin:
                centers[got] = cand
                got += 1
                rejected = 0
            else:
                rejected += 1
        if got == k:
            return centers
        margin /= 2.0


def step_radius(iteration, n_clusters, n_features, alpha=0.8, bounds=(-1.0, 1.0)):
    """FastLloyd's "step" radius: ``diag / 2`` at iteration 0, then
    ``alpha * diag / (2 k^(1/d))``, capped at ``diag``.

    Examples
    --------
    >>> round(step_radius(0, 3, 4), 6), round(step_radius(1, 3, 4), 6)
    (2.0, 1.215737)
    """
    diag = (float(bounds[1]) - float(bounds[0])) * math.sqrt(n_features)
    eta = diag / 2 if iteration == 0 else alpha * diag / (2 * n_clusters ** (1.0 / n_features))
    return min(eta, diag)


def fold_into_bounds(C, bounds=(-1.0, 1.0)):
    """Reflect coordinates into ``[lo, hi]`` (folding at the bounds).

    Examples
    --------
    >>> fold_into_bounds(np.array([1.25, -1.5, 0.5, 3.5])).tolist()
    [0.75, -0.5, 0.5, -0.5]
    """
    lo, hi = float(bounds[0]), float(bounds[1])
    w = hi - lo
    v = np.mod(np.asarray(C, dtype=np.float64) - lo, 2 * w)
    return lo + np.where(v > w, 2 * w - v, v)


def _update_centers(mu, R, C, eta, relative, bounds, postprocess):
    """New centers from the decoded (noisy) sums and counts."""
    denom = np.maximum(C, 1.0)[:, None]
    new = mu + R / denom if relative else R / denom
    if eta is not None:
        diff = new - mu
        dist = np.sqrt((diff * diff).sum(1))
        far = dist > eta
        if far.any():
            new[far] = mu[far] + diff[far] * (eta / dist[far])[:, None]
    if postprocess == "fold":
        new = fold_into_bounds(new, bounds)
    elif postprocess == "truncate":
        new = np.clip(new, bounds[0], bounds[1])
    return new


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
        points if ``eta`` is None), flattened as ``[sums (k*d), counts (k)]``."""
        k, d = centers.shape
        X = self.X
        if X.shape[0] == 0:
            return np.zeros(k * d + k)
        if self._ws is None or self._ws.k != k:
            self._ws = LloydWorkspace(X, None, k, 1, pack=X.shape[0] >= 64)
        ws = self._ws
        sums, counts, _ = ws.step(centers, distances=eta is not None)
        if eta is not None:
            far = ws.mind > eta * eta      # exact squared distances from the kernel
            n_far = int(np.count_nonzero(far))
            if n_far:                      # remove the dropped points' share
                onehot = np.zeros((n_far, k))
                onehot[np.arange(n_far), ws.labels[far]] = 1.0
                sums -= onehot.T @ X[far]
                counts -= onehot.sum(0)
        if relative:
            sums -= counts[:, None] * centers
        return np.concatenate([sums.ravel(), counts])


# ------------------------------------------------------------------ driver

class _FederatedLloydBase(BaseEstimator):
    """Shared driver: validation, MSA setup, the iteration loop."""

    _relative = True

    # -- subclasses define _plan(n, k, d) -> list of per-iteration dicts
    #    {"eta": float|None, "sum_scale": float, "count_scale": float} and set
    #    self._privacy_report.

    def _check_common(self):
        k = check_n_clusters(self.n_clusters)
        b = self.bounds
        try:
            lo, hi = float(b[0]), float(b[1])
            if len(b) != 2:
                raise TypeError
        except (TypeError, ValueError, IndexError):
            raise InvalidInputError(f"bounds must be a pair (lo, hi), got {b!r}") from None
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise InvalidInputError(f"bounds must be finite with lo < hi, got {b!r}")
        if self.postprocess not in ("fold", "truncate", "none"):
            raise InvalidInputError(
                f"postprocess must be 'fold', 'truncate' or 'none', got {self.postprocess!r}")
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
                    "the bounds first (e.g. min-max with public ranges)")
        return [np.ascontiguousarray(a, dtype=np.float64) for a in arrs], n

    def fit(self, clients):
        """Fit on a sequence of client arrays (each ``(n_l, d)``, same ``d``).

        Parameters
        ----------
        clients : sequence of array-like
            One 2-D array per client; values inside ``bounds``.

        Returns
        -------
        self
        """
        k, bounds = self._check_common()
        self._check_params()
        arrs, n = self._check_data(clients, k, bounds)
        d = arrs[0].shape[1]
        init = self._check_init(k, d, bounds)
        plan, report, accountant, noise_mode = self._plan(n, k, d, bounds)

        gen = None if self.random_state is None else as_generator(self.random_state)
        init_gen = gen.spawn(1)[0] if gen is not None else None
        centers = init if init is not None else sphere_packing_init(k, d, bounds, init_gen)
        n_words = k * d + k
        # the private mode's noise is distributed: every client adds its
        # share (variance sigma**2 / threshold), which no party can remove;
        # the baselines' modes model a trusted curator (the server adds it)
        distributed = noise_mode == "discrete_gaussian"
        server, msa = setup_msa(len(arrs), n_words,
                                noise=None if distributed else noise_mode)
        local = [_LocalData(a) for a in arrs]
        ex = self.executor
        n_iter = 0
        for step in plan:
            eta = step["eta"]
            if ex is None:
                vecs = [c.stats(centers, eta, self._relative) for c in local]
            else:
                futs = [ex.submit(c.stats, centers, eta, self._relative) for c in local]
                vecs = [f.result() for f in futs]
            segments = ()
            if noise_mode is not None:
                segments = ((k * d, step["sum_scale"], b"SUM"), (k, step["count_scale"], b"CNT"))
            out, _ = msa_round(server, msa, vecs,
                               noise=segments if distributed else (),
                               server_noise=() if distributed else segments)
            new = _update_centers(centers, out[:k * d].reshape(k, d), out[k * d:], eta,
                                  self._relative, bounds, self.postprocess)
            n_iter += 1
            done = self._converged(centers, new)
            centers = new
            if done:
                break
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
        return self

    def _converged(self, old, new):
        return False

    def _record(self, accountant, step, count):
        pass

    # -- prediction
    def _check_X(self, X):
        self._check_fitted()
        return check_features(X, self.n_features_in_, self)

    def predict(self, X):
        """Index of the nearest fitted center for each row of ``X``."""
        X = self._check_X(X)
        return nearest_center(X.astype(np.float64), self.cluster_centers_)[1]

    def nicv(self, X):
        """Normalized intra-cluster variance: k-means objective of ``X`` on
        the fitted centers divided by ``len(X)`` (lower is better)."""
        X = self._check_X(X)
        d2, _ = nearest_center(X.astype(np.float64), self.cluster_centers_)
        return float(d2.sum() / X.shape[0])

    def score(self, X, y=None):
        """Opposite of :meth:`nicv` (greater is better, as ``KMeans.score``)."""
        return -self.nicv(X)


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


class DPFederatedKMeans(_FederatedLloydBase):
    """Differentially private federated k-means (FastLloyd).

    Parameters
    ----------
    n_clusters : int
    epsilon : float
        Privacy budget of the whole fit (add/remove one point).
        ``math.inf`` turns the noise off (then the fit is *not* private: the
        same algorithm, for testing and utility ceilings).
    delta : "auto" or float, default="auto"
        ``"auto"``: ``1 / (n ln n)``.
    max_iter : "auto" or int, default="auto"
        Number of iterations ``T`` (a DP fit always runs all of them: the
        budget is split over ``T``).  ``"auto"`` uses FastLloyd's heuristic
        (:func:`pyfkm.privacy.fastlloyd_iterations`, between 2 and 7; 7
        without noise).
    radius : "step" or float, default="step"
        ``"step"``: the paper's schedule (:func:`step_radius`); a float: the
        same radius ``eta`` at every iteration.
    alpha : float, default=0.8
        Radius factor of the "step" schedule.
    init : "sphere_packing" or array (n_clusters, n_features)
        Initial centers; must not depend on the data (an array is assumed
        public).
    postprocess : {"fold", "truncate", "none"}, default="fold"
        How centers are brought back into the bounds.
    noise : {"discrete_gaussian", "gaussian"}, default="discrete_gaussian"
        ``"discrete_gaussian"``: *distributed* discrete Gaussian noise on the
        fixed-point integers -- every client adds a share of variance
        ``sigma**2 / threshold`` under its own OS key, so neither the server
        nor the server with fewer than ``threshold`` clients can remove it
        (see ``docs/threat_model.md`` for the guarantee and its accounting).
        ``"gaussian"``: a continuous Gaussian added by the server and
        rounded to the grid, as in the paper's experiments (a trusted-curator
        baseline: the server could remove it).
    bounds : (float, float), default=(-1, 1)
        Every feature of every point lies in ``[lo, hi]`` (checked).
    random_state : None, int, SeedSequence or Generator
        Seeds the initialization only.  Keys, masks and the noise come from
        the operating system, so two fits with the same seed start alike
        but draw independent noise (which is what privacy needs); a
        noise-free :class:`FederatedLloyd` with a seed is reproducible.
    executor : concurrent.futures.Executor, optional
        Runs each client's local step (assignment and sums); default: in the
        calling thread.

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features)
    n_iter_ : int
    privacy_ : dict
        epsilon, delta, iterations, per-iteration sigma, the noise standard
        deviations and radii used.
    accountant_ : pyfkm.privacy.PrivacyAccountant or None
        What the fit spent (None without noise).

    Notes
    -----
    Only the clients see their data and the decoded centers; the
    :class:`~pyfkm.secagg._msa.MsaServer` only holds masked fixed-point words
    and shares it cannot combine.  Every client of every round takes part
    in the secure aggregation with the run's default threshold (a strict
    majority of the clients).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.clip(np.concatenate([rng.normal(-0.5, 0.1, (200, 2)),
    ...                             rng.normal(0.5, 0.1, (200, 2))]), -1, 1)
    >>> km = DPFederatedKMeans(2, epsilon=1.0, random_state=0).fit([X[::2], X[1::2]])
    >>> km.cluster_centers_.shape, km.n_iter_ == km.privacy_["iterations"]
    ((2, 2), True)
    >>> round(km.privacy_["epsilon_spent"], 6)
    1.0
    """

    _relative = True

    def __init__(self, n_clusters, *, epsilon, delta="auto", max_iter="auto", radius="step",
                 alpha=0.8, init="sphere_packing", postprocess="fold",
                 noise="discrete_gaussian", bounds=(-1, 1), random_state=None, executor=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.delta = delta
        self.max_iter = max_iter
        self.radius = radius
        self.alpha = alpha
        self.init = init
        self.postprocess = postprocess
        self.noise = noise
        self.bounds = bounds
        self.random_state = random_state
        self.executor = executor

    def _check_params(self):
        _check_epsilon(self.epsilon)
        _check_delta(self.delta)
        _check_max_iter(self.max_iter)
        r = self.radius
        if isinstance(r, str):
            if r != "step":
                raise InvalidInputError(f"radius must be 'step' or a positive float, got {r!r}")
        elif not isinstance(r, numbers.Real) or isinstance(r, bool) or not (0 < r < math.inf):
            raise InvalidInputError(f"radius={r!r} must be 'step' or a positive finite float")
        a = self.alpha
        if not isinstance(a, numbers.Real) or isinstance(a, bool) or not (0 < a < math.inf):
            raise InvalidInputError(f"alpha={a!r} must be a positive finite float")
        if self.noise not in ("discrete_gaussian", "gaussian"):
            raise InvalidInputError(
                f"noise must be 'discrete_gaussian' or 'gaussian', got {self.noise!r}")

    def _radius(self, t, k, d, bounds):
        if self.radius == "step":
            return step_radius(t, k, d, self.alpha, bounds)
        return min(float(self.radius), (bounds[1] - bounds[0]) * math.sqrt(d))

    def _plan(self, n, k, d, bounds):
        from . import accounting as P
        eps = float(self.epsilon)
        private = math.isfinite(eps)
        delta = (P.default_delta(n) if self.delta == "auto" else float(self.delta))
        half = (bounds[1] - bounds[0]) / 2.0
        if not private:
            T = 7 if self.max_iter == "auto" else int(self.max_iter)
            etas = [self._radius(t, k, d, bounds) for t in range(T)]
            report = {"epsilon": math.inf, "delta": 0.0, "iterations": T, "sigma": 0.0,
                      "sigma_sum": 0.0, "sigma_count": 0.0, "radii": etas, "noise": None}
            return ([{"eta": e, "sum_scale": 0.0, "count_scale": 0.0} for e in etas], report,
                    None, None)
        sigma1 = P.calibrate_analytic_gaussian(eps, delta, 1.0)
        if self.max_iter == "auto":
            # the heuristic is stated for the domain [-1, 1]^d: radius in half-widths
            T = int(P.fastlloyd_iterations(n, k, d, self._radius(1, k, d, bounds) / half, sigma1))
        else:
            T = int(self.max_iter)
        sigma_it = sigma1 * math.sqrt(T)
        sig_r, sig_c = P.fastlloyd_noise_scales(sigma_it, d)
        slack = math.sqrt(d) * 2.0 ** -DEFAULT_SCALE_BITS   # fixed-point rounding
        plan = []
        for t in range(T):
            eta = self._radius(t, k, d, bounds)
            plan.append({"eta": eta, "sum_scale": sig_r * (eta + slack), "count_scale": sig_c,
                         "sigma": sigma_it})
        if self.noise == "discrete_gaussian":   # refuse before any work
            check_discrete_sigma([s["sum_scale"] for s in plan] + [sig_c])
        acct = P.PrivacyAccountant(eps, delta)
        report = {"epsilon": eps, "delta": delta, "iterations": T, "sigma": sigma_it,
                  "sigma_sum": sig_r, "sigma_count": sig_c, "radii": [s["eta"] for s in plan],
                  "noise": self.noise}
        return plan, report, acct, self.noise

    def _record(self, accountant, step, count):
        # T identical releases (R / eta_t, C) of sensitivity 1 and noise sigma
        accountant.spend(self.noise, sigma=step["sigma"], sensitivity=1.0, count=count)


class FederatedLloyd(_FederatedLloydBase):
    """Non-private federated Lloyd through the same masked aggregation.

    Relative sums without radius or noise; stops when no center moves by
    more than the fixed-point step ``2**-16`` (or after ``max_iter``).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[-0.9, -0.8], [-0.8, -0.9], [0.8, 0.9], [0.9, 0.8]])
    >>> km = FederatedLloyd(2, random_state=0).fit([X[:2], X[2:]])
    >>> np.round(np.sort(km.cluster_centers_, axis=0), 4).tolist()
    [[-0.85, -0.85], [0.85, 0.85]]
    """

    _relative = True

    def __init__(self, n_clusters, *, max_iter=300, init="sphere_packing", postprocess="none",
                 bounds=(-1, 1), random_state=None, executor=None):
        self.n_clusters = n_clusters
        self.max_iter = max_iter
        self.init = init
        self.postprocess = postprocess
        self.bounds = bounds
        self.random_state = random_state
        self.executor = executor

    def _check_params(self):
        _check_max_iter(self.max_iter, allow_auto=False)

    def _plan(self, n, k, d, bounds):
        T = int(self.max_iter)
        report = {"epsilon": math.inf, "delta": 0.0, "iterations": T, "noise": None}
        return [{"eta": None}] * T, report, None, None

    def _converged(self, old, new):
        return float(np.abs(new - old).max()) <= 2.0 ** -DEFAULT_SCALE_BITS


class GLloyd(_FederatedLloydBase):
    """Gaussian-noise federated Lloyd without the radius constraint (the
    "GLloyd" baseline of FastLloyd).

    Absolute sums (L2 sensitivity ``sqrt(d) max(|lo|, |hi|)``) and counts
    with noise ``sigma_it * sqrt(2 rho + sqrt(d)) / d^(1/4)`` (times the
    sensitivity) and ``sigma_it * sqrt(2 rho + sqrt(d)) / sqrt(2 rho)``,
    ``rho = 0.225``; the two release together a Gaussian mechanism of
    sigma ``sigma_it`` at sensitivity 1.  ``T`` (``max_iter="auto"``):
    ``clip(0.004 n^2 / (k^3 d (2 rho + sqrt d)^2 sigma_1^2), 2, 7)``, the
    paper's constants.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, (300, 2))
    >>> GLloyd(2, epsilon=1.0, random_state=0).fit([X[:150], X[150:]]).n_iter_ >= 2
    True
    """

    _relative = False

    def __init__(self, n_clusters, *, epsilon, delta="auto", max_iter="auto",
                 init="sphere_packing", postprocess="fold", noise="gaussian", bounds=(-1, 1),
                 random_state=None, executor=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.delta = delta
        self.max_iter = max_iter
        self.init = init
        self.postprocess = postprocess
        self.noise = noise
        self.bounds = bounds
        self.random_state = random_state
        self.executor = executor

    def _check_params(self):
        _check_epsilon(self.epsilon, allow_inf=False)
        _check_delta(self.delta)
        _check_max_iter(self.max_iter)
        if self.noise not in ("discrete_gaussian", "gaussian"):
            raise InvalidInputError(
                f"noise must be 'discrete_gaussian' or 'gaussian', got {self.noise!r}")

    def _plan(self, n, k, d, bounds):
        from . import accounting as P
        eps = float(self.epsilon)
        delta = P.default_delta(n) if self.delta == "auto" else float(self.delta)
        sigma1 = P.calibrate_analytic_gaussian(eps, delta, 1.0)
        if self.max_iter == "auto":
            t = 0.004 * n ** 2 / (k ** 3 * d * (2 * _RHO + math.sqrt(d)) ** 2 * sigma1 ** 2)
            T = int(min(max(t, 2), 7))
        else:
            T = int(self.max_iter)
        sigma_it = sigma1 * math.sqrt(T)
        base = math.sqrt(2 * _RHO + math.sqrt(d))
        sens = math.sqrt(d) * max(abs(bounds[0]), abs(bounds[1])) \
            + math.sqrt(d) * 2.0 ** -DEFAULT_SCALE_BITS
        step = {"eta": None, "sum_scale": sigma_it * base / d ** 0.25 * sens,
                "count_scale": sigma_it * base / math.sqrt(2 * _RHO), "sigma": sigma_it}
        if self.noise == "discrete_gaussian":
            check_discrete_sigma([step["sum_scale"], step["count_scale"]])
        acct = P.PrivacyAccountant(eps, delta)
        report = {"epsilon": eps, "delta": delta, "iterations": T, "sigma": sigma_it,
                  "noise": self.noise}
        return [step] * T, report, acct, self.noise

    def _record(self, accountant, step, count):
        # T identical releases (R / eta_t, C) of sensitivity 1 and noise sigma
        accountant.spend(self.noise, sigma=step["sigma"], sensitivity=1.0, count=count)


class SuLloyd(_FederatedLloydBase):
    """Laplace-noise federated Lloyd (Su et al. 2016), pure epsilon-DP.

    Per iteration ``epsilon / T`` is split between the absolute sums (L1
    sensitivity ``d max(|lo|, |hi|)``) and the counts (sensitivity 1) in the
    ratio ``d : (4 d rho^2)^(1/3)``, ``rho = 0.225``; ``T``
    (``max_iter="auto"``) is ``epsilon / epsilon_m`` with ``epsilon_m =
    sqrt(500 k^3 / n^2 (d + (4 d rho^2)^(1/3))^3)``, clipped to [2, 7].
    Budget by basic composition (reported in ``privacy_``).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, (300, 2))
    >>> SuLloyd(2, epsilon=1.0, random_state=0).fit([X[:150], X[150:]]).privacy_["epsilon"]
    1.0
    """

    _relative = False

    def __init__(self, n_clusters, *, epsilon, max_iter="auto", init="sphere_packing",
                 postprocess="fold", bounds=(-1, 1), random_state=None, executor=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.max_iter = max_iter
        self.init = init
        self.postprocess = postprocess
        self.bounds = bounds
        self.random_state = random_state
        self.executor = executor

    def _check_params(self):
        _check_epsilon(self.epsilon, allow_inf=False)
        _check_max_iter(self.max_iter)

    def _plan(self, n, k, d, bounds):
        eps = float(self.epsilon)
        c = (4 * d * _RHO ** 2) ** (1 / 3)
        if self.max_iter == "auto":
            eps_m = math.sqrt(500 * k ** 3 / n ** 2 * (d + c) ** 3)
            T = int(min(max(eps / eps_m, 2), 7))
        else:
            T = int(self.max_iter)
        eps_it = eps / T
        eps_sum, eps_cnt = eps_it * d / (d + c), eps_it * c / (d + c)
        l1 = d * max(abs(bounds[0]), abs(bounds[1])) + d * 2.0 ** -DEFAULT_SCALE_BITS
        step = {"eta": None, "sum_scale": l1 / eps_sum, "count_scale": 1.0 / eps_cnt}
        report = {"epsilon": eps_it * T, "delta": 0.0, "iterations": T,
                  "epsilon_per_iteration": eps_it, "noise": "laplace"}
        return [step] * T, report, None, "laplace"
