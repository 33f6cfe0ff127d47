"""Masked secure aggregation (MSA) in Z_2^64: fixed point, masks, messages, roles.

Oracles: Python integers mod 2**64, a pure-Python ChaCha20 block function
(RFC 8439, checked against the RFC's test vector), exact rationals for the
fixed-point rounding, scipy's chi-square quantiles for the noise variances.

Every key of a run comes from the OS (no seed reaches any of them), so the
tests check properties that hold for every draw: exact sums, cancellation
of the masks against the oracle streams, refusals, and variances within
bounds whose false-alarm rate is stated (1e-6 per test) together with the
power to see the smallest error of interest.
"""
import dataclasses
import hashlib
import inspect
import os
import pickle
import struct
from fractions import Fraction

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from scipy.stats import chi2

from pyfkm.core import noise as privacy
from pyfkm.exceptions import (
    CapacityError,
    InvalidInputError,
    MessageFormatError,
    ProtocolError,
    PyfkmError,
)
from pyfkm.secagg import _masking
from pyfkm.secagg._framing import VERSION
from pyfkm.secagg._keys import mac, raw_private, raw_public
from pyfkm.secagg._messages import (
    InputRequest,
    RoundMessage,
    ShareBundle,
    ShareMessage,
    UnmaskMessage,
    UnmaskRequest,
)
from pyfkm.secagg.msa import (
    AggregateMessage,
    GroupKeyMessage,
    MaskedVectorMessage,
    MsaClient,
    MsaRosterMessage,
    MsaServer,
    msa_round,
    setup_msa,
)
from pyfkm.secagg.msa import _client, _fixed
from pyfkm.secagg.msa._fixed import (
    MSA_TAG,
    OUTPUT_TAG,
    SELF_TAG,
    decode_fixed,
    encode_fixed,
    encoding_limit,
    mask_stream,
)

M64 = 1 << 64
RUN = bytes(range(16))
KEY = bytes(range(1, 33))


# ------------------------------------------------------------ oracle: ChaCha20

def _rotl(v, c):
    return ((v << c) & 0xFFFFFFFF) | (v >> (32 - c))


