"""Tests of MSA key batches (pyfkm.secagg.msa._driver.msa_key_batch and the
roles' batch steps): the keys of several rounds shared in one flight.

Oracles: the sums are exact fixed-point sums of small dyadic values (Python
floats, exact), every refusal is a ProtocolError named by the protocol's
rules (docs/threat_model.md), and the secrets a test reconstructs are
checked against the public keys with the ``cryptography`` package.
"""
import itertools

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from pyfkm.exceptions import MessageFormatError, ProtocolError
from pyfkm.secagg import _shamir
from pyfkm.secagg._keys import raw_public
from pyfkm.secagg._masking import B_SHARE, SK_SHARE
from pyfkm.secagg.msa._keybatch import batch_ct_bytes
from pyfkm.secagg._messages import InputRequest, RoundMessage, UnmaskMessage, UnmaskRequest
from pyfkm.secagg.msa import (AggregateMessage, KeyBatchBundle, KeyBatchMessage,
                              MaskedVectorMessage, MsaClient, msa_key_batch, msa_round,
                              setup_msa)


def wire(msg):
    return type(msg).from_bytes(msg.to_bytes())


def vectors(n, r):
    """Distinct data every round (the same-data rule refuses repeats over
    other survivors): client i's vector in round r."""
    return [[float(i + 1) + r / 4, float(r) - i / 2] for i in range(n)]


def expected(vecs, survivors):
    return np.sum([vecs[i] for i in survivors], axis=0).tolist()


def _batch_flight(server, clients, count):
    """The batch's messages up to the bundles (not yet received)."""
    rm = wire(server.start_key_batch(count))
    for c in clients:
        server.receive_key_batch(wire(c.share_key_batch(rm, count)))
    return rm, {c.client_id: wire(server.key_batch_bundle(c.client_id)) for c in clients}


def test_dropouts_in_later_rounds_recover_the_exact_sum_with_batched_keys():
    # n = 5, t = 3: one batch of 5 rounds; clients drop in rounds 2, 3 and 5
    # (up to n - t = 2 at once), a dropped client takes part again in the
    # next round, and every round sums exactly its survivors
    n = 5
    server, clients = setup_msa(n, 2)
    assert msa_key_batch(server, clients, 5) == tuple(range(n))
    for r, silent in enumerate([(), (1,), (0, 4), (), (3,)], start=1):
        vecs = vectors(n, r)
        total, survivors = msa_round(server, clients, vecs, silent=silent)
        assert survivors == tuple(i for i in range(n) if i not in silent)
        assert total.tolist() == expected(vecs, survivors)
        assert server.last_dropped == tuple(silent)
    # beyond the batch, rounds share their own keys again
    vecs = vectors(n, 6)
    total, survivors = msa_round(server, clients, vecs, silent=(2,))
    assert total.tolist() == expected(vecs, survivors) and not server.in_key_batch()


def test_more_dropouts_than_n_minus_t_fail_in_a_batch_round():
    server, clients = setup_msa(5, 2)
    msa_key_batch(server, clients, 2)
    msa_round(server, clients, vectors(5, 1))
    with pytest.raises(ProtocolError, match="below the threshold"):
        msa_round(server, clients, vectors(5, 2), silent=(0, 1, 2))


def test_a_dropped_clients_round_key_reveals_no_other_round():
    # the server reconstructs client 2's round key of round 2 (it dropped):
    # it is the key of that round's public key, and no other round's
    n = 3
    server, clients = setup_msa(n, 2)
    msa_key_batch(server, clients, 3)
    pks = server._batch["bt"]["pks"][2]
    assert len(set(pks)) == 3
    msa_round(server, clients, vectors(n, 1))
    rm = wire(server.start_round())
    for c in clients:
        c.enter_round(rm)
    req = wire(server.request_inputs())
    for c in clients[:2]:
        server.receive(wire(c.respond(req, vectors(n, 2)[c.client_id])))
    ureq = wire(server.unmask_request())
    answers = [wire(c.unmask_shares(ureq)) for c in clients[:2]]
    for a in answers:
        server.receive_unmask(a)
    # the shares of client 2's round key, as the server holds them
    xs, ys = [], []
    for a in answers:
        for owner, kind, share in zip(a.owners, a.kinds, a.shares):
            if owner == 2:
                assert kind == SK_SHARE
                xs.append(a.sender + 1)
                ys.append(_shamir.share_from_bytes(share))
    sk = _shamir.reconstruct(xs, [[y] for y in ys], len(xs))[0]
    pub = raw_public(X25519PrivateKey.from_private_bytes(sk))
    assert pub == pks[1] and pub not in (pks[0], pks[2])
    agg = wire(server.finish_round())
    assert clients[2].unmask(agg).tolist() == expected(vectors(n, 2), (0, 1))


