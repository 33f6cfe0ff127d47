"""Fuzz tests of the secure-aggregation protocol messages (issue 18).

Every message type of pyfkm.secagg -- SCMA's KeyMessage, RosterMessage,
RoundMessage, SyndromeMessage and MSA's MsaRosterMessage, GroupKeyMessage,
MaskedVectorMessage, AggregateMessage -- is taken from a real, seeded run,
its bytes are mutated with Hypothesis (flipped and overwritten bytes and
words, truncation, appended and spliced bytes, header fields and length
fields set to edge values), and

1. ``from_bytes`` either returns a message or raises a :class:`PyfkmError`,
   never anything else, and never allocates more than a small multiple of
   the bytes it was given (measured with tracemalloc); a message it returns
   is the canonical encoding of its fields (``to_bytes`` gives the bytes
   back) and passes the checks of the message's constructor;
2. a mutated message that parses is handed to the role that receives it
   (server: key, syndrome, masked-vector and group-key messages; clients:
   roster, round, group-key and aggregate messages), and the rest of the
   run is played with the honest messages: only PyfkmError comes out, and
   when the role rejects the mutated message the run still ends with the
   right aggregate (the rejected message changed nothing).

Expected aggregates are plain sums (``collections.Counter`` for SCMA,
Python floats of dyadic values for MSA), nothing computed by pyfkm.secagg.
The wire layout the mutations aim at comes from the format documented in
pyfkm/secagg/_messages.py and _msa.py.  All randomness of the honest runs
comes from fixed seeds; Hypothesis is derandomized.

The regression tests at the end are the bugs this fuzzer found, each with
explicit bytes.
"""
import dataclasses
import functools
import struct
import time
import tracemalloc
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pyfkm.exceptions import MessageFormatError, ProtocolError, PyfkmError
from pyfkm.field import DEFAULT_PRIME
from pyfkm.secagg import (AggregateMessage, GroupKeyMessage, KeyMessage, MaskedVectorMessage,
                          MsaClient, MsaRosterMessage, MsaServer, RosterMessage, RoundMessage,
                          ScmaClient, ScmaParams, ScmaServer, SyndromeMessage)

P = DEFAULT_PRIME
P31 = 2**31 - 1
SERVER = 0xFFFFFFFF
SCMA_CLASSES = (KeyMessage, RosterMessage, RoundMessage, SyndromeMessage)
MSA_CLASSES = (MsaRosterMessage, GroupKeyMessage, MaskedVectorMessage, AggregateMessage)
CLASSES = SCMA_CLASSES + MSA_CLASSES


def fuzz_settings(n):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------------------
# the wire layout (from the documented format), used to aim mutations

HEADER_FIELDS = [("magic", 0, 4), ("version", 4, 1), ("type", 5, 1), ("reserved", 6, 2),
                 ("run_id", 8, 16), ("round", 24, 8), ("sender", 32, 4), ("modulus", 36, 8)]


def _u32(data, off):
    return struct.unpack_from("<I", data, off)[0]


def body_fields(cls, data):
    """(name, offset, width) of the body fields of a valid message ``data``;
    names ending in "count" are length fields."""
    if cls is KeyMessage:
        return [("public_key", 44, 32)]
    if cls is RosterMessage:
        out = [("n_dims", 44, 4), ("bins_per_dim", 48, 8), ("max_nonzeros", 56, 4),
               ("max_client_nonzeros", 60, 4), ("mode", 64, 1), ("hash_seed", 65, 32),
               ("count", 97, 4)]
        return out + _entries(101, _u32(data, 97))
    if cls is MsaRosterMessage:
        out = [("n_words", 44, 4), ("scale_bits", 48, 1), ("count", 49, 4)]
        return out + _entries(53, _u32(data, 49))
    if cls is RoundMessage:
        n = _u32(data, 44)
        out = [("count", 44, 4)] + [(f"participant{t}", 48 + 4 * t, 4) for t in range(n)]
        return out + [("delta_nonzeros", 48 + 4 * n, 4), ("base_round", 52 + 4 * n, 8)]
    if cls is GroupKeyMessage:
        return [("recipient", 44, 4), ("nonce", 48, 12), ("ciphertext", 60, 48)]
    # syndromes, masked vectors, aggregates: count u32, then u64 words
    n = _u32(data, 44)
    return [("count", 44, 4)] + [(f"word{t}", 48 + 8 * t, 8) for t in range(n)]


