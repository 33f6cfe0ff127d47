"""The planned pipeline of DPFederatedKMeans (issue 23): the round rule,
the private candidate initialisation and its accounting, the damped
update's post-processing and the data-derived-bounds warning.

Oracles: the rule's formula evaluated by hand from the analytic Gaussian
sigma (Balle & Wang 2018, Thm. 8, solved with scipy here), hand-computed
updates and reductions, and the GDP composition of T equal releases.
"""
import math
import warnings

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from pyfkm.exceptions import InvalidInputError
from pyfkm.dp.estimator import DPFederatedKMeans
from pyfkm.dp.steps import _damped_update, plan_rounds, reduce_candidates
from _helpers.dp import blobs, split


def analytic_delta(mu, eps):
    return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def sigma1(eps, delta):
    return 1 / brentq(lambda m: analytic_delta(m, eps) - delta, 1e-6, 100)


# ------------------------------------------------------------ errors first

def test_candidates_need_a_lloyd_round():
    with pytest.raises(InvalidInputError, match="max_iter"):
        DPFederatedKMeans(2, epsilon=1.0, init="candidates", max_iter=1).fit(split(blobs()))
    with pytest.raises(InvalidInputError, match="init"):
        DPFederatedKMeans(2, epsilon=1.0, init="grid").fit(split(blobs()))


# ------------------------------------------------------------ the rule

@pytest.mark.parametrize("n,k,d,eps,T,r,M", [
    (150, 3, 4, 1.0, 3, 1, 16),          # iris-sized
    (569, 2, 30, 0.1, 3, 0, 2),          # breast_cancer-sized, small budget: 1 <= z < 3
    (150, 3, 4, 0.1, 2, 0, 3),           # iris-sized, eps = 0.1: z < 1
    (400, 3, 4, 1.0, 3, 1, 37),
    (300_000, 100, 16, 1.0, 7, 2, 1600),  # large mixture: capped at 16 k candidates
])
def test_plan_rounds_known_inputs(n, k, d, eps, T, r, M):
    delta = 1 / (n * math.log(n))
    p = plan_rounds(n, k, d, eps, delta)
    assert (p["iterations"], p["init_rounds"], p["candidates"]) == (T, r, M)
    # the formula written out
    g = math.sqrt(1 + math.sqrt(4 * d))
    s1 = sigma1(eps, delta)
    z = n / (k * g * s1 * math.sqrt(3))
    if z < 3:     # no initialisation round pays: damped Lloyd rounds only,
        # three with the last two averaged from z = 1
        assert (T, r, M) == (2 if z < 1 else 3, 0, k)
        assert (p["averaged"], p["shrink_counts"]) == ((0, False) if z < 1 else (2, True))
    else:
        assert (p["averaged"], p["shrink_counts"]) == (0, False)
        assert T == min(max(3 + math.floor(math.log2(z / 8)), 3), 7)
        assert M == min(max(round(n / p["sigma_count"]), k), 16 * k)
    assert p["sigma"] == pytest.approx(s1 * math.sqrt(T), rel=1e-6)
    assert p["sigma_count"] == pytest.approx(s1 * math.sqrt(T) * g, rel=1e-6)


def test_plan_rounds_noiseless_and_fixed():
    p = plan_rounds(1000, 5, 3, math.inf, 0.0)
    assert (p["iterations"], p["init_rounds"], p["candidates"], p["sigma"]) == (7, 2, 80, 0.0)
    p = plan_rounds(1000, 5, 3, 1.0, 1e-5, max_iter=2)
    assert (p["iterations"], p["init_rounds"]) == (2, 1)
    # low SNR with 1 <= z < 3 (iris-sized, eps = 0.5): an int T averages the
    # last two iterates only when a round comes before them
    delta = 1 / (150 * math.log(150))
    for T, avg in [(2, 0), (3, 2), (5, 2)]:
        p = plan_rounds(150, 3, 4, 0.5, delta, max_iter=T)
        assert (p["iterations"], p["init_rounds"], p["averaged"], p["shrink_counts"]) == \
            (T, 0, avg, True)


# ------------------------------------------------------------ accounting

