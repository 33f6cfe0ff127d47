"""Tests of the SCMA codec (pyfkm.secagg.scma._codec): over-full, corrupted and
colliding aggregates raise DecodeError, incremental decoding, the single-bin
and small-encode fast paths.  The oracles are described in
tests/_helpers/scma.py."""
import numpy as np
import pytest

from pyfkm.secagg import DecodeError, ProtocolError, SyndromeMessage, secure_sum_sparse
from _helpers.scma import (HashedOracle, P, P20, P31, assert_aggregate, assert_result,
                           distinct_bins, expected_layout, finish, make_params, make_run,
                           plain_sum, play_round, random_clients, share_round, wire)


# ---------------------------------------------------------------------------
# errors: over-full and corrupted aggregates

def _overfull_clients(rng, d, B, M, extra):
    """Three clients, each <= M bins, union = M + extra distinct bins."""
    union = distinct_bins(rng, M + extra, d, B)
    parts = np.array_split(np.arange(M + extra), 3)
    clients = [(union[ix], rng.integers(1, 4, size=len(ix))) for ix in parts]
    clients.append((union[:2], np.array([1, 1])))      # overlap, no new bin
    assert all(len(q) <= M for _, q in clients)
    return clients


@pytest.mark.parametrize("d, B, mode", [(3, 7, "index"), (10, 173, "hashed"), (3, 7, "hashed")])
@pytest.mark.parametrize("extra", [1, 2, 9])
def test_overfull_raises_decode_error(d, B, mode, extra):
    # Detection: with m > M distinct bins the 2M syndromes have linear
    # complexity > M, or BM's shortest recurrence is a random-looking
    # polynomial that must split into distinct roots that are valid nodes
    # (index: in [1, B**d] and the check word; hashed: the payload rows must
    # unpack to in-range bins whose hash equals the root).  A wrong answer
    # has probability < 1e-9 here.
    rng = np.random.default_rng(100 + extra)
    M = 6
    clients = _overfull_clients(rng, d, B, M, extra)
    with pytest.raises(DecodeError):
        secure_sum_sparse(clients, B, mode=mode, max_nonzeros=M)
    # through the roles too
    params = make_params(d, B, M, mode=mode)
    server, cl = make_run(params, range(len(clients)))
    for i, dat in enumerate(clients):
        cl[i].set_data(*dat)
    with pytest.raises(DecodeError):
        play_round(server, cl)
    # one bin fewer decodes (M exactly reached)
    union = plain_sum(clients, d)
    keep = {tuple(r) for r in union[0][:M].tolist()}
    trimmed = []
    for b, q in clients:
        sel = [k for k, r in enumerate(b.tolist()) if tuple(r) in keep]
        trimmed.append((b[sel], q[sel]))
    expected = plain_sum(trimmed, d)
    assert len(expected[1]) == M
    bins, counts, _ = secure_sum_sparse(trimmed, B, mode=mode, max_nonzeros=M)
    assert_aggregate(bins, counts, expected, d)


def _corrupt_bytes(msg, pos, rng):
    """msg with payload word ``pos`` replaced by another value < p (via the
    bytes; its tag is then wrong)."""
    data = bytearray(msg.to_bytes())
    payload = np.asarray(msg.payload, dtype=np.uint64)
    start = bytes(data).find(payload.astype("<u8").tobytes())
    assert start >= 0, "payload is not stored as little-endian uint64 words"
    p = int(msg.modulus)
    new = (int(payload[pos]) + int(rng.integers(1, p))) % p
    data[start + 8 * pos: start + 8 * pos + 8] = new.to_bytes(8, "little")
    out = SyndromeMessage.from_bytes(bytes(data))
    assert int(out.payload[pos]) == new
    assert sum(int(x) != int(y) for x, y in zip(out.payload, payload)) == 1
    return out


