"""Tests of pyfkm.outliers: (k,z)-center kernels, Guo & Li's distributed
algorithm, the centralized Charikar et al. reference and the baselines.

Oracles: pure-numpy twins of the aggregating procedure (Guo & Li,
Algorithm 2) and of the weighted greedy (Charikar et al.) written below from
the papers' descriptions; brute force over all center sets on tiny inputs;
the proven bounds ((1+eps)z discarded, radius <= 24(1+eps) OPT, <= 3 OPT for
the centralized greedy, 2z for the Guha-type baseline).
"""
import itertools
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pyfkm._core import _kcenter
from pyfkm.exceptions import InvalidInputError, NotFittedError, NumericalError
from pyfkm.outliers import (DistributedKZCenter, GuhaKZCenter, KZCenter,
                            MalkomesKZCenter, UniformSamplingKZCenter,
                            count_outliers, kzcenter_radius, make_noisy_blobs)


# ------------------------------------------------------------ numpy twins

def ref_sqdist(X, Y):
    # sequential sum over coordinates, like the kernel (d <= 3 in tests)
    out = np.zeros((len(X), len(Y)))
    for t in range(X.shape[1]):
        out += (X[:, None, t] - Y[None, :, t]) ** 2
    return out


def ref_aggregate(X, L, y):
    """Algorithm 2: while some p in U has |B_U(p, 2L)| > y, take the p with
    the largest count (lowest index on ties), weight |B_U(p, 4L)|, remove
    that ball."""
    D = ref_sqdist(X, X)
    t2, t4 = (2.0 * L) ** 2, (4.0 * L) ** 2
    U = np.ones(len(X), dtype=bool)
    reps, ws = [], []
    while True:
        counts = np.where(U, ((D <= t2) & U[None, :]).sum(axis=1), -1)
        p = int(np.argmax(counts))
        if not U.any() or not counts[p] > y:
            break
        ball = U & (D[p] <= t4)
        reps.append(p)
        ws.append(int(ball.sum()))
        U &= ~ball
    return reps, ws, U


def ref_greedy(X, w, t_small, t_large, k):
    """Charikar et al.: k times, the point (any) maximising the uncovered
    weight within t_small; remove its t_large ball."""
    D = ref_sqdist(X, X)
    U = np.ones(len(X), dtype=bool)
    centers = []
    for _ in range(k):
        cover = ((D <= t_small) * (w * U)[None, :]).sum(axis=1)
        p = int(np.argmax(cover))
        if cover[p] <= 0:
            break
        centers.append(p)
        U &= ~(D[p] <= t_large)
    return centers, int((w * U).sum()), U


def brute_opt(X, k, z):
    """Optimal (k,z)-center radius with centers among the points."""
    n = len(X)
    D = np.sqrt(ref_sqdist(X, X))
    best = np.inf
    for S in itertools.combinations(range(n), k):
        dist = np.sort(D[:, list(S)].min(axis=1))
        best = min(best, dist[n - 1 - z])
    return best


def _machines(X, m, rng):
    perm = rng.permutation(len(X))
    return [X[perm[i::m]] for i in range(m)]


# ------------------------------------------------------------ bad input first

@pytest.mark.parametrize("k,z", [(3, 18), (0, 1), (2, -1), (2.5, 1), (True, 1)])
def test_bad_k_z(k, z):
    X = np.random.default_rng(0).normal(size=(20, 2))
    for est in (DistributedKZCenter(k, z), MalkomesKZCenter(k, z), GuhaKZCenter(k, z)):
        with pytest.raises(InvalidInputError):
            est.fit([X[:10], X[10:]])
    with pytest.raises(InvalidInputError):
        KZCenter(k, z).fit(X)


def test_bad_machines():
    X = np.random.default_rng(0).normal(size=(20, 2))
    est = DistributedKZCenter(2, 1)
    with pytest.raises(InvalidInputError, match="empty"):
        est.fit([X, np.zeros((0, 2))])
    with pytest.raises(InvalidInputError):
        est.fit([])
    with pytest.raises(InvalidInputError):
        est.fit(X)  # an array, not a list of machines
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(InvalidInputError, match="NaN"):
        est.fit([bad[:10], bad[10:]])
    with pytest.raises(InvalidInputError, match="features"):
        est.fit([X[:10], X[10:, :1]])
    with pytest.raises(InvalidInputError, match="epsilon"):
        DistributedKZCenter(2, 1, epsilon=0).fit([X])
    with pytest.raises(InvalidInputError, match="executor"):
        DistributedKZCenter(2, 1, executor=object()).fit([X])
    assert not hasattr(est, "cluster_centers_")  # nothing learned on errors
    with pytest.raises(NotFittedError):
        est.predict(X)


