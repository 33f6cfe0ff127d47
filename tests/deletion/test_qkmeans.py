"""Tests of pyfkm.deletion.QKMeans (Q-k-means with exact deletion) and its
quantized Lloyd (pyfkm.deletion._qlloyd).

The reference for every deletion is a *replay*: a fresh fit on the
remaining rows with the same random_state and the remaining sample_ids,
which uses the same random draws.  A certified deletion must give exactly
that model (bit for bit); so must a retraining.
"""
import copy
import math
import pickle

import numpy as np
import pytest
from scipy import stats

from pyfkm.deletion import _common, _qlloyd, qkmeans
from pyfkm.deletion import QKMeans
from pyfkm.exceptions import InvalidIdError
from pyfkm.core.lattice import Lattice
from _helpers.state import assert_same_state
from _helpers.deletion import erasure_check, run_injections, blobs, q_certified_ids, q_position


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


@pytest.mark.statistical
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
        rep = q.remove(victims)
        n_cert += not rep.retrained
        n_retrain += rep.retrained
        assert_same_q(q, q_replay(q, X, ids, data_seed, **params))
    assert n_cert > 0


@pytest.mark.slow
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
            rep = q.remove(victim)
            total += 1
            certified += not rep.retrained
            assert_same_q(q, q_replay(q, X, ids, seed, **params))
    assert total > 200 and certified > 0


def test_q_deleting_a_seed_retrains():
    X, _ = blobs(5)
    q = QKMeans(4, random_state=3).fit(X)
    for j in range(4):  # every seed position, including the first
        qq = QKMeans(4, random_state=3).fit(X)
        rep = qq.remove(q.seed_ids_[j])
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
        rep = q.remove(200)
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
            q.remove(rng.choice(q.sample_ids_))
            assert_same_q(q, q_replay(q, X, np.arange(13), 0, n_clusters=4,
                                      gamma=gamma, epsilon=0.5))


def test_q_delete_everything_but_k():
    X, _ = blobs(6, n=50)
    q = QKMeans(4, random_state=2).fit(X)
    keep = np.random.default_rng(0).choice(50, 4, replace=False)
    q.remove(np.setdiff1d(np.arange(50), keep))
    assert q.n_samples_ == 4
    assert_same_q(q, q_replay(q, X, np.arange(50), 2, n_clusters=4))
    with pytest.raises(InvalidIdError):
        q.remove(keep[0])


def test_q_compaction_keeps_replay():
    X, _ = blobs(7, n=200)
    q = QKMeans(3, random_state=5, epsilon=1.0).fit(X)
    rng = np.random.default_rng(1)
    for _ in range(70):  # passes the 1/4-dead compaction threshold
        q.remove(rng.choice(q.sample_ids_))
    assert_same_q(q, q_replay(q, X, np.arange(200), 5, n_clusters=3, epsilon=1.0))


@pytest.mark.slow
@pytest.mark.statistical
def test_q_deletion_distributed_like_retraining():
    """Chi-square: over random seeds, the model after deleting a fixed point
    has the same outcome distribution as fitting on the rest with fresh
    seeds (outcome = the pair of seed ids, which determine the run here)."""
    X = np.array([[0.0], [0.2], [4.0], [4.3], [9.0]])
    n_runs = 1500
    after, fresh = {}, {}
    for s in range(n_runs):
        q = QKMeans(2, epsilon=0.5, random_state=s).fit(X)
        q.remove(4)
        key = (tuple(q.seed_ids_), tuple(q.cluster_centers_.ravel()))
        after[key] = after.get(key, 0) + 1
        r = QKMeans(2, epsilon=0.5, random_state=10_000 + s).fit(X[:4])
        key = (tuple(r.seed_ids_), tuple(r.cluster_centers_.ravel()))
        fresh[key] = fresh.get(key, 0) + 1
    keys = sorted(set(after) | set(fresh))
    table = np.array([[after.get(k, 0) for k in keys], [fresh.get(k, 0) for k in keys]])
    table = table[:, table.sum(0) >= 10]
    assert stats.chi2_contingency(table)[1] > 1e-3


