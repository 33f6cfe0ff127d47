"""Tests of pyfkm.deletion (Q-k-means and DC-k-means with exact deletion).

The reference for every deletion is a *replay*: a fresh fit on the
remaining rows with the same random_state and the remaining sample_ids,
which uses the same random draws.  A certified deletion must give exactly
that model (bit for bit); so must a retraining.
"""
import copy
import dataclasses
import doctest
import functools
import gc
import math
import pickle
import sys
import threading

import numpy as np
import pytest
from scipy import stats

from pyfkm.deletion import _common, _dctree, _qlloyd, dckmeans, qkmeans
from pyfkm.deletion import DCKMeans, QKMeans, auto_epsilon, auto_n_leaves
from pyfkm.exceptions import InvalidIdError, InvalidInputError, ModelFileError, NotFittedError
from pyfkm.core.lattice import Lattice
from oracles.forensics import patterns, search_everywhere
from test_pickle import assert_same_state


def blobs(seed, n=600, d=3, k=4, spread=6.0):
    rng = np.random.default_rng(seed)
    means = rng.uniform(-spread, spread, size=(k, d))
    lab = rng.integers(0, k, size=n)
    return means[lab] + rng.normal(size=(n, d)), lab


def q_replay(model, X, ids_all, seed, **params):
    keep = np.isin(ids_all, model.sample_ids_)
    return QKMeans(random_state=seed, **params).fit(X[keep], sample_ids=ids_all[keep])


def assert_same_q(a, b):
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.sample_ids_, b.sample_ids_)
    np.testing.assert_array_equal(a.seed_ids_, b.seed_ids_)
    assert a.n_iter_ == b.n_iter_
    assert a.epsilon_ == b.epsilon_
    assert a.inertia_ == b.inertia_
    sa, sb = a._state, b._state
    assert sa.n_run == sb.n_run
    # the whole memo, bit for bit (the sums and losses are exact on their
    # grids: a certified deletion leaves what a fresh fit computes)
    memo = [dict(zip(("sums", "loss"), _qlloyd._q_memo(s))) for s in (sa, sb)]
    for name in ("C", "cells", "counts", "sums", "loss", "quantum", "loss_quantum", "maxmind",
                 "maxabs"):
        x, y = (m[name] if name in m else getattr(s, name) for m, s in zip(memo, (sa, sb)))
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), name
    for name in ("labels", "mind"):
        x, y = getattr(sa, name)[:, sa.alive], getattr(sb, name)[:, sb.alive]
        assert x.tobytes() == y.tobytes(), name


# ---------------------------------------------------------------- errors first

def test_errors_bad_params():
    X, _ = blobs(0, n=50)
    with pytest.raises(InvalidInputError):
        QKMeans(0).fit(X)
    with pytest.raises(InvalidInputError):
        QKMeans(51).fit(X)
    with pytest.raises(InvalidInputError):
        QKMeans(2, epsilon=-1.0).fit(X)
    with pytest.raises(InvalidInputError):
        QKMeans(2, epsilon="big").fit(X)
    with pytest.raises(InvalidInputError):
        QKMeans(2, gamma=1.5).fit(X)
    with pytest.raises(InvalidInputError):
        QKMeans(2, max_iter=0).fit(X)
    with pytest.raises(InvalidInputError):
        QKMeans(2).fit(np.array([[np.nan, 1.0], [1.0, 2.0]]))
    with pytest.raises(InvalidInputError):
        QKMeans(2).fit(X, sample_ids=np.zeros(50, dtype=int))
    with pytest.raises(InvalidInputError):
        DCKMeans(2, n_leaves=3).fit(X)
    with pytest.raises(InvalidInputError):
        DCKMeans(2, n_leaves=8, height=2).fit(X)
    for bad in ("greedy", 0, 1.5):
        with pytest.raises(InvalidInputError, match="n_local_trials"):
            DCKMeans(2, n_local_trials=bad).fit(X)
    with pytest.raises(InvalidInputError, match="n_init"):
        DCKMeans(2, n_init=0).fit(X)
    with pytest.raises(NotFittedError):
        QKMeans(2).delete(0)
    with pytest.raises(NotFittedError):
        DCKMeans(2).predict(X)


@pytest.mark.parametrize("cls", [QKMeans, DCKMeans])
def test_bad_ids_raise_and_change_nothing(cls):
    X, _ = blobs(1, n=80)
    m = cls(3, random_state=0).fit(X)
    m.delete([4, 5])
    twin = cls(3, random_state=0).fit(X)  # fitted and deleted alike, never failed
    twin.delete([4, 5])
    centers, ids = m.cluster_centers_.copy(), m.sample_ids_.copy()
    for bad in ([4], [80], [-1], [6, 6], [7, 5], [1.5], [[1, 2]]):
        with pytest.raises(InvalidInputError):
            m.delete(bad)
    with pytest.raises(InvalidIdError):
        m.delete(np.r_[0:2, 6:80])  # would leave 2 < k points
    np.testing.assert_array_equal(m.cluster_centers_, centers)
    np.testing.assert_array_equal(m.sample_ids_, ids)
    assert_same_state(m, twin)
    assert m.delete([]).n_deleted == 0
    assert_same_state(m, twin)


def test_fit_does_not_modify_input_and_rows_are_gone():
    X, _ = blobs(2, n=100)
    X0 = X.copy()
    q = QKMeans(3, random_state=1).fit(X)
    victims = [i for i in range(100) if i not in q.seed_ids_][:3]
    q.delete(victims)
    np.testing.assert_array_equal(X, X0)
    s = q._state
    assert q.n_samples_ == 97 and q.labels_.shape == (97,)
    assert not np.isin(victims, q.sample_ids_).any()
    # nothing about the deleted rows remains in the stored data
    rows = s.alive == False  # noqa: E712
    assert (s.X[rows] == 0).all() and all((lab[rows] == -1).all() for lab in s.labels)


# ------------------------------------------------------------------ basics

def test_auto_heuristics():
    assert auto_epsilon(100_000, 5, 25) == 2.0 ** -5
    assert auto_epsilon(1000, 10, 1) == 2.0 ** -5  # -log10(100) - 3 = -5
    assert auto_n_leaves(100_000) == 32 and auto_n_leaves(1) == 1
    assert auto_n_leaves(1000) == 8  # 1000^0.3 = 7.9


def _ref_mix(z):
    """SplitMix64 finalizer on uint64 arrays (numpy twin of the C mixer)."""
    M = np.uint64(0xFFFFFFFFFFFFFFFF)
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (z ^ (z >> np.uint64(31))) & M


