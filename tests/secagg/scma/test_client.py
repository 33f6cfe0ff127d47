"""Tests of ScmaClient (pyfkm.secagg.scma._client): data checks, capacity,
client-side round violations, precomputed masks and changed bins.  The
oracles are described in tests/_helpers/scma.py."""
from collections import Counter

import numpy as np
import pytest

from pyfkm.exceptions import InvalidInputError
from pyfkm.secagg import CapacityError, InputRequest, ProtocolError, RoundMessage, UnmaskRequest
from pyfkm.secagg.scma._params import delta_params
from _helpers.scma import (P, bad_data, as_ints, assert_result, distinct_bins, finish,
                           index_encoding, make_params, make_run, play_round, share_round, unmask,
                           wire)


@pytest.fixture
def small_run():
    params = make_params(3, 7, 4)       # index mode, 343 bins
    server, clients = make_run(params, [0, 1, 2])
    return params, server, clients


def _invalid_client_inputs(d, B):
    good = np.array([[0, 1, 2]], dtype=np.int64)
    return [
        (np.array([[0, 1, B]]), np.array([1])),            # coordinate = B
        (np.array([[0, -1, 2]]), np.array([1])),           # negative coordinate
        (np.array([[0, 1]]), np.array([1])),               # wrong width
        (np.array([[0, 1, 2, 3]]), np.array([1])),         # wrong width
        (np.array([0, 1, 2]), np.array([1])),              # 1-D bins
        (np.zeros((1, 1, 3), dtype=np.int64), np.array([1])),  # 3-D bins
        (np.array([[0.5, 1, 2]]), np.array([1])),          # non-integer bins
        (good, np.array([0])),                             # zero count
        (good, np.array([-2])),                            # negative count
        (good, np.array([1, 1])),                          # length mismatch
        (good, np.array([[1]])),                           # 2-D counts
        (good, np.array([1.5])),                           # non-integer count
        (np.array([[0, 1, 2], [3, 4, 5]]), np.array([1])),  # length mismatch
    ]


def test_set_data_invalid_raises_and_keeps_previous_data(small_run):
    params, server, clients = small_run
    data = {0: (np.array([[1, 2, 3], [6, 6, 6]]), np.array([2, 5])),
            1: (np.array([[1, 2, 3]]), np.array([1])),
            2: (np.zeros((0, 3), dtype=np.int64), np.zeros(0, dtype=np.int64))}
    for i, (b, q) in data.items():
        clients[i].set_data(b, q)
    for bins, counts in _invalid_client_inputs(3, 7):
        with pytest.raises(InvalidInputError):
            clients[0].set_data(bins, counts)
    res = play_round(server, clients).result
    assert_result(res, data.values(), 3)


def test_set_data_capacity(small_run):
    params, server, clients = small_run
    # M = 4 = max_client_nonzeros: 5 distinct bins are too many for one client
    five = np.array([[0, 0, k] for k in range(5)])
    with pytest.raises(CapacityError):
        clients[0].set_data(five, np.ones(5, dtype=np.int64))
    with pytest.raises(CapacityError):                    # count >= p
        clients[0].set_data(five[:1], np.array([P], dtype=np.int64))
    with pytest.raises(InvalidInputError):                # far beyond 64 bits
        clients[0].set_data(five[:1], np.array([2**80], dtype=object))
    # exactly M bins is fine
    clients[0].set_data(five[:4], np.ones(4, dtype=np.int64))


def test_duplicate_bins_within_a_client_are_merged_or_rejected():
    # The contract does not say; either reading is acceptable, a wrong sum is not.
    for mode in ("index", "hashed"):
        params = make_params(3, 7, 4, mode=mode)
        server, clients = make_run(params, [0, 1])
        dup = (np.array([[1, 2, 3], [1, 2, 3], [0, 0, 0]]), np.array([2, 5, 1]))
        other = (np.array([[1, 2, 3]]), np.array([1]))
        try:
            clients[0].set_data(*dup)
        except InvalidInputError:
            continue
        clients[1].set_data(*other)
        assert_result(play_round(server, clients).result, [dup, other], 3)