# ------------------------------------------- issue 18: failures change nothing
#
# A mutating call that raises must leave the model exactly as it was.  The
# reference is a *twin*: a model built by the same calls that never saw the
# failure (fitted independently, not copied); the whole object graph is
# compared (tests/_helpers/state.py's assert_same_state, arrays byte for byte).
# Then the failed call is made again for real, and must give what it gives
# on a model that never failed.

def q_model(random_state=5):
    X, _ = blobs(21, n=240, spread=8)
    return QKMeans(3, epsilon=1.0, random_state=random_state).fit(X)


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
            m.remove([i])

    m = q_model()
    to_the_threshold(m)
    assert m._state.X.shape[0] == 240 and m.n_samples_ == 180
    assert _qlloyd._q_certify(m._state, q_position(m, chain[60]))[0] == ""

    ops = {
        "refit": (q_model, lambda m: m.set_params(n_clusters=4, epsilon="auto"), refit),
        "refit-generator": (lambda: q_model(random_state=np.random.default_rng(11)),
                            lambda m: m.set_params(n_clusters=2), refit),
        "certified": (q_model, lambda m: m.remove(cert[:1]), lambda m: m.remove(cert[1:3])),
        "seed": (q_model, no_prep, lambda m: m.remove([seed_id, cert[0]])),
        "centroid": (q_model, no_prep, lambda m: m.remove([reasons["centroid"]])),
        "compaction": (q_model, to_the_threshold, lambda m: m.remove(chain[60:61])),
    }
    return ops


Q_TARGETS = [
    (_common._IdIndex, "lookup"), (_common, "check_array"), (_common, "_check_sample_ids"),
    (_common, "as_generator"), (qkmeans, "_q_state"), (_qlloyd, "_q_state"),
    (_qlloyd, "_q_fit"), (qkmeans, "_q_certify"), (qkmeans, "_q_certified"),
    (qkmeans, "_q_retrained"), (_qlloyd, "_balanced_centroids"), (_qlloyd, "_hits"),
    (_qlloyd, "_on_grid"), (_qlloyd, "_q_grid"), (_qlloyd, "_q_grid_sums"),
    (_qlloyd, "_q_grid_loss"), (_qlloyd, "_label_sums"), (_qlloyd, "_writable"),
    (_common, "_write_rows"), (_qlloyd._seeding, "race_seeding_dist"),
    (_qlloyd._lattice, "quantize"), (_qlloyd._lattice, "centers"),
    (_qlloyd._lloyd, "QAssign"), (qkmeans, "_q_replayed"), (_qlloyd, "_q_cells"),
    (_qlloyd, "_q_relabeled"), (_qlloyd, "_q_assemble"), (_qlloyd._lloyd, "qrelabel"),
]


@pytest.mark.parametrize("name", ["refit", "refit-generator", "certified", "seed", "centroid",
                                  "compaction"])
def test_q_injected_failures_change_nothing(name, monkeypatch):
    build, prep, call = _q_ops()[name]
    run_injections("Q", name, build, prep, call, Q_TARGETS, monkeypatch)


def test_q_erasure_certified_and_retrained():
    X = np.random.default_rng(28).normal(size=(400, 3))
    X[:200] += 6
    m = QKMeans(2, epsilon=2.0, random_state=3).fit(X.copy())  # no caller buffer kept
    deleted = []
    # certified deletions (the rows stay allocated, overwritten)
    cert = q_certified_ids(m, 5)
    for i in cert:
        assert m.remove([i]).reason == ""
    deleted += cert
    alive = np.setdiff1d(np.arange(400), deleted)
    erasure_check(m, X, deleted, alive[:10])
    assert m._state.X.shape[0] == 400  # not compacted: erased in place
    # a deleted seed retrains
    seed = int(m.seed_ids_[0])
    assert m.remove([seed]).reason == "seed"
    deleted.append(seed)
    alive = np.setdiff1d(np.arange(400), deleted)
    erasure_check(m, X, deleted, alive[-10:])
    # a batch (retraining or certified), then past the compaction threshold
    for batch in (alive[:7], alive[7:110]):
        m.remove(batch)
        deleted += batch.tolist()
        alive = np.setdiff1d(np.arange(400), deleted)
        erasure_check(m, X, deleted, alive[:10])
    for copy_ in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        erasure_check(copy_, X, deleted, alive[:10])


