"""Tests of the MSA server (pyfkm.secagg.msa._server): errors leave the round
open, replayed or altered messages are refused, dropouts give the
survivors' exact sum, masks cancel, the server holds no client secret.
The oracles are described in tests/_helpers/msa.py."""
import dataclasses
import hashlib
import struct

import numpy as np
import pytest

from pyfkm.core import noise as privacy
from pyfkm.exceptions import ProtocolError
from pyfkm.secagg import _masking
from pyfkm.secagg._keys import mac, raw_private, raw_public
from pyfkm.secagg.msa import MaskedVectorMessage, msa_round, setup_msa
from pyfkm.secagg.msa import _noise
from pyfkm.secagg.msa._fixed import MSA_TAG, OUTPUT_TAG, SELF_TAG, encode_fixed
from _helpers.msa import (M64, RUN, server_bytes, close_round, fixed, grid, open_round,
                          oracle_stream, send)


def fixed_sum(vectors, scale_bits=16):
    """The exact fixed-point sum of ``vectors`` (Python ints)."""
    return [sum(fixed(v[j], scale_bits) for v in vectors) for j in range(len(vectors[0]))]


def test_server_errors_leave_round_open():
    server, (a, b) = setup_msa(2, 2)
    req = open_round(server, (a, b))
    ma = a.respond(req, [1.0, 2.0])
    send(server, ma)
    with pytest.raises(ProtocolError, match="duplicate"):
        send(server, ma)
    with pytest.raises(ProtocolError, match="below the threshold"):
        server.unmask_request()                          # 1 input, threshold 2
    with pytest.raises(ProtocolError):                   # another run
        server.receive(MaskedVectorMessage(RUN, req.round, 1, np.zeros(2, np.uint64)))
    with pytest.raises(ProtocolError, match="round"):
        server.receive(MaskedVectorMessage(server.run_id, req.round + 1, 1,
                                           np.zeros(2, np.uint64)))
    with pytest.raises(ProtocolError, match="words"):
        server.receive(MaskedVectorMessage(server.run_id, req.round, 1, np.zeros(3, np.uint64)))
    with pytest.raises(ProtocolError, match="authentication"):   # an untagged message
        server.receive(MaskedVectorMessage(server.run_id, req.round, 1, np.zeros(2, np.uint64)))
    send(server, b.respond(req, [3.0, 4.0]))
    assert a.unmask(close_round(server, (a, b))).tolist() == [4.0, 6.0]


# ------------------------------------------------------------ replay, re-addressing, alteration

def _with(msg_bytes, off, new):
    return msg_bytes[:off] + new + msg_bytes[off + len(new):]


def _replay_setup():
    """A run of three clients whose round 1 is complete and whose round 2
    is waiting for inputs; client 1's round-1 message is the attacker's."""
    server, clients = setup_msa(3, 4)
    xs1 = [[1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0], [0.5, 0.5, 0.5, 0.5]]
    req = open_round(server, clients)
    old = [c.respond(req, x) for c, x in zip(clients, xs1)]
    for m in old:
        send(server, m)
    assert clients[0].unmask(close_round(server, clients)).tolist() == [11.5, 22.5, 33.5, 44.5]
    req2 = open_round(server, clients)
    return server, clients, old[1], req2


def _tampered(old, new, how, clients):
    """Forged bytes from client 1's round-1 message ``old`` or its honest
    round-2 message ``new``."""
    data = old.to_bytes()
    if how == "verbatim":                                    # the old bytes, unchanged
        return data
    if how == "round, original tag":                         # re-serialized, same tag
        return MaskedVectorMessage(old.run_id, 2, old.sender, old.payload, old.tag).to_bytes()
    if how == "round, wire bytes":                           # the round field of the bytes
        return _with(data, 24, struct.pack("<Q", 2))
    if how == "round, random-key tag":                       # re-tagged under a wrong key
        m = MaskedVectorMessage(old.run_id, 2, old.sender, old.payload)
        return dataclasses.replace(m, tag=mac(b"k" * 32, m.signed_bytes())).to_bytes()
    if how == "round, client 2's tag":                       # re-tagged by another client
        m = MaskedVectorMessage(old.run_id, 2, old.sender, old.payload)
        return dataclasses.replace(m, tag=clients[2]._m.tag(m.signed_bytes())).to_bytes()
    if how == "re-addressed":                                # round 2's, as client 0's
        return _with(new.to_bytes(), 32, struct.pack("<I", 0))
    if how == "payload bit":                                 # round 2's, one bit flipped
        d = new.to_bytes()
        return d[:48] + bytes([d[48] ^ 1]) + d[49:]
    raise AssertionError(how)