def _faulty_encoding(client, pos, rng):
    """Make ``client`` send its encoding with word ``pos`` replaced by
    another value < p (a faulty client: the message is masked and tagged
    as usual)."""
    p = client.params.modulus
    enc = np.array(client._codec.encode(*client._data), dtype=np.uint64)
    enc[pos] = (int(enc[pos]) + int(rng.integers(1, p))) % p
    client._encoded = enc


@pytest.mark.parametrize("d, B, mode", [(3, 7, "index"), (10, 173, "hashed")])
@pytest.mark.parametrize("path", ["full", "incremental"])
def test_corrupted_word_raises_decode_error(d, B, mode, path):
    # One word of one client's encoding replaced by another value < p, in
    # the first round (full decode) or in a second round with unchanged data
    # after a clean first round (finish_round(incremental=True) starts from
    # the old support).  Altered on the way, a message fails its tag
    # (ProtocolError); sent so by a faulty client (masked and tagged as
    # usual) it is summed and the decode must raise.  The aggregate has m <= 4 < M = 6 bins, so
    # the words S_i, i >= 2m, and T_{t,i}, i >= m, are redundant checks that
    # must be verified too.  Detection argument (module docs): the decoded
    # multiset must reproduce every received word with <= M valid nodes
    # (index: in [1, B**d], a fraction 343 / 4.6e18 of F_p, and the check
    # word), and in hashed mode each bin unpacked from the payload rows must
    # hash to its node (probability 1/p otherwise).  So a wrong answer or a
    # silent acceptance has probability ~1e-15 per trial.
    rng = np.random.default_rng(7 if mode == "index" else 8)
    M = 6
    params = make_params(d, B, M, mode=mode)
    W = params.message_words
    positions = [0, 1, M, 2 * M - 1, W - 1] + [int(x) for x in rng.integers(0, 2 * M, size=4)]
    if mode == "hashed":
        rows = params.n_payload_rows
        positions += [2 * M + t * M + i for t in range(rows) for i in (0, 1, M - 2, M - 1)]
        positions += [int(x) for x in rng.integers(2 * M, W, size=4)]
    for trial, pos in enumerate(positions):
        clients = random_clients(rng, 3, d, B, max_nnz=3, pool_size=4, empty_prob=0.0)
        assert len(plain_sum(clients, d)[1]) <= 4
        server, cl = make_run(params, [0, 1, 2])
        for i, dat in enumerate(clients):
            cl[i].set_data(*dat)
        if path == "incremental":
            assert_result(play_round(server, cl).result, clients, d)
        share_round(server, cl)
        req = wire(server.request_inputs())
        victim = int(rng.integers(0, 3))
        _faulty_encoding(cl[victim], pos, rng)
        msgs = [cl[i].respond(req) for i in (0, 1, 2)]
        with pytest.raises(ProtocolError):
            server.receive(_corrupt_bytes(msgs[(victim + 1) % 3], pos, rng))
        for m in msgs:
            server.receive(m)
        with pytest.raises(DecodeError):
            res = finish(server, cl, incremental=True)
            # reached only when no error was raised: say which word slipped through
            print(f"corrupted word {pos} (W = {W}) accepted; "
                  f"answer correct: {np.array_equal(res.counts, plain_sum(clients, d)[1])}")


# Hash collisions (hashed mode).  With p = 1000003 and B = 100000 two bins
# with the same hash are easy to find from the measured hash coefficients:
# b' = b + delta with a . delta = 0 mod p.  The contract: "a hash collision or
# any inconsistency raises DecodeError" -- never a wrong aggregate.

def _collision(oracle, B, *, even):
    """Two distinct bins (d = 2) with equal hashes; coordinates of b + b' even if ``even``."""
    p = oracle.p
    a1, a2 = oracle.a
    inv2 = pow(a2, -1, p)
    for d1 in range(2 if even else 1, B, 2 if even else 1):
        d2 = (-a1 * d1 * inv2) % p
        if d2 > p // 2:
            d2 -= p
        if 0 < abs(d2) < B and (not even or d2 % 2 == 0):
            b = np.array([0, max(0, -d2)], dtype=np.int64)
            b2 = b + np.array([d1, d2])
            assert oracle.hash(b) == oracle.hash(b2) != 0
            assert ((0 <= b2) & (b2 < B)).all()
            return b, b2
    raise AssertionError("no collision found")