def _ref_expo(ids, key, step):
    """The race's Exp(1) keys of ``ids`` at ``step`` (numpy twin)."""
    with np.errstate(over="ignore"):
        h = _ref_mix(ids.astype(np.uint64) * np.uint64(0x100000001B3) + np.uint64(step))
        h = _ref_mix(h ^ np.uint64(key))
    return -np.log(((h >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53)


def _race_reference(X, ids, k, key, alive=None, n_trials=1):
    """Plain numpy twin of the C race seeding (csrc/fkm_race.c); greedy
    k-means++ (the lowest potential among n_trials races) when n_trials > 1."""
    def expo(step):
        return _ref_expo(ids, key, step)

    n = X.shape[0]
    out = np.zeros(n, bool) if alive is None else ~alive
    E = expo(0)
    E[out] = np.inf
    seeds = [int(np.argmin(E))]
    D2 = ((X - X[seeds[0]]) ** 2).sum(1)
    for j in range(1, k):
        cands = []
        for t in range(n_trials):
            with np.errstate(divide="ignore"):
                score = np.where((D2 > 0) & ~out,
                                 expo(j + (t << 32)) / np.where(D2 > 0, D2, 1), np.inf)
            cands.append(int(np.argmin(score)))
        i = cands[0]
        if n_trials > 1 and np.isfinite(score[i]):
            pots = [np.where(out, 0, np.minimum(D2, ((X - X[c]) ** 2).sum(1))).sum()
                    for c in cands]
            i = cands[int(np.argmin(pots))]
        with np.errstate(divide="ignore"):
            score = np.where((D2 > 0) & ~out, expo(j) / np.where(D2 > 0, D2, 1), np.inf)
        if not np.isfinite(score[cands[0]]):
            E = expo(j)
            E[out] = np.inf
            E[seeds] = np.inf
            i = int(np.argmin(E))
        seeds.append(i)
        D2 = np.minimum(D2, ((X - X[i]) ** 2).sum(1))
    return np.array(seeds)


def test_race_seeding_kernel_matches_numpy_reference():
    # random shapes, duplicates (integer grids) and excluded rows; float32 too
    rng = np.random.default_rng(5)
    for t in range(300):
        n = int(rng.integers(1, 60))
        d = int(rng.integers(1, 5))
        k = int(rng.integers(1, n + 1))
        X = rng.normal(size=(n, d)) if t % 3 else rng.integers(0, 3, size=(n, d)) * 1.0
        ids = rng.permutation(1000)[:n].astype(np.int64)
        key = int(rng.integers(0, 2 ** 63))
        alive = rng.random(n) > 0.2
        if alive.sum() < k:
            alive[:] = True
        got = _common._race_seeding(X, ids, k, key, alive=alive)
        np.testing.assert_array_equal(got, _race_reference(X, ids, k, key, alive))
        assert alive[got].all() and np.unique(got).size == k
        if t % 5 == 0:
            X32 = X.astype(np.float32)
            np.testing.assert_array_equal(
                _common._race_seeding(X32, ids, k, key, alive=alive),
                _race_reference(X32.astype(np.float64), ids, k, key, alive))


def test_greedy_race_seeding_matches_numpy_reference():
    rng = np.random.default_rng(6)
    for t in range(100):
        n = int(rng.integers(2, 50))
        d = int(rng.integers(1, 5))
        k = int(rng.integers(1, min(n, 6) + 1))
        X = rng.normal(size=(n, d)) * rng.uniform(0.1, 10, size=d)
        ids = rng.permutation(500)[:n].astype(np.int64)
        key = int(rng.integers(0, 2 ** 63))
        trials = int(rng.integers(2, 5))
        got = _common._race_seeding(X, ids, k, key, n_trials=trials)
        np.testing.assert_array_equal(got, _race_reference(X, ids, k, key, n_trials=trials))
    # greedy lowers the mean potential after the seeding (3 well-separated
    # groups in 20-D where plain k-means++ often puts two seeds in one group)
    X = np.concatenate([rng.normal(size=(60, 20)) + 6 * e for e in np.eye(3, 20)])
    ids = np.arange(180)

    def pot(s):
        return ((X[:, None, :] - X[s][None]) ** 2).sum(-1).min(1).sum()

    plain = np.mean([pot(_common._race_seeding(X, ids, 3, key)) for key in range(200)])
    greedy = np.mean([pot(_common._race_seeding(X, ids, 3, key, n_trials=3))
                      for key in range(200)])
    assert greedy < 0.9 * plain


def test_race_seeding_kernel_errors():
    from pyfkm._core import _seeding
    X = np.zeros((3, 2))
    ids = np.arange(3, dtype=np.int64)
    with pytest.raises(InvalidInputError, match="domain"):  # fewer eligible rows than k
        _seeding.race_seeding(X, ids, 2, 1, np.array([1, 1, 0], bool))
    for bad in (0, 17):
        with pytest.raises(InvalidInputError, match="domain"):
            _seeding.race_seeding(X, ids, 2, 1, None, bad)
    X[1, 0] = np.inf
    with pytest.raises(InvalidInputError, match="infinity"):
        _seeding.race_seeding(X, ids, 2, 1)


def test_qassign_errors():
    from pyfkm._core import _lloyd
    from pyfkm.exceptions import NumericalError
    X = np.zeros((4, 2))
    for bad in (np.zeros((0, 2)), np.zeros((3, 2), np.float32), np.zeros((3, 4))[:, ::2]):
        with pytest.raises(ValueError):
            _lloyd.QAssign(bad, 2)
    qa = _lloyd.QAssign(X, 2)
    with pytest.raises(ValueError):
        qa.step(np.zeros((3, 2)))
    with pytest.raises(ValueError):
        qa.step(np.zeros((2, 2)), dist=np.zeros((4, 3)))
    with pytest.raises(NumericalError):
        qa.step(np.array([[1e300, 0.0], [0.0, 0.0]]) * 1e8)


def test_qassign_matches_brute_force_and_is_per_point():
    """Sequences of centers with large and small moves (the bounds then skip
    most distances): labels are the nearest centers (a near tie may go
    either way), distances, sums, counts and loss those of the labels; a
    subset of the rows run through the same centers gets the same labels
    and distances bit for bit (what certified deletion relies on)."""
    from pyfkm._core import _lloyd
    rng = np.random.default_rng(21)
    for t in range(12):
        n, d, k = int(rng.integers(30, 300)), int(rng.integers(1, 11)), int(rng.integers(1, 7))
        X = rng.normal(size=(n, d)) + rng.integers(0, 4, size=(n, 1)) * 5.0
        if t % 3 == 0:
            X = np.round(X)  # exact ties
        sub = np.sort(rng.choice(n, size=n // 2, replace=False))
        qa, qs = _lloyd.QAssign(X, k), _lloyd.QAssign(np.ascontiguousarray(X[sub]), k)
        C = X[rng.choice(n, k, replace=False)].copy()
        for step in range(8):
            lab, mind, sums, counts, loss = qa.step(C)
            D = ((X[:, None, :] - C[None]) ** 2).sum(-1)
            best = D.min(1)
            np.testing.assert_allclose(mind, D[np.arange(n), lab], rtol=1e-12, atol=1e-300)
            assert (D[np.arange(n), lab] <= best * (1 + 1e-9) + 1e-12).all()
            np.testing.assert_array_equal(counts, np.bincount(lab, minlength=k))
            ref = np.zeros((k, d))
            np.add.at(ref, lab, X)
            np.testing.assert_allclose(sums, ref, rtol=1e-12, atol=1e-9)
            assert loss == pytest.approx(mind.sum(), rel=1e-12)
            ls, ms, _, _, _ = qs.step(C)
            np.testing.assert_array_equal(ls, lab[sub])
            np.testing.assert_array_equal(ms, mind[sub])
            # move: mostly small (lattice-like jitter), sometimes a jump
            C = C + rng.normal(size=C.shape) * (2.0 if step % 3 == 0 else 0.05)


def test_race_seeding_dist_feeds_the_first_assignment():
    """race_seeding_dist: the same seeds as race_seeding, the distances of
    every row to every seed; given to QAssign they give bit for bit the
    first assignment QAssign computes itself."""
    from pyfkm._core import _lloyd, _seeding
    rng = np.random.default_rng(22)
    with pytest.raises(ValueError):
        _seeding.race_seeding_dist(np.zeros((3, 2)), np.arange(2, dtype=np.int64), 1, 0)
    for t in range(30):
        n, d, k = int(rng.integers(5, 80)), int(rng.integers(1, 9)), int(rng.integers(1, 6))
        X = rng.normal(size=(n, d)) * 3
        if t % 2:
            X = np.round(X)
        ids = rng.permutation(10 * n)[:n].astype(np.int64)
        key = int(rng.integers(0, 2 ** 63))
        if len(np.unique(X, axis=0)) < k:
            continue
        seeds, dist = _seeding.race_seeding_dist(X, ids, k, key)
        np.testing.assert_array_equal(seeds, _common._race_seeding(X, ids, k, key))
        np.testing.assert_allclose(dist, ((X[:, None] - X[seeds][None]) ** 2).sum(-1),
                                   rtol=1e-12, atol=1e-300)
        C = X[seeds].copy()
        a = _lloyd.QAssign(X, k).step(C, dist.copy())
        b = _lloyd.QAssign(X, k).step(C)
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)


def test_q_phases_are_lattice_random_draws():
    X, _ = blobs(3, n=100)
    q = QKMeans(3, max_iter=4, random_state=9).fit(X)
    rng = np.random.default_rng(9)
    rng.integers(0, 2 ** 63)  # the key is drawn first
    eps = q.epsilon_
    ref = np.stack([Lattice.random(eps, 3, rng).phase for _ in range(4)])
    np.testing.assert_array_equal(q._state.p.phases, ref)


def test_keyed_seeding_is_d2_sampling():
    # P(second seed = i | first seed) = D_i^2 / sum D^2: chi-square over keys
    X = np.array([[0.0], [1.0], [3.0], [6.0]])
    ids = np.arange(4)
    counts = np.zeros((4, 4))
    for key in range(4000):
        s = _common._race_seeding(X, ids, 2, key)
        counts[s[0], s[1]] += 1
    assert stats.chisquare(counts.sum(1)).pvalue > 1e-3  # first seed uniform
    for f in range(4):
        D2 = (X[:, 0] - X[f, 0]) ** 2
        exp = counts[f].sum() * D2 / D2.sum()
        m = exp > 0
        assert (counts[f][~m] == 0).all()
        assert stats.chisquare(counts[f][m], exp[m]).pvalue > 1e-3


def test_q_fit_quality_and_predict():
    X, _ = blobs(3, n=2000, d=4, k=4, spread=10)
    q = QKMeans(4, random_state=0).fit(X)
    from pyfkm import KMeans
    km = KMeans(4, random_state=0, n_init=3).fit(X)
    assert q.inertia_ <= 1.2 * km.inertia_
    np.testing.assert_array_equal(q.predict(X), q.labels_)
    # centers are lattice cell centers
    s = q._state
    if q.n_iter_ > 0:
        lat = Lattice(s.eps, s.p.phases[q.n_iter_ - 1])
        np.testing.assert_array_equal(lat.centers(lat.quantize(q.cluster_centers_)),
                                      q.cluster_centers_)


def test_q_same_seed_same_model_and_generator_state():
    X, _ = blobs(4)
    a = QKMeans(4, random_state=7).fit(X)
    b = QKMeans(4, random_state=np.random.default_rng(7)).fit(X)
    assert_same_q(a, b)


# ------------------------------------------------------- replay soundness

@pytest.mark.parametrize("data_seed", range(4))
def test_q_replay_random_deletions(data_seed):
    """Every deletion (certified or not) equals a fresh fit on the rest."""
    rng = np.random.default_rng(100 + data_seed)
    d = [2, 3, 5, 8][data_seed]
    X, _ = blobs(data_seed, n=400, d=d, k=4)
    ids = np.arange(400) * 3 + 11  # arbitrary distinct ids
    params = dict(n_clusters=4, gamma=[0.2, 0.0, 0.5, 0.2][data_seed],
                  epsilon=["auto", 0.5, 2.0, 1.0][data_seed])
    q = QKMeans(random_state=data_seed, **params).fit(X, sample_ids=ids)
    n_cert = n_retrain = 0
    for step in range(60):
        alive = q.sample_ids_
        size = 1 if step % 3 else 3
        victims = rng.choice(alive, size=size, replace=False)
        rep = q.delete(victims)
        n_cert += not rep.retrained
        n_retrain += rep.retrained
        assert_same_q(q, q_replay(q, X, ids, data_seed, **params))
    assert n_cert > 0


def test_q_replay_many_small_instances():
    """Hundreds of deletions on tiny instances, where certification often
    fails: the model must equal the replay every time."""
    total = certified = 0
    for seed in range(25):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(12, 40))
        X = np.round(rng.normal(size=(n, 2)) * 3, 1)  # ties and duplicates
        ids = np.arange(n)
        params = dict(n_clusters=3, epsilon=float(rng.choice([0.25, 1.0, 4.0])),
                      gamma=float(rng.choice([0.0, 0.2, 0.6])), max_iter=6)
        q = QKMeans(random_state=seed, **params).fit(X)
        while q.n_samples_ > 3:
            victim = rng.choice(q.sample_ids_)
            rep = q.delete(victim)
            total += 1
            certified += not rep.retrained
            assert_same_q(q, q_replay(q, X, ids, seed, **params))
    assert total > 200 and certified > 0


def test_q_deleting_a_seed_retrains():
    X, _ = blobs(5)
    q = QKMeans(4, random_state=3).fit(X)
    for j in range(4):  # every seed position, including the first
        qq = QKMeans(4, random_state=3).fit(X)
        rep = qq.delete(q.seed_ids_[j])
        assert rep.retrained and rep.reason == "seed"
        assert_same_q(qq, q_replay(qq, X, np.arange(len(X)), 3, n_clusters=4))


def test_q_adversarial_centroid_change_is_not_certified():
    """A far outlier in a small cluster moves its centroid across cells:
    deleting it must not be certified, and the model must equal the replay."""
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + 20,
                        [[30.0, 30.0]]])
    for seed in range(6):
        q = QKMeans(2, epsilon=0.05, random_state=seed, max_iter=5).fit(X)
        rep = q.delete(200)
        assert rep.retrained
        assert_same_q(q, q_replay(q, X, np.arange(201), seed, n_clusters=2,
                                  epsilon=0.05, max_iter=5))


