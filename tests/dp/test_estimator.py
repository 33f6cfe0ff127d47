"""DPFederatedKMeans (FastLloyd) and the baselines.

Oracles: a plain numpy implementation of the same algorithm written here
(no pyfkm code), brute-force nearest centers, the analytic Gaussian
mechanism's delta formula (Balle & Wang 2018, Thm. 8) with scipy, and
hand-computed radii.  ``epsilon=math.inf`` is the documented way to turn the
noise off (the fit is then not private).

``random_state`` seeds the initialization only: keys and the private mode's
distributed noise come from the OS, so a private fit is not reproducible
and its tests check what holds for every draw (the same start and budget
for the same seed, noise scales at the call sites, bounds with a large
margin); noise-free fits are reproducible and compared exactly.
"""
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from scipy.stats import norm

from pyfkm.exceptions import InvalidInputError, NotFittedError
from pyfkm.dp.baselines import GLloyd, SuLloyd
from pyfkm.dp.estimator import DPFederatedKMeans, FederatedLloyd
from _helpers.dp import blobs, split


# ------------------------------------------------------------ errors first

GOOD = {"n_clusters": 2, "epsilon": 1.0}


@pytest.mark.parametrize("bad", [
    {"epsilon": 0}, {"epsilon": -1.0}, {"epsilon": float("nan")}, {"epsilon": "1"},
    {"epsilon": True}, {"delta": 0.0}, {"delta": 1.0}, {"delta": "x"},
    {"max_iter": 0}, {"max_iter": 2.5}, {"max_iter": "many"},
    {"radius": "wide"}, {"radius": -1.0}, {"radius": math.inf},
    {"alpha": 0.0}, {"alpha": -2}, {"init": "k-means++"}, {"init": np.zeros((3, 2))},
    {"init": np.full((2, 2), 2.0)}, {"postprocess": "clip"}, {"noise": "laplace"},
    {"bounds": (1, -1)}, {"bounds": (0,)}, {"bounds": (0, math.inf)}, {"random_state": -1},
    {"executor": object()}, {"n_clusters": 0}, {"n_clusters": 1000},
])
def test_bad_parameters_raise_and_change_nothing(bad):
    X = blobs()
    km = DPFederatedKMeans(**GOOD, random_state=0).fit(split(X))
    before = km.cluster_centers_.copy()
    km.set_params(**bad)
    with pytest.raises(InvalidInputError):
        km.fit(split(X))
    assert np.array_equal(km.cluster_centers_, before)


@pytest.mark.parametrize("clients", [
    [], [np.zeros((3, 2)), np.zeros((3, 3))], [np.array([[0.0, np.nan]])],
    [np.array([[0.0, 1.5]])], np.zeros((4, 2)), [np.zeros((0, 2))],
])
def test_bad_clients_raise(clients):
    with pytest.raises(InvalidInputError):
        DPFederatedKMeans(1, epsilon=1.0, random_state=0).fit(clients)


def test_not_fitted_and_wrong_width():
    km = DPFederatedKMeans(2, epsilon=1.0)
    with pytest.raises(NotFittedError):
        km.predict(np.zeros((2, 2)))
    km.fit(split(blobs(d=2)))
    with pytest.raises(InvalidInputError):
        km.predict(np.zeros((2, 3)))


# ------------------------------------------------------------ numpy reference

def reference_fastlloyd(clients, init, T, alpha, bounds=(-1.0, 1.0)):
    """The FastLloyd iteration without noise, in plain numpy."""
    lo, hi = bounds
    k, d = init.shape
    diag = (hi - lo) * math.sqrt(d)
    mu = init.copy()
    dropped = 0
    for t in range(T):
        eta = diag / 2 if t == 0 else alpha * diag / (2 * k ** (1 / d))
        eta = min(eta, diag)
        R, C = np.zeros((k, d)), np.zeros(k)
        for X in clients:
            d2 = ((X[:, None, :] - mu[None]) ** 2).sum(-1)
            lab = d2.argmin(1)
            keep = d2[np.arange(len(X)), lab] <= eta ** 2
            dropped += int((~keep).sum())
            for j in range(k):
                sel = X[keep & (lab == j)]
                R[j] += (sel - mu[j]).sum(0)
                C[j] += len(sel)
        new = mu + R / np.maximum(C, 1)[:, None]
        step = new - mu
        nrm = np.linalg.norm(step, axis=1)
        big = nrm > eta
        new[big] = mu[big] + step[big] / nrm[big, None] * eta
        w = hi - lo
        m = np.mod(new - lo, 2 * w)
        mu = lo + np.where(m > w, 2 * w - m, m)
    return mu, dropped