def _q_after(data, deletions, **params):
    """A QKMeans fitted on ``data`` after the certified deletions (lists of
    ids, one call each), through a pickle round trip."""
    m = QKMeans(2, epsilon=2.0, random_state=3, **params).fit(data)
    for ids in deletions:
        assert m.remove(ids).reason == ""
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
        assert q.remove([200]).reason == ""
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


# ------------------------------------------ issue 22: replaying the run on the memo

def _count_replays(monkeypatch):
    """Outcomes of QKMeans.remove's replays: {"replayed": n, "gave up": n}."""
    seen = {"replayed": 0, "gave up": 0}
    real = qkmeans._q_replayed

    def counted(s, pos, update):
        new = real(s, pos, update)
        seen["replayed" if new is not None else "gave up"] += 1
        return new

    monkeypatch.setattr(qkmeans, "_q_replayed", counted)
    return seen


def test_qrelabel_errors():
    from pyfkm._core import _lloyd
    from pyfkm.exceptions import InvalidInputError
    X, C = np.zeros((4, 2)), np.ones((3, 2))
    for rows, hints in (([4], [0]), ([-1], [0]), ([0], [3]), ([0], [-1])):
        with pytest.raises(InvalidInputError):
            _lloyd.qrelabel(X, np.array(rows), np.array(hints), C)
    for bad in (dict(centers=np.ones((3, 3))), dict(rows=np.zeros((1, 1), np.int64)),
                dict(hints=np.zeros(2, np.int32)), dict(X=np.zeros((4, 2), np.float32))):
        args = dict(X=X, rows=np.zeros(1, np.int64), hints=np.zeros(1, np.int32), centers=C)
        args.update(bad)
        with pytest.raises(ValueError):
            _lloyd.qrelabel(args["X"], args["rows"], args["hints"], args["centers"])
    # no silent conversion: float rows, hints that do not fit in int32
    for rows, hints in ((np.array([0.9]), np.zeros(1, np.int32)),
                        (np.zeros(1, np.int64), np.array([0.0])),
                        (np.zeros(1, np.int64), np.array([2 ** 32], np.int64)),
                        (np.array([2 ** 63], np.uint64), np.zeros(1, np.int32))):
        with pytest.raises(ValueError):
            _lloyd.qrelabel(X, rows, hints, C)
    lab, mind = _lloyd.qrelabel(X, np.zeros(0, np.int64), np.zeros(0, np.int32), C)
    assert lab.shape == mind.shape == (0,)


@pytest.mark.parametrize("seed", range(4))
def test_qrelabel_is_the_full_scan(seed):
    """From any hints, the labels and distances of QAssign's full scan, bit
    for bit, also for rows on centers, equidistant rows (ties to the lowest
    index) and centers close together (little pruning)."""
    from pyfkm._core import _lloyd
    rng = np.random.default_rng(seed)
    d, k = [1, 3, 8, 25][seed], [2, 5, 6, 9][seed]
    C = rng.normal(size=(k, d)) * [0.01, 3.0, 10.0, 5.0][seed]
    X = rng.normal(size=(400, d)) * 3
    X[:40] = C[rng.integers(0, k, 40)]
    X[40:60] = (C[0] + C[1]) / 2
    X[60:70] = C[2 % k] + (C[2 % k] - C[0]) * 0.5
    labels, mind, _, _, _ = _lloyd.QAssign(X, k).step(C)
    rows = rng.integers(0, 400, 600)
    for hints in (np.zeros(600, np.int32), rng.integers(0, k, 600), labels[rows],
                  (labels[rows] + 1) % k):
        lab, mnd = _lloyd.qrelabel(X, rows, hints, C)
        assert lab.tobytes() == labels[rows].tobytes()
        assert mnd.tobytes() == mind[rows].tobytes()


