"""Masked secure aggregation (MSA) in Z_2^64: fixed point, masks, messages, roles.

Oracles: Python integers mod 2**64, a pure-Python ChaCha20 block function
(RFC 8439, checked against the RFC's test vector), exact rationals for the
fixed-point rounding.
"""
import pickle
import struct
from fractions import Fraction

import numpy as np
import pytest

from pyfkm.exceptions import (CapacityError, InvalidInputError, MessageFormatError,
                              ProtocolError)
from pyfkm.secagg._messages import VERSION, RoundMessage
from pyfkm.secagg._msa import (MSA_TAG, OUTPUT_TAG, AggregateMessage, GroupKeyMessage,
                               MaskedVectorMessage, MsaClient, MsaRosterMessage, MsaServer,
                               decode_fixed, encode_fixed, encoding_limit, mask_stream,
                               setup_msa)

M64 = 1 << 64
RUN = bytes(range(16))


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


def test_client_share_overflow_raises_and_changes_nothing():
    server, (a, b) = setup_msa(2, 3, noise=None, random_state=1)
    r = server.start_round()
    big = encoding_limit(2) / 2.0 ** 16 * 1.01
    with pytest.raises(CapacityError):
        a.respond(r, [0.0, big, 0.0])
    # the client can still answer the same round (nothing was consumed)
    server.receive(a.respond(r, [1.0, 2.0, 3.0]))
    server.receive(b.respond(r, [1.0, 1.0, 1.0]))
    assert a.unmask(server.finish_round()).tolist() == [2.0, 3.0, 4.0]


def test_respond_wrong_length_and_reused_round():
    server, (a, b) = setup_msa(2, 3, noise=None, random_state=2)
    r = server.start_round()
    with pytest.raises(InvalidInputError):
        a.respond(r, [1.0, 2.0])
    a.respond(r, [1.0, 2.0, 3.0])
    with pytest.raises(ProtocolError, match="never reused"):
        a.respond(r, [1.0, 2.0, 3.0])


def test_server_errors_leave_round_open():
    server, (a, b) = setup_msa(2, 2, noise=None, random_state=3)
    r = server.start_round()
    ma = a.respond(r, [1.0, 2.0])
    server.receive(ma)
    with pytest.raises(ProtocolError, match="duplicate"):
        server.receive(ma)
    with pytest.raises(ProtocolError, match="no message from clients"):
        server.finish_round()
    with pytest.raises(ProtocolError):                      # another run
        server.receive(MaskedVectorMessage(RUN, r.round, 1, np.zeros(2, np.uint64)))
    with pytest.raises(ProtocolError, match="round"):
        server.receive(MaskedVectorMessage(server.run_id, r.round + 1, 1, np.zeros(2, np.uint64)))
    with pytest.raises(ProtocolError, match="words"):
        server.receive(MaskedVectorMessage(server.run_id, r.round, 1, np.zeros(3, np.uint64)))
    server.receive(b.respond(r, [3.0, 4.0]))
    assert a.unmask(server.finish_round()).tolist() == [4.0, 6.0]


def test_setup_msa_three_clients_and_missing_participant():
    server, clients = setup_msa(3, 2, noise=None, random_state=4)
    r = server.start_round()
    for c in clients[:2]:
        server.receive(c.respond(r, [1.0, 1.0]))
    with pytest.raises(ProtocolError):
        server.finish_round()
    server.receive(clients[2].respond(r, [1.0, -5.0]))
    agg = server.finish_round()
    assert [c.unmask(agg).tolist() for c in clients] == [[3.0, -3.0]] * 3


def test_tampered_group_key_is_rejected():
    run = b"r" * 16
    a, b = MsaClient(0, random_state=5), MsaClient(1, random_state=6)
    server = MsaServer(run, 2, noise=None)
    for c in (a, b):
        server.receive_key(c.key_message(run))
    for c in (a, b):
        c.receive_roster(server.roster())
    (gk,) = a.group_key_messages()
    bad = GroupKeyMessage(run, 0, 1, gk.nonce, bytes([gk.ciphertext[0] ^ 1]) + gk.ciphertext[1:])
    with pytest.raises(ProtocolError, match="authentication"):
        b.receive_group_key(bad)
    with pytest.raises(ProtocolError, match="group key"):
        b.respond(RoundMessage(run, 1, (0, 1)), [0.0, 0.0])
    b.receive_group_key(gk)