def _entries(off, n):
    out = []
    for t in range(n):
        out += [(f"id{t}", off + 36 * t, 4), (f"key{t}", off + 36 * t + 4, 32)]
    return out


def int_values(width, current):
    top = 1 << (8 * width)
    vals = {0, 1, 2, 3, current - 1, current + 1, current * 2, current + 256,
            top // 2 - 1, top // 2, top - 2, top - 1,
            1 << 20, (1 << 20) + 1, 1 << 22, (1 << 22) + 1, 1 << 31, (1 << 32) - 2,
            P, P - 1, P + 1, P31, 101, (1 << 63) - 25, 1 << 63}
    return sorted(v for v in vals if 0 <= v < top)


# ---------------------------------------------------------------------------
# honest runs (fixed seeds), every message through its bytes

SCMA_CONFIGS = {
    # name: (n_dims, bins_per_dim, max_nonzeros, modulus, seed)
    "index": (3, 7, 4, P, 1),
    "hashed": (10, 173, 3, P, 2),
    "hashed-p31": (3, 2000, 2, P31, 4),
}
N_CLIENTS = 3


def scma_data(cfg):
    """Each client's (bins, counts) for round 1 and round 2 (client 0 lost
    one point of its first bin), and the expected aggregates."""
    d, B, M, _, seed = SCMA_CONFIGS[cfg]
    rng = np.random.default_rng(seed)
    union = set()
    while len(union) < M:
        union.add(tuple(int(x) for x in rng.integers(0, B, size=d)))
    union = sorted(union)
    r1 = []
    for i in range(N_CLIENTS):
        rows = sorted({union[int(k)] for k in rng.integers(0, M, size=2)} | {union[i % M]})
        r1.append((np.array(rows, dtype=np.int64), rng.integers(2, 5, size=len(rows))))
    bins0, counts0 = r1[0]
    counts0 = counts0.copy()
    counts0[0] -= 1
    r2 = [(bins0, counts0)] + r1[1:]
    return r1, r2, plain_sum(r1), plain_sum(r2)


def plain_sum(clients):
    acc = Counter()
    for bins, counts in clients:
        for b, q in zip(np.asarray(bins).tolist(), np.asarray(counts).tolist()):
            acc[tuple(b)] += int(q)
    items = sorted(acc.items())
    return [list(k) for k, _ in items], [v for _, v in items]


@dataclasses.dataclass
class Step:
    """One message a role receives: ``receive(msg)`` hands a parsed message
    to the role; ``deliver(msg)`` is what the honest run does with it
    (``receive`` unless the message travels in a batch)."""

    stage: str
    index: int
    cls: type
    data: bytes
    receive: object
    deliver: object = None

    def __post_init__(self):
        if self.deliver is None:
            self.deliver = self.receive


def _later(msg):
    """Delivered with its batch after the batch's steps."""