def test_client_round_violations():
    rng = np.random.default_rng(12)
    params = make_params(3, 7, 8)
    server, clients = make_run(params, [0, 1, 2])       # threshold 2
    data = bad_data(rng)[:3]
    for i, dat in zip([0, 1, 2], data):
        clients[i].set_data(*dat)
    run, other_run = params.run_id, bytes(b ^ 1 for b in params.run_id)
    rm = wire(server.start_round())
    first = clients[0].share_keys(rm)
    for bad in [
        rm,                                                        # same round again
        RoundMessage(run, rm.round, (0, 1)),                       # same number, other set
        RoundMessage(run, rm.round + 7, (1, 2)),                   # client not listed
        RoundMessage(other_run, rm.round + 8, (0, 1, 2)),          # wrong run
        RoundMessage(run, rm.round + 9, (0, 1, 5)),                # outside the roster
        RoundMessage(run, rm.round + 10, (0,)),                    # below the threshold
        RoundMessage(run, rm.round + 11, (0, 1, 2), 3, rm.round),  # sizes come later
        InputRequest(run, rm.round + 12),                          # not a RoundMessage
    ]:
        with pytest.raises(ProtocolError):
            clients[0].share_keys(bad)
    with pytest.raises(ProtocolError):           # no shares received yet
        clients[0].respond(InputRequest(run, rm.round))
    with pytest.raises(ProtocolError):
        clients[0].precompute_mask()
    with pytest.raises(ProtocolError):
        clients[0].mask(rm.round)
    # the first answer is still the valid one
    server.receive_shares(wire(first))
    with pytest.raises(ProtocolError):           # shared twice
        server.receive_shares(wire(first))
    for i in (1, 2):
        server.receive_shares(wire(clients[i].share_keys(rm)))
    bundles = {i: wire(server.bundle(i)) for i in (0, 1, 2)}
    with pytest.raises(ProtocolError):           # another client's bundle
        clients[0].receive_shares(bundles[1])
    for i in (0, 1, 2):
        clients[i].receive_shares(bundles[i])
    with pytest.raises(ProtocolError):           # the same bundle twice
        clients[0].receive_shares(bundles[0])
    req = wire(server.request_inputs())
    with pytest.raises(ProtocolError):           # an input request of another round
        clients[0].respond(InputRequest(run, rm.round + 1))
    msgs = [wire(clients[i].respond(req)) for i in (0, 1, 2)]
    with pytest.raises(ProtocolError):           # answered once per round
        clients[0].respond(req)
    server.receive_many([m.to_bytes() for m in msgs])
    ur = wire(server.unmask_request())
    with pytest.raises(ProtocolError):           # an unmask request of another round
        clients[0].unmask(UnmaskRequest(run, rm.round + 1, (0, 1, 2)))
    for i in ur.survivors:
        server.receive_unmask(wire(clients[i].unmask(ur)))
    res = server.finish_round()
    assert_result(res, data, 3)
    with pytest.raises(ProtocolError):           # the round is over for the client
        clients[0].unmask(ur)


def test_mask_prefix_and_precomputed_mask():
    # mask(round, n) is the first n words of every longer mask of the round
    # (one stream per key), and a mask precomputed after receive_shares --
    # for a full round or a difference round -- is the one respond() adds:
    # payload - mask(round, W) = the encoding (oracle (b)).
    params = make_params(3, 7, 5, mode="index")
    server, clients = make_run(params, [0, 1, 2])
    data = {i: (np.array([[i, 1, 2]]), np.array([i + 1])) for i in range(3)}
    for i in range(3):
        clients[i].set_data(*data[i])
    p, W = params.modulus, params.message_words
    rm = share_round(server, clients)
    long = as_ints(clients[0].mask(rm.round, 3 * W))
    for n in (0, 1, 2, W - 1, W, 2 * W + 5):
        assert as_ints(clients[0].mask(rm.round, n)) == long[:n]
    assert as_ints(clients[0].mask(rm.round)) == long[:W]
    assert clients[0].mask(rm.round, 0).shape == (0,)
    with pytest.raises(ProtocolError):           # not the client's open round
        clients[0].mask(rm.round + 1)
    masks = {i: as_ints(clients[i].mask(rm.round)) for i in range(3)}
    for i in range(3):
        clients[i].precompute_mask()
    req = wire(server.request_inputs())
    msgs = [wire(clients[i].respond(req)) for i in range(3)]
    for m in msgs:
        assert unmask(m.payload, masks[m.sender], p) == index_encoding(*data[m.sender], params)
        server.receive(m)
    assert_result(finish(server, clients), data.values(), 3)
    # a difference round: a mask precomputed for M changed bins serves the
    # round's shorter message of 2 (its prefix)
    data[1] = (np.array([[1, 1, 2], [4, 4, 4]]), np.array([2, 1]))
    clients[1].set_data(*data[1])
    rm = share_round(server, clients)
    dp = delta_params(params, 2)
    masks = {i: as_ints(clients[i].mask(rm.round, dp.message_words)) for i in range(3)}
    for i in range(3):
        clients[i].precompute_mask(delta_nonzeros=params.max_nonzeros)
        assert clients[i]._mask_cache[1].size == delta_params(params, 5).message_words
    req = wire(server.request_inputs(2))
    for i in range(3):
        m = wire(clients[i].respond(req))
        assert m.payload.size == dp.message_words
        change = unmask(m.payload, masks[i], p)
        assert (i == 1) == any(change)           # only client 1 changed
        assert clients[i]._mask_cache is None    # a mask is used once
        server.receive(m)
    assert_result(finish(server, clients), data.values(), 3)
    with pytest.raises(ProtocolError):           # no open round with shares
        clients[0].precompute_mask()


