"""What QKMeans and DCKMeans share (pyfkm.deletion._common): input and id
checks, the race seeding kernel, atomic failures, locking, erasure of the
caller's array, the doctests."""
import doctest
import gc
import sys
import threading

import numpy as np
import pytest

from pyfkm.deletion import _common, _qlloyd, dckmeans, qkmeans
from pyfkm.deletion import DCKMeans, QKMeans, auto_epsilon, auto_n_leaves
from pyfkm.exceptions import InvalidIdError, InvalidInputError, NotFittedError
from oracles.forensics import patterns, search_everywhere
from _helpers.state import assert_same_state
from _helpers.deletion import Injected, f64, ref_expo, blobs


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
        QKMeans(2).remove(0)
    with pytest.raises(NotFittedError):
        DCKMeans(2).predict(X)


@pytest.mark.parametrize("cls", [QKMeans, DCKMeans])
def test_bad_ids_raise_and_change_nothing(cls):
    X, _ = blobs(1, n=80)
    m = cls(3, random_state=0).fit(X)
    m.remove([4, 5])
    twin = cls(3, random_state=0).fit(X)  # fitted and deleted alike, never failed
    twin.remove([4, 5])
    centers, ids = m.cluster_centers_.copy(), m.sample_ids_.copy()
    for bad in ([4], [80], [-1], [6, 6], [7, 5], [1.5], [[1, 2]]):
        with pytest.raises(InvalidInputError):
            m.remove(bad)
    with pytest.raises(InvalidIdError):
        m.remove(np.r_[0:2, 6:80])  # would leave 2 < k points
    np.testing.assert_array_equal(m.cluster_centers_, centers)
    np.testing.assert_array_equal(m.sample_ids_, ids)
    assert_same_state(m, twin)
    assert m.remove([]).n_deleted == 0
    assert_same_state(m, twin)


@pytest.mark.parametrize("cls", [QKMeans, DCKMeans])
def test_delete_is_a_deprecated_alias_of_remove(cls):
    # issue 20: one removal verb; delete warns (pointing at the caller's
    # line), then does exactly what remove does
    X, _ = blobs(1, n=80)
    m, twin = cls(3, random_state=0).fit(X), cls(3, random_state=0).fit(X)
    with pytest.warns(DeprecationWarning,
                      match=f"{cls.__name__}.delete is deprecated and will be removed in "
                            f"pyfkm 0.3; use {cls.__name__}.remove instead") as record:
        rep = m.delete([4, 5])
    assert [w.filename for w in record] == [__file__]
    ref = twin.remove([4, 5])
    assert (rep.n_deleted, rep.retrained, rep.reason) == (ref.n_deleted, ref.retrained,
                                                          ref.reason)
    assert_same_state(m, twin)
    assert cls.delete.__doc__.startswith("Deprecated alias of :meth:`remove`")
    # errors are remove's, and still change nothing
    with pytest.warns(DeprecationWarning), pytest.raises(InvalidIdError, match="nothing was removed"):
        m.delete([4])
    assert_same_state(m, twin)


def test_fit_does_not_modify_input_and_rows_are_gone():
    X, _ = blobs(2, n=100)
    X0 = X.copy()
    q = QKMeans(3, random_state=1).fit(X)
    victims = [i for i in range(100) if i not in q.seed_ids_][:3]
    q.remove(victims)
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


def _race_reference(X, ids, k, key, alive=None, n_trials=1):
    """Plain numpy twin of the C race seeding (csrc/fkm_race.c); greedy
    k-means++ (the lowest potential among n_trials races) when n_trials > 1."""
    def expo(step):
        return ref_expo(ids, key, step)

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


def test_doctests():
    for module in (_qlloyd, qkmeans, dckmeans):  # auto_epsilon, QKMeans, DCKMeans
        res = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert res.attempted > 0 and res.failed == 0


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
    m.remove([1, 2])
    twin.remove([1, 2])
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
    r1, r2 = m.remove([3, 40]), twin.remove([3, 40])
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
        r1, r2 = m.remove(victims), twin.remove(victims)
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
            m.remove(victims)
            ref.remove(victims)
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
        seq.remove([i])
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
                        m.remove([i])
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


@pytest.mark.parametrize("cls", [QKMeans, DCKMeans])
def test_erasure_errors_and_search_sanity(cls):
    """Before any deletion every row's values are found (so the searches
    below can fail), and a search for values never seen finds nothing."""
    X = np.random.default_rng(27).normal(size=(200, 3)) * 3
    m = cls(3, random_state=4).fit(X.copy())
    found = search_everywhere(m, patterns(X[:5]))
    assert set(found["pickle"]) >= set(f64(X[:5])) and found["object"]
    never = np.random.default_rng(99).normal(size=(5, 3)) + 100
    assert search_everywhere(m, patterns(never)) == {"object": [], "pickle": []}


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


def test_a_failed_fit_gives_a_random_state_its_state_back(monkeypatch):
    # issue 21: random_state may be a legacy RandomState; a fit that raises
    # after drawing from it leaves it as it was (as for a Generator)
    X = np.random.default_rng(0).normal(size=(50, 2))
    rs = np.random.RandomState(4)
    before = rs.get_state()[1].copy()

    def boom(*args, **kwargs):
        raise RuntimeError("a stage failed")

    est = QKMeans(3, random_state=rs)
    monkeypatch.setattr(QKMeans, "_fitted_state", staticmethod(boom))
    with pytest.raises(RuntimeError):
        est.fit(X)
    assert np.array_equal(rs.get_state()[1], before)
    monkeypatch.undo()
    a = QKMeans(3, random_state=rs).fit(X).cluster_centers_
    b = QKMeans(3, random_state=np.random.RandomState(4)).fit(X).cluster_centers_
    np.testing.assert_array_equal(a, b)