class ScmaRun:
    """One SCMA run (keys, roster, a full round, a difference round) played
    step by step: :meth:`steps` yields every message a role receives.
    Round-2 syndromes go to the server in one ``receive_many`` batch."""

    def __init__(self, cfg):
        d, B, M, p, seed = SCMA_CONFIGS[cfg]
        self.params = ScmaParams.create(d, B, M, modulus=p, random_state=seed)
        self.data1, self.data2, self.expected1, self.expected2 = scma_data(cfg)
        self.server = ScmaServer(self.params)
        self.clients = [ScmaClient(i, random_state=1000 * seed + i) for i in range(N_CLIENTS)]
        self.results = []

    def steps(self):
        server, clients = self.server, self.clients
        for i, c in enumerate(clients):
            yield Step("key", i, KeyMessage, c.key_message(self.params.run_id).to_bytes(),
                       server.receive_key)
        roster = server.roster().to_bytes()
        for i, c in enumerate(clients):
            yield Step("roster", i, RosterMessage, roster, c.receive_roster)
        for c, (bins, counts) in zip(clients, self.data1):
            c.set_data(bins, counts)
        syn = {}
        round1 = server.start_round().to_bytes()
        for i, c in enumerate(clients):
            yield Step("round", i, RoundMessage, round1,
                       lambda m, i=i, c=c: syn.__setitem__(i, c.respond(m).to_bytes()))
        for i in range(N_CLIENTS):
            yield Step("syndrome", i, SyndromeMessage, syn[i], server.receive)
        self.results.append(server.finish_round())
        for c, (bins, counts) in zip(clients, self.data2):
            c.set_data(bins, counts)
        syn = {}
        round2 = server.start_round(delta_nonzeros=2).to_bytes()
        for i, c in enumerate(clients):
            yield Step("delta-round", i, RoundMessage, round2,
                       lambda m, i=i, c=c: syn.__setitem__(i, c.respond(m).to_bytes()))
        batch = [syn[i] for i in range(N_CLIENTS)]
        for i in range(N_CLIENTS):
            # the batch with message i under test; the honest batch comes after
            yield Step("delta-syndrome", i, SyndromeMessage, batch[i],
                       lambda m, i=i: server.receive_many(
                           batch[:i] + [m.to_bytes()] + batch[i + 1:]), _later)
        server.receive_many(batch)
        self.results.append(server.finish_round())

    def check(self):
        assert len(self.results) == 2
        for res, (bins, counts) in zip(self.results, (self.expected1, self.expected2)):
            assert res.bins.tolist() == bins and res.counts.tolist() == counts


MSA_SEED = 7
MSA_X = [[0.5, -1.25, 2.0, 0.0], [1.0, 1.0, 1.0, 1.0], [-0.75, 0.0, 3.5, 8.0]]


class MsaRun:
    """One MSA run (keys, roster, group keys, one round), as :class:`ScmaRun`."""

    def __init__(self):
        gen = np.random.default_rng(MSA_SEED)
        self.run_id = gen.bytes(16)
        self.server = MsaServer(self.run_id, len(MSA_X[0]), noise=None)
        self.clients = [MsaClient(i, random_state=100 * MSA_SEED + i)
                        for i in range(len(MSA_X))]
        self.outputs = {}

    def steps(self):
        server, clients = self.server, self.clients
        for i, c in enumerate(clients):
            yield Step("key", i, KeyMessage, c.key_message(self.run_id).to_bytes(),
                       server.receive_key)
        roster = server.roster().to_bytes()
        for i, c in enumerate(clients):
            yield Step("roster", i, MsaRosterMessage, roster, c.receive_roster)
        for j, m in enumerate(clients[0].group_key_messages()):
            yield Step("relay", j, GroupKeyMessage, m.to_bytes(), server.relay_group_key)
        for i, c in enumerate(clients[1:], 1):
            yield Step("group-key", i, GroupKeyMessage, server.group_key_for(i).to_bytes(),
                       c.receive_group_key)
        masked = {}
        rnd = server.start_round().to_bytes()
        for i, c in enumerate(clients):
            yield Step("round", i, RoundMessage, rnd,
                       lambda m, i=i, c=c: masked.__setitem__(
                           i, c.respond(m, MSA_X[i]).to_bytes()))
        for i in range(len(clients)):
            yield Step("masked", i, MaskedVectorMessage, masked[i], server.receive)
        agg = server.finish_round().to_bytes()
        for i, c in enumerate(clients):
            yield Step("aggregate", i, AggregateMessage, agg,
                       lambda m, i=i, c=c: self.outputs.__setitem__(i, c.unmask(m).tolist()))

    def check(self):
        expected = [sum(col) for col in zip(*MSA_X)]
        assert self.outputs == {i: expected for i in range(len(MSA_X))}