def test_bad_predict_and_costs():
    X = np.random.default_rng(1).normal(size=(30, 2))
    est = KZCenter(2, 3).fit(X)
    with pytest.raises(InvalidInputError):
        est.predict(X[:, :1])
    with pytest.raises(InvalidInputError):
        kzcenter_radius(X, est.cluster_centers_, 30)
    with pytest.raises(InvalidInputError):
        kzcenter_radius(X, est.cluster_centers_, -1)
    with pytest.raises(InvalidInputError):
        count_outliers(X, est.cluster_centers_, -1.0)
    with pytest.raises(InvalidInputError):
        make_noisy_blobs(10, 2, 3, 8)
    with pytest.raises(InvalidInputError):
        KZCenter(2, 1).fit(X, sample_weight=np.full(30, 0.5))


# ------------------------------------------------------------ kernels

def test_sqdist_nearest_nn():
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(37, 3)), rng.normal(size=(5, 3))
    D = ref_sqdist(X, Y)
    assert np.array_equal(_kcenter.sqdist(X, Y), D)
    mind, arg = _kcenter.nearest(X, Y)
    assert np.array_equal(mind, D.min(axis=1)) and np.array_equal(arg, D.argmin(axis=1))
    DX = ref_sqdist(X, X)
    np.fill_diagonal(DX, np.inf)
    assert np.array_equal(_kcenter.nn_sqdist(X, None), DX.min(axis=1))
    assert np.array_equal(_kcenter.nn_sqdist(X, _kcenter.Matrix(X)), DX.min(axis=1))


@pytest.mark.parametrize("seed", range(12))
def test_aggregate_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 60)), int(rng.integers(1, 4))
    X = rng.normal(size=(n, d))
    if seed % 3 == 0:  # duplicates and integer coordinates: exact ties
        X = np.round(X * 2)
    L = float(rng.uniform(0.05, 1.0))
    y = float(rng.choice([0.0, 0.5, 1.0, 2.0, 3.7]))
    reps, ws, U = ref_aggregate(X, L, y)
    for D in (_kcenter.Matrix(X), None):
        r, w, rem, stopped = _kcenter.aggregate(X, D, (2 * L) ** 2, (4 * L) ** 2, y, n)
        assert not stopped
        assert r.tolist() == reps and w.tolist() == ws
        assert np.array_equal(rem, U)
        assert w.sum() + rem.sum() == n
    if len(reps) > 1:  # early stop: reports one more than the cap
        cap = len(reps) - 1
        r, w, _, stopped = _kcenter.aggregate(X, None, (2 * L) ** 2, (4 * L) ** 2, y, cap)
        assert stopped and r.tolist() == reps[:cap]


@pytest.mark.parametrize("seed", range(12))
def test_greedy_matches_reference(seed):
    rng = np.random.default_rng(100 + seed)
    n, d = int(rng.integers(1, 60)), int(rng.integers(1, 4))
    X = rng.normal(size=(n, d))
    if seed % 3 == 0:
        X = np.round(X * 2)
    w = rng.integers(0, 5, size=n).astype(np.int64)
    k = int(rng.integers(1, 5))
    r = float(rng.uniform(0.1, 1.0))
    c_ref, unc_ref, U = ref_greedy(X, w, r * r, 9 * r * r, k)
    for D in (_kcenter.Matrix(X), None):
        c, unc, mask = _kcenter.greedy(X, D, w, r * r, 9 * r * r, k)
        assert c.tolist() == c_ref and unc == unc_ref and np.array_equal(mask, U)
    c, unc, _ = _kcenter.greedy(X, None, None, r * r, 9 * r * r, k)
    c_ref, unc_ref, _ = ref_greedy(X, np.ones(n, dtype=np.int64), r * r, 9 * r * r, k)
    assert c.tolist() == c_ref and unc == unc_ref


