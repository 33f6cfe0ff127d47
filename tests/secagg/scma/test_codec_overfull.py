"""Over-full aggregates in the SCMA index mode, and the parameters' OS
randomness and message cap (issue 19).

Where the expected values come from:

(a) plain sums of sparse vectors with ``collections.Counter`` (``plain_sum``);
(b) the index-mode contract in Python integers: node ``x = 1 + row-major
    index of b``, ``S_i = sum_j q_j x_j**i`` (``i < 2M``), one check word
    ``R = sum_j q_j / (t - x_j)`` at the codec's public point ``t``, which
    must lie in ``{0} u {B**d + 1, ..., p - 1}``;
(c) *aliases* built by hand: for ``2M + s`` distinct nodes the vectors
    ``w_j = P(x_j) / prod_{i != j} (x_j - x_i)`` with ``deg P < s`` have
    vanishing power sums ``S_0 .. S_{2M-1}`` (partial fractions of
    ``P(z) / prod (z - x_j)``, checked in the test), so ``u = w`` on
    ``M + s`` nodes (over-full) and ``v = -w`` on the other ``M`` have the
    same ``2M`` syndromes: without a check the server would decode ``u``'s
    message to ``v``.  Every alias test asserts that the alias is real
    before asserting that the decode raises, so each can fail.

Error tests first.
"""
import dataclasses
import itertools
import time
from collections import Counter

import numpy as np
import pytest

import pyfkm.secagg.scma._params as params_module
from pyfkm.exceptions import CapacityError, DecodeError, InvalidInputError
from pyfkm.field import DEFAULT_PRIME
from pyfkm.secagg import ScmaParams, secure_sum_sparse
from pyfkm.secagg.scma._codec import Codec
from pyfkm.secagg.scma._params import MAX_MESSAGE_WORDS

P = DEFAULT_PRIME


# ---------------------------------------------------------------------------
# oracles (Python integers, written from the contract)

def plain_sum(clients, d):
    acc = Counter()
    for bins, counts in clients:
        for b, q in zip(np.asarray(bins).reshape(-1, d).tolist(), np.asarray(counts).tolist()):
            acc[tuple(b)] += int(q)
    items = sorted((k, v) for k, v in acc.items() if v)
    return [list(k) for k, _ in items], [v for _, v in items]


def node_of(b, B):
    idx = 0
    for x in b:
        idx = idx * B + int(x)
    return idx + 1


def bin_of(x, B, d):
    out, idx = [], x - 1
    for _ in range(d):
        idx, r = divmod(idx, B)
        out.append(r)
    return out[::-1]


def index_message(nodes, counts, M, t, p):
    """[S_0 .. S_{2M-1}, R] in Python integers."""
    S = [sum(q * pow(x, i, p) for x, q in zip(nodes, counts)) % p for i in range(2 * M)]
    R = sum(q * pow((t - x) % p, p - 2, p) for x, q in zip(nodes, counts)) % p
    return S + [R]


def alias(nodes, M, coeffs, p):
    """(u, v) as {node: count}: u on nodes[:len - M], v on nodes[len - M:],
    with the same 2M power sums (see the module docstring, (c)); None when a
    weight is 0."""
    w = []
    for j, x in enumerate(nodes):
        den = 1
        for i, y in enumerate(nodes):
            if i != j:
                den = den * (x - y) % p
        Px = 0
        for c in reversed(coeffs):
            Px = (Px * x + c) % p
        w.append(Px * pow(den, p - 2, p) % p)
    if not all(w):
        return None
    for i in range(2 * M):                       # the construction, checked
        assert sum(wj * pow(x, i, p) for wj, x in zip(w, nodes)) % p == 0
    k = len(nodes) - M
    u = dict(zip(nodes[:k], w[:k]))
    v = {x: (-wj) % p for x, wj in zip(nodes[k:], w[k:])}
    return u, v


def encode(codec, vec):
    """Codec message of {node: count} (counts as field elements)."""
    P_ = codec.params
    nodes = sorted(vec)
    bins = np.array([bin_of(x, P_.bins_per_dim, P_.n_dims) for x in nodes],
                    dtype=np.int64).reshape(len(nodes), P_.n_dims)
    return codec.encode(bins, np.array([vec[x] for x in nodes], dtype=np.uint64))


