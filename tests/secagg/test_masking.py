"""Tests of the masking protocol (pyfkm.secagg._masking, ._keys) as SCMA runs
it: exception classes, masks cancel, pairwise keys, fresh streams per round
and run, masked messages uniform (chi-square).  The oracles are described in
tests/_helpers/scma.py."""
import itertools

import numpy as np
import pytest
from scipy import stats

import pyfkm.exceptions
import pyfkm.secagg
import pyfkm.secagg.scma._params
from pyfkm.exceptions import InvalidInputError
from pyfkm.secagg import (CapacityError, DecodeError, MessageFormatError, ProtocolError,
                          ScmaClient, ScmaParams, ScmaServer)
from pyfkm.secagg.scma import _crypto
from pyfkm.secagg.scma._params import delta_params
from _helpers.scma import (HashedOracle, P, P31, as_ints, assert_result, distinct_bins,
                           expected_layout, finish, index_encoding, make_params, make_run,
                           play_round, random_clients, share_round, wire)


def expected_encoding(params, bins, counts, oracle=None):
    if params.mode == "index":
        return index_encoding(bins, counts, params)
    return oracle.encoding(bins, counts)


def expected_mask(client, round_, n_words):
    """The client's mask of its open round from the protocol's definition:
    self stream + sum over neighbours v of (+ if id < v else -) PRG(k_uv)."""
    p = client.params.modulus
    b, keys = client._m.mask_keys(round_)
    acc = [int(x) for x in _crypto.field_stream(b, round_, b"SCMA", n_words, p)]
    for v, k in keys.items():
        s = as_ints(_crypto.field_stream(k, round_, b"SCMA", n_words, p))
        sign = 1 if client.client_id < v else -1
        acc = [(a + sign * x) % p for a, x in zip(acc, s)]
    return acc


# ---------------------------------------------------------------------------
# errors: exception classes, parameters, client inputs

def test_exception_hierarchy():
    assert pyfkm.exceptions.ProtocolError is ProtocolError
    assert pyfkm.exceptions.MessageFormatError is MessageFormatError
    assert issubclass(ProtocolError, pyfkm.exceptions.PyfkmError)
    assert issubclass(ProtocolError, ValueError)
    assert issubclass(MessageFormatError, ProtocolError)
    assert DecodeError is pyfkm.exceptions.DecodeError
    assert CapacityError is pyfkm.exceptions.CapacityError
    # the contract lists all five as re-exported by pyfkm.secagg
    assert getattr(pyfkm.secagg, "InvalidInputError", None) is InvalidInputError


@pytest.mark.parametrize("d, B, p, mode", [(3, 7, P, "auto"), (10, 173, P, "auto"),
                                           (3, 2000, P31, "auto"), (2, 5, 101, "auto"),
                                           (3, 7, P, "hashed")])
