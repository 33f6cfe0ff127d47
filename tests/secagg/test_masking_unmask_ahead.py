"""Work laid out ahead of the online steps of an SCMA round (issue 22,
second pass) against the paths it replaces.

* A client's unmask answer, serialized in step 2 when every held owner
  survives, is byte for byte what a fresh serialization of its fields gives,
  and the server accepts it; with a dropped owner the answer is built online
  (round-key shares) and is equally exact.
* ``MaskingClient.unmask_columns`` applies the checks of ``unmask`` (its
  refusals are unchanged) and both give the same shares.
* The server stores answers by sender; a share altered by a client that tags
  it anyway is still caught (commitment), in the batched and the one-by-one
  paths alike, with the same error.
* ``reconstruct_many``'s batched validation falls back to the one-by-one
  path for the first failing group's error.

Expected values come from the one-by-one paths and the checked constructors,
which the rest of the suite checks against independent oracles.
"""
import random

import pytest

from pyfkm.secagg import ProtocolError, UnmaskMessage
from pyfkm.secagg import _messages, _shamir
from pyfkm.secagg._framing import TAG_BYTES
from pyfkm.secagg._masking import B_SHARE, SK_SHARE
from pyfkm.secagg._shamir import PRIME, reconstruct, reconstruct_many, share_to_bytes, split

from _helpers.scma import unmask_ready, wire


def _round(n=9, degree=0, silent=(), seed=3):
    return unmask_ready(n, degree, silent, seed)


# ---------------------------------------------------------------- errors first

def test_unmask_columns_refuses_what_unmask_refuses():
    server, clients, ur = _round()
    c = clients[0]
    rnd = ur.round
    with pytest.raises(ProtocolError, match="subset|survivors must"):
        c._m.unmask_columns(rnd, set(ur.survivors) | {99})
    with pytest.raises(ProtocolError, match="threshold"):
        c._m.unmask_columns(rnd, [0])
    ahead = c._m.reveal_all(rnd)
    cols = c._m.unmask_columns(rnd, ur.survivors)
    assert cols is ahead                                # laid out in step 2
    with pytest.raises(ProtocolError):                  # the round is over for it
        c._m.unmask_columns(rnd, ur.survivors)


@pytest.mark.parametrize("batched", [True, False])
def test_altered_share_tagged_by_its_client_is_caught_at_recovery(batched):
    server, clients, ur = _round(silent=(8,))
    answers = {i: clients[i].unmask(wire(ur)) for i in ur.survivors}
    bad = answers[3]
    k = bad.owners.index(5)
    v = _shamir.share_from_bytes(bad.shares[k])
    shares = list(bad.shares)
    shares[k] = share_to_bytes((v + 1) % PRIME)
    # a dishonest client: a wrong share with a valid tag
    forged = UnmaskMessage._signed_by(bad.run_id, bad.round, bad.sender, bad.owners,
                                      bad.kinds, tuple(shares), clients[3]._m.tag)
    answers[3] = forged
    if batched:
        server.receive_unmask_many(answers[i].to_bytes() for i in sorted(answers))
    else:
        for i in sorted(answers):
            server.receive_unmask(UnmaskMessage.from_bytes(answers[i].to_bytes()))
    with pytest.raises(ProtocolError, match="client 5's self seed does not match"):
        server.finish_round()


def test_reconstruct_many_batch_keeps_the_first_failing_groups_error():
    rng = random.Random(5)
    groups = []
    for _ in range(4):
        xs = rng.sample(range(1, 30), 5)
        rows = [[share_to_bytes(v) for v in r]
                for r in split([bytes(rng.randrange(256) for _ in range(32))], 3, xs)]
        groups.append((xs, rows))
    # group 1: an extra point off the polynomial; group 3: an invalid share
    rows1 = [list(r) for r in groups[1][1]]
    rows1[4][0] = share_to_bytes((_shamir.share_from_bytes(rows1[4][0]) + 1) % PRIME)
    groups[1] = (groups[1][0], rows1)
    with pytest.raises(ProtocolError) as one:
        reconstruct(*groups[1], 3)
    with pytest.raises(ProtocolError) as many:
        reconstruct_many(groups, 3)                    # batched validation passes
    assert str(many.value) == str(one.value)
    rows3 = [list(r) for r in groups[3][1]]
    rows3[0][0] = b"\xff" * 33
    groups[3] = (groups[3][0], rows3)
    with pytest.raises(ProtocolError) as many:
        reconstruct_many(groups, 3)                    # falls back: group 1 first
    assert str(many.value) == str(one.value)


# ---------------------------------------------------------------- equalities

@pytest.mark.parametrize("n,degree,silent", [(9, 0, ()), (9, 0, (2,)), (14, 6, (5, 9))])
def test_unmask_answer_laid_out_ahead_is_the_fresh_serialization(n, degree, silent):
    server, clients, ur = _round(n, degree, silent)
    datas = []
    for i in ur.survivors:
        c = clients[i]
        ahead = c._unmask_body
        cols = c._m.reveal_all(ur.round)
        assert ahead == (cols[2], _messages.unmask_body(*cols))
        data = c.unmask(wire(ur)).to_bytes()
        msg = UnmaskMessage.from_bytes(data)
        fresh = UnmaskMessage(msg.run_id, msg.round, msg.sender, msg.owners, msg.kinds,
                              msg.shares, msg.tag)
        assert fresh.to_bytes() == data
        assert _messages._unmask_signed(fresh) == data[:-TAG_BYTES]
        dropped_held = [o for o in msg.owners if o in silent]
        assert msg.kinds == tuple(SK_SHARE if o in silent else B_SHARE for o in msg.owners)
        assert (msg.shares == cols[2]) == (not dropped_held)
        datas.append(data)
    server.receive_unmask_many(datas)
    res = server.finish_round()
    assert res.dropped == tuple(silent)


def test_unmask_and_unmask_columns_give_the_same_shares():
    _, clients, ur = _round(9, 0, (4,))
    a = clients[0]._m
    b = clients[1]._m
    cols = a.unmask_columns(ur.round, ur.survivors)
    items = b.unmask(ur.round, ur.survivors)
    assert [tuple(c) for c in zip(*items)][1] == cols[1]     # same kinds (same fates)
    assert isinstance(items, list) and all(len(t) == 3 for t in items)
    assert cols[1][cols[0].index(4)] == SK_SHARE


@pytest.mark.parametrize("seed", range(3))
def test_reconstruct_many_batch_equals_one_by_one_mixed_groups(seed):
    rng = random.Random(seed)
    groups, want = [], []
    for g in range(8):
        t = 4
        m = 1 + g % 3
        xs = tuple(rng.sample(range(1, 60), t + g % 2))
        sec = [bytes(rng.randrange(256) for _ in range(32)) for _ in range(m)]
        rows = [tuple(share_to_bytes(v) for v in r) for r in split(sec, t, list(xs))]
        groups.append((xs, tuple(rows) if g % 2 else rows))
        want.append(sec)
    assert reconstruct_many(groups, 4) == [reconstruct(xs, r, 4) for xs, r in groups] == want
    ints = [(xs, [[_shamir.share_from_bytes(v) for v in r] for r in rows])
            for xs, rows in groups]                         # ints: the one-by-one path
    assert reconstruct_many(ints, 4) == want