@pytest.mark.parametrize("eps,delta", [(1.0, "auto"), (0.25, 1e-6)])
def test_planned_fit_accounts_for_the_initialisation(eps, delta, monkeypatch):
    from pyfkm.secagg.msa import _client
    shares = []
    orig = _client.client_noise

    def client_noise(segments, n_words, threshold, *args):
        shares.append((tuple(segments), n_words))
        return orig(segments, n_words, threshold, *args)

    monkeypatch.setattr(_client, "client_noise", client_noise)
    X = blobs(31, n=2000, d=3, k=4)
    km = DPFederatedKMeans(4, epsilon=eps, delta=delta, random_state=0).fit(split(X))
    p, acc = km.privacy_, km.accountant_
    n, d, k = 2000, 3, 4
    want_delta = 1 / (n * math.log(n)) if delta == "auto" else delta
    T, r, Mc = p["iterations"], p["init_rounds"], p["init_candidates"]
    assert p["init"] == "candidates" and km.n_iter_ == T and 1 <= r < T and Mc > k
    # the initialisation is its own spend, with the rounds' sigma and sensitivity 1
    assert [(s["count"], s["sensitivity"], s["sigma"]) for s in acc.spends] == \
        [(r, 1.0, p["sigma"]), (T - r, 1.0, p["sigma"])]
    assert analytic_delta(math.sqrt(T) / p["sigma"], eps) == pytest.approx(want_delta, rel=1e-6)
    assert acc.spent()[0] == pytest.approx(eps, rel=1e-6)
    # every round released noisy candidate (then cluster) sums and counts:
    # the first r rounds over Mc candidates, with the same per-round noise
    assert len(shares) == 2 * T
    width = Mc * d + Mc
    g = math.sqrt(1 + math.sqrt(4 * d))
    for t, (segs, n_words) in enumerate(shares[::2]):
        m = Mc if t < r else k
        assert n_words == width
        assert segs[0][0] == m * d and segs[1][0] == m
        assert segs[1][1] == pytest.approx(p["sigma"] * g)
        assert sum(s[0] for s in segs) == width


def test_noiseless_planned_fit_is_reproducible():
    X = blobs(32, n=600, d=2, k=5)
    a = DPFederatedKMeans(5, epsilon=math.inf, random_state=3).fit(split(X))
    b = DPFederatedKMeans(5, epsilon=math.inf, random_state=3).fit(split(X))
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_) and a.n_iter_ == 7


# ------------------------------------------------------------ post-processing

def test_damped_update_clips_to_the_box_and_keeps_noisy_empty_clusters():
    mu = np.array([[0.9, 0.0], [0.0, 0.0], [-0.5, 0.5]])
    R = np.array([[50.0, 0.0], [3.0, -4.0], [7.0, 7.0]])
    C = np.array([10.0, 10.0, -2.0])
    new = _damped_update(mu, R, C, eta=10.0, sum_sd=0.0, bounds=(-1.0, 1.0))
    # no noise: the full step; the first leaves the box and is clipped to it
    assert new.tolist() == [[1.0, 0.0], [0.3, -0.4], [-0.5, 0.5]]
    # radius: a step longer than eta is shortened to eta
    new = _damped_update(mu, R, C, eta=0.25, sum_sd=0.0, bounds=(-1.0, 1.0))
    assert new[1] == pytest.approx([0.15, -0.2])


def test_damped_update_shrinks_by_the_noise():
    # positive-part James-Stein: w = max(1 - (d - 2) v / |step|^2, 0)
    mu = np.zeros((1, 4))
    R, C = np.array([[3.0, -4.0, 0.0, 0.0]]), np.array([10.0])   # |step|^2 = 0.25
    sd = 0.5                                          # v = 0.25 / 100 = 0.0025 per coordinate
    new = _damped_update(mu, R, C, eta=None, sum_sd=sd, bounds=(-1.0, 1.0))
    w = 1 - 2 * 0.0025 / 0.25
    assert new[0] == pytest.approx([0.3 * w, -0.4 * w, 0, 0], rel=1e-12)
    # noise swamping the step: the center stays
    assert _damped_update(mu, R, C, None, 100.0, (-1.0, 1.0))[0].tolist() == [0.0] * 4
    # d <= 2: no shrinkage
    new2 = _damped_update(np.zeros((1, 2)), R[:, :2], C, None, sd, (-1.0, 1.0))
    assert new2[0].tolist() == [0.3, -0.4]