def test_roles_masks_cancel_and_payloads_sum_to_encodings(d, B, p, mode):
    """Explicit roles, non-contiguous client ids, messages on the wire: each
    payload is the client's encoding plus its mask (oracle (d)); the pair
    streams cancel in the sum, so the payloads sum to the encodings plus the
    survivors' self streams."""
    rng = np.random.default_rng(31)
    M = 8
    params = make_params(d, B, M, modulus=p, mode=mode)
    oracle = HashedOracle(params, seed=32) if params.mode == "hashed" else None
    ids = [7, 2, 30, 11, 5]
    server, clients = make_run(params, ids)           # threshold 3
    W = params.message_words
    for it in range(3):
        # new data every round (a client refuses to have the same data summed
        # over another set of survivors); counts within (p - 1) // 10
        data = dict(zip(ids, random_clients(rng, len(ids), d, B, max_nnz=4, pool_size=8,
                                            max_count=2, empty_prob=0.0)))
        for i in ids:
            clients[i].set_data(*data[i])
        subset = None if it != 1 else (30, 2, 5)
        rm = share_round(server, clients, subset)
        part = list(rm.participants)
        assert part == (sorted(ids) if subset is None else sorted(subset))
        keys = {i: clients[i]._m.mask_keys(rm.round) for i in part}
        masks = {i: as_ints(clients[i].mask(rm.round)) for i in part}
        selfs = {i: as_ints(_crypto.field_stream(keys[i][0], rm.round, b"SCMA", W, p))
                 for i in part}
        for i in part:
            assert sorted(keys[i][1]) == [v for v in part if v != i]
            for v, k in keys[i][1].items():
                assert keys[v][1][i] == k            # both ends derive the same pair key
            assert masks[i] == expected_mask(clients[i], rm.round, W)
            assert len(masks[i]) == W and all(0 <= x < p for x in masks[i])
        n_pairs = len(part) * (len(part) - 1) // 2
        assert len({k for i in part for k in keys[i][1].values()}) == n_pairs
        assert len({keys[i][0] for i in part}) == len(part)
        req = wire(server.request_inputs())
        msgs = [wire(clients[i].respond(req)) for i in part]
        rng.shuffle(msgs)
        for m in msgs:
            server.receive(m)
        res = finish(server, clients)
        # the aggregate over the round's participants only
        assert_result(res, [data[i] for i in part], d)
        assert res.report.n_participants == len(part)
        total_masked = [0] * W
        total_pairs = [0] * W
        total_plain = [0] * W
        for m in msgs:
            assert m.run_id == params.run_id and m.round == rm.round
            assert m.modulus == p
            payload = as_ints(m.payload)
            assert len(payload) == W and all(0 <= x < p for x in payload)
            enc = expected_encoding(params, *data[m.sender], oracle=oracle)
            # the message is the client's encoding plus its mask
            assert [(e + k) % p for e, k in zip(enc, masks[m.sender])] == payload
            for k in range(W):
                total_masked[k] += payload[k] - selfs[m.sender][k]
                total_pairs[k] += masks[m.sender][k] - selfs[m.sender][k]
                total_plain[k] += enc[k]
        assert all(x % p == 0 for x in total_pairs)      # pair masks cancel
        assert [x % p for x in total_masked] == [x % p for x in total_plain]
        assert sorted(m.sender for m in msgs) == part


# ---------------------------------------------------------------------------
# key agreement and mask streams

def test_pair_keys_agree_within_pairs_and_differ_across_pairs_rounds_and_runs():
    # Oracle: the pair keys of the protocol read from the clients
    # (client._m.mask_keys): both ends of a pair derive the same key; keys
    # of different pairs, rounds and runs (even with the same run id
    # reused by new clients) never repeat, nor do self seeds; and the
    # masks of a client in two runs share no word (a collision of values
    # uniform on F_p, probability ~W**2 / p).
    pair_keys, self_seeds, masks = [], [], []
    for rid in (b"\x01" * 16, b"\x01" * 16, b"\x02" * 16):
        params = ScmaParams.create(3, 7, 5, run_id=rid)
        server, clients = make_run(params, [0, 1, 2, 3])
        for i in range(4):
            clients[i].set_data(np.array([[i, 0, 0]]), np.array([1]))
        for _ in range(2):
            rm = share_round(server, clients)
            keys = {i: clients[i]._m.mask_keys(rm.round) for i in range(4)}
            for a, b in itertools.permutations(range(4), 2):
                assert keys[a][1][b] == keys[b][1][a]
                assert isinstance(keys[a][1][b], bytes) and len(keys[a][1][b]) == 32
            pair_keys += [keys[a][1][b] for a, b in itertools.combinations(range(4), 2)]
            self_seeds += [keys[a][0] for a in range(4)]
            masks.append(as_ints(clients[0].mask(rm.round)))
            req = wire(server.request_inputs())
            for i in range(4):
                server.receive(wire(clients[i].respond(req)))
            finish(server, clients)
    assert len(set(pair_keys)) == len(pair_keys) == 3 * 2 * 6
    assert len(set(self_seeds)) == len(self_seeds) == 3 * 2 * 4
    assert set(pair_keys).isdisjoint(self_seeds)
    for m1, m2 in itertools.combinations(masks, 2):
        assert set(m1).isdisjoint(m2)