def test_q_certification_never_wrong_exhaustive():
    """For every single point of small instances: certified => the fresh fit
    has exactly the stored trajectory."""
    unsound = checked = 0
    for seed in range(6):
        X, _ = blobs(seed, n=60, d=2, k=3, spread=4)
        params = dict(n_clusters=3, epsilon=[0.5, 2.0, 8.0][seed % 3], max_iter=8)
        base = QKMeans(random_state=seed, **params).fit(X)
        for i in range(60):
            reason, _ = _qlloyd._q_certify(base._state, np.array([i]))
            ref = QKMeans(random_state=seed, **params).fit(np.delete(X, i, 0),
                                                          sample_ids=np.delete(np.arange(60), i))
            same = (ref._state.n_run == base._state.n_run and
                    ref.n_iter_ == base.n_iter_ and
                    np.array_equal(ref._state.cells, base._state.cells) and
                    np.array_equal(ref.seed_ids_, base.seed_ids_))
            checked += 1
            unsound += (reason == "") and not same
    assert checked == 360 and unsound == 0


def test_q_empty_clusters_and_duplicates():
    # 3 distinct points, k = 4: a seed is a duplicate, a cluster stays empty
    X = np.array([[0.0, 0.0]] * 5 + [[5.0, 5.0]] * 5 + [[9.0, 0.0]] * 3)
    for gamma in (0.0, 0.2):
        q = QKMeans(4, gamma=gamma, epsilon=0.5, random_state=0).fit(X)
        assert np.isfinite(q.cluster_centers_).all()
        rng = np.random.default_rng(0)
        while q.n_samples_ > 4:
            q.delete(rng.choice(q.sample_ids_))
            assert_same_q(q, q_replay(q, X, np.arange(13), 0, n_clusters=4,
                                      gamma=gamma, epsilon=0.5))


def test_q_delete_everything_but_k():
    X, _ = blobs(6, n=50)
    q = QKMeans(4, random_state=2).fit(X)
    keep = np.random.default_rng(0).choice(50, 4, replace=False)
    q.delete(np.setdiff1d(np.arange(50), keep))
    assert q.n_samples_ == 4
    assert_same_q(q, q_replay(q, X, np.arange(50), 2, n_clusters=4))
    with pytest.raises(InvalidIdError):
        q.delete(keep[0])


def test_q_compaction_keeps_replay():
    X, _ = blobs(7, n=200)
    q = QKMeans(3, random_state=5, epsilon=1.0).fit(X)
    rng = np.random.default_rng(1)
    for _ in range(70):  # passes the 1/4-dead compaction threshold
        q.delete(rng.choice(q.sample_ids_))
    assert_same_q(q, q_replay(q, X, np.arange(200), 5, n_clusters=3, epsilon=1.0))


def test_q_deletion_distributed_like_retraining():
    """Chi-square: over random seeds, the model after deleting a fixed point
    has the same outcome distribution as fitting on the rest with fresh
    seeds (outcome = the pair of seed ids, which determine the run here)."""
    X = np.array([[0.0], [0.2], [4.0], [4.3], [9.0]])
    n_runs = 1500
    after, fresh = {}, {}
    for s in range(n_runs):
        q = QKMeans(2, epsilon=0.5, random_state=s).fit(X)
        q.delete(4)
        key = (tuple(q.seed_ids_), tuple(q.cluster_centers_.ravel()))
        after[key] = after.get(key, 0) + 1
        r = QKMeans(2, epsilon=0.5, random_state=10_000 + s).fit(X[:4])
        key = (tuple(r.seed_ids_), tuple(r.cluster_centers_.ravel()))
        fresh[key] = fresh.get(key, 0) + 1
    keys = sorted(set(after) | set(fresh))
    table = np.array([[after.get(k, 0) for k in keys], [fresh.get(k, 0) for k in keys]])
    table = table[:, table.sum(0) >= 10]
    assert stats.chi2_contingency(table)[1] > 1e-3


# ------------------------------------------------------------- DC-k-means

def assert_same_dc(a, b):
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.sample_ids_, b.sample_ids_)
    assert a.inertia_ == b.inertia_


@pytest.mark.parametrize("height,n_leaves", [(1, "auto"), (1, 8), (2, 16)])
def test_dc_replay(height, n_leaves):
    X, _ = blobs(8, n=500, d=3)
    ids = np.arange(500) + 1000
    dc = DCKMeans(4, n_leaves=n_leaves, height=height, random_state=4).fit(X, sample_ids=ids)
    L = dc.n_leaves_
    rng = np.random.default_rng(0)
    for step in range(40):
        dc.delete(rng.choice(dc.sample_ids_, size=1 + step % 2, replace=False))
        keep = np.isin(ids, dc.sample_ids_)
        ref = DCKMeans(4, n_leaves=L, height=height, random_state=4).fit(
            X[keep], sample_ids=ids[keep])
        assert_same_dc(dc, ref)
        assert dc.n_leaves_ == L


def test_dc_n_leaves_constant_and_quality():
    X, _ = blobs(9, n=3000, d=3, k=4, spread=10)
    dc = DCKMeans(4, random_state=0).fit(X)
    assert dc.n_leaves_ == auto_n_leaves(3000) == 8
    from pyfkm import KMeans
    km = KMeans(4, random_state=0, n_init=3).fit(X)
    assert dc.inertia_ <= 1.3 * km.inertia_
    dc.delete(np.arange(2000))
    assert dc.n_leaves_ == 8
    assert dc.predict(X[:5]).shape == (5,)


def test_dc_empty_leaves_and_everything_but_k():
    X, _ = blobs(10, n=40)
    dc = DCKMeans(3, n_leaves=16, random_state=1).fit(X)
    dc.delete(np.arange(37))
    assert np.isfinite(dc.cluster_centers_).all() and dc.cluster_centers_.shape == (3, 3)
    ref = DCKMeans(3, n_leaves=16, random_state=1).fit(X[37:], sample_ids=np.arange(37, 40))
    assert_same_dc(dc, ref)


def test_dc_deletion_distributed_like_retraining():
    X = np.array([[0.0], [0.3], [5.0], [5.5], [9.0], [9.2]])
    after, fresh = {}, {}
    for s in range(800):
        a = DCKMeans(2, n_leaves=2, random_state=s).fit(X)
        a.delete(5)
        key = tuple(np.round(np.sort(a.cluster_centers_.ravel()), 9))
        after[key] = after.get(key, 0) + 1
        b = DCKMeans(2, n_leaves=2, random_state=5000 + s).fit(X[:5])
        key = tuple(np.round(np.sort(b.cluster_centers_.ravel()), 9))
        fresh[key] = fresh.get(key, 0) + 1
    keys = sorted(set(after) | set(fresh))
    table = np.array([[after.get(k, 0) for k in keys], [fresh.get(k, 0) for k in keys]])
    table = table[:, table.sum(0) >= 10]
    assert stats.chi2_contingency(table)[1] > 1e-3


def test_doctests():
    for module in (_qlloyd, qkmeans, dckmeans):  # auto_epsilon, QKMeans, DCKMeans
        res = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert res.attempted > 0 and res.failed == 0


# ----------------------------------------- DC-k-means: seeds reused on deletion

