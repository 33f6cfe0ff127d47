"""Tests of the pyfkm.secagg wire format: to_bytes / from_bytes of every
message type (KeyMessage, RosterMessage, RoundMessage, ShareMessage,
ShareBundle, InputRequest, SyndromeMessage, UnmaskRequest, UnmaskMessage).

Expected behaviour comes from the contract: messages are frozen dataclasses
compared by fields; ``from_bytes(to_bytes(m)) == m``; ``from_bytes`` raises
only :class:`MessageFormatError` on malformed bytes (bad magic, version or
type, truncated, trailing bytes, inconsistent lengths, values >= p, ids or
kinds out of range).  Fuzzing uses Hypothesis, derandomized: random bytes,
every truncation of valid messages, trailing bytes, and single- and
multi-byte mutations of valid messages.  A mutation that still parses must
describe exactly the bytes it came from (``to_bytes`` gives the mutated
bytes back): the encoding has one valid spelling per message, so "strict
checks" leave no unchecked byte.

Valid messages come from real runs (tests/secagg/scma/ checks their
contents), one of them with a dropout so that unmask answers carry both
kinds of share; nothing expected here is computed by pyfkm.secagg.
"""
import dataclasses
import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyfkm.exceptions import InvalidInputError
from pyfkm.field import DEFAULT_PRIME
from pyfkm.secagg import (
    InputRequest,
    KeyMessage,
    MessageFormatError,
    ProtocolError,
    RosterMessage,
    RoundMessage,
    ScmaClient,
    ScmaParams,
    ScmaServer,
    ShareBundle,
    ShareMessage,
    SyndromeMessage,
    UnmaskMessage,
    UnmaskRequest,
)
from pyfkm.secagg._messages import SHARE_CT_BYTES

P = DEFAULT_PRIME
CLASSES = (KeyMessage, RosterMessage, RoundMessage, ShareMessage, ShareBundle, InputRequest,
           SyndromeMessage, UnmaskRequest, UnmaskMessage)
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


def _run(params, ids, degree=0):
    server = ScmaServer(params, degree=degree)
    clients = {i: ScmaClient(i) for i in ids}
    keys = []
    for c in clients.values():
        km = c.key_message(params.run_id)
        keys.append(km)
        server.receive_key(km)
    roster = server.roster()
    for c in clients.values():
        c.receive_roster(roster)
    return server, clients, keys, roster


@functools.lru_cache(maxsize=None)
def valid_messages():
    """A few valid messages of every type (index and hashed mode, small and
    large p, a difference round, a dropout, a sparse graph)."""
    out = []
    rng = np.random.default_rng(5)
    for (d, B, M, p, ids, degree, silent, dn) in [
        (3, 7, 4, P, (0, 1, 2), 0, (), 0),                 # index
        (10, 173, 3, P, (4, 9), 0, (), 0),                 # hashed, 2 payload rows
        (2, 5, 2, 101, (0, 1, 2, 3), 0, (2,), 0),          # index, tiny p, a dropout
        (3, 2000, 2, 2**31 - 1, (1, 3, 8), 0, (), 1),      # hashed, p < 2**31, difference
        (2, 9, 3, P, tuple(range(0, 14, 2)), 2, (4,), 0),  # a ring of degree 2, a dropout
    ]:
        params = ScmaParams.create(d, B, M, modulus=p)
        server, clients, keys, roster = _run(params, ids, degree)
        out += keys[:2]
        out.append(roster)
        # every client draws from M bins: the aggregate decodes
        pool = np.unique(rng.integers(0, B, size=(M, d)), axis=0)
        for i in ids:
            k = int(rng.integers(0, len(pool) + 1))
            clients[i].set_data(pool[rng.permutation(len(pool))[:k]], np.ones(k, dtype=np.int64))
        for rnd in range(2 if dn else 1):    # the difference round: no change
            rm = server.start_round()
            shares = [clients[i].share_keys(rm) for i in ids]
            for m in shares:
                server.receive_shares(m)
            bundles = [server.bundle(i) for i in ids]
            for i, b in zip(ids, bundles):
                clients[i].receive_shares(b)
            req = server.request_inputs(dn if rnd else 0)
            syn = [clients[i].respond(req) for i in ids if i not in silent]
            for m in syn:
                server.receive(m)
            ur = server.unmask_request()
            answers = [clients[i].unmask(ur) for i in ur.survivors]
            for m in answers:
                server.receive_unmask(m)
            server.finish_round()
        out += [rm] + shares[:2] + bundles[:2] + [req] + syn[:2] + [ur] + answers[:2]
    return tuple(out)