def _qr(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = _rotl(s[b] ^ s[c], 7)


def chacha20_block(key, counter, nonce12):
    """RFC 8439 section 2.3, written from the RFC."""
    const = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
    st = const + list(struct.unpack("<8I", key)) + [counter] + list(struct.unpack("<3I", nonce12))
    w = st[:]
    for _ in range(10):
        _qr(w, 0, 4, 8, 12); _qr(w, 1, 5, 9, 13); _qr(w, 2, 6, 10, 14); _qr(w, 3, 7, 11, 15)
        _qr(w, 0, 5, 10, 15); _qr(w, 1, 6, 11, 12); _qr(w, 2, 7, 8, 13); _qr(w, 3, 4, 9, 14)
    return struct.pack("<16I", *[(a + b) & 0xFFFFFFFF for a, b in zip(w, st)])


def oracle_stream(key, round_, tag, n):
    nonce = struct.pack("<Q", round_) + tag
    raw = b"".join(chacha20_block(key, c, nonce) for c in range((8 * n + 63) // 64))
    return [int.from_bytes(raw[8 * i:8 * i + 8], "little") for i in range(n)]


def test_oracle_chacha_matches_rfc8439_vector():
    key = bytes(range(32))
    nonce = bytes.fromhex("000000090000004a00000000")
    out = chacha20_block(key, 1, nonce)
    assert out[:16].hex() == "10f1e7e4d13b5915500fdd1fa32071c4"   # RFC 8439, 2.3.2


# ------------------------------------------------------------ oracle: fixed-point sums

def fixed(x, scale_bits=16):
    """round(x * 2**scale_bits), half to even, with exact rationals."""
    return round(Fraction(float(x)) * 2 ** scale_bits)


def grid(decoded, scale_bits=16):
    """A decoded sum in grid units (Python ints; exact below 2**53)."""
    return [int(v) for v in np.ldexp(decoded, scale_bits)]


def fixed_sum(vectors, scale_bits=16):
    """The exact fixed-point sum of ``vectors`` (Python ints)."""
    return [sum(fixed(v[j], scale_bits) for v in vectors) for j in range(len(vectors[0]))]


# ------------------------------------------------------------ round helpers

def open_round(server, clients):
    """Steps 1-2 of a round (every message through its bytes); the input request."""
    rmsg = RoundMessage.from_bytes(server.start_round().to_bytes())
    for c in clients:
        server.receive_shares(ShareMessage.from_bytes(c.share_keys(rmsg).to_bytes()))
    for c in clients:
        c.receive_shares(ShareBundle.from_bytes(server.bundle(c.client_id).to_bytes()))
    return InputRequest.from_bytes(server.request_inputs().to_bytes())


def send(server, msg):
    server.receive(MaskedVectorMessage.from_bytes(msg.to_bytes()))


def close_round(server, clients, segments=()):
    """Step 4 for the survivors the server names; the aggregate broadcast."""
    ureq = UnmaskRequest.from_bytes(server.unmask_request().to_bytes())
    for c in clients:
        if c.client_id in ureq.survivors:
            server.receive_unmask(UnmaskMessage.from_bytes(c.unmask_shares(ureq).to_bytes()))
    return AggregateMessage.from_bytes(server.finish_round(segments).to_bytes())


def setup_with_server(n, n_words, **server_kw):
    """setup_msa with a server built here (to pass ``noise_key``)."""
    run_id = os.urandom(16)
    server = MsaServer(run_id, n_words, **server_kw)
    clients = [MsaClient(i) for i in range(n)]
    for c in clients:
        server.receive_key(c.key_message(run_id))
    roster = server.roster()
    for c in clients:
        c.receive_roster(roster)
    for m in clients[0].group_key_messages():
        server.relay_group_key(m)
    for c in clients[1:]:
        c.receive_group_key(server.group_key_for(c.client_id))
    return server, clients


# ------------------------------------------------------------ errors first

def test_encode_rejects_nan():
    with pytest.raises(InvalidInputError, match="NaN"):
        encode_fixed([0.0, np.nan])


@pytest.mark.parametrize("x", [2.0 ** 46 + 1, -(2.0 ** 46) - 1, np.inf, -np.inf, 1e300])
def test_encode_overflow_raises_instead_of_wrapping(x):
    with pytest.raises(CapacityError):
        encode_fixed([0.5, x])


def test_encode_limit_boundary():
    assert int(encode_fixed([2.0 ** 46])[0]) == 1 << 62
    with pytest.raises(CapacityError):
        encode_fixed([2.0 ** 46 + 2.0 ** -6])   # next float above the limit
    assert encoding_limit(4) == (1 << 62) // 4


def test_no_random_state_reaches_the_keys():
    # the API takes no seed, and seeding numpy's global generator fixes nothing
    assert "random_state" not in inspect.signature(setup_msa).parameters
    assert "random_state" not in inspect.signature(MsaServer).parameters
    with pytest.raises(TypeError):
        MsaClient(0, random_state=1)
    runs, state = [], np.random.get_state()
    try:
        for _ in range(2):
            np.random.seed(0)
            server, _ = setup_msa(2, 3)
            runs.append((server.run_id, server.roster().public_keys,
                         server.roster().server_key))
    finally:
        np.random.set_state(state)
    assert runs[0][0] != runs[1][0]
    assert not set(runs[0][1]) & set(runs[1][1]) and runs[0][2] != runs[1][2]


def test_client_share_overflow_raises_and_changes_nothing():
    server, (a, b) = setup_msa(2, 3)
    req = open_round(server, (a, b))
    # a share may use 2**62 / (2 n) of the ring: the noise gets the other half
    big = encoding_limit(4) / 2.0 ** 16 * 1.01
    with pytest.raises(CapacityError):
        a.respond(req, [0.0, big, 0.0])
    # the client can still answer the same round (nothing was consumed)
    send(server, a.respond(req, [1.0, 2.0, 3.0]))
    send(server, b.respond(req, [1.0, 1.0, 1.0]))
    assert a.unmask(close_round(server, (a, b))).tolist() == [2.0, 3.0, 4.0]


def test_respond_wrong_length_and_answered_twice():
    server, (a, b) = setup_msa(2, 3)
    req = open_round(server, (a, b))
    with pytest.raises(InvalidInputError):
        a.respond(req, [1.0, 2.0])
    a.respond(req, [1.0, 2.0, 3.0])
    with pytest.raises(ProtocolError):
        a.respond(req, [1.0, 2.0, 3.0])
    # and a round is never shared twice (its mask streams would repeat)
    with pytest.raises(ProtocolError, match="never reused"):
        a.share_keys(RoundMessage(server.run_id, req.round, (0, 1)))


def test_client_refuses_a_round_below_the_threshold():
    server, clients = setup_msa(5, 2)                  # threshold 3
    assert server.roster().threshold == 3
    with pytest.raises(ProtocolError, match="threshold"):
        clients[0].share_keys(RoundMessage(server.run_id, 1, (0, 1)))
    with pytest.raises(ProtocolError, match="threshold"):
        server.start_round((0, 1))
    # the client is unchanged: it takes the round over three
    clients[0].share_keys(RoundMessage(server.run_id, 1, (0, 1, 2)))


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


def test_setup_msa_three_clients_and_a_missing_participant():
    # threshold 3 of 3: a missing message makes the round fail, never a wrong sum
    server, clients = setup_msa(3, 2, threshold=3)
    req = open_round(server, clients)
    for c in clients[:2]:
        send(server, c.respond(req, [1.0, 1.0]))
    with pytest.raises(ProtocolError, match="below the threshold"):
        server.unmask_request()
    send(server, clients[2].respond(req, [1.0, -5.0]))
    agg = close_round(server, clients)
    assert [c.unmask(agg).tolist() for c in clients] == [[3.0, -3.0]] * 3
    # threshold 2 of 3: the missing client is a dropout, the round sums the others
    server, clients = setup_msa(3, 2)
    req = open_round(server, clients)
    for c in clients[:2]:
        send(server, c.respond(req, [1.0, 1.0]))
    agg = close_round(server, clients)
    assert agg.survivors == (0, 1) and server.last_dropped == (2,)
    assert [c.unmask(agg).tolist() for c in clients] == [[2.0, 2.0]] * 3


def test_tampered_group_key_is_rejected():
    run = b"r" * 16
    a, b = MsaClient(0), MsaClient(1)
    server = MsaServer(run, 2)
    for c in (a, b):
        server.receive_key(c.key_message(run))
    for c in (a, b):
        c.receive_roster(server.roster())
    (gk,) = a.group_key_messages()
    bad = GroupKeyMessage(run, 0, 1, gk.nonce, bytes([gk.ciphertext[0] ^ 1]) + gk.ciphertext[1:])
    with pytest.raises(ProtocolError, match="authentication"):
        b.receive_group_key(bad)
    with pytest.raises(ProtocolError, match="group key"):
        b.share_keys(RoundMessage(run, 1, (0, 1)))
    b.receive_group_key(gk)
    b.share_keys(RoundMessage(run, 1, (0, 1)))


def test_noise_modes_and_segments_validated():
    with pytest.raises(InvalidInputError, match="noise"):
        MsaServer(RUN, 3, noise="discrete_gaussian")     # distributed: the clients add it
    with pytest.raises(InvalidInputError, match="noise_key"):
        MsaServer(RUN, 3, noise="gaussian", noise_key=b"short")
    server, clients = setup_msa(2, 3, noise="gaussian")
    req = open_round(server, clients)
    for bad in ([(2, 1.0, b"SUM")], [(2, 1.0, b"SUM"), (1, 1.0, b"SUM")],
                [(2, 1.0, b"SUM"), (1, -1.0, b"CNT")], [(2, np.nan, b"SUM"), (1, 1.0, b"C")],
                [(2, 1.0, b""), (1, 1.0, b"CNT")], [(2, 1.0, b"TOOLONG"), (1, 1.0, b"C")]):
        with pytest.raises(InvalidInputError):           # the client's noise share
            clients[0].respond(req, [0.0, 0.0, 0.0], noise=bad)
    for c in clients:
        send(server, c.respond(req, [0.0, 0.0, 0.0]))
    ureq = server.unmask_request()
    for c in clients:
        server.receive_unmask(c.unmask_shares(ureq))
    for bad in ([(2, 1.0, b"SUM")], [(2, 1.0, b"SUM"), (1, 1.0, b"SUM")],
                [(2, 1.0, b"SUM"), (1, -1.0, b"CNT")]):
        with pytest.raises(InvalidInputError):           # the server's baseline noise
            server.finish_round(bad)
    server.finish_round([(2, 1.0, b"SUM"), (1, 1.0, b"CNT")])
    # a server without a noise mode adds none, and says so
    server, clients = setup_msa(2, 3)
    req = open_round(server, clients)
    for c in clients:
        send(server, c.respond(req, [0.0, 0.0, 0.0]))
    ureq = server.unmask_request()
    for c in clients:
        server.receive_unmask(c.unmask_shares(ureq))
    with pytest.raises(InvalidInputError, match="no noise"):
        server.finish_round([(3, 1.0, b"SUM")])
    server.finish_round()


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


def test_late_input_is_refused_and_stays_masked():
    # a client whose input arrives after the server named the survivors is
    # refused (the round is past inputs); the sum is the survivors'
    server, clients = setup_msa(4, 2, threshold=3)
    req = open_round(server, clients)
    for c in clients[:3]:
        send(server, c.respond(req, [1.0, 2.0]))
    late = clients[3].respond(req, [100.0, 100.0])
    ureq = server.unmask_request()
    with pytest.raises(ProtocolError):
        server.receive(late)
    for c in clients[:3]:
        server.receive_unmask(c.unmask_shares(ureq))
    assert clients[3].unmask(server.finish_round()).tolist() == [3.0, 6.0]


# ------------------------------------------------------------ messages

def _examples():
    w = np.array([0, 1, M64 - 1, 1 << 63], dtype=np.uint64)
    return [
        MsaRosterMessage(RUN, 7, 16, (0, 3, 9), (b"a" * 32, b"b" * 32, b"c" * 32), 2, 2,
                         b"s" * 32),
        GroupKeyMessage(RUN, 0, 3, b"n" * 12, b"x" * 48),
        MaskedVectorMessage(RUN, 5, 3, w, b"t" * 16),
        AggregateMessage(RUN, 5, w, (0, 3, 9)),
    ]


@pytest.mark.parametrize("msg", _examples(), ids=lambda m: type(m).__name__)
def test_message_round_trip(msg):
    data = msg.to_bytes()
    back = type(msg).from_bytes(data)
    assert back == msg
    assert back.to_bytes() == data


@pytest.mark.parametrize("msg", _examples(), ids=lambda m: type(m).__name__)
def test_message_rejects_malformed_bytes(msg):
    cls, data = type(msg), msg.to_bytes()
    for bad in (data[:-1], data + b"\0", data[:10], b"XXXX" + data[4:],
                data[:4] + bytes([VERSION + 1]) + data[5:],            # version
                data[:5] + bytes([99]) + data[6:],           # type
                data[:6] + b"\1\0" + data[8:]):              # reserved bits
        with pytest.raises(MessageFormatError):
            cls.from_bytes(bad)
    with pytest.raises(MessageFormatError):
        cls.from_bytes("not bytes")
    for other in _examples():                                # another type's bytes
        if type(other) is not cls:
            with pytest.raises(MessageFormatError):
                cls.from_bytes(other.to_bytes())


def test_message_semantic_checks():
    m = MaskedVectorMessage(RUN, 5, 3, np.zeros(2, np.uint64)).to_bytes()
    # masked vector claiming the server as sender
    with pytest.raises(MessageFormatError):
        MaskedVectorMessage.from_bytes(m[:32] + struct.pack("<I", 0xFFFFFFFF) + m[36:])
    # round 0 is not a round
    with pytest.raises(MessageFormatError):
        MaskedVectorMessage.from_bytes(m[:24] + struct.pack("<Q", 0) + m[32:])
    # a modulus where there is none
    with pytest.raises(MessageFormatError):
        MaskedVectorMessage.from_bytes(m[:36] + struct.pack("<Q", 7) + m[44:])
    with pytest.raises(InvalidInputError, match="tag"):
        MaskedVectorMessage(RUN, 5, 3, np.zeros(2, np.uint64), b"short")
    a = AggregateMessage(RUN, 5, np.zeros(2, np.uint64), (0, 1)).to_bytes()
    with pytest.raises(MessageFormatError):                  # not from the server
        AggregateMessage.from_bytes(a[:32] + struct.pack("<I", 1) + a[36:])
    with pytest.raises(MessageFormatError):                  # survivors not increasing
        AggregateMessage.from_bytes(a[:48] + struct.pack("<II", 1, 0) + a[56:])
    with pytest.raises(InvalidInputError, match="survivors"):
        AggregateMessage(RUN, 5, np.zeros(2, np.uint64), ())
    # roster: ids not increasing; threshold above the clients; odd degree
    r = MsaRosterMessage(RUN, 7, 16, (0, 3), (b"a" * 32, b"b" * 32), 2, 0, b"s" * 32).to_bytes()
    first_id = 44 + 13 + 32 + 4
    with pytest.raises(MessageFormatError):
        MsaRosterMessage.from_bytes(r[:first_id] + struct.pack("<I", 5) + r[first_id + 4:])
    with pytest.raises(MessageFormatError, match="threshold"):
        MsaRosterMessage.from_bytes(r[:49] + struct.pack("<I", 3) + r[53:])
    with pytest.raises(MessageFormatError, match="degree"):
        MsaRosterMessage.from_bytes(r[:53] + struct.pack("<I", 3) + r[57:])
    with pytest.raises(InvalidInputError):
        MsaRosterMessage(RUN, 0, 16, (0,), (b"a" * 32,))


# ------------------------------------------------------------ fixed point

def test_fixed_point_round_trip_matches_exact_rounding():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 1e3, 500), rng.uniform(-1, 1, 500),
                        [0.0, -0.0, 2.0 ** -17, -(2.0 ** -17), 3 * 2.0 ** -17, 2.0 ** 40]])
    w = encode_fixed(x)
    for xi, wi in zip(x, w):
        assert int(wi) == fixed(xi) % M64                # two's complement, half to even
    back = decode_fixed(w)
    assert np.all(np.abs(back - x) <= 2.0 ** -17)


