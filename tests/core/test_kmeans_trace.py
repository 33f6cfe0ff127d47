"""Traced Lloyd reruns (csrc/fkm_lloyd_loop.c, ``_lloyd.LloydTrace``) against
the untraced one-call loop (``_lloyd.lloyd_loop``), and the prefix-keeping D^2
seeding ``_seeding.seed_from`` against ``_seeding.seed``.

A trace only changes how much work a rerun does: every output (centers,
labels, squared distances, inertia, iteration count) must be bit for bit the
untraced run's, whatever sequence of runs the trace has seen.  The untraced
loop itself is checked against a numpy reference in tests/core/test_kmeans.py and
tests/core/test_kmeans_bounds.py; here it is the oracle.
"""
import numpy as np
import pytest

from _helpers.lloyd_trace import assert_same_run as _assert_same, both as _both
from pyfkm._core import _lloyd, _seeding


# --- errors first ----------------------------------------------------------------

def test_trace_bad_input_raises_and_trace_stays_usable():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3))
    w = rng.integers(1, 20, 40).astype(float)
    C0 = X[:4].copy()
    tr = _lloyd.LloydTrace(X)
    _both(tr, X, C0, w, 50, 0.0)
    n_rec = tr.len
    assert n_rec >= 2
    bad = [
        (np.zeros((4, 2)), w, 10),          # centers of the wrong dimension
        (np.zeros((0, 3)), w, 10),          # no centers
        (C0, w[:-1], 10),                   # weights too short
        (C0, np.ones(41), 10),              # weights too long
        (C0, w, -1),                        # negative max_iter
    ]
    for C, ww, mi in bad:
        with pytest.raises(ValueError):
            tr.run(C, ww, mi, 0.0)
        assert tr.len == n_rec  # the recording survives a rejected call
    with pytest.raises(ValueError):
        tr.run(np.zeros(3), w, 10, 0.0)  # 1-d centers
    assert tr.len == n_rec
    # still usable, and still exact, after the errors
    w2 = w.copy()
    w2[3] -= 1.0
    _both(tr, X, C0, w2, 50, 0.0)
    assert tr.last_stats != (-1, -1)  # this rerun used the recording


def test_zero_features_refused():
    # the C loop assumes d >= 1 (found by review): both entry points refuse d = 0
    X = np.zeros((5, 0))
    with pytest.raises(ValueError, match="shapes"):
        _lloyd.lloyd_loop(X, np.zeros((2, 0)), None, 5, 0.0)
    with pytest.raises(ValueError, match="shapes"):
        _lloyd.LloydTrace(X).run(np.zeros((2, 0)), None, 5, 0.0)


def test_trace_overflow_error_then_exact():
    # a run that fails (non-finite centers) leaves a trace that records again
    X = np.array([[1e200], [-1e200], [3e199], [0.5]])
    C0 = np.array([[0.0], [1.0]])
    tr = _lloyd.LloydTrace(X)
    with pytest.raises(ValueError):
        _lloyd.lloyd_loop(X, C0, None, 5, 0.0)
    with pytest.raises(ValueError):
        tr.run(C0, None, 5, 0.0)
    assert tr.len == 0
    Y = np.ascontiguousarray(X / 1e190)
    tr2 = _lloyd.LloydTrace(Y)
    _both(tr2, Y, C0, None, 5, 0.0)
    w = np.array([1.0, 2.0, 3.0, 4.0])
    _both(tr2, Y, C0, w, 5, 0.0)


def test_trace_change_of_k_on_one_trace():
    # the only shape change reachable from Python: k (the trace re-records)
    rng = np.random.default_rng(8)
    X = rng.normal(size=(120, 4))
    w = rng.integers(1, 9, 120).astype(float)
    tr = _lloyd.LloydTrace(X)
    for k in (3, 5, 3, 1, 2, 9, 9):
        C0 = X[rng.choice(120, k, replace=False)].copy()
        _both(tr, X, C0, w, 30, 0.0, f"k={k}")
        w[rng.integers(120)] += 1.0
        _both(tr, X, C0, w, 30, 0.0, f"k={k} rerun")


# --- bit-identity over random rerun sequences -------------------------------------