def test_consistency_rule_per_round_of_a_batch():
    # n = 5, t = 3, every split of the clients between request A (all
    # survived) and request B (v dropped), in round 2 of a batch: a client
    # answers one request per round and refuses the other, so the server
    # never holds t shares of both kinds of one owner in that round; round 3
    # of the same batch runs normally afterwards
    n, t = 5, 3
    for v in (0, 3):
        for split in itertools.product((0, 1), repeat=n):
            if split[v] == 1:
                continue
            server, clients = setup_msa(n, 2)
            msa_key_batch(server, clients, 3)
            msa_round(server, clients, vectors(n, 1))
            rm = wire(server.start_round())
            for c in clients:
                c.enter_round(rm)
            req = wire(server.request_inputs())
            for c in clients:
                server.receive(wire(c.respond(req, vectors(n, 2)[c.client_id])))
            everyone = tuple(range(n))
            reqs = {0: UnmaskRequest(server.run_id, rm.round, everyone),
                    1: UnmaskRequest(server.run_id, rm.round,
                                     tuple(i for i in everyone if i != v))}
            kinds = {}
            for c in clients:
                i = c.client_id
                ans = wire(c.unmask_shares(reqs[split[i]]))
                for owner, kind in zip(ans.owners, ans.kinds):
                    kinds.setdefault(owner, []).append(kind)
                other = reqs[1 - split[i]]
                if i in other.survivors:
                    with pytest.raises(ProtocolError):
                        c.unmask_shares(other)
            for owner, ks in kinds.items():
                assert min(ks.count(B_SHARE), ks.count(SK_SHARE)) < t, (v, split, owner)
        # the next round of the batch is unaffected (the unfinished round is
        # abandoned)
        vecs = vectors(n, 3)
        total, _ = msa_round(server, clients, vecs)
        assert total.tolist() == expected(vecs, everyone)


def _open_batch_round(server, clients, r):
    rm = wire(server.start_round())
    assert rm.round == r and server.in_key_batch()
    for c in clients:
        c.enter_round(rm)
    return rm, wire(server.request_inputs())


def test_messages_of_one_round_replayed_into_another_round_are_refused():
    n = 3
    server, clients = setup_msa(n, 2)
    msa_key_batch(server, clients, 3)
    rm1, req1 = _open_batch_round(server, clients, 1)
    masked1 = [wire(c.respond(req1, vectors(n, 1)[c.client_id])) for c in clients]
    for m in masked1:
        server.receive(m)
    ureq1 = wire(server.unmask_request())
    unmask1 = [wire(c.unmask_shares(ureq1)) for c in clients]
    for u in unmask1:
        server.receive_unmask(u)
    agg1 = wire(server.finish_round())
    rm2, req2 = _open_batch_round(server, clients, 2)
    # round 1's inputs, as sent and re-labelled with round 2
    for m in masked1:
        with pytest.raises(ProtocolError, match="round 1"):
            server.receive(m)
        moved = MaskedVectorMessage(m.run_id, 2, m.sender, m.payload, m.tag)
        with pytest.raises(ProtocolError, match="authentication"):
            server.receive(moved)
    # the clients refuse round 1's messages in round 2
    for c in clients:
        with pytest.raises(ProtocolError):
            c.enter_round(rm1)              # a round of the batch already opened
        with pytest.raises(ProtocolError):
            c.respond(req1, vectors(n, 1)[c.client_id])
        with pytest.raises(ProtocolError):
            c.unmask_shares(ureq1)
    for c in clients:
        server.receive(wire(c.respond(req2, vectors(n, 2)[c.client_id])))
    ureq2 = wire(server.unmask_request())
    for u in unmask1:                       # round 1's answers in round 2
        with pytest.raises(ProtocolError):
            server.receive_unmask(u)
        moved = UnmaskMessage(u.run_id, 2, u.sender, u.owners, u.kinds, u.shares, u.tag)
        with pytest.raises(ProtocolError, match="authentication"):
            server.receive_unmask(moved)
    for c in clients:
        server.receive_unmask(wire(c.unmask_shares(ureq2)))
    agg2 = wire(server.finish_round())
    with pytest.raises(ProtocolError):
        clients[0].unmask(agg1)             # round 1's broadcast after round 2
    assert clients[0].unmask(agg2).tolist() == expected(vectors(n, 2), range(n))
    # a round the batch does not hold, and round 3 run twice
    with pytest.raises(ProtocolError):
        clients[0].enter_round(RoundMessage(server.run_id, 4, rm2.participants))
    rm3, _ = _open_batch_round(server, clients, 3)
    with pytest.raises(ProtocolError):
        clients[0].enter_round(rm3)


