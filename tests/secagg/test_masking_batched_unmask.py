"""The batched paths of the unmask step (issue 22) against the one-by-one ones.

* ``_shamir.reconstruct_many`` gives what ``reconstruct`` gives group by
  group, raises its error for the first failing group (a tampered extra
  share is still caught), whatever the abscissas the groups share;
* ``ScmaServer.receive_unmask_many`` accepts what ``receive_unmask`` accepts
  and refuses, with the same error, what it refuses (altered, replayed,
  re-addressed, incomplete or wrong-kind answers), keeping the answers before
  the refused one as the one-by-one path does;
* a parsed ``UnmaskMessage`` authenticates exactly the bytes the client
  tagged (its kept signed bytes equal a fresh serialization).

Expected values come from the one-by-one functions, which the rest of the
suite checks against independent oracles (sympy, fractions).
"""
import random
import struct

import numpy as np
import pytest

from pyfkm.secagg import MessageFormatError, ProtocolError, ScmaParams, UnmaskMessage
from pyfkm.secagg import _messages, _shamir
from pyfkm.secagg._framing import HEADER_BYTES, TAG_BYTES
from pyfkm.secagg._shamir import PRIME, reconstruct, reconstruct_many, share_to_bytes, split
from pyfkm.secagg.scma._driver import RoundTrip

from _helpers.scma import make_run, unmask_ready, wire

def _groups(rng, n_groups, t, extra, pool, m=1, as_bytes=True):
    """Random sharings: ``n_groups`` of ``m`` secrets, each over ``t + extra``
    abscissas drawn from ``pool``; (groups, secrets)."""
    groups, secrets = [], []
    for _ in range(n_groups):
        xs = rng.sample(pool, t + extra)
        sec = [bytes(rng.randrange(256) for _ in range(32)) for _ in range(m)]
        rows = split(sec, t, xs)
        if as_bytes:
            rows = [[share_to_bytes(v) for v in r] for r in rows]
        groups.append((xs, rows))
        secrets.append(sec)
    return groups, secrets


# ---------------------------------------------------------------- errors first

def test_reconstruct_many_tampered_extra_share_raises_as_reconstruct_does():
    rng = random.Random(1)
    groups, _ = _groups(rng, 6, 4, 2, list(range(1, 12)), m=2)
    xs, rows = groups[3]
    bad = [list(r) for r in rows]
    v = _shamir.share_from_bytes(bad[5][1])
    bad[5][1] = share_to_bytes((v + 1) % PRIME)        # the last extra point, secret 1
    groups[3] = (xs, bad)
    with pytest.raises(ProtocolError) as one:
        reconstruct(xs, bad, 4)
    with pytest.raises(ProtocolError) as many:
        reconstruct_many(groups, 4)
    assert str(many.value) == str(one.value)
    assert "does not lie on the polynomial" in str(many.value)


@pytest.mark.parametrize("spoil", ["share_above_prime", "short_share", "repeated_x", "zero_x",
                                   "ragged_rows", "too_few", "bool_share"])
def test_reconstruct_many_refuses_what_reconstruct_refuses(spoil):
    rng = random.Random(2)
    groups, _ = _groups(rng, 3, 3, 1, list(range(1, 9)))
    xs, rows = list(groups[1][0]), [list(r) for r in groups[1][1]]
    if spoil == "share_above_prime":
        rows[0][0] = PRIME.to_bytes(33, "little")
    elif spoil == "short_share":
        rows[2][0] = rows[2][0][:32]
    elif spoil == "repeated_x":
        xs[1] = xs[0]
    elif spoil == "zero_x":
        xs[0] = 0
    elif spoil == "ragged_rows":
        rows[1] = rows[1] + [rows[1][0]]
    elif spoil == "too_few":
        xs, rows = xs[:2], rows[:2]
    elif spoil == "bool_share":
        rows[0][0] = True
    groups[1] = (xs, rows)
    with pytest.raises(ProtocolError) as one:
        reconstruct(xs, rows, 3)
    with pytest.raises(ProtocolError) as many:
        reconstruct_many(groups, 3)
    assert str(many.value) == str(one.value)


def _unmask_round(n=9, degree=0, silent=(), seed=3):
    """A round awaiting the unmask answers: (server, clients, answers' bytes by id)."""
    server, clients, ur = unmask_ready(n, degree, silent, seed)
    return server, clients, {i: clients[i].unmask(wire(ur)).to_bytes() for i in ur.survivors}


def _alter(data, offset):
    b = bytearray(data)
    b[offset] ^= 1
    return bytes(b)


