"""FederatedKMeans with an executor (issue 22): a thread pool or a process
pool gives the model of the in-process fit for the same ``random_state``
(same centers, aggregate, client states), removals continue identically,
and the work the pool takes (the clients' fits; with threads, their masked
inputs) runs there.  The aggregate is also checked against the plain sum of
the clients' quantized vectors, recomputed here from their centers and
sizes with numpy (``_plain_aggregate``)."""
import threading
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

from pyfkm.exceptions import ProtocolError
from pyfkm.mufc import FederatedKMeans
from pyfkm.secagg import ScmaClient
from _helpers.mufc import assert_same_fit
from _helpers.scma import CountingPool


def _clients(seed, L=9, n_l=60, d=3, K=4):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-0.4, 0.4, size=(K, d))
    out = []
    for _ in range(L):
        lab = rng.choice(rng.choice(K, size=2, replace=False), size=n_l)
        out.append(np.clip(centers[lab] + 0.03 * rng.normal(size=(n_l, d)), -0.5, 0.5))
    return out


def _plain_aggregate(m):
    """The sum of the participants' vectors: their centers' grid cells
    (floor((c - lower) / gamma), clipped) weighted by their sizes."""
    tot = Counter()
    for i in m._participants:
        C, s = m.client_centers_[i], m.client_sizes_[i]
        b = np.clip(np.floor((C - m.bounds[0]) / m.gamma_).astype(np.int64), 0,
                    m.n_bins_per_dim_ - 1)
        for row, q in zip(b.tolist(), s.tolist()):
            if q:
                tot[tuple(row)] += q
    items = sorted(tot.items())
    return (np.array([k for k, _ in items], dtype=np.int64).reshape(-1, m.n_features_in_),
            np.array([v for _, v in items], dtype=np.int64))


def _non_center(m, client, k=0):
    c = m._clients[client]
    centers = set(c._active[c._seeding.center_ids_].tolist())
    return [i for i in np.flatnonzero(~c.removed_).tolist() if i not in centers][k]


@pytest.mark.parametrize("pool", ["threads", "processes"])
@pytest.mark.parametrize("kw", [{}, {"server_points": "uniform", "neighbors": 4},
                                {"client_init": "means", "threshold": 5}],
                         ids=["defaults", "uniform-sparse", "means"])
def test_an_executor_fit_is_the_in_process_fit(pool, kw):
    data = _clients(1)
    ref = FederatedKMeans(4, random_state=7, **kw).fit(data)
    cls = ThreadPoolExecutor if pool == "threads" else ProcessPoolExecutor
    with cls(2) as ex:
        m = FederatedKMeans(4, random_state=7, executor=ex, **kw).fit(data)
    assert_same_fit(ref, m, server=True)
    assert m.n_iter_ == ref.n_iter_ and m.dropped_clients_ == ()
    for model in (ref, m):
        bins, counts = _plain_aggregate(model)
        np.testing.assert_array_equal(model.aggregate_bins_, bins)
        np.testing.assert_array_equal(model.aggregate_counts_, counts)
    # the run's roles live in this process: removals go on identically, in
    # difference rounds, after the pool is gone
    for model in (ref, m):
        c = model._clients[3]
        first = int(c._active[c._seeding.center_ids_[0]])
        reps = [model.remove(3, [_non_center(model, 3)]), model.remove(3, [first]),
                model.remove(6, [_non_center(model, 6, 2)])]
        assert reps[0].incremental_decode
    assert_same_fit(ref, m, server=True)
    bins, counts = _plain_aggregate(m)
    np.testing.assert_array_equal(m.aggregate_counts_, counts)


def test_a_thread_pool_runs_the_fits_and_the_masked_inputs():
    data = _clients(2, L=10)
    with CountingPool(2) as ex:
        m = FederatedKMeans(4, random_state=3, executor=ex).fit(data)
    assert ex.tasks > len(data)             # the fits, then batches of masked inputs
    assert len(ex.threads) >= 1 and threading.get_ident() not in ex.threads
    assert_same_fit(FederatedKMeans(4, random_state=3).fit(data), m, server=True)