@pytest.mark.parametrize("seed,k,d,parts", [(0, 3, 2, 2), (1, 4, 3, 3), (2, 2, 5, 1)])
def test_noiseless_fit_equals_numpy_reference(seed, k, d, parts):
    X = blobs(seed, n=300, d=d, k=k)
    rng = np.random.default_rng(seed)
    init = rng.uniform(-0.9, 0.9, (k, d))
    clients = split(X, parts, seed)
    # alpha small enough that the radius drops points (checked): the drop matters
    alpha = 0.15
    want, dropped = reference_fastlloyd(clients, init, 5, alpha)
    assert dropped > 0
    km = DPFederatedKMeans(k, epsilon=math.inf, max_iter=5, alpha=alpha, init=init,
                           random_state=seed).fit(clients)
    assert km.n_iter_ == 5
    # fixed-point rounding: <= 2**-17 per coordinate of each client's sums
    assert np.allclose(km.cluster_centers_, want, atol=1e-4, rtol=0)
    # and not the same as ignoring the radius
    no_drop, _ = reference_fastlloyd(clients, init, 5, 100.0)
    assert not np.allclose(no_drop, want, atol=1e-3)


def test_executor_gives_the_same_fit():
    # without noise a fit is a function of the data and the seed: the same
    # with the clients' steps on a thread pool (the noise of a private fit
    # comes from the OS and differs from fit to fit, see below)
    X = blobs(5)
    fits = []
    for make in (lambda ex: DPFederatedKMeans(3, epsilon=math.inf, random_state=9, executor=ex),
                 lambda ex: FederatedLloyd(3, max_iter=5, random_state=9, executor=ex)):
        a = make(None).fit(split(X, 3))
        with ThreadPoolExecutor(2) as ex:
            b = make(ex).fit(split(X, 3))
        assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
        fits.append(a.cluster_centers_)
    assert not np.array_equal(*fits)


def test_federated_lloyd_matches_numpy_lloyd():
    X = blobs(7, n=200, d=2, k=3)
    init = np.array([[-0.5, 0.0], [0.0, 0.5], [0.5, -0.5]])
    mu = init.copy()
    for _ in range(100):
        lab = ((X[:, None] - mu[None]) ** 2).sum(-1).argmin(1)
        mu = np.array([X[lab == j].mean(0) if (lab == j).any() else mu[j] for j in range(3)])
    km = FederatedLloyd(3, init=init).fit(split(X, 2))
    assert np.allclose(km.cluster_centers_, mu, atol=1e-4)


# ------------------------------------------------------------ noise and seeds

def test_federated_lloyd_same_seed_same_fit_different_seed_different_fit():
    # no noise: the seed (through the sphere-packing start) fixes the fit
    X = blobs(11)
    f = lambda s: FederatedLloyd(3, max_iter=2, random_state=s).fit(split(X)).cluster_centers_
    assert np.array_equal(f(4), f(4))
    assert not np.array_equal(f(4), f(5))


class _FitSpy:
    """Records, per fit, the centers each client's first local step starts
    from and the decoded (noisy) sums of every round."""

    def __init__(self, monkeypatch):
        import pyfkm.dp._lloyd_base as F
        self.starts, self.sums = [], []
        orig_stats, orig_round = F._LocalData.stats, F.msa_round
        spy = self

        def stats(self, centers, *args):
            spy.starts.append(np.array(centers))
            return orig_stats(self, centers, *args)

        def msa_round(*args, **kwargs):
            out = orig_round(*args, **kwargs)
            spy.sums.append(out[0].copy())
            return out

        monkeypatch.setattr(F._LocalData, "stats", stats)
        monkeypatch.setattr(F, "msa_round", msa_round)

    def fit(self, make, clients):
        self.starts.clear()
        self.sums.clear()
        km = make().fit(clients)
        return km, self.starts[0], list(self.sums)