@pytest.mark.parametrize("case", ["altered_share", "altered_tag", "replayed", "re_addressed",
                                  "wrong_kind", "missing_owner", "truncated", "other_round"])
def test_receive_unmask_many_refuses_as_one_by_one(case):
    server, clients, answers = _unmask_round(silent=(8,))
    ids = sorted(answers)
    datas = [answers[i] for i in ids]
    k = 4                                         # the spoiled answer's position
    sender = ids[k]
    msg = UnmaskMessage.from_bytes(datas[k])
    sign = clients[sender]._m.tag                 # a client may tag what it likes
    if case == "altered_share":
        datas[k] = _alter(datas[k], HEADER_BYTES + 4 + 10)
    elif case == "altered_tag":
        datas[k] = _alter(datas[k], len(datas[k]) - 1)
    elif case == "replayed":
        datas[k] = datas[k - 1]
    elif case == "re_addressed":
        datas[k] = datas[k][:HEADER_BYTES - 12] + struct.pack("<I", ids[0]) \
            + datas[k][HEADER_BYTES - 8:]
    elif case == "wrong_kind":                     # a round-key share of a survivor, tagged
        kinds = (1,) + msg.kinds[1:]
        datas[k] = UnmaskMessage._signed_by(msg.run_id, msg.round, sender, msg.owners, kinds,
                                            msg.shares, sign).to_bytes()
    elif case == "missing_owner":
        datas[k] = UnmaskMessage._signed_by(msg.run_id, msg.round, sender, msg.owners[1:],
                                            msg.kinds[1:], msg.shares[1:], sign).to_bytes()
    elif case == "truncated":
        datas[k] = datas[k][:-1]
    elif case == "other_round":
        datas[k] = UnmaskMessage._signed_by(msg.run_id, msg.round + 1, sender, msg.owners,
                                            msg.kinds, msg.shares, sign).to_bytes()
    with pytest.raises((ProtocolError, MessageFormatError), match=_expected_match(case)) \
            as many:
        server.receive_unmask_many(datas)
    st = server._open["st"]
    assert st["answered"] == set() and st["shares"] == {}   # a failed batch takes nothing
    # the one-by-one path, answer by answer, refuses answer k with the same error
    for i in ids[:k]:
        server.receive_unmask(UnmaskMessage.from_bytes(answers[i]))
    with pytest.raises(type(many.value)) as one:
        server.receive_unmask(UnmaskMessage.from_bytes(datas[k]))
    assert str(one.value) == str(many.value)
    assert st["answered"] == set(ids[:k])
    # and the untouched answers still complete the round
    server.receive_unmask_many([answers[i] for i in ids[k:]])
    assert server.finish_round().dropped == (8,)


def test_a_refused_batch_changes_nothing_and_can_be_sent_again():
    server, clients, answers = _unmask_round(silent=(8,))
    ids = sorted(answers)
    bad = [answers[i] for i in ids]
    bad[3] = _alter(bad[3], len(bad[3]) - 1)                  # a tag that fails
    with pytest.raises(ProtocolError, match="authentication"):
        server.receive_unmask_many(bad)
    st = server._open["st"]
    assert st["answered"] == set() and st["shares"] == {}
    server.receive_unmask_many([answers[i] for i in ids])    # the same batch, repaired
    assert st["answered"] == set(ids)
    assert server.finish_round().dropped == (8,)


def _expected_match(case):
    return {"altered_share": "authentication", "altered_tag": "authentication",
            "replayed": "answered twice", "re_addressed": "authentication",
            "wrong_kind": "unexpected share", "missing_owner": "incomplete",
            "truncated": "truncated", "other_round": "another run or round"}[case]


# ---------------------------------------------------------------- equalities

@pytest.mark.parametrize("seed", range(4))
def test_reconstruct_many_equals_reconstruct_per_group(seed):
    rng = random.Random(seed)
    t = rng.randrange(1, 8)
    # groups drawn from a small pool share abscissa tuples (and cached weights)
    pool = list(range(1, t + 4)) if seed % 2 else rng.sample(range(1, 2**32), t + 6)
    groups, secrets = _groups(rng, 12, t, rng.randrange(0, 3), pool, m=rng.randrange(1, 3),
                              as_bytes=bool(seed % 2))
    got = reconstruct_many(groups, t)
    assert got == [reconstruct(xs, rows, t) for xs, rows in groups] == secrets