def _data(rng, kind, n, d):
    if kind == "blobs":  # well separated
        cen = rng.normal(scale=20.0, size=(5, d))
        return cen[rng.integers(0, 5, n)] + rng.normal(scale=0.5, size=(n, d))
    if kind == "overlap":  # many near-ties
        return rng.normal(size=(n, d))
    if kind == "grid":  # duplicates and exact distance ties
        return rng.integers(0, 3, size=(n, d)).astype(float)
    if kind == "far":  # 1e6 from the origin
        return rng.normal(size=(n, d)) + 1e6
    if kind == "huge":  # norms above 2**400: no bounds at all
        return rng.normal(size=(n, d)) * 1e130
    raise AssertionError(kind)


# (kind, n, d, k): every data kind, n < 4, n not a multiple of 4 or 8, d = 1,
# d = 17 (no packing of the points), k = 1, 2, 9 and k > 8
_CASES = [
    ("blobs", 200, 5, 5), ("blobs", 203, 17, 9), ("blobs", 3, 2, 2), ("blobs", 61, 1, 3),
    ("blobs", 150, 8, 12), ("blobs", 77, 3, 1),
    ("overlap", 180, 2, 9), ("overlap", 97, 17, 4), ("overlap", 2, 3, 2), ("overlap", 45, 1, 12),
    ("overlap", 130, 6, 2),
    ("grid", 150, 2, 5), ("grid", 101, 3, 9), ("grid", 33, 1, 2), ("grid", 60, 17, 12),
    ("grid", 3, 1, 3),
    ("far", 120, 3, 4), ("far", 75, 17, 9), ("far", 50, 1, 2),
    ("huge", 60, 3, 4), ("huge", 41, 1, 9), ("huge", 1, 2, 1),
]