@pytest.fixture(scope="module")
def collision_setup():
    params = make_params(2, 100_000, 4, modulus=P20)
    assert params.mode == "hashed"
    assert params.n_payload_rows == expected_layout(2, 100_000, 4, P20, "hashed")[2]
    return params, HashedOracle(params, seed=72)


def _run_of(params, n):
    """A fresh run of ``params`` (same hash seed) over ``n`` clients."""
    return make_run(params, range(n))


def test_hash_collision_in_one_aggregate_raises(collision_setup):
    # Two clients hold colliding bins with equal counts.  The node's T rows
    # then carry the count-weighted mean of the two bins' packed coordinates;
    # with b + b' even that mean is a valid bin, and because the hash is
    # affine it hashes to the same node -- so the checks "h(b) = node" and
    # "coordinates in range" alone cannot see this collision.
    params, oracle = collision_setup
    b, b2 = _collision(oracle, params.bins_per_dim, even=True)
    server, clients = _run_of(params, 3)
    data = [(b[None, :], np.array([1])), (b2[None, :], np.array([1])),
            (np.array([[5, 6]]), np.array([2]))]
    for i, dat in enumerate(data):
        clients[i].set_data(*dat)
    try:
        res = play_round(server, clients).result
    except DecodeError:
        return
    assert_result(res, data, 2)


def _collision_run(collision_setup):
    """Two clients after set_data: client 0 holds bin b (count 2) and [7, 7];
    client 1 holds [9, 9].  Returns b, a bin b2 with b's hash, the server,
    the clients and their data."""
    params, oracle = collision_setup
    b, b2 = _collision(oracle, params.bins_per_dim, even=False)
    server, clients = _run_of(params, 2)
    data = {0: (np.array([b, [7, 7]]), np.array([2, 1])), 1: (np.array([[9, 9]]), np.array([4]))}
    for i in (0, 1):
        clients[i].set_data(*data[i])
    return b, b2, server, clients, data


def test_incremental_decode_of_a_moved_bin_with_the_same_hash(collision_setup):
    # Round 1: client 0 holds b.  Round 2: it holds b' (same hash, same count)
    # instead.  S is unchanged, so only the payload rows T tell the two apart;
    # the incremental path must check them (or the answer must be right).
    b, b2, server, clients, data = _collision_run(collision_setup)
    assert_result(play_round(server, clients).result, data.values(), 2)
    data[0] = (np.array([b2, [7, 7]]), np.array([2, 1]))
    clients[0].set_data(*data[0])
    try:
        res = play_round(server, clients, incremental=True).result
    except DecodeError:
        return
    assert_result(res, data.values(), 2)


def test_difference_round_adding_a_bin_on_a_taken_node_raises(collision_setup):
    # Round 1: client 0 holds b.  Round 2 (a difference round of one bin):
    # client 1 adds b' (same hash as b).  The new aggregate would put two
    # bins on one node, which no decode can represent: DecodeError, and the
    # server keeps its state.  Then a change of b's own count (the in-place
    # path of a one-bin change) and its removal decode correctly.
    b, b2, server, clients, data = _collision_run(collision_setup)
    play_round(server, clients)
    state = server._state
    clients[1].set_data(np.array([[9, 9], b2]), np.array([4, 1]))
    with pytest.raises(DecodeError, match="two bins"):
        play_round(server, clients, delta_nonzeros=1)
    assert server._state is state
    for new0 in [(np.array([b, [7, 7]]), np.array([5, 1])), (np.array([[7, 7]]), np.array([1]))]:
        data = {0: new0, 1: (np.array([[9, 9]]), np.array([4]))}
        for i in (0, 1):
            clients[i].set_data(*data[i])
        res = play_round(server, clients).result      # a full round after the failed one
        assert_result(res, data.values(), 2)
        data[0] = (data[0][0], data[0][1] + np.eye(1, len(data[0][1]), dtype=np.int64)[0])
        clients[0].set_data(*data[0])
        res = play_round(server, clients, delta_nonzeros=1).result
        assert_result(res, data.values(), 2)