# ------------------------------------------------------------ masks

def test_mask_stream_is_chacha20_keystream():
    key = bytes(range(100, 132))
    got = mask_stream(key, 7, MSA_TAG, 20)
    assert [int(v) for v in got] == oracle_stream(key, 7, MSA_TAG, 20)


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


def test_client_with_key_material_is_not_pickled():
    # a copy of a client could answer one round twice, or reveal both kinds
    # of share of a peer (the consistency rule lives in the client): after
    # the roster a client refuses to be pickled
    _, (a, _b) = setup_msa(2, 3)
    with pytest.raises((TypeError, PyfkmError)):
        pickle.dumps(a)


# ------------------------------------------------------------ distributed noise

ALPHA = 1e-6        # false-alarm rate of every variance test below


def chi2_bounds(n):
    return chi2.ppf(ALPHA / 2, n), chi2.ppf(1 - ALPHA / 2, n)


def chi2_power(n, ratio):
    """Probability that the test rejects when the true variance is ``ratio``
    times the hypothesised one."""
    lo, hi = chi2_bounds(n)
    return chi2.cdf(lo / ratio, n) + chi2.sf(hi / ratio, n)


class ShareSpy:
    """Records each client's noise share (int64 fixed-point words) as
    :func:`pyfkm.secagg.msa._noise.client_noise` returns it (patched where
    :meth:`MsaClient.respond` looks it up)."""

    def __init__(self, monkeypatch):
        self.last = None
        orig = _client.client_noise

        def spy(*args, **kwargs):
            out = orig(*args, **kwargs)
            self.last = out.view(np.int64).copy()
            return out

        monkeypatch.setattr(_client, "client_noise", spy)