def make_run(protocol):
    return MsaRun() if protocol == "msa" else ScmaRun(protocol)


def play(protocol, target=None, blob=None):
    """Play a run; at step ``target`` = (stage, index) hand the message
    parsed from ``blob`` to its role first.  Returns None when ``blob`` does
    not parse (or no target), "rejected" when the role raised PyfkmError --
    then the honest run goes on and must end with the right aggregates --
    or "accepted", when the rest of the run may only raise PyfkmError."""
    run = make_run(protocol)
    outcome = None
    steps = run.steps()
    for step in steps:
        if (step.stage, step.index) == target:
            try:
                msg = step.cls.from_bytes(blob)
            except PyfkmError:
                return None
            try:
                step.receive(msg)
            except PyfkmError:
                outcome = "rejected"
            else:
                outcome = "accepted"
                break
        step.deliver(step.cls.from_bytes(step.data))
    else:
        run.check()
        return outcome
    try:                        # the rest of the run after an accepted mutation
        step.deliver(step.cls.from_bytes(step.data))
        for step in steps:
            step.deliver(step.cls.from_bytes(step.data))
    except PyfkmError:
        pass
    return outcome


@functools.lru_cache(maxsize=None)
def honest_steps(protocol):
    """{(stage, index): (cls, bytes)} of the honest run (which ends right)."""
    run = make_run(protocol)
    out = {}
    for step in run.steps():
        out[step.stage, step.index] = (step.cls, step.data)
        step.deliver(step.cls.from_bytes(step.data))
    run.check()
    return out


PROTOCOLS = tuple(SCMA_CONFIGS) + ("msa",)


@functools.lru_cache(maxsize=None)
def pool():
    """(cls, bytes) of every distinct honest message of every run."""
    seen = {}
    for protocol in PROTOCOLS:
        for cls, data in honest_steps(protocol).values():
            seen.setdefault(data, cls)
    return tuple((cls, data) for data, cls in seen.items())


# ---------------------------------------------------------------------------
# mutations

BYTE_KINDS = ("flip", "byte", "word", "fill", "truncate", "append", "insert", "delete",
              "splice")
FIELD_KINDS = ("header", "body", "body", "length", "other-field")
# what a role can see: fields changed to other values that may still parse
SEMANTIC_KINDS = ("semantic", "semantic", "semantic", "other-field", "flip")
_SEMANTIC_HEADER = ("run_id", "round", "sender", "modulus")
KINDS = BYTE_KINDS + FIELD_KINDS


