"""Traced Lloyd reruns that share one X (``LloydTrace(X, like)``) and long
rerun sequences through the in-place paths of the reruns (per-entry member
lists of the clusters summed again, labels kept in the trace's entries and
their per-entry change counts).  The oracle is the untraced one-call loop
(``_lloyd.lloyd_loop``, itself checked against numpy in tests/core/test_kmeans.py):
every output must be bit for bit its own.
"""
import numpy as np
import pytest

from pyfkm._core import _lloyd

# the bit-identity checks of the trace tests (tests/ is on sys.path: no package)
from _helpers.lloyd_trace import both as _both


# --- errors first ----------------------------------------------------------------

def test_like_on_another_X_is_refused_and_trace_unchanged():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    Y = X.copy()
    Y[7, 1] += 1e-9  # same shape, one value differs
    tr = _lloyd.LloydTrace(X)
    C0, w = X[:4].copy(), np.ones(40)
    _both(tr, X, C0, w, 50, 0.0)
    with pytest.raises(ValueError, match="another X"):
        _lloyd.LloydTrace(Y, tr)
    with pytest.raises(ValueError, match="another X"):
        _lloyd.LloydTrace(X[:20], tr)
    with pytest.raises(ValueError, match="another X"):
        _lloyd.LloydTrace(np.ascontiguousarray(X[:, :2]), tr)
    with pytest.raises(TypeError):
        _lloyd.LloydTrace(X, "not a trace")
    # re-initialising a trace like another on a different X fails and keeps it
    other = _lloyd.LloydTrace(Y)
    with pytest.raises(ValueError):
        tr.__init__(Y, tr)
    assert tr.X.tobytes() == X.tobytes() and other.X is not tr.X
    w[3] = 2.0
    _both(tr, X, C0, w, 50, 0.0, "after the refused like")
    assert tr.last_stats != (-1, -1)  # the recording survived the refusal


def test_like_shares_the_copy_not_the_callers_buffer():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 2))
    X0 = X.copy()
    a = _lloyd.LloydTrace(X)
    b = _lloyd.LloydTrace(X, a)
    assert b.X is a.X and not b.X.flags.writeable
    X[:] = 0.0  # the caller's buffer is not the trace's
    C0, w = X0[:3].copy(), np.ones(30)
    _both(a, X0, C0, w, 50, 0.0)
    _both(b, X0, C0, w, 50, 0.0)


# --- shared X: interleaved reruns -------------------------------------------------

@pytest.mark.parametrize("n,d,k", [(300, 10, 10), (203, 17, 9), (97, 3, 4), (6, 2, 3)])
def test_shared_traces_interleaved_reruns(n, d, k):
    # several traces on one X (one copy, one packing), run in turn like the
    # MUFC server's inits, each with its own starting centers; weights move by
    # one at a time, max_iter changes (shorter and longer reruns than the
    # recording), and a cluster sometimes loses all its weight (relocations
    # inside a rerun)
    rng = np.random.default_rng(n + d + k)
    cen = rng.normal(scale=6.0, size=(k, d))
    X = np.ascontiguousarray(cen[rng.integers(0, k, n)] + rng.normal(size=(n, d)))
    w = rng.integers(1, 30, n).astype(float)
    first = _lloyd.LloydTrace(X)
    trs = [first] + [_lloyd.LloydTrace(X, first) for _ in range(3)]
    assert all(t.X is first.X for t in trs)
    c0s = [X[rng.choice(n, k, replace=n < k)].copy() for _ in trs]
    replayed = 0
    for r in range(40):
        if r:
            u = rng.random()
            if u < 0.8:
                i = int(rng.integers(n))
                w[i] = max(0.0, w[i] - 1.0)
            elif u < 0.9:  # a cluster's points all lose their weight
                lab = _lloyd.lloyd_loop(X, c0s[0], w, 100, 0.0)[1]
                w[lab == lab[0]] = 0.0
                if not (w > 0).any():
                    w[:] = 1.0
            else:
                w[rng.integers(n)] += 3.0
        max_iter = int(rng.choice([1, 2, 4, 100, 100, 100]))
        for t, c0 in zip(trs, c0s):
            _both(t, X, c0, w, max_iter, 0.0, f"n={n} run={r}")
            replayed += t.last_stats != (-1, -1)
    assert replayed > 40  # reruns from recordings did happen


def test_long_decrement_sequence_moves_labels():
    # many single decrements on overlapping clusters: points change clusters
    # during reruns (scored points, member lists and change counts rebuilt);
    # the stats must show scored points and clusters summed again
    rng = np.random.default_rng(5)
    n, d, k = 400, 4, 8
    X = np.ascontiguousarray(rng.normal(size=(n, d)))
    w = rng.integers(1, 4, n).astype(float)
    tr = _lloyd.LloydTrace(X)
    C0 = X[rng.choice(n, k, replace=False)].copy()
    scored = summed = 0
    for r in range(60):
        if r:
            i = int(rng.choice(np.flatnonzero(w > 0)))
            w[i] -= 1.0
        _both(tr, X, C0, w, int(rng.choice([3, 100])), 0.0, f"run={r}")
        s, m = tr.last_stats
        scored += max(s, 0)
        summed += max(m, 0)
    assert scored > 0 and summed > 0


def test_server_traces_share_one_X():
    from pyfkm.datasets import make_gaussian_mixture, split_non_iid
    from pyfkm.mufc import FederatedKMeans
    X, y, _ = make_gaussian_mixture(3000, 4, 4, random_state=0)
    parts = split_non_iid(X, y, 10, 2, random_state=0)
    clients = [np.ascontiguousarray(X[p]) for p in parts]
    m = FederatedKMeans(4, server_points="centers", n_init=3, random_state=0).fit(clients)
    rng = np.random.default_rng(0)
    for _ in range(3):
        c = int(rng.integers(10))
        m.remove(c, int(rng.integers(clients[c].shape[0])))
    traces = [t for t in m._server._traces if t is not None]
    assert len(traces) >= 2
    assert all(t.X is traces[0].X for t in traces)
    # each trace's next rerun is still bit for bit a plain run
    P, w = m._server._P, m._server.counts_.astype(float)
    for t, s in zip(m._server._traces, m._server._seeds):
        if t is not None:
            _both(t, P, P[s], w, m._server.max_iter, m._server._tol_abs)