REPLAYS = ["verbatim", "round, original tag", "round, wire bytes", "round, random-key tag",
           "round, client 2's tag", "re-addressed", "payload bit"]


@pytest.mark.parametrize("then", ["honest", "silent"])
@pytest.mark.parametrize("how", REPLAYS)
def test_replayed_or_altered_masked_vector_is_rejected_never_summed(how, then):
    # the issue's attack: client 1's round-1 MaskedVectorMessage, its round
    # set to 2 (re-serialized with the original tag or re-tagged under a
    # wrong key), is refused by the server; so are a verbatim replay into
    # round 2, client 1's round-2 message re-addressed as client 0's and
    # with a flipped payload bit.  The round then completes with client 1's
    # honest message (or without it: client 1 a dropout) and the exact sum
    # of the others: the forged message was never summed.
    server, clients, old, req2 = _replay_setup()
    xs2 = [[1.0, 1.0, 1.0, 1.0], [2.0, 0.0, 2.0, 0.0], [0.25, 0.5, 0.75, 1.0]]
    new = clients[1].respond(req2, xs2[1])
    data = _tampered(old, new, how, clients)
    forged = MaskedVectorMessage.from_bytes(data)          # well formed
    assert forged.round == (1 if how == "verbatim" else 2)
    with pytest.raises(ProtocolError, match="open round" if how == "verbatim"
                       else "authentication"):
        server.receive(forged)
    send(server, clients[0].respond(req2, xs2[0]))
    if then == "honest":
        send(server, new)
    send(server, clients[2].respond(req2, xs2[2]))
    agg = close_round(server, clients)
    alive = [x for i, x in enumerate(xs2) if then == "honest" or i != 1]
    assert agg.survivors == ((0, 1, 2) if then == "honest" else (0, 2))
    for c in clients:
        assert grid(c.unmask(agg)) == fixed_sum(alive)


def test_replayed_share_and_unmask_messages_are_rejected():
    server, clients = setup_msa(3, 2)
    rmsg = server.start_round()
    shares1 = [c.share_keys(rmsg) for c in clients]
    for m in shares1:
        server.receive_shares(m)
    for c in clients:
        c.receive_shares(server.bundle(c.client_id))
    req = server.request_inputs()
    for c in clients:
        send(server, c.respond(req, [1.0, 2.0]))
    ureq = server.unmask_request()
    unmask1 = [c.unmask_shares(ureq) for c in clients]
    for m in unmask1:
        server.receive_unmask(m)
    server.finish_round()
    rmsg2 = server.start_round()
    for m in shares1:                                    # round 1's shares in round 2
        with pytest.raises(ProtocolError):
            server.receive_shares(m)
        with pytest.raises(ProtocolError, match="authentication"):
            server.receive_shares(dataclasses.replace(m, round=2))
    for c in clients:
        server.receive_shares(c.share_keys(rmsg2))
    for c in clients:
        c.receive_shares(server.bundle(c.client_id))
    req2 = server.request_inputs()
    for c in clients:
        send(server, c.respond(req2, [3.0, 4.0]))
    ureq2 = server.unmask_request()
    for m in unmask1:                                    # round 1's unmask answers
        with pytest.raises(ProtocolError, match="authentication"):
            server.receive_unmask(dataclasses.replace(m, round=2))
    for c in clients:
        server.receive_unmask(c.unmask_shares(ureq2))
    assert clients[1].unmask(server.finish_round()).tolist() == [9.0, 12.0]


# ------------------------------------------------------------ dropouts