N_WORDS, N_ROUNDS = 2000, 3      # 6000 noise words per variance test
SEGMENTS = ((1500, 2.0, b"SUM"), (500, 0.5, b"CNT"))
SIGMAS = np.repeat([2.0, 0.5], [1500, 500])


def noisy_rounds(monkeypatch, silent=(), n=6, t=4):
    """``N_ROUNDS`` noisy rounds of dyadic inputs; per round the noise of the
    decoded sum (decoded minus the exact fixed-point sum, in grid units) and
    each survivor's own share."""
    rng = np.random.default_rng()
    spy = ShareSpy(monkeypatch)
    server, clients = setup_msa(n, N_WORDS, threshold=t)
    out = []
    for _ in range(N_ROUNDS):
        ints = [rng.integers(-2 ** 30, 2 ** 30, N_WORDS) for _ in clients]
        req = open_round(server, clients)
        shares = {}
        for c, k in zip(clients, ints):
            if c.client_id in silent:
                continue
            send(server, c.respond(req, np.ldexp(k.astype(np.float64), -16), noise=SEGMENTS))
            shares[c.client_id] = spy.last
        agg = close_round(server, clients)
        exact = sum(k for i, k in enumerate(ints) if i not in silent)
        dec = np.ldexp(clients[0].unmask(agg), 16)
        assert np.array_equal(dec, np.rint(dec))             # on the grid
        out.append((dec.astype(np.int64) - exact, shares))
    return out