def _scenario(seed, kind, n, d, k):
    rng = np.random.default_rng(seed)
    X = np.ascontiguousarray(_data(rng, kind, n, d))

    def new_c0():
        C = X[rng.integers(0, n, k)].copy()
        if rng.random() < 0.3:  # a far-away center: an empty cluster, relocated
            C[rng.integers(k)] += 1e3 * (np.abs(X).max() + 1.0)
        return C

    C0 = new_c0()
    w = rng.integers(0, 40, n).astype(float)
    w[rng.integers(n)] = 5.0
    tr = _lloyd.LloydTrace(X)
    replayed = 0
    for r in range(int(rng.integers(5, 31))):
        if r > 0:
            u = rng.random()
            if u < 0.65:  # the server case: a few counts move by a little
                for i in rng.integers(0, n, int(rng.integers(1, 4))):
                    w[i] = max(0.0, w[i] + rng.choice([-2.0, -1.0, 1.0, 2.0]))
            elif u < 0.75:
                C0 = new_c0()
            elif u < 0.85:  # large changes
                idx = rng.integers(0, n, max(1, n // 3))
                w[idx] = rng.integers(0, 100, idx.size)
            elif u < 0.92:
                w[rng.integers(n)] = 0.0
            if not (w > 0).any():
                w[rng.integers(n)] = 1.0
        max_iter = int(rng.choice([0, 1, 2, 3, 100, 100]))
        tol = float(rng.choice([0.0, 0.0, 1e-6, 0.5]))
        _both(tr, X, C0, w, max_iter, tol, f"seed={seed} run={r}")
        replayed += tr.last_stats != (-1, -1)
    return replayed


@pytest.mark.parametrize("case", range(len(_CASES)))
@pytest.mark.parametrize("rep", range(2))
def test_trace_bit_identical_random_sequences(case, rep):
    kind, n, d, k = _CASES[case]
    replayed = _scenario(1000 * rep + case, kind, n, d, k)
    if k > 1 and kind != "huge":
        assert replayed > 0  # the sequence did exercise reruns from the recording


def test_trace_unit_weights_and_none():
    # w = None is unit weights; switching between None and ones is no change
    rng = np.random.default_rng(3)
    X = rng.normal(size=(90, 2))
    C0 = X[:6].copy()
    tr = _lloyd.LloydTrace(X)
    _both(tr, X, C0, None, 100, 0.0)
    _both(tr, X, C0, np.ones(90), 100, 0.0)
    assert tr.last_stats[1] == 0  # same weights, same labels: nothing re-summed
    w = np.ones(90)
    w[7] = 0.0
    _both(tr, X, C0, w, 100, 0.0)
    _both(tr, X, C0, None, 100, 0.0)


def test_trace_all_clusters_relocated_path():
    # centers far from all data: every cluster but one empties at once
    rng = np.random.default_rng(11)
    X = rng.normal(size=(64, 3))
    C0 = np.vstack([X[:1], 1e4 + rng.normal(size=(4, 3))])
    w = rng.integers(1, 5, 64).astype(float)
    tr = _lloyd.LloydTrace(X)
    replayed = 0
    for r in range(12):
        _both(tr, X, C0, w, 100 if r % 2 else 2, 0.0, f"run={r}")
        replayed += tr.last_stats != (-1, -1)
        w[rng.integers(64)] += rng.choice([-1.0, 1.0])
        w = np.maximum(w, 0.0)
    assert replayed > 0


def test_trace_shorter_rerun_then_longer():
    # a rerun shorter than the recording keeps only its own assignments; a
    # later longer run records again; all exact
    rng = np.random.default_rng(21)
    X = rng.normal(size=(300, 3))
    w = rng.integers(1, 30, 300).astype(float)
    C0 = X[:7].copy()
    tr = _lloyd.LloydTrace(X)
    full = _both(tr, X, C0, w, 100, 0.0)
    assert full[4] >= 4 and tr.len == full[4] + 1
    w[5] += 1.0
    _both(tr, X, C0, w, 2, 0.0)
    assert tr.last_stats != (-1, -1) and tr.len == 3
    w[6] += 1.0
    again = _both(tr, X, C0, w, 100, 0.0)
    assert tr.len == 0 or tr.len == again[4] + 1
    w[5] -= 1.0
    _both(tr, X, C0, w, 100, 0.0)
    _both(tr, X, C0, w, 1, 0.0)
    _both(tr, X, C0, w, 0, 0.0)
    _both(tr, X, C0, w, 100, 1e9)


# --- the work saved is real (deterministic counts, not timing) --------------------

def test_trace_stats_small_change_is_cheap():
    rng = np.random.default_rng(2024)
    n, d, k = 1000, 10, 10
    cen = rng.normal(scale=8.0, size=(k, d))
    X = cen[rng.integers(0, k, n)] + rng.normal(size=(n, d))
    w = rng.integers(20, 41, n).astype(float)
    C0 = X[rng.choice(n, k, replace=False)].copy()
    tr = _lloyd.LloydTrace(X)
    _both(tr, X, C0, w, 100, 0.0)
    assert tr.last_stats == (-1, -1) and tr.len >= 2  # recorded
    w[123] -= 1.0
    got = _both(tr, X, C0, w, 100, 0.0)
    scored, summed = tr.last_stats
    n_assign = got[4] + 1  # iterations plus the final assignment
    assert tr.len == n_assign
    assert 0 <= scored < 0.05 * n * n_assign
    assert 1 <= summed <= 2 * n_assign
    # a totally different start: still the untraced result
    C1 = X[rng.choice(n, k, replace=False)] + 3.0
    _both(tr, X, C1, w, 100, 0.0)
    _both(tr, X, C0, w, 100, 0.0)


# --- prefix-keeping seeding --------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_seed_from_empty_prefix_is_seed(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(150, 3))
    w = rng.integers(1, 10, 150).astype(float)
    k = 7
    ids, _, _ = _seeding.seed(X, w, k, np.random.default_rng(seed + 50))
    got = _seeding.seed_from(X, w, np.empty(0, dtype=np.int64), k,
                             np.random.default_rng(seed + 50))
    np.testing.assert_array_equal(got, ids)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("m", [1, 3, 6])
def test_seed_from_prefix_resumes_seed(seed, m):
    rng = np.random.default_rng(seed)
    n, k = 120, 8
    X = rng.normal(size=(n, 2)) * (1 + 3 * rng.random((n, 1)))
    w = rng.integers(1, 6, n).astype(float)
    full, _, _ = _seeding.seed(X, w, k, np.random.default_rng(seed + 10))
    gb = np.random.default_rng(seed + 10)
    head, _, _ = _seeding.seed(X, w, m, gb)  # consumes what the first m centers do
    np.testing.assert_array_equal(head, full[:m])
    got = _seeding.seed_from(X, w, full[:m], k, gb)
    np.testing.assert_array_equal(got, full)
    # and the prefix is kept even when the generator is unrelated
    other = _seeding.seed_from(X, w, full[:m], k, np.random.default_rng(999))
    np.testing.assert_array_equal(other[:m], full[:m])
    assert len(set(other.tolist())) == k


# --- regression tests for defects found in review (fail on 09c1c5b) ----------------

def test_trace_does_not_alias_callers_X():
    # REGRESSION (defect 1): LloydTrace(X) keeps a view of the caller's array
    # (np.asarray, no copy) while the C trace keeps the points packed and their
    # norms from the first run; a caller that reuses its buffer then gets a
    # result equal to neither the run on the old X nor on the new one.  The
    # trace must be tied to the X it was built with.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    X_built = X.copy()
    C0 = X[:3].copy()
    w = np.ones(50)
    tr = _lloyd.LloydTrace(X)
    _both(tr, X_built, C0, w, 50, 0.0)
    X[:] = rng.normal(size=(50, 2)) * 5.0  # the caller reuses its buffer
    w[1] = 2.0
    _both(tr, X_built, C0, w, 50, 0.0)
    # the same hole through a second __init__ with another X of the same shape:
    # the C recording of the first X is kept and replayed
    Y = np.ascontiguousarray(rng.normal(size=(50, 2)) * 5.0)
    tr2 = _lloyd.LloydTrace(X_built)
    _both(tr2, X_built, C0, w, 50, 0.0)
    tr2.__init__(Y)
    _both(tr2, Y, C0, w, 50, 0.0)


_THREADS_SCRIPT = r"""
import threading, numpy as np
from pyfkm._core import _lloyd
rng = np.random.default_rng(0)
n, d, k = 3000, 8, 10
X = rng.normal(size=(n, d)) + rng.normal(scale=6, size=(k, d))[rng.integers(0, k, n)]
C0 = X[:k].copy()
tr = _lloyd.LloydTrace(X)
bad = []
def worker(seed):
    r = np.random.default_rng(seed)
    w = r.integers(1, 30, n).astype(float)
    for it in range(25):
        w[r.integers(n)] += 1
        mi = int(r.choice([3, 100]))
        got = tr.run(C0, w, mi, 0.0)
        ref = _lloyd.lloyd_loop(X, C0, w, mi, 0.0)
        if got[0].tobytes() != ref[0].tobytes() or float(got[3]).hex() != float(ref[3]).hex():
            bad.append((seed, it))
ts = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
print("BAD", len(bad))
"""


@pytest.mark.slow
def test_trace_concurrent_runs_on_one_trace():
    # REGRESSION (defect 2): LloydTrace.run releases the GIL while it rewrites
    # the shared trace (entries refitted, sums rebased, arrays reallocated when
    # recording); runs from several threads on one trace must still each
    # return lloyd_loop's result (serialised by a lock, as the seeding
    # wrappers do with the generator's lock).  Run in a subprocess: the race
    # can corrupt memory.
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT], capture_output=True,
                         text=True, timeout=120, env=env, cwd=root)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "BAD 0" in out.stdout, out.stdout