def test_q_relabeled_is_a_fresh_assignment():
    """_q_relabeled from an assignment to other centers (some moved by a
    cell or more, some not) is QAssign's assignment, bit for bit."""
    from pyfkm._core import _lloyd
    rng = np.random.default_rng(3)
    X, _ = blobs(3, n=500, d=4, k=5, spread=5)
    C = X[rng.choice(500, 5, replace=False)]
    ref_l, ref_m, _, _, _ = _lloyd.QAssign(X, 5).step(C)
    ref_l[:7], ref_m[:7] = -1, 0.0  # dead rows stay dead
    for moved in ([0], [1, 3], [4], [0, 1, 2, 3, 4]):
        C2 = C.copy()
        C2[moved] += rng.normal(size=(len(moved), 4)) * [[0.01], [1.0], [4.0], [0.1],
                                                         [2.0]][:len(moved)]
        keep = np.ones(500, bool)
        keep[[7, 30, 31]] = False  # rows being deleted: skipped, as dead ones
        rows, now, mnd, old, old_m, top = _qlloyd._q_relabeled(X, C2, np.array(moved), ref_l,
                                                                 ref_m, 2.0 ** -40, keep)
        lab, mind = ref_l.copy(), ref_m.copy()
        lab[rows], mind[rows] = now, mnd
        full_l, full_m, _, _, _ = _lloyd.QAssign(X, 5).step(C2)
        live = np.flatnonzero(keep & (ref_l >= 0))
        assert not np.isin(rows, np.flatnonzero(~keep | (ref_l < 0))).any()
        assert (np.diff(rows) > 0).all()
        assert lab[live].tobytes() == full_l[live].tobytes()
        assert mind[live].tobytes() == full_m[live].tobytes()
        assert top == full_m[live].max()
        assert np.array_equal(old, ref_l[rows]) and np.array_equal(old_m, ref_m[rows])
        assert np.isin(np.flatnonzero(np.isin(ref_l, moved) & keep), rows).all()
        # keep defaults to every row
        rows2 = _qlloyd._q_relabeled(X, C2, np.array(moved), ref_l, ref_m, 2.0 ** -40)[0]
        assert np.isin(rows, rows2).all()
        assert np.isin(np.flatnonzero(np.isin(ref_l, moved)), rows2).all()


def _replay_stream(monkeypatch, cases, batch=(1,)):
    """Delete one id (or a few) at a time from each case (X, seed, params)
    until k + 1 remain, comparing with the fresh fit after every deletion;
    returns the counts of certified, replayed and retrained deletions."""
    seen = _count_replays(monkeypatch)
    certified = total = 0
    for X, seed, params in cases:
        rng = np.random.default_rng(seed)
        ids = np.arange(X.shape[0])
        q = QKMeans(random_state=seed, **params).fit(X)
        k = params["n_clusters"]
        while q.n_samples_ > k + 3:
            size = int(rng.choice(batch))
            rep = q.remove(rng.choice(q.sample_ids_, size=size, replace=False))
            total += 1
            certified += not rep.retrained
            assert_same_q(q, q_replay(q, X, ids, seed, **params))
    return certified, seen["replayed"], total - certified - seen["replayed"]


@pytest.mark.slow
def test_q_replay_streams_on_small_instances(monkeypatch):
    """Hundreds of deletions where cells move often (fine lattices, small
    clusters, balance corrections, empty clusters, duplicates): every
    replayed model equals the fresh fit bit for bit, and the replays run."""
    cases = []
    for seed in range(30):
        rng = np.random.default_rng(1000 + seed)
        n, d, k = int(rng.integers(20, 90)), int(rng.integers(1, 5)), int(rng.integers(2, 6))
        X, _ = blobs(seed, n=n, d=d, k=k, spread=float(rng.choice([2.0, 6.0])))
        if seed % 3 == 0:
            X = np.round(X, 1)  # ties and duplicates
        cases.append((X, seed, dict(n_clusters=k, epsilon=float(rng.choice([0.05, 0.25, 1.0])),
                                    gamma=float(rng.choice([0.0, 0.2, 0.6])),
                                    max_iter=int(rng.integers(2, 12)))))
    certified, replayed, retrained = _replay_stream(monkeypatch, cases, batch=(1, 1, 2, 3))
    assert replayed > 100 and certified > 0


def test_q_replay_random_deletions_replays(monkeypatch):
    """A quick stream on two instances of the replay tests: deletions that
    move a cell are replayed, each equal to the fresh fit."""
    cases = []
    for seed in range(2):
        X, _ = blobs(seed, n=120, d=3, k=4)
        cases.append((X, seed, dict(n_clusters=4, epsilon=0.1, gamma=0.2, max_iter=8)))
    certified, replayed, retrained = _replay_stream(monkeypatch, cases)
    assert replayed > 10