def test_a_client_refusing_its_input_on_a_thread_pool_drops_as_in_process(monkeypatch):
    """Client 4's answer raises ProtocolError inside a pool task: it is a
    dropout of the fit's round, the model is the in-process one without it."""
    real = ScmaClient.respond

    def respond(self, req):
        if self.client_id == 4:
            raise ProtocolError("client 4 is unreachable")
        return real(self, req)
    monkeypatch.setattr(ScmaClient, "respond", respond)
    data = _clients(3)
    ref = FederatedKMeans(4, random_state=5).fit(data)
    with ThreadPoolExecutor(2) as ex:
        m = FederatedKMeans(4, random_state=5, executor=ex).fit(data)
    assert m.dropped_clients_ == ref.dropped_clients_ == (4,)
    assert_same_fit(ref, m, server=True)
    assert 4 not in m._participants and m._clients[4] is None


def test_a_failed_fit_on_a_thread_pool_drops_its_client():
    """A client whose fit task raises (a subclass of ThreadPoolExecutor
    that fails the task of client 2) shares keys, goes silent and drops; the
    others' model is the one without it (the plain sum of the others)."""
    class Failing(ThreadPoolExecutor):
        calls = 0

        def submit(self, fn, *args, **kw):
            i, Failing.calls = Failing.calls, Failing.calls + 1
            if i == 2:
                def boom(*a, **k):
                    raise RuntimeError("client 2 crashed")
                return super().submit(boom)
            return super().submit(fn, *args, **kw)
    data = _clients(4)
    with Failing(2) as ex, pytest.warns(RuntimeWarning, match="client 2 dropped"):
        m = FederatedKMeans(4, random_state=9, executor=ex).fit(data)
    assert m.dropped_clients_ == (2,) and m._clients[2] is None
    bins, counts = _plain_aggregate(m)
    np.testing.assert_array_equal(m.aggregate_bins_, bins)
    np.testing.assert_array_equal(m.aggregate_counts_, counts)
    ref = FederatedKMeans(4, random_state=9).fit(data)
    for i in range(len(data)):
        if i != 2:
            np.testing.assert_array_equal(m.client_centers_[i], ref.client_centers_[i])


@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_clients_joining_on_an_executor_join_as_in_process(pool):
    data = _clients(5, L=10)
    ref = FederatedKMeans(4, random_state=2).fit(data[:6])
    ref.add_clients(data[6:])
    cls = ThreadPoolExecutor if pool == "threads" else ProcessPoolExecutor
    with cls(2) as ex:
        m = FederatedKMeans(4, random_state=2, executor=ex).fit(data[:6])
        rep = m.add_clients(data[6:])
    assert rep.clients == (6, 7, 8, 9) and rep.dropped == ()
    assert_same_fit(ref, m, server=True)
    bins, counts = _plain_aggregate(m)
    np.testing.assert_array_equal(m.aggregate_bins_, bins)
    np.testing.assert_array_equal(m.aggregate_counts_, counts)


def test_a_fit_that_times_out_on_a_thread_pool_does_not_hold_the_round(monkeypatch):
    """``client_timeout`` with a ``ThreadPoolExecutor`` of one worker: client
    3's fit still runs there (blocked until the test releases it) when the
    round's masked inputs are computed; they do not queue behind it, the fit
    returns at the timeout, and the model is the one with client 3's fit
    failed."""
    import time

    import pyfkm.mufc.estimator as est
    data = _clients(5, L=4)
    real = est._fit_client_task
    release = threading.Event()

    def blocked(X, *a, **k):
        if X is data[3]:
            release.wait(30)
        return real(X, *a, **k)

    def failing(X, *a, **k):
        if X is data[3]:
            raise RuntimeError("client 3 is unreachable")
        return real(X, *a, **k)
    monkeypatch.setattr(est, "_fit_client_task", blocked)
    with ThreadPoolExecutor(1) as ex:
        t0 = time.perf_counter()
        try:
            with pytest.warns(RuntimeWarning, match="client 3 dropped.*Timeout"):
                m = FederatedKMeans(4, random_state=3, executor=ex, client_timeout=0.3).fit(data)
        finally:
            elapsed = time.perf_counter() - t0
            release.set()
    assert elapsed < 20, elapsed            # the blocked fit waits 30 s
    assert m.dropped_clients_ == (3,)
    monkeypatch.setattr(est, "_fit_client_task", failing)
    with ThreadPoolExecutor(1) as ex, pytest.warns(RuntimeWarning, match="unreachable"):
        ref = FederatedKMeans(4, random_state=3, executor=ex).fit(data)
    assert_same_fit(ref, m, server=True)


