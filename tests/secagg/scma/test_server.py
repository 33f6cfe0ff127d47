"""Tests of the SCMA server (pyfkm.secagg.scma._server): phase and round
violations leave its state unchanged, round numbers, batches, unlearning and
difference rounds.  The oracles are described in tests/_helpers/scma.py."""
import dataclasses
import struct

import numpy as np
import pytest

from pyfkm.exceptions import InvalidInputError
from pyfkm.secagg import (CapacityError, DecodeError, InputRequest, MessageFormatError,
                          ProtocolError, RoundMessage, ScmaClient, ScmaServer, SyndromeMessage)
from pyfkm.secagg.scma._params import delta_params
from _helpers.scma import (P, P31, bad_data, assert_aggregate, assert_result, distinct_bins,
                           finish, make_params, make_run, plain_sum, play_round, share_round, wire)


def test_key_phase_violations():
    params = make_params(3, 7, 4)
    server = ScmaServer(params)
    a, b = ScmaClient(0), ScmaClient(1)
    ka, kb = a.key_message(params.run_id), b.key_message(params.run_id)
    assert isinstance(ka.public_key, bytes) and len(ka.public_key) == 32
    assert ka.public_key != kb.public_key
    with pytest.raises(ProtocolError):          # a client joins a run id once
        a.key_message(params.run_id)
    other_run = ScmaClient(2).key_message(bytes(x ^ 0xFF for x in params.run_id))
    with pytest.raises(ProtocolError):
        server.receive_key(other_run)
    server.receive_key(wire(ka))
    with pytest.raises(ProtocolError):
        server.receive_key(wire(ka))
    server.receive_key(wire(kb))
    roster = wire(server.roster())
    assert roster.run_id == params.run_id
    assert roster.params == params
    assert sorted(roster.client_ids) == [0, 1]
    keys = dict(zip(roster.client_ids, roster.public_keys))
    assert keys == {0: ka.public_key, 1: kb.public_key}
    assert roster.threshold == 2 and roster.degree == 0      # a strict majority of 2
    assert len(roster.server_key) == 32 and roster.server_key not in keys.values()
    with pytest.raises(ProtocolError):          # the roster is closed
        server.receive_key(ScmaClient(5).key_message(params.run_id))
    for bad in (0, 3, 1.5, True):               # threshold outside [1, clients]
        s = ScmaServer(params, threshold=bad)
        s.receive_key(ScmaClient(0).key_message(params.run_id))
        s.receive_key(ScmaClient(1).key_message(params.run_id))
        with pytest.raises((InvalidInputError, ProtocolError)):
            s.roster()
    for bad in (-2, 3, 2.0, True):
        with pytest.raises(InvalidInputError):
            ScmaServer(params, degree=bad)
    with pytest.raises(InvalidInputError):
        ScmaServer("params")
    for bad in (-1, 2**32 - 1, 1.0, True, "0"):
        with pytest.raises(InvalidInputError):
            ScmaClient(bad)


def test_roster_not_ready():
    params = make_params(3, 7, 4)
    server = ScmaServer(params)
    with pytest.raises(ProtocolError):           # no keys, no roster
        server.start_round()
    with pytest.raises(ProtocolError):
        server.roster()
    client = ScmaClient(0)
    server.receive_key(client.key_message(params.run_id))
    with pytest.raises(ProtocolError):           # client has no roster yet
        client.set_data(np.array([[0, 0, 1]]), np.array([1]))
    with pytest.raises(ProtocolError):
        client.share_keys(RoundMessage(run_id=params.run_id, round=1, participants=(0,)))
    with pytest.raises(ProtocolError):
        client.respond(InputRequest(run_id=params.run_id, round=1))


