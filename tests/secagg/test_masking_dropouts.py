"""Dropouts, thresholds and an adversarial server in pyfkm.secagg (issue 19).

The acceptance lines of the issue, one test (or a few) each, every one able
to fail: fresh keys per run and round that no object of the server holds;
the consistency rule (never both kinds of share of one peer); the roster
binding; the threshold at every client step and against differencing over
subsets; exact sums over the survivors for every tolerable set of dropouts
(complete and sparse graphs, at the input and at the unmask step) and a
:class:`ProtocolError` beyond; a late client hidden by its self mask;
replayed, re-addressed and altered messages refused; forged "negative"
counts refused; mask streams never reused.

Where the expected values come from:

(a) plain sums of the survivors' sparse vectors with
    ``collections.Counter`` (``plain_sum``);
(b) the protocol's definitions (Bonawitz et al., CCS 2017; SecAgg+, Bell et
    al., CCS 2020): who must hold which kind of share, how many shares a
    secret needs (``t`` in the complete graph, a majority of the ``k + 1``
    holders in a ring of degree ``k``), which dropout sets are tolerable
    (computed here from the graph the server publishes);
(c) the clients' secrets read from the client objects during the round
    (``client._m``: the channel key before the roster, the round key and
    self seed after ``share_keys``, the pair keys after ``receive_shares``),
    searched for in every bytes / ndarray leaf of the server's object graph
    (``server_leaves``; a walk of a client object finds them, so the search
    can fail).

Adversarial servers are written out here as the steps a server would take
(substituted roster keys, two different unmask requests, rewritten
messages); every message crosses the wire as bytes.  Keys come from the OS;
data from numpy.random.default_rng with fixed seeds.  Error tests first.

Tests named ``test_bug_*`` show defects of the library that are reported
and not yet fixed; they fail until the owner of the code fixes them.
"""
import dataclasses
import itertools
import struct
from collections import Counter

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from pyfkm.secagg import (
    DecodeError,
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
    secure_sum_sparse,
)
from pyfkm.secagg import _keys, _shamir
from pyfkm.secagg.scma import _crypto
from pyfkm.secagg.scma._driver import RoundTrip, setup_in_process

from _helpers.scma import make_run as scma_run, share_round as share, wire

B_SHARE, SK_SHARE = 0, 1          # the kinds of share, as on the wire
AUTH = "authentication"           # what a failed tag check says


# ---------------------------------------------------------------------------
# helpers

def plain_sum(items, d):
    """(bins as lists, counts) of the sum of sparse vectors, rows sorted."""
    acc = Counter()
    for bins, counts in items:
        for b, q in zip(np.asarray(bins).reshape(-1, d).tolist(), np.asarray(counts).tolist()):
            acc[tuple(b)] += int(q)
    rows = sorted((k, v) for k, v in acc.items() if v)
    return [list(k) for k, _ in rows], [v for _, v in rows]


def result_of(res):
    return res.bins.tolist(), res.counts.tolist()


def make_run(n, *, threshold=None, degree=0, d=2, B=50, M=None, ids=None):
    """Server and clients (dict by id) after key agreement, every message on
    the wire; index mode on a B**d grid."""
    ids = list(range(n)) if ids is None else list(ids)
    params = ScmaParams.create(d, B, M or 2 * len(ids) + 2)
    return scma_run(params, ids, threshold=threshold, degree=degree)