@pytest.mark.parametrize("colluders", [0, 1])
@pytest.mark.parametrize("silent", [(), (5,)])
def test_distributed_noise_variance(monkeypatch, silent, colluders):
    # n = 6, t = 4.  Each survivor adds discrete Gaussian noise of variance
    # sigma**2 / t, so the decoded sum carries sigma**2 m / t (m survivors);
    # a server colluding with client 0, which knows its own share, removes
    # that share and is left with sigma**2 (m - 1) / t.  Test: the sum of
    # squared normalised noise over 6000 words against chi2(6000), two-sided
    # at ALPHA = 1e-6; power >= 0.999 against one share too many or too few
    # (variance ratios (k +- 1) / k, k = shares left), asserted below.
    n, t = 6, 4
    m = n - len(silent)
    k = m - colluders
    z = []
    for noise, shares in noisy_rounds(monkeypatch, silent, n, t):
        assert sorted(shares) == [i for i in range(n) if i not in silent]
        assert np.array_equal(sum(shares.values()), noise)    # the shares make the noise
        left = noise - (shares[0] if colluders else 0)
        z.append(left / (np.ldexp(SIGMAS, 16) * np.sqrt(k / t)))
    z = np.concatenate(z)
    lo, hi = chi2_bounds(z.size)
    assert lo < float((z * z).sum()) < hi
    assert abs(z.mean()) < 5.0 / np.sqrt(z.size)
    assert min(chi2_power(z.size, (k - 1) / k), chi2_power(z.size, (k + 1) / k)) > 0.999