def test_round_violations_leave_state_unchanged():
    rng = np.random.default_rng(11)
    params = make_params(3, 7, 8)
    ids = [0, 1, 2, 3]
    server, clients = make_run(params, ids)          # threshold 3
    data = dict(zip(ids, bad_data(rng)))
    for i in ids:
        clients[i].set_data(*data[i])
    W = params.message_words

    with pytest.raises(ProtocolError):           # unknown participant
        server.start_round(participants=(0, 1, 99))
    with pytest.raises(ProtocolError):           # below the threshold
        server.start_round(participants=(0, 1))
    with pytest.raises(ProtocolError):           # no round open
        server.request_inputs()

    rm = share_round(server, clients, (0, 1, 2))
    assert rm.participants == (0, 1, 2) and rm.run_id == params.run_id
    req = wire(server.request_inputs())
    msgs = {i: wire(clients[i].respond(req)) for i in (0, 1, 2)}
    with pytest.raises(ProtocolError):           # a non-participant has no open round
        clients[3].respond(req)

    def syn(client=0, **kw):
        # the field checks come before the tag's: any tag does
        fields = dict(run_id=params.run_id, round=rm.round, sender=client, modulus=P,
                      payload=msgs[0].payload, tag=msgs[client].tag if client < 3 else
                      bytes(16))
        fields.update(kw)
        return lambda: SyndromeMessage(**fields)

    # factories: a constructor that already refuses the message is fine too
    bad = [
        syn(client=3),                                                # non-participant
        lambda: SyndromeMessage(params.run_id, rm.round, 99, P, np.zeros(W, np.uint64)),
        syn(round=rm.round + 1),                                      # wrong round
        syn(round=rm.round + 1000),                                   # wrong round
        syn(run_id=bytes(x ^ 0xFF for x in params.run_id)),           # wrong run
        syn(modulus=P31, payload=np.zeros(W, np.uint64)),             # wrong modulus
        syn(payload=np.zeros(W - 1, dtype=np.uint64)),                # wrong length
        syn(payload=np.zeros(W + 1, dtype=np.uint64)),                # wrong length
        syn(payload=np.full(W, P, dtype=np.uint64)),                  # values >= p
        lambda: dataclasses.replace(msgs[0], tag=bytes(16)),         # no valid tag
        lambda: dataclasses.replace(msgs[1], sender=0),              # another's message
        lambda: dataclasses.replace(msgs[0], payload=msgs[1].payload),  # other content
    ]

    def rejected(make):
        try:
            m = make()
        except (ProtocolError, InvalidInputError):
            return True          # the constructor already refuses it
        with pytest.raises(ProtocolError):
            server.receive(m)
        return True

    for make in bad:
        assert rejected(make)
    server.receive(msgs[0])
    with pytest.raises(ProtocolError):           # duplicate
        server.receive(msgs[0])
    server.receive(msgs[1])
    with pytest.raises(ProtocolError):           # no unmask request yet
        server.finish_round()
    with pytest.raises(ProtocolError):           # 2 inputs < threshold 3
        server.unmask_request()
    with pytest.raises(ProtocolError):           # still missing, still a ProtocolError
        server.unmask_request()
    for make in bad:                              # nothing of the above was recorded
        assert rejected(make)
    server.receive(msgs[2])
    res = finish(server, clients)
    assert_result(res, [data[i] for i in (0, 1, 2)], 3)
    assert res.report.n_participants == 3 and res.survivors == (0, 1, 2)
    assert res.dropped == () and res.report.dropped == ()

    # late message of a finished round, and a new round (new data) still works
    with pytest.raises(ProtocolError):
        server.receive(msgs[2])
    data = dict(zip(ids, bad_data(rng)))
    for i in ids:
        clients[i].set_data(*data[i])
    res, rm2, _ = play_round(server, clients)
    assert rm2.round > rm.round
    assert_result(res, data.values(), 3)


def test_server_round_numbers_strictly_increase():
    params = make_params(3, 7, 6)
    server, clients = make_run(params, [0, 1, 2])
    rounds = []
    for it in range(4):
        for i in range(3):                 # new data every round
            clients[i].set_data(np.array([[i, it, 0]]), np.array([it + 1]))
        parts = None if it % 2 else (0, 2)
        res, rm, _ = play_round(server, clients, parts)
        assert res.report.round == rm.round
        rounds.append(rm.round)
    assert all(a < b for a, b in zip(rounds, rounds[1:]))
    assert rounds[0] >= 1


# ---------------------------------------------------------------------------
# unlearning: incremental decode

@pytest.mark.parametrize("d, B, p, mode", [(3, 7, P, "index"), (10, 173, P, "hashed"),
                                           (3, 2000, P31, "hashed")])