@pytest.mark.parametrize("seed", range(6))
def test_float_matrix_settles_near_ties_exactly(seed):
    """The matrix stores float32 distances; pairs whose exact distance is
    within float rounding of a radius must still be decided exactly."""
    rng = np.random.default_rng(500 + seed)
    base = rng.integers(0, 6, size=(40, 1)).astype(float)
    jitter = rng.choice([0.0, 1e-12, -1e-12, 3e-9, -3e-9], size=(40, 1))
    X = np.concatenate([base + jitter, rng.integers(0, 3, size=(40, 1))], axis=1)
    M = _kcenter.Matrix(X)
    for L in (0.5, 1.0):
        t2, t4 = (2 * L) ** 2, (4 * L) ** 2
        for y in (0.0, 1.0, 2.0):
            reps, ws, U = ref_aggregate(X, L, y)
            for D in (M, None):
                r, w, rem, _ = _kcenter.aggregate(X, D, t2, t4, y, 40)
                assert r.tolist() == reps and w.tolist() == ws and np.array_equal(rem, U)
        wts = rng.integers(0, 3, size=40).astype(np.int64)
        c_ref, unc_ref, _ = ref_greedy(X, wts, t2, t4, 3)
        for D in (M, None):
            c, unc, _ = _kcenter.greedy(X, D, wts, t2, t4, 3)
            assert c.tolist() == c_ref and unc == unc_ref
    DX = ref_sqdist(X, X)
    np.fill_diagonal(DX, np.inf)
    assert np.array_equal(_kcenter.nn_sqdist(X, M), DX.min(axis=1))


def test_kernel_status_codes():
    X = np.array([[0.0], [1e200]])
    with pytest.raises(Exception, match="overflow|infinity"):
        _kcenter.sqdist(X, X)
    Y = np.zeros((3, 1))
    with pytest.raises(InvalidInputError):
        _kcenter.greedy(Y, None, np.array([1, -1, 1], dtype=np.int64), 1.0, 4.0, 1)
    with pytest.raises(InvalidInputError):
        _kcenter.aggregate(Y, None, 4.0, 1.0, 0.0, 3)  # t2 > t4


def test_tree_bad_input_and_status():
    with pytest.raises(ValueError):
        _kcenter.Tree(np.zeros((0, 2)))
    with pytest.raises(InvalidInputError):
        _kcenter.Tree(np.zeros((3, 1))).aggregate(4.0, 1.0, 0.0, 3)  # t2 > t4
    with pytest.raises(InvalidInputError):
        _kcenter.Tree(np.zeros((3, 1))).aggregate(1.0, 4.0, 0.0, -1)
    # distances that may overflow: the index refuses (machines fall back)
    with pytest.raises(NumericalError):
        _kcenter.Tree(np.array([[0.0], [1e200]]))


def _tree_case(rng, kind):
    """Points in 1..6 dimensions, enough for several tree levels: Gaussian,
    integer grids (duplicates, exact ties) or integers plus jitter below and
    above float32 / float64 resolution (near ties)."""
    n, d = int(rng.integers(1, 260)), int(rng.integers(1, 7))
    if kind == 0:
        return rng.normal(size=(n, d)) * rng.choice([0.3, 1.0, 4.0])
    X = rng.integers(-3, 4, size=(n, d)).astype(float)
    if kind == 2:
        X += rng.choice([0.0, 1e-15, -1e-15, 1e-12, -3e-9, 3e-9], size=(n, d))
    return X


