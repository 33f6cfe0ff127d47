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
    (569, 2, 30, 0.1, 2, 0, 2),          # breast_cancer-sized, small budget: z < 3
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
    if z < 3:     # no initialisation round pays: two damped Lloyd rounds
        assert (T, r, M) == (2, 0, k)
    else:
        assert T == min(max(3 + math.floor(math.log2(z / 8)), 3), 7)
        assert M == min(max(round(n / p["sigma_count"]), k), 16 * k)
    assert p["sigma"] == pytest.approx(s1 * math.sqrt(T), rel=1e-6)
    assert p["sigma_count"] == pytest.approx(s1 * math.sqrt(T) * g, rel=1e-6)


def test_plan_rounds_noiseless_and_fixed():
    p = plan_rounds(1000, 5, 3, math.inf, 0.0)
    assert (p["iterations"], p["init_rounds"], p["candidates"], p["sigma"]) == (7, 2, 80, 0.0)
    p = plan_rounds(1000, 5, 3, 1.0, 1e-5, max_iter=2)
    assert (p["iterations"], p["init_rounds"]) == (2, 1)


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


def test_low_snr_plan_starts_from_sphere_packing():
    # n / (k sigma_C(3)) < 3: two damped rounds from the public start, one spend
    X = blobs(35, n=150, d=4, k=3)
    km = DPFederatedKMeans(3, epsilon=0.25, random_state=0).fit(split(X))
    p = km.privacy_
    assert (p["iterations"], p["init_rounds"], p["init"]) == (2, 0, "sphere_packing")
    assert [s["count"] for s in km.accountant_.spends] == [2]
    assert km.accountant_.spent()[0] == pytest.approx(0.25, rel=1e-6)


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