def test_q_replay_gamma_balance_and_emptied_cluster(monkeypatch):
    """A small cluster under the balance threshold (its centroid is topped
    up with copies of the previous one, and depends on n), deleted until it
    is empty: every deletion equals the fresh fit."""
    rng = np.random.default_rng(5)
    X = np.concatenate([rng.normal(size=(120, 2)), rng.normal(size=(6, 2)) * 0.3 + 9,
                        rng.normal(size=(100, 2)) + [0, 14]])
    small = np.arange(120, 126)
    seen = _count_replays(monkeypatch)
    for gamma in (0.2, 0.6):
        params = dict(n_clusters=3, epsilon=0.05, gamma=gamma, max_iter=10)
        for seed in range(3):
            q = QKMeans(random_state=seed, **params).fit(X)
            victims = [i for i in small if i not in q.seed_ids_] + \
                [int(i) for i in rng.choice(120, 10, replace=False) if i not in q.seed_ids_]
            for v in victims:
                q.remove([v])
                assert_same_q(q, q_replay(q, X, np.arange(len(X)), seed, **params))
    assert seen["replayed"] > 0


def test_q_replay_centroid_on_a_cell_boundary(monkeypatch):
    """One cluster whose mean after the deletion is a lattice cell boundary
    of the first iteration (up to the rounding of the boundary itself):
    certification and replay must agree with the fresh fit, whichever side
    the fresh fit rounds to."""
    seen = _count_replays(monkeypatch)
    eps = 0.25
    for seed in range(8):
        phases = QKMeans(1, epsilon=eps, random_state=seed, max_iter=4).fit(
            np.zeros((2, 2)) + [[0.0], [1.0]])._state.p.phases
        rng = np.random.default_rng(seed)
        v = (3.0 + phases[0]) * eps  # the boundary floor(c / eps - phase) = 3
        half = np.round(rng.uniform(0.5, 2.0, size=(32, 2)), 3)
        X = np.concatenate([v + half, v - half, [v + [5.0, -7.0]]])  # 64 + 1 rows
        q = QKMeans(1, epsilon=eps, random_state=seed, max_iter=4).fit(X)
        if 64 in q._state.seeds:
            continue
        q.remove([64])
        assert_same_q(q, q_replay(q, X, np.arange(65), seed, n_clusters=1, epsilon=eps,
                                  max_iter=4))
    assert sum(seen.values()) > 0