def test_noise_is_fresh_every_round_and_segment(monkeypatch):
    (a, sa), (b, sb), (c, _) = noisy_rounds(monkeypatch, n=3, t=2)
    assert not np.array_equal(a, b) and not np.array_equal(b, c)
    assert not np.array_equal(sa[0], sb[0])                  # one client, two rounds
    assert not np.array_equal(sa[0], sa[1])                  # two clients, one round
    assert not np.array_equal(a[:500], a[1500:])             # SUM and CNT streams


def test_client_noise_key_comes_from_the_os_and_never_leaves(monkeypatch):
    # every noise share is keyed by a fresh 32-byte OS key, never the same twice
    keys = []
    orig = privacy.NoiseStream.secure.__func__

    def secure(cls, key, iteration, tag):
        keys.append(bytes(key))
        return orig(cls, key, iteration, tag)

    monkeypatch.setattr(privacy.NoiseStream, "secure", classmethod(secure))
    server, clients = setup_msa(3, 4)
    for _ in range(2):
        msa_round(server, clients, [np.zeros(4)] * 3, noise=((4, 1.0, b"SUM"),))
    assert len(keys) == 6 and len(set(keys)) == 6 and all(len(k) == 32 for k in keys)
    assert server._noise_key is None
    held = _server_bytes(server)
    assert not any(k in h for k in keys for h in held)


# ------------------------------------------------------------ no client secret at the server