def decoded(codec, agg, previous=None):
    state, _ = codec.decode(agg, previous)
    bins, counts = state.sorted_rows()
    return bins.tolist(), counts.tolist()


def index_params(d, B, M, p=P, **kw):
    params = ScmaParams.create(d, B, M, modulus=p, mode="index", **kw)
    assert params.mode == "index"
    return params


# ---------------------------------------------------------------------------
# errors: over-full aggregates raise

def test_issue_example_raises():
    # counts 1, 1 at bins 10, 30 (nodes 11, 31), M = 1: the 2 syndromes
    # (2, 42) are those of count 2 at bin 20 (node 21), the wrong answer
    # returned before the check word
    with pytest.raises(DecodeError, match="max_nonzeros"):
        secure_sum_sparse([([[10]], [1]), ([[30]], [1])], 100, max_nonzeros=1)
    params = index_params(1, 100, 1)
    codec = Codec(params)
    agg = codec.encode(np.array([[10], [30]]), np.array([1, 1], dtype=np.uint64))
    assert agg[:2].tolist() == codec.encode(np.array([[20]]),
                                            np.array([2], dtype=np.uint64))[:2].tolist()
    with pytest.raises(DecodeError):
        codec.decode(agg)
    # the hashed mode raised already; it still does
    with pytest.raises(DecodeError):
        secure_sum_sparse([([[10]], [1]), ([[30]], [1])], 100, max_nonzeros=1,
                          mode="hashed")


@pytest.mark.slow
@pytest.mark.parametrize("p, B, d, M", [(11, 10, 1, 1), (13, 3, 2, 1), (101, 10, 2, 1)])
def test_every_two_bin_aggregate_over_m1_raises_in_a_tiny_field(p, B, d, M):
    # m = M + 1 is detected deterministically, also when the check point is
    # forced to 0 (B**d = p - 1, T = {0}) and carries no randomness at all:
    # exhaustive over bins and counts in [1, p) for p = 11, 13; for p = 101
    # 300 random pairs of bins with every count pair on a stride
    params = index_params(d, B, M, p)
    codec = Codec(params)
    G = B ** d
    pairs = list(itertools.combinations(range(1, G + 1), 2))
    stride = 1
    if len(pairs) > 1000:
        rng = np.random.default_rng(p)
        pairs = [pairs[i] for i in rng.choice(len(pairs), size=300, replace=False)]
        stride = 9
    aliased = 0
    for x1, x2 in pairs:
        for q1 in range(1, p, stride):
            for q2 in range(1, p, stride):
                agg = encode(codec, {x1: q1, x2: q2})
                # the alias: node (q1 x1 + q2 x2) / (q1 + q2) in the grid
                s0 = (q1 + q2) % p
                if s0 and 1 <= (q1 * x1 + q2 * x2) * pow(s0, p - 2, p) % p <= G:
                    aliased += 1
                with pytest.raises(DecodeError):
                    codec.decode(agg)
    assert aliased > 0          # cases a check-free decode got wrong exist