@pytest.mark.parametrize("eps,T,avg", [(0.1, 2, 0), (0.25, 3, 2), (0.5, 3, 2)])
def test_low_snr_plan_starts_from_sphere_packing(eps, T, avg, monkeypatch):
    # n / (k sigma_C(3)) < 3: damped rounds from the public start, one spend
    # of T equal releases (z < 1: two rounds; else three, the last two averaged)
    from pyfkm.secagg.msa import _client
    shares = []
    orig = _client.client_noise

    def client_noise(segments, n_words, threshold, *args):
        shares.append(tuple(segments))
        return orig(segments, n_words, threshold, *args)

    monkeypatch.setattr(_client, "client_noise", client_noise)
    X = blobs(35, n=150, d=4, k=3)
    km = DPFederatedKMeans(3, epsilon=eps, random_state=0).fit(split(X))
    p = km.privacy_
    assert (p["iterations"], p["init_rounds"], p["init"]) == (T, 0, "sphere_packing")
    assert (p["averaged"], p["shrink_counts"], km.n_iter_) == (avg, avg > 0, T)
    delta = 1 / (150 * math.log(150))
    assert p["sigma"] == pytest.approx(sigma1(eps, delta) * math.sqrt(T), rel=1e-6)
    assert [(s["count"], s["sensitivity"], s["sigma"]) for s in km.accountant_.spends] == \
        [(T, 1.0, p["sigma"])]
    assert analytic_delta(math.sqrt(T) / p["sigma"], eps) == pytest.approx(delta, rel=1e-6)
    assert km.accountant_.spent()[0] == pytest.approx(eps, rel=1e-6)
    # T masked rounds (2 clients each), every one with the plan's noise on
    # 3 x 4 sums and 3 counts: nothing else is released
    g = math.sqrt(1 + math.sqrt(16))
    slack = 2 * 2.0 ** -16
    assert len(shares) == 2 * T
    for t, segs in enumerate(shares[::2]):
        assert [s[0] for s in segs] == [12, 3]
        assert segs[0][1] == pytest.approx(p["sigma_sum"] * (p["radii"][t] + slack))
        assert segs[1][1] == pytest.approx(p["sigma"] * g)


def _sizes_twin(C, n, s):
    # projection onto sum = n, then shrinkage towards n / k, written out
    k = len(C)
    mean = sum(C) / k
    var = sum((c - mean) ** 2 for c in C) / (k - 1)
    noise = s * s * (k - 1) / k
    tau2 = max(var - noise, 0.0)
    lam = tau2 / (tau2 + noise)
    return np.array([lam * (c + (n - sum(C)) / k) + (1 - lam) * n / k for c in C])


def test_shrink_counts_by_hand():
    from pyfkm.dp.steps import shrink_counts
    rng = np.random.default_rng(5)
    for k, s in [(2, 3.0), (3, 10.0), (5, 40.0), (3, 1e-9)]:
        C = rng.uniform(-20, 120, k)
        got = shrink_counts(C, 200, s)
        assert got == pytest.approx(_sizes_twin(list(C), 200, s), rel=1e-12, abs=1e-9)
        assert got.sum() == pytest.approx(200.0)
    # sizes far apart compared with the noise: (almost) only the projection
    assert shrink_counts([10.0, 190.0, 100.0], 300, 1e-3) == pytest.approx([10, 190, 100])
    # sizes within the noise: the equal split
    assert shrink_counts([48.0, 52.0, 50.0], 150, 20.0).tolist() == [50.0, 50.0, 50.0]
    # no noise: unchanged; one cluster: n
    assert shrink_counts([3.0, 4.0], 10, 0.0).tolist() == [3.0, 4.0]
    assert shrink_counts([7.5], 10, 2.0).tolist() == [10.0]


def _damped_twin(mu, R, sizes, eta, sd):
    # the damped update, written out for positive sizes (no relocation)
    out = mu.copy()
    d = mu.shape[1]
    for j in range(len(mu)):
        step = R[j] / max(sizes[j], 1.0)
        v = max(d - 2, 0) * sd * sd / max(sizes[j], 1.0) ** 2
        norm2 = float(step @ step)
        w = max(1 - v / norm2, 0.0) if norm2 > 0 else 0.0
        step = step * w
        length = math.sqrt(float(step @ step))
        if length > eta:
            step = step * (eta / length)
        out[j] = np.clip(mu[j] + step, -1.0, 1.0)
    return out