def test_a_key_batch_of_another_batch_or_run_is_refused():
    server, clients = setup_msa(3, 2)
    rm, bundles = _batch_flight(server, clients, 2)
    # the server's tag check: a batch message relabelled to another first round
    other_server, other_clients = setup_msa(3, 2)
    orm = wire(other_server.start_key_batch(2))
    msg = wire(other_clients[0].share_key_batch(orm, 2))
    with pytest.raises(ProtocolError):
        server.receive_key_batch(msg)           # another run
    # bundles go to their recipient only, and once
    with pytest.raises(ProtocolError):
        clients[0].receive_key_batch(bundles[1])
    clients[0].receive_key_batch(bundles[0])
    with pytest.raises(ProtocolError, match="already received"):
        clients[0].receive_key_batch(bundles[0])


def _tampered(bundle, **change):
    fields = dict(run_id=bundle.run_id, round=bundle.round, count=bundle.count,
                  recipient=bundle.recipient, sharers=bundle.sharers, owners=bundle.owners,
                  round_keys=bundle.round_keys, ciphertexts=bundle.ciphertexts)
    fields.update(change)
    return KeyBatchBundle(**fields)


def _flip(b, at):
    b = bytearray(b)
    b[at] ^= 1
    return bytes(b)


@pytest.mark.parametrize("what", ["ciphertext", "round key", "sharers", "owner", "first round",
                                  "swapped owners"])
def test_tampered_batched_shares_are_refused_and_change_nothing(what):
    server, clients = setup_msa(4, 2)
    rm, bundles = _batch_flight(server, clients, 3)
    b = bundles[0]
    keys = [list(k) for k in b.round_keys]
    if what == "ciphertext":
        bad = _tampered(b, ciphertexts=(_flip(b.ciphertexts[0], 40),) + b.ciphertexts[1:])
    elif what == "round key":
        keys[1][2] = _flip(keys[1][2], 0)
        bad = _tampered(b, round_keys=tuple(tuple(k) for k in keys))
    elif what == "sharers":
        bad = _tampered(b, sharers=(0, 1))            # owners 2 and 3 not announced
    elif what == "owner":
        bad = _tampered(b, owners=(1, 2, 2)[:2] + (3,), ciphertexts=(b.ciphertexts[1],
                                                                    b.ciphertexts[0],
                                                                    b.ciphertexts[2]))
    elif what == "first round":
        bad = _tampered(b, round=2)
    else:
        bad = _tampered(b, round_keys=(b.round_keys[1], b.round_keys[0]) + b.round_keys[2:],
                        ciphertexts=(b.ciphertexts[1], b.ciphertexts[0]) + b.ciphertexts[2:])
    with pytest.raises(ProtocolError):
        clients[0].receive_key_batch(wire(bad))
    # refused without a trace: the true bundle is then taken and the rounds run
    for c in clients:
        c.receive_key_batch(bundles[c.client_id])
    for r in (1, 2, 3):
        vecs = vectors(4, r)
        total, _ = msa_round(server, clients, vecs, silent=(3,) if r == 2 else ())
        assert total.tolist() == expected(vecs, (0, 1, 2) if r == 2 else range(4))


def test_a_tampered_key_batch_message_fails_the_servers_checks():
    server, clients = setup_msa(3, 2)
    rm = wire(server.start_key_batch(2))
    msg = clients[0].share_key_batch(rm, 2)
    data = bytearray(msg.to_bytes())
    for at in (60, 60 + 32, len(data) - 20):      # a round key, a commitment, a ciphertext
        d = bytearray(data)
        d[at] ^= 1
        with pytest.raises(ProtocolError, match="authentication"):
            server.receive_key_batch(KeyBatchMessage.from_bytes(bytes(d)))
    with pytest.raises(MessageFormatError):
        KeyBatchMessage.from_bytes(bytes(data[:-1]))
    server.receive_key_batch(wire(msg))
    with pytest.raises(ProtocolError, match="twice"):
        server.receive_key_batch(wire(msg))
    # a client's batch must have the server's count
    with pytest.raises(ProtocolError):
        server.receive_key_batch(wire(clients[1].share_key_batch(rm, 3)))