def test_reconstruct_many_matches_after_cache_clear_and_on_no_groups():
    rng = random.Random(7)
    groups, secrets = _groups(rng, 5, 18, 3, list(range(1, 40)))
    _shamir._weights.cache_clear()
    _shamir._coefficients_at.cache_clear()
    assert reconstruct_many(groups, 18) == secrets
    assert reconstruct_many(groups, 18) == secrets           # from the caches
    assert reconstruct_many([], 3) == []


def test_extra_point_check_equals_the_barycentric_form():
    rng = random.Random(11)
    xs = tuple(rng.sample(range(1, 2**32), 9))
    f = [rng.randrange(PRIME) for _ in range(9)]
    ys = [sum(c * pow(x, k, PRIME) for k, c in enumerate(f)) % PRIME for x in xs]
    w = _shamir._weights(xs, PRIME)[1]
    u = [a * b % PRIME for a, b in zip(w, ys)]
    for x in [1, 2**32, rng.randrange(1, 2**32)]:
        if x in xs:
            continue
        c = _shamir._coefficients_at(x, xs, PRIME)
        assert sum(a * b for a, b in zip(c, ys)) % PRIME == _shamir._value_at(x, xs, u, PRIME) \
            == sum(c * pow(x, k, PRIME) for k, c in enumerate(f)) % PRIME


def test_parsed_unmask_answer_authenticates_the_bytes_the_client_tagged():
    _, _, answers = _unmask_round()
    for data in answers.values():
        msg = UnmaskMessage.from_bytes(data)
        assert msg.signed_bytes() == data[:-TAG_BYTES] == _messages._unmask_signed(msg)
        fresh = UnmaskMessage(msg.run_id, msg.round, msg.sender, msg.owners, msg.kinds,
                              msg.shares, msg.tag)
        assert fresh == msg and fresh.to_bytes() == data
        assert _messages.parse_unmask_answers([data], msg.run_id, msg.round)[0][:4] == \
            (msg.sender, msg.owners, msg.kinds, msg.shares)


@pytest.mark.parametrize("n,degree,silent", [(9, 0, ()), (9, 0, (2, 7)), (14, 6, (5,))])
def test_batched_and_one_by_one_unmask_recover_the_same_sum(n, degree, silent):
    """Two runs with the same data: one draining the answers in a batch, one
    taking them one by one; both decode the plain sum (dropouts recovered)."""
    results = []
    for batched in (True, False):
        server, clients, answers = _unmask_round(n, degree, silent)
        if batched:
            server.receive_unmask_many(answers[i] for i in sorted(answers))
        else:
            for i in sorted(answers):
                server.receive_unmask(UnmaskMessage.from_bytes(answers[i]))
        res = server.finish_round()
        results.append((res.bins.tolist(), res.counts.tolist(), res.dropped))
    rng = np.random.default_rng(3)
    acc = {}
    for i in range(n):
        b, q = rng.integers(0, 20, size=(2, 2)), rng.integers(1, 4, size=2)
        if i not in silent:
            for row, c in zip(b.tolist(), q.tolist()):
                acc[tuple(row)] = acc.get(tuple(row), 0) + c
    want = ([list(k) for k in sorted(acc)], [acc[k] for k in sorted(acc)], tuple(silent))
    assert results[0] == results[1] == want


def test_round_trip_difference_rounds_stay_exact_with_the_batched_step():
    params = ScmaParams.create(2, 30, 40)
    server, clients = make_run(params, list(range(12)), degree=4)
    rng = np.random.default_rng(0)
    data = {i: [rng.integers(0, 30, size=(3, 2)), rng.integers(2, 5, size=3)] for i in clients}
    for i, c in clients.items():
        c.set_data(*data[i])
    RoundTrip(server, clients).share().inputs(0).finish()
    for r in range(3):
        c = r * 5 % 12
        data[c][1] = data[c][1] - np.eye(3, dtype=np.int64)[r % 3]
        clients[c].set_data(*data[c])
        res = RoundTrip(server, clients).share().inputs(1).finish()
        acc = {}
        for b, q in data.values():
            for row, v in zip(b.tolist(), q.tolist()):
                acc[tuple(row)] = acc.get(tuple(row), 0) + v
        got = dict(zip(map(tuple, res.bins.tolist()), res.counts.tolist()))
        assert got == {k: v for k, v in acc.items() if v}
        clients[c].forget_rounds_before(server.last_decoded[0])


@pytest.mark.parametrize("groups", [[1], [([1, 2, 3], [], 0)], [([1, 2],)], ["ab"]])
def test_reconstruct_many_refuses_groups_that_are_not_pairs(groups):
    with pytest.raises(ProtocolError, match="must be a pair"):
        reconstruct_many(groups, 2)
