"""Tests of the in-process SCMA driver's step 3 on an executor
(``RoundTrip.inputs(executor=...)``): the clients' answers computed in
batches on a thread pool give the plain sum (``plain_sum``: a
``collections.Counter`` sum, tests/_helpers/scma.py), the same dropouts,
failures and byte counts as the serial step, and no task outlives the step."""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pyfkm.exceptions import ProtocolError
from pyfkm.secagg import RoundTrip, ScmaClient, ScmaParams, setup_in_process
from _helpers.scma import CountingPool, assert_aggregate, plain_sum, random_clients


def _federation(n, d=3, B=7, seed=0, neighbors=0):
    rng = np.random.default_rng(seed)
    data = random_clients(rng, n, d, B, max_nnz=4, pool_size=10, max_count=20)
    M = max(sum(len(q) for _, q in data), 1)
    server, roles = setup_in_process(ScmaParams.create(d, B, M), n, threshold=n // 2 + 1,
                                     degree=neighbors)
    for c, (b, q) in zip(roles, data):
        c.set_data(b, q)
    return server, dict(enumerate(roles)), data


@pytest.mark.parametrize("n, workers, neighbors", [(2, 2, 0), (7, 2, 0), (13, 3, 4),
                                                   (20, 1, 0)])
def test_inputs_on_a_thread_pool_give_the_plain_sum(n, workers, neighbors):
    server, roles, data = _federation(n, seed=n, neighbors=neighbors)
    with CountingPool(workers) as ex:
        trip = RoundTrip(server, roles).share()
        res = trip.inputs(executor=ex).finish()
    assert_aggregate(res.bins, res.counts, plain_sum(data, 3), 3)
    assert res.dropped == () and trip.failed == {}
    assert ex.tasks >= min(2, n)              # the answers ran as tasks of the pool
    assert threading.get_ident() not in ex.threads


def test_inputs_on_a_pool_count_the_same_bytes_as_serially():
    sizes = []
    for ex in (None, ThreadPoolExecutor(2)):
        server, roles, data = _federation(9, seed=3)
        trip = RoundTrip(server, roles).share()
        trip.inputs(executor=ex)
        sizes.append((trip.bytes_up, trip.bytes_down))
        res = trip.finish()
        assert_aggregate(res.bins, res.counts, plain_sum(data, 3), 3)
        if ex is not None:
            ex.shutdown()
    assert sizes[0] == sizes[1]


def test_silent_and_refusing_clients_on_a_pool_drop_as_serially(monkeypatch):
    """Client 2 goes silent, client 5 refuses to answer (ProtocolError in
    its task): the sum is the others', both are dropped, 5 is in
    ``failed`` with its error."""
    real = ScmaClient.respond

    def respond(self, req):
        if self.client_id == 5:
            raise ProtocolError("client 5 is unreachable")
        return real(self, req)
    monkeypatch.setattr(ScmaClient, "respond", respond)
    server, roles, data = _federation(8, seed=5)
    with ThreadPoolExecutor(2) as ex:
        trip = RoundTrip(server, roles, silent=[2])
        res = trip.share().inputs(executor=ex).finish()
    keep = [c for i, c in enumerate(data) if i not in (2, 5)]
    assert_aggregate(res.bins, res.counts, plain_sum(keep, 3), 3)
    assert res.dropped == (2, 5)
    assert set(trip.failed) == {5} and "unreachable" in str(trip.failed[5])


def test_an_unexpected_error_in_a_task_raises_after_every_task_ended(monkeypatch):
    """A client's answer that raises something other than ProtocolError
    propagates, but only once every batch has finished (no task still
    uses a role when inputs returns)."""
    real = ScmaClient.respond
    running = []
    done = threading.Event()

    def respond(self, req):
        if self.client_id == 0:
            raise RuntimeError("bug in client 0")
        running.append(self.client_id)
        if self.client_id == 11:
            done.wait(0.2)            # the last batch is still busy when batch 0 fails
            running.append("end")
        return real(self, req)
    monkeypatch.setattr(ScmaClient, "respond", respond)
    server, roles, _ = _federation(12, seed=7)
    with ThreadPoolExecutor(2) as ex:
        trip = RoundTrip(server, roles).share()
        with pytest.raises(RuntimeError, match="bug in client 0"):
            trip.inputs(executor=ex)
        assert running[-1] == "end"


def test_inputs_complete_while_every_worker_is_busy():
    """The pool's only worker runs another task (blocked until the test
    releases it): the step does not wait for it, the calling thread answers
    for the clients, and the sum is the plain one.  (Before, the batches
    queued behind the busy worker and the step waited for it.)"""
    import time
    server, roles, data = _federation(6, seed=11)
    release = threading.Event()
    with ThreadPoolExecutor(1) as ex:
        busy = ex.submit(release.wait, 30)
        t0 = time.perf_counter()
        try:
            trip = RoundTrip(server, roles).share()
            res = trip.inputs(executor=ex).finish()
        finally:
            elapsed = time.perf_counter() - t0
            release.set()
        busy.result()
    assert elapsed < 20, elapsed            # the busy task waits 30 s
    assert_aggregate(res.bins, res.counts, plain_sum(data, 3), 3)
    assert res.dropped == () and trip.failed == {}


# -- steps 1-2 on an executor: each client's full-round mask as its shares arrive

def _counting_masks(monkeypatch):
    """Record ``(client, thread)`` of every mask a client computes."""
    calls = []
    real = ScmaClient.mask

    def mask(self, round_, n_words=None):
        calls.append((self.client_id, threading.get_ident()))
        return real(self, round_, n_words)
    monkeypatch.setattr(ScmaClient, "mask", mask)
    return calls