@st.composite
def mutation(draw, src, data, kinds=KINDS):
    """One mutation of the bytes ``data``, which came from the valid message
    ``src`` = (cls, bytes) (whose layout names the fields)."""
    cls, orig = src
    b = bytearray(data)
    kind = draw(st.sampled_from(kinds))
    pos = draw(st.integers(0, max(len(b) - 1, 0)))
    if kind == "flip":
        b[pos] ^= draw(st.integers(1, 255))
    elif kind == "byte":
        b[pos] = draw(st.sampled_from([0, 0xFF, 0x80, 1]) | st.integers(0, 255))
    elif kind == "word":
        w = draw(st.sampled_from([2, 4, 8]))
        pos = min(pos, len(b) - w)
        old = int.from_bytes(b[pos:pos + w], "little")
        b[pos:pos + w] = draw(st.sampled_from(int_values(w, old))).to_bytes(w, "little")
    elif kind == "fill":
        n = draw(st.integers(1, 48))
        b[pos:pos + n] = bytes([draw(st.sampled_from([0, 0xFF]))]) * len(b[pos:pos + n])
    elif kind == "truncate":
        del b[pos:]
    elif kind == "append":
        b += draw(st.binary(min_size=1, max_size=64))
    elif kind == "insert":
        b[pos:pos] = draw(st.binary(min_size=1, max_size=16))
    elif kind == "delete":
        del b[pos:pos + draw(st.integers(1, 16))]
    elif kind == "splice":
        _, other = draw(st.sampled_from(pool()))
        cut = draw(st.integers(0, len(other)))
        b = b[:pos] + other[cut:]
    else:
        body = body_fields(cls, orig)
        if kind == "header":
            fields = HEADER_FIELDS
        elif kind == "semantic":
            fields = [f for f in HEADER_FIELDS if f[0] in _SEMANTIC_HEADER] + \
                [f for f in body if not f[0].endswith("count")]
        elif kind == "length":
            fields = [f for f in body if f[0].endswith("count")] or HEADER_FIELDS
        else:
            fields = body if kind == "body" else HEADER_FIELDS + body
        fields = [f for f in fields if f[1] + f[2] <= len(b)] or HEADER_FIELDS[:1]
        # a field kind first (every roster entry, participant or word is one
        # kind), then one field of that kind
        groups = {}
        for f in fields:
            groups.setdefault(f[0].rstrip("0123456789"), []).append(f)
        name, off, w = draw(st.sampled_from(groups[draw(st.sampled_from(list(groups)))]))
        if kind == "other-field":
            # the same bytes of another honest message (another run, sender, type)
            _, other = draw(st.sampled_from(pool()))
            new = other[off:off + w]
            if len(new) < w:
                new = bytes(w)
        elif w <= 8:
            old = int.from_bytes(b[off:off + w], "little")
            top = (1 << (8 * w)) - 1
            new = draw(st.sampled_from([0, top, old ^ 1]) | st.sampled_from(int_values(w, old))
                       ).to_bytes(w, "little")
        else:
            new = draw(st.sampled_from([bytes(w), b"\x01" + bytes(w - 1), b"\xff" * w])
                       | st.binary(min_size=w, max_size=w))
        b[off:off + w] = new
    return bytes(b)


@st.composite
def mutated(draw, src, kinds=KINDS):
    """``src`` after one to three mutations."""
    data = src[1]
    for _ in range(draw(st.integers(1, 3))):
        if len(data) < 8:
            break
        data = draw(mutation(src, data, kinds))
    return data


# ---------------------------------------------------------------------------
# 1. parsing: only PyfkmError, bounded memory, canonical results

def _memory_bound(blob):
    return 16 * len(blob) + (64 << 10)


def check_parse(cls, blob):
    """from_bytes may only raise PyfkmError, allocate O(len(blob)) and take
    no time to speak of, and what it returns must encode back to ``blob``
    and pass the constructor."""
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    try:
        msg = cls.from_bytes(blob)
    except PyfkmError:
        msg = None
    # a parse takes well under a millisecond: a second means work that
    # grows with a field's value, not with the bytes
    assert time.perf_counter() - t0 < 1.0
    peak = tracemalloc.get_traced_memory()[1] - base
    assert peak <= _memory_bound(blob), (cls.__name__, len(blob), peak)
    if msg is None:
        return None
    assert type(msg) is cls
    assert msg.to_bytes() == blob
    again = cls(**{f.name: getattr(msg, f.name) for f in dataclasses.fields(cls)})
    assert again == msg
    return msg


@pytest.fixture
def traced():
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def test_honest_messages_parse_within_the_memory_bound(traced):
    kinds = Counter()
    for cls, data in pool():
        assert check_parse(cls, data) is not None
        kinds[cls] += 1
    assert set(kinds) == set(CLASSES)


@st.composite
def source(draw):
    """A valid message, its class drawn first (every class equally often)."""
    cls = draw(st.sampled_from(CLASSES))
    return draw(st.sampled_from([m for m in pool() if m[0] is cls]))


def parse_all(blob):
    tracemalloc.start()
    try:
        for cls in CLASSES:
            check_parse(cls, blob)
    finally:
        tracemalloc.stop()


@fuzz_settings(1200)
@given(st.data())
def test_fuzz_parse_byte_mutations(data):
    parse_all(data.draw(mutated(data.draw(source()), BYTE_KINDS)))


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
@fuzz_settings(250)
@given(data=st.data())
def test_fuzz_parse_field_mutations(cls, data):
    src = data.draw(st.sampled_from([m for m in pool() if m[0] is cls]))
    parse_all(data.draw(mutated(src, FIELD_KINDS)))