def test_a_small_order_round_key_is_refused_by_the_server():
    server, clients = setup_msa(3, 2)
    rm = wire(server.start_key_batch(2))
    good = clients[0].share_key_batch(rm, 2)
    keys = (good.round_keys[0], (1).to_bytes(32, "little"))
    forged = KeyBatchMessage(good.run_id, good.round, good.sender, 2, keys, good.commitments,
                             good.holders, good.ciphertexts)
    # tagged by the client's own key: the server's check is the small-order one
    forged = KeyBatchMessage(good.run_id, good.round, good.sender, 2, keys, good.commitments,
                             good.holders, good.ciphertexts, _tag_as(clients[0], forged))
    with pytest.raises(ProtocolError, match="low-order"):
        server.receive_key_batch(forged)


def _tag_as(client, msg):
    return client._m.tag(msg.signed_bytes())


def test_batch_rounds_skip_the_share_steps_and_refuse_outsiders():
    server, clients = setup_msa(4, 2)
    rm = wire(server.start_key_batch(2, participants=(0, 1, 2)))
    for c in clients[:3]:
        server.receive_key_batch(wire(c.share_key_batch(rm, 2)))
    with pytest.raises(ProtocolError):
        clients[3].share_key_batch(rm, 2)           # not a participant
    for c in clients[:3]:
        c.receive_key_batch(wire(server.key_batch_bundle(c.client_id)))
    with pytest.raises(ProtocolError, match="shared the key batch"):
        server.start_round((0, 1, 3))               # 3 did not share the batch
    rm1 = wire(server.start_round())
    assert rm1.participants == (0, 1, 2)
    with pytest.raises(ProtocolError, match="relays no shares"):
        server.bundle(0)
    with pytest.raises(ProtocolError):
        clients[0].share_keys(rm1)                  # the batch's rounds count as shared
    with pytest.raises(ProtocolError):
        clients[3].enter_round(rm1)                 # no batch
    for c in clients[:3]:
        c.enter_round(rm1)
    req = wire(server.request_inputs())
    assert isinstance(req, InputRequest)
    vecs = vectors(3, 1)
    for c in clients[:3]:
        server.receive(wire(c.respond(req, vecs[c.client_id])))
    ureq = wire(server.unmask_request())
    for c in clients[:3]:
        server.receive_unmask(wire(c.unmask_shares(ureq)))
    agg = wire(server.finish_round())
    assert isinstance(agg, AggregateMessage)
    assert clients[0].unmask(agg).tolist() == expected(vecs, range(3))
    with pytest.raises(ProtocolError):
        clients[3].unmask(agg)                      # not in the round


def test_key_batch_messages_round_trip_and_reject_truncation():
    server, clients = setup_msa(3, 2)
    rm, bundles = _batch_flight(server, clients, 4)
    b = bundles[1]
    assert b.count == 4 and b.owners == (0, 2) and b.sharers == (0, 1, 2)
    assert all(len(c) == batch_ct_bytes(4) for c in b.ciphertexts)
    data = b.to_bytes()
    assert KeyBatchBundle.from_bytes(data) == b
    for cut in (1, 33, len(data) - 45):
        with pytest.raises(MessageFormatError):
            KeyBatchBundle.from_bytes(data[:-cut])
    with pytest.raises(MessageFormatError):
        KeyBatchBundle.from_bytes(data + b"\0")
    with pytest.raises(MessageFormatError):
        KeyBatchMessage.from_bytes(data)            # another type


def test_every_batch_draws_fresh_keys_from_the_os():
    # two runs, and the rounds of one batch, share no round key or commitment
    seen = set()
    for _ in range(2):
        server, clients = setup_msa(3, 2)
        rm = wire(server.start_key_batch(3))
        for c in clients:
            m = c.share_key_batch(rm, 3)
            for v in m.round_keys + m.commitments:
                assert v not in seen
                seen.add(v)