@pytest.mark.parametrize("M", [1, 2, 3, 5, 8, 13])
def test_aliased_over_full_aggregates_raise(M):
    # m = M + s nonzeros whose 2M syndromes are exactly those of an
    # M-sparse vector v: random nodes and arithmetic progressions, s = 1..4
    rng = np.random.default_rng(100 + M)
    d, B = 2, 100
    params = index_params(d, B, M)
    codec = Codec(params)
    G = B ** d
    n_cases = 0
    for s in range(1, 5):
        for trial in range(6):
            n = 2 * M + s
            if trial % 2:
                start, step = int(rng.integers(1, 50)), int(rng.integers(1, G // (n + 50)))
                nodes = [start + step * j for j in range(n)]
            else:
                nodes = [int(x) + 1 for x in rng.choice(G, size=n, replace=False)]
            coeffs = [int(c) for c in rng.integers(1, P, size=s)]
            pair = alias(nodes, M, coeffs, P)
            if pair is None:
                continue
            u, v = pair
            agg_u, agg_v = encode(codec, u), encode(codec, v)
            assert agg_u[:2 * M].tolist() == agg_v[:2 * M].tolist()    # a real alias
            assert agg_u[2 * M] != agg_v[2 * M]
            with pytest.raises(DecodeError):
                codec.decode(agg_u)
            # v itself fits and decodes exactly
            got = decoded(codec, agg_v)
            want = sorted((bin_of(x, B, d), q) for x, q in v.items())
            assert got == ([b for b, _ in want], [q for _, q in want])
            n_cases += 1
    assert n_cases >= 20


@pytest.mark.parametrize("seed", range(6))
def test_random_and_structured_over_full_aggregates_raise(seed):
    # m = M + 1 .. M + 6 through the whole protocol: random bins and counts,
    # arithmetic progressions of bin indices, equal counts
    rng = np.random.default_rng(seed)
    d, B = 2, 100
    for M in (1, 2, 4, 7):
        for extra in range(1, 7):
            m = M + extra
            if seed % 3 == 0:
                idx = rng.choice(B ** d, size=m, replace=False)
                counts = rng.integers(1, 50, size=m)
            elif seed % 3 == 1:
                start, step = int(rng.integers(0, 100)), int(rng.integers(1, 300))
                idx = np.array([start + step * j for j in range(m)])
                counts = rng.integers(1, 5, size=m)
            else:
                idx = 7 + 11 * np.arange(m)
                counts = np.full(m, int(rng.integers(1, 4)))
            bins = np.stack([idx // B, idx % B], axis=1)
            # clients of at most M bins each (max_client_nonzeros = M)
            order = rng.permutation(m)
            clients = [(bins[order[i:i + M]], counts[order[i:i + M]])
                       for i in range(0, m, M)]
            with pytest.raises(DecodeError):
                secure_sum_sparse(clients, B, max_nonzeros=M)


@pytest.mark.parametrize("seed", range(3))
def test_incremental_decode_of_an_over_full_aggregate_raises_and_keeps_the_state(seed):
    rng = np.random.default_rng(50 + seed)
    d, B, M = 2, 100, 4
    params = index_params(d, B, M)
    codec = Codec(params)
    nodes = [int(x) + 1 for x in rng.choice(B ** d, size=2 * M + 1, replace=False)]
    u, v = alias(nodes, M, [int(rng.integers(1, P))], P)
    # previous aggregate: v with one count changed, so that the change to
    # u's message is, by its syndromes, one bin (what a check-free
    # incremental decode would have merged)
    prev = dict(v)
    first = min(prev)
    prev[first] = (prev[first] + 5) % P or 1
    state, inc = codec.decode(encode(codec, prev))
    assert not inc
    before = [a.tolist() for a in state.sorted_rows()]
    agg_u = encode(codec, u)
    delta = [(a - b) % P for a, b in zip(agg_u.tolist(), encode(codec, prev).tolist())]
    single = encode(codec, {first: (v[first] - prev[first]) % P})
    assert delta[:2 * M] == single[:2 * M].tolist()                  # a real alias
    with pytest.raises(DecodeError):
        codec.decode(agg_u, previous=state)
    # the previous state is untouched and still usable, incrementally
    assert [a.tolist() for a in state.sorted_rows()] == before
    nxt = dict(prev)
    nxt[first] = (nxt[first] + 1) % P or 1
    new_state, inc = codec.decode(encode(codec, nxt), previous=state)
    assert inc
    want = sorted((bin_of(x, B, d), q) for x, q in nxt.items())
    bins, counts = new_state.sorted_rows()
    assert (bins.tolist(), counts.tolist()) == ([b for b, _ in want], [q for _, q in want])
    # and a plain over-full aggregate (more bins than M) raises incrementally too
    extra = {int(x) + 1: int(q) for x, q in zip(rng.choice(B ** d, size=M + 1, replace=False),
                                                  rng.integers(1, 9, size=M + 1))}
    with pytest.raises(DecodeError):
        codec.decode(encode(codec, extra), previous=state)
    assert [a.tolist() for a in state.sorted_rows()] == before


def test_candidate_nodes_outside_the_grid_raise():
    # a message of a larger grid (same field): node 16 > B**d = 10.  The
    # check word is recomputed for the real codec's point, so only the grid
    # check can refuse it
    params = index_params(1, 10, 2)
    codec = Codec(params)
    fake = Codec(dataclasses.replace(params, bins_per_dim=20))
    t = codec.check_point
    for bins, counts in [([[15]], [3]), ([[3], [15]], [1, 2]), ([[19], [12]], [4, 4])]:
        agg = fake.encode(np.array(bins), np.array(counts, dtype=np.uint64))
        nodes = [b[0] + 1 for b in bins]
        want = index_message(nodes, counts, 2, t, P)
        assert agg[:4].tolist() == want[:4]
        agg[4] = want[4]
        with pytest.raises(DecodeError, match="outside the bin grid"):
            codec.decode(agg)
    # a node at zero: S = (q, 0, 0, 0)
    with pytest.raises(DecodeError):
        codec.decode(np.array([3, 0, 0, 0, 0], dtype=np.uint64))
    # a wrong check word alone
    agg = codec.encode(np.array([[4]]), np.array([2], dtype=np.uint64))
    agg[4] = (int(agg[4]) + 1) % P
    with pytest.raises(DecodeError, match="check word"):
        codec.decode(agg)
    # a nonzero check word with zero syndromes
    with pytest.raises(DecodeError):
        codec.decode(np.array([0, 0, 0, 0, 7], dtype=np.uint64))


def test_message_cap_raises_capacity_error():
    assert MAX_MESSAGE_WORDS == 1 << 23
    # index mode: 2M + 1 words
    with pytest.raises(CapacityError, match="max_nonzeros"):
        ScmaParams(n_dims=2, bins_per_dim=100, max_nonzeros=1 << 22, mode="index")
    # hashed mode, d = 3, B = 7: 2 payload rows, 4M words
    with pytest.raises(CapacityError, match="max_nonzeros to at most 2097152"):
        ScmaParams(n_dims=3, bins_per_dim=7, max_nonzeros=(1 << 21) + 1, mode="hashed")
    # many payload rows: d = 2**20 coordinates, one per element
    t0 = time.perf_counter()
    with pytest.raises(CapacityError):
        ScmaParams(n_dims=1 << 20, bins_per_dim=P - 2, max_nonzeros=16, mode="hashed")
    with pytest.raises(InvalidInputError):        # B**d never computed
        ScmaParams(n_dims=1 << 20, bins_per_dim=P - 2, max_nonzeros=16, mode="index")
    assert time.perf_counter() - t0 < 1.0
    # CapacityError is an InvalidInputError (rosters map it to MessageFormatError)
    assert issubclass(CapacityError, InvalidInputError)
    # difference rounds derive their parameters with dataclasses.replace
    ok = ScmaParams.create(3, 7, 1000, mode="hashed")
    with pytest.raises(CapacityError):
        dataclasses.replace(ok, max_nonzeros=(1 << 21) + 1, max_client_nonzeros=0)
    with pytest.raises(CapacityError):
        ScmaParams.create(2, 100, 1 << 22)


def test_message_cap_boundary_is_accepted():
    params = ScmaParams(n_dims=3, bins_per_dim=7, max_nonzeros=1 << 21, mode="hashed")
    assert params.n_payload_rows == 2
    assert params.message_words == MAX_MESSAGE_WORDS
    params = ScmaParams(n_dims=2, bins_per_dim=100, max_nonzeros=(1 << 22) - 1, mode="index")
    assert params.message_words == MAX_MESSAGE_WORDS - 1


# ---------------------------------------------------------------------------
# parameters: layout and OS randomness

@pytest.mark.parametrize("M", [100, 1000, 10000])
def test_index_layout_is_2m_plus_one(M):
    params = ScmaParams.create(2, 100, M)               # MUFC-like: d = 2, B = 100
    assert params.mode == "index"
    assert params.n_syndromes == 2 * M
    assert params.n_check_words == 1
    assert params.n_payload_rows == 0
    assert params.message_words == 2 * M + 1
    hashed = ScmaParams.create(2, 100, M, mode="hashed")
    assert hashed.n_check_words == 0
    assert hashed.message_words == 2 * M + hashed.n_payload_rows * M


def test_create_takes_no_seed():
    # key material and run ids never follow a user seed: there is nothing to pass
    with pytest.raises(TypeError):
        ScmaParams.create(2, 10, 4, random_state=0)


def test_create_draws_run_id_and_hash_seed_from_the_os(monkeypatch):
    a = ScmaParams.create(2, 10, 4)
    b = ScmaParams.create(2, 10, 4)
    assert a.run_id != b.run_id and a.hash_seed != b.hash_seed
    assert a.hash_seed != bytes(32)
    calls = []

    def urandom(n):
        calls.append(n)
        return bytes([len(calls)]) * n

    monkeypatch.setattr(params_module.os, "urandom", urandom)
    c = ScmaParams.create(2, 10, 4)
    assert sorted(calls) == [16, 32]
    assert {c.run_id[0], c.hash_seed[0]} == {1, 2}
    assert len(set(c.run_id)) == len(set(c.hash_seed)) == 1
    # an explicit run id is kept; the seed still comes from the OS
    rid = bytes(range(16))
    d = ScmaParams.create(2, 10, 4, run_id=rid)
    assert d.run_id == rid and len(calls) == 3
    assert not hasattr(params_module, "_random_bytes")


def test_check_point_and_check_word_follow_the_contract():
    # t in {0} u (B**d, p), the check word is sum q / (t - x)
    rng = np.random.default_rng(7)
    seen = Counter()
    for trial in range(400):
        params = index_params(2, 3, 2, p=13)            # B**d = 9: T = {0, 10, 11, 12}
        t = Codec(params).check_point
        assert t == 0 or 9 < t < 13
        seen[t] += 1
    assert set(seen) == {0, 10, 11, 12} and min(seen.values()) > 60
    params = index_params(2, 100, 5)
    codec = Codec(params)
    t = codec.check_point
    assert t == 0 or 10 ** 4 < t < P
    assert Codec(params).check_point == t                # public: one value per seed
    for _ in range(20):
        k = int(rng.integers(0, 6))
        idx = rng.choice(10 ** 4, size=k, replace=False)
        counts = [int(c) for c in rng.integers(1, 1000, size=k)]
        bins = np.stack([idx // 100, idx % 100], axis=1).astype(np.int64).reshape(k, 2)
        got = codec.encode(bins, np.array(counts, dtype=np.uint64)).tolist()
        assert got == index_message([int(i) + 1 for i in idx], counts, 5, t, P)


# ---------------------------------------------------------------------------
# exact fits still decode exactly

@pytest.mark.parametrize("seed", range(8))
def test_aggregates_that_fit_decode_exactly(seed):
    rng = np.random.default_rng(1000 + seed)
    d, B = 2, 100
    M = int(rng.integers(1, 12))
    m = int(rng.integers(0, M + 1))
    kind = seed % 3
    if kind == 0:
        idx = rng.choice(B ** d, size=m, replace=False)
    elif kind == 1:                                     # an arithmetic progression
        idx = int(rng.integers(0, 50)) + int(rng.integers(1, 500)) * np.arange(m)
    else:                                               # the grid's last bins
        idx = B ** d - 1 - np.arange(m)
    bins = np.stack([idx // B, idx % B], axis=1).astype(np.int64).reshape(m, d)
    n_clients = int(rng.integers(1, 4))
    clients = []
    for _ in range(n_clients):
        take = rng.random(m) < 0.7
        counts = rng.integers(1, 6, size=m) if kind else np.full(m, 3)
        clients.append((bins[take], counts[take]))
    if not any(len(c) for _, c in clients):
        clients[0] = (bins[:1], np.array([1] * min(m, 1)))
    want = plain_sum(clients, d)
    got_bins, got_counts, rep = secure_sum_sparse(clients, B, max_nonzeros=M)
    assert rep.mode == "index" and rep.message_words == 2 * M + 1
    assert (got_bins.tolist(), got_counts.tolist()) == want


@pytest.mark.parametrize("p, B, d, M", [(11, 10, 1, 2), (101, 10, 2, 2)])
def test_every_fitting_aggregate_decodes_in_a_tiny_field(p, B, d, M):
    # every size of support up to M (the first 400 supports of each size,
    # nodes on a stride), counts on a stride of [1, p)
    codec = Codec(index_params(d, B, M, p))
    G = B ** d
    step = 1 if G <= 10 else 7
    for k in range(M + 1):
        for nodes in itertools.islice(itertools.combinations(range(1, G + 1, step), k), 400):
            for qs in itertools.islice(itertools.product(range(1, p, 3), repeat=k), 30):
                vec = dict(zip(nodes, qs))
                got = decoded(codec, encode(codec, vec))
                want = sorted((bin_of(x, B, d), q) for x, q in vec.items())
                assert got == ([b for b, _ in want], [q for _, q in want])