def test_rounds_never_share_mask_streams():
    params = make_params(10, 173, 6)        # hashed: 2M + 2M words
    server, clients = make_run(params, [0, 1, 2])
    p = params.modulus
    # the masks of client 0 in 20 rounds (fresh self seed and pair keys each
    # round): any reuse or overlap of keystreams between rounds would show
    # up as a shared value, up to sign (probability ~ (R W)^2 / p ~ 1e-13
    # otherwise)
    seen = {}
    for r in range(20):
        rm = share_round(server, clients, (0, 1))
        m = as_ints(clients[0].mask(rm.round))
        assert len(set(m)) == len(m)
        for k, x in enumerate(m):
            for y in (x, (-x) % p):
                assert y not in seen, (r, k, seen.get(y))
            seen[x] = (r, k)
    # respond() uses the round's mask once; a round is shared once
    clients[0].set_data(np.array([[1] * 10]), np.array([1]))
    clients[1].set_data(np.array([[2] * 10]), np.array([1]))
    payloads = []
    for _ in range(2):
        rm = share_round(server, clients, (0, 1))
        req = wire(server.request_inputs())
        payloads.append(as_ints(clients[0].respond(req).payload))
        with pytest.raises(ProtocolError):
            clients[0].respond(req)
        with pytest.raises(ProtocolError):
            clients[0].share_keys(rm)
    assert all(x != y for x, y in zip(*payloads))


# ---------------------------------------------------------------------------
# statistics: masked messages are uniform and independent of the input

ALPHA = 1e-3
P_SMALL = 13
ROUNDS = 1500          # per input


def _chi2_power(n_cells, n_obs, w, alpha):
    crit = stats.chi2.ppf(1 - alpha, n_cells - 1)
    return stats.ncx2.sf(crit, n_cells - 1, n_obs * w * w)