def test_a_new_batch_starts_after_the_rounds_of_the_last_one():
    # a batch abandoned after one of its 3 rounds: the next batch starts at
    # round 4 (clients never take a round of the old batch again)
    server, clients = setup_msa(3, 2)
    msa_key_batch(server, clients, 3)
    msa_round(server, clients, vectors(3, 1))
    msa_key_batch(server, clients, 2)
    for r in (4, 5):
        vecs = vectors(3, r)
        total, _ = msa_round(server, clients, vecs)
        assert total.tolist() == expected(vecs, range(3))
    assert [c._last_round for c in clients] == [5, 5, 5]


def test_key_batch_size_is_capped():
    from pyfkm.secagg.msa import MAX_BATCH, max_batch_rounds
    assert max_batch_rounds(2) == MAX_BATCH
    # the wire size of a key batch message (header 44, count, keys and
    # commitments, holder count, per other holder its id and ciphertext, tag)
    def size(holders, c):
        return 44 + 4 + 64 * c + 4 + (holders - 1) * (4 + batch_ct_bytes(c)) + 16

    # and of the bundle a holder receives (header 44, count, recipient,
    # sharer count and ids, owner count, per other holder its id, round keys
    # and ciphertext), which is the larger of the two
    def bundle_size(holders, c):
        return 44 + 12 + 4 * holders + 4 + (holders - 1) * (4 + 32 * c + batch_ct_bytes(c))
    for holders in (1_000, 10_000, 100_000):
        cap = max_batch_rounds(holders)
        assert 1 <= cap < MAX_BATCH
        assert size(holders, cap) <= bundle_size(holders, cap) <= 1 << 26
        assert 1 << 26 < bundle_size(holders, cap + 2)
    server, clients = setup_msa(3, 2)
    rm = wire(server.start_key_batch(2))
    with pytest.raises(ProtocolError):
        clients[0].share_key_batch(rm, MAX_BATCH + 1)


def test_every_altered_byte_of_a_key_batch_is_refused():
    # every byte of a client's key batch message (to the server) and of a
    # bundle (to a client), flipped in its low or high bit, and every
    # truncation: each is refused with a pyfkm error, nothing changes, and
    # the true messages then run the batch's rounds to the exact sums
    from pyfkm.exceptions import PyfkmError
    server, clients = setup_msa(3, 2)
    rm = wire(server.start_key_batch(2))
    msgs = [c.share_key_batch(rm, 2).to_bytes() for c in clients]
    for data in (msgs[0], ):
        for at in range(len(data)):
            for bit in (0x01, 0x80):
                bad = bytearray(data)
                bad[at] ^= bit
                with pytest.raises(PyfkmError):
                    server.receive_key_batch(KeyBatchMessage.from_bytes(bytes(bad)))
        for cut in range(1, len(data), 7):
            with pytest.raises(PyfkmError):
                server.receive_key_batch(KeyBatchMessage.from_bytes(data[:cut]))
    for data in msgs:
        server.receive_key_batch(KeyBatchMessage.from_bytes(data))
    bundles = [server.key_batch_bundle(c.client_id).to_bytes() for c in clients]
    data = bundles[1]
    for at in range(len(data)):
        for bit in (0x01, 0x80):
            bad = bytearray(data)
            bad[at] ^= bit
            with pytest.raises(PyfkmError):
                clients[1].receive_key_batch(KeyBatchBundle.from_bytes(bytes(bad)))
    for cut in range(1, len(data), 7):
        with pytest.raises(PyfkmError):
            clients[1].receive_key_batch(KeyBatchBundle.from_bytes(data[:cut]))
    for c, b in zip(clients, bundles):
        c.receive_key_batch(KeyBatchBundle.from_bytes(b))
    for r in (1, 2):
        vecs = vectors(3, r)
        total, _ = msa_round(server, clients, vecs)
        assert total.tolist() == expected(vecs, range(3))