def test_dp_same_seed_same_start_and_budget_independent_noise(monkeypatch):
    # random_state seeds the initialization only: two private fits with the
    # same seed start from the same centers and spend the same budget, but
    # their noise is drawn independently (from the OS), so the first
    # round's decoded sums -- the same clients' sums from the same start,
    # plus noise -- differ
    X = blobs(11)
    spy = _FitSpy(monkeypatch)
    make = lambda s: (lambda: DPFederatedKMeans(3, epsilon=1.0, random_state=s))
    a, start_a, sums_a = spy.fit(make(4), split(X))
    b, start_b, sums_b = spy.fit(make(4), split(X))
    _, start_c, _ = spy.fit(make(5), split(X))
    assert np.array_equal(start_a, start_b) and not np.array_equal(start_a, start_c)
    assert a.privacy_ == b.privacy_ and a.accountant_.spent() == b.accountant_.spent()
    assert len(sums_a) == len(sums_b) == a.n_iter_
    assert not np.array_equal(sums_a[0], sums_b[0])
    assert not np.array_equal(a.cluster_centers_, b.cluster_centers_)
    # without noise the same seed gives the same sums
    make_clean = lambda: DPFederatedKMeans(3, epsilon=math.inf, random_state=4)
    _, _, clean_a = spy.fit(make_clean, split(X))
    _, _, clean_b = spy.fit(make_clean, split(X))
    assert all(np.array_equal(u, v) for u, v in zip(clean_a, clean_b))


@pytest.mark.parametrize("noise", ["discrete_gaussian", "gaussian"])
def test_noise_changes_the_fit_and_differs_across_iterations(noise):
    # same public init both times: the difference to the noiseless run is
    # the noise's effect; with one iteration vs two, the second iteration's
    # noise is not a copy of the first's
    X = blobs(12)
    init = np.array([[-0.3, 0.0, 0.2], [0.3, 0.1, -0.2], [0.0, -0.4, 0.0]])
    clean = DPFederatedKMeans(3, epsilon=math.inf, max_iter=1, init=init).fit(split(X))
    noisy = DPFederatedKMeans(3, epsilon=0.5, max_iter=1, init=init, noise=noise,
                              random_state=1).fit(split(X))
    assert not np.allclose(clean.cluster_centers_, noisy.cluster_centers_, atol=1e-3)


@pytest.mark.parametrize("where", ["clients", "server"])
def test_noise_differs_across_rounds(where):
    # distributed noise (the clients' shares) and the baselines' server
    # noise are both fresh every round
    from pyfkm.secagg.msa import msa_round, setup_msa
    seg = ((4, 1.0, b"SUM"), (2, 1.0, b"CNT"))
    server, clients = setup_msa(2, 6, noise=None if where == "clients" else "gaussian")
    outs = []
    for _ in range(3):
        kw = {"noise": seg} if where == "clients" else {"server_noise": seg}
        outs.append(msa_round(server, clients, [np.zeros(6)] * 2, **kw)[0])
    assert len({o.tobytes() for o in outs}) == 3


def _spy_servers(monkeypatch):
    import pyfkm.dp._lloyd_base as F
    servers = []
    orig = F.setup_msa

    def setup(*args, **kwargs):
        out = orig(*args, **kwargs)
        servers.append(out[0])
        return out

    monkeypatch.setattr(F, "setup_msa", setup)
    return servers


def test_private_fit_server_holds_no_noise_key(monkeypatch):
    # the private mode's noise is the clients': the server has no noise key
    # and adds nothing (it could not remove what it never knew); the
    # trusted-curator baselines keep server noise under a server key
    servers = _spy_servers(monkeypatch)
    X = blobs(21)
    DPFederatedKMeans(3, epsilon=1.0, random_state=0).fit(split(X))
    GLloyd(3, epsilon=1.0, noise="discrete_gaussian", random_state=0).fit(split(X))
    GLloyd(3, epsilon=1.0, random_state=0).fit(split(X))
    SuLloyd(3, epsilon=1.0, random_state=0).fit(split(X))
    DPFederatedKMeans(3, epsilon=1.0, noise="gaussian", random_state=0).fit(split(X))
    dp, g_dist, g, su, dp_gauss = servers
    for srv in (dp, g_dist):
        assert srv._noise_key is None and srv.noise is None
    assert g.noise == "gaussian" and su.noise == "laplace" and dp_gauss.noise == "gaussian"
    assert all(len(srv._noise_key) == 32 for srv in (g, su, dp_gauss))