@pytest.mark.parametrize("seed", range(6))
def test_qcells_is_the_numpy_twin(seed):
    """qcells (the certification's cells check in C) gives bit for bit the
    cells and sure flags of _balanced_centroids + _q_cells (numpy), with
    small clusters (balance), empty ones, and centroids on cell
    boundaries; its count mode counts the entries not sure or moved."""
    from pyfkm._core import _lloyd
    rng = np.random.default_rng(seed)
    T, k, d = int(rng.integers(1, 5)), int(rng.integers(1, 7)), int(rng.integers(1, 9))
    n = int(rng.integers(k, 500))
    gamma = [0.0, 0.2, 0.9, 1.0, 0.5, 0.0][seed]
    eps = float(2.0 ** rng.integers(-6, 2))
    quantum = 2.0 ** rng.integers(-50, -30, size=d).astype(np.float64)
    maxabs = rng.uniform(0.5, 20, size=d)
    counts = rng.integers(0, n // k + 2, size=(T, k)).astype(np.int64)
    counts[rng.random((T, k)) < 0.2] = 0
    prev = rng.normal(size=(T, k, d)) * 4
    phases = rng.random((T, d)) - 0.5
    means = rng.normal(size=(T, k, d)) * 4
    # some means right on a cell boundary: (j + phase) eps
    edge = rng.random((T, k, d)) < 0.3
    means[edge] = ((np.floor(means / eps) + phases[:, None, :]) * eps)[edge]
    sums = np.rint(means * np.maximum(counts, 1)[..., None] / quantum) * quantum
    c, den = _qlloyd._balanced_centroids(sums, counts, n, k, gamma, prev)
    lo, sure = _qlloyd._q_cells(c, den, counts, prev, phases[:, None, :], eps, quantum, maxabs)
    g = gamma * n / k
    lo2, sure2 = _lloyd.qcells(sums, counts, prev, phases, g, eps, quantum, maxabs)
    assert lo2.tobytes() == lo.tobytes() and np.array_equal(sure2, sure)
    cells = lo.astype(np.int64)
    cells[rng.random((T, k, d)) < 0.1] += 1
    expect = int((~(sure & (lo == cells))).sum())
    assert _lloyd.qcells(sums, counts, prev, phases, g, eps, quantum, maxabs, cells) == expect


def test_qcells_errors():
    from pyfkm._core import _lloyd
    T, k, d = 2, 3, 4
    args = dict(sums=np.zeros((T, k, d)), counts=np.ones((T, k), np.int64),
                prev=np.zeros((T, k, d)), phases=np.zeros((T, d)), g=0.0, eps=1.0,
                quantum=np.ones(d), maxabs=np.ones(d), cells=None)
    for bad in (dict(counts=np.ones((T, k + 1), np.int64)), dict(prev=np.zeros((T, k, d + 1))),
                dict(phases=np.zeros((T + 1, d))), dict(quantum=np.ones(d + 1)),
                dict(maxabs=np.ones(d - 1)), dict(cells=np.zeros((T, k, d + 1), np.int64)),
                dict(counts=np.ones((T, k), np.int32)), dict(sums=np.zeros((T, k, d), np.float32)),
                dict(sums=np.zeros((0, k, d)), counts=np.ones((0, k), np.int64),
                     prev=np.zeros((0, k, d)), phases=np.zeros((0, d)))):
        a = dict(args, **bad)
        with pytest.raises(ValueError):
            _lloyd.qcells(*a.values())


def test_qrelabel_scan_errors():
    from pyfkm._core import _lloyd
    from pyfkm.exceptions import InvalidInputError
    X, C = np.zeros((4, 2)), np.ones((3, 2))
    mind, keep, far = np.zeros(4), np.ones(4, bool), np.zeros(3)
    for lab in ([0, 1, 2, -2], [0, 3, 0, 0]):
        with pytest.raises(InvalidInputError):
            _lloyd.qrelabel(X, None, np.array(lab, np.int32), C, scan=(mind, keep, far))
    good = dict(rows=None, labels=np.zeros(4, np.int32), mind=mind, keep=keep, far=far)
    for bad in (dict(rows=np.zeros(4, np.int64)), dict(labels=np.zeros(4, np.int64)),
                dict(labels=np.zeros(3, np.int32)), dict(mind=np.zeros(5)),
                dict(keep=np.ones(4, np.uint8)), dict(far=np.zeros(2)),
                dict(mind=np.zeros(8)[::2])):
        a = dict(good, **bad)
        with pytest.raises(ValueError):
            _lloyd.qrelabel(X, a["rows"], a["labels"], C, scan=(a["mind"], a["keep"], a["far"]))
    rows, lab, mnd, prev, prev_m, top = _lloyd.qrelabel(X, None, good["labels"], C,
                                                        scan=(mind, np.zeros(4, bool), far))
    assert rows.size == lab.size == mnd.size == prev.size == prev_m.size == 0 and top == 0.0


def test_q_replay_stream_larger_instances(monkeypatch):
    """Streams on larger instances (hundreds of rows per cluster, fine
    lattices: many replays that move a cell, some batches), each deletion
    compared with the fresh fit bit for bit."""
    cases = []
    for seed in range(2):
        X, _ = blobs(40 + seed, n=1200, d=[6, 3][seed], k=5, spread=5)
        cases.append((X, seed, dict(n_clusters=5, epsilon=[0.02, 0.05][seed],
                                    gamma=[0.2, 0.0][seed], max_iter=10)))
    seen = _count_replays(monkeypatch)
    for X, seed, params in cases:
        rng = np.random.default_rng(seed)
        q = QKMeans(random_state=seed, **params).fit(X)
        for step in range(80):
            size = 1 if step % 4 else 3
            q.remove(rng.choice(q.sample_ids_, size=size, replace=False))
            assert_same_q(q, q_replay(q, X, np.arange(X.shape[0]), seed, **params))
    assert seen["replayed"] > 20