def test_unlearning_rounds(d, B, p, mode):
    rng = np.random.default_rng(61)
    M = 12
    params = make_params(d, B, M, modulus=p, mode=mode)
    ids = [0, 1, 2, 3]
    server, clients = make_run(params, ids)
    pool = distinct_bins(rng, 10, d, B)
    data = {
        0: (pool[[0, 1, 2, 3]], np.array([3, 1, 2, 5])),
        1: (pool[[1, 2, 4]], np.array([2, 2, 1])),
        2: (np.zeros((0, d), dtype=np.int64), np.zeros(0, dtype=np.int64)),
        3: (pool[[5, 6]], np.array([4, 1])),
    }

    def run(incremental=True):
        for i in ids:
            clients[i].set_data(*data[i])
        res = play_round(server, clients, incremental=incremental, rng=rng).result
        assert_result(res, data.values(), d)
        return res.report

    assert run().incremental is False                 # nothing to start from
    # one count decreased (bin 0 only at client 0: 3 -> 2)
    data[0] = (pool[[0, 1, 2, 3]], np.array([2, 1, 2, 5]))
    assert run().incremental is True
    # a shared bin removed from one client (aggregate support unchanged)
    data[0] = (pool[[0, 2, 3]], np.array([2, 2, 5]))
    assert run().incremental is True
    # a bin removed from the aggregate (bin 3 only at client 0)
    data[0] = (pool[[0, 2]], np.array([2, 2]))
    assert run().incremental is True
    # a whole client emptied
    data[3] = (np.zeros((0, d), dtype=np.int64), np.zeros(0, dtype=np.int64))
    assert run().incremental is True
    # a new bin: decoded from the difference too
    data[2] = (pool[[7]], np.array([1]))
    assert run().incremental is True
    # more than M bins change at once (the old support leaves, M new bins
    # come): the difference has more than M bins -> full decode
    before = {i: data[i] for i in ids}
    fresh = distinct_bins(np.random.default_rng(62), 2 * M, d, B)
    old_rows = {tuple(r) for i in ids for r in np.asarray(data[i][0]).tolist()}
    fresh = np.array([r for r in fresh.tolist() if tuple(r) not in old_rows][:M])
    assert fresh.shape[0] == M
    for i in ids:
        data[i] = (np.zeros((0, d), dtype=np.int64), np.zeros(0, dtype=np.int64))
    data[0] = (fresh, np.ones(M, dtype=np.int64))
    assert run().incremental is False
    data.update(before)
    assert run().incremental is False
    # unchanged data, incremental path refused by the caller
    assert run(incremental=False).incremental is False
    # unchanged data again: incremental works from the last support
    assert run().incremental is True
    # a count increased and a bin moved: must still be right
    data[1] = (pool[[1, 8, 4]], np.array([2, 2, 9]))
    run()


# ---------------------------------------------------------------------------
# difference rounds

@pytest.mark.parametrize("d, B, p, mode", [(3, 7, P, "index"), (10, 173, P, "hashed"),
                                           (3, 2000, P31, "hashed")])
def test_difference_rounds_decode_the_same_aggregate_as_full_rounds(d, B, p, mode):
    # Oracle: plain_sum of the clients' data.  A stream of random changes
    # (counts up and down, bins removed, new bins, one or two clients at a
    # time), each aggregated by a difference round sized for the change;
    # every fifth step a full round on the same data checks the state too.
    rng = np.random.default_rng(71)
    M = 40
    params = make_params(d, B, M, modulus=p, mode=mode)
    ids = [0, 1, 2, 3, 4]
    server, clients = make_run(params, ids)
    pool = distinct_bins(rng, 30, d, B)
    data = {i: (pool[rng.choice(30, 4, replace=False)], rng.integers(1, 6, 4)) for i in ids}
    for i in ids:
        clients[i].set_data(*data[i])
    play_round(server, clients)
    for step in range(20):
        changed = rng.choice(ids, size=int(rng.integers(1, 3)), replace=False)
        for i in changed:
            b, q = data[i]
            k = int(rng.integers(0, 4))
            if k == 0 and len(q) > 0:          # one count down (a removal)
                q = q.copy()
                j = int(rng.integers(len(q)))
                q[j] -= 1
                b, q = b[q > 0], q[q > 0]
            elif k == 1:                        # a new or repeated bin
                b = np.vstack([b, pool[[int(rng.integers(30))]]])
                q = np.append(q, int(rng.integers(1, 4)))
            elif k == 2 and len(q) > 0:         # a bin leaves
                b, q = b[1:], q[1:]
            else:                               # everything replaced
                b, q = pool[rng.choice(30, 3, replace=False)], rng.integers(1, 6, 3)
            data[i] = (b, q)
            clients[i].set_data(b, q)
        dn = 2 * 6 * len(changed)
        res, _, msgs = play_round(server, clients, delta_nonzeros=dn, rng=rng)
        want = plain_sum(data.values(), d)
        assert_aggregate(res.bins, res.counts, want, d)
        assert res.report.incremental is True
        words = delta_params(params, dn).message_words
        assert res.report.message_words == words
        if mode == "hashed":
            assert words < params.message_words
        assert all(m.payload.size == words for m in msgs)
        if step % 10 == 9:
            full = play_round(server, clients, incremental=False).result
            assert_aggregate(full.bins, full.counts, want, d)
        elif step % 5 == 4:
            # a full round decoded against the state the difference rounds
            # left (whose message is recomputed from its support)
            full = play_round(server, clients, incremental=True).result
            assert_aggregate(full.bins, full.counts, want, d)
            assert full.report.incremental is True