@pytest.mark.slow
@pytest.mark.statistical
def test_masked_message_is_uniform_and_independent_of_input():
    """Client 0's masked message over F_13, for input X and for input Y.

    Goodness of fit: pooled over the W words (W = 2M + check words = 12 or
    13 with M = 6), N = W * 1500 values, 13 cells, chi-square at ALPHA =
    1e-3.  Power >= 0.99 against every alternative of effect size w >= 0.055
    (noncentrality N w^2, scipy.stats.ncx2; asserted below).  For scale: a
    mask missing on one of the words gives w ~ 0.29 pooled, masks avoiding
    one value of F_13 w = 0.29.  Per word (1500 values): Bonferroni
    ALPHA / W, power 0.99 for w >= 0.22.  Independence of the input: the
    same procedure on the 2 x 13 contingency table of the pooled values for
    X vs Y (and per word).  Data are fixed, keys come from the OS, so a
    correct implementation fails with probability <= ~4 ALPHA per run.
    Negative controls: the same procedures reject the unmasked encodings and
    a sample that avoids one value.
    """
    params = make_params(2, 3, 6, modulus=P_SMALL)   # index: 9 bins
    WORDS = params.message_words
    assert params.mode == "index" and WORDS == expected_layout(2, 3, 6, P_SMALL, "index")[0]
    assert _chi2_power(P_SMALL, WORDS * ROUNDS, 0.055, ALPHA) >= 0.99
    assert _chi2_power(P_SMALL, ROUNDS, 0.22, ALPHA / WORDS) >= 0.98
    server, clients = make_run(params, [0, 1])
    X = (np.array([[0, 0]]), np.array([1]))
    # total counts <= (p - 1) // (2 * 2 clients) = 3
    Y = (np.array([[1, 2], [2, 2], [0, 1]]), np.array([1, 1, 1]))
    samples = {}
    for name, (bins, counts) in (("X", X), ("Y", Y)):
        clients[0].set_data(bins, counts)
        rows = []
        for _ in range(ROUNDS):
            share_round(server, clients)
            req = server.request_inputs()
            rows.append(as_ints(clients[0].respond(req).payload))
        samples[name] = np.array(rows, dtype=np.int64)
    enc = {name: index_encoding(*dat, params) for name, dat in (("X", X), ("Y", Y))}
    assert enc["X"] != enc["Y"]

    def gof_rejects(values, alpha):
        f = np.bincount(np.asarray(values).ravel(), minlength=P_SMALL)
        return stats.chisquare(f).pvalue < alpha

    def two_sample_rejects(a, b, alpha):
        fa = np.bincount(np.asarray(a).ravel(), minlength=P_SMALL)
        fb = np.bincount(np.asarray(b).ravel(), minlength=P_SMALL)
        keep = (fa + fb) > 0
        table = np.array([fa[keep], fb[keep]])
        if table.shape[1] < 2:
            return False
        return stats.chi2_contingency(table, correction=False).pvalue < alpha

    for name in ("X", "Y"):
        s = samples[name]
        assert s.min() >= 0 and s.max() < P_SMALL
        assert not gof_rejects(s, ALPHA), name
        for k in range(WORDS):
            assert not gof_rejects(s[:, k], ALPHA / WORDS), (name, k)
    assert not two_sample_rejects(samples["X"], samples["Y"], ALPHA)
    for k in range(WORDS):
        assert not two_sample_rejects(samples["X"][:, k], samples["Y"][:, k], ALPHA / WORDS), k

    # negative controls: the unmasked encodings, and values avoiding 12
    plain_x = np.tile(enc["X"], (ROUNDS, 1))
    plain_y = np.tile(enc["Y"], (ROUNDS, 1))
    assert gof_rejects(plain_x, ALPHA)
    assert two_sample_rejects(plain_x, plain_y, ALPHA)
    assert two_sample_rejects(plain_x[:, 1], plain_y[:, 1], ALPHA / WORDS)
    skewed = np.random.default_rng(0).integers(0, P_SMALL - 1, size=WORDS * ROUNDS)
    assert gof_rejects(skewed, ALPHA)
    assert two_sample_rejects(samples["X"], skewed, ALPHA)


def test_difference_round_masks_are_the_rounds_pairwise_streams():
    # The mask of a difference round of W' words is the first W' words of the
    # round's usual mask (same streams, same round nonce): so pair masks
    # cancel and are never reused across rounds, as for full rounds; and
    # respond() sends encoding(change) + that mask (oracle: HashedOracle of
    # the difference round's parameters).
    params = make_params(10, 173, 12)
    server, clients = make_run(params, [0, 1, 2])
    pool = distinct_bins(np.random.default_rng(73), 6, 10, 173)
    for i in range(3):
        clients[i].set_data(pool[2 * i: 2 * i + 2], [1, 1])
    play_round(server, clients)
    clients[1].set_data(pool[2:3], [1])
    rm = share_round(server, clients)
    req = wire(server.request_inputs(delta_nonzeros=4))
    dp = delta_params(params, 4)
    W = dp.message_words
    p = params.modulus
    change = expected_encoding(dp, pool[3:4], [p - 1], HashedOracle(dp, 74))
    total = [0] * W
    selfs = [0] * W
    for i in rm.participants:
        full_mask = as_ints(clients[i].mask(rm.round, params.message_words))
        assert as_ints(clients[i].mask(rm.round, W)) == full_mask[:W]
        b = clients[i]._m.mask_keys(rm.round)[0]
        selfs = [(s + x) % p for s, x in zip(selfs, as_ints(
            _crypto.field_stream(b, rm.round, b"SCMA", W, p)))]
        msg = clients[i].respond(req)
        enc = change if i == 1 else [0] * W      # change: bin pool[3] count -1
        assert as_ints(msg.payload) == [(m + e) % p for m, e in zip(full_mask[:W], enc)]
        total = [(t + x) % p for t, x in zip(total, as_ints(msg.payload))]
        server.receive(msg)
    assert [(t - s) % p for t, s in zip(total, selfs)] == change
    res = finish(server, clients)
    assert res.counts.tolist() == [1] * 5