def test_incremental_decode_refuses_an_aggregate_over_capacity():
    # M bins decoded, then one more bin arrives: the difference (one bin)
    # decodes, but the new aggregate has M + 1 > M bins and must raise as the
    # full decode does (M + 1 bins do not decode from 2 M syndromes); the
    # server keeps its last good state.
    rng = np.random.default_rng(63)
    d, B, M = 4, 11, 5
    params = make_params(d, B, M, mode="hashed")
    server, clients = make_run(params, [0, 1])
    pool = distinct_bins(rng, M + 1, d, B)
    clients[0].set_data(pool[:3], np.array([1, 2, 3]))
    clients[1].set_data(pool[3:M], np.array([4, 5]))
    res = play_round(server, clients).result
    assert res.counts.size == M
    state = server._state
    clients[1].set_data(pool[3:], np.array([4, 5, 6]))
    with pytest.raises(DecodeError):
        play_round(server, clients, incremental=True)
    assert server._state is state
    # back to M bins: decodes from the last good state
    clients[1].set_data(pool[3:M], np.array([4, 4]))
    res = play_round(server, clients).result
    assert res.report.incremental is True
    assert_result(res, [(pool[:3], [1, 2, 3]), (pool[3:M], [4, 4])], d)


def test_undersized_difference_round_raises_instead_of_misdecoding():
    # Found by review: with the index layout's 2m power sums alone, two +1
    # changes announced as one (m = 1) decoded to the single node halfway
    # between them.  Difference rounds carry the hashed layout's payload and
    # check rows, so a change with more bins than announced raises (and the
    # server keeps its state) on every trial, in both run layouts.
    rng = np.random.default_rng(77)
    for mode, B in (("index", 8), ("hashed", 173)):
        d = 2 if mode == "index" else 10
        params = make_params(d, B, 8, mode=mode)
        server, clients = make_run(params, [0, 1, 2])
        pool = distinct_bins(rng, 40, d, B)
        data = {i: (pool[2 * i: 2 * i + 2], np.array([1, 1])) for i in range(3)}
        for i in range(3):
            clients[i].set_data(*data[i])
        play_round(server, clients)
        for trial in range(25):
            a, b = rng.choice(np.arange(6, 40), size=2, replace=False)
            clients[0].set_data(np.vstack([data[0][0], pool[[a]]]), [1, 1, 1])
            clients[1].set_data(np.vstack([data[1][0], pool[[b]]]), [1, 1, 1])
            state = server._state
            with pytest.raises(DecodeError):
                play_round(server, clients, delta_nonzeros=1)
            assert server._state is state
            for i in range(3):                       # back to the decoded data
                clients[i].set_data(*data[i])
            assert_result(play_round(server, clients).result, data.values(), d)


# ---------------------------------------------------------------------------
# the scalar decode of a single bin (Codec._solve_one)

def _solve_outcome(codec, msg, one_bin):
    try:
        nodes, q, bins = codec._solve(msg, one_bin=one_bin)
    except DecodeError as e:
        return ("error", str(e))
    for a in (nodes, q, bins):
        assert a.flags.c_contiguous
    return (nodes.dtype, nodes.tolist(), q.dtype, q.tolist(), bins.dtype, bins.tolist())


@pytest.mark.parametrize("d, B, M, p", [(10, 173, 1, P), (10, 173, 6, P), (3, 2000, 2, P31),
                                        (2, 100_000, 1, P20), (1, 5000, 3, P20)])