# ------------------------------------------------------------ privacy budget

def analytic_delta(mu, eps):
    """delta(eps) of mu-GDP (= the analytic Gaussian with sigma/Delta = 1/mu)."""
    return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("eps,delta,max_iter", [(1.0, "auto", "auto"), (0.1, 1e-5, 3),
                                                (0.5, 1e-6, 6)])
def test_budget_reported_equals_configured(eps, delta, max_iter):
    X = blobs(13, n=400, d=4, k=3)
    km = DPFederatedKMeans(3, epsilon=eps, delta=delta, max_iter=max_iter,
                           random_state=0).fit(split(X))
    n, d, T = 400, 4, km.n_iter_
    want_delta = 1 / (n * math.log(n)) if delta == "auto" else delta
    p = km.privacy_
    assert p["delta"] == pytest.approx(want_delta, rel=1e-12)
    assert 2 <= T <= 7 and p["iterations"] == T
    if max_iter != "auto":
        assert T == max_iter
    # per-iteration release (R / eta, C) has sensitivity 1; its two noise
    # parts combine to sigma: (1/sigma_R)^2 + (1/sigma_C)^2 = 1/sigma^2
    sR, sC, s = p["sigma_sum"], p["sigma_count"], p["sigma"]
    assert 1 / sR ** 2 + 1 / sC ** 2 == pytest.approx(1 / s ** 2, rel=1e-9)
    assert sR / sC == pytest.approx((4 * d) ** -0.25, rel=1e-9)
    mu = math.sqrt(T) / s
    assert analytic_delta(mu, eps) == pytest.approx(want_delta, rel=1e-6)
    e_spent, d_spent = km.accountant_.spent()
    assert e_spent == pytest.approx(eps, rel=1e-6) and d_spent == pytest.approx(want_delta)
    assert p["epsilon_spent"] == pytest.approx(eps, rel=1e-6)


def test_noiseless_report_and_auto_iterations():
    km = DPFederatedKMeans(2, epsilon=math.inf).fit(split(blobs()))
    assert km.accountant_ is None and km.privacy_["epsilon"] == math.inf and km.n_iter_ == 7


# ------------------------------------------------------------ predictions

def test_predict_and_nicv_against_brute_force():
    X = blobs(15)
    km = DPFederatedKMeans(3, epsilon=1.0, random_state=2).fit(split(X))
    C = km.cluster_centers_
    d2 = ((X[:, None] - C[None]) ** 2).sum(-1)
    assert np.array_equal(km.predict(X), d2.argmin(1))
    assert km.nicv(X) == pytest.approx(d2.min(1).mean(), rel=1e-9)
    # score is the negative *sum* (as KMeans.score), nicv the mean
    assert km.score(X) == pytest.approx(-d2.min(1).sum(), rel=1e-9)
    assert km.score(X) == pytest.approx(-km.nicv(X) * len(X), rel=1e-12)


def test_utility_on_separated_blobs():
    # well-separated blobs and a public start near them, eps = 1: the private
    # fit stays close to the noiseless one (a loose bound that fails if the
    # noise scale or the radius logic misbehave)
    X = blobs(16, n=3000, d=2, k=3, spread=0.05)
    means = np.random.default_rng(16).uniform(-0.6, 0.6, (3, 2))   # as in blobs()
    init = means + 0.15
    clean = DPFederatedKMeans(3, epsilon=math.inf, init=init).fit(split(X)).nicv(X)
    dp = np.median([DPFederatedKMeans(3, epsilon=1.0, init=init, random_state=s)
                    .fit(split(X)).nicv(X) for s in range(5)])
    assert clean < 0.006            # the start leads to the three blobs
    assert dp < 1.5 * clean


