"""Fuzz tests of the secure-aggregation protocol messages (issue 18).

Every message type of pyfkm.secagg -- the masking protocol's KeyMessage,
RoundMessage, ShareMessage, ShareBundle, InputRequest, UnmaskRequest and
UnmaskMessage, SCMA's RosterMessage and SyndromeMessage, MSA's
MsaRosterMessage, GroupKeyMessage, MaskedVectorMessage, AggregateMessage and
the key batch's KeyBatchMessage and KeyBatchBundle (issue 22) -- is taken
from a real run (every key from the OS), its bytes are mutated
with Hypothesis (flipped and overwritten bytes and words, truncation,
appended and spliced bytes, header fields, body fields and length fields set
to edge values or to another honest message's bytes), and

1. ``from_bytes`` either returns a message or raises a :class:`PyfkmError`,
   never anything else, and never allocates more than a small multiple of
   the bytes it was given (measured with tracemalloc); a message it returns
   is the canonical encoding of its fields (``to_bytes`` gives the bytes
   back) and passes the checks of the message's constructor;
2. in a live run, a mutated message that parses *replaces* the honest one
   and goes to the role that receives it (server: key, share, masked
   syndrome / vector, unmask, group-key relay, key batch; clients: roster,
   round, share bundle, key batch bundle, input request, unmask request,
   group key, aggregate).  MSA runs twice: round by round, and with the
   keys of both rounds shared in one key batch (``MsaBatchRun``), each
   with a client dropping out of round 2:

   * when the role rejects it (a PyfkmError), the honest message follows
     and the run must end with the right aggregate (the rejected message
     changed nothing);
   * when the role accepts it, the rest of the run may only raise
     PyfkmError, and if it completes, the aggregate must be the right one:
     an accepted mutation never yields a wrong sum.  The exceptions, stated
     where they are made: the words of an AggregateMessage are the server's
     to compute; the clients have nothing to check them against (the
     protocol does not authenticate the server's sum), so a changed word
     changes the decoded sum; and a client that dropped out before the
     unmask request never learnt the survivors.  An aggregate of another
     run or round, or (for a client that answered the unmask request) of
     other survivors, must be refused.

Expected aggregates are plain sums (``collections.Counter`` for SCMA,
Python floats of dyadic values for MSA), nothing computed by pyfkm.secagg.
The wire layout the mutations aim at comes from the format documented in
pyfkm/secagg/_messages.py and msa/_messages.py (checked against the honest
bytes by test_body_fields_tile_every_honest_message).  Keys and run ids
come from the OS (no seed reaches them), so the message bytes differ from
run to run; the mutations are drawn against the bytes of the live run, and
Hypothesis is derandomized (the same mutations every time).

The regression tests at the end are the bugs this fuzzer found, each with
explicit bytes.
"""
import dataclasses
import functools
import os
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
from pyfkm.secagg import (
    AggregateMessage,
    GroupKeyMessage,
    InputRequest,
    KeyBatchBundle,
    KeyBatchMessage,
    KeyMessage,
    MaskedVectorMessage,
    MsaClient,
    MsaRosterMessage,
    MsaServer,
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
from pyfkm.secagg._framing import VERSION

P = DEFAULT_PRIME
P31 = 2**31 - 1
SERVER = 0xFFFFFFFF
TAG = 16                                    # bytes of a client message's tag
SHARE_CT = 16 + 2 * 33 + 16                 # (owner, holder, round) + 2 shares + AEAD tag


def batch_ct(count):
    """Bytes of one holder's ciphertext in a key batch of ``count`` rounds:
    (owner, holder, first round, rounds), 2 shares per round, AEAD tag."""
    return 20 + 2 * 33 * count + 16


COMMON_CLASSES = (KeyMessage, RoundMessage, ShareMessage, ShareBundle, InputRequest,
                  UnmaskRequest, UnmaskMessage)
SCMA_CLASSES = (RosterMessage, SyndromeMessage)
MSA_CLASSES = (MsaRosterMessage, GroupKeyMessage, MaskedVectorMessage, AggregateMessage,
               KeyBatchMessage, KeyBatchBundle)
CLASSES = COMMON_CLASSES + SCMA_CLASSES + MSA_CLASSES


def fuzz_settings(n):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------------------
# the wire layout (from the documented format), used to aim mutations

HEADER_FIELDS = [("magic", 0, 4), ("version", 4, 1), ("type", 5, 1), ("reserved", 6, 2),
                 ("run_id", 8, 16), ("round", 24, 8), ("sender", 32, 4), ("modulus", 36, 8)]


def _u32(data, off):
    return struct.unpack_from("<I", data, off)[0]


def _entries(off, n):
    out = []
    for t in range(n):
        out += [(f"id{t}", off + 36 * t, 4), (f"key{t}", off + 36 * t + 4, 32)]
    return out


def _ids(name, off, n):
    return [(f"{name}{t}", off + 4 * t, 4) for t in range(n)]


def _keys(name, off, n, first=0):
    return [(f"{name}{first + t}", off + 32 * t, 32) for t in range(n)]


def _words(off, n):
    return [(f"word{t}", off + 8 * t, 8) for t in range(n)]


def body_fields(cls, data):
    """(name, offset, width) of the body fields of a valid message ``data``;
    names ending in "count" are length fields."""
    end = len(data)
    if cls is KeyMessage:
        return [("public_key", 44, 32)]
    if cls is RosterMessage:
        out = [("n_dims", 44, 4), ("bins_per_dim", 48, 8), ("max_nonzeros", 56, 4),
               ("max_client_nonzeros", 60, 4), ("mode", 64, 1), ("hash_seed", 65, 32),
               ("threshold", 97, 4), ("degree", 101, 4), ("server_key", 105, 32),
               ("count", 137, 4)]
        return out + _entries(141, _u32(data, 137))
    if cls is MsaRosterMessage:
        out = [("n_words", 44, 4), ("scale_bits", 48, 1), ("threshold", 49, 4),
               ("degree", 53, 4), ("server_key", 57, 32), ("count", 89, 4)]
        return out + _entries(93, _u32(data, 89))
    if cls is RoundMessage:
        n = _u32(data, 44)
        return ([("count", 44, 4)] + _ids("participant", 48, n)
                + [("delta_nonzeros", 48 + 4 * n, 4), ("base_round", 52 + 4 * n, 8)])
    if cls is GroupKeyMessage:
        return [("recipient", 44, 4), ("nonce", 48, 12), ("ciphertext", 60, 48)]
    if cls is ShareMessage:
        n = _u32(data, 108)
        out = [("round_key", 44, 32), ("commitment", 76, 32), ("count", 108, 4)]
        for t in range(n):
            o = 112 + t * (4 + SHARE_CT)
            out += [(f"holder{t}", o, 4), (f"ciphertext{t}", o + 4, SHARE_CT)]
        return out + [("tag", end - TAG, TAG)]
    if cls is ShareBundle:
        n = _u32(data, 48)
        o = 52 + 4 * n
        m = _u32(data, o)
        out = [("recipient", 44, 4), ("sharer_count", 48, 4)] + _ids("sharer", 52, n) \
            + [("item_count", o, 4)]
        for t in range(m):
            p = o + 4 + t * (36 + SHARE_CT)
            out += [(f"owner{t}", p, 4), (f"round_key{t}", p + 4, 32),
                    (f"ciphertext{t}", p + 36, SHARE_CT)]
        return out
    if cls is InputRequest:
        return [("delta_nonzeros", 44, 4), ("base_round", 48, 8)]
    if cls is UnmaskRequest:
        return [("count", 44, 4)] + _ids("survivor", 48, _u32(data, 44))
    if cls is UnmaskMessage:
        out = [("count", 44, 4)]
        for t in range(_u32(data, 44)):
            o = 48 + 38 * t
            out += [(f"owner{t}", o, 4), (f"kind{t}", o + 4, 1), (f"share{t}", o + 5, 33)]
        return out + [("tag", end - TAG, TAG)]
    if cls is KeyBatchMessage:
        c = _u32(data, 44)
        o = 48 + 64 * c
        out = [("count", 44, 4)] + _keys("round_key", 48, c) \
            + _keys("commitment", 48 + 32 * c, c) + [("holder_count", o, 4)]
        for t in range(_u32(data, o)):
            p = o + 4 + t * (4 + batch_ct(c))
            out += [(f"holder{t}", p, 4), (f"ciphertext{t}", p + 4, batch_ct(c))]
        return out + [("tag", end - TAG, TAG)]
    if cls is KeyBatchBundle:
        c, n = _u32(data, 44), _u32(data, 52)
        o = 56 + 4 * n
        out = [("count", 44, 4), ("recipient", 48, 4), ("sharer_count", 52, 4)] \
            + _ids("sharer", 56, n) + [("owner_count", o, 4)]
        for t in range(_u32(data, o)):
            p = o + 4 + t * (4 + 32 * c + batch_ct(c))
            out += [(f"owner{t}", p, 4)] + _keys("round_key", p + 4, c, t * c) \
                + [(f"ciphertext{t}", p + 4 + 32 * c, batch_ct(c))]
        return out
    if cls is AggregateMessage:
        n = _u32(data, 44)
        o = 48 + 4 * n
        return ([("survivor_count", 44, 4)] + _ids("survivor", 48, n)
                + [("count", o, 4)] + _words(o + 4, _u32(data, o)))
    # syndromes, masked vectors: count u32, u64 words, then the tag
    return [("count", 44, 4)] + _words(48, _u32(data, 44)) + [("tag", end - TAG, TAG)]


def int_values(width, current):
    """Edge values for an integer field of ``width`` bytes now holding
    ``current``: always the same number of them (reduced modulo the width),
    so that Hypothesis draws the same choices from messages whose keys and
    tags differ from run to run."""
    top = 1 << (8 * width)
    vals = (0, 1, 2, 3, current - 1, current + 1, current * 2, current + 256,
            top // 2 - 1, top // 2, top - 2, top - 1,
            1 << 20, (1 << 20) + 1, 1 << 22, (1 << 22) + 1, 1 << 31, (1 << 32) - 2,
            P, P - 1, P + 1, P31, 101, (1 << 63) - 25, 1 << 63)
    return [v % top for v in vals]


# ---------------------------------------------------------------------------
# honest runs, every message through its bytes

SCMA_CONFIGS = {
    # name: (n_dims, bins_per_dim, max_nonzeros, modulus, data seed)
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


def _keep(store, key, f):
    """A receive function that stores the bytes of the role's answer."""
    def receive(msg):
        store[key] = f(msg).to_bytes()
    return receive


class ScmaRun:
    """One SCMA run (keys, roster, a full round, a difference round) played
    step by step: :meth:`steps` yields every message a role receives.
    Round-2 syndromes go to the server in one ``receive_many`` batch."""

    def __init__(self, cfg):
        d, B, M, p, _ = SCMA_CONFIGS[cfg]
        self.params = ScmaParams.create(d, B, M, modulus=p)
        self.data1, self.data2, self.expected1, self.expected2 = scma_data(cfg)
        self.server = ScmaServer(self.params)
        self.clients = [ScmaClient(i) for i in range(N_CLIENTS)]
        self.results = []

    def _round(self, pre, delta):
        server, clients = self.server, self.clients
        out, syn, um = {}, {}, {}
        rnd = server.start_round().to_bytes()
        for i, c in enumerate(clients):
            yield Step(pre + "round", i, RoundMessage, rnd, _keep(out, i, c.share_keys))
        for i in range(N_CLIENTS):
            yield Step(pre + "shares", i, ShareMessage, out[i], server.receive_shares)
        for i, c in enumerate(clients):
            yield Step(pre + "bundle", i, ShareBundle, server.bundle(i).to_bytes(),
                       c.receive_shares)
        req = server.request_inputs(delta).to_bytes()
        for i, c in enumerate(clients):
            yield Step(pre + "inputs", i, InputRequest, req, _keep(syn, i, c.respond))
        if not delta:
            for i in range(N_CLIENTS):
                yield Step(pre + "syndrome", i, SyndromeMessage, syn[i], server.receive)
        else:
            batch = [syn[i] for i in range(N_CLIENTS)]
            for i in range(N_CLIENTS):
                # the batch with message i under test; the honest batch comes after
                yield Step(pre + "syndrome", i, SyndromeMessage, batch[i],
                           lambda m, i=i: server.receive_many(
                               batch[:i] + [m.to_bytes()] + batch[i + 1:]), _later)
            server.receive_many(batch)
        ureq = server.unmask_request().to_bytes()
        for i, c in enumerate(clients):
            yield Step(pre + "unmask-request", i, UnmaskRequest, ureq, _keep(um, i, c.unmask))
        for i in range(N_CLIENTS):
            yield Step(pre + "unmask", i, UnmaskMessage, um[i], server.receive_unmask)
        self.results.append(server.finish_round())

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
        yield from self._round("", 0)
        for c, (bins, counts) in zip(clients, self.data2):
            c.set_data(bins, counts)
        yield from self._round("delta-", 2)

    def check(self, skip=()):
        assert len(self.results) == 2
        for res, (bins, counts) in zip(self.results, (self.expected1, self.expected2)):
            assert res.bins.tolist() == bins and res.counts.tolist() == counts


MSA_X = {1: [[0.5, -1.25, 2.0, 0.0], [1.0, 1.0, 1.0, 1.0], [-0.75, 0.0, 3.5, 8.0],
             [0.25, 2.5, -4.0, 0.125]],
         2: [[1.5, 0.25, -2.0, 4.0], [0.0, 1.0, 0.0, 1.0], [-0.5, 7.0, 0.5, 0.0],
             [3.0, 3.0, 3.0, 3.0]]}     # new data each round (clients refuse to have
#                                         the same data summed over other survivors)
MSA_SILENT = 3          # shares its keys in round 2, then goes silent (a dropout)


class MsaRun:
    """One MSA run of four clients (threshold 3): keys, roster, group keys,
    a full round and a round in which client 3 drops out after sharing its
    keys (its round key is recovered from the others' shares)."""

    def __init__(self):
        self.run_id = os.urandom(16)
        self.server = MsaServer(self.run_id, len(MSA_X[1][0]))
        self.clients = [MsaClient(i) for i in range(len(MSA_X[1]))]
        self.outputs = {}

    def _open(self, pre):
        """Steps 1-2 of a round: the round broadcast, each client's shares
        of its round keys, each client's bundle."""
        server, clients = self.server, self.clients
        out = {}
        rnd = server.start_round().to_bytes()
        for i, c in enumerate(clients):
            yield Step(pre + "round", i, RoundMessage, rnd, _keep(out, i, c.share_keys))
        for i in range(len(clients)):
            yield Step(pre + "shares", i, ShareMessage, out[i], server.receive_shares)
        for i, c in enumerate(clients):
            yield Step(pre + "bundle", i, ShareBundle, server.bundle(i).to_bytes(),
                       c.receive_shares)

    def _key_batch(self):
        """The key batch's flight (none in this run)."""
        return ()

    def _round(self, r):
        server, clients = self.server, self.clients
        pre = f"r{r}-"
        live = [c for c in clients if r == 1 or c.client_id != MSA_SILENT]
        masked, um = {}, {}
        yield from self._open(pre)
        req = server.request_inputs().to_bytes()
        for c in live:
            i = c.client_id
            yield Step(pre + "inputs", i, InputRequest, req,
                       _keep(masked, i, lambda m, c=c: c.respond(m, MSA_X[r][c.client_id])))
        for c in live:
            yield Step(pre + "masked", c.client_id, MaskedVectorMessage, masked[c.client_id],
                       server.receive)
        ureq = server.unmask_request().to_bytes()
        for c in live:
            yield Step(pre + "unmask-request", c.client_id, UnmaskRequest, ureq,
                       _keep(um, c.client_id, c.unmask_shares))
        for c in live:
            yield Step(pre + "unmask", c.client_id, UnmaskMessage, um[c.client_id],
                       server.receive_unmask)
        agg = server.finish_round().to_bytes()
        for i, c in enumerate(clients):
            yield Step(pre + "aggregate", i, AggregateMessage, agg,
                       lambda m, i=i, c=c: self.outputs.__setitem__((r, i), c.unmask(m).tolist()))

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
        yield from self._key_batch()
        yield from self._round(1)
        yield from self._round(2)

    @staticmethod
    def expected():
        full = [sum(col) for col in zip(*MSA_X[1])]
        part = [sum(col) for col in zip(*(x for j, x in enumerate(MSA_X[2]) if j != MSA_SILENT))]
        return {(r, i): v for r, v in ((1, full), (2, part)) for i in range(len(MSA_X[1]))}

    def check(self, skip=()):
        want = self.expected()
        for k in skip:
            want.pop(k, None)
            self.outputs.pop(k, None)
        assert self.outputs == want


BATCH_ROUNDS = 2        # the rounds of MsaBatchRun's key batch: both are played


class MsaBatchRun(MsaRun):
    """The MSA run with the keys of both rounds shared in one key batch
    (issue 22): after the group keys, the batch broadcast (a RoundMessage),
    each client's KeyBatchMessage to the server and each client's
    KeyBatchBundle; then each round opens from its RoundMessage alone
    (``enter_round``: no shares, no bundle), and client 3 drops out of
    round 2 after entering it (its round-2 key is recovered from the shares
    it sent in the batch)."""

    def _key_batch(self):
        server, clients = self.server, self.clients
        out = {}
        rnd = server.start_key_batch(BATCH_ROUNDS).to_bytes()
        for i, c in enumerate(clients):
            yield Step("batch-round", i, RoundMessage, rnd,
                       _keep(out, i, lambda m, c=c: c.share_key_batch(m, BATCH_ROUNDS)))
        for i in range(len(clients)):
            yield Step("batch-shares", i, KeyBatchMessage, out[i], server.receive_key_batch)
        for i, c in enumerate(clients):
            yield Step("batch-bundle", i, KeyBatchBundle,
                       server.key_batch_bundle(i).to_bytes(), c.receive_key_batch)

    def _open(self, pre):
        rnd = self.server.start_round().to_bytes()
        for i, c in enumerate(self.clients):
            yield Step(pre + "round", i, RoundMessage, rnd, c.enter_round)


RUNS = {"msa": MsaRun, "msa-batch": MsaBatchRun}


def make_run(protocol):
    return RUNS[protocol]() if protocol in RUNS else ScmaRun(protocol)


def _parse(step):
    return step.cls.from_bytes(step.data)


def play(protocol, target=None, mutate=None):
    """Play a live run; at step ``target`` = (stage, index) the message
    ``mutate(cls, honest bytes)`` replaces the honest one.

    Returns None when the mutated bytes do not parse (or no target);
    "rejected" when the role raised PyfkmError -- the honest message then
    follows and the run must end with the right aggregates; "refused later"
    when the role accepted it and a later step raised PyfkmError; "accepted"
    when the role accepted it and the run completed -- then with the right
    aggregates (see the module notes for the aggregate's words)."""
    run = make_run(protocol)
    outcome = None
    steps = run.steps()
    for step in steps:
        if (step.stage, step.index) == target:
            blob = mutate(step.cls, step.data)
            if blob == step.data:
                step.deliver(_parse(step))
                continue
            try:
                msg = step.cls.from_bytes(blob)
            except PyfkmError:
                return None
            try:
                step.receive(msg)
            except PyfkmError:
                outcome = "rejected"
            else:
                return _go_on(run, steps, step, msg)
        step.deliver(_parse(step))
    run.check()
    return outcome


def _go_on(run, steps, step, msg):
    """The rest of a run after the role accepted ``msg`` in place of the
    honest message of ``step``."""
    skip = ()
    if step.cls is AggregateMessage:
        honest = _parse(step)
        r = int(step.stage[1])
        answered = not (r == 2 and step.index == MSA_SILENT)
        if (msg.run_id, msg.round) == (honest.run_id, honest.round) and (
                msg.survivors == honest.survivors or not answered):
            # only the words differ -- the server's sum is not authenticated
            # to the clients, they decode what they are sent -- or the
            # survivors, for a client that dropped out before the unmask
            # request (it never learnt them)
            skip = ((r, step.index),)
    try:
        for rest in steps:
            rest.deliver(_parse(rest))
    except PyfkmError:
        return "refused later"
    run.check(skip)
    return "accepted"


@functools.cache
def honest_steps(protocol):
    """{(stage, index): (cls, bytes)} of one honest run (which ends right)."""
    run = make_run(protocol)
    out = {}
    for step in run.steps():
        out[step.stage, step.index] = (step.cls, step.data)
        step.deliver(_parse(step))
    run.check()
    return out


PROTOCOLS = tuple(SCMA_CONFIGS) + tuple(RUNS)


@functools.cache
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
        # a field kind first (every roster entry, participant, share or word
        # is one kind), then one field of that kind
        groups = {}
        for f in fields:
            groups.setdefault(f[0].rstrip("0123456789"), []).append(f)
        _, off, w = draw(st.sampled_from(groups[draw(st.sampled_from(sorted(groups)))]))
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
    # the runs carry both kinds of unmask share: self seeds (0) and the
    # round key of the dropped client (1)
    kinds_sent = {k for cls, data in pool() if cls is UnmaskMessage
                  for k in UnmaskMessage.from_bytes(data).kinds}
    assert kinds_sent == {0, 1}
    # ... and so does each MSA run, the key batch's included (in round 2 the
    # survivors reveal their shares of client 3's batched round key)
    for protocol in RUNS:
        kinds_sent = {k for (stage, _), (cls, data) in honest_steps(protocol).items()
                      if stage == "r2-unmask" for k in UnmaskMessage.from_bytes(data).kinds}
        assert kinds_sent == {0, 1}, protocol
    assert {cls for cls, _ in honest_steps("msa-batch").values()} >= {KeyBatchMessage,
                                                                      KeyBatchBundle}
    assert not {ShareMessage, ShareBundle} & {cls for cls, _ in
                                              honest_steps("msa-batch").values()}


def test_body_fields_tile_every_honest_message():
    # the layout the mutations aim at, checked against the honest bytes:
    # the header, then the body fields one after another to the last byte
    for cls, data in pool():
        pos = 0
        for name, off, w in HEADER_FIELDS + body_fields(cls, data):
            assert off == pos, (cls.__name__, name)
            pos += w
        assert pos == len(data), cls.__name__


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


@pytest.mark.slow
@fuzz_settings(800)
@given(st.data())
def test_fuzz_parse_byte_mutations(data):
    parse_all(data.draw(mutated(data.draw(source()), BYTE_KINDS)))


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
@fuzz_settings(80)
@given(data=st.data())
def test_fuzz_parse_field_mutations(cls, data):
    src = data.draw(st.sampled_from([m for m in pool() if m[0] is cls]))
    parse_all(data.draw(mutated(src, FIELD_KINDS)))


# ---------------------------------------------------------------------------
# 2. roles: mutated messages that parse, in a live run


def _stages(protocol, aggregate):
    return tuple(s for s in honest_steps(protocol) if s[0].endswith("aggregate") == aggregate)


def _fuzz_role(data, protocol, target):
    cls = honest_steps(protocol)[target][0]
    outcome = play(protocol, target,
                   lambda cls, honest: data.draw(mutated((cls, honest), SEMANTIC_KINDS)))
    event(f"{cls.__name__}: {outcome or 'not parsed'}")


@pytest.mark.slow
@fuzz_settings(600)
@given(st.data())
def test_fuzz_roles_take_mutated_messages(data):
    # SCMA (one of its configurations), MSA and MSA with a key batch equally
    # often; every stage but the aggregate broadcast (the next tests)
    protocol = data.draw(st.sampled_from(["msa", "msa-batch", "scma"]))
    if protocol == "scma":
        protocol = data.draw(st.sampled_from(tuple(SCMA_CONFIGS)))
    _fuzz_role(data, protocol, data.draw(st.sampled_from(_stages(protocol, False))))


@fuzz_settings(60)
@given(st.data())
def test_fuzz_clients_take_mutated_aggregates(data):
    # an aggregate whose run, round or survivors differ from the round the
    # client answered must be refused; changed words decode to another sum
    # (the clients cannot check the server's sum)
    protocol = data.draw(st.sampled_from(tuple(RUNS)))
    _fuzz_role(data, protocol, data.draw(st.sampled_from(_stages(protocol, True))))


BATCH_STAGES = ("batch-round", "batch-shares", "batch-bundle", "r1-round", "r2-round")


@fuzz_settings(300)
@given(st.data())
def test_fuzz_roles_take_mutated_key_batch_messages(data):
    # the steps a key batch adds or changes: the batch broadcast (each
    # client shares its keys of both rounds), the clients' KeyBatchMessage
    # (server), the KeyBatchBundle (each client), and the round broadcasts
    # that open the batch's rounds without shares (enter_round)
    stage = data.draw(st.sampled_from(BATCH_STAGES))
    steps = [s for s in honest_steps("msa-batch") if s[0] == stage]
    _fuzz_role(data, "msa-batch", data.draw(st.sampled_from(steps)))


# ---------------------------------------------------------------------------
# a rejected message changes nothing: explicit mutations, each of which the
# receiving role must refuse, and after which the honest run ends right

def set_field(cls, data, name, value):
    """``data`` with the field ``name`` (header or body) set to ``value``
    (an int, or bytes of the field's width; None: its first byte flipped)."""
    fields = {f[0]: f[1:] for f in HEADER_FIELDS + body_fields(cls, data)}
    off, w = fields[name]
    if value is None:
        return flip(data, off)
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
    ("index", "roster", 2, "server_key", ZERO_KEY),          # low-order server key
    ("index", "round", 1, "participant2", 7),                # a participant outside the roster
    ("index", "round", 0, "run_id", OTHER_RUN),
    ("hashed", "round", 2, "participant2", 3),               # client 2 not a participant
    ("index", "shares", 1, "sender", 5),                     # not in the roster
    ("hashed", "shares", 0, "round", 2),                     # another round
    ("hashed-p31", "shares", 2, "tag", None),                # altered tag
    ("index", "shares", 1, "ciphertext0", None),             # altered share: tag fails
    ("index", "bundle", 0, "round_key1", None),              # altered round key: AEAD fails
    ("hashed", "bundle", 1, "ciphertext0", None),            # altered share: AEAD fails
    ("index", "bundle", 2, "recipient", 5),                  # another client's bundle
    ("hashed-p31", "bundle", 2, "round", 5),                 # not the client's open round
    ("index", "inputs", 0, "round", 2),                      # not the open round
    ("hashed", "inputs", 1, "run_id", OTHER_RUN),
    ("index", "syndrome", 1, "sender", 7),                   # not a participant
    ("hashed", "syndrome", 2, "round", 2),                   # not the open round
    ("hashed-p31", "syndrome", 0, "run_id", OTHER_RUN),
    ("index", "syndrome", 0, "word0", None),                 # altered word: tag fails
    ("hashed", "syndrome", 1, "sender", 2),                  # re-addressed: tag fails
    ("index", "unmask-request", 0, "round", 1 << 40),        # not the answered round
    ("hashed", "unmask-request", 1, "survivor2", 7),         # a survivor outside the roster
    ("index", "unmask", 2, "share0", None),                  # altered share: tag fails
    ("hashed", "unmask", 0, "kind1", 1),                     # the other kind: tag fails
    ("index", "unmask", 1, "sender", 0),                     # re-addressed: tag fails
    ("index", "delta-inputs", 2, "delta_nonzeros", 5),       # above max_nonzeros = 4
    ("hashed", "delta-round", 0, "participant2", 6),         # a participant outside the roster
    ("index", "delta-round", 1, "run_id", OTHER_RUN),
    ("index", "delta-syndrome", 1, "sender", 0),             # duplicate within the batch
    ("hashed", "delta-syndrome", 2, "round", 1),             # a finished round
    ("msa", "key", 2, "run_id", OTHER_RUN),
    ("msa", "key", 1, "sender", 0),                          # duplicate
    ("msa", "roster", 1, "key0", ZERO_KEY),                  # low-order key (regression)
    ("msa", "roster", 2, "run_id", OTHER_RUN),
    ("msa", "roster", 3, "server_key", ONE_KEY),             # low-order server key
    ("msa", "relay", 0, "recipient", 5),                     # not a roster client
    ("msa", "relay", 1, "sender", 1),                        # not the leader
    ("msa", "group-key", 1, "ciphertext", None),             # fails authentication
    ("msa", "group-key", 2, "nonce", None),                  # fails authentication
    ("msa", "group-key", 2, "recipient", 1),                 # for another client
    ("msa", "r1-round", 1, "participant3", 5),               # not the roster
    ("msa", "r1-round", 0, "run_id", OTHER_RUN),
    ("msa", "r1-shares", 2, "commitment", None),             # altered: tag fails
    ("msa", "r2-bundle", 3, "ciphertext1", None),            # altered share: AEAD fails
    ("msa", "r1-inputs", 2, "round", 2),                     # not the open round
    ("msa", "r1-masked", 1, "sender", 9),                    # not a participant
    ("msa", "r1-masked", 2, "round", 2),                     # not the open round
    ("msa", "r2-masked", 1, "word3", None),                  # altered word: tag fails
    ("msa", "r2-masked", 2, "tag", None),                    # altered tag
    ("msa", "r2-unmask-request", 0, "survivor2", 9),         # a survivor outside the roster
    ("msa", "r2-unmask", 1, "share3", None),                 # altered share: tag fails
    ("msa", "r1-aggregate", 1, "run_id", OTHER_RUN),
    ("msa", "r2-aggregate", 2, "survivor2", 7),              # a survivor outside the roster
    # key batches
    ("msa-batch", "batch-round", 1, "participant3", 5),      # not the roster
    ("msa-batch", "batch-round", 2, "run_id", OTHER_RUN),
    ("msa-batch", "batch-round", 0, "round", (1 << 32) - 1),  # the batch's last round >= 2**32
    ("msa-batch", "batch-shares", 1, "sender", 9),           # not in the roster
    ("msa-batch", "batch-shares", 2, "round", 2),            # not the batch's first round
    ("msa-batch", "batch-shares", 0, "run_id", OTHER_RUN),
    ("msa-batch", "batch-shares", 3, "round_key1", None),    # altered round key: tag fails
    ("msa-batch", "batch-shares", 1, "commitment0", None),   # altered commitment: tag fails
    ("msa-batch", "batch-shares", 2, "holder2", 7),          # re-addressed share: tag fails
    ("msa-batch", "batch-shares", 1, "ciphertext2", None),   # altered share: tag fails
    ("msa-batch", "batch-shares", 0, "tag", None),           # altered tag
    ("msa-batch", "batch-bundle", 0, "recipient", 1),        # another client's bundle
    ("msa-batch", "batch-bundle", 1, "round", 2),            # not the client's batch
    ("msa-batch", "batch-bundle", 2, "run_id", OTHER_RUN),
    ("msa-batch", "batch-bundle", 1, "sharer3", 5),          # a sharer outside the roster
    ("msa-batch", "batch-bundle", 3, "owner2", 7),           # an owner outside the sharers
    ("msa-batch", "batch-bundle", 2, "round_key3", None),    # altered round-2 key: AEAD fails
    ("msa-batch", "batch-bundle", 1, "round_key0", ZERO_KEY),  # low-order key: AEAD fails
    ("msa-batch", "batch-bundle", 0, "ciphertext1", None),   # altered shares: AEAD fails
    ("msa-batch", "r1-round", 2, "participant3", 5),         # not a sharer of the batch
    ("msa-batch", "r1-round", 0, "round", 3),                # outside the batch
    ("msa-batch", "r1-round", 1, "run_id", OTHER_RUN),
    ("msa-batch", "r2-round", 1, "round", 1),                # opened already
    ("msa-batch", "r2-round", 0, "participant3", 4),         # not a sharer of the batch
    ("msa-batch", "r2-masked", 2, "word1", None),            # altered word: tag fails
    ("msa-batch", "r2-unmask", 0, "share3", None),           # altered share: tag fails
    ("msa-batch", "r2-aggregate", 1, "survivor2", 7),        # a survivor outside the roster
]


@pytest.mark.parametrize("protocol, stage, index, name, value", REJECTED,
                         ids=[f"{c[0]}-{c[1]}{c[2]}-{c[3]}" for c in REJECTED])
def test_rejected_message_leaves_the_role_unchanged(protocol, stage, index, name, value):
    blobs = []

    def mutate(cls, honest):
        blob = set_field(cls, honest, name, value)
        assert blob != honest
        cls.from_bytes(blob)                               # the format is valid
        blobs.append(blob)
        return blob

    # play() checks that the honest run, after the rejection, ends right
    assert play(protocol, (stage, index), mutate) == "rejected"
    assert len(blobs) == 1


# messages a client cannot check alone: it accepts them, and the run must
# then fail (the roster digest binds every derivation; the server checks
# every unmask answer against the survivors it named), never return a sum

ACCEPTED_THEN_REFUSED = [
    ("hashed", "roster", 0, "threshold", 1),       # a lower threshold for one client
    ("msa", "roster", 2, "threshold", 2),
    ("hashed", "roster", 2, "degree", 4),          # the same (complete) graph, another digest
    ("msa", "roster", 1, "scale_bits", 20),        # another fixed-point scale
    ("index", "roster", 1, "hash_seed", bytes(32)),
    ("msa", "r2-unmask-request", 0, "survivor2", 3),   # a survivor set the server did not close
    # a batch for rounds 2-3: its KeyBatchMessage is of another batch
    ("msa-batch", "batch-round", 1, "round", 2),
    # round 2 entered in place of round 1: round 1's input request is refused
    ("msa-batch", "r1-round", 1, "round", 2),
]


@pytest.mark.parametrize("protocol, stage, index, name, value", ACCEPTED_THEN_REFUSED,
                         ids=[f"{c[0]}-{c[1]}{c[2]}-{c[3]}" for c in ACCEPTED_THEN_REFUSED])
def test_unverifiable_mutation_makes_the_run_fail(protocol, stage, index, name, value):
    assert play(protocol, (stage, index),
                lambda cls, honest: set_field(cls, honest, name, value)) == "refused later"


# key batch messages changed in their structure (fields dropped, the
# lengths adjusted: the byte mutations rarely reach these), re-encoded from
# the parsed honest message; the role rejects them, or accepts them and a
# later step refuses the run, never a wrong sum

def _drop_owner(t):
    """A bundle without the item of its owner ``t`` (the sharers kept)."""
    def change(m):
        keep = [j for j in range(len(m.owners)) if m.owners[j] != t]
        return {"owners": tuple(m.owners[j] for j in keep),
                "round_keys": tuple(m.round_keys[j] for j in keep),
                "ciphertexts": tuple(m.ciphertexts[j] for j in keep)}
    return change


def _drop_sharer(t):
    """A bundle without client ``t``: neither among the sharers nor an owner."""
    def change(m):
        return dict(_drop_owner(t)(m), sharers=tuple(i for i in m.sharers if i != t))
    return change


def _participants(ids):
    return lambda m: {"participants": ids}


def _swap_round_keys(m):
    return {"round_keys": (m.round_keys[1], m.round_keys[0]) + m.round_keys[2:]}


def replaced(change):
    def mutate(cls, honest):
        msg = cls.from_bytes(honest)
        return dataclasses.replace(msg, **change(msg)).to_bytes()
    return mutate


KEY_BATCH_STRUCTURE = [
    # (name, stage, index, change, outcome)
    ("owner-missing", "batch-bundle", 1, _drop_owner(3), "rejected"),  # a sharer's shares
    ("keys-swapped", "batch-bundle", 2, _swap_round_keys, "rejected"),  # AEAD fails
    # client 3 not a sharer for client 0: round 1 then has a non-sharer
    ("sharer-dropped", "batch-bundle", 0, _drop_sharer(3), "refused later"),
    # client 2 shares its batch without client 3: not to each participant
    ("batch-without-3", "batch-round", 2, _participants((0, 1, 2)), "refused later"),
    # the masked input's tag binds the round's participants
    ("r1-without-3", "r1-round", 0, _participants((0, 1, 2)), "refused later"),
    ("r2-without-3", "r2-round", 1, _participants((0, 1, 2)), "refused later"),
    # the client that drops out of round 2 sends nothing the change could alter
    ("r2-silent-without-2", "r2-round", MSA_SILENT, _participants((0, 1, 3)), "accepted"),
]


@pytest.mark.parametrize("stage, index, change, outcome", [c[1:] for c in KEY_BATCH_STRUCTURE],
                         ids=[c[0] for c in KEY_BATCH_STRUCTURE])
def test_key_batch_messages_changed_in_structure(stage, index, change, outcome):
    assert play("msa-batch", (stage, index), replaced(change)) == outcome


# an aggregate of another round, or of other survivors, than the one the
# client answered: the client must refuse it rather than decode another sum

AGGREGATE_BINDING = [
    ("r1-aggregate", 0, "round", 2),               # the next round's number
    ("r2-aggregate", 1, "survivor2", 3),           # survivors (0, 1, 3), not (0, 1, 2)
]


@pytest.mark.parametrize("stage, index, name, value", AGGREGATE_BINDING,
                         ids=[f"{c[0]}{c[1]}-{c[2]}" for c in AGGREGATE_BINDING])
def test_client_refuses_an_aggregate_of_another_round_or_survivor_set(stage, index, name,
                                                                        value):
    assert play("msa", (stage, index),
                lambda cls, honest: set_field(cls, honest, name, value)) == "rejected"


# ---------------------------------------------------------------------------
# explicit bytes: malformed lengths, and the bugs the fuzzer found

def header(kind, run_id=OTHER_RUN, round_=0, sender=SERVER, modulus=0):
    """A message header written out from the documented layout."""
    return struct.pack("<4sBBH16sQIQ", b"PFKM", VERSION, kind, 0, run_id, round_, sender,
                       modulus)


def real_key():
    return MsaClient(0).key_message(bytes(16)).public_key


def roster_bytes(d, B, M, kc, mode, entries, modulus=P, seed=bytes(range(32)),
                 threshold=1, degree=0, server_key=None, run_id=OTHER_RUN):
    """SCMA roster bytes (type 2): parameters, threshold, degree, server
    key, count, (id u32, key 32s) entries."""
    skey = real_key() if server_key is None else server_key
    body = struct.pack("<IQIIB32s", d, B, M, kc, mode, seed) + \
        struct.pack("<II32s", threshold, degree, skey) + struct.pack("<I", len(entries))
    body += b"".join(struct.pack("<I", i) + k for i, k in entries)
    return header(2, run_id=run_id, modulus=modulus) + body


def msa_roster_bytes(entries, n_words=4, scale_bits=16, threshold=1, degree=0,
                     server_key=None, run_id=OTHER_RUN):
    skey = real_key() if server_key is None else server_key
    body = struct.pack("<IBII", n_words, scale_bits, threshold, degree) + skey + \
        struct.pack("<I", len(entries))
    body += b"".join(struct.pack("<I", i) + k for i, k in entries)
    return header(11, run_id=run_id) + body


def client_keys(n, run_id=OTHER_RUN):
    return [(i, ScmaClient(i).key_message(run_id).public_key) for i in range(n)]


HUGE = 2**32 - 1


@pytest.mark.parametrize("data, cls", [
    (header(3) + struct.pack("<I", HUGE) + bytes(12), RoundMessage),
    (header(4, round_=1, sender=0, modulus=P) + struct.pack("<I", HUGE) + bytes(16),
     SyndromeMessage),
    (header(4, round_=1, sender=0, modulus=P) + struct.pack("<I", 2**31) + bytes(8),
     SyndromeMessage),
    (roster_bytes(3, 7, 4, 4, 0, [])[:-4] + struct.pack("<I", HUGE) + bytes(36),
     RosterMessage),
    (msa_roster_bytes([])[:-4] + struct.pack("<I", HUGE) + bytes(36), MsaRosterMessage),
    (header(13, round_=1, sender=0) + struct.pack("<I", HUGE) + bytes(8 + TAG),
     MaskedVectorMessage),
    (header(14, round_=1) + struct.pack("<I", HUGE), AggregateMessage),
    (header(14, round_=1) + struct.pack("<I", 3) + bytes(8), AggregateMessage),  # 2 of 3
    (header(14, round_=1) + struct.pack("<II", 1, 0) + struct.pack("<I", HUGE) + bytes(8),
     AggregateMessage),
    (header(5, round_=1, sender=0) + bytes(64) + struct.pack("<I", HUGE) + bytes(TAG),
     ShareMessage),
    (header(6, round_=1) + struct.pack("<II", 0, HUGE) + bytes(8), ShareBundle),
    (header(6, round_=1) + struct.pack("<III", 0, 1, 0) + struct.pack("<I", HUGE)
     + bytes(40), ShareBundle),
    (header(8, round_=1) + struct.pack("<I", HUGE) + bytes(8), UnmaskRequest),
    (header(9, round_=1, sender=0) + struct.pack("<I", HUGE) + bytes(38 + TAG),
     UnmaskMessage),
    (header(15, round_=1, sender=0) + struct.pack("<I", 1024) + bytes(64 + 4 + TAG),
     KeyBatchMessage),
    (header(15, round_=1, sender=0) + struct.pack("<I", 1) + bytes(64)
     + struct.pack("<I", HUGE) + bytes(4 + batch_ct(1) + TAG), KeyBatchMessage),
    (header(16, round_=1) + struct.pack("<III", 1, 0, HUGE) + bytes(8), KeyBatchBundle),
    (header(16, round_=1) + struct.pack("<IIII", 1, 0, 1, 0) + struct.pack("<I", HUGE)
     + bytes(4 + 32 + batch_ct(1)), KeyBatchBundle),
    (header(16, round_=1) + struct.pack("<IIII", 1024, 0, 1, 0) + struct.pack("<I", 1)
     + bytes(4 + 32 + batch_ct(1)), KeyBatchBundle),
], ids=["round", "syndrome", "syndrome-2**31", "roster", "msa-roster", "masked",
        "aggregate", "aggregate-short", "aggregate-words", "shares", "bundle-sharers",
        "bundle-items", "unmask-request", "unmask", "key-batch-rounds", "key-batch-holders",
        "key-batch-bundle-sharers", "key-batch-bundle-owners", "key-batch-bundle-rounds"])
def test_declared_length_beyond_the_bytes_is_rejected_before_allocating(data, cls, traced):
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    with pytest.raises(MessageFormatError, match="truncated"):
        cls.from_bytes(data)
    assert tracemalloc.get_traced_memory()[1] - base < (1 << 20)


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
@pytest.mark.parametrize("data", [None, "PFKM", 7, [0] * 50, np.zeros(60, np.uint8)])
def test_from_bytes_of_a_non_bytes_object_is_a_format_error(cls, data):
    with pytest.raises(MessageFormatError):
        cls.from_bytes(data)


def test_from_bytes_takes_bytearray_and_memoryview():
    for cls, data in pool():
        assert cls.from_bytes(bytearray(data)).to_bytes() == data
        assert cls.from_bytes(memoryview(data)).to_bytes() == data


def key_batch_bytes(count, n_keys=None, holders=(), sender=0):
    """KeyBatchMessage bytes (type 15): count, round keys, commitments,
    holder count, (id u32, ciphertext) per holder, tag."""
    n = count if n_keys is None else n_keys
    body = struct.pack("<I", count) + bytes(64 * n) + struct.pack("<I", len(holders))
    body += b"".join(struct.pack("<I", h) + bytes(batch_ct(count)) for h in holders)
    return header(15, round_=1, sender=sender) + body + bytes(TAG)


def key_batch_bundle_bytes(count, sharers=(0, 1), owners=(1,), recipient=0):
    """KeyBatchBundle bytes (type 16): count, recipient, sharers, owner
    count, (id u32, count round keys, ciphertext) per owner."""
    body = struct.pack(f"<III{len(sharers)}I", count, recipient, len(sharers), *sharers)
    body += struct.pack("<I", len(owners))
    body += b"".join(struct.pack("<I", o) + bytes(32 * count + batch_ct(count)) for o in owners)
    return header(16, round_=1) + body


@pytest.mark.parametrize("count", [0, 1025, HUGE])
def test_key_batch_round_count_out_of_range_is_a_format_error(count):
    # 1 to MAX_BATCH = 1024 rounds; the lengths agree with the count
    for c in (1, 1024):
        assert KeyBatchMessage.from_bytes(key_batch_bytes(c, holders=(1,))).count == c
        assert KeyBatchBundle.from_bytes(key_batch_bundle_bytes(c)).count == c
    with pytest.raises(MessageFormatError, match="rounds"):
        KeyBatchMessage.from_bytes(key_batch_bytes(count, n_keys=min(count, 2)))
    with pytest.raises(MessageFormatError, match="rounds"):
        KeyBatchBundle.from_bytes(key_batch_bundle_bytes(count, owners=()))


@pytest.mark.parametrize("make, match", [
    (lambda: key_batch_bytes(2, holders=(2, 1)), "holder"),          # not increasing
    (lambda: key_batch_bytes(2, holders=(1, 1)), "holder"),          # repeated
    (lambda: key_batch_bytes(2, holders=(0, 1)), "sender"),          # the sender a holder
    (lambda: key_batch_bytes(2, holders=(1,), sender=SERVER), "not from a client"),
    (lambda: key_batch_bytes(2, holders=(HUGE,)), "holder"),         # the server's id
    (lambda: key_batch_bundle_bytes(2, sharers=()), "sharer"),       # no sharers
    (lambda: key_batch_bundle_bytes(2, sharers=(1, 0)), "sharer"),
    (lambda: key_batch_bundle_bytes(2, owners=(2, 1)), "owner"),
    (lambda: key_batch_bundle_bytes(2, recipient=HUGE), "recipient"),
    (lambda: key_batch_bytes(2, holders=(1,))[:-1], "truncated"),
    (lambda: key_batch_bytes(2, holders=(1,)) + b"\0", "oversized"),
    (lambda: key_batch_bundle_bytes(2)[:-1], "truncated"),
    (lambda: key_batch_bundle_bytes(2) + b"\0", "oversized"),
], ids=["holders-order", "holders-repeated", "sender-holder", "server-sender",
        "holder-server-id", "no-sharers", "sharers-order", "owners-order", "recipient-server",
        "batch-truncated", "batch-oversized", "bundle-truncated", "bundle-oversized"])
def test_malformed_key_batch_fields_are_format_errors(make, match):
    data = make()
    cls = KeyBatchMessage if data[5] == 15 else KeyBatchBundle
    with pytest.raises(MessageFormatError, match=match):
        cls.from_bytes(data)


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


@pytest.mark.parametrize("field, value", [("threshold", 0), ("threshold", 3),
                                          ("degree", 1), ("degree", HUGE)])
@pytest.mark.parametrize("cls", [RosterMessage, MsaRosterMessage],
                         ids=["RosterMessage", "MsaRosterMessage"])
def test_roster_threshold_and_degree_are_checked(cls, field, value):
    # threshold in [1, clients], degree even (0: the complete graph)
    entries = client_keys(2)
    make = (lambda **kw: roster_bytes(3, 7, 4, 4, 0, entries, **kw)) \
        if cls is RosterMessage else (lambda **kw: msa_roster_bytes(entries, **kw))
    assert cls.from_bytes(make(threshold=2, degree=2)).threshold == 2
    with pytest.raises(MessageFormatError, match=field):
        cls.from_bytes(make(**{field: value}))


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
@pytest.mark.parametrize("whose", ["client", "server"])
@pytest.mark.parametrize("protocol", ["scma", "msa"])
def test_roster_with_a_low_order_key_is_a_protocol_error(protocol, whose, bad_key):
    # Found by the fuzzer: a roster carrying a low-order X25519 point as
    # another client's key made receive_roster raise cryptography's
    # ValueError("Error computing shared key.").  Now ProtocolError naming
    # the client (or the server), and the client is unchanged (the honest
    # roster works).
    skey = real_key()
    if protocol == "scma":
        params = ScmaParams.create(3, 7, 4)
        run_id = params.run_id
        client, cls = ScmaClient(1), RosterMessage
        keys = [ScmaClient(0).key_message(run_id).public_key,
                client.key_message(run_id).public_key,
                ScmaClient(2).key_message(run_id).public_key]

        def make(entries, skey):
            return roster_bytes(3, 7, 4, 4, 0, entries, seed=params.hash_seed,
                                server_key=skey, run_id=run_id, threshold=2)
    else:
        run_id = OTHER_RUN
        client, cls = MsaClient(1), MsaRosterMessage
        keys = [MsaClient(0).key_message(run_id).public_key,
                client.key_message(run_id).public_key,
                MsaClient(2).key_message(run_id).public_key]

        def make(entries, skey):
            return msa_roster_bytes(entries, server_key=skey, run_id=run_id, threshold=2)
    entries = list(enumerate(keys))
    honest = make(entries, skey)
    if whose == "client":
        bad = make(entries[:2] + [(2, bad_key)], skey)
        assert cls.from_bytes(bad).public_keys[2] == bad_key
        who = "client 2"
    else:
        bad = make(entries, bad_key)
        assert cls.from_bytes(bad).server_key == bad_key
        who = "the server"
    with pytest.raises(ProtocolError, match=who):
        client.receive_roster(cls.from_bytes(bad))
    client.receive_roster(cls.from_bytes(honest))
    assert client._m.digest is not None and client._m.neighbours() == {0, 2}