def test_difference_round_violations():
    d, B, M = 3, 7, 10
    params = make_params(d, B, M, mode="index")
    server, clients = make_run(params, [0, 1, 2])
    run = params.run_id
    pool = distinct_bins(np.random.default_rng(72), 9, d, B)
    for i in range(3):
        clients[i].set_data(pool[3 * i: 3 * i + 3], [1, 2, 3])
    share_round(server, clients)
    with pytest.raises(ProtocolError, match="decoded round"):
        server.request_inputs(delta_nonzeros=2)             # nothing decoded yet
    base = play_round(server, clients).round.round        # round 1 was abandoned
    share_round(server, clients)
    for bad in (-1, M + 1, 2.0, True):
        with pytest.raises(ProtocolError):
            server.request_inputs(delta_nonzeros=bad)
    # a client whose change exceeds delta_nonzeros refuses; so does a client
    # asked for a base round before any round it was summed in (its base is
    # the latest round at or before base_round that summed it)
    clients[0].set_data(pool[6:], [1, 1, 1])             # 6 bins change
    req = wire(server.request_inputs(delta_nonzeros=5))
    assert req.base_round == server.last_decoded[0] == base
    with pytest.raises(CapacityError):
        clients[0].respond(req)
    for i in (1, 2):
        clients[i].respond(req)
    rm = share_round(server, clients)
    assert base > 1
    with pytest.raises(ProtocolError, match="not summed"):
        clients[1].respond(InputRequest(run, rm.round, 5, base - 1))
    with pytest.raises(ProtocolError, match="not summed"):
        clients[1].changed_bins(base - 1)
    assert clients[1].changed_bins(rm.round - 1) == 0     # the abandoned round: base
    # changes that fit each client but not together: the server's decode
    # fails, its state stays, and a full round still decodes
    clients[0].set_data(pool[:3], [1, 2, 4])              # 1 bin changes
    clients[1].set_data(pool[3:6], [2, 3, 4])             # 3 bins change
    state = server._state
    with pytest.raises(DecodeError):
        play_round(server, clients, delta_nonzeros=3)
    assert server._state is state and server.last_decoded[0] == base
    res = play_round(server, clients).result
    assert_result(res, [(pool[:3], [1, 2, 4]), (pool[3:6], [2, 3, 4]), (pool[6:], [1, 2, 3])], d)
    # a message of the full size in a difference round is refused
    rm = share_round(server, clients)
    server.request_inputs(delta_nonzeros=2)
    full = SyndromeMessage(run, rm.round, 0, params.modulus,
                           np.zeros(params.message_words, dtype=np.uint64))
    with pytest.raises(ProtocolError, match="size"):
        server.receive(full)


def test_round_message_difference_fields():
    run = bytes(16)
    msg = RoundMessage(run, 5, (0, 1), 7, 4)
    assert RoundMessage.from_bytes(msg.to_bytes()) == msg
    assert RoundMessage(run, 5, (0, 1)).delta_nonzeros == 0
    req = InputRequest(run, 5, 7, 4)
    assert InputRequest.from_bytes(req.to_bytes()) == req
    assert InputRequest(run, 5).delta_nonzeros == 0
    for dn, br in [(7, 0), (0, 4), (7, 5), (7, 6), (-1, 4), (7, -1), (2 ** 32, 4), (True, 4),
                   (1.0, 4)]:
        with pytest.raises(InvalidInputError):
            RoundMessage(run, 5, (0, 1), dn, br)
        with pytest.raises(InvalidInputError):
            InputRequest(run, 5, dn, br)