def test_trace_last_stats_after_untraced_k1_run():
    # REGRESSION (defect 3, minor): a k = 1 run is untraced
    # (fkm_lloyd_loop_traced_f64 ignores the trace), and the header documents
    # last_stats = (-1, -1) for a run that "recorded or ran untraced"; the
    # wrapper reports the previous run's counts instead.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    w = np.ones(40)
    tr = _lloyd.LloydTrace(X)
    _both(tr, X, X[:3].copy(), w, 50, 0.0)
    w[0] = 2.0
    _both(tr, X, X[:3].copy(), w, 50, 0.0)
    assert tr.last_stats != (-1, -1)
    _both(tr, X, X[:1].copy(), w, 50, 0.0)
    assert tr.last_stats == (-1, -1)


def test_seed_from_full_prefix_draws_nothing():
    # fkm_seeding.h: the generator is drawn from exactly k - n_prefix times
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 2))
    w = rng.integers(1, 4, 60).astype(float)
    full, _, _ = _seeding.seed(X, w, 5, np.random.default_rng(1))
    g = np.random.default_rng(2)
    before = g.bit_generator.state
    got = _seeding.seed_from(X, w, full, 5, g)
    np.testing.assert_array_equal(got, full)
    assert g.bit_generator.state == before
    # one more center: exactly one draw's worth of state is consumed, the same
    # as seed() consumes for its first center
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    _seeding.seed_from(X, w, full[:4], 5, g1)
    _seeding.seed(X, w, 1, g2)
    assert g1.bit_generator.state == g2.bit_generator.state


