"""Microbenchmarks of SCMA secure aggregation (:mod:`pyfkm.secagg`) through the real roles.

Run with ``python -m pytest benchmarks/bench_secagg.py --benchmark-only``
(add ``--benchmark-columns=median,iqr,rounds`` for a compact table), or with
``--benchmark-disable`` to run every case once as a smoke test.  The paper-size
comparison (L = 100 clients, FLINT) is ``compare_scma.py``.

Workload: the data of ``compare_scma.py`` (``make_clients``): B = 174 bins per
dimension (gamma = 1/sqrt(30000)), clients with K distinct bins, half from a
shared cluster pool, positive counts; default prime, hashed mode (B**d > p).

A round is the dropout-tolerant protocol of :mod:`pyfkm.secagg`: key shares
(``start_round`` -> ``share_keys`` -> ``receive_shares`` -> ``bundle`` ->
``receive_shares``), masked inputs (``request_inputs`` -> ``respond``) and
unmasking (``unmask_request`` -> ``unmask`` -> ``receive_unmask`` ->
``finish_round``); every message goes through its bytes.  Keys come from the
operating system (no seed reaches them), so the runs are not reproducible bit
for bit; the data are (``make_clients`` with a fixed seed).  What is not timed
-- the other steps of a round -- runs in the ``setup`` of
``benchmark.pedantic``: a client answers each round once, so every timed call
gets a round of its own.  Groups:

* ``encode``: the client's online cost of a full round at K = 10 bins,
  d = 784, M = 1000 (2000 syndromes + ceil(784 / 8) = 98 coordinate rows of
  1000, plus the module's check row).  ``set_data`` only validates now (the
  encoding is made by the first full round's ``respond``, once per data), so
  the timed call is ``set_data`` + ``respond`` with the round's mask
  precomputed offline (``precompute_mask``): validation, encoding, one
  addition mod p and the message tag.  (Before the protocol had key shares,
  this group timed ``set_data``, which then encoded.)
* ``respond``: ``ScmaClient.respond`` of one client of L = 20 (d = 10,
  M = 1000: 5000 words), with its mask computed live (its self stream and
  19 pair streams of ChaCha20, added to the cached encoding: what the old
  single-flight ``respond(RoundMessage)`` did, plus the self stream) and with
  the mask precomputed offline (one addition and the tag); and
  ``precompute_mask`` itself (the offline part).
* ``decode``: ``ScmaServer.finish_round`` at M = 1000, d = 10 (L = 20 clients
  with K = 50 bins), full (``incremental=False``), incremental after one
  client changed one count by 1 (``incremental=True``), and the same change
  sent as a difference round (``request_inputs(delta_nonzeros=1)``: the
  unlearning path, 2 + 3 words per message).  ``finish_round`` now also
  rebuilds the survivors' self-mask seeds from their shares and removes
  their self streams (20 ChaCha20 streams of the message's length) before it
  sums the 20 messages and decodes; the server's own timing of the decode
  alone, ``report.decode_seconds``, goes to ``extra_info``.  (The old file
  replayed recorded message bytes into a fresh server; messages are now
  bound to one server's roster and keys and a client answers a round once,
  so each timed call finishes a live round run in the setup.)
* ``message``: ``SyndromeMessage.to_bytes`` / ``from_bytes`` of 1000 words.

Every benchmark checks its result cheaply (decoded aggregate == plain sum of
the clients' vectors after the timed call's round is completed, message round
trip), so the file also passes under ``--benchmark-disable``.  Timings are
wall clock; on a busy machine add ``--benchmark-timer=time.process_time``.
"""
import numpy as np
import pytest
from compare_scma import bins_per_dim, make_clients, plain_sum

from pyfkm.field import DEFAULT_PRIME
from pyfkm.secagg import (InputRequest, RoundTrip, ScmaParams, SyndromeMessage, UnmaskMessage,
                          UnmaskRequest, setup_in_process)

pytestmark = pytest.mark.usefixtures("one_thread")

P = DEFAULT_PRIME
B = bins_per_dim(30000)      # 174
N_POINTS = 30000


# --------------------------------------------------------------------------- helpers