@pytest.mark.parametrize("seed", range(24))
def test_tree_matches_reference(seed):
    """The KD-tree kernels (box bounds, dual-tree counts, lazy picks) against
    the numpy twins, with radii equal to some pairwise distance (exact ties
    at the threshold) and jittered coordinates (near ties)."""
    rng = np.random.default_rng(900 + seed)
    X = _tree_case(rng, seed % 3)
    n = len(X)
    T = _kcenter.Tree(X)
    DX = ref_sqdist(X, X)
    np.fill_diagonal(DX, np.inf)
    assert np.array_equal(T.nn_sqdist(), DX.min(axis=1))
    np.fill_diagonal(DX, 0.0)
    for _ in range(3):
        # L with (2L)^2 exactly a pairwise squared distance when possible
        t2 = float(rng.choice(DX.ravel()))
        L = math.sqrt(t2) / 2 if t2 > 0 else float(rng.uniform(0.05, 1.0))
        if (2 * L) ** 2 != t2:
            L = float(rng.uniform(0.05, 1.0))
        y = float(rng.choice([0.0, 1.0, 2.0, 3.7, 10.0]))
        reps, ws, U = ref_aggregate(X, L, y)
        r, w, rem, stopped = T.aggregate((2 * L) ** 2, (4 * L) ** 2, y, n)
        assert not stopped
        assert r.tolist() == reps and w.tolist() == ws and np.array_equal(rem, U)
        if len(reps) > 1:
            cap = len(reps) - 1
            r, w, _, stopped = T.aggregate((2 * L) ** 2, (4 * L) ** 2, y, cap)
            assert stopped and r.tolist() == reps[:cap] and w.tolist() == ws[:cap]


def test_tree_identical_and_collinear_points():
    X = np.ones((100, 3))  # one box of zero width, many leaves
    T = _kcenter.Tree(X)
    assert np.array_equal(T.nn_sqdist(), np.zeros(100))
    r, w, rem, _ = T.aggregate(0.0, 0.0, 5.0, 100)
    assert r.tolist() == [0] and w.tolist() == [100] and not rem.any()
    X = np.repeat(np.arange(50.0), 2)[:, None] * np.array([[1.0, 0.0]])
    reps, ws, U = ref_aggregate(X, 0.5, 2.0)
    r, w, rem, _ = _kcenter.Tree(X).aggregate(1.0, 4.0, 2.0, 100)
    assert r.tolist() == reps and w.tolist() == ws and np.array_equal(rem, U)
    assert _kcenter.Tree(X[:1]).nn_sqdist()[0] == np.inf


# ------------------------------------------------------------ centralized

@pytest.mark.parametrize("seed", range(15))
def test_kzcenter_three_approx_brute_force(seed):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(5, 10))
    k, z = int(rng.integers(1, 3)), int(rng.integers(0, 3))
    X = rng.normal(size=(n, 2)) * rng.uniform(0.5, 3)
    est = KZCenter(k, z).fit(X)
    opt = brute_opt(X, k, z)
    assert len(est.cluster_centers_) <= k
    assert est.radius_ == pytest.approx(kzcenter_radius(X, est.cluster_centers_, z))
    assert est.radius_ <= 3 * opt * (1 + 1e-12) + 1e-12
    assert est.guess_ <= opt * (1 + 1e-12)
    assert count_outliers(X, est.cluster_centers_, est.radius_) <= z
    assert (est.labels_ < 0).sum() <= z


def test_kzcenter_weighted_equals_repeated_points():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(12, 2))
    w = rng.integers(1, 4, size=12)
    a = KZCenter(3, 4).fit(X, sample_weight=w)
    b = KZCenter(3, 4).fit(np.repeat(X, w, axis=0))
    assert a.radius_ <= 3 * brute_opt(np.repeat(X, w, axis=0), 3, 4) + 1e-12
    assert b.radius_ <= 3 * brute_opt(np.repeat(X, w, axis=0), 3, 4) + 1e-12


# ------------------------------------------------------------ distributed