def test_averaged_plan_post_processes_only_released_values(monkeypatch):
    # the masked rounds are replaced by chosen "released" sums and counts:
    # the fit must equal the twin's post-processing of exactly those values
    # (shrunk sizes, damped update, mean of the last two iterates), whatever
    # the clients' data
    import pyfkm.dp._lloyd_base as base
    from pyfkm.dp._lloyd_base import _LocalData
    rng = np.random.default_rng(11)
    released = [(rng.normal(0, 15, (3, 4)), rng.uniform(20, 80, 3)) for _ in range(3)]
    seen, calls = [], []
    orig_stats = _LocalData.stats

    def stats(self, centers, eta, relative):
        seen.append(centers.copy())
        return orig_stats(self, centers, eta, relative)

    def fake_round(server, msa, vecs, noise=(), server_noise=()):
        R, C = released[len(calls)]
        calls.append(1)
        return np.concatenate([R.ravel(), C]), None

    monkeypatch.setattr(_LocalData, "stats", stats)
    monkeypatch.setattr(base, "msa_round", fake_round)
    fits = []
    for data_seed in (35, 36):     # two different data sets, same n
        seen.clear()
        calls.clear()
        X = blobs(data_seed, n=150, d=4, k=3)
        km = DPFederatedKMeans(3, epsilon=0.5, random_state=4).fit(split(X))
        fits.append(km.cluster_centers_)
        p = km.privacy_
        assert p["averaged"] == 2 and len(calls) == 3 and len(seen) == 2 * 3
        starts = seen[::2]     # the centers each round's statistics were taken at
        slack = 2 * 2.0 ** -16
        mus = [starts[0]]
        for t, (R, C) in enumerate(released):
            eta = p["radii"][t]
            sd = p["sigma_sum"] * (eta + slack)
            mus.append(_damped_twin(mus[-1], R, _sizes_twin(list(C), 150, p["sigma_count"]),
                                    eta, sd))
            if t < 2:
                assert np.allclose(mus[-1], starts[t + 1], rtol=0, atol=1e-12)
        assert np.allclose(km.cluster_centers_, (mus[2] + mus[3]) / 2, rtol=0, atol=1e-12)
    # the data enter only through the released values
    assert np.array_equal(fits[0], fits[1])


def test_reduce_candidates_weights_heavy_and_pads():
    P = np.array([[0.0, 0.0], [0.1, 0.0], [1.0, 1.0], [0.5, 0.5], [-1.0, 1.0]])
    N = np.array([10.0, 30.0, 20.0, -3.0, 2.0])
    C = reduce_candidates(P, N, 2, threshold=5.0, random_state=0)
    C = C[np.argsort(C[:, 0])]
    assert C == pytest.approx(np.array([[0.075, 0.0], [1.0, 1.0]]))
    # fewer heavy candidates than clusters: the heaviest is duplicated with
    # a tiny jitter (the next Lloyd rounds may split it)
    C = reduce_candidates(P, N, 3, threshold=25.0, random_state=0)
    assert C[0].tolist() == [0.1, 0.0]
    assert np.abs(C[1:] - [0.1, 0.0]).max() < 0.01 and len({tuple(c) for c in C}) == 3


def test_relocate_empty_moves_noisy_empty_centers_to_the_heaviest():
    from pyfkm.dp.steps import _relocate_empty
    mu = np.array([[0.0, 0.0], [0.5, 0.5], [-0.5, -0.5], [0.9, -0.9]])
    C = np.array([100.0, 40.0, -3.0, 0.0])
    gen = np.random.default_rng(0)
    out = _relocate_empty(mu, C, threshold=10.0, gen=gen, bounds=(-1.0, 1.0))
    assert out[:2].tolist() == mu[:2].tolist()
    # the two empty ones go next to the two heaviest, in order
    assert np.abs(out[2] - mu[0]).max() < 0.01 and np.abs(out[3] - mu[1]).max() < 0.01
    # counts all within noise (heaviest <= 2 threshold): nothing moves
    same = _relocate_empty(mu, C, threshold=60.0, gen=gen, bounds=(-1.0, 1.0))
    assert same.tolist() == mu.tolist()


# ------------------------------------------------------------ bounds warning

def test_warns_when_bounds_look_data_derived():
    X = blobs(33, n=300, d=2, k=3)
    lo, hi = X.min(0), X.max(0)
    scaled = 2 * (X - lo) / (hi - lo) - 1             # min-max from the data itself
    with pytest.warns(UserWarning, match="derived from the data"):
        DPFederatedKMeans(3, epsilon=1.0, random_state=0).fit(split(scaled))
    inside = 0.9 * scaled                              # public bounds with a margin
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        DPFederatedKMeans(3, epsilon=1.0, random_state=0).fit(split(inside))


# ------------------------------------------------------------ utility sanity

def test_default_beats_the_one_center_baseline():
    # fixed seeds: three separated blobs; the default private fit at eps = 1
    # must do far better than one center at the data mean (the k = 1 optimum)
    X = blobs(34, n=3000, d=2, k=3, spread=0.05)
    base = ((X - X.mean(0)) ** 2).sum(1).mean()
    vals = [DPFederatedKMeans(3, epsilon=1.0, random_state=s).fit(split(X)).nicv(X)
            for s in range(5)]
    assert np.median(vals) < 0.25 * base