def test_a_client_in_a_new_run_gets_fresh_keys_and_no_old_state():
    # Found by review (old design): cached pair keys survived a new roster.
    # Now a client gets a fresh channel key per run, refuses a run id it
    # joined, has no data from the old run, and its pair keys with a new
    # peer agree with the peer's.
    p1 = ScmaParams.create(2, 8, 6)
    p2 = ScmaParams.create(2, 8, 6)
    s1, c1 = make_run(p1, [0, 1])
    for i in range(2):
        c1[i].set_data([[i, i]], [1])
    play_round(s1, c1)
    old = c1[0]
    old_key = old.public_key
    s2 = ScmaServer(p2)
    fresh = ScmaClient(1)
    with pytest.raises(ProtocolError):
        old.key_message(p1.run_id)                   # the old run id again
    for c in (old, fresh):
        s2.receive_key(wire(c.key_message(p2.run_id)))
    assert old.public_key != old_key
    roster = s2.roster()
    for c in (old, fresh):
        c.receive_roster(wire(roster))
    clients = {0: old, 1: fresh}
    rm = share_round(s2, clients)
    assert old._m.mask_keys(rm.round)[1][1] == fresh._m.mask_keys(rm.round)[1][0]
    with pytest.raises(ProtocolError):
        old.respond(wire(s2.request_inputs()))      # data is set again per run
    old.set_data([[2, 3]], [2])
    fresh.set_data([[4, 5]], [1])
    res = play_round(s2, clients).result
    assert_result(res, [([[2, 3]], [2]), ([[4, 5]], [1])], 2)


def test_found_by_review_masks_messages_and_roster_replay():
    # 1. A message built on a precomputed mask shares no memory with the
    #    mask the client computed (nor does the client keep it).
    d, B, M = 3, 7, 10
    params = make_params(d, B, M, mode="hashed")
    pool = distinct_bins(np.random.default_rng(83), 6, d, B)
    server, clients = make_run(params, [0, 1])
    for i in range(2):
        clients[i].set_data(pool[3 * i: 3 * i + 3], [2, 2, 2])
    play_round(server, clients)
    share_round(server, clients)
    for i in range(2):
        clients[i].precompute_mask(delta_nonzeros=3)
    clients[0].set_data(pool[0:3], [2, 2, 1])
    req = server.request_inputs(delta_nonzeros=1)
    for i in range(2):
        cached = clients[i]._mask_cache[1]
        msg = clients[i].respond(req)
        assert clients[i]._mask_cache is None
        root = msg.payload           # the memory reachable from the message
        while isinstance(root.base, np.ndarray):
            root = root.base
        assert not np.shares_memory(root, cached)
        assert not msg.payload.flags.writeable
        server.receive(msg)
    finish(server, clients)
    # 2. receive_many with no round open gives receive's errors; an empty
    #    batch changes nothing
    server.receive_many([])
    with pytest.raises(MessageFormatError):
        server.receive_many([b"junk"])
    share_round(server, clients)
    good = clients[1].respond(wire(server.request_inputs())).to_bytes()
    server.start_round()                             # the round is abandoned
    with pytest.raises(ProtocolError, match="no round"):
        server.receive_many([good])
    # 3. the same run's roster again would start the rounds over with the
    #    same channel keys: refused, nothing changes
    last = clients[0]._m._last
    with pytest.raises(ProtocolError):
        clients[0].receive_roster(wire(server.roster()))
    assert clients[0]._m._last == last