# ---------------------------------------------------------------------------
# 2. roles: mutated messages that parse, then the honest run


def _stages(protocol):
    return tuple(honest_steps(protocol))


@fuzz_settings(1200)
@given(st.data())
def test_fuzz_roles_take_mutated_messages(data):
    # SCMA (one of its configurations) and MSA equally often
    protocol = data.draw(st.sampled_from(["msa", "scma"]))
    if protocol == "scma":
        protocol = data.draw(st.sampled_from(tuple(SCMA_CONFIGS)))
    target = data.draw(st.sampled_from(_stages(protocol)))
    cls, honest = honest_steps(protocol)[target]
    blob = data.draw(mutated((cls, honest), SEMANTIC_KINDS))
    outcome = play(protocol, target, blob)
    event(f"{cls.__name__}: {outcome or 'not parsed'}")


# ---------------------------------------------------------------------------
# a rejected message changes nothing: explicit mutations, each of which the
# receiving role must refuse, and after which the honest run ends right

def set_field(cls, data, name, value):
    """``data`` with the field ``name`` (header or body) set to ``value``
    (an int, or bytes of the field's width)."""
    fields = {f[0]: f[1:] for f in HEADER_FIELDS + body_fields(cls, data)}
    off, w = fields[name]
    new = value.to_bytes(w, "little") if isinstance(value, int) else bytes(value)
    assert len(new) == w
    return data[:off] + new + data[off + w:]


def flip(data, pos):
    return data[:pos] + bytes([data[pos] ^ 0x01]) + data[pos + 1:]


OTHER_RUN = bytes(range(100, 116))
ZERO_KEY = bytes(32)                  # X25519 u = 0, a low-order point
ONE_KEY = b"\x01" + bytes(31)         # u = 1, another one

REJECTED = [
    # (protocol, stage, index, field, value) -- value None: flip the field's first byte
    ("index", "key", 1, "run_id", OTHER_RUN),               # another run
    ("index", "key", 2, "sender", 0),                        # duplicate key of client 0
    ("hashed", "roster", 1, "run_id", OTHER_RUN),
    ("hashed", "roster", 1, "key1", ZERO_KEY),               # the client's own key replaced
    ("index", "roster", 1, "key0", ZERO_KEY),                # low-order key (regression)
    ("hashed-p31", "roster", 0, "key2", ONE_KEY),            # low-order key (regression)
    ("index", "round", 1, "participant2", 7),                # a participant outside the roster
    ("index", "round", 0, "run_id", OTHER_RUN),
    ("hashed", "round", 2, "participant2", 3),               # client 2 not a participant
    ("index", "syndrome", 1, "sender", 7),                   # not a participant
    ("hashed", "syndrome", 2, "round", 2),                   # not the open round
    ("hashed-p31", "syndrome", 0, "run_id", OTHER_RUN),
    ("index", "delta-round", 2, "delta_nonzeros", 5),        # above max_nonzeros = 4
    ("hashed", "delta-round", 0, "participant2", 6),         # a participant outside the roster
    ("index", "delta-round", 1, "run_id", OTHER_RUN),
    ("index", "delta-syndrome", 1, "sender", 0),             # duplicate within the batch
    ("hashed", "delta-syndrome", 2, "round", 1),             # a finished round
    ("msa", "key", 2, "run_id", OTHER_RUN),
    ("msa", "key", 1, "sender", 0),                          # duplicate
    ("msa", "roster", 1, "key0", ZERO_KEY),                  # low-order key (regression)
    ("msa", "roster", 2, "run_id", OTHER_RUN),
    ("msa", "relay", 0, "recipient", 5),                     # not a roster client
    ("msa", "relay", 1, "sender", 1),                        # not the leader
    ("msa", "group-key", 1, "ciphertext", None),             # fails authentication
    ("msa", "group-key", 2, "nonce", None),                  # fails authentication
    ("msa", "group-key", 2, "recipient", 1),                 # for another client
    ("msa", "round", 1, "participant2", 5),                  # not the roster
    ("msa", "round", 0, "run_id", OTHER_RUN),
    ("msa", "masked", 1, "sender", 9),                       # not a participant
    ("msa", "masked", 2, "round", 2),                        # not the open round
    ("msa", "aggregate", 0, "round", 2),                     # not the answered round
    ("msa", "aggregate", 1, "run_id", OTHER_RUN),
]