def test_noise_segments_validated():
    server, (a, b) = setup_msa(2, 3, noise="gaussian", random_state=7)
    r = server.start_round()
    for c in (a, b):
        server.receive(c.respond(r, [0.0, 0.0, 0.0]))
    with pytest.raises(InvalidInputError):
        server.finish_round([(2, 1.0, b"SUM")])
    with pytest.raises(InvalidInputError):
        server.finish_round([(2, 1.0, b"SUM"), (1, 1.0, b"SUM")])
    with pytest.raises(InvalidInputError):
        server.finish_round([(2, 1.0, b"SUM"), (1, -1.0, b"CNT")])
    server.finish_round([(2, 1.0, b"SUM"), (1, 1.0, b"CNT")])


# ------------------------------------------------------------ messages

def _examples():
    w = np.array([0, 1, M64 - 1, 1 << 63], dtype=np.uint64)
    return [
        MsaRosterMessage(RUN, 7, 16, (0, 3, 9), (b"a" * 32, b"b" * 32, b"c" * 32)),
        GroupKeyMessage(RUN, 0, 3, b"n" * 12, b"x" * 48),
        MaskedVectorMessage(RUN, 5, 3, w),
        AggregateMessage(RUN, 5, w),
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
    a = AggregateMessage(RUN, 5, np.zeros(2, np.uint64)).to_bytes()
    with pytest.raises(MessageFormatError):
        AggregateMessage.from_bytes(a[:32] + struct.pack("<I", 1) + a[36:])
    # roster with ids not increasing
    r = MsaRosterMessage(RUN, 7, 16, (0, 3), (b"a" * 32, b"b" * 32)).to_bytes()
    off = 44 + 9
    swapped = r[:off] + struct.pack("<I", 5) + r[off + 4:]
    with pytest.raises(MessageFormatError):
        MsaRosterMessage.from_bytes(swapped)
    with pytest.raises(InvalidInputError):
        MsaRosterMessage(RUN, 0, 16, (0,), (b"a" * 32,))


# ------------------------------------------------------------ fixed point

def test_fixed_point_round_trip_matches_exact_rounding():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 1e3, 500), rng.uniform(-1, 1, 500),
                        [0.0, -0.0, 2.0 ** -17, -(2.0 ** -17), 3 * 2.0 ** -17, 2.0 ** 40]])
    w = encode_fixed(x)
    for xi, wi in zip(x, w):
        exact = Fraction(float(xi)) * 2 ** 16
        fl = exact.numerator // exact.denominator
        rem = exact - fl
        v = fl + (1 if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and fl % 2) else 0)
        assert int(wi) == v % M64                       # two's complement, half to even
    back = decode_fixed(w)
    assert np.all(np.abs(back - x) <= 2.0 ** -17)


# ------------------------------------------------------------ masks

def test_mask_stream_is_chacha20_keystream():
    key = bytes(range(100, 132))
    got = mask_stream(key, 7, MSA_TAG, 20)
    assert [int(v) for v in got] == oracle_stream(key, 7, MSA_TAG, 20)


@pytest.mark.parametrize("n_clients", [1, 2, 3, 5])
def test_masks_cancel_exactly(n_clients):
    _, clients = setup_msa(n_clients, 9, noise=None, random_state=10 + n_clients)
    for rnd in (1, 2, 1000):
        total = 0
        masks = [[int(v) for v in c.mask(rnd)] for c in clients]
        out = oracle_stream(clients[0]._group_key, rnd, OUTPUT_TAG, 9)
        for j in range(9):
            total = (sum(m[j] for m in masks) - out[j]) % M64
            assert total == 0
        if n_clients > 1:
            # pairwise masks of the pair (0, 1) follow the oracle stream
            s01 = clients[0].pair_seed(1)
            assert s01 == clients[1].pair_seed(0)
            if n_clients == 2:
                want = [(p + o) % M64 for p, o in zip(oracle_stream(s01, rnd, MSA_TAG, 9), out)]
                assert masks[0] == want
                assert masks[1] == [(-p) % M64 for p in oracle_stream(s01, rnd, MSA_TAG, 9)]


def test_masks_differ_across_rounds_and_runs():
    _, (a, b) = setup_msa(2, 16, noise=None, random_state=20)
    _, (a2, _b2) = setup_msa(2, 16, noise=None, random_state=21)
    m1, m2 = a.mask(1), a.mask(2)
    assert not np.array_equal(m1, m2)
    assert not np.array_equal(m1, a2.mask(1))
    assert not np.array_equal(b.mask(1), b.mask(2))


def test_secure_sum_equals_integer_oracle_and_server_sees_masked_words():
    rng = np.random.default_rng(3)
    server, clients = setup_msa(4, 50, noise=None, random_state=30)
    for _ in range(3):
        xs = [rng.normal(0, 100, 50) for _ in clients]
        r = RoundMessage.from_bytes(server.start_round().to_bytes())
        for c, x in zip(clients, xs):
            server.receive(MaskedVectorMessage.from_bytes(c.respond(r, x).to_bytes()))
        held = list(server._open[1].values())
        for x, h in zip(xs, held):
            assert not np.array_equal(h, encode_fixed(x))
        agg = AggregateMessage.from_bytes(server.finish_round().to_bytes())
        plain = [sum(int(round(Fraction(float(x[j])) * 2 ** 16)) for x in xs) for j in range(50)]
        assert [int(v) for v in agg.payload.view(np.int64)] != plain     # output-masked
        for c in clients:
            dec = c.unmask(agg)
            assert [int(v) for v in np.ldexp(dec, 16)] == plain