def give_data(clients, seed, d=2, B=50, nnz=2):
    """Each client gets ``nnz`` random bins of a small pool (they overlap),
    counts 1..3; returns {id: (bins, counts)}."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, B, size=(max(3, len(clients)), d))
    pool = np.unique(pool, axis=0)
    data = {}
    for i, c in clients.items():
        idx = rng.choice(len(pool), size=min(nnz, len(pool)), replace=False)
        data[i] = (pool[idx], rng.integers(1, 4, size=len(idx)))
        c.set_data(*data[i])
    return data


def inputs(server, clients, who, delta_nonzeros=0):
    """Step 3: the input request; the answers of ``who``, received."""
    req = wire(server.request_inputs(delta_nonzeros))
    msgs = {i: wire(clients[i].respond(wire(req))) for i in who}
    for m in msgs.values():
        server.receive(m)
    return msgs


def unmask_all(server, clients, who=None):
    """Step 4: the unmask request and the answers of ``who`` (default every
    survivor), received; the answers."""
    ur = wire(server.unmask_request())
    out = {}
    for i in ur.survivors if who is None else who:
        out[i] = wire(clients[i].unmask(wire(ur)))
        server.receive_unmask(out[i])
    return out


def kinds_revealed(answers):
    """{owner: Counter of kinds} over unmask answers: what a server holds."""
    got = {}
    for m in answers:
        assert len(set(m.owners)) == len(m.owners)       # one kind per owner per answer
        for o, k in zip(m.owners, m.kinds):
            got.setdefault(o, Counter())[k] += 1
    return got


def raw_private(key):
    return _keys.raw_private(key)


def server_leaves(obj):
    """Every bytes-like and ndarray leaf reachable from ``obj`` through
    ``vars()``, containers and private keys (as their raw bytes)."""
    out, seen, stack = [], set(), [obj]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, (bytes, bytearray, memoryview)):
            out.append(bytes(x))
        elif isinstance(x, np.ndarray):
            if x.dtype == object:
                stack.extend(x.ravel().tolist())
            else:
                out.append(x.tobytes())
        elif isinstance(x, X25519PrivateKey):
            out.append(raw_private(x))
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, (list, tuple, set, frozenset)):
            stack.extend(x)
        elif isinstance(x, (str, int, float, complex, type(None))):
            continue
        else:
            if hasattr(x, "__dict__"):
                stack.extend(vars(x).values())
            for name in getattr(type(x), "__slots__", ()):
                if hasattr(x, name):
                    stack.append(getattr(x, name))
    return out


def assert_absent(secrets, leaves, where):
    for name, s in secrets.items():
        assert len(s) >= 32
        hit = [leaf for leaf in leaves if s in leaf]
        assert not hit, f"{name} found in {where}"


# ---------------------------------------------------------------------------
# errors: the threshold at every step

def test_every_step_below_the_threshold_is_refused():
    # n = 5, t = 3: the server refuses to open a round of 2; a server that
    # skips its own check meets clients that refuse to share keys, to take
    # shares of fewer than t sharers and to unmask for fewer than t
    # survivors -- and a refused step reveals nothing and changes nothing
    # (the same client then completes a valid round).
    server, clients = make_run(5)
    assert server.threshold == 3
    data = give_data(clients, 1)
    run = server.run_id
    with pytest.raises(ProtocolError):
        server.start_round((0, 1))
    with pytest.raises(ProtocolError):
        clients[0].share_keys(RoundMessage(run, 1, (0, 1)))
    rm = wire(server.start_round())
    for i in range(5):
        server.receive_shares(wire(clients[i].share_keys(rm)))
    # the real bundle of client 0, cut down to 2 sharers
    real = server.bundle(0)
    keep = [k for k, o in enumerate(real.owners) if o == 1]
    cut = ShareBundle(run, rm.round, 0, (0, 1), (1,), tuple(real.round_keys[k] for k in keep),
                      tuple(real.ciphertexts[k] for k in keep))
    with pytest.raises(ProtocolError):
        clients[0].receive_shares(wire(cut))
    with pytest.raises(ProtocolError):
        clients[0].mask(rm.round)                  # nothing was derived
    for i in range(5):                             # the real bundles still work
        clients[i].receive_shares(wire(server.bundle(i)))
    # unmask below the threshold: refused, nothing revealed, state kept
    inputs(server, clients, range(5))
    with pytest.raises(ProtocolError):
        clients[0].unmask(UnmaskRequest(run, rm.round, (0, 1)))
    with pytest.raises(ProtocolError):             # a survivor set it is not in
        clients[0].unmask(UnmaskRequest(run, rm.round, (1, 2, 3)))
    answers = unmask_all(server, clients)
    assert set(answers) == set(range(5))
    res = server.finish_round()
    assert result_of(res) == plain_sum(data.values(), 2)


def test_server_refuses_to_close_a_step_below_the_threshold():
    # n = 5, t = 3: fewer than 3 sharers, or fewer than 3 inputs, end the
    # round with a ProtocolError at the server (the clients would refuse).
    server, clients = make_run(5)
    give_data(clients, 2)
    rm = wire(server.start_round())
    for i in (0, 1):
        server.receive_shares(wire(clients[i].share_keys(rm)))
    with pytest.raises(ProtocolError):
        server.bundle(0)
    with pytest.raises(ProtocolError):
        server.request_inputs()
    share(server, clients)
    inputs(server, clients, (0, 1))
    with pytest.raises(ProtocolError):
        server.unmask_request()


def test_subset_rounds_with_unchanged_data_are_refused_before_anything_decodes():
    # Rounds over {0, 1, 2}, then {0, 1}, then {0, 2}, data unchanged (n = 3,
    # t = 2): the second and third sums would differ from the first by one
    # client's vector.  Every client of those rounds refuses to unmask
    # (ProtocolError), so the server holds no share of the round and cannot
    # remove any self mask.  Controls: the full set again is accepted, and
    # a subset whose clients changed their data is accepted too.
    server, clients = make_run(3)
    data = give_data(clients, 3)
    share(server, clients)
    inputs(server, clients, range(3))
    unmask_all(server, clients)
    assert result_of(server.finish_round()) == plain_sum(data.values(), 2)
    for subset in ((0, 1), (0, 2)):
        share(server, clients, subset)
        inputs(server, clients, subset)
        ur = wire(server.unmask_request())
        assert ur.survivors == subset
        for i in subset:
            with pytest.raises(ProtocolError, match="same data"):
                clients[i].unmask(ur)
        assert server._open["st"]["shares"] == {}
        with pytest.raises(ProtocolError):
            server.finish_round()
    share(server, clients)                                  # the same set: accepted
    inputs(server, clients, range(3))
    unmask_all(server, clients)
    assert result_of(server.finish_round()) == plain_sum(data.values(), 2)
    for i in (0, 1):                                        # new data: accepted
        data[i] = (data[i][0], data[i][1] + 1)
        clients[i].set_data(*data[i])
    share(server, clients, (0, 1))
    inputs(server, clients, (0, 1))
    unmask_all(server, clients)
    assert result_of(server.finish_round()) == plain_sum([data[0], data[1]], 2)


def test_bug_difference_round_then_subset_full_round_isolates_a_client():
    # BUG (pyfkm/secagg/scma/_client.py, ScmaClient.unmask: the same-data digest
    # is recorded for full rounds only, ``digest = ... if full else None``;
    # pyfkm/secagg/_masking.py, MaskingClient.unmask then records nothing
    # for a difference round).  Round 1: full over {0, 1, 2}.  Clients
    # 0 and 1 change their data (an unlearning step) and round 2, a
    # difference round over {0, 1, 2}, gives the server x0' + x1' + x2.
    # Round 3: a full round over {0, 1} with the same data as round 2 -- the
    # clients' last *full* round had other data, so they accept, and the
    # server learns x0' + x1': round 2 minus round 3 is client 2's vector
    # alone.  The clients must refuse round 3: their data were summed over
    # {0, 1, 2} in round 2 (the difference round's aggregate holds each
    # client's current data, over the clients the server's state includes).
    server, clients = make_run(3)
    data = give_data(clients, 4)
    roles = dict(clients)
    first = RoundTrip(server, roles).share().inputs().finish()
    assert result_of(first) == plain_sum(data.values(), 2)
    for i in (0, 1):
        data[i] = (np.vstack([data[i][0], [[40 + i, 40 + i]]]), np.append(data[i][1], 1))
        clients[i].set_data(*data[i])
    second = RoundTrip(server, roles).share().inputs(2).finish()
    assert result_of(second) == plain_sum(data.values(), 2)
    refused = False
    try:
        trip = RoundTrip(server, roles, participants=(0, 1))
        third = trip.share().inputs().finish()
    except ProtocolError:
        refused = True
    if not refused:
        a = Counter({tuple(b): q for b, q in zip(second.bins.tolist(), second.counts.tolist())})
        a.subtract({tuple(b): q for b, q in zip(third.bins.tolist(), third.counts.tolist())})
        isolated = sorted((list(k), v) for k, v in a.items() if v)
        assert refused, (f"round 3 over {{0, 1}} was accepted: round 2 - round 3 = {isolated}, "
                         f"client 2's data = {data[2][0].tolist()}, {data[2][1].tolist()}")


# ---------------------------------------------------------------------------
# errors: the consistency rule

def _round_awaiting_unmask(n, threshold=None, seed=5):
    server, clients = make_run(n, threshold=threshold)
    data = give_data(clients, seed)
    rm = share(server, clients)
    secrets = {i: clients[i]._m.mask_keys(rm.round)[0] for i in clients}   # self seeds
    inputs(server, clients, range(n))
    return server, clients, data, rm, secrets


def test_consistency_rule_two_unmask_requests_never_give_both_kinds():
    # n = 5, t = 3 (a strict majority).  A server sends request A (everyone
    # survived) to some clients and request B (client v dropped) to the
    # others, for every split of the clients and every v.  Each client
    # answers one request per round and refuses any other; across all
    # answers the server never holds t shares of both kinds of one owner
    # (so it can never have both b_v and s_v).
    n, t = 5, 3
    for v in range(n):
        for split in itertools.product((0, 1), repeat=n):
            if split[v] == 1:          # v itself is named dropped: it gets no request
                continue
            server, clients, _, rm, _ = _round_awaiting_unmask(n)
            run = server.run_id
            everyone = tuple(range(n))
            without_v = tuple(i for i in everyone if i != v)
            req = {0: UnmaskRequest(run, rm.round, everyone),
                   1: UnmaskRequest(run, rm.round, without_v)}
            answers = []
            for i in everyone:
                answers.append(wire(clients[i].unmask(wire(req[split[i]]))))
                other = req[1 - split[i]]
                if i in other.survivors:
                    with pytest.raises(ProtocolError):
                        clients[i].unmask(wire(other))
            got = kinds_revealed(answers)
            for owner, kinds in got.items():
                assert min(kinds[B_SHARE], kinds[SK_SHARE]) < t, (v, split, owner, kinds)


def test_consistency_rule_in_a_client_answer():
    # One answer reveals, for each owner it holds shares of, exactly one
    # kind: b for the survivors named, s for the sharers named dropped; the
    # server rejects an answer whose kinds do not match its own request.
    server, clients, _, rm, _ = _round_awaiting_unmask(5)
    run = server.run_id
    ur = wire(server.unmask_request())
    assert ur.survivors == (0, 1, 2, 3, 4)
    other = UnmaskRequest(run, rm.round, (0, 1, 2, 3))     # 4 named dropped
    ans = wire(clients[0].unmask(other))
    assert dict(zip(ans.owners, ans.kinds)) == {0: 0, 1: 0, 2: 0, 3: 0, 4: 1}
    with pytest.raises(ProtocolError):
        server.receive_unmask(ans)                         # not what the server asked
    with pytest.raises(ProtocolError):
        clients[0].unmask(ur)                              # one answer per round


# ---------------------------------------------------------------------------
# errors: roster binding

def _substituted_roster(roster, victim_view_of, substitute):
    """The roster with the key of client ``victim_view_of`` replaced."""
    keys = list(roster.public_keys)
    keys[roster.client_ids.index(victim_view_of)] = substitute
    return RosterMessage(roster.run_id, roster.params, roster.client_ids, tuple(keys),
                         roster.threshold, roster.degree, roster.server_key)


@pytest.mark.parametrize("change", ["peer key", "server key", "threshold", "degree"])
def test_a_substituted_roster_fails_the_round_never_a_wrong_sum(change):
    # The server shows client 0 a roster that differs from everyone else's
    # (another client's key replaced by a fresh one, its own key, a lower
    # threshold, another degree).  Client 0's view of the run's digest then
    # differs: its key-share message fails authentication at the server
    # (ProtocolError), and its shares cannot be decrypted by its peers.  A
    # server that drops client 0 and goes on gets the others' exact sum;
    # nothing ever decodes to a wrong sum.
    n = 5
    params = ScmaParams.create(2, 50, 12)
    server = ScmaServer(params)
    clients = {i: ScmaClient(i) for i in range(n)}
    for c in clients.values():
        server.receive_key(wire(c.key_message(params.run_id)))
    roster = server.roster()
    if change == "peer key":
        bad = _substituted_roster(roster, 1, _keys.raw_public(X25519PrivateKey.generate()))
    elif change == "server key":
        bad = dataclasses.replace(roster,
                                  server_key=_keys.raw_public(X25519PrivateKey.generate()))
    elif change == "threshold":
        bad = dataclasses.replace(roster, threshold=2)
    else:
        bad = dataclasses.replace(roster, degree=2)
    clients[0].receive_roster(wire(bad))
    for i in range(1, n):
        clients[i].receive_roster(wire(roster))
    data = give_data(clients, 7)
    rm = wire(server.start_round())
    msgs = {i: wire(clients[i].share_keys(rm)) for i in range(n)}
    with pytest.raises(ProtocolError):
        server.receive_shares(msgs[0])
    if change == "peer key":
        # client 1 cannot open what client 0 encrypted to the substituted key
        k = msgs[0].holders.index(1)
        forged = ShareBundle(params.run_id, rm.round, 1, tuple(range(n)), (0,),
                             (msgs[0].round_key,), (msgs[0].ciphertexts[k],))
        with pytest.raises(ProtocolError, match="authentication"):
            clients[1].receive_shares(forged)
    for i in range(1, n):
        server.receive_shares(msgs[i])
    for i in range(1, n):
        clients[i].receive_shares(wire(server.bundle(i)))
    with pytest.raises(ProtocolError):
        server.bundle(0)                                # client 0 did not share
    inputs(server, clients, range(1, n))
    unmask_all(server, clients)
    res = server.finish_round()
    assert res.survivors == (1, 2, 3, 4)
    assert result_of(res) == plain_sum([data[i] for i in range(1, n)], 2)


# ---------------------------------------------------------------------------
# errors: the view of a round

def test_a_view_altered_for_one_client_makes_its_input_fail_authentication():
    # The masked input's tag covers the client's view of the round (the
    # sharers of its bundle, the input request).  n = 5, t = 3.  (1) The
    # server hides client 4 from client 0's bundle: client 0 masks without
    # its pair key with 4, and its input is refused (ProtocolError), never
    # summed with masks that do not cancel; the round completes over the
    # others with their exact sum.  (2) In a difference round, client 1 gets
    # a request naming another base round: its input is refused too.
    server, clients = make_run(5)
    data = give_data(clients, 17)
    run = server.run_id
    rm = wire(server.start_round())
    for i in range(5):
        server.receive_shares(wire(clients[i].share_keys(rm)))
    real = server.bundle(0)
    keep = [k for k, o in enumerate(real.owners) if o != 4]
    hidden = ShareBundle(run, rm.round, 0, (0, 1, 2, 3), tuple(real.owners[k] for k in keep),
                         tuple(real.round_keys[k] for k in keep),
                         tuple(real.ciphertexts[k] for k in keep))
    clients[0].receive_shares(wire(hidden))
    assert sorted(clients[0]._m.mask_keys(rm.round)[1]) == [1, 2, 3]
    for i in range(1, 5):
        clients[i].receive_shares(wire(server.bundle(i)))
    req = wire(server.request_inputs())
    with pytest.raises(ProtocolError, match=AUTH):
        server.receive(wire(clients[0].respond(req)))
    for i in range(1, 5):
        server.receive(wire(clients[i].respond(req)))
    unmask_all(server, clients)
    res = server.finish_round()
    assert res.survivors == (1, 2, 3, 4) and res.dropped == (0,)
    assert result_of(res) == plain_sum([data[i] for i in range(1, 5)], 2)
    # (2) two full rounds over everyone (new data: the survivors changed),
    # then a difference round with another base for client 1
    for _ in range(2):
        for i in range(5):
            data[i] = (data[i][0], data[i][1] + 1)
            clients[i].set_data(*data[i])
        share(server, clients)
        inputs(server, clients, range(5))
        unmask_all(server, clients)
        server.finish_round()
    rm = share(server, clients)
    req = wire(server.request_inputs(4))
    assert req.base_round == rm.round - 1
    other = InputRequest(run, rm.round, 4, rm.round - 2)
    with pytest.raises(ProtocolError, match=AUTH):
        server.receive(wire(clients[1].respond(other)))
    for i in (0, 2, 3, 4):
        server.receive(wire(clients[i].respond(req)))
    unmask_all(server, clients)
    res = server.finish_round()
    assert res.survivors == (0, 2, 3, 4)
    assert result_of(res) == plain_sum(data.values(), 2)   # nobody changed: same sum


# ---------------------------------------------------------------------------
# errors: replayed, re-addressed and altered messages

def _flip(data, offset):
    b = bytearray(data)
    b[offset] ^= 1
    return bytes(b)


def _set(data, offset, value):
    b = bytearray(data)
    b[offset:offset + len(value)] = value
    return bytes(b)


ROUND_AT, SENDER_AT = 24, 32          # header offsets (pyfkm.secagg._framing)


def _refused(parse, receive, data, match=None):
    """The bytes are refused: by the parser (MessageFormatError) or by the
    server (ProtocolError, its message matching ``match``); never taken."""
    try:
        msg = parse(data)
    except MessageFormatError:
        return True
    with pytest.raises(ProtocolError, match=match):
        receive(msg)
    return True


def test_altered_and_replayed_messages_are_refused_never_summed():
    # n = 4 (t = 3).  Round 1 completes; its messages are kept.  In round 2
    # every alteration of every client message kind -- round field changed,
    # the previous round's message replayed (as is, and with the round
    # rewritten), another sender id, one flipped bit in the body, one in
    # the tag -- is refused, and the round still decodes to the exact sum.
    server, clients = make_run(4)
    data = give_data(clients, 8)
    old = {}
    rm = wire(server.start_round())
    old["share"] = wire(clients[0].share_keys(rm))
    server.receive_shares(old["share"])
    for i in range(1, 4):
        server.receive_shares(wire(clients[i].share_keys(rm)))
    for i in range(4):
        clients[i].receive_shares(wire(server.bundle(i)))
    old["syn"] = inputs(server, clients, range(4))
    old["ans"] = unmask_all(server, clients)
    server.finish_round()
    # round 2: shares
    rm = wire(server.start_round())
    shares = {i: wire(clients[i].share_keys(rm)) for i in range(4)}
    r2 = struct.pack("<Q", rm.round)
    for i in range(4):
        raw = shares[i].to_bytes()
        body_at = 44 + 40                       # inside round_key / commitment
        other = (i + 1) % 4
        bad = [
            (_set(raw, ROUND_AT, struct.pack("<Q", rm.round + 1)), None),  # round changed
            (_set(raw, ROUND_AT, struct.pack("<Q", rm.round - 1)), None),
            (_set(raw, SENDER_AT, struct.pack("<I", other)), AUTH),        # another sender
            (_flip(raw, body_at), AUTH),                                   # key / commitment
            (_flip(raw, len(raw) - 20), AUTH),                             # a ciphertext
            (_flip(raw, len(raw) - 1), AUTH),                              # the tag
        ]
        if i:                         # client 0's message of round 1, rewritten
            bad.append((_set(old["share"].to_bytes(), ROUND_AT, r2), AUTH))
        for data_, match in bad:
            assert _refused(ShareMessage.from_bytes, server.receive_shares, data_, match)
    for i in range(4):
        server.receive_shares(shares[i])
        with pytest.raises(ProtocolError):                                 # replayed
            server.receive_shares(shares[i])
    # a bundle altered by the server: the client refuses it
    for i in range(4):
        bundle = server.bundle(i)
        raw = bundle.to_bytes()
        for data_ in (_flip(raw, len(raw) - 5), _flip(raw, len(raw) - 100)):
            try:
                alt = ShareBundle.from_bytes(data_)
            except MessageFormatError:
                continue
            with pytest.raises(ProtocolError):
                clients[i].receive_shares(alt)
        clients[i].receive_shares(wire(bundle))
    # inputs
    req = wire(server.request_inputs())
    syn = {i: wire(clients[i].respond(req)) for i in range(4)}
    for i in range(4):
        raw = syn[i].to_bytes()
        replay = old["syn"][i].to_bytes()
        bad = [
            (_set(raw, ROUND_AT, struct.pack("<Q", rm.round - 1)), None),
            (_set(raw, ROUND_AT, struct.pack("<Q", rm.round + 1)), None),
            (replay, None),                                                # last round's
            (_set(replay, ROUND_AT, r2), AUTH),                            # ... rewritten
            (_set(raw, SENDER_AT, struct.pack("<I", (i + 1) % 4)), AUTH),
            (_set(raw, SENDER_AT, struct.pack("<I", 9)), None),
            (_flip(raw, 48), AUTH),                                        # payload bit
            (_flip(raw, 48 + 7), AUTH),                                    # high byte
            (_flip(raw, len(raw) - 1), AUTH),                              # tag bit
        ]
        for data_, match in bad:
            assert _refused(SyndromeMessage.from_bytes, server.receive, data_, match)
            with pytest.raises(ProtocolError):
                server.receive_many([data_])
    for i in range(4):
        server.receive(syn[i])
    with pytest.raises(ProtocolError):
        server.receive(syn[0])                                             # replayed
    # unmask answers
    ur = wire(server.unmask_request())
    ans = {i: wire(clients[i].unmask(ur)) for i in range(4)}
    for i in range(4):
        raw = ans[i].to_bytes()
        replay = old["ans"][i].to_bytes()
        bad = [
            (_set(raw, ROUND_AT, struct.pack("<Q", rm.round + 1)), None),
            (replay, None),
            (_set(replay, ROUND_AT, r2), AUTH),
            (_set(raw, SENDER_AT, struct.pack("<I", (i + 1) % 4)), AUTH),
            (_flip(raw, 44 + 4 + 5 + 3), AUTH),                            # a share bit
            (_flip(raw, 44 + 4 + 4), AUTH),                                # a kind byte
            (_flip(raw, len(raw) - 1), AUTH),
        ]
        for data_, match in bad:
            assert _refused(UnmaskMessage.from_bytes, server.receive_unmask, data_, match)
    for i in range(4):
        server.receive_unmask(ans[i])
        with pytest.raises(ProtocolError):
            server.receive_unmask(ans[i])                                  # replayed
    assert result_of(server.finish_round()) == plain_sum(data.values(), 2)


def test_messages_of_another_run_are_refused():
    # Two runs with the same client ids and round numbers: a message of one
    # run is refused by the other run's server -- by its run id, and by its
    # tag when the run id is rewritten; the run then completes exactly.
    s1, c1 = make_run(3)
    s2, c2 = make_run(3)
    data = give_data(c1, 9)
    give_data(c2, 9)
    rm1, rm2 = wire(s1.start_round()), wire(s2.start_round())
    assert rm1.round == rm2.round == 1
    foreign = c2[0].share_keys(rm2).to_bytes()
    with pytest.raises(ProtocolError, match="another run"):
        s1.receive_shares(ShareMessage.from_bytes(foreign))
    with pytest.raises(ProtocolError, match=AUTH):
        s1.receive_shares(ShareMessage.from_bytes(_set(foreign, 8, s1.run_id)))
    for i in range(3):
        s1.receive_shares(wire(c1[i].share_keys(rm1)))
    for i in range(3):
        c1[i].receive_shares(wire(s1.bundle(i)))
    s2.receive_shares(ShareMessage.from_bytes(foreign))     # where it belongs
    for i in (1, 2):
        s2.receive_shares(wire(c2[i].share_keys(rm2)))
    for i in range(3):
        c2[i].receive_shares(wire(s2.bundle(i)))
    req2 = wire(s2.request_inputs())
    foreign = c2[1].respond(req2).to_bytes()
    s1.request_inputs()
    with pytest.raises(ProtocolError, match="another run"):
        s1.receive(SyndromeMessage.from_bytes(foreign))
    with pytest.raises(ProtocolError, match=AUTH):
        s1.receive(SyndromeMessage.from_bytes(_set(foreign, 8, s1.run_id)))
    with pytest.raises(ProtocolError):
        s1.receive_many([_set(foreign, 8, s1.run_id)])
    inputs_req = InputRequest(s1.run_id, rm1.round)
    for i in range(3):
        s1.receive(wire(c1[i].respond(inputs_req)))
    unmask_all(s1, c1)
    assert result_of(s1.finish_round()) == plain_sum(data.values(), 2)


# ---------------------------------------------------------------------------
# errors: forged counts

def test_forged_negative_count_raises_decode_error():
    # A client that sends count p - 1 ("-1") for a bin no one else holds:
    # every honest aggregate lies in [0, (p - 1) / 2] (each client's total
    # is at most (p - 1) // (2 n)), so the decoded p - 1 is refused with a
    # DecodeError and the server keeps its state.
    server, clients = make_run(3)
    data = give_data(clients, 10)
    p = server.params.modulus
    share(server, clients)
    inputs(server, clients, range(3))
    unmask_all(server, clients)
    good = server.finish_round()
    assert result_of(good) == plain_sum(data.values(), 2)
    forged = (np.array([[49, 49]]), np.array([p - 1], dtype=np.uint64))
    assert not any((b == [49, 49]).all() for dat in data.values() for b in dat[0])
    clients[1].set_data(np.array([[49, 49]]), np.array([1]))
    clients[1]._data = forged                          # bypasses set_data's checks
    clients[1]._encoded = None
    share(server, clients)
    inputs(server, clients, range(3))
    unmask_all(server, clients)
    with pytest.raises(DecodeError):
        server.finish_round()
    assert server.last_decoded[0] == good.report.round


def test_count_bound_is_exact():
    # p = 101, n = 2: a client may send a total of (p - 1) // 4 = 25, the
    # server accepts an aggregate of at most 2 * 25 = 50.  A client that
    # sends 26 (bypassing set_data) with an honest 25: 51 is refused; 25 + 25
    # is accepted.
    for forged, ok in ((25, True), (26, False)):
        params = ScmaParams.create(1, 10, 2, modulus=101)
        server = ScmaServer(params)
        clients = {i: ScmaClient(i) for i in range(2)}
        for c in clients.values():
            server.receive_key(c.key_message(params.run_id))
        roster = server.roster()
        for c in clients.values():
            c.receive_roster(roster)
        assert clients[0].count_budget == 25
        clients[0].set_data([[3]], [25])
        clients[1].set_data([[4]], [1])
        clients[1]._data = (np.array([[4]]), np.array([forged], dtype=np.uint64))
        share(server, clients)
        inputs(server, clients, range(2))
        unmask_all(server, clients)
        if ok:
            assert result_of(server.finish_round()) == ([[3], [4]], [25, 25])
        else:
            with pytest.raises(DecodeError):
                server.finish_round()


def test_issue_case_over_full_aggregate_raises_decode_error():
    # Issue 19: counts 1, 1 at bins 10 and 30 (nodes 11, 31) with M = 1 have
    # the power sums S = (2, 42) of count 2 at node 21 (bin 20): without a
    # check the server would decode a wrong aggregate.  (Needs the index
    # mode's check word of pyfkm.secagg.scma._codec.)
    assert (1 + 1, 11 + 31) == (2, 2 * 21)
    with pytest.raises(DecodeError):
        secure_sum_sparse([([[10]], [1]), ([[30]], [1])], 100, max_nonzeros=1)
    bins, counts, _ = secure_sum_sparse([([[10]], [1]), ([[10]], [1])], 100, max_nonzeros=1)
    assert bins.tolist() == [[10]] and counts.tolist() == [2]


# ---------------------------------------------------------------------------
# dropouts: exact survivors' sums

def _driver_clients(n, seed, d=2, B=40):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(1, 3))
        out.append((rng.integers(0, B, size=(k, d)), rng.integers(1, 4, size=k)))
    return out


def test_complete_graph_n7_t4_tolerates_three_dropouts_not_four():
    # Oracle: plain sum over the clients that did not drop.  Every dropout
    # set of size 0..3 drawn at random (and the first / last clients) gives
    # the survivors' exact sum; any 4 dropouts leave 3 < t survivors and
    # raise ProtocolError.
    rng = np.random.default_rng(11)
    items = _driver_clients(7, 11)
    cases = [(), (0,), (6,), (0, 6), (1, 2, 3), (4, 5, 6)]
    cases += [tuple(sorted(rng.choice(7, size=k, replace=False).tolist())) for k in (1, 2, 3)]
    for drop in cases:
        bins, counts, rep = secure_sum_sparse(items, 40, threshold=4, dropouts=drop,
                                              max_nonzeros=14)
        want = plain_sum([items[i] for i in range(7) if i not in drop], 2)
        assert (bins.tolist(), counts.tolist()) == want, drop
        assert rep.dropped == drop and rep.n_participants == 7 - len(drop)
    for drop in ((0, 1, 2, 3), (3, 4, 5, 6), (0, 2, 4, 6)):
        with pytest.raises(ProtocolError):
            secure_sum_sparse(items, 40, threshold=4, dropouts=drop, max_nonzeros=14)


def _ring_tolerable(graph, dropped, n_share):
    """(b) Every dropped client keeps n_share - ... surviving neighbours to
    rebuild its round key, every survivor enough to rebuild its self seed
    (it answers for itself)."""
    for v, nb in graph.items():
        alive = sum(1 for u in nb if u not in dropped)
        need = n_share if v in dropped else n_share - 1
        if alive < need:
            return False
    return True


def test_sparse_graph_n20_degree4_tolerates_dropouts_within_each_neighbourhood():
    # A ring of degree 4 over 20 clients (threshold 11): shares go to the 4
    # neighbours only, a secret needs 3 of its 5 holders.  Dropout sets that
    # leave every neighbourhood enough holders (computed from the published
    # graph) give the survivors' exact sum; a client that drops together
    # with two of its neighbours cannot be removed: ProtocolError; and 10
    # dropouts leave fewer than 11 survivors: ProtocolError.
    n, k = 20, 4
    server, clients = make_run(n, degree=k, M=60)
    data = give_data(clients, 12)
    graph = {i: server.neighbours(i) for i in range(n)}
    assert all(len(nb) == k and i not in nb for i, nb in graph.items())
    assert all(i in graph[j] for i in graph for j in graph[i])           # symmetric
    n_share = (k + 1) // 2 + 1
    assert n_share == 3
    rng = np.random.default_rng(12)
    drops = []
    for _ in range(2):
        dropped = set()
        for c in rng.permutation(n).tolist():
            if len(dropped) < 6 and _ring_tolerable(graph, dropped | {c}, n_share):
                dropped.add(c)
        assert len(dropped) >= 3
        drops.append(tuple(sorted(dropped)))
    drops.append(())
    roles = dict(clients)
    for drop in drops:
        for i in range(n):                   # new data every round (same survivors rule)
            data[i] = (data[i][0], data[i][1] + 1)
            clients[i].set_data(*data[i])
        trip = RoundTrip(server, roles, silent=drop).share()
        res = trip.inputs().finish()
        assert res.dropped == drop and not trip.failed
        assert result_of(res) == plain_sum([data[i] for i in range(n) if i not in drop], 2)
    v = 0
    a, b = graph[v][:2]
    for drop in ((v, a, b), tuple(range(10))):
        for i in range(n):
            data[i] = (data[i][0], data[i][1] + 1)
            clients[i].set_data(*data[i])
        assert not _ring_tolerable(graph, set(drop), n_share) or len(drop) == 10
        with pytest.raises(ProtocolError):
            RoundTrip(server, roles, silent=drop).share().inputs().finish()


def test_shares_go_to_the_neighbours_only():
    # In the ring of degree 4 a client's key-share message holds one
    # ciphertext per neighbour (not one per client), and its bundle the
    # shares of its neighbours only.
    n, k = 12, 4
    server, clients = make_run(n, degree=k)
    rm = wire(server.start_round())
    for i in range(n):
        m = wire(clients[i].share_keys(rm))
        assert m.holders == tuple(sorted(server.neighbours(i)))
        server.receive_shares(m)
    for i in range(n):
        bundle = server.bundle(i)
        assert bundle.owners == tuple(sorted(server.neighbours(i)))
        assert bundle.sharers == tuple(range(n))


def test_dropouts_at_the_unmask_step():
    # n = 7, t = 4.  Client 6 drops before its input; of the 6 survivors,
    # 2 never send their unmask answer: the 4 answers still rebuild every
    # self seed and client 6's round key, and the sum is over all 6
    # survivors (their inputs arrived).  With 3 silent at the unmask step
    # the server cannot finish (ProtocolError, its round kept open) until a
    # late answer arrives.
    for silent_unmask in ((0, 3), (1, 2, 5)):
        server, clients = make_run(7, threshold=4)
        data = give_data(clients, 13)
        share(server, clients)
        inputs(server, clients, range(6))
        answering = [i for i in range(6) if i not in silent_unmask]
        unmask_all(server, clients, answering)
        want = plain_sum([data[i] for i in range(6)], 2)
        if len(answering) >= 4:
            res = server.finish_round()
        else:
            with pytest.raises(ProtocolError):
                server.finish_round()
            late = silent_unmask[0]
            req = UnmaskRequest(server.run_id, server._open["st"]["round"],
                                tuple(range(6)))
            server.receive_unmask(wire(clients[late].unmask(req)))
            res = server.finish_round()
        assert res.survivors == tuple(range(6)) and res.dropped == (6,)
        assert result_of(res) == want


# ---------------------------------------------------------------------------
# a late client

def test_a_late_input_is_refused_and_stays_hidden_by_its_self_mask():
    # n = 5, t = 3.  Client 4 shares its keys but its input arrives after
    # the unmask request named it dropped.  The server refuses it (round
    # state).  The survivors reveal shares of client 4's round key only,
    # never of its self seed, so what the server can remove from the late
    # message (client 4's pair masks, from the rebuilt round key) leaves
    # encoding + PRG(b_4), and b_4 appears nowhere in the server.
    server, clients = make_run(5)
    data = give_data(clients, 14)
    rm = wire(server.start_round())
    for i in range(5):
        server.receive_shares(wire(clients[i].share_keys(rm)))
    sk4 = raw_private(clients[4]._m._round["sk"])
    for i in range(5):
        clients[i].receive_shares(wire(server.bundle(i)))
    b4, keys4 = clients[4]._m.mask_keys(rm.round)
    req = wire(server.request_inputs())
    for i in range(4):
        server.receive(wire(clients[i].respond(req)))
    ur = wire(server.unmask_request())
    assert ur.survivors == (0, 1, 2, 3)
    late = wire(clients[4].respond(req))
    with pytest.raises(ProtocolError):
        server.receive(late)
    with pytest.raises(ProtocolError):
        server.receive_many([late.to_bytes()])
    answers = [wire(clients[i].unmask(ur)) for i in ur.survivors]
    for m in answers:
        server.receive_unmask(m)
    got = kinds_revealed(answers)
    assert got[4] == Counter({SK_SHARE: 4})                # round key only
    assert all(got[i] == Counter({B_SHARE: 4}) for i in range(4))
    sk_shares = [(m.sender + 1, s) for m in answers for o, k, s in zip(m.owners, m.kinds,
                                                                           m.shares) if o == 4]
    rebuilt = _shamir.reconstruct([x for x, _ in sk_shares], [[s] for _, s in sk_shares], 3)[0]
    assert rebuilt == sk4                                   # what the protocol reveals
    # the secrets the server reconstructs for the round: the survivors'
    # self seeds and the pair keys of client 4 -- never b_4
    selfs, pair_keys, _, dropped = server._m.recover(server._open["st"])
    assert dropped == (4,) and selfs.shape == (4, 32)
    assert b4 not in [bytes(row) for row in selfs]
    assert sorted(bytes(k) for k in pair_keys) == sorted(keys4.values())
    assert_absent({"b_4": b4}, server_leaves(server), "the server")
    res = server.finish_round()
    assert res.dropped == (4,) and result_of(res) == plain_sum([data[i] for i in range(4)], 2)
    assert_absent({"b_4": b4}, server_leaves(server), "the server")
    # the late message minus its pair masks is encoding + PRG(b_4): masked
    p, W = server.params.modulus, server.params.message_words
    rest = np.asarray(late.payload, dtype=object)
    for v, k in keys4.items():
        s = np.asarray(_crypto.field_stream(k, rm.round, b"SCMA", W, p), dtype=object)
        rest = (rest - s) % p if 4 < v else (rest + s) % p
    enc = clients[4]._codec.encode(*clients[4]._data).astype(object)
    selfs = np.asarray(_crypto.field_stream(b4, rm.round, b"SCMA", W, p), dtype=object)
    assert ((rest - enc) % p).tolist() == selfs.tolist()
    assert any(selfs.tolist())


# ---------------------------------------------------------------------------
# fresh keys; nothing secret at the server

def _secrets_during_a_round(server, clients, drop=()):
    """Run one round over every client (``drop`` silent after sharing),
    walking the server after each step; returns (secrets by name, the
    server's leaves at each step)."""
    secrets, walks = {}, []
    rm = wire(server.start_round())
    for i, c in clients.items():
        server.receive_shares(wire(c.share_keys(rm)))
        secrets[f"round key of {i}"] = raw_private(c._m._round["sk"])
        secrets[f"self seed of {i}"] = c._m._round["b"]
    walks.append(server_leaves(server))
    for i, c in clients.items():
        c.receive_shares(wire(server.bundle(i)))
        for v, k in c._m.mask_keys(rm.round)[1].items():
            secrets[f"pair key {i}-{v}"] = k
    walks.append(server_leaves(server))
    inputs(server, clients, [i for i in clients if i not in drop])
    walks.append(server_leaves(server))
    answers = unmask_all(server, clients)
    walks.append(server_leaves(server))
    # the survivors' round keys (hence every pair key between survivors)
    # are never shared with the server; the dropped clients' self seeds
    # neither
    for owner, kinds in kinds_revealed(answers.values()).items():
        assert set(kinds) == ({SK_SHARE} if owner in drop else {B_SHARE}), (owner, kinds)
    res = server.finish_round()
    walks.append(server_leaves(server))
    return secrets, walks, res


def test_no_client_secret_is_held_by_the_server():
    # (c): the channel private keys (read before the roster drops them),
    # the channel keys of every pair, and every round key, self seed and
    # pair key of two rounds (one with a dropout) appear in no bytes or
    # array of the server's object graph, after any step.  The search is
    # live: the same walk over a client finds its own round secrets.
    n = 5
    params = ScmaParams.create(2, 50, 12)
    server = ScmaServer(params)
    clients = {i: ScmaClient(i) for i in range(n)}
    secrets = {}
    for i, c in clients.items():
        server.receive_key(wire(c.key_message(params.run_id)))
        secrets[f"channel key of {i}"] = raw_private(c._m._channel)
    chan = {i: c._m._channel for i, c in clients.items()}
    roster = server.roster()
    for c in clients.values():
        c.receive_roster(wire(roster))
    digest = clients[0]._m.digest
    pub = dict(zip(roster.client_ids, roster.public_keys))
    for a, b in itertools.combinations(range(n), 2):
        secrets[f"channel {a}-{b}"] = _keys.channel_key(
            _keys.exchange(chan[a], pub[b], "peer"), digest, a, b)
    assert_absent(secrets, server_leaves(server), "the server after the roster")
    data = give_data(clients, 15)
    for drop in ((), (3,)):
        if drop:
            for i in clients:                # new data: the survivors change
                data[i] = (data[i][0], data[i][1] + 1)
                clients[i].set_data(*data[i])
        round_secrets, walks, res = _secrets_during_a_round(server, clients, drop)
        assert result_of(res) == plain_sum([data[i] for i in clients if i not in drop], 2)
        secrets.update(round_secrets)
        for step, leaves in enumerate(walks):
            assert_absent(secrets, leaves, f"the server (round {res.report.round}, step {step})")
    # the search finds what is there: a client during its round
    rm = wire(server.start_round())
    for i, c in clients.items():
        server.receive_shares(wire(c.share_keys(rm)))
    leaves = server_leaves(clients[2])
    assert any(clients[2]._m._round["b"] in leaf for leaf in leaves)
    assert any(raw_private(clients[2]._m._round["sk"]) in leaf for leaf in leaves)
    assert any(pub[1] in leaf for leaf in server_leaves(server))      # public keys are there


def test_two_runs_share_no_key_run_id_or_mask():
    # Two in-process runs with the same parameters class and client ids
    # (setup_in_process draws every key from the OS): their run ids,
    # channel keys, round keys, self seeds and pair keys are all distinct,
    # and no mask word of one run appears in the other (values uniform on
    # F_p: a collision has probability ~W**2 / p).
    seen = {"run": [], "channel": [], "round key": [], "self": [], "pair": [], "mask": []}
    for _ in range(2):
        params = ScmaParams.create(2, 30, 5)
        server, roles = setup_in_process(params, 4)
        seen["run"].append(params.run_id)
        seen["channel"] += [c.public_key for c in roles]
        rm = wire(server.start_round())
        for c in roles:
            m = wire(c.share_keys(rm))
            seen["round key"].append(m.round_key)
            server.receive_shares(m)
        for c in roles:
            c.receive_shares(wire(server.bundle(c.client_id)))
            b, keys = c._m.mask_keys(rm.round)
            seen["self"].append(b)
            seen["pair"] += [k for v, k in keys.items() if c.client_id < v]
            seen["mask"] += [int(x) for x in c.mask(rm.round)]
    for name, values in seen.items():
        assert len(set(values)) == len(values), name
    assert len(seen["pair"]) == 2 * 6 and len(seen["channel"]) == 8


def test_mask_streams_are_never_reused():
    # A client refuses a second share_keys for the same or an earlier round
    # (its round counter only increases), and two rounds of one client use
    # different pair keys with every peer and different self seeds.
    server, clients = make_run(3)
    give_data(clients, 16)
    keys = []
    for _ in range(2):
        rm = share(server, clients)
        keys.append(clients[0]._m.mask_keys(rm.round))
        for again in (rm, RoundMessage(server.run_id, rm.round, (0, 1)),
                      RoundMessage(server.run_id, max(rm.round - 1, 1), (0, 1, 2))):
            with pytest.raises(ProtocolError, match="not after"):
                clients[0].share_keys(again)
        inputs(server, clients, range(3))
        unmask_all(server, clients)
        server.finish_round()
    (b1, k1), (b2, k2) = keys
    assert b1 != b2
    assert sorted(k1) == sorted(k2) == [1, 2]
    assert all(k1[v] != k2[v] for v in k1)
    assert set(k1.values()).isdisjoint(k2.values())
    # a forged input request cannot make a client answer twice in a round
    rm = share(server, clients)
    req = wire(server.request_inputs())
    clients[0].respond(req)
    with pytest.raises(ProtocolError):
        clients[0].respond(req)
    with pytest.raises(ProtocolError):
        clients[0].respond(InputRequest(server.run_id, rm.round, 1, rm.round - 1))


def test_a_client_joins_a_run_id_once():
    params = ScmaParams.create(2, 30, 5)
    c = ScmaClient(0)
    first = c.key_message(params.run_id)
    with pytest.raises(ProtocolError):
        c.key_message(params.run_id)
    other = ScmaParams.create(2, 30, 5)
    second = c.key_message(other.run_id)
    assert first.public_key != second.public_key
    assert isinstance(KeyMessage.from_bytes(second.to_bytes()), KeyMessage)


def test_a_difference_round_on_an_older_base_cannot_isolate_a_client():
    # second review: full round over everyone (data D), three clients change
    # to E, a full round over a subset without the victim decodes from the
    # others' shares, then a difference round over everyone naming round 1
    # as its base would make (round 3) - (round 2) the victim's vector.  The
    # changed clients now check their current data against the clients the
    # *named base* held (everyone), not the subset it was summed over: they
    # refuse, and too few shares remain to unmask.
    from pyfkm.secagg import ScmaParams
    from pyfkm.secagg.scma._driver import RoundTrip, setup_in_process
    from pyfkm.secagg._messages import InputRequest, UnmaskMessage, UnmaskRequest
    from pyfkm.exceptions import ProtocolError as PE

    P = ScmaParams.create(2, 10, 12)
    server, clients = setup_in_process(P, 5)              # t = 3, complete graph
    roles = dict(enumerate(clients))
    data = {i: ([[i, 1]], [i + 1]) for i in range(5)}
    data[4] = ([[7, 7], [8, 3]], [5, 2])                  # the victim's vector
    for i, c in roles.items():
        c.set_data(*data[i])
    RoundTrip(server, roles).share().inputs().finish()
    saved = server._state, server._finished, server._included
    for i in range(3):
        roles[i].set_data([[i, 1], [i, 5]], [i + 1, 1])
    RoundTrip(server, roles, participants=(0, 1, 2, 3)).share().inputs().finish()
    server._state, server._finished, server._included = saved     # the lie: base 1
    RoundTrip(server, roles).share()
    req = server.request_inputs(4)
    assert req.base_round == 1
    msg = InputRequest.from_bytes(req.to_bytes())
    server.receive_many([roles[i].respond(msg).to_bytes() for i in range(5)])
    ureq = UnmaskRequest.from_bytes(server.unmask_request().to_bytes())
    refused = []
    for i in range(5):
        try:
            server.receive_unmask(UnmaskMessage.from_bytes(roles[i].unmask(ureq).to_bytes()))
        except PE:
            refused.append(i)
    assert refused == [0, 1, 2]
    with pytest.raises(PE, match="shares"):
        server.finish_round()