@pytest.mark.parametrize("protocol, stage, index, name, value", REJECTED,
                         ids=[f"{c[0]}-{c[1]}{c[2]}-{c[3]}" for c in REJECTED])
def test_rejected_message_leaves_the_role_unchanged(protocol, stage, index, name, value):
    cls, honest = honest_steps(protocol)[stage, index]
    if value is None:
        blob = flip(honest, {f[0]: f[1] for f in body_fields(cls, honest)}[name])
    else:
        blob = set_field(cls, honest, name, value)
    assert blob != honest
    cls.from_bytes(blob)                                  # the format is valid
    # play() checks that the honest run, after the rejection, ends right
    assert play(protocol, (stage, index), blob) == "rejected"


# ---------------------------------------------------------------------------
# explicit bytes: malformed lengths, and the bugs the fuzzer found

def header(kind, run_id=OTHER_RUN, round_=0, sender=SERVER, modulus=0):
    """A message header written out from the documented layout (version 2)."""
    return struct.pack("<4sBBH16sQIQ", b"PFKM", 2, kind, 0, run_id, round_, sender, modulus)


def roster_bytes(d, B, M, kc, mode, entries, modulus=P, seed=bytes(range(32))):
    """SCMA roster bytes (type 2): parameters, count, (id u32, key 32s) entries."""
    body = struct.pack("<IQIIB32s", d, B, M, kc, mode, seed) + struct.pack("<I", len(entries))
    body += b"".join(struct.pack("<I", i) + k for i, k in entries)
    return header(2, modulus=modulus) + body


def client_keys(n):
    return [(i, ScmaClient(i, random_state=500 + i).public_key) for i in range(n)]


@pytest.mark.parametrize("data, cls", [
    (header(3) + struct.pack("<I", 2**32 - 1) + bytes(12), RoundMessage),
    (header(4, round_=1, sender=0, modulus=P) + struct.pack("<I", 2**32 - 1) + bytes(16),
     SyndromeMessage),
    (header(4, round_=1, sender=0, modulus=P) + struct.pack("<I", 2**31) + bytes(8),
     SyndromeMessage),
    (roster_bytes(3, 7, 4, 4, 0, [])[:-4] + struct.pack("<I", 2**32 - 1) + bytes(36),
     RosterMessage),
    (header(11) + struct.pack("<IBI", 4, 16, 2**32 - 1) + bytes(36), MsaRosterMessage),
    (header(13, round_=1, sender=0) + struct.pack("<I", 2**32 - 1) + bytes(8),
     MaskedVectorMessage),
    (header(14, round_=1) + struct.pack("<I", 2**32 - 1), AggregateMessage),
    (header(14, round_=1) + struct.pack("<I", 3) + bytes(16), AggregateMessage),  # 2 of 3
], ids=["round", "syndrome", "syndrome-2**31", "roster", "msa-roster", "masked",
        "aggregate", "aggregate-short"])
def test_declared_length_beyond_the_bytes_is_rejected_before_allocating(data, cls, traced):
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    with pytest.raises(MessageFormatError, match="truncated"):
        cls.from_bytes(data)
    assert tracemalloc.get_traced_memory()[1] - base < (1 << 20)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("data", [None, "PFKM", 7, [0] * 50, np.zeros(60, np.uint8)])
def test_from_bytes_of_a_non_bytes_object_is_a_format_error(cls, data):
    with pytest.raises(MessageFormatError):
        cls.from_bytes(data)