def test_client_timeout_counts_from_the_submission_of_the_fits(monkeypatch):
    """The driver's key agreement (``open_round``, overlapped with the
    fits) does not lengthen ``client_timeout``: with a key agreement of
    1.0 s and a timeout of 1.0 s, client 2's fit, which takes 1.6 s, is
    dropped (counting from after the key agreement it would end in time)."""
    import time

    import pyfkm.mufc.aggregation as agg_mod
    import pyfkm.mufc.estimator as est
    data = _clients(6, L=3)
    real_fit, real_open = est._fit_client_task, agg_mod._SecureAggregator.open_round

    def slow_fit(X, *a, **k):
        if X is data[2]:
            time.sleep(1.6)
        return real_fit(X, *a, **k)

    def slow_open(self, *a, **k):
        time.sleep(1.0)
        return real_open(self, *a, **k)
    monkeypatch.setattr(est, "_fit_client_task", slow_fit)
    monkeypatch.setattr(agg_mod._SecureAggregator, "open_round", slow_open)
    with ThreadPoolExecutor(3) as ex, \
            pytest.warns(RuntimeWarning, match="client 2 dropped.*Timeout"):
        m = FederatedKMeans(4, random_state=3, executor=ex, client_timeout=1.0).fit(data)
    assert m.dropped_clients_ == (2,)


@pytest.mark.parametrize("call", ["fit", "add_clients"])
def test_a_thread_pool_computes_the_masks_beside_the_key_shares(monkeypatch, call):
    """With a thread pool, every client's mask of the round is computed once,
    before the round's inputs are asked for (beside the driver's delivery
    of the key shares, overlapped with the fits), and the model is the
    in-process one."""
    from pyfkm.secagg import RoundTrip
    data = _clients(4, L=8)
    events = []
    real_mask, real_inputs = ScmaClient.mask, RoundTrip.inputs

    def mask(self, *a, **k):
        events.append(("mask", self.client_id))
        return real_mask(self, *a, **k)

    def inputs(self, *a, **k):
        events.append(("inputs", None))
        return real_inputs(self, *a, **k)
    ref = FederatedKMeans(4, random_state=9).fit(data[:5])
    if call == "add_clients":
        ref.add_clients(data[5:])
    monkeypatch.setattr(ScmaClient, "mask", mask)
    monkeypatch.setattr(RoundTrip, "inputs", inputs)
    with CountingPool(2) as ex:
        m = FederatedKMeans(4, random_state=9, executor=ex).fit(data[:5])
        if call == "add_clients":
            del events[:]
            m.add_clients(data[5:])
    n = 5 if call == "fit" else 8
    assert events[-1] == ("inputs", None)
    assert sorted(c for _, c in events[:-1]) == list(range(n))
    assert_same_fit(ref, m, server=True)


def test_a_process_pool_fit_runs_the_masks_on_threads_of_the_driver(monkeypatch):
    """With a ``ProcessPoolExecutor`` (the roles cannot go to its workers),
    the masks are computed on threads of this process (at most one per
    available core, alive only during the fit), before the inputs are asked
    for; the model is the in-process one."""
    from pyfkm._validation import available_cores
    from pyfkm.secagg import RoundTrip
    data = _clients(5, L=8)
    events = []
    real_mask, real_inputs = ScmaClient.mask, RoundTrip.inputs

    def mask(self, *a, **k):
        events.append(("mask", threading.current_thread().name))
        return real_mask(self, *a, **k)

    def inputs(self, *a, **k):
        events.append(("inputs", threading.current_thread().name))
        return real_inputs(self, *a, **k)
    ref = FederatedKMeans(4, random_state=2).fit(data)
    monkeypatch.setattr(ScmaClient, "mask", mask)
    monkeypatch.setattr(RoundTrip, "inputs", inputs)
    with ProcessPoolExecutor(2) as ex:
        m = FederatedKMeans(4, random_state=2, executor=ex).fit(data)
    assert [e for e, _ in events] == ["mask"] * len(data) + ["inputs"]
    names = {t for e, t in events if e == "mask"}
    assert names - {threading.current_thread().name}          # some ran on the threads
    pool_threads = names - {threading.current_thread().name}
    assert all(t.startswith("pyfkm-round") for t in pool_threads)
    assert len(pool_threads) <= available_cores()
    assert not [t for t in threading.enumerate() if t.name.startswith("pyfkm-round")]
    assert_same_fit(ref, m, server=True)