# --- sequences found by fuzzing against deliberately broken builds -------------------
# (scratch mutants of fkm_lloyd_loop.c: a refit that keeps the entry's old label,
# and a refit that does not move the bounds back to the entry's centers, pass
# every test above but fail these sequences)

def _fuzz_small(seed):
    rng = np.random.default_rng(seed)
    kinds = ["blobs", "overlap", "grid", "far", "huge", "tiny", "halfint"]
    kind = kinds[rng.integers(len(kinds))]
    n = int(rng.choice([1, 2, 3, 5, 7, 9, 13, 17, 31, 50, 64, 100, 203]))
    d = int(rng.choice([1, 2, 3, 5, 8, 16, 17]))
    k = int(rng.choice([1, 2, 3, 5, 8, 9, 12]))
    if kind == "blobs":
        cen = rng.normal(scale=10, size=(rng.integers(1, 6), d))
        X = cen[rng.integers(0, cen.shape[0], n)] + rng.normal(size=(n, d))
    elif kind == "overlap":
        X = rng.normal(size=(n, d))
    elif kind == "grid":
        X = rng.integers(0, 3, size=(n, d)).astype(float)
    elif kind == "far":
        X = rng.normal(size=(n, d)) + 1e6
    elif kind == "huge":
        X = rng.normal(size=(n, d)) * 1e130
    elif kind == "tiny":
        X = rng.normal(size=(n, d)) * 1e-160
    else:
        X = rng.integers(-4, 5, size=(n, d)) / 2.0
    X = np.ascontiguousarray(X)

    def new_c0():
        r = rng.random()
        if r < 0.6:
            return X[rng.integers(0, n, k)].copy()
        if r < 0.8:
            C = X[rng.integers(0, n, k)].copy()
            C[rng.integers(0, k)] += 1e3 * (np.abs(X).max() + 1)
            return C
        return X[rng.integers(0, n, k)] + rng.normal(size=(k, d)) * (np.abs(X).std() + 1e-300) * 0.1

    C0 = new_c0()
    w = rng.integers(0, 40, n).astype(float)
    if rng.random() < 0.2:
        w = None
    tr = _lloyd.LloydTrace(X)
    for r in range(int(rng.integers(5, 31))):
        max_iter = int(rng.choice([0, 1, 2, 3, 5, 100]))
        tol = float(rng.choice([0.0, 0.0, 1e-4, 1e-1, 1.0]))
        if r > 0:
            u = rng.random()
            if w is None:
                w = np.ones(n)
            if u < 0.6:
                for _ in range(rng.integers(1, 4)):
                    i = rng.integers(n)
                    w[i] = max(0.0, w[i] + rng.choice([-1, 1, -2, 2]))
            elif u < 0.7:
                C0 = new_c0()
            elif u < 0.8:
                i = rng.integers(0, n, max(1, n // 3))
                w[i] = rng.integers(0, 100, len(i))
            elif u < 0.85:
                w[rng.integers(n)] = 0.0
            elif u < 0.9:
                w = w * rng.choice([0.5, 3.0, 1e-3])
        if w is not None and not (w > 0).any():
            w[0] = 1.0
        try:
            ref = _lloyd.lloyd_loop(X, C0, w, max_iter, tol)
        except ValueError:
            with pytest.raises(ValueError):
                tr.run(C0, w, max_iter, tol)
            continue
        _assert_same(ref, tr.run(C0, w, max_iter, tol), f"seed={seed} run={r}")


@pytest.mark.parametrize("seed", [1159, 1499] + list(range(12)))
def test_trace_fuzz_sequences(seed):
    _fuzz_small(seed)


def test_trace_long_server_sequence():
    rng = np.random.default_rng(0)
    n, d, k = int(rng.integers(300, 2000)), int(rng.integers(1, 21)), int(rng.integers(2, 21))
    X = np.ascontiguousarray(rng.normal(size=(n, d)))
    C0 = X[rng.choice(n, k, replace=False)].copy()
    w = rng.integers(1, 40, n).astype(float)
    tr = _lloyd.LloydTrace(X)
    for r in range(12):
        if r:
            for i in rng.integers(0, n, int(rng.integers(1, 4))):
                w[i] = max(0.0, w[i] + rng.choice([-1.0, 1.0]))
            if rng.random() < 0.03:
                C0 = X[rng.choice(n, k, replace=False)].copy()
        mi = 300 if rng.random() < 0.9 else int(rng.integers(1, 6))
        _both(tr, X, C0, w, mi, 0.0, f"run={r}")