def _server_bytes(obj, strict=True):
    """Every byte string reachable from ``obj`` through ``vars()``, containers
    and arrays (ints as 32- and 64-byte little- and big-endian strings,
    private keys as their raw bytes); with ``strict``, raises on an opaque
    object that could hide key material (an AEAD or a private key it cannot
    read) -- a client holds its channels' AEADs, the server must hold none."""
    out, seen = [], set()

    def walk(o):
        if id(o) in seen:
            return
        seen.add(id(o))
        if isinstance(o, (bytes, bytearray, memoryview)):
            out.append(bytes(o))
        elif isinstance(o, np.ndarray):
            out.append(np.ascontiguousarray(o).tobytes())
        elif isinstance(o, bool) or o is None or isinstance(o, (float, str, np.generic)):
            pass
        elif isinstance(o, int):
            if o.bit_length() > 64:
                for n in (32, 33, 64):
                    if o.bit_length() <= 8 * n:
                        out.extend([o.to_bytes(n, "little"), o.to_bytes(n, "big")])
        elif isinstance(o, X25519PrivateKey):
            out.append(raw_private(o))
        elif isinstance(o, dict):
            for k, v in o.items():
                walk(k)
                walk(v)
        elif isinstance(o, (list, tuple, set, frozenset)):
            for v in o:
                walk(v)
        elif hasattr(o, "__dict__"):
            walk(vars(o))
        elif hasattr(type(o), "__slots__"):
            for s in type(o).__slots__:
                walk(getattr(o, s, None))
        elif strict:
            raise AssertionError(f"an opaque {type(o).__name__} in the server's state")

    walk(obj)
    return out


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
    orig_secure = privacy.NoiseStream.secure.__func__

    def new_key():
        k = orig_new()
        secrets.setdefault("x25519", []).append(k)
        return k

    def channel_key(*args):
        k = orig_channel(*args)
        channel.append(k)
        return k

    def secure(cls, key, iteration, tag):
        secrets.setdefault("noise", []).append(bytes(key))
        return orig_secure(cls, key, iteration, tag)

    monkeypatch.setattr(_masking, "new_key", new_key)
    monkeypatch.setattr(_masking, "channel_key", channel_key)
    monkeypatch.setattr(privacy.NoiseStream, "secure", classmethod(secure))

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
        held = _server_bytes(server)
        for kind, s in secret_list():
            if s not in skip:
                assert not any(s in h for h in held), f"a client's {kind} secret at the server"

    # the walker finds secrets where they are: in the clients
    assert any(gk in h for h in _server_bytes(clients[1], strict=False))
    check()
    rmsg = server.start_round()
    round_keys = {}
    for c in clients:
        msg = c.share_keys(rmsg)
        server.receive_shares(msg)
        round_keys[c.client_id] = msg.round_key
        client_publics.add(msg.round_key)
        found["self"].append(c._m._round["b"])
    assert any(found["self"][0] in h for h in _server_bytes(clients[0], strict=False))
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


# ------------------------------------------------------------ server noise (baselines)

def _noisy_round(sigma, n=4000, mode="gaussian", rounds=1, noise_key=None):
    server, (a, b) = setup_with_server(2, n + 10, noise=mode, noise_key=noise_key)
    outs = []
    for _ in range(rounds):
        req = open_round(server, (a, b))
        for c in (a, b):
            send(server, c.respond(req, np.zeros(n + 10)))
        outs.append(a.unmask(close_round(server, (a, b),
                                         [(n, sigma, b"SUM"), (10, sigma, b"CNT")])))
    return outs


def _client_noise_round(sigma, n=4000):
    server, clients = setup_msa(2, n + 10)              # threshold 2: each adds sigma**2 / 2
    out, _ = msa_round(server, clients, [np.zeros(n + 10)] * 2,
                       noise=[(n, sigma, b"SUM"), (10, sigma, b"CNT")])
    return out


@pytest.mark.parametrize("mode", ["gaussian", "discrete_gaussian"])
def test_noise_scale_and_grid(mode):
    v = _noisy_round(2.0)[0] if mode == "gaussian" else _client_noise_round(2.0)
    s = v[:4000]
    # sample sd of 4000 N(0, 4): sd of the estimate ~ 2/sqrt(8000) = 0.022; 0.2 is 9 sd
    assert abs(s.std() - 2.0) < 0.2 and abs(s.mean()) < 0.2
    assert np.array_equal(np.ldexp(v, 16), np.rint(np.ldexp(v, 16)))    # on the grid