def valid_bytes():
    return tuple(m.to_bytes() for m in valid_messages())


def fields_equal(a, b):
    assert type(a) is type(b)
    for name in a.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            x, y = np.asarray(x), np.asarray(y)
            if x.shape != y.shape or not np.array_equal(x, y):
                return False
        elif x != y:
            return False
    return True


def parse(cls, data):
    """from_bytes, which may only raise MessageFormatError; what it accepts
    the constructor (the checks of messages built in memory) accepts too."""
    try:
        msg = cls.from_bytes(data)
    except MessageFormatError:
        return None
    assert type(msg) is cls
    again = cls(**{f.name: getattr(msg, f.name) for f in dataclasses.fields(cls)})
    assert again == msg
    return msg


# ---------------------------------------------------------------------------
# errors

def test_message_format_error_is_protocol_error():
    assert issubclass(MessageFormatError, ProtocolError)
    assert issubclass(MessageFormatError, ValueError)


@pytest.mark.parametrize("cls", CLASSES)
def test_empty_and_garbage_bytes(cls):
    for data in (b"", b"\x00", b"\x00" * 64, b"\xff" * 200, b"SCMA", bytes(range(256))):
        with pytest.raises(MessageFormatError):
            cls.from_bytes(data)


def test_round_message_participants_are_checked():
    run = bytes(16)
    for bad in [(), (1, 1), (2, 1), (True, 2), (0, 1.0), ("0",), (-1, 3), (0, 2 ** 32 - 1),
                np.array([0.0, 1.0]), np.array([[0, 1]]), np.array([3, 2])]:
        with pytest.raises(InvalidInputError):
            RoundMessage(run, 1, bad)
    for good in [(0, 5, 9), [0, 5, 9], (np.int64(0), np.uint32(5), 9), np.array([0, 5, 9]),
                 np.array([0, 5, 9], dtype=np.uint32)]:
        msg = RoundMessage(run, 1, good)
        assert msg.participants == (0, 5, 9)
        assert all(type(i) is int for i in msg.participants)
        assert RoundMessage.from_bytes(msg.to_bytes()) == msg


def test_wrong_type_is_rejected():
    for msg in valid_messages():
        data = msg.to_bytes()
        for cls in CLASSES:
            if cls is type(msg):
                continue
            with pytest.raises(MessageFormatError):
                cls.from_bytes(data)


def test_every_truncation_and_trailing_bytes_rejected():
    for msg in valid_messages():
        cls, data = type(msg), msg.to_bytes()
        for n in range(len(data)):
            with pytest.raises(MessageFormatError):
                cls.from_bytes(data[:n])
        for extra in (b"\x00", b"\x01" * 8, data[:16]):
            with pytest.raises(MessageFormatError):
                cls.from_bytes(data + extra)


def _payload_offset(msg, data):
    raw = np.asarray(msg.payload, dtype=np.uint64).astype("<u8").tobytes()
    start = data.rfind(raw)
    assert start >= 0, "payload is not stored as little-endian uint64 words"
    return start