# ---------------------------------------------------------------------------
# receive_many: a batch of wire messages, all or nothing

def _round_answers(mode="hashed"):
    params = make_params(4, 11, 12, mode=mode)
    ids = [2, 3, 5, 8]
    server, clients = make_run(params, ids)
    rng = np.random.default_rng(5)
    data = {i: (distinct_bins(rng, 3, 4, 11), rng.integers(1, 9, 3)) for i in ids}
    for i in ids:
        clients[i].set_data(*data[i])
    share_round(server, clients)
    req = wire(server.request_inputs())
    outs = [clients[i].respond(req).to_bytes() for i in ids]
    return params, server, clients, outs, plain_sum(data.values(), 4)


@pytest.mark.parametrize("mode", ["index", "hashed"])
def test_receive_many_decodes_like_receive(mode):
    # Oracle: plain_sum of the clients' data; the batch in any order, and
    # split over calls, gives it.
    _, server, clients, outs, want = _round_answers(mode=mode)
    server.receive_many(outs[::-1])
    res = finish(server, clients)
    assert_aggregate(res.bins, res.counts, want, 4)
    _, server, clients, outs, want = _round_answers(mode=mode)
    server.receive_many([])                         # nothing: no change
    server.receive_many(outs[:1])
    server.receive_many([bytearray(outs[1])])       # not bytes: taken one by one
    server.receive_many(outs[2:])
    res = finish(server, clients)
    assert_aggregate(res.bins, res.counts, want, 4)


def _overwrite(data, offset, value):
    b = bytearray(data)
    b[offset:offset + len(value)] = value
    return bytes(b)


@pytest.mark.parametrize("case, error", [
    ("magic", MessageFormatError), ("version", MessageFormatError),
    ("reserved", MessageFormatError), ("truncated", MessageFormatError),
    ("payload >= p", MessageFormatError), ("round", ProtocolError),
    ("run", ProtocolError), ("sender", ProtocolError), ("duplicate", ProtocolError),
    ("already received", ProtocolError), ("modulus", ProtocolError),
    ("tag", ProtocolError), ("payload bit", ProtocolError), ("other sender", ProtocolError)])
def test_receive_many_rejects_the_batch_and_changes_nothing(case, error):
    params, server, clients, outs, want = _round_answers()
    bad = list(outs)
    first = None
    if case == "magic":
        bad[2] = _overwrite(outs[2], 0, b"XFKM")
    elif case == "version":
        bad[2] = _overwrite(outs[2], 4, b"\x09")
    elif case == "reserved":
        bad[2] = _overwrite(outs[2], 6, b"\x01")
    elif case == "truncated":
        bad[2] = outs[2][:-8]
    elif case == "payload >= p":
        bad[2] = _overwrite(outs[2], 48, struct.pack("<Q", params.modulus))
    elif case == "round":
        bad[2] = _overwrite(outs[2], 24, struct.pack("<Q", 7))
    elif case == "run":
        bad[2] = _overwrite(outs[2], 8, bytes(16))
    elif case == "sender":
        bad[2] = _overwrite(outs[2], 32, struct.pack("<I", 4))      # not a participant
    elif case == "other sender":      # another participant's id, its message left out
        bad = outs[:2] + [_overwrite(outs[2], 32, struct.pack("<I", 8))]
    elif case == "duplicate":
        bad[2] = outs[1]
    elif case == "already received":
        first = outs[1]
    elif case == "modulus":
        bad[2] = _overwrite(outs[2], 36, struct.pack("<Q", 13))
    elif case == "tag":
        bad[2] = outs[2][:-1] + bytes([outs[2][-1] ^ 1])
    elif case == "payload bit":
        bad[2] = _overwrite(outs[2], 49, bytes([outs[2][49] ^ 1]))
    if first is not None:
        server.receive_many([first])
    with pytest.raises(error):
        server.receive_many(bad)
    # nothing of the rejected batch was taken: the good messages still go in
    rest = [o for o in outs if o is not first]
    server.receive_many(rest)
    res = finish(server, clients)
    assert_aggregate(res.bins, res.counts, want, 4)