def test_single_bin_decode_equals_the_general_decode(d, B, M, p):
    # Oracles: the input itself (decode(encode(b, q)) = (b, q)) and the
    # general decode (roots + Vandermonde solves + vector checks), which the
    # scalar path of one bin must match result for result and error for
    # error: on valid one-bin messages (count 1, random, p - 1 as in a
    # removal), with one word replaced by another value (every position),
    # and on random messages of linear complexity 1 (S_1 = x S_0 with
    # random payload words).
    from pyfkm.secagg.scma._codec import Codec
    rng = np.random.default_rng(d * 1000 + M)
    params = make_params(d, B, M, modulus=p, mode="hashed")
    assert params.mode == "hashed"
    codec = Codec(params)
    W = params.message_words
    n_ok = n_err = 0
    for trial in range(12):
        b = rng.integers(0, B, size=(1, d))
        q = [1, p - 1, int(rng.integers(1, p))][trial % 3]
        msg = codec.encode(b, np.array([q], dtype=np.uint64))
        fast = _solve_outcome(codec, msg, True)
        assert fast == _solve_outcome(codec, msg, False)
        assert fast[3] == [q] and fast[5] == b.tolist()
        n_ok += 1
        for pos in range(W):
            bad = msg.copy()
            bad[pos] = (int(bad[pos]) + int(rng.integers(1, p))) % p
            fast = _solve_outcome(codec, bad, True)
            assert fast == _solve_outcome(codec, bad, False), (trial, pos)
            n_err += fast[0] == "error"
        # linear complexity 1 with junk payload rows
        x, s0 = int(rng.integers(1, p)), int(rng.integers(1, p))
        junk = rng.integers(0, p, size=W, dtype=np.uint64)
        junk[:2 * M] = [s0 * pow(x, i, p) % p for i in range(2 * M)]
        assert _solve_outcome(codec, junk, True) == _solve_outcome(codec, junk, False)
    # corruptions of a payload word are always caught (the S words may turn
    # the message into another valid one only by moving the node)
    assert n_ok == 12 and n_err >= 12 * (W - 2 * M)


@pytest.mark.parametrize("d, B, M, p", [(10, 173, 1, P), (10, 173, 3, P), (3, 2000, 2, P31),
                                        (2, 100_000, 1, P20), (1, P20 - 1, 2, P20),
                                        (62, 2, 1, P)])
def test_small_encode_equals_the_kernel_encode(d, B, M, p):
    # Oracle: the kernel encode (power sums of the nodes, the HashedOracle
    # tests pin its layout), word for word, for 1-3 bins with counts 1,
    # random and p - 1; a bin hashing to 0 raises the same error both ways.
    from pyfkm.secagg.scma._codec import _SMALL_ENCODE, Codec
    rng = np.random.default_rng(d + 10 * M)
    params = make_params(d, B, M, modulus=p, mode="hashed")
    codec = Codec(params)
    n_small = 0
    for trial in range(20):
        k = 1 + trial % 3
        bins = np.unique(rng.integers(0, B, size=(k, d)), axis=0)
        counts = rng.integers(1, p, size=bins.shape[0], dtype=np.uint64)
        counts[0] = [1, p - 1, counts[0]][trial % 3]
        want = codec.encode(bins, counts, small=False)
        got = codec.encode(bins, counts)
        assert got.dtype == np.uint64 and got.tolist() == want.tolist()
        n_small += bins.shape[0] * params.message_words <= _SMALL_ENCODE
    assert n_small >= 10
    # a bin on node 0: a0 + a . b = 0 -- take a0 = -a . b for a chosen b
    b = rng.integers(0, B, size=(1, d))
    codec.a0 = (-int(np.dot(codec.a.astype(object), b[0].astype(object)))) % p
    codec._hash_ints = (codec.a0,) + codec._hash_ints[1:]
    errors = []
    for small in (True, False):
        with pytest.raises(DecodeError, match="hashes to 0") as e:
            codec.encode(b, np.array([1], dtype=np.uint64), small=small)
        errors.append(str(e.value))
    assert errors[0] == errors[1]