def test_clients_pickle_after_roster():
    server, (a, b) = setup_msa(2, 3, noise=None, random_state=40)
    a2 = pickle.loads(pickle.dumps(a))
    assert np.array_equal(a2.mask(3), a.mask(3))


# ------------------------------------------------------------ noise

def _noisy_round(seed, sigma, n=4000, mode="gaussian", rounds=1):
    server, (a, b) = setup_msa(2, n + 10, noise=mode, random_state=seed)
    outs = []
    for _ in range(rounds):
        r = server.start_round()
        for c in (a, b):
            server.receive(c.respond(r, np.zeros(n + 10)))
        outs.append(a.unmask(server.finish_round([(n, sigma, b"SUM"), (10, sigma, b"CNT")])))
    return outs


@pytest.mark.parametrize("mode", ["gaussian", "discrete_gaussian"])
def test_noise_scale_and_grid(mode):
    (v,) = _noisy_round(50, 2.0, mode=mode)
    s = v[:4000]
    # sample sd of 4000 N(0, 4): sd of the estimate ~ 2/sqrt(8000) = 0.022; 0.2 is 9 sd
    assert abs(s.std() - 2.0) < 0.2 and abs(s.mean()) < 0.2
    assert np.array_equal(np.ldexp(v, 16), np.rint(np.ldexp(v, 16)))    # on the grid


def test_noise_reproducible_and_fresh_each_round():
    a1, a2 = _noisy_round(60, 1.0, n=100, rounds=2)
    b1, b2 = _noisy_round(60, 1.0, n=100, rounds=2)
    c1, _ = _noisy_round(61, 1.0, n=100, rounds=2)
    assert np.array_equal(a1, b1) and np.array_equal(a2, b2)
    assert not np.array_equal(a1, a2)
    assert not np.array_equal(a1, c1)
    # sum and count segments use different streams
    assert not np.array_equal(a1[:10], a1[100:110])


def test_laplace_noise_scale():
    (v,) = _noisy_round(70, 1.5, mode="laplace")
    # Laplace(b): E|X| = b; sd of the mean of 4000 |X| is b/sqrt(4000) = 0.024
    assert abs(np.abs(v[:4000]).mean() - 1.5) < 0.2


def test_mask_stream_fallback_is_the_same_keystream(monkeypatch):
    import pyfkm.secagg._msa as msa
    key = bytes(range(7, 39))
    fast = [int(v) for v in mask_stream(key, 3, OUTPUT_TAG, 11)]
    monkeypatch.setattr(msa, "_ChaChaStream", None)
    slow = [int(v) for v in msa.mask_stream(key, 3, OUTPUT_TAG, 11)]
    assert fast == slow == oracle_stream(key, 3, OUTPUT_TAG, 11)


def test_discrete_sigma_range_checked_before_the_round_closes():
    server, (a, b) = setup_msa(2, 3, noise="discrete_gaussian", random_state=80)
    r = server.start_round()
    for c in (a, b):
        server.receive(c.respond(r, [1.0, 2.0, 3.0]))
    with pytest.raises(CapacityError):
        server.finish_round([(2, 2.0 ** 15, b"SUM"), (1, 1.0, b"CNT")])   # 2**31 units
    out = a.unmask(server.finish_round([(2, 1e-3, b"SUM"), (1, 1e-3, b"CNT")]))
    assert np.allclose(out, [2.0, 4.0, 6.0], atol=0.05)


def test_noise_sample_of_exactly_2_62_is_refused(monkeypatch):
    # |clients' sum| <= 2**62 and |noise| <= 2**62 could reach 2**63 and wrap
    # (found by review): the server refuses noise samples of magnitude 2**62
    from pyfkm import privacy
    from pyfkm.exceptions import CapacityError
    from pyfkm.secagg import _msa

    server, clients = _msa.setup_msa(1, 1, noise="laplace", random_state=0)
    monkeypatch.setattr(privacy.NoiseStream, "laplace",
                        lambda self, n, scale: np.full(n, 2.0 ** 46))
    r = server.start_round()
    server.receive(clients[0].respond(r, [2.0 ** 46]))
    with pytest.raises(CapacityError, match="2\\*\\*62"):
        server.finish_round(((1, 1.0, b"SUM"),))
