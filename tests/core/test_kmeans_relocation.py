"""The relocation of empty clusters in pyfkm.core.kmeans.lloyd (n >= 8192,
the step-by-step workspace path) without a second scoring of the centers
(issue 22):

* ``LloydWorkspace.step(centers, keep_labels=True)`` (``assign_parts`` with
  an all-zero ``need`` mask: csrc ``fkm_lloyd_assign_masked_*`` accumulates
  the kept labels) gives, after a step to the same centers, bit for bit
  that step's labels, sums, weights, distances and inertia, and distances
  that agree with a numpy twin to rounding; a kept label outside [0, k) is
  refused and nothing is written;
* ``_farthest`` (the relocation candidates) is the head of numpy's stable
  argsort of ``-mind`` (ties, NaN, infinities, m >= n);
* fits with empty clusters on the workspace path equal the pure-Python
  reference (tests/oracles/lloyd.py) for 1, 2 and 3 threads, float64 and
  float32, weighted or not, on both assignment paths (packed d <= 16 and
  rows, with and without the distance bounds), and the verbose fit (which
  computes the distances in every step) bit for bit.

Errors come first.
"""
import numpy as np
import pytest

from oracles import lloyd as ref
from pyfkm._core import _lloyd
from pyfkm.core.kmeans import KMeans, LloydWorkspace, _farthest


def _problem(n, d, k, seed, dtype=np.float64):
    rng = np.random.default_rng([seed, n, d, k])
    X = rng.normal(size=(n, d)).astype(dtype)
    C = X[rng.choice(n, k, replace=False)].astype(np.float64)
    return rng, X, C


# --------------------------------------------------------------------------- errors first

def _outs(n, k, d, P=1):
    return (np.empty(n), np.empty((P, k, d)), np.empty((P, k)), np.empty(P),
            np.zeros(P, dtype=np.int64))


@pytest.mark.parametrize("bad", [-1, 5, 2 ** 31 - 1])
@pytest.mark.parametrize("d", [3, 20])
def test_kept_labels_out_of_range_are_refused_and_nothing_written(bad, d):
    _, X, C = _problem(40, d, 5, 0)
    ct, hn = _lloyd.pack_centers(C, np.zeros(d))
    labels = np.zeros(40, dtype=np.int32)
    labels[17] = bad
    mind, sums, wsums, inertia, changed = _outs(40, 5, d)
    mind[:] = 7.0
    need = np.zeros(40, dtype=np.uint8)
    bounds = np.array([0, 40])
    before = labels.copy()
    with pytest.raises(ValueError, match="outside"):
        _lloyd.assign_parts(X, _lloyd.pack_points(X), np.empty(0), ct, hn, C, bounds, 0, 1,
                            labels, mind, sums, wsums, inertia, changed, need)
    assert (mind == 7.0).all() and (labels == before).all()
    # a flagged point's label is not read: it is scored
    need[16:20] = 1
    _lloyd.assign_parts(X, _lloyd.pack_points(X), np.empty(0), ct, hn, C, bounds, 0, 1,
                        labels, mind, sums, wsums, inertia, changed, need)
    assert 0 <= labels[17] < 5 and (mind != 7.0).all()
    with pytest.raises(ValueError, match="length"):
        _lloyd.assign_parts(X, None, np.empty(0), ct, hn, C, bounds, 0, 1,
                            labels, mind, sums, wsums, inertia, changed, need[:39])


# --------------------------------------------------------------------------- kept labels

@pytest.mark.parametrize("d", [1, 3, 7, 16, 17, 50])
@pytest.mark.parametrize("k", [1, 5, 13])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kept_labels_step_equals_the_step_bitwise(d, k, dtype):
    for n, weighted in ((37, False), (9003, False), (9003, True)):
        for threads in (1, 2, 3):
            rng, X, C = _problem(n, d, k, 1, dtype)
            X[5] = X[4]  # duplicates
            w = rng.uniform(0.2, 2.0, n) if weighted else None
            ws = LloydWorkspace(X, w, k, threads)
            try:
                s1, w1, i1 = ws.step(C, distances=False)
                labels = ws.labels.copy()
                s2, w2, i2 = ws.step(C, distances=True)
                want = ws.mind.copy()
                np.testing.assert_array_equal(ws.labels, labels)
                ws.mind[:] = np.nan
                s3, w3, i3 = ws.step(C, distances=True, keep_labels=True)
                assert ws.n_changed == 0 and ws.n_scored == 0
                np.testing.assert_array_equal(ws.labels, labels)
                assert ws.mind.tobytes() == want.tobytes()
                # (weighted sums without distances may differ in the last bits
                # on the packed path: another accumulation; the relocation
                # uses the step with distances, as before)
                pairs = [(s2, s3), (w2, w3), (w1, w3)] + ([] if weighted else [(s1, s3)])
                for u, v in pairs:
                    assert u.tobytes() == v.tobytes()
                assert i3 == i2
                # numpy twins
                Xd = X.astype(np.float64)
                twin = ((Xd - C[labels]) ** 2).sum(axis=1)
                np.testing.assert_allclose(ws.mind, twin, rtol=1e-12, atol=1e-300)
                ww = np.ones(n) if w is None else w
                np.testing.assert_allclose(w3, np.bincount(labels, ww, minlength=k), rtol=1e-12)
                for c in range(k):
                    np.testing.assert_allclose(
                        s3[c], (ww[labels == c, None] * Xd[labels == c]).sum(axis=0),
                        rtol=1e-10, atol=1e-10)
            finally:
                ws.close()