def test_server_only_sees_masked_words(monkeypatch):
    # spy on what the server receives and broadcasts during a fit: no
    # client's plaintext encoding, and the broadcast is not the noisy sum
    # (it is still under the output mask)
    import pyfkm.dp._lloyd_base as F
    import pyfkm.secagg.msa as M
    from pyfkm.secagg.msa._fixed import encode_fixed
    received, plain, sent = [], [], []
    orig_receive, orig_finish, orig_stats = (M.MsaServer.receive, M.MsaServer.finish_round,
                                             F._LocalData.stats)

    def receive(self, msg):
        received.append(msg.payload.copy())
        return orig_receive(self, msg)

    def finish(self, segments=()):
        out = orig_finish(self, segments)
        sent.append(out.payload.copy())
        return out

    def stats(self, *args):
        v = orig_stats(self, *args)
        plain.append(encode_fixed(v))
        return v

    monkeypatch.setattr(M.MsaServer, "receive", receive)
    monkeypatch.setattr(M.MsaServer, "finish_round", finish)
    monkeypatch.setattr(F._LocalData, "stats", stats)
    DPFederatedKMeans(3, epsilon=1.0, max_iter=3, random_state=0).fit(split(blobs(17), 3))
    assert len(received) == len(plain) == 9 and len(sent) == 3
    for r in received:
        assert not any(np.array_equal(r, p) for p in plain)
    for t, s in enumerate(sent):
        total = sum(p.astype(np.uint64) for p in plain[3 * t: 3 * t + 3])
        gap = (s - total).view(np.int64)      # noise would be small; a mask is not
        assert np.abs(gap.astype(np.float64)).max() > 2.0 ** 50


def test_fastlloyd_noise_per_iteration_scales_with_the_radius(monkeypatch):
    # the private mode's noise is distributed: capture the segments each
    # client's share is drawn for (pyfkm.secagg.msa._noise.client_noise) and the
    # server's (none), and compare with FastLloyd's formulas written out here
    import pyfkm.secagg.msa as M
    from pyfkm.secagg.msa import _client     # MsaClient.respond looks client_noise up there
    from pyfkm.dp import calibrate_analytic_gaussian
    shares, at_server = [], []
    orig_noise, orig_finish = _client.client_noise, M.MsaServer.finish_round

    def client_noise(segments, n_words, threshold, *args):
        shares.append((tuple(segments), n_words, threshold))
        return orig_noise(segments, n_words, threshold, *args)

    def finish(self, segments=()):
        at_server.append(tuple(segments))
        return orig_finish(self, segments)

    monkeypatch.setattr(_client, "client_noise", client_noise)
    monkeypatch.setattr(M.MsaServer, "finish_round", finish)
    n, d, k, eps, delta, T, alpha, L = 300, 4, 3, 0.8, 1e-5, 4, 0.8, 3
    DPFederatedKMeans(k, epsilon=eps, delta=delta, max_iter=T, random_state=0).fit(
        split(blobs(19, n=n, d=d, k=k), L))
    s = calibrate_analytic_gaussian(eps, delta) * math.sqrt(T)
    g = math.sqrt(1 + math.sqrt(4 * d))
    diag = 2 * math.sqrt(d)
    assert len(shares) == T * L and at_server == [()] * T
    for t in range(T):
        eta = diag / 2 if t == 0 else alpha * diag / (2 * k ** (1 / d))
        for (sum_seg, cnt_seg), n_words, threshold in shares[t * L:(t + 1) * L]:
            # each client adds sigma**2 / threshold: the threshold is the
            # run's (a strict majority of the L clients)
            assert n_words == k * d + k and threshold == L // 2 + 1
            assert sum_seg[:1] == (k * d,) and cnt_seg[:1] == (k,)
            assert sum_seg[1] == pytest.approx(
                s * g / (4 * d) ** 0.25 * (eta + math.sqrt(d) * 2.0 ** -16))
            assert cnt_seg[1] == pytest.approx(s * g)
            assert sum_seg[2] != cnt_seg[2]


def test_noise_beyond_the_discrete_sampler_range_is_refused_first():
    from pyfkm.exceptions import CapacityError
    X = blobs(20, n=200, d=40, k=3)
    km = DPFederatedKMeans(3, epsilon=1e-3, delta=1e-9, max_iter=7, random_state=0)
    with pytest.raises(CapacityError, match="discrete Gaussian"):
        km.fit(split(X))
    assert not hasattr(km, "cluster_centers_")
    # the continuous mode has no such range
    km.set_params(noise="gaussian").fit(split(X))