def _race_trace_reference(X, ids, k, key, n_trials):
    """Numpy twin of the candidates and potentials recorded by
    race_seeding_trace (no fallback: callers use distinct points)."""
    def expo(step):
        return _ref_expo(ids, key, step)

    cand = np.full((k, n_trials), -1)
    pot = np.full((k, n_trials), np.nan)
    seeds = [int(np.argmin(expo(0)))]
    D2 = ((X - X[seeds[0]]) ** 2).sum(1)
    for j in range(1, k):
        for t in range(n_trials):
            with np.errstate(divide="ignore"):
                score = np.where(D2 > 0, expo(j + (t << 32)) / np.where(D2 > 0, D2, 1), np.inf)
            cand[j, t] = int(np.argmin(score))
        if n_trials > 1:
            for t in range(n_trials):
                if cand[j, t] not in cand[j, :t]:
                    pot[j, t] = np.minimum(D2, ((X - X[cand[j, t]]) ** 2).sum(1)).sum()
            i = cand[j, int(np.nanargmin(pot[j]))]
        else:
            i = cand[j, 0]
        seeds.append(int(i))
        D2 = np.minimum(D2, ((X - X[i]) ** 2).sum(1))
    return np.array(seeds), cand, pot


def test_race_trace_errors_and_matches_reference():
    from pyfkm._core import _seeding
    X = np.zeros((3, 2))
    ids = np.arange(3, dtype=np.int64)
    with pytest.raises(InvalidInputError, match="domain"):
        _seeding.race_seeding_trace(X, ids, 2, 1, 0)
    with pytest.raises(ValueError):
        _seeding.race_seeding_trace(X, ids[:2], 2, 1, 1)
    rng = np.random.default_rng(11)
    for t in range(120):
        n = int(rng.integers(6, 50))
        d = int(rng.integers(1, 5))
        k = int(rng.integers(1, 6))
        trials = int(rng.integers(1, 5))
        X = rng.normal(size=(n, d)) * rng.uniform(0.5, 5, size=d)
        ids = rng.permutation(1000)[:n].astype(np.int64)
        key = int(rng.integers(0, 2 ** 63))
        seeds, cand, pot = _seeding.race_seeding_trace(X, ids, k, key, trials)
        np.testing.assert_array_equal(seeds, _common._race_seeding(X, ids, k, key,
                                                                    n_trials=trials))
        rs, rc, rp = _race_trace_reference(X, ids, k, key, trials)
        np.testing.assert_array_equal(seeds, rs)
        np.testing.assert_array_equal(cand, rc)
        np.testing.assert_array_equal(np.isnan(pot), np.isnan(rp))
        np.testing.assert_allclose(pot, rp, rtol=1e-12)


def test_race_trace_certification_never_wrong():
    """Remove points one at a time from small sets (duplicates, near-ties):
    whenever the trace certifies the seeds, a fresh race on the remaining
    points picks exactly those seeds; otherwise rebuild the trace."""
    from pyfkm._core import _seeding
    rng = np.random.default_rng(12)
    certified = refused = 0
    for t in range(60):
        n = int(rng.integers(8, 40))
        d = int(rng.integers(1, 4))
        k = int(rng.integers(1, 5))
        trials = int(rng.integers(1, 4))
        X = (rng.integers(0, 4, size=(n, d)) * 1.0 if t % 2
             else np.round(rng.normal(size=(n, d)), 1))
        ids = rng.permutation(500)[:n].astype(np.int64)
        key = int(rng.integers(0, 2 ** 63))
        trace = None
        while X.shape[0] > k + 1:
            if trace is None:
                sd, cand, pot = _seeding.race_seeding_trace(X, ids, k, key, trials)
                trace = _dctree._RaceTrace.build(sd, cand, pot, X.shape[0])
            p = int(rng.integers(0, X.shape[0]))
            new = None if trace is None else trace.remove(p, X[p], X, X.shape[0] - 1)
            X, ids = np.delete(X, p, axis=0), np.delete(ids, p)
            if new is not None:
                certified += 1
                fresh = _common._race_seeding(X, ids, k, key, n_trials=trials)
                np.testing.assert_array_equal(new.seeds, fresh)
            else:
                refused += trace is not None
            trace = new
    assert certified > 200 and refused > 20


def _check_leaf_storage(dc, X, ids):
    """Leaf j's arrays hold its remaining points in row order, each leaf an
    array of its own (no view of a buffer that could hold deleted rows)."""
    alive = np.isin(ids, dc.sample_ids_)
    st = dc._state
    total = 0
    for j in range(dc.n_leaves_):
        got_ids = st.sids[j]
        c = got_ids.shape[0]
        assert st.X[j].shape == (c, X.shape[1]) and st.rows[j].shape == (c,)
        assert st.X[j].base is None and st.X[j].flags.c_contiguous
        # expected: the remaining ids of this leaf, in original row order
        exp_ids = ids[alive][np.isin(ids[alive], got_ids)]
        np.testing.assert_array_equal(got_ids, exp_ids)
        np.testing.assert_array_equal(st.X[j], X[np.searchsorted(ids, got_ids)])
        np.testing.assert_array_equal(st.ids[st.rows[j]], got_ids)
        assert (st.leaf[st.rows[j]] == j).all() and st.alive[st.rows[j]].all()
        total += c
    assert total == alive.sum() == dc.sample_ids_.shape[0]


@pytest.mark.parametrize("params", [dict(), dict(n_local_trials=1), dict(n_init=2)])
def test_dc_leaf_storage_and_seed_reuse_replay(params, monkeypatch):
    """Many single and batch deletions: the leaf-contiguous storage stays
    consistent (also across compaction) and every model equals a fresh fit
    on the remaining points; most leaf seedings are reused."""
    X, _ = blobs(13, n=900, d=4, k=4, spread=8)
    ids = np.arange(900) * 2 + 5  # sorted, arbitrary
    dc = DCKMeans(4, n_leaves=4, random_state=3, **params).fit(X, sample_ids=ids)
    calls = [0, False, 0]  # races run by dc.delete; counting on; leaf fits
    orig = _dctree._seeding.race_seeding_trace
    leaf_fit = _dctree._dc_leaf_fit

    def counting_fit(*a, **kw):
        calls[2] += calls[1]
        return leaf_fit(*a, **kw)

    def counting(*a, **kw):
        calls[0] += calls[1]
        return orig(*a, **kw)

    def delete(victims):
        calls[1] = True
        dc.delete(victims)
        calls[1] = False

    monkeypatch.setattr(_dctree, "_dc_leaf_fit", counting_fit)
    monkeypatch.setattr(_dctree._seeding, "race_seeding_trace", counting)
    rng = np.random.default_rng(4)
    n_del = 0
    for step in range(30):
        size = 1 if step % 4 else 12
        delete(rng.choice(dc.sample_ids_, size=size, replace=False))
        n_del += size
        _check_leaf_storage(dc, X, ids)
        if step % 3 == 0:
            keep = np.isin(ids, dc.sample_ids_)
            ref = DCKMeans(4, n_leaves=4, random_state=3, **params).fit(
                X[keep], sample_ids=ids[keep])
            assert_same_dc(dc, ref)
    # past the compaction threshold (a quarter deleted)
    delete(rng.choice(dc.sample_ids_, size=200, replace=False))
    assert dc._state.ids.shape[0] == dc.sample_ids_.shape[0] == 900 - n_del - 200
    _check_leaf_storage(dc, X, ids)
    delete(dc.sample_ids_[:3])
    _check_leaf_storage(dc, X, ids)
    keep = np.isin(ids, dc.sample_ids_)
    assert_same_dc(dc, DCKMeans(4, n_leaves=4, random_state=3, **params).fit(
        X[keep], sample_ids=ids[keep]))
    # without reuse every leaf fit reruns its races (n_init each)
    assert calls[2] > 40 and calls[0] < 0.4 * calls[2] * params.get("n_init", 1)


# ------------------------------------------- issue 18: failures change nothing
#
# A mutating call that raises must leave the model exactly as it was.  The
# reference is a *twin*: a model built by the same calls that never saw the
# failure (fitted independently, not copied); the whole object graph is
# compared (tests/test_pickle.py's assert_same_state, arrays byte for byte).
# Then the failed call is made again for real, and must give what it gives
# on a model that never failed.

def q_model(random_state=5):
    X, _ = blobs(21, n=240, spread=8)
    return QKMeans(3, epsilon=1.0, random_state=random_state).fit(X)


def dc_model(random_state=5):
    X, _ = blobs(21, n=240, spread=8)
    return DCKMeans(3, n_leaves=4, random_state=random_state).fit(X)


def q_position(model, i):
    """Row position of id ``i`` in the model's state."""
    s = model._state
    return s.order[np.searchsorted(s.ids_sorted, [i])]


def q_certified_ids(model, count):
    """The first alive ids whose deletions, one at a time in this order,
    are certified (found by deleting them from a copy)."""
    m, out = pickle.loads(pickle.dumps(model)), []
    for i in m.sample_ids_:
        if len(out) == count:
            break
        if _qlloyd._q_certify(m._state, q_position(m, i))[0] == "":
            assert m.delete([i]).reason == ""
            out.append(int(i))
    assert len(out) == count
    return out