def test_changed_bins_and_precomputed_masks_serve_shorter_messages():
    # changed_bins counts the bins whose count differs from the server's last
    # decoded round (oracle: a Counter difference); a mask precomputed for
    # the longest difference message (M bins) serves the round's shorter
    # one: payload - mask(round, W') is 0 for the unchanged clients and
    # decodes to the change in the sum.
    d, B, M = 4, 9, 20
    params = make_params(d, B, M, mode="hashed")
    pool = distinct_bins(np.random.default_rng(75), 8, d, B)
    server, clients = make_run(params, [0, 1, 2])
    data = {i: (pool[2 * i: 2 * i + 2], np.array([2, 3])) for i in range(3)}
    for i in range(3):
        clients[i].set_data(*data[i])
    play_round(server, clients)
    new = (np.vstack([pool[0:1], pool[6:8]]), np.array([1, 5, 1]))  # 0: 2 -> 1, 1 leaves, 6, 7 new
    old = Counter({tuple(pool[0]): 2, tuple(pool[1]): 3})
    now = Counter({tuple(b): q for b, q in zip(new[0].tolist(), new[1].tolist())})
    want = sum(1 for b in set(old) | set(now) if old[b] != now[b])
    assert want == 4
    data[0] = new
    clients[0].set_data(*new)
    base = server.last_decoded[0]
    assert clients[0].changed_bins(base) == want
    assert clients[1].changed_bins(base) == 0
    rm = share_round(server, clients)
    W = delta_params(params, want).message_words
    masks = {i: as_ints(clients[i].mask(rm.round, W)) for i in range(3)}
    for i in range(3):
        clients[i].precompute_mask(delta_nonzeros=M)
    req = wire(server.request_inputs(want))
    for i in range(3):
        msg = wire(clients[i].respond(req))
        assert msg.payload.size == W
        assert any(unmask(msg.payload, masks[i], params.modulus)) == (i == 0)
        server.receive(msg)
    assert_result(finish(server, clients), data.values(), d)
    with pytest.raises(ProtocolError):
        clients[0].changed_bins(base_round=base - 1)          # before any summed round


def test_changed_bins_counts_from_the_servers_base_after_an_abandoned_round():
    # Found by review: counting from the client's last *answered* round
    # undersized the next difference round after an abandoned round.
    params = make_params(2, 8, 8, mode="index")
    server, clients = make_run(params, [0, 1, 2])
    pool = distinct_bins(np.random.default_rng(78), 9, 2, 8)
    for i in range(3):
        clients[i].set_data(pool[2 * i: 2 * i + 2], [1, 1])
    play_round(server, clients)
    base = server.last_decoded[0]
    clients[0].set_data(pool[[0, 1, 6]], [1, 1, 1])
    clients[1].set_data(pool[[2, 3, 7]], [1, 1, 1])
    share_round(server, clients)                       # answered, then abandoned
    req = wire(server.request_inputs())
    for i in range(3):
        clients[i].respond(req)
    assert server.last_decoded[0] == base
    m = sum(clients[i].changed_bins(base) for i in range(3))
    assert m == 2
    res = play_round(server, clients, delta_nonzeros=m).result
    assert_result(res, [(pool[[0, 1, 6]], [1, 1, 1]), (pool[[2, 3, 7]], [1, 1, 1]),
                        (pool[4:6], [1, 1])], 2)