@pytest.mark.parametrize("degree", [0, 4])
@pytest.mark.parametrize("silent", [(1,), (4,), (0, 5), (2, 3)])
def test_dropouts_give_the_survivors_exact_sum(silent, degree):
    # n = 6, t = 4: one or two clients share their keys and go silent; the
    # others' shares remove their masks.  Oracle: the fixed-point sum of the
    # survivors' vectors, with exact rationals.  Client 0 (the leader of
    # the output mask) may drop too.
    rng = np.random.default_rng(len(silent) * 10 + degree)
    server, clients = setup_msa(6, 7, threshold=4, degree=degree)
    assert server.roster().threshold == 4 and server.roster().degree == degree
    for _ in range(2):                                   # two rounds: fresh keys each
        xs = [rng.normal(0, 50, 7) for _ in clients]
        out, survivors = msa_round(server, clients, xs, silent=silent)
        alive = [x for i, x in enumerate(xs) if i not in silent]
        assert survivors == tuple(i for i in range(6) if i not in silent)
        assert server.last_dropped == tuple(silent)
        assert grid(out) == fixed_sum(alive)
    # every client of the run, a dropped one included, decodes the same
    xs = [rng.normal(0, 50, 7) for _ in clients]
    req = open_round(server, clients)
    for c, x in zip(clients, xs):
        if c.client_id not in silent:
            send(server, c.respond(req, x))
    agg = close_round(server, clients)
    want = fixed_sum([x for i, x in enumerate(xs) if i not in silent])
    for c in clients:
        assert grid(c.unmask(agg)) == want


@pytest.mark.parametrize("degree", [0, 4])
def test_three_dropouts_of_six_with_threshold_four_raise(degree):
    server, clients = setup_msa(6, 3, threshold=4, degree=degree)
    xs = [np.full(3, float(i)) for i in range(6)]
    with pytest.raises(ProtocolError, match="threshold"):
        msa_round(server, clients, xs, silent=(1, 3, 5))
    # the run goes on: the next round with every client is exact
    out, _ = msa_round(server, clients, xs)
    assert out.tolist() == [15.0] * 3


def _output_key(group_key, client_id):
    """The output-mask key of a client, from the documented derivation."""
    return hashlib.sha256(b"pyfkm/msa/output/v3" + group_key
                          + struct.pack("<I", client_id)).digest()


@pytest.mark.parametrize("n_clients", [1, 2, 3, 5])
def test_masks_are_self_pair_and_output_streams(n_clients):
    # each client's mask is its self stream + its signed pair streams + its
    # output stream; over all clients the pair streams cancel, leaving the
    # self streams (removed by the server) and the output streams (removed
    # by the clients).  Streams from the oracle ChaCha20.
    n = 9
    server, clients = setup_msa(n_clients, n)
    gk = clients[0]._group_key
    assert all(c._group_key == gk for c in clients)
    for _ in range(2):
        req = open_round(server, clients)
        rnd = req.round
        masks = [[int(v) for v in c.mask(rnd)] for c in clients]
        selfs = [oracle_stream(c._m._round["b"], rnd, SELF_TAG, n) for c in clients]
        outs = [oracle_stream(_output_key(gk, c.client_id), rnd, OUTPUT_TAG, n) for c in clients]
        for j in range(n):
            assert (sum(m[j] for m in masks) - sum(s[j] for s in selfs)
                    - sum(o[j] for o in outs)) % M64 == 0
        keys = [c._m._round["keys"] for c in clients]
        for c, k in zip(clients, keys):
            assert set(k) == {o.client_id for o in clients} - {c.client_id}
            for o, key in k.items():
                assert keys[o][c.client_id] == key            # both ends derive the same
        if n_clients == 2:
            pair = oracle_stream(keys[0][1], rnd, MSA_TAG, n)
            assert masks[0] == [(s + p + o) % M64 for s, p, o in zip(selfs[0], pair, outs[0])]
            assert masks[1] == [(s - p + o) % M64 for s, p, o in zip(selfs[1], pair, outs[1])]
        for c in clients:
            send(server, c.respond(req, np.zeros(n)))
        assert close_round(server, clients).payload.tolist() == \
            [sum(o[j] for o in outs) % M64 for j in range(n)]     # only output masks left


def test_masks_differ_across_rounds_and_runs():
    server, clients = setup_msa(2, 16)
    req = open_round(server, clients)
    m1 = [c.mask(req.round) for c in clients]
    req2 = open_round(server, clients)
    m2 = [c.mask(req2.round) for c in clients]
    server2, clients2 = setup_msa(2, 16)
    req3 = open_round(server2, clients2)
    assert req3.round == req.round
    other = [c.mask(req3.round) for c in clients2]
    for a, b, o in zip(m1, m2, other):
        assert not np.array_equal(a, b)
        assert not np.array_equal(a, o)
    assert not np.array_equal(m1[0], m1[1])