def _setup_run(K, L, d, seed):
    """Params, clients 0 .. L-1 (roster received, data set), server, data, plain sum."""
    rng = np.random.default_rng(seed)
    data, expected = make_clients(K, L, d, B, N_POINTS, rng)
    params = ScmaParams.create(d, B, K * L, max_client_nonzeros=K)
    server, clients = setup_in_process(params, L)
    for c, (bins, counts) in zip(clients, data):
        c.set_data(bins, counts)
    return params, clients, server, data, expected


def _share(server, clients):
    """Steps 1-2 of a new round for every client (the offline key shares)."""
    trip = RoundTrip(server, dict(enumerate(clients))).share()
    assert not trip.failed


def _request(server, delta_nonzeros=0):
    return InputRequest.from_bytes(server.request_inputs(delta_nonzeros).to_bytes())


def _inputs(server, clients, req, sent=None):
    """Step 3: every client's masked input (``sent``: client 0's, answered already)."""
    msgs = [] if sent is None else [sent.to_bytes()]
    msgs += [c.respond(req).to_bytes() for c in clients[len(msgs):]]
    server.receive_many(msgs)


def _unmask(server, clients):
    """Step 4 up to ``finish_round``: every survivor's revealed shares."""
    ureq = UnmaskRequest.from_bytes(server.unmask_request().to_bytes())
    for i in ureq.survivors:
        server.receive_unmask(UnmaskMessage.from_bytes(clients[i].unmask(ureq).to_bytes()))


def _round_to_finish(server, clients, delta_nonzeros=0):
    """A whole round but ``finish_round``."""
    _share(server, clients)
    _inputs(server, clients, _request(server, delta_nonzeros))
    _unmask(server, clients)


def _check(res, expected):
    assert np.array_equal(res.bins, expected[0])
    assert np.array_equal(res.counts, expected[1])


def _complete(server, clients, req, sent, expected):
    """Finish the round of a timed ``respond`` (client 0's message ``sent``) and check it."""
    _inputs(server, clients, req, sent)
    _unmask(server, clients)
    _check(server.finish_round(), expected)


# --------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def decode_run():
    """L = 20 clients, K = 50, d = 10, M = 1000: round 1 (data, full decode) and round 2
    (client 3 lowered one count by 1, incremental decode), checked on the live server.
    ``set(version)`` gives client 3 its data of round 1 (0) or round 2 (1)."""
    params, clients, server, data, expected1 = _setup_run(50, 20, 10, seed=7)
    _round_to_finish(server, clients)
    res = server.finish_round(incremental=False)
    _check(res, expected1)
    bins, counts = data[3]
    lowered = counts.copy()
    lowered[int(np.argmax(lowered))] -= 1      # a count >= 2: the bin stays
    data[3] = (bins, lowered)
    expected2 = plain_sum(data)
    versions = [((bins, counts), expected1), ((bins, lowered), expected2)]
    run = {"params": params, "clients": clients, "server": server, "version": 0}

    def set_version(v):
        (b, q), _ = versions[v]
        clients[3].set_data(b, q)
        run["version"] = v

    run["set"] = set_version
    run["expected"] = lambda: versions[run["version"]][1]
    set_version(1)
    _round_to_finish(server, clients)
    res = server.finish_round(incremental=True)
    _check(res, expected2)
    assert res.report.incremental
    return run


# --------------------------------------------------------------------------- client

def test_encode(benchmark):
    """set_data + respond (mask precomputed offline) of K = 10 bins at d = 784, M = 1000;
    checked by finishing the last timed round (a one-client run) and decoding it."""
    K, d, M = 10, 784, 1000
    benchmark.group = f"secagg encode K={K} d={d} M={M}"
    rng = np.random.default_rng(1)
    (bins, counts), = make_clients(K, 1, d, B, N_POINTS, rng)[0]
    params = ScmaParams.create(d, B, M, max_client_nonzeros=K)
    assert params.mode == "hashed" and params.n_payload_rows >= 98    # ceil(784 / 8)
    assert params.message_words == 2 * M + params.n_payload_rows * M
    server, clients = setup_in_process(params, 1)
    client = clients[0]
    client.set_data(bins, counts)

    def new_round():
        _share(server, clients)
        client.precompute_mask(0)
        return (_request(server),), {}

    def encode_respond(req):
        client.set_data(bins, counts)
        return client.respond(req)

    msg = benchmark.pedantic(encode_respond, setup=new_round, rounds=20, warmup_rounds=1)
    assert msg.payload.size == params.message_words
    _inputs(server, clients, None, msg)
    _unmask(server, clients)
    _check(server.finish_round(), plain_sum([(bins, counts)]))