def _q_ops():
    """name -> (build, prep, call): ``build()`` a fitted model, ``prep(m)``
    calls made on model, twin and reference alike, ``call(m)`` the call that
    is made to fail."""
    X2, _ = blobs(22, n=200, spread=8)
    base = q_model()
    cert = q_certified_ids(base, 3)
    seed_id = int(base.seed_ids_[1])
    reasons = {}
    for i in base.sample_ids_:
        reasons.setdefault(_qlloyd._q_certify(base._state, q_position(base, i))[0], int(i))
    # certified deletions, one at a time, up to one short of compacting the
    # arrays (a quarter of the 240 rows dead)
    chain = q_certified_ids(base, 61)

    def refit(m):
        m.fit(X2)

    def no_prep(m):
        pass

    def to_the_threshold(m):
        for i in chain[:60]:
            m.delete([i])

    m = q_model()
    to_the_threshold(m)
    assert m._state.X.shape[0] == 240 and m.n_samples_ == 180
    assert _qlloyd._q_certify(m._state, q_position(m, chain[60]))[0] == ""

    ops = {
        "refit": (q_model, lambda m: m.set_params(n_clusters=4, epsilon="auto"), refit),
        "refit-generator": (lambda: q_model(random_state=np.random.default_rng(11)),
                            lambda m: m.set_params(n_clusters=2), refit),
        "certified": (q_model, lambda m: m.delete(cert[:1]), lambda m: m.delete(cert[1:3])),
        "seed": (q_model, no_prep, lambda m: m.delete([seed_id, cert[0]])),
        "centroid": (q_model, no_prep, lambda m: m.delete([reasons["centroid"]])),
        "compaction": (q_model, to_the_threshold, lambda m: m.delete(chain[60:61])),
    }
    return ops


def _dc_ops():
    X2, _ = blobs(22, n=200, spread=8)

    def refit(m):
        m.fit(X2)

    def no_prep(m):
        pass

    m = dc_model()
    m.delete(np.arange(100, 150))
    assert m._state.ids.shape[0] == 240
    m.delete(np.arange(10, 22))
    assert m._state.ids.shape[0] == 240 - 62  # the "compaction" call compacts
    return {
        "refit": (dc_model, lambda m: m.set_params(n_clusters=4, n_init=2), refit),
        "refit-generator": (lambda: dc_model(random_state=np.random.default_rng(11)),
                            lambda m: m.set_params(n_leaves=2), refit),
        "one": (dc_model, lambda m: m.delete([0]), lambda m: m.delete([7])),
        "batch": (dc_model, no_prep, lambda m: m.delete(np.arange(20, 40))),
        "compaction": (dc_model, lambda m: m.delete(np.arange(100, 150)),
                       lambda m: m.delete(np.arange(10, 22))),
    }


class Injected(RuntimeError):
    pass


def _proxy_qassign(orig, hook):
    class QAssignProxy:
        def __init__(self, *a):
            hook()
            self._qa = orig(*a)

        def step(self, *a):
            hook()
            return self._qa.step(*a)
    return QAssignProxy


def _inject(mp, owner, name, fail_at, counter):
    """Patch ``owner.name`` to count its calls and raise Injected at call
    number ``fail_at`` (0: never)."""
    orig = getattr(owner, name)

    def hook():
        counter[0] += 1
        if counter[0] == fail_at:
            raise Injected(f"{name} call {fail_at}")

    if name == "QAssign":
        mp.setattr(owner, name, _proxy_qassign(orig, hook))
        return

    def wrapper(*a, **kw):
        hook()
        return orig(*a, **kw)
    mp.setattr(owner, name, wrapper)


Q_TARGETS = [
    (_common._IdIndex, "lookup"), (qkmeans, "check_array"), (qkmeans, "_check_sample_ids"),
    (_common, "as_generator"), (qkmeans, "_q_state"), (_qlloyd, "_q_state"),
    (_qlloyd, "_q_fit"), (qkmeans, "_q_certify"), (qkmeans, "_q_certified"),
    (qkmeans, "_q_retrained"), (_qlloyd, "_balanced_centroids"), (_qlloyd, "_hits"),
    (_qlloyd, "_on_grid"), (_qlloyd, "_q_grid"), (_qlloyd, "_q_grid_sums"),
    (_qlloyd, "_q_grid_loss"), (_qlloyd, "_label_sums"), (_qlloyd, "_writable"),
    (_common, "_write_rows"), (_qlloyd._seeding, "race_seeding_dist"),
    (_qlloyd._lattice, "quantize"), (_qlloyd._lattice, "centers"),
    (_qlloyd._lloyd, "QAssign"),
]
DC_TARGETS = [
    (_common._IdIndex, "lookup"), (dckmeans, "check_array"), (dckmeans, "_check_sample_ids"),
    (_common, "as_generator"), (dckmeans, "_dc_fit"), (dckmeans, "_dc_deleted"),
    (_dctree, "_dc_layout"), (_dctree, "_dc_leaf_fit"), (_dctree, "_dc_node_fit"),
    (_dctree, "_node_kmeans"), (_dctree, "_keyed_uniform"), (_dctree, "_race_seeding"),
    (_dctree._RaceTrace, "build"), (_dctree._RaceTrace, "remove"), (_dctree, "_pow2_ceil"),
    (_dctree, "_writable"), (_common, "_write_rows"),
    (_dctree._seeding, "race_seeding_trace"), (_dctree._seeding, "race_seeding"),
    (_dctree._lloyd, "lloyd_loop"),
]
# what each operation must reach (so that the injection covers every stage)
MUST_REACH = {
    ("Q", "refit"): {"_q_fit", "race_seeding_dist", "QAssign", "quantize", "centers"},
    ("Q", "refit-generator"): {"as_generator", "_q_fit"},
    ("Q", "certified"): {"lookup", "_q_certify", "_q_certified", "_write_rows"},
    ("Q", "seed"): {"_q_retrained", "race_seeding_dist", "QAssign"},
    ("Q", "centroid"): {"_q_certify", "_q_retrained", "QAssign"},
    ("Q", "compaction"): {"_q_certify", "_q_certified"},
    ("DC", "refit"): {"_dc_fit", "race_seeding_trace", "race_seeding", "lloyd_loop"},
    ("DC", "refit-generator"): {"as_generator", "_dc_leaf_fit"},
    ("DC", "one"): {"lookup", "remove", "_dc_leaf_fit", "_dc_node_fit", "_write_rows"},
    ("DC", "batch"): {"remove", "race_seeding_trace", "lloyd_loop", "_write_rows"},
    ("DC", "compaction"): {"_dc_deleted", "_dc_leaf_fit", "_dc_node_fit"},
}