def test_kept_labels_need_not_be_nearest():
    """The kept labels are accumulated as given (hand case, exact values)."""
    X = np.array([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0], [2.0, 2.0], [5.0, 5.0]])
    C = np.array([[0.0, 0.0], [1.0, 1.0]])
    for d_pad in (0, 15):  # packed (d = 2) and row (d = 17) paths
        Xp = np.hstack([X, np.zeros((5, d_pad))])
        Cp = np.hstack([C, np.zeros((2, d_pad))])
        ct, hn = _lloyd.pack_centers(Cp, np.zeros(2 + d_pad))
        labels = np.array([1, 0, 1, 1, 0], dtype=np.int32)
        mind, sums, wsums, inertia, changed = _outs(5, 2, 2 + d_pad)
        _lloyd.assign_parts(Xp, _lloyd.pack_points(Xp), np.empty(0), ct, hn, Cp,
                            np.array([0, 5]), 0, 1, labels, mind, sums, wsums, inertia,
                            changed, np.zeros(5, dtype=np.uint8))
        assert labels.tolist() == [1, 0, 1, 1, 0] and changed[0] == 0
        assert mind.tolist() == [2.0, 25.0, 0.0, 2.0, 50.0]
        assert inertia[0] == 79.0
        assert wsums[0].tolist() == [2.0, 3.0]
        assert sums[0][:, :2].tolist() == [[8.0, 9.0], [3.0, 3.0]]


# --------------------------------------------------------------------------- candidates

def _stable_head(mind, m):
    return np.argsort(-mind, kind="stable")[:m]


@pytest.mark.parametrize("seed", range(6))
def test_farthest_is_the_stable_argsort_head(seed):
    rng = np.random.default_rng(seed)
    for n in (1, 2, 7, 100):
        mind = rng.integers(0, 4, n).astype(np.float64)  # many ties
        if seed % 2:
            mind[rng.integers(0, n)] = np.inf
        if seed % 3 == 0 and n > 1:
            mind[rng.integers(0, n, 2)] = np.nan
        for m in (1, 2, 3, n, n + 2):
            got = _farthest(mind, m)
            np.testing.assert_array_equal(got, _stable_head(mind, m))


def test_farthest_hand_cases():
    mind = np.array([1.0, 5.0, 5.0, 0.0, 5.0])
    assert _farthest(mind, 2).tolist() == [1, 2]
    assert _farthest(mind, 4).tolist() == [1, 2, 4, 0]
    mind = np.array([np.nan, 2.0, np.nan])
    assert _farthest(mind, 2).tolist() == [1, 0]


# --------------------------------------------------------------------------- fits

def _with_empty_clusters(n, d, k, seed, dtype):
    rng, X, _ = _problem(n, d, k, seed, dtype)
    init = X[rng.choice(n, k, replace=False)].astype(np.float64)
    init[-2:] = 100.0 + 10.0 * np.arange(2)[:, None]
    return rng, X, init


@pytest.mark.parametrize("d", [3, 17, 50])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fit_with_empty_clusters_matches_reference(d, dtype):
    n, k = 9001, 7
    for weighted in (False, True):
        rng, X, init = _with_empty_clusters(n, d, k, 3, dtype)
        w = rng.uniform(0.5, 2.0, n) if weighted else None
        hist = []
        C, L, inertia, n_iter = ref.lloyd(X, init, w, max_iter=6, tol=0.0, history=hist)
        assert len(hist[0]["relocated"]) == 2  # the case is exercised
        runs = [KMeans(k, init=init, max_iter=6, tol=0.0, n_threads=t).fit(X, sample_weight=w)
                for t in (1, 2, 3)]
        for km in runs:
            np.testing.assert_array_equal(km.labels_, L)
            assert km.n_iter_ == n_iter
            assert np.abs(km.cluster_centers_ - C).max() <= 1e-10 * max(1.0, np.abs(C).max())
            assert km.inertia_ == pytest.approx(inertia, rel=1e-10)
        for km in runs[1:]:
            assert km.cluster_centers_.tobytes() == runs[0].cluster_centers_.tobytes()
            assert km.inertia_ == runs[0].inertia_


def test_fit_with_empty_clusters_equals_the_verbose_fit(capsys):
    """verbose=1 computes distances in every step (no relocation shortcut):
    the same results bit for bit."""
    _, X, init = _with_empty_clusters(9001, 20, 6, 4, np.float64)
    a = KMeans(6, init=init, max_iter=8, tol=0.0).fit(X)
    b = KMeans(6, init=init, max_iter=8, tol=0.0, verbose=1).fit(X)
    assert "relocated" in capsys.readouterr().out
    assert a.cluster_centers_.tobytes() == b.cluster_centers_.tobytes()
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.inertia_ == b.inertia_ and a.n_iter_ == b.n_iter_