def test_a_client_refuses_a_small_order_round_key_in_a_bundle(monkeypatch):
    # client 1 (malicious) announces a small-order round key for round 2 and
    # encrypts its shares to match; a server that relays it anyway (the
    # bundle built here, past the server's own check) meets the receiving
    # client's refusal
    from pyfkm.secagg.msa import _keybatch
    server, clients = setup_msa(3, 2)
    rm = wire(server.start_key_batch(2))
    msgs = {0: clients[0].share_key_batch(rm, 2), 2: clients[2].share_key_batch(rm, 2)}
    real = _keybatch.raw_public
    calls = []

    def forged(sk):
        calls.append(sk)
        return bytes(32) if len(calls) == 2 else real(sk)
    monkeypatch.setattr(_keybatch, "raw_public", forged)
    msgs[1] = clients[1].share_key_batch(rm, 2)
    monkeypatch.setattr(_keybatch, "raw_public", real)
    assert msgs[1].round_keys[1] == bytes(32)
    with pytest.raises(ProtocolError, match="low-order"):
        server.receive_key_batch(wire(msgs[1]))

    def item(owner, recipient):
        m = msgs[owner]
        return m.round_keys, m.ciphertexts[m.holders.index(recipient)]
    owners = (1, 2)
    items = [item(o, 0) for o in owners]
    bundle = KeyBatchBundle(rm.run_id, rm.round, 2, 0, (0, 1, 2), owners,
                            tuple(i[0] for i in items), tuple(i[1] for i in items))
    with pytest.raises(ProtocolError, match="low-order"):
        clients[0].receive_key_batch(wire(bundle))


def test_a_batch_round_leaves_no_share_of_its_secrets_with_a_client_once_over(monkeypatch):
    # as a round shared on its own (whose held shares go with the round),
    # the shares a client holds of its neighbours' round keys of a batch
    # round are gone once the round is over (answered, or passed over),
    # while those of the batch's later rounds are still found (the search
    # works).  Oracle: the shares as the sharing step splits them
    from _helpers.msa import server_bytes
    calls = []
    real = _shamir.split

    def split(secrets, t, xs):
        rows = real(secrets, t, xs)
        calls.append((list(xs), rows))
        return rows
    monkeypatch.setattr(_shamir, "split", split)
    n, count = 4, 3
    server, clients = setup_msa(n, 2)
    calls.clear()
    msa_key_batch(server, clients, count)
    monkeypatch.setattr(_shamir, "split", real)
    assert len(calls) == n                        # one split per client, in order
    # client 0's shares of its neighbours' round keys, per round (SHARE_PLAIN's
    # order: the round key's share follows the self seed's)
    held = {r: [] for r in range(1, count + 1)}
    for owner, (xs, rows) in enumerate(calls):
        if owner != 0 and 1 in xs:
            row = rows[xs.index(1)]
            for r in held:
                held[r].append(_shamir.share_to_bytes(row[2 * (r - 1) + 1]))
    assert len(held[1]) == n - 1

    def found(r):
        data = server_bytes(clients[0], strict=False)
        return [any(s in d for d in data) for s in held[r]]
    assert all(found(1)) and all(found(2)) and all(found(3))
    msa_round(server, clients, vectors(n, 1))
    assert not any(found(1)), "round 1 is over: its shares must be gone"
    assert all(found(2)) and all(found(3))
    # round 3 opens, passing over round 2: round 2's shares go too
    clients[0].enter_round(RoundMessage(clients[0]._run_id, 3, tuple(range(n))))
    assert not any(found(2))


def test_a_batch_that_cannot_close_is_abandoned_by_the_next_round(monkeypatch):
    # n = 5, t = 3: two clients share a batch of 3 rounds, below the
    # threshold, so it never closes; as an unfinished round is, it is
    # abandoned by the next start_round, which opens round 4 (after the
    # batch's rounds, which the two sharers refuse) with its own key shares
    n = 5
    server, clients = setup_msa(n, 2)
    rm = wire(server.start_key_batch(3))
    for c in clients[:2]:
        server.receive_key_batch(wire(c.share_key_batch(rm, 3)))
    with pytest.raises(ProtocolError, match="below the threshold"):
        server.key_batch_bundle(0)
    vecs = vectors(n, 4)
    total, survivors = msa_round(server, clients, vecs)
    assert total.tolist() == expected(vecs, range(n)) and survivors == tuple(range(n))
    assert not server.in_key_batch() and [c._last_round for c in clients] == [4] * n
    # a batch with enough sharers is not abandoned: its rounds (5 and 6) run
    # without key shares of their own
    msa_key_batch(server, clients, 2)
    shared = []
    monkeypatch.setattr(MsaClient, "share_keys", lambda self, rm: shared.append(rm))
    for r in (5, 6):
        total, _ = msa_round(server, clients, vectors(n, r))
        assert total.tolist() == expected(vectors(n, r), range(n))
    assert shared == [] and [c._last_round for c in clients] == [6] * n