def _run_injections(kind, name, build, prep, call, targets, monkeypatch):
    twin = build()
    prep(twin)
    ref = build()
    prep(ref)
    call(ref)
    X, _ = blobs(21, n=240, spread=8)
    reached, n_failures = set(), 0
    for owner, target in targets:
        counter = [0]
        m = build()
        prep(m)
        with monkeypatch.context() as mp:
            _inject(mp, owner, target, 0, counter)
            call(m)
        n_calls = counter[0]
        if n_calls == 0:
            continue
        reached.add(target)
        for fail_at in sorted({1, (n_calls + 1) // 2, n_calls}):
            m = build()
            prep(m)
            counter = [0]
            with monkeypatch.context() as mp:
                _inject(mp, owner, target, fail_at, counter)
                with pytest.raises(Injected):
                    call(m)
            n_failures += 1
            assert_same_state(m, twin, f"{kind} {name}: {target} #{fail_at}")
            np.testing.assert_array_equal(m.predict(X), twin.predict(X))
            call(m)  # now for real: as on a model that never failed
            assert_same_state(m, ref, f"{kind} {name}: {target} #{fail_at}, then")
    missing = MUST_REACH[kind, name] - reached
    assert not missing, f"{kind} {name} never reached {missing}"
    # every reached target failed at its first, middle and last calls (where
    # they differ; the certification calls each of its steps once)
    assert n_failures >= len(reached)


@pytest.mark.parametrize("name", ["refit", "refit-generator", "certified", "seed", "centroid",
                                  "compaction"])
def test_q_injected_failures_change_nothing(name, monkeypatch):
    build, prep, call = _q_ops()[name]
    _run_injections("Q", name, build, prep, call, Q_TARGETS, monkeypatch)


@pytest.mark.parametrize("name", ["refit", "refit-generator", "one", "batch", "compaction"])
def test_dc_injected_failures_change_nothing(name, monkeypatch):
    build, prep, call = _dc_ops()[name]
    _run_injections("DC", name, build, prep, call, DC_TARGETS, monkeypatch)


def test_overwrite_undoes_a_failed_write(monkeypatch):
    """The in-place erasure is all or nothing (checked on plain arrays)."""
    a, b = np.arange(6.0), np.arange(6)
    calls = [0]
    orig = _common._write_rows

    def failing(x, index, value):
        calls[0] += 1
        if calls[0] == 3:
            raise Injected("third write")
        orig(x, index, value)

    monkeypatch.setattr(_common, "_write_rows", failing)
    with pytest.raises(Injected):
        _common._overwrite([(a, [1, 2], 0.0), (b, slice(0, 3), -1), (a, [5], 0.0)])
    np.testing.assert_array_equal(a, np.arange(6.0))
    np.testing.assert_array_equal(b, np.arange(6))
    monkeypatch.setattr(_common, "_write_rows", orig)
    _common._overwrite([(a, [1, 2], 0.0), (b, slice(0, 3), -1), (a, [5], 0.0)])
    np.testing.assert_array_equal(a, [0, 0, 0, 3, 4, 0])
    np.testing.assert_array_equal(b, [-1, -1, -1, 3, 4, 5])


@pytest.mark.parametrize("cls", [QKMeans, DCKMeans])
def test_failed_refits_change_nothing(cls):
    """Natural failures of a refit (the issue's TypeError after a failed
    DCKMeans refit; QKMeans with a changed n_clusters): bad n_clusters, NaN,
    infinity, overflowing distances, repeated ids, bad parameters after a
    change of others; a Generator random_state gets its state back."""
    X, _ = blobs(23, n=120)
    make = (lambda rs: cls(3, random_state=rs))
    m, twin = make(np.random.default_rng(2)).fit(X), make(np.random.default_rng(2)).fit(X)
    m.delete([1, 2])
    twin.delete([1, 2])
    nan = X.copy()
    nan[5, 1] = np.nan
    inf = X.copy()
    inf[7, 0] = np.inf
    # (data, parameters changed before the refit, fit keywords)
    cases = [(X, dict(n_clusters=200), {}), (nan, {}, {}), (inf, {}, {}),
             (X * 1e200, dict(n_clusters=4), {}),  # squared distances overflow
             (X, {}, dict(sample_ids=np.zeros(120, dtype=int))),
             (X[:, :2].copy(), dict(n_clusters=121), {}),
             (X, dict(n_clusters=4, max_iter=0), {}),
             # a bad parameter checked after good new ones
             (X, dict(n_clusters=4, gamma=2.0) if cls is QKMeans else
              dict(n_clusters=4, n_init=2, n_leaves=3), {})]
    params = m.get_params()
    for data, change, kw in cases:
        m.set_params(**change)
        with pytest.raises(InvalidInputError):
            m.fit(data, **kw)
        m.set_params(**params)
        assert_same_state(m, twin)
    np.testing.assert_array_equal(m.predict(X), twin.predict(X))
    r1, r2 = m.delete([3, 40]), twin.delete([3, 40])
    assert (r1.n_deleted, r1.retrained, r1.reason) == (r2.n_deleted, r2.retrained, r2.reason)
    assert_same_state(m, twin)
    m.fit(X[::2])
    twin.fit(X[::2])
    assert_same_state(m, twin)  # the generators advanced alike


@pytest.mark.parametrize("cls", [QKMeans, DCKMeans])
def test_hyper_parameters_changed_after_fit_do_not_reach_delete(cls):
    """set_params takes effect at the next fit: deletions keep replaying the
    fitted model."""
    X, _ = blobs(24, n=200)
    m, twin = cls(3, random_state=1).fit(X), cls(3, random_state=1).fit(X)
    m.set_params(n_clusters=5, max_iter=2, **({"epsilon": 0.01} if cls is QKMeans
                                               else {"n_init": 3}))
    for victims in ([4], [5, 6], list(range(30, 60))):
        r1, r2 = m.delete(victims), twin.delete(victims)
        assert (r1.retrained, r1.reason) == (r2.retrained, r2.reason)
    np.testing.assert_array_equal(m.cluster_centers_, twin.cluster_centers_)
    assert m.cluster_centers_.shape == (3, 3)
    m.set_params(n_clusters=3, max_iter=10, **({"epsilon": "auto"} if cls is QKMeans
                                                else {"n_init": 1}))
    assert_same_state(m, twin)


@pytest.mark.parametrize("cls", [QKMeans, DCKMeans])
def test_fit_copies_the_callers_array(cls):
    """Changing the caller's X after fit changes neither the model nor its
    later deletions (float64 C order, float32, Fortran order)."""
    X0, _ = blobs(25, n=150)
    for X in (X0.copy(), X0.astype(np.float32), np.asfortranarray(X0)):
        m = cls(3, random_state=2).fit(X)
        ref = cls(3, random_state=2).fit(X.copy())
        X[:] = 1e6
        np.testing.assert_array_equal(m.cluster_centers_, ref.cluster_centers_)
        for victims in ([1], [2, 3], list(range(40, 70))):
            m.delete(victims)
            ref.delete(victims)
            assert_same_state(m, ref)


# --------------------------------------------------------- issue 18: threads

@pytest.mark.parametrize("make", [
    pytest.param(lambda: QKMeans(3, epsilon=1.0, random_state=5), id="QKMeans"),
    pytest.param(lambda: DCKMeans(3, n_leaves=4, random_state=5), id="DCKMeans"),
])
def test_concurrent_deletions_are_serialized(make):
    """Two threads delete disjoint id sets from one model, one id at a time,
    20 times over: the end state is the sequential one (exact deletion makes
    it independent of the order: a fresh fit on the remaining rows)."""
    X, _ = blobs(26, n=240, spread=8)
    rng = np.random.default_rng(3)
    ids = rng.permutation(240)
    A, B = ids[:25], ids[25:50]
    seq = make().fit(X)
    for i in np.concatenate([A, B]):
        seq.delete([i])
    keep = np.setdiff1d(np.arange(240), ids[:50])
    fresh = make().fit(X[keep], sample_ids=keep)
    np.testing.assert_array_equal(seq.cluster_centers_, fresh.cluster_centers_)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        for run in range(20):
            m = make().fit(X)
            barrier = threading.Barrier(2)
            errors = []

            def work(victims):
                try:
                    barrier.wait()
                    for i in victims:
                        m.delete([i])
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)

            threads = [threading.Thread(target=work, args=(v,)) for v in (A, B)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert errors == []
            np.testing.assert_array_equal(m.sample_ids_, keep)
            np.testing.assert_array_equal(m.cluster_centers_, seq.cluster_centers_)
            assert m.inertia_ == seq.inertia_
            if isinstance(m, QKMeans):
                np.testing.assert_array_equal(m.labels_, seq.labels_)
                np.testing.assert_array_equal(m.seed_ids_, seq.seed_ids_)
    finally:
        sys.setswitchinterval(interval)


# --------------------------------------------------------- issue 18: erasure

def _f64(values):
    return [np.float64(v).tobytes() for v in np.ravel(values)]


def _erasure_check(model, X, deleted, kept):
    """No byte pattern of a deleted row's values anywhere in the model or
    its pickle; patterns of retained rows are found in both."""
    gone = search_everywhere(model, patterns(X[deleted]))
    assert gone == {"object": [], "pickle": []}, gone
    here = search_everywhere(model, patterns(X[kept]))
    assert here["object"]
    # the rows are stored as float64: all their float64 patterns are found
    assert set(here["pickle"]) >= set(_f64(X[kept]))


@pytest.mark.parametrize("cls", [QKMeans, DCKMeans])
def test_erasure_errors_and_search_sanity(cls):
    """Before any deletion every row's values are found (so the searches
    below can fail), and a search for values never seen finds nothing."""
    X = np.random.default_rng(27).normal(size=(200, 3)) * 3
    m = cls(3, random_state=4).fit(X.copy())
    found = search_everywhere(m, patterns(X[:5]))
    assert set(found["pickle"]) >= set(_f64(X[:5])) and found["object"]
    never = np.random.default_rng(99).normal(size=(5, 3)) + 100
    assert search_everywhere(m, patterns(never)) == {"object": [], "pickle": []}


def test_q_erasure_certified_and_retrained():
    X = np.random.default_rng(28).normal(size=(400, 3))
    X[:200] += 6
    m = QKMeans(2, epsilon=2.0, random_state=3).fit(X.copy())  # no caller buffer kept
    deleted = []
    # certified deletions (the rows stay allocated, overwritten)
    cert = q_certified_ids(m, 5)
    for i in cert:
        assert m.delete([i]).reason == ""
    deleted += cert
    alive = np.setdiff1d(np.arange(400), deleted)
    _erasure_check(m, X, deleted, alive[:10])
    assert m._state.X.shape[0] == 400  # not compacted: erased in place
    # a deleted seed retrains
    seed = int(m.seed_ids_[0])
    assert m.delete([seed]).reason == "seed"
    deleted.append(seed)
    alive = np.setdiff1d(np.arange(400), deleted)
    _erasure_check(m, X, deleted, alive[-10:])
    # a batch (retraining or certified), then past the compaction threshold
    for batch in (alive[:7], alive[7:110]):
        m.delete(batch)
        deleted += batch.tolist()
        alive = np.setdiff1d(np.arange(400), deleted)
        _erasure_check(m, X, deleted, alive[:10])
    for copy_ in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        _erasure_check(copy_, X, deleted, alive[:10])


def test_dc_erasure_reused_and_rerun_seedings():
    X = np.random.default_rng(29).normal(size=(400, 3))
    X[:200] += 6
    m = DCKMeans(3, n_leaves=4, random_state=3).fit(X.copy())
    st = m._state
    # one deletion that keeps its leaf's seeds, one that deletes a leaf seed
    tr = st.traces[0][0]
    seed_rows = st.rows[0][tr.seeds]
    cand_rows = st.rows[0][tr.cand[tr.cand >= 0]]
    plain = [int(r) for r in st.rows[0] if r not in cand_rows][:1]
    races = []
    orig = _dctree._seeding.race_seeding_trace

    def counting(*a, **kw):
        races.append(1)
        return orig(*a, **kw)

    _dctree._seeding.race_seeding_trace = counting
    try:
        deleted = []
        for victims, n_races in ((plain, 0), (seed_rows[:1].tolist(), 1),
                                 (list(range(300, 320)), None)):
            del races[:]
            m.delete(victims)
            assert n_races is None or len(races) == n_races
            deleted += [int(v) for v in victims]
            alive = np.setdiff1d(np.arange(400), deleted)
            _erasure_check(m, X, deleted, alive[:10])
    finally:
        _dctree._seeding.race_seeding_trace = orig
    assert m._state.ids.shape[0] == 400  # not compacted: the deleted ids are kept
    batch = np.setdiff1d(np.arange(110), deleted)
    m.delete(batch)  # past a quarter: compaction
    deleted = sorted(set(deleted) | set(batch.tolist()))
    alive = np.setdiff1d(np.arange(400), deleted)
    assert m._state.ids.shape[0] == alive.shape[0]
    _erasure_check(m, X, deleted, alive[:10])


@pytest.mark.parametrize("cls", [QKMeans, DCKMeans])
def test_callers_array_is_not_reachable(cls):
    X = np.random.default_rng(30).normal(size=(120, 2))
    m = cls(3, random_state=0).fit(X)
    seen, stack = set(), [m]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, type):
            continue
        seen.add(id(o))
        assert o is not X
        stack.extend(gc.get_referents(o))
    assert len(seen) > 20


def _q_after(data, deletions, **params):
    """A QKMeans fitted on ``data`` after the certified deletions (lists of
    ids, one call each), through a pickle round trip."""
    m = QKMeans(2, epsilon=2.0, random_state=3, **params).fit(data)
    for ids in deletions:
        assert m.delete(ids).reason == ""
    return pickle.loads(pickle.dumps(m))


def test_q_derived_state_forgets_the_deleted_row():
    """After a certified deletion the whole state, pickled, does not depend
    on the deleted row's values: two models whose data differ only in that
    row hold the same state bit for bit, when the row moves within its
    cluster, when it is in another cluster at every iteration (the memo of
    each cluster's sums and counts must not tell which one lost a point),
    when it gave the bound on |x| in one dataset and not in the other; and
    whatever the order of the deletions.  (Before: the sums' error
    coefficients were those of the fit-time counts, and the float sums
    kept the rounding of the subtraction, both giving the label away.)"""
    X = np.random.default_rng(28).normal(size=(400, 3))
    X[:200] += 6
    base = QKMeans(2, epsilon=2.0, random_state=3).fit(X)
    far = int(np.argmax(base._state.mind[0]))  # it gives the bound on |x|
    assert far not in base._state.seeds
    cases = {"within": (10, X[10] + 0.4), "far": (far, X[far] + 0.5),
             "not far": (far, X[far + 1] + 0.01), "across": (0, X[200] + 0.01)}
    for name, (r, value) in cases.items():
        X2 = X.copy()
        X2[r] = value
        a, b = (_q_after(data, [[r]]) for data in (X, X2))
        assert_same_state(a, b, name)
        # the premises
        sa, sb = (QKMeans(2, epsilon=2.0, random_state=3).fit(data)._state for data in (X, X2))
        if name == "across":  # the row's cluster differs at every iteration
            assert (sa.labels[:, r] != sb.labels[:, r]).all()
        if name == "not far":  # the row gives the bound on |x| in X only
            assert np.argmax(sb.mind[0]) != r
    # the order of the deletions (one at a time or in one call) does not show
    steps = [[[0], [far], [10]], [[10], [0], [far]], [[far, 10, 0]]]
    first = _q_after(X, steps[0])
    for other in steps[1:]:
        assert_same_state(_q_after(X, other), first)


def test_dc_derived_state_forgets_the_deleted_row():
    """DCKMeans after a deletion that keeps its leaf's seeds: two models
    whose data differ only in the deleted row hold the same state, pickled,
    but for the bounds of that leaf's race trace, which keep the binary
    exponent of potentials that once held the row and the rounding of the
    subtraction (documented in the Notes: "What is kept, what is erased");
    those agree to that rounding."""
    X = np.random.default_rng(29).normal(size=(400, 3))
    X[:200] += 6
    base = DCKMeans(3, n_leaves=4, random_state=3).fit(X)
    st = base._state
    checked = 0
    for r in range(0, 400, 7):
        j = int(st.leaf[r])
        X2 = X.copy()
        X2[r] += 0.3
        models = [DCKMeans(3, n_leaves=4, random_state=3).fit(data) for data in (X, X2)]
        before = [m._state.traces[j] for m in models]
        p = int(np.searchsorted(st.rows[j], r))
        if any(tr is None or any((t.seeds == p).any() or (t.cand == p).any() for t in tr)
               for tr in before):
            continue  # a seed or candidate: the leaf's race is run again
        for m in models:
            m.delete([r])
        if any(m._state.traces[j] is None for m in models):
            continue  # a pick not certified: the race is run again
        a, b = (pickle.loads(pickle.dumps(m)) for m in models)
        for ta, tb in zip(a._state.traces[j], b._state.traces[j]):
            for name in ("lo", "hi"):
                np.testing.assert_allclose(getattr(ta, name), getattr(tb, name), rtol=1e-12)
                setattr(ta, name, None)
                setattr(tb, name, None)
        assert_same_state(a, b, f"row {r}")
        checked += 1
    assert checked >= 10


def test_q_memo_error_bounds_after_deleting_an_outlier():
    """The memo's sums are exact sums on their grid (within m q / 2 of the
    exact sums of the remaining rows), also after a certified deletion of
    a far outlier that gave the bound on |x| (a float sum that once held it
    kept rounding errors of its magnitude, beyond the bound that the
    certification assumed with the recomputed, smaller bound on |x|), and
    the grid is that of a fresh fit."""
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(size=(200, 2)), [[3e6, -2e6]]])
    for seed in range(3):
        q = QKMeans(1, epsilon=2.0 ** 24, random_state=seed).fit(X)
        assert 200 not in q._state.seeds
        assert q.delete([200]).reason == ""
        s = q._state
        assert s.maxabs.max() < 10  # recomputed without the outlier
        for t in range(s.n_run + 1):
            members = s.alive & (s.labels[t] == 0)
            m = int(members.sum())
            for c in range(2):
                exact = math.fsum(X[members, c])
                assert abs(s.sums[t, 0, c] - exact) <= m * s.quantum[c] / 2 + abs(exact) * 1e-16
        ref = QKMeans(1, epsilon=2.0 ** 24, random_state=seed).fit(X[:200])
        assert_same_q(q, ref)