@pytest.mark.parametrize("n, workers, neighbors", [(2, 1, 0), (13, 2, 4), (40, 3, 6)])
def test_share_on_a_pool_computes_every_full_mask_there(monkeypatch, n, workers, neighbors):
    """``share(executor)`` computes each sharer's full-round mask on the pool
    while the bundles are still delivered; a full round's inputs then
    compute no mask, and the sum is the plain one."""
    calls = _counting_masks(monkeypatch)
    server, roles, data = _federation(n, seed=20 + n, neighbors=neighbors)
    with CountingPool(workers) as ex:
        trip = RoundTrip(server, roles).share(executor=ex)
        assert sorted(c for c, _ in calls) == list(range(n))    # once each
        assert ex.tasks >= 1
        del calls[:]
        res = trip.inputs(executor=ex).finish()
    assert calls == []
    assert_aggregate(res.bins, res.counts, plain_sum(data, 3), 3)
    assert res.dropped == () and trip.failed == {}


def test_share_on_a_pool_runs_the_masks_on_its_workers(monkeypatch):
    """The pool's workers compute masks (not only the calling thread)."""
    calls = _counting_masks(monkeypatch)
    server, roles, data = _federation(24, seed=4, neighbors=4)
    with CountingPool(2) as ex:
        res = RoundTrip(server, roles).share(executor=ex).inputs().finish()
    assert {t for _, t in calls} & ex.threads
    assert_aggregate(res.bins, res.counts, plain_sum(data, 3), 3)


def test_share_on_a_pool_skips_a_client_whose_shares_fail(monkeypatch):
    """Client 3's bundle fails (ProtocolError): it gets no mask, it is in
    ``failed`` and the round completes over the others, as serially."""
    calls = _counting_masks(monkeypatch)
    real = ScmaClient.receive_shares

    def receive_shares(self, bundle):
        if self.client_id == 3:
            raise ProtocolError("client 3 lost its bundle")
        return real(self, bundle)
    monkeypatch.setattr(ScmaClient, "receive_shares", receive_shares)
    server, roles, data = _federation(9, seed=8)
    with ThreadPoolExecutor(2) as ex:
        trip = RoundTrip(server, roles).share(executor=ex)
        assert sorted(c for c, _ in calls) == [0, 1, 2, 4, 5, 6, 7, 8]
        res = trip.inputs().finish()
    assert set(trip.failed) == {3} and res.dropped == (3,)
    assert_aggregate(res.bins, res.counts, plain_sum([c for i, c in enumerate(data) if i != 3],
                                                     3), 3)


def test_an_error_in_a_mask_task_raises_from_share_after_every_task_ended(monkeypatch):
    real = ScmaClient.precompute_mask
    running = []
    release = threading.Event()

    def precompute_mask(self, delta_nonzeros=0):
        if self.client_id == 0:
            raise RuntimeError("bug in client 0")
        if self.client_id == 1:
            release.wait(0.2)         # still busy when client 0's task fails
            running.append("end")
        return real(self, delta_nonzeros)
    monkeypatch.setattr(ScmaClient, "precompute_mask", precompute_mask)
    server, roles, _ = _federation(12, seed=9)
    with ThreadPoolExecutor(2) as ex:
        with pytest.raises(RuntimeError, match="bug in client 0"):
            RoundTrip(server, roles).share(executor=ex)
        assert running == ["end"]


def test_share_completes_while_every_worker_is_busy(monkeypatch):
    """The pool's only worker is blocked: the calling thread computes the
    masks itself and the step does not wait for the worker."""
    calls = _counting_masks(monkeypatch)
    server, roles, data = _federation(6, seed=12)
    release = threading.Event()
    with ThreadPoolExecutor(1) as ex:
        busy = ex.submit(release.wait, 30)
        try:
            trip = RoundTrip(server, roles).share(executor=ex)
        finally:
            release.set()
        busy.result()
    # had the step waited for the worker, the worker would have computed
    # the masks once released (after 30 s)
    assert {t for _, t in calls} == {threading.get_ident()}
    res = trip.inputs().finish()
    assert_aggregate(res.bins, res.counts, plain_sum(data, 3), 3)


def test_share_on_a_pool_that_fails_midway_raises_its_error_after_every_task_ended(
        monkeypatch):
    """The server cannot build client 6's bundle (an unexpected error): share
    raises that error, not the error of client 0's mask task, and only once
    the mask tasks already started have ended (no task uses a role
    afterwards)."""
    from pyfkm.secagg import ScmaServer
    real_bundle, real_pre = ScmaServer.bundle, ScmaClient.precompute_mask
    ended = []

    def bundle(self, i):
        if i == 6:
            raise RuntimeError("server bug at client 6")
        return real_bundle(self, i)

    def precompute_mask(self, delta_nonzeros=0):
        if self.client_id == 0:
            raise RuntimeError("bug in client 0's mask")
        threading.Event().wait(0.05)
        real_pre(self, delta_nonzeros)
        ended.append(self.client_id)
    monkeypatch.setattr(ScmaServer, "bundle", bundle)
    monkeypatch.setattr(ScmaClient, "precompute_mask", precompute_mask)
    server, roles, _ = _federation(10, seed=13)
    with CountingPool(2) as ex:
        with pytest.raises(RuntimeError, match="server bug at client 6"):
            RoundTrip(server, roles).share(executor=ex)
        done = list(ended)
        ex.shutdown(wait=True)
    assert ended == done                     # nothing ran after share raised
    assert set(done) <= {1, 2, 3, 4, 5}      # only clients whose shares arrived
