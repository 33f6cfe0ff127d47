"""Tests of pyfkm.deletion.DCKMeans (divide-and-conquer k-means with exact
deletion) and its tree (pyfkm.deletion._dctree).

The reference for every deletion is a *replay*: a fresh fit on the
remaining rows with the same random_state and the remaining sample_ids.
"""
import pickle

import numpy as np
import pytest
from scipy import stats

from pyfkm.deletion import _common, _dctree, dckmeans
from pyfkm.deletion import DCKMeans, auto_n_leaves
from pyfkm.exceptions import InvalidInputError
from _helpers.state import assert_same_state
from _helpers.deletion import erasure_check, ref_expo, run_injections, blobs


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
        dc.remove(rng.choice(dc.sample_ids_, size=1 + step % 2, replace=False))
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
    dc.remove(np.arange(2000))
    assert dc.n_leaves_ == 8
    assert dc.predict(X[:5]).shape == (5,)


def test_dc_empty_leaves_and_everything_but_k():
    X, _ = blobs(10, n=40)
    dc = DCKMeans(3, n_leaves=16, random_state=1).fit(X)
    dc.remove(np.arange(37))
    assert np.isfinite(dc.cluster_centers_).all() and dc.cluster_centers_.shape == (3, 3)
    ref = DCKMeans(3, n_leaves=16, random_state=1).fit(X[37:], sample_ids=np.arange(37, 40))
    assert_same_dc(dc, ref)


@pytest.mark.statistical
def test_dc_deletion_distributed_like_retraining():
    X = np.array([[0.0], [0.3], [5.0], [5.5], [9.0], [9.2]])
    after, fresh = {}, {}
    for s in range(800):
        a = DCKMeans(2, n_leaves=2, random_state=s).fit(X)
        a.remove(5)
        key = tuple(np.round(np.sort(a.cluster_centers_.ravel()), 9))
        after[key] = after.get(key, 0) + 1
        b = DCKMeans(2, n_leaves=2, random_state=5000 + s).fit(X[:5])
        key = tuple(np.round(np.sort(b.cluster_centers_.ravel()), 9))
        fresh[key] = fresh.get(key, 0) + 1
    keys = sorted(set(after) | set(fresh))
    table = np.array([[after.get(k, 0) for k in keys], [fresh.get(k, 0) for k in keys]])
    table = table[:, table.sum(0) >= 10]
    assert stats.chi2_contingency(table)[1] > 1e-3


# ----------------------------------------- DC-k-means: seeds reused on deletion

def _race_trace_reference(X, ids, k, key, n_trials):
    """Numpy twin of the candidates and potentials recorded by
    race_seeding_trace (no fallback: callers use distinct points)."""
    def expo(step):
        return ref_expo(ids, key, step)

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
    calls = [0, False, 0]  # races run by dc.remove; counting on; leaf fits
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
        dc.remove(victims)
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


def dc_model(random_state=5):
    X, _ = blobs(21, n=240, spread=8)
    return DCKMeans(3, n_leaves=4, random_state=random_state).fit(X)


def _dc_ops():
    X2, _ = blobs(22, n=200, spread=8)

    def refit(m):
        m.fit(X2)

    def no_prep(m):
        pass

    m = dc_model()
    m.remove(np.arange(100, 150))
    assert m._state.ids.shape[0] == 240
    m.remove(np.arange(10, 22))
    assert m._state.ids.shape[0] == 240 - 62  # the "compaction" call compacts
    return {
        "refit": (dc_model, lambda m: m.set_params(n_clusters=4, n_init=2), refit),
        "refit-generator": (lambda: dc_model(random_state=np.random.default_rng(11)),
                            lambda m: m.set_params(n_leaves=2), refit),
        "one": (dc_model, lambda m: m.remove([0]), lambda m: m.remove([7])),
        "batch": (dc_model, no_prep, lambda m: m.remove(np.arange(20, 40))),
        "compaction": (dc_model, lambda m: m.remove(np.arange(100, 150)),
                       lambda m: m.remove(np.arange(10, 22))),
    }


DC_TARGETS = [
    (_common._IdIndex, "lookup"), (_common, "check_array"), (_common, "_check_sample_ids"),
    (_common, "as_generator"), (dckmeans, "_dc_fit"), (dckmeans, "_dc_deleted"),
    (_dctree, "_dc_layout"), (_dctree, "_dc_leaf_fit"), (_dctree, "_dc_node_fit"),
    (_dctree, "_node_kmeans"), (_dctree, "_keyed_uniform"), (_dctree, "_race_seeding"),
    (_dctree._RaceTrace, "build"), (_dctree._RaceTrace, "remove"), (_dctree, "_pow2_ceil"),
    (_dctree, "_writable"), (_common, "_write_rows"),
    (_dctree._seeding, "race_seeding_trace"), (_dctree._seeding, "race_seeding"),
    (_dctree._lloyd, "lloyd_loop"),
]


@pytest.mark.parametrize("name", ["refit", "refit-generator", "one", "batch", "compaction"])
def test_dc_injected_failures_change_nothing(name, monkeypatch):
    build, prep, call = _dc_ops()[name]
    run_injections("DC", name, build, prep, call, DC_TARGETS, monkeypatch)


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
            m.remove(victims)
            assert n_races is None or len(races) == n_races
            deleted += [int(v) for v in victims]
            alive = np.setdiff1d(np.arange(400), deleted)
            erasure_check(m, X, deleted, alive[:10])
    finally:
        _dctree._seeding.race_seeding_trace = orig
    assert m._state.ids.shape[0] == 400  # not compacted: the deleted ids are kept
    batch = np.setdiff1d(np.arange(110), deleted)
    m.remove(batch)  # past a quarter: compaction
    deleted = sorted(set(deleted) | set(batch.tolist()))
    alive = np.setdiff1d(np.arange(400), deleted)
    assert m._state.ids.shape[0] == alive.shape[0]
    erasure_check(m, X, deleted, alive[:10])


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
            m.remove([r])
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


def test_a_height_the_leaves_do_not_allow_names_where_the_leaves_came_from():
    # issue 21 review: the error named n_leaves=4 when the user set only height
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(InvalidInputError,
                       match=r"n_leaves='auto' gives 4 leaves for 50 points.*height=100"):
        DCKMeans(2, height=100).fit(X)
    with pytest.raises(InvalidInputError, match=r"^n_leaves=8, which is not w\*\*height"):
        DCKMeans(2, n_leaves=8, height=2).fit(X)