@pytest.mark.parametrize("seed", range(40))
def test_distributed_bicriteria_random_instances(seed):
    """Never more than (1+eps)z declared outliers; radius within the proven
    24(1+eps) of the brute-force optimum (centers among points >= the
    continuous optimum of the analysis)."""
    rng = np.random.default_rng(300 + seed)
    m = int(rng.integers(1, 4))
    n = int(rng.integers(6, 10))
    k, z = int(rng.integers(1, 3)), int(rng.integers(0, 4))
    if k + z > n:
        z = n - k
    eps = float(rng.choice([0.1, 0.5, 1.0]))
    X = rng.normal(size=(n, 2)) * rng.uniform(0.2, 5)
    if seed % 4 == 0:  # heavy noise: far points
        X[: z] *= 20
    parts = np.array_split(rng.permutation(n), m)
    parts = [p for p in parts if len(p)]
    machines = [X[p] for p in parts]
    est = DistributedKZCenter(k, z, epsilon=eps, random_state=seed).fit(machines)
    budget = math.floor((1 + eps) * z + 1e-9)
    assert est.n_declared_outliers_ <= budget
    assert count_outliers(X, est.cluster_centers_, est.radius_) == est.n_declared_outliers_
    opt = brute_opt(X, k, z)
    assert est.radius_ <= 24 * (1 + eps) * opt * (1 + 1e-9) + 1e-12
    assert kzcenter_radius(X, est.cluster_centers_, budget) <= est.radius_ * (1 + 1e-12)
    assert est.lower_bound_ <= opt * (1 + 1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_distributed_heavy_noise_quality(seed):
    X, noise, C = make_noisy_blobs(3000, 3, 4, 300, random_state=seed)
    machines = _machines(X, 5, np.random.default_rng(seed))
    est = DistributedKZCenter(4, 300, epsilon=0.1, random_state=seed).fit(machines)
    assert est.n_declared_outliers_ <= 330
    planted = kzcenter_radius(X, C, 300)
    # 24(1+eps) is the proven factor w.r.t. the optimum (<= planted radius)
    assert kzcenter_radius(X, est.cluster_centers_, 300) <= 24 * 1.1 * planted
    assert est.radius_ <= 24 * 1.1 * planted
    # every declared outlier is far: inliers are rarely declared
    lab = np.concatenate(est.labels_)
    assert lab.shape == (3000,)


def test_distributed_matches_reference_at_final_guess():
    """At the returned guess, numpy Algorithms 2 + 1 (kzc at 5L) accept."""
    X, _, _ = make_noisy_blobs(400, 2, 3, 40, random_state=7)
    machines = _machines(X, 4, np.random.default_rng(7))
    k, z, eps = 3, 40, 0.2
    est = DistributedKZCenter(k, z, epsilon=eps, random_state=0).fit(machines)
    L, m, n = est.guess_, len(machines), len(X)
    y = eps * z / (k * m)
    Q, W, total = [], [], 0
    for P in machines:
        reps, ws, _ = ref_aggregate(P, L, y)
        Q.append(P[reps])
        W += ws
        total += len(reps)
    assert total <= k * m * (1 + 1 / eps)
    Q = np.concatenate(Q)
    W = np.array(W, dtype=np.int64)
    zp = (1 + eps) * z + W.sum() - n
    _, unc, _ = ref_greedy(Q, W, (10 * L) ** 2, (20 * L) ** 2, k)
    assert unc <= zp
    # and the refined coordinator radius L' <= 5L also accepts with the
    # returned centers
    Lp = est.coordinator_guess_
    assert Lp <= 5 * L and est.radius_ == 4 * L + 4 * Lp
    c, unc, _ = ref_greedy(Q, W, (2 * Lp) ** 2, (4 * Lp) ** 2, k)
    assert unc <= zp
    assert np.allclose(Q[c], est.cluster_centers_)


def test_communication_independent_of_z():
    rng = np.random.default_rng(11)
    base, _, _ = make_noisy_blobs(2000, 3, 4, 0, random_state=11)
    k, m, eps, d = 4, 5, 0.1, 3
    cap_words = k * m * (1 + 1 / eps) * (d + 1)
    totals = []
    for z in (20, 100, 400):
        noise = rng.uniform(-60, 60, size=(z, d))
        X = np.concatenate([base, noise])
        machines = _machines(X, m, rng)
        est = DistributedKZCenter(k, z, epsilon=eps, random_state=0).fit(machines)
        rep = est.communication_
        for r in rep.rounds:
            if r.name == "weighted points":
                assert r.points + r.weights <= cap_words
            else:  # scalars and anchors/centers: independent of z
                assert r.total <= m * max(32, k * d + 1) + d
        assert est.n_guesses_ <= 12
        totals.append(rep.total)
        # Malkomes et al. send k + z weighted points per machine: grows with z
        mal = MalkomesKZCenter(k, z).fit(machines).communication_.rounds[0]
        assert mal.name == "weighted centers"
        assert mal.points + mal.weights == m * (k + z) * (d + 1)
    assert max(totals) <= 12 * (3 * m + cap_words) + m * (32 + 2 * d + k * d + 3)


def test_executor_gives_same_result():
    X, _, _ = make_noisy_blobs(900, 2, 3, 60, random_state=3)
    machines = _machines(X, 3, np.random.default_rng(3))
    a = DistributedKZCenter(3, 60, random_state=1).fit(machines)
    with ThreadPoolExecutor(2) as ex:
        b = DistributedKZCenter(3, 60, random_state=1, executor=ex).fit(machines)
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a.radius_ == b.radius_ and a.communication_ == b.communication_
    assert np.array_equal(a.predict(X), b.predict(X))
    assert (a.predict(X) < 0).sum() == a.n_declared_outliers_
    assert np.array_equal(a.is_outlier(X), a.predict(X) < 0)


def test_identical_points():
    X = np.ones((10, 2))
    est = DistributedKZCenter(2, 3).fit([X[:5], X[5:]])
    assert est.radius_ == 0 and est.n_declared_outliers_ == 0


# ------------------------------------------------------------ baselines, data

@pytest.mark.parametrize("seed", range(6))
def test_baselines_guarantees(seed):
    rng = np.random.default_rng(400 + seed)
    n, k, z = 9, 2, 2
    X = rng.normal(size=(n, 2))
    machines = [X[:4], X[4:]]
    opt = brute_opt(X, k, z)
    g = GuhaKZCenter(k, z, epsilon=0.5, random_state=0).fit(machines)
    assert g.n_declared_outliers_ <= 2 * z
    assert g.radius_ <= 24 * 1.5 * opt + 1e-12
    mk = MalkomesKZCenter(k, z).fit(machines)
    # every point is sent (k + z >= n_i): the coordinator solves it exactly
    assert mk.radius_ <= 3 * opt + 1e-12 and mk.n_declared_outliers_ <= z
    us = UniformSamplingKZCenter(k, z, sample_fraction=1.0, random_state=0).fit(machines)
    assert len(us.cluster_centers_) <= k


def test_make_noisy_blobs_and_costs():
    X, noise, C = make_noisy_blobs(500, 3, 5, 50, random_state=0)
    assert X.shape == (500, 3) and noise.sum() == 50 and C.shape == (5, 3)
    inl = X[~noise]  # noise lives in the inliers' box enlarged 2x about its center
    mid, half = (inl.min(0) + inl.max(0)) / 2, (inl.max(0) - inl.min(0)) / 2
    assert (np.abs(X[noise] - mid) <= 2 * half + 1e-9).all()
    assert (np.abs(X[noise] - mid) > half).any(axis=1).mean() > 0.5
    D = np.sqrt(ref_sqdist(X, C)).min(axis=1)
    assert kzcenter_radius(X, C, 50) == np.sort(D)[::-1][50]
    assert kzcenter_radius([X[:100], X[100:]], C, 50) == np.sort(D)[::-1][50]
    r = float(np.median(D))
    assert count_outliers(X, C, r) == int((D > r).sum())


@pytest.mark.parametrize("k, z, eps, machines", [
    (1, 1, 1.0, [np.array([[0.0], [10.0]])]),
    (1, 100, 0.01, [np.arange(101.0)[:, None] * 3]),
])
def test_nothing_aggregated_at_the_smallest_guess(k, z, eps, machines):
    # n <= (1+eps)z: the smallest guess can aggregate no point at all (found
    # by review: crashed); declaring everything an outlier is within budget
    m = DistributedKZCenter(k, z, epsilon=eps).fit(machines)
    assert 1 <= m.cluster_centers_.shape[0] <= k
    assert m.n_declared_outliers_ <= math.floor((1 + eps) * z)


def test_aggregate_kernels_refuse_negative_radii_and_threshold():
    # a negative threshold made every pick remove nothing: the kernels wrote
    # past their n-entry output buffers (found by review)
    from pyfkm._core import _kcenter
    X = np.array([[0.0], [1.0]])
    for t2, t4, y in [(-1.0, -1.0, -1.0), (0.0, 1.0, -1.0), (-1.0, 1.0, 0.0)]:
        with pytest.raises(InvalidInputError, match="domain"):
            _kcenter.aggregate(X, None, t2, t4, y, 1000)
        with pytest.raises(InvalidInputError, match="domain"):
            _kcenter.Tree(X).aggregate(t2, t4, y, 1000)