def test_secure_sum_equals_integer_oracle_and_server_sees_masked_words():
    rng = np.random.default_rng(3)
    server, clients = setup_msa(4, 50)
    for _ in range(3):
        xs = [rng.normal(0, 100, 50) for _ in clients]
        req = open_round(server, clients)
        for c, x in zip(clients, xs):
            send(server, c.respond(req, x))
        held = [server._open["got"][c.client_id] for c in clients]
        for x, h in zip(xs, held):
            assert not np.array_equal(h, encode_fixed(x))
        agg = close_round(server, clients)
        plain = fixed_sum(xs)
        assert [int(v) for v in agg.payload.view(np.int64)] != plain     # output-masked
        for c in clients:
            dec = c.unmask(agg)
            assert [int(v) for v in np.ldexp(dec, 16)] == plain


@pytest.mark.parametrize("silent", [(), (3,)])
def test_server_state_holds_no_client_secret(monkeypatch, silent):
    # collect every client secret of a run by introspection (channel keys,
    # their symmetric channel keys, round keys, self seeds, pair keys, the
    # group key and output-mask keys, noise keys) and look for each in
    # every byte the server holds, after every step.  After the round the
    # server has, by design, reconstructed the survivors' self seeds and
    # the dropped clients' round keys (and so their pair keys with the
    # survivors): those are left out of the final check only.
    secrets, channel = {}, []
    orig_new, orig_channel = _masking.new_key, _masking.channel_key

    def new_key():
        k = orig_new()
        secrets.setdefault("x25519", []).append(k)
        return k

    def channel_key(*args):
        k = orig_channel(*args)
        channel.append(k)
        return k

    def new_noise_key():
        k = privacy.new_noise_key()
        secrets.setdefault("noise", []).append(k)
        return k

    monkeypatch.setattr(_masking, "new_key", new_key)
    monkeypatch.setattr(_masking, "channel_key", channel_key)
    monkeypatch.setattr(_noise, "new_noise_key", new_noise_key)

    server, clients = setup_msa(4, 5, threshold=3)
    # the clients' X25519 keys: their channel keys now, their round keys below
    client_publics = set(server.roster().public_keys)
    gk = clients[0]._group_key
    found = {"group": [gk], "output": [_output_key(gk, c.client_id) for c in clients],
             "channel": channel, "self": [], "pair": []}

    def secret_list():
        out = [(kind, s) for kind, ss in found.items() for s in ss]
        out += [("x25519", raw_private(k)) for k in secrets.get("x25519", ())
                if raw_public(k) in client_publics]
        return out + [("noise", k) for k in secrets.get("noise", ())]

    def check(skip=()):
        held = server_bytes(server)
        for kind, s in secret_list():
            if s not in skip:
                assert not any(s in h for h in held), f"a client's {kind} secret at the server"

    # the walker finds secrets where they are: in the clients
    assert any(gk in h for h in server_bytes(clients[1], strict=False))
    check()
    rmsg = server.start_round()
    round_keys = {}
    for c in clients:
        msg = c.share_keys(rmsg)
        server.receive_shares(msg)
        round_keys[c.client_id] = msg.round_key
        client_publics.add(msg.round_key)
        found["self"].append(c._m._round["b"])
    assert any(found["self"][0] in h for h in server_bytes(clients[0], strict=False))
    check()
    pairs = {}
    for c in clients:
        c.receive_shares(server.bundle(c.client_id))
        pairs[c.client_id] = dict(c._m._round["keys"])
        found["pair"].extend(pairs[c.client_id].values())
    check()
    req = server.request_inputs()
    for c in clients:
        if c.client_id not in silent:
            send(server, c.respond(req, np.arange(5.0), noise=((5, 1.0, b"SUM"),)))
    assert len(secrets["noise"]) == 4 - len(silent)
    check()
    ureq = server.unmask_request()
    for c in clients:
        if c.client_id in ureq.survivors:
            server.receive_unmask(c.unmask_shares(ureq))
    check()
    server.finish_round()
    revealed = {found["self"][i] for i in range(4) if i not in silent}
    for d in silent:
        revealed |= set(pairs[d].values())
        revealed |= {raw_private(k) for k in secrets["x25519"]
                     if raw_public(k) == round_keys[d]}
    assert len(revealed) == (4 - len(silent)) + 4 * len(silent)   # seeds; 3 pair keys + 1 key each
    assert len([k for k in secrets["x25519"] if raw_public(k) in client_publics]) == 8
    check(revealed)