def test_from_bytes_takes_bytearray_and_memoryview():
    for cls, data in pool():
        assert cls.from_bytes(bytearray(data)).to_bytes() == data
        assert cls.from_bytes(memoryview(data)).to_bytes() == data


def test_roster_with_max_client_nonzeros_zero_is_rejected():
    # Found by the fuzzer: the constructor reads max_client_nonzeros = 0 as
    # "= max_nonzeros", so these bytes parsed to a roster whose to_bytes
    # differed from them (two spellings of one message).  Now a format error.
    entries = client_keys(2)
    good = roster_bytes(3, 7, 4, 4, 0, entries)
    assert RosterMessage.from_bytes(good).to_bytes() == good
    assert RosterMessage.from_bytes(good).params.max_client_nonzeros == 4
    with pytest.raises(MessageFormatError, match="max_client_nonzeros"):
        RosterMessage.from_bytes(roster_bytes(3, 7, 4, 0, 0, entries))
    with pytest.raises(MessageFormatError, match="max_client_nonzeros"):
        RosterMessage.from_bytes(roster_bytes(3, 7, 4, 5, 0, entries))      # > M


@pytest.mark.parametrize("B, d, ok", [
    (2, 61, True), (2, 62, False),             # 2**61 < p < 2**62
    (3, 39, True), (3, 40, False),             # 3**39 < p < 3**40
    (1, 1 << 20, True),                         # one bin whatever d
    (7, 1 << 20, False), (P - 1, 1 << 20, False), (2**40, 2, False),
])
def test_roster_index_mode_grid_bound_is_checked_before_computing_it(B, d, ok):
    # Found by reading while fuzzing: B**d was computed in full to compare
    # it with p; for the largest n_dims the parser accepts (2**20) and
    # B = p - 1 that took about ten seconds of CPU per roster message.
    data = roster_bytes(d, B, 4, 4, 0, client_keys(1))
    assert ok == (B ** min(d, 64) < P)
    t0 = time.perf_counter()
    if ok:
        assert RosterMessage.from_bytes(data).params.mode == "index"
    else:
        with pytest.raises(MessageFormatError, match="bins_per_dim"):
            RosterMessage.from_bytes(data)
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize("bad_key", [ZERO_KEY, ONE_KEY], ids=["u=0", "u=1"])
@pytest.mark.parametrize("protocol", ["scma", "msa"])
def test_roster_with_a_low_order_key_is_a_protocol_error(protocol, bad_key):
    # Found by the fuzzer: a roster carrying a low-order X25519 point as
    # another client's key made receive_roster raise cryptography's
    # ValueError("Error computing shared key.").  Now ProtocolError naming
    # the client, and the client is unchanged (the honest roster works).
    if protocol == "scma":
        params = ScmaParams.create(3, 7, 4, random_state=9)
        entries = client_keys(3)
        honest = roster_bytes(3, 7, 4, 4, 0, entries, seed=params.hash_seed)
        honest = honest[:8] + params.run_id + honest[24:]
        client, cls, run_id = ScmaClient(1, random_state=501), RosterMessage, params.run_id
    else:
        run_id = OTHER_RUN
        entries = [(i, MsaClient(i, random_state=600 + i).public_key) for i in range(3)]
        honest = header(11, run_id=run_id) + struct.pack("<IBI", 4, 16, 3) + b"".join(
            struct.pack("<I", i) + k for i, k in entries)
        client, cls = MsaClient(1, random_state=601), MsaRosterMessage
    client.key_message(run_id)
    entries[2] = (2, bad_key)
    off = len(honest) - 32
    bad = honest[:off] + bad_key
    assert cls.from_bytes(bad).public_keys[2] == bad_key
    with pytest.raises(ProtocolError, match="client 2"):
        client.receive_roster(cls.from_bytes(bad))
    client.receive_roster(cls.from_bytes(honest))
    assert len(client.pair_seed(0)) == len(client.pair_seed(2)) == 32