# ------------------------------------------- issue 18: pickles are data from outside

@functools.cache
def _tamper_models():
    """Fitted models to tamper with (copies only): QKMeans fresh and after
    certified deletions (dead rows), DCKMeans with greedy race traces (the
    bounds)."""
    X = np.random.default_rng(0).normal(size=(200, 3))
    X[:100] += 5
    q = QKMeans(2, epsilon=1.0, random_state=0).fit(X)
    qd = QKMeans(2, epsilon=1.0, random_state=0).fit(X)
    for i in q_certified_ids(qd, 3):
        assert qd.delete([i]).reason == ""
    dc = DCKMeans(2, n_leaves=4, random_state=0).fit(X)
    assert dc._state.n_trials > 1 and any(dc._state.traces)
    return {"q": q, "qd": qd, "dc": dc}


def _set_p(s, **changes):
    s.p = dataclasses.replace(s.p, **changes)


def _first_trace(st):
    return next(tr for tr in st.traces if tr)[0]


def _first_leaf(st):
    return next(j for j in range(st.L) if st.X[j].shape[0] > 1)


def _drop_leaf_row(st):
    j = _first_leaf(st)
    st.X[j], st.rows[j], st.sids[j] = st.X[j][:-1].copy(), st.rows[j][:-1].copy(), \
        st.sids[j][:-1].copy()