def test_server_noise_follows_its_key_and_is_fresh_each_round():
    key = bytes(range(50, 82))
    a1, a2 = _noisy_round(1.0, n=100, rounds=2, noise_key=key)
    b1, b2 = _noisy_round(1.0, n=100, rounds=2, noise_key=key)      # another run, same key
    c1, _ = _noisy_round(1.0, n=100, rounds=2)                      # an OS key
    assert np.array_equal(a1, b1) and np.array_equal(a2, b2)
    assert not np.array_equal(a1, a2)
    assert not np.array_equal(a1, c1)
    # sum and count segments use different streams
    assert not np.array_equal(a1[:10], a1[100:110])


def test_laplace_noise_scale():
    (v,) = _noisy_round(1.5, mode="laplace")
    # Laplace(b): E|X| = b; sd of the mean of 4000 |X| is b/sqrt(4000) = 0.024
    assert abs(np.abs(v[:4000]).mean() - 1.5) < 0.2


def test_mask_stream_fallback_is_the_same_keystream(monkeypatch):
    key = bytes(range(7, 39))
    fast = [int(v) for v in mask_stream(key, 3, OUTPUT_TAG, 11)]
    monkeypatch.setattr(_fixed, "_ChaChaStream", None)
    slow = [int(v) for v in _fixed.mask_stream(key, 3, OUTPUT_TAG, 11)]
    assert fast == slow == oracle_stream(key, 3, OUTPUT_TAG, 11)


def test_discrete_sigma_range_checked_before_the_input_is_sent():
    server, (a, b) = setup_msa(2, 3)
    req = open_round(server, (a, b))
    # sigma / sqrt(t) = 2**15 / sqrt(2) real units is 2**30.5 grid units
    with pytest.raises(CapacityError, match="discrete Gaussian"):
        a.respond(req, [1.0, 2.0, 3.0], noise=[(2, 2.0 ** 15, b"SUM"), (1, 1.0, b"CNT")])
    seg = [(2, 1e-3, b"SUM"), (1, 1e-3, b"CNT")]
    for c in (a, b):
        send(server, c.respond(req, [1.0, 2.0, 3.0], noise=seg))
    out = a.unmask(close_round(server, (a, b)))
    assert np.allclose(out, [2.0, 4.0, 6.0], atol=0.05)


def test_noise_sample_of_exactly_2_62_is_refused(monkeypatch):
    # |clients' sum| <= 2**62 and |noise| <= 2**62 could reach 2**63 and wrap
    # (found by review): the server refuses noise samples of magnitude 2**62
    server, clients = setup_msa(1, 1, noise="laplace")
    monkeypatch.setattr(privacy.NoiseStream, "laplace",
                        lambda self, n, scale: np.full(n, 2.0 ** 46))
    req = open_round(server, clients)
    send(server, clients[0].respond(req, [2.0 ** 45]))   # a share's limit: 2**62 / 2
    ureq = server.unmask_request()
    server.receive_unmask(clients[0].unmask_shares(ureq))
    with pytest.raises(CapacityError, match="2\\*\\*62"):
        server.finish_round(((1, 1.0, b"SUM"),))


def test_client_noise_sample_beyond_a_share_is_refused(monkeypatch):
    # a client's noise share is held to the same capacity as its input
    server, clients = setup_msa(2, 2)
    monkeypatch.setattr(privacy.NoiseStream, "discrete_gaussian",
                        lambda self, n, sigma: np.full(n, 1 << 61, dtype=np.int64))
    req = open_round(server, clients)
    with pytest.raises(CapacityError, match="capacity"):
        clients[0].respond(req, [0.0, 0.0], noise=((2, 1.0, b"SUM"),))
    monkeypatch.undo()
    for c in clients:                                    # unchanged: answers the round
        send(server, c.respond(req, [1.0, 0.0], noise=((2, 1e-3, b"SUM"),)))
    assert np.allclose(clients[0].unmask(close_round(server, clients)), [2.0, 0.0], atol=0.05)