def test_syndrome_values_not_reduced_rejected():
    syndromes = [m for m in valid_messages() if isinstance(m, SyndromeMessage)]
    assert {int(m.modulus) for m in syndromes} == {P, 101, 2**31 - 1}
    for msg in syndromes:
        data = msg.to_bytes()
        start = _payload_offset(msg, data)
        W = len(msg.payload)
        p = int(msg.modulus)
        for k in sorted({0, W // 2, W - 1}):
            for value in (p, p + 1, 2**64 - 1, 2**63):
                bad = bytearray(data)
                bad[start + 8 * k: start + 8 * k + 8] = value.to_bytes(8, "little")
                with pytest.raises(MessageFormatError):
                    SyndromeMessage.from_bytes(bytes(bad))
            good = bytearray(data)                 # p - 1 is a valid value
            good[start + 8 * k: start + 8 * k + 8] = (p - 1).to_bytes(8, "little")
            back = SyndromeMessage.from_bytes(bytes(good))
            assert int(back.payload[k]) == p - 1


def test_dropout_round_messages_check_their_fields():
    # what the constructors refuse (messages built in memory) ...
    run, key, ct, tag = bytes(16), bytes(32), bytes(SHARE_CT_BYTES), bytes(16)
    bad = [
        lambda: ShareMessage(run, 1, 3, key, key, (3,), (ct,)),          # sender a holder
        lambda: ShareMessage(run, 1, 3, key, key, (1, 2), (ct,)),        # one ct per holder
        lambda: ShareMessage(run, 1, 3, key, key, (2, 1), (ct, ct)),     # not increasing
        lambda: ShareMessage(run, 1, 3, key, key, (1,), (ct[:-1],)),     # short ciphertext
        lambda: ShareMessage(run, 1, 3, key[:31], key, (), ()),          # short key
        lambda: ShareMessage(run, 1, 3, key, key, (), (), tag[:15]),     # short tag
        lambda: ShareMessage(run, 0, 3, key, key, (), ()),               # round 0
        lambda: ShareMessage(run, 1, 2**32 - 1, key, key, (), ()),       # the server's id
        lambda: ShareBundle(run, 1, 0, (0, 1), (2,), (key,), (ct,)),     # owner not a sharer
        lambda: ShareBundle(run, 1, 0, (0, 1), (0,), (key,), (ct,)),     # recipient as owner
        lambda: ShareBundle(run, 1, 0, (), (), (), ()),                  # no sharers
        lambda: ShareBundle(run, 1, 0, (0, 1), (1,), (), (ct,)),         # one key per owner
        lambda: InputRequest(run, 0),
        lambda: InputRequest(run, 3, 1, 3),                              # base not before
        lambda: UnmaskRequest(run, 1, ()),                               # no survivors
        lambda: UnmaskRequest(run, 1, (2, 1)),
        lambda: UnmaskMessage(run, 1, 0, (1,), (2,), (bytes(33),)),      # kind 2
        lambda: UnmaskMessage(run, 1, 0, (1,), (True,), (bytes(33),)),   # kind a bool
        lambda: UnmaskMessage(run, 1, 0, (1,), (0,), (bytes(32),)),      # short share
        lambda: UnmaskMessage(run, 1, 0, (1, 2), (0,), (bytes(33),)),
        lambda: UnmaskMessage(run, 1, 0, (), (), ()),                    # nothing revealed
    ]
    for make in bad:
        with pytest.raises(InvalidInputError):
            make()
    # ... is refused on the wire too: a kind byte of 2, the server's id as a
    # sender or recipient, an owner count beyond the bytes present
    answer = next(m for m in valid_messages() if isinstance(m, UnmaskMessage))
    data = bytearray(answer.to_bytes())
    data[44 + 4 + 4] = 2                                     # first item's kind
    with pytest.raises(MessageFormatError):
        UnmaskMessage.from_bytes(bytes(data))
    data = bytearray(answer.to_bytes())
    data[44:48] = (2**20).to_bytes(4, "little")              # item count
    with pytest.raises(MessageFormatError):
        UnmaskMessage.from_bytes(bytes(data))
    for cls in (ShareMessage, UnmaskMessage, SyndromeMessage):
        src = next(m for m in valid_messages() if isinstance(m, cls)).to_bytes()
        with pytest.raises(MessageFormatError):            # sender = the server's id
            cls.from_bytes(src[:32] + b"\xff" * 4 + src[36:])
    bundle = next(m for m in valid_messages() if isinstance(m, ShareBundle)).to_bytes()
    with pytest.raises(MessageFormatError):                # recipient = the server's id
        ShareBundle.from_bytes(bundle[:44] + b"\xff" * 4 + bundle[48:])
    for cls in (RoundMessage, ShareBundle, InputRequest, UnmaskRequest):
        src = next(m for m in valid_messages() if isinstance(m, cls)).to_bytes()
        with pytest.raises(MessageFormatError):            # from a client
            cls.from_bytes(src[:32] + bytes(4) + src[36:])


# ---------------------------------------------------------------------------
# round trips

def test_round_trip_valid_messages():
    seen_types = set()
    for msg in valid_messages():
        data = msg.to_bytes()
        assert isinstance(data, bytes)
        assert msg.to_bytes() == data                    # deterministic
        back = type(msg).from_bytes(data)
        assert fields_equal(back, msg)
        assert back == msg
        assert back.to_bytes() == data
        seen_types.add(type(msg))
        if isinstance(msg, SyndromeMessage):
            assert len(data) > 8 * len(msg.payload)
            assert np.asarray(back.payload).dtype == np.uint64
    assert seen_types == set(CLASSES)


def test_roster_round_trip_keeps_params():
    for msg in valid_messages():
        if isinstance(msg, RosterMessage):
            back = RosterMessage.from_bytes(msg.to_bytes())
            assert back.params == msg.params
            for name in ("n_dims", "bins_per_dim", "max_nonzeros", "modulus", "mode",
                         "hash_seed", "max_client_nonzeros", "run_id"):
                assert getattr(back.params, name) == getattr(msg.params, name), name
            assert back.params.message_words == msg.params.message_words
            assert tuple(back.client_ids) == tuple(msg.client_ids)
            assert tuple(back.public_keys) == tuple(msg.public_keys)
            assert all(len(k) == 32 for k in back.public_keys)


def test_messages_differ_when_fields_differ():
    msgs = valid_messages()
    datas = [m.to_bytes() for m in msgs]
    assert len(set(datas)) == len(datas)
    for i, a in enumerate(msgs):
        for j, b in enumerate(msgs):
            if i != j:
                assert not (a == b)


_ids = st.integers(0, 10**6)
_rounds = st.integers(1, 10**6)        # rounds are numbered from 1
_run_ids = st.binary(min_size=16, max_size=16)
_moduli = st.sampled_from([13, 101, 2**31 - 1, P])
_key = st.binary(min_size=32, max_size=32)
_tag = st.binary(min_size=16, max_size=16)
_ct = st.binary(min_size=SHARE_CT_BYTES, max_size=SHARE_CT_BYTES)
_id_sets = st.sets(_ids, min_size=1, max_size=12).map(lambda s: tuple(sorted(s)))


@st.composite
def _syndromes(draw):
    p = draw(_moduli)
    words = draw(st.lists(st.integers(0, p - 1), min_size=1, max_size=40))
    return SyndromeMessage(run_id=draw(_run_ids), round=draw(_rounds), sender=draw(_ids),
                           modulus=p, payload=np.array(words, dtype=np.uint64),
                           tag=draw(_tag))


@st.composite
def _share_messages(draw):
    sender = draw(_ids)
    holders = tuple(sorted(draw(st.sets(_ids.filter(lambda i: i != sender), max_size=5))))
    return ShareMessage(draw(_run_ids), draw(_rounds), sender, draw(_key), draw(_key),
                        holders, tuple(draw(_ct) for _ in holders), draw(_tag))


@st.composite
def _bundles(draw):
    sharers = draw(_id_sets)
    recipient = draw(_ids)
    owners = tuple(sorted(draw(st.sets(st.sampled_from(sharers))) - {recipient}))
    return ShareBundle(draw(_run_ids), draw(_rounds), recipient, sharers, owners,
                       tuple(draw(_key) for _ in owners), tuple(draw(_ct) for _ in owners))


@st.composite
def _input_requests(draw):
    r = draw(_rounds)
    dn = draw(st.integers(0, 2**32 - 2))
    br = draw(st.integers(1, r - 1)) if dn and r > 1 else 0
    return InputRequest(draw(_run_ids), r, dn if br else 0, br)


@st.composite
def _unmask_messages(draw):
    owners = draw(_id_sets)
    return UnmaskMessage(draw(_run_ids), draw(_rounds), draw(_ids), owners,
                         tuple(draw(st.integers(0, 1)) for _ in owners),
                         tuple(draw(st.binary(min_size=33, max_size=33)) for _ in owners),
                         draw(_tag))


_messages = st.one_of(
    st.builds(lambda r, s, k: KeyMessage(run_id=r, sender=s, public_key=k),
              _run_ids, _ids, _key),
    st.builds(lambda r, n, ps: RoundMessage(run_id=r, round=n, participants=ps),
              _run_ids, _rounds, _id_sets),
    st.builds(UnmaskRequest, _run_ids, _rounds, _id_sets),
    _syndromes(), _share_messages(), _bundles(), _input_requests(), _unmask_messages(),
)


@SETTINGS
@given(_messages)
def test_round_trip_generated_messages(msg):
    data = msg.to_bytes()
    back = type(msg).from_bytes(data)
    assert fields_equal(back, msg)
    assert back == msg
    assert back.to_bytes() == data


# ---------------------------------------------------------------------------
# fuzzing: only MessageFormatError, never another exception

@SETTINGS
@given(st.sampled_from(CLASSES), st.binary(max_size=600))
def test_fuzz_random_bytes(cls, data):
    msg = parse(cls, data)
    if msg is not None:
        assert msg.to_bytes() == data


@SETTINGS
@given(st.data())
def test_fuzz_valid_prefix_random_tail(data):
    src = data.draw(st.sampled_from(valid_bytes()))
    cut = data.draw(st.integers(0, len(src)))
    tail = data.draw(st.binary(max_size=300))
    blob = src[:cut] + tail
    for cls in CLASSES:
        msg = parse(cls, blob)
        if msg is not None:
            assert msg.to_bytes() == blob


@SETTINGS
@given(st.data())
def test_fuzz_single_byte_mutations(data):
    k = data.draw(st.integers(0, len(valid_messages()) - 1))
    orig = valid_messages()[k]
    src = orig.to_bytes()
    pos = data.draw(st.integers(0, len(src) - 1))
    value = data.draw(st.integers(0, 255).filter(lambda v: v != src[pos]))
    blob = src[:pos] + bytes([value]) + src[pos + 1:]
    for cls in CLASSES:
        msg = parse(cls, blob)
        if msg is not None:
            assert msg.to_bytes() == blob
            assert not (msg == orig)


@SETTINGS
@given(st.data())
def test_fuzz_multi_byte_mutations(data):
    src = bytearray(data.draw(st.sampled_from(valid_bytes())))
    n = data.draw(st.integers(1, 6))
    for _ in range(n):
        pos = data.draw(st.integers(0, len(src) - 1))
        src[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):                     # also cut or grow
        src = src[:data.draw(st.integers(0, len(src)))] + data.draw(st.binary(max_size=16))
    blob = bytes(src)
    for cls in CLASSES:
        msg = parse(cls, blob)
        if msg is not None:
            assert msg.to_bytes() == blob


def test_every_single_byte_header_mutation():
    # exhaustive over the first 64 bytes (the header) of each valid message,
    # with three replacement values per byte
    for src in valid_bytes():
        for pos in range(min(64, len(src))):
            for delta in (1, 0x80, 0xFF):
                blob = src[:pos] + bytes([src[pos] ^ delta]) + src[pos + 1:]
                for cls in CLASSES:
                    msg = parse(cls, blob)
                    if msg is not None:
                        assert msg.to_bytes() == blob