# name -> (model, tampering of the state, field named by the error)
TAMPER = {
    # the reviewer's cases (/tmp/review2/tamper.py)
    "q phases wrong width": ("q", lambda s: _set_p(s, phases=np.ascontiguousarray(
        s.p.phases[:, :1])), "p.phases"),
    "q phases fewer rows": ("q", lambda s: _set_p(s, phases=s.p.phases[:1].copy()), "p.phases"),
    "q eps nan": ("q", lambda s: setattr(s, "eps", float("nan")), "eps"),
    "q p.epsilon = -1": ("q", lambda s: _set_p(s, epsilon=-1.0), "p.epsilon"),
    "q labels out of range": ("q", lambda s: s.labels.__setitem__((slice(None), 7), 99),
                              "labels"),
    "q labels negative": ("q", lambda s: s.labels.__setitem__((slice(None), 7), -5), "labels"),
    "q seeds out of range": ("q", lambda s: setattr(s, "seeds", s.seeds + 10 ** 6), "seeds"),
    "q n_iter too big": ("q", lambda s: setattr(s, "n_iter", 99), "n_iter"),
    "q X float32": ("q", lambda s: setattr(s, "X", s.X.astype(np.float32)), "X"),
    "q X nan": ("q", lambda s: s.X.__setitem__(5, np.nan), "X"),
    "q alive short": ("q", lambda s: setattr(s, "alive", s.alive[:10].copy()), "alive"),
    "q p.k = 500": ("q", lambda s: _set_p(s, k=500), "n_alive"),
    "dc trace cand out of range": ("dc", lambda s: setattr(_first_trace(s), "cand",
                                                           _first_trace(s).cand + 10 ** 6),
                                   "cand"),
    "dc trace seeds out of range": ("dc", lambda s: setattr(_first_trace(s), "seeds",
                                                            _first_trace(s).seeds + 10 ** 6),
                                    "seeds"),
    "dc w = 0": ("dc", lambda s: setattr(s, "w", 0), "w"),
    "dc leaf out of range": ("dc", lambda s: s.leaf.__setitem__(3, 99), "leaf"),
    "dc rows unsorted": ("dc", lambda s: s.rows.__setitem__(0, s.rows[0][::-1].copy()),
                         "rows[0]"),
    "dc X leaf float32": ("dc", lambda s: s.X.__setitem__(0, s.X[0].astype(np.float32)),
                          "X[0]"),
    "dc levels mass short": ("dc", lambda s: s.levels[0].__setitem__(
        1, (s.levels[0][1][0], s.levels[0][1][1][:1].copy())), "levels[0][1]"),
    "dc keys short": ("dc", lambda s: setattr(s, "keys", [[1]]), "keys"),
    # more of QKMeans
    "q p not a _QParams": ("q", lambda s: setattr(s, "p", dict(vars(s.p))), "p"),
    "q p.gamma = 2": ("q", lambda s: _set_p(s, gamma=2.0), "p.gamma"),
    "q p.key negative": ("q", lambda s: _set_p(s, key=-1), "p.key"),
    "q p.k numpy int": ("q", lambda s: _set_p(s, k=np.int64(2)), "p.k"),
    "q phases out of range": ("q", lambda s: s.p.phases.__setitem__((0, 0), 0.75), "p.phases"),
    "q eps not the parameters'": ("q", lambda s: setattr(s, "eps", 2 * s.eps), "eps"),
    "q X Fortran order": ("q", lambda s: setattr(s, "X", np.asfortranarray(s.X)), "X"),
    "q X a subclass": ("q", lambda s: setattr(s, "X", s.X.view(np.ma.MaskedArray)), "X"),
    "q ids negative": ("q", lambda s: s.ids.__setitem__(0, -1), "ids"),
    "q ids_sorted unsorted": ("q", lambda s: setattr(s, "ids_sorted", s.ids_sorted[::-1].copy()),
                              "ids_sorted"),
    "q order out of range": ("q", lambda s: s.order.__setitem__(0, 10 ** 6), "order"),
    "q order not a permutation": ("q", lambda s: s.order.__setitem__(1, s.order[0]), "order"),
    "q alive int": ("q", lambda s: setattr(s, "alive", s.alive.astype(np.int8)), "alive"),
    "q n_alive wrong": ("q", lambda s: setattr(s, "n_alive", s.n_alive - 1), "n_alive"),
    "q n_alive a float": ("q", lambda s: setattr(s, "n_alive", float(s.n_alive)), "n_alive"),
    "q seeds repeated": ("q", lambda s: s.seeds.__setitem__(1, s.seeds[0]), "seeds"),
    "q seed_ids wrong": ("q", lambda s: s.seed_ids.__setitem__(0, s.seed_ids[0] + 1),
                         "seed_ids"),
    "q n_run too big": ("q", lambda s: setattr(s, "n_run", s.p.max_iter + 1), "n_run"),
    "q C wrong shape": ("q", lambda s: setattr(s, "C", s.C[:, :1].copy()), "C"),
    "q C[0] not the seeds": ("q", lambda s: s.C.__setitem__((0, 0, 0), 1e3), "C"),
    "q cells float": ("q", lambda s: setattr(s, "cells", s.cells.astype(np.float64)), "cells"),
    "q counts not the labels'": ("q", lambda s: s.counts.__setitem__((0, 0), s.counts[0, 0] + 1),
                                 "counts"),
    "q labels int64": ("q", lambda s: setattr(s, "labels", s.labels.astype(np.int64)), "labels"),
    "q mind negative": ("q", lambda s: s.mind.__setitem__((0, 3), -1.0), "mind"),
    "q maxmind": ("q", lambda s: s.maxmind.__setitem__(0, 2 * s.maxmind[0]), "maxmind"),
    "q maxabs": ("q", lambda s: setattr(s, "maxabs", s.maxabs / 2), "maxabs"),
    "q quantum": ("q", lambda s: setattr(s, "quantum", s.quantum / 2), "quantum"),
    "q loss_quantum": ("q", lambda s: setattr(s, "loss_quantum", s.loss_quantum * 2),
                       "loss_quantum"),
    "qd sums off the grid": ("qd", lambda s: s.sums.__setitem__((0, 0, 0), s.sums[0, 0, 0] +
                                                                s.quantum[0] / 3), "sums"),
    "qd loss off the grid": ("qd", lambda s: s.loss.__setitem__(0, s.loss[0] +
                                                                s.loss_quantum[0] / 3), "loss"),
    "qd loss without sums": ("qd", lambda s: setattr(s, "loss", None), "loss"),
    "q inertia nan": ("q", lambda s: setattr(s, "inertia", float("nan")), "inertia"),
    "q missing field": ("q", lambda s: delattr(s, "maxabs"), "maxabs"),
    "q unexpected field": ("q", lambda s: setattr(s, "sum_err", [0.0]), "_state"),
    "q a DC state": ("q", lambda s: setattr(s, "__class__", _dctree._DCState), "_state"),
    "qd deleted row not erased": ("qd", lambda s: s.X.__setitem__(~s.alive, 1.0), "X"),
    "qd deleted label not -1": ("qd", lambda s: s.labels.__setitem__((0, ~s.alive), 0),
                                "labels"),
    "qd deleted distance not 0": ("qd", lambda s: s.mind.__setitem__((0, ~s.alive), 1.0),
                                  "mind"),
    "qd a seed deleted": ("qd", lambda s: s.seeds.__setitem__(0, np.flatnonzero(~s.alive)[0]),
                          "seeds"),
    # more of DCKMeans
    "dc k = 0": ("dc", lambda s: setattr(s, "k", 0), "k"),
    "dc L not a power of two": ("dc", lambda s: setattr(s, "L", 3), "L"),
    "dc w**h != L": ("dc", lambda s: setattr(s, "w", 3), "w"),
    "dc h = 0": ("dc", lambda s: setattr(s, "h", 0), "h"),
    "dc n_trials = 0": ("dc", lambda s: setattr(s, "n_trials", 0), "n_trials"),
    "dc X empty list": ("dc", lambda s: setattr(s, "X", []), "X"),
    "dc X a tuple": ("dc", lambda s: setattr(s, "X", tuple(s.X)), "X"),
    "dc a leaf row missing": ("dc", _drop_leaf_row, "rows"),
    "dc sids wrong": ("dc", lambda s: s.sids[_first_leaf(s)].__setitem__(0, -7),
                      "sids["),
    "dc a leaf row dead": ("dc", lambda s: (s.alive.__setitem__(s.rows[_first_leaf(s)][0],
                                                                False),
                                            setattr(s, "n_alive", s.n_alive - 1)), "rows["),
    "dc keys wrong": ("dc", lambda s: s.keys[0].__setitem__(0, s.keys[0][0] + 1), "keys[0]"),
    "dc trace pick out of range": ("dc", lambda s: setattr(_first_trace(s), "pick",
                                                           _first_trace(s).pick + 99), "pick"),
    "dc trace lo infinite": ("dc", lambda s: _first_trace(s).lo.__setitem__((1, 0), -np.inf),
                             ".lo"),
    "dc trace without bounds": ("dc", lambda s: delattr(_first_trace(s), "lo"), ".lo"),
    "dc trace not a _RaceTrace": ("dc", lambda s: next(tr for tr in s.traces if tr).__setitem__(
        0, "trace"), "traces["),
    "dc node not a pair": ("dc", lambda s: s.levels[0].__setitem__(0, list(s.levels[0][0])),
                           "levels[0][0]"),
    "dc negative masses": ("dc", lambda s: s.levels[0][0][1].__setitem__(0, -1.0),
                           "levels[0][0]"),
    "dc node centers not its points'": ("dc", lambda s: s.levels[1].__setitem__(
        0, (s.levels[1][0][0][:1].copy(), s.levels[1][0][1][:1].copy())), "levels[1][0]"),
    "dc inertia negative": ("dc", lambda s: setattr(s, "inertia", -1.0), "inertia"),
}


@pytest.mark.parametrize("name", sorted(TAMPER))
def test_tampered_pickles_are_refused(name):
    """A pickle is data from outside: a tampered fitted state is refused
    with a ModelFileError naming the field, before anything is installed
    (no IndexError, ValueError, ... and no C kernel reading out of bounds
    later)."""
    which, tamper, field = TAMPER[name]
    m = pickle.loads(pickle.dumps(_tamper_models()[which]))
    tamper(m._state)
    data = pickle.dumps(m)
    with pytest.raises(ModelFileError) as info:
        pickle.loads(data)
    assert field in str(info.value), str(info.value)
    assert "pickle: " in str(info.value)


def test_tampered_pickles_top_level_and_valid_ones():
    """The estimator's own fields: unknown, missing or a state that is not a
    fitted one; untampered pickles (of every protocol, also with deleted
    rows) load and go on deleting like the original."""
    models = _tamper_models()
    for model in models.values():
        for change, field in ((lambda d: d.__setitem__("junk", 1), "junk"),
                              (lambda d: d.pop("n_clusters"), "n_clusters"),
                              (lambda d: d.__setitem__("_state", None), "_state"),
                              (lambda d: d.__setitem__("_state", np.zeros(3)), "_state")):
            state = model.__getstate__()
            change(state)
            with pytest.raises(ModelFileError, match=field):
                type(model).__new__(type(model)).__setstate__(state)
        with pytest.raises(ModelFileError, match="not a dict"):
            type(model).__new__(type(model)).__setstate__([1, 2])
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            other = pickle.loads(pickle.dumps(model, protocol=protocol))
            assert_same_state(other, model)
    # a model whose state was set to None in place is not fitted
    m = copy.deepcopy(models["q"])
    m._state = None
    with pytest.raises(NotFittedError):
        m.predict(np.zeros((1, 3)))
    # the sharing of memory between arrays that deletions write in place
    a = np.zeros(10)
    with pytest.raises(ModelFileError, match="shares memory"):
        _common._Fields("t").unshared({"a": a}, {"b": a[2:5]})
    _common._Fields("t").unshared({"a": a}, {"b": np.zeros(10)})