@pytest.mark.parametrize("mask", ["live", "precomputed"])
def test_respond(benchmark, decode_run, mask):
    """respond of client 0 of L = 20 (5000 words); its mask computed in the call (self
    stream + 19 pair streams) or precomputed offline.  Checked by completing the last
    timed round: the decoded aggregate is the plain sum."""
    run = decode_run
    clients, server, params = run["clients"], run["server"], run["params"]
    benchmark.group = f"secagg respond L={len(clients)} words={params.message_words}"
    last = {}

    def new_round():
        _share(server, clients)
        if mask == "precomputed":
            clients[0].precompute_mask(0)
        last["req"] = _request(server)
        return (last["req"],), {}

    msg = benchmark.pedantic(clients[0].respond, setup=new_round, rounds=30, warmup_rounds=1)
    assert msg.sender == 0 and msg.payload.size == params.message_words
    _complete(server, clients, last["req"], msg, run["expected"]())


def test_precompute_mask(benchmark, decode_run):
    """precompute_mask(0) of client 0 of L = 20 (the offline part of respond)."""
    run = decode_run
    clients, server, params = run["clients"], run["server"], run["params"]
    benchmark.group = f"secagg respond L={len(clients)} words={params.message_words}"
    benchmark.pedantic(clients[0].precompute_mask, args=(0,),
                       setup=lambda: _share(server, clients), rounds=30, warmup_rounds=1)
    req = _request(server)
    _complete(server, clients, req, clients[0].respond(req), run["expected"]())


# --------------------------------------------------------------------------- server

class TestDecode:
    """finish_round at M = 1000, d = 10, L = 20 (self masks removed, 20 messages summed,
    decoded); each timed call finishes a live round run in the setup."""

    @staticmethod
    def _bench(benchmark, run, rounds, incremental=True, delta_nonzeros=0, toggle=False):
        benchmark.group = "secagg decode M=1000 d=10 L=20"
        server, clients = run["server"], run["clients"]
        decode_s = []

        def setup():
            if toggle:            # client 3 changes one count by 1 (down, then up again)
                run["set"](1 - run["version"])
            _round_to_finish(server, clients, delta_nonzeros)

        def finish():
            res = server.finish_round(incremental=incremental)
            decode_s.append(res.report.decode_seconds)
            return res

        res = benchmark.pedantic(finish, setup=setup, rounds=rounds, warmup_rounds=1)
        _check(res, run["expected"]())
        benchmark.extra_info["decode_seconds_median"] = float(np.median(decode_s))
        return res

    def test_full(self, benchmark, decode_run):
        res = self._bench(benchmark, decode_run, 10, incremental=False)
        assert not res.report.incremental

    def test_incremental(self, benchmark, decode_run):
        res = self._bench(benchmark, decode_run, 15, toggle=True)
        assert res.report.incremental

    def test_difference_round(self, benchmark, decode_run):
        res = self._bench(benchmark, decode_run, 15, delta_nonzeros=1, toggle=True)
        assert res.report.message_words < decode_run["params"].message_words


# --------------------------------------------------------------------------- wire format

class TestMessage:
    N_WORDS = 1000

    @pytest.fixture(scope="class")
    def message(self):
        payload = np.random.default_rng(5).integers(0, P, size=self.N_WORDS, dtype=np.uint64)
        return SyndromeMessage(bytes(range(16)), 3, 17, P, payload, tag=bytes(range(16, 32)))

    def test_to_bytes(self, benchmark, message):
        benchmark.group = f"secagg message {self.N_WORDS} words"
        data = benchmark(message.to_bytes)
        assert len(data) == SyndromeMessage.size(self.N_WORDS)
        tag = len(message.tag)           # the message ends with its tag
        assert data[-tag:] == message.tag
        assert np.array_equal(np.frombuffer(data[:-tag], dtype="<u8",
                                            offset=len(data) - tag - 8 * self.N_WORDS),
                              message.payload)

    def test_from_bytes(self, benchmark, message):
        benchmark.group = f"secagg message {self.N_WORDS} words"
        data = message.to_bytes()
        got = benchmark(SyndromeMessage.from_bytes, data)
        assert got == message
