"""SCMA secure aggregation (pyfkm.secagg) at the paper's sizes, and its decoder against FLINT.

Workload, for each (K, L, d) in {(10, 100, 10), (10, 100, 784), (62, 100, 784)}: n = 30000
points in the unit hypercube centred at 0, lattice step gamma = 1/sqrt(n), so there are
B = ceil(1/gamma) = 174 bins per dimension.  Each of the L clients holds K distinct bins with
positive counts summing to about n/L (1 + a multinomial split of Poisson(n/L) - K points).  Half
of a client's bins are drawn from a shared pool of K*L/4 "cluster" bins (pool bins are cluster
centres plus offsets in {-2..2} per coordinate), the other half are private uniform bins, so bins
overlap across clients and the aggregate has m < M = K*L distinct bins.  M = K*L is the paper's
bound.  B**d > p for both d, so ``mode="auto"`` picks the hashed encoding (2M syndromes plus
``params.n_payload_rows`` rows of M: ceil(d/c) coordinate rows, c = floor(log_B p) = 8, and the
module's check row).

Everything runs through the real roles and the real wire format: ScmaParams.create, L ScmaClient
objects, one ScmaServer (complete graph, default threshold); every message is ``to_bytes`` /
``from_bytes``'d.  Every key and the run id come from the operating system (the protocol takes
no seed), so only the data follow ``--seed``.  A round is the dropout-tolerant protocol of
:mod:`pyfkm.secagg`: key shares (``start_round`` -> ``share_keys`` -> ``receive_shares`` ->
``bundle`` -> ``receive_shares``), masked inputs (``request_inputs`` -> ``respond``),
unmasking (``unmask_request`` -> ``unmask`` -> ``receive_unmask`` -> ``finish_round``).  No
client drops out.

Measured, per client (median over the L clients):

(a) encode        ``client.set_data(bins, counts)`` (validation; median over ``--repeats``
                  calls per client) plus the encoding into unmasked syndromes, which the client
                  now makes in the first full round's ``respond`` (once per data): the CPU time
                  of the client's private ``_codec.encode`` inside that call (wrapped with a
                  timer, see ``instrument``; if the attribute is gone the column is empty and
                  the targets use the whole ``respond``);
(b) mask+respond  ``client.respond(input_request)`` in round 1, mask computed in the call: the
                  client's self-mask stream and L-1 ChaCha20 pair streams from the round's
                  X25519/HKDF keys, added to the encoding, plus the tag -- and, since the
                  encoding moved out of ``set_data``, the first encoding (the encode column is
                  part of this one).  (The old single-flight ``respond(RoundMessage)`` had no
                  self stream and encoded in ``set_data``.)  Round 2's masks are precomputed
                  offline (``precompute_mask(0)`` after the key shares, timed apart) and round
                  2's ``respond`` is the online cost alone (one addition and the tag; the
                  encoding is cached, except for the one client whose data changed);
    key shares    steps 1-2 of round 1 (new with the dropout-tolerant protocol, offline: no
                  data involved): ``share_keys`` (fresh round key and self seed, Shamir-shared
                  and encrypted to the L-1 neighbours) + ``receive_shares`` (the neighbours'
                  shares and round keys; the round's pair keys);
    unmask        step 4 of round 1: ``client.unmask`` (the shares it reveals for the
                  survivors);
(c) bytes         ``len(msg.to_bytes())`` of the client's syndrome message; also the paper's
                  2*K*L*ceil(log2 p) bits and a dense masked sum's B**d*ceil(log2 p) bits, and
                  the other messages of a round: the client's ShareMessage (up), its
                  ShareBundle (down) and its UnmaskMessage (up);
    key agreement ``client.receive_roster`` (L-1 X25519 exchanges + HKDF), for information.

and on the server:

(d) full decode   ``server.finish_round(incremental=False)`` of round 1: the CPU time of the
                  decode alone (the server's private ``_codec.decode`` wrapped with a CPU timer,
                  see ``instrument``; the figure the targets use), ``report.decode_seconds``
                  (the server's wall clock of the same call) and the CPU time of the whole
                  ``finish_round`` (which now also rebuilds the survivors' self-mask seeds from
                  the revealed shares and removes their L self streams, then adds the L
                  messages mod p and sorts the rows);
(e) incremental   one client lowers one count by 1 (``set_data``), round 2, every client
                  responds, ``finish_round(incremental=True)``; ``report.incremental`` must be
                  True.  Ratio full / incremental on the three measures.
(f) FLINT         for M = 1000 (``--flint-max-m``): the aggregated syndromes S of round 1 (what
                  the server's decode was given once the masks were removed, S_i = sum_j q_j
                  x_j^i; checked equal to the encoding of the plain sum) are given
                  to ``fmpz_mod_poly_ctx.minpoly`` + the faster of FLINT's ``fmpz_mod_poly`` /
                  ``nmod_poly`` ``roots`` + FLINT's Vandermonde solve for the counts (the helpers
                  of compare_flint.py).  Ratio = FLINT / pyfkm full decode (> 1: pyfkm faster).
                  pyfkm's hashed decode also solves ceil(d/c) payload systems on the same nodes
                  and checks every bin against its hash, so a like-for-like column adds those
                  solves on the FLINT side too (product tree and F'(x_j) built once), and a
                  breakdown times pyfkm.field's BM / roots / solves on the same S.

The repeats of (d) and (e) are live rounds: for each of ``--repeats`` - 1 more, a full round
with the current data (``incremental=False``) and then a round after the same client changed the
same count by 1 again (up, then down: ``incremental=True``), every client sharing keys, responding
and unmasking in each.  (They used to replay the recorded message bytes into a fresh server; a
client's messages are now bound to one server's roster and keys, and the self masks need the
clients' unmask answers, so a round cannot be replayed.)  Every decode is checked:
the decoded (bins, counts) equal the plain sum of the clients' vectors (np.unique over all rows,
lexicographic order); FLINT's roots are checked against the hash nodes of the expected bins and
its counts against the expected counts.

Single thread (threadpoolctl), CPU time (time.process_time) except ``report.decode_seconds``,
which the server measures with a wall clock (on a shared machine wall >= CPU).  Medians.

Usage::

    python benchmarks/compare_scma.py [--cases "10,100,10;10,100,784;62,100,784"] [--n 30000]
        [--repeats 3] [--seed 0] [--flint-max-m 1000] [--max-repeat-seconds 5] [--no-flint]
    python benchmarks/compare_scma.py --quick     # one small case, 2 repeats: a smoke test

Without python-flint installed the script runs as with ``--no-flint``.

Targets (printed at the end): full decode at M = 1000 within 2x of FLINT's BM + roots +
Vandermonde (FLINT / pyfkm >= 0.5); incremental decode after a one-count change >= 20x faster
than the full decode; client encode at L = 100 under 10 ms (encode alone, encode + mask, and
encode + the online respond with the mask precomputed offline).
"""
import argparse
import math
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import (Stopwatch, call, call_cpu_wall, interleave, single_thread,  # noqa: E402
                     timed_calls)
from _timing import format_seconds as fmt  # noqa: E402

try:                   # python-flint is optional: without it the FLINT comparison is skipped
    import flint
    from compare_flint import (flint_bm, flint_product_linear,  # noqa: E402
                               flint_roots_fmpz_mod, flint_roots_nmod, flint_vandermonde)
except ImportError:
    flint = None

import pyfkm  # noqa: E402
from pyfkm import field  # noqa: E402
from pyfkm.secagg import (InputRequest, KeyMessage, RosterMessage, RoundMessage,  # noqa: E402
                          ScmaClient, ScmaParams, ScmaServer, ShareBundle, ShareMessage,
                          SyndromeMessage, UnmaskMessage, UnmaskRequest)
# checks only, never timed: FLINT's roots against the hash nodes, the decoder's input
from pyfkm.secagg.scma._codec import Codec  # noqa: E402

CASES = [(10, 100, 10), (10, 100, 784), (62, 100, 784)]
QUICK_CASES = [(10, 20, 10)]
N_POINTS = 30000
TARGET_FLINT_RATIO = 0.5      # FLINT / pyfkm full decode >= 0.5
TARGET_INC_SPEEDUP = 20.0     # full / incremental >= 20
TARGET_ENCODE_S = 0.010       # client encode < 10 ms at L = 100


# --------------------------------------------------------------------------- workload

def bins_per_dim(n):
    """ceil(1 / gamma) for gamma = 1/sqrt(n), i.e. ceil(sqrt(n)), in exact integer arithmetic."""
    r = math.isqrt(n)
    return r if r * r == n else r + 1


def lex_sorted(bins, counts):
    order = np.lexsort(bins.T[::-1])
    return bins[order], counts[order]


def make_clients(K, L, d, B, n, rng):
    """L clients with K distinct bins each (shared cluster pool + private bins), counts > 0.

    Returns (clients, (bins, counts) of the plain sum, lexicographic)."""
    k_shared = K // 2
    pool_size = max(k_shared, K * L // 4)
    n_centres = max(1, pool_size // 10)
    centres = rng.integers(0, B, size=(n_centres, d))
    pool = (centres[rng.integers(0, n_centres, size=pool_size)]
            + rng.integers(-2, 3, size=(pool_size, d)))
    pool = np.unique(np.clip(pool, 0, B - 1), axis=0)
    clients = []
    for _ in range(L):
        shared = pool[rng.choice(pool.shape[0], size=min(k_shared, pool.shape[0]), replace=False)]
        bins = shared
        while bins.shape[0] < K:
            extra = rng.integers(0, B, size=(K - bins.shape[0], d))
            bins = np.unique(np.concatenate([bins, extra]), axis=0)
        bins = bins[rng.permutation(K)].astype(np.int64)
        total = max(K, int(rng.poisson(n / L)))
        counts = 1 + rng.multinomial(total - K, rng.dirichlet(np.ones(K)))
        clients.append((bins, counts.astype(np.int64)))
    return clients, plain_sum(clients)


def plain_sum(clients):
    allb = np.concatenate([b for b, _ in clients])
    allc = np.concatenate([c for _, c in clients])
    uniq, inv = np.unique(allb, axis=0, return_inverse=True)
    counts = np.bincount(inv.ravel(), weights=allc, minlength=uniq.shape[0]).astype(np.int64)
    keep = counts != 0
    return lex_sorted(uniq[keep], counts[keep])


def check_result(res, expected, what):
    eb, ec = expected
    if not (np.array_equal(res.bins, eb) and np.array_equal(res.counts, ec)):
        raise AssertionError(f"{what}: decoded aggregate != plain sum "
                             f"({res.bins.shape[0]} bins decoded, {eb.shape[0]} expected)")


# --------------------------------------------------------------------------- protocol

def instrument(role, name, inputs=None):
    """The CPU seconds of every call of the role's (private) ``_codec.<name>``: a list that
    fills as the calls come (``_timing.timed_calls``); with ``inputs`` (an empty list) a copy
    of the first call's first argument goes there too, outside the timed region.  Nothing else
    changes; if the attribute is gone the list stays empty and the tables fall back to the
    public measures."""
    codec = getattr(role, "_codec", None)
    times = timed_calls(codec, name)
    timed = getattr(codec, name, None)
    if inputs is not None and timed is not None:
        def capture(*a, **kw):
            if not inputs:
                inputs.append(np.array(a[0], dtype=np.uint64))
            return timed(*a, **kw)

        setattr(codec, name, capture)
    return times


def share_round(server, clients, times=None, sizes=None):
    """Open a round and run its key shares (steps 1-2) over bytes; per client, the CPU time of
    ``share_keys`` + ``receive_shares`` goes to ``times`` and the bytes of its ShareMessage
    (up) and ShareBundle (down) to ``sizes``."""
    rbytes = server.start_round().to_bytes()
    t = {}
    up = {}
    for c in clients:
        rmsg = RoundMessage.from_bytes(rbytes)
        t[c.client_id], msg = call(lambda: c.share_keys(rmsg))
        b = msg.to_bytes()
        up[c.client_id] = len(b)
        server.receive_shares(ShareMessage.from_bytes(b))
    for c in clients:
        b = server.bundle(c.client_id).to_bytes()
        bundle = ShareBundle.from_bytes(b)
        t[c.client_id] += call(lambda: c.receive_shares(bundle))[0]
        if sizes is not None:
            sizes.append((up[c.client_id], len(b)))
    if times is not None:
        times.extend(t.values())


def respond_all(server, clients, resp_times=None):
    """Ask for the round's inputs and let every client respond over bytes; returns the
    message bytes."""
    qbytes = server.request_inputs().to_bytes()
    out = []
    for c in clients:
        req = InputRequest.from_bytes(qbytes)
        t, msg = call(lambda: c.respond(req))
        if resp_times is not None:
            resp_times.append(t)
        b = msg.to_bytes()
        out.append(b)
        server.receive(SyndromeMessage.from_bytes(b))
    return out


def unmask_all(server, clients, times=None, sizes=None):
    """Step 4 up to ``finish_round``: every survivor's unmask answer over bytes."""
    ubytes = server.unmask_request().to_bytes()
    by_id = {c.client_id: c for c in clients}
    for i in UnmaskRequest.from_bytes(ubytes).survivors:
        ureq = UnmaskRequest.from_bytes(ubytes)
        t, msg = call(lambda: by_id[i].unmask(ureq))
        b = msg.to_bytes()
        if times is not None:
            times.append(t)
        if sizes is not None:
            sizes.append(len(b))
        server.receive_unmask(UnmaskMessage.from_bytes(b))


def live_round(server, clients, incremental, expected, dec, what):
    """A whole round (every client shares, responds, unmasks) and its finish_round, checked;
    returns (cpu, wall, decode_seconds, decode_cpu) of the finish_round."""
    share_round(server, clients)
    respond_all(server, clients)
    unmask_all(server, clients)
    n = len(dec)
    t, w, res = call_cpu_wall(lambda: server.finish_round(incremental=incremental))
    check_result(res, expected, what)
    if incremental and not res.report.incremental:
        raise AssertionError(f"{what}: the incremental path was not used")
    return t, w, res.report.decode_seconds, dec[-1] if len(dec) > n else None


# --------------------------------------------------------------------------- FLINT side

def flint_vandermonde_multi(ctx, xs, rhs_rows):
    """flint_vandermonde for several right-hand sides on the same nodes: F = prod (y - x_j) and
    F'(x_j) once, then per right-hand side one mul_low and one multipoint_evaluate."""
    m = len(xs)
    F = flint_product_linear(ctx, xs)
    Q = F.reverse(degree=m)
    den = [1 / v for v in F.derivative().multipoint_evaluate(xs)]
    out = []
    for s in rhs_rows:
        Rt = ctx(s[:m]).mul_low(Q, m).reverse(degree=m - 1)
        out.append([a * b for a, b in zip(Rt.multipoint_evaluate(xs), den)])
    return out


def flint_compare(params, agg, expected, args):
    """FLINT BM + roots + Vandermonde on the aggregate syndromes, and pyfkm.field's steps."""
    P = params
    p, M = P.modulus, P.max_nonzeros
    rows = P.n_payload_rows
    S_np = np.ascontiguousarray(agg[:2 * M])
    S = [int(v) for v in S_np]
    T_np = agg[2 * M:].reshape(rows, M)
    eb, ec = expected
    m = eb.shape[0]
    nodes = Codec(P).nodes(eb)                      # hash nodes of the expected bins
    order = np.argsort(nodes)
    want_roots = [int(v) for v in nodes[order]]
    want_counts = [int(v) % p for v in ec[order]]
    ctx = flint.fmpz_mod_poly_ctx(p)
    reps, cap = args.repeats, args.max_repeat_seconds
    res = {"m": m}

    r = interleave({"flint": lambda: flint_bm(ctx, S),
                    "pyfkm": lambda: field.berlekamp_massey(S_np, p)}, reps,
                   max_first_seconds=cap)
    f = r["flint"].result
    assert f.degree() == m, "FLINT minpoly degree != distinct bins"
    f_list = [int(c) for c in f.coeffs()]
    assert [int(c) for c in r["pyfkm"].result[::-1]] == f_list, "pyfkm BM != FLINT minpoly"
    res["bm"] = (r["pyfkm"].median, r["flint"].median)

    f_np = np.array(f_list, dtype=np.uint64)
    fns = {"fmpz_mod": lambda: flint_roots_fmpz_mod(ctx, f_list),
           "nmod": lambda: flint_roots_nmod(f_list, p),
           "pyfkm": lambda: field.roots(f_np, p, require_split=True, random_state=0)}
    r = interleave(fns, reps, max_first_seconds=cap)
    for k in ("fmpz_mod", "nmod"):
        got = sorted((int(x), int(e)) for x, e in r[k].result)
        assert got == [(x, 1) for x in want_roots], f"FLINT {k} roots != hash nodes of the bins"
    x_np, _ = r["pyfkm"].result
    assert [int(v) for v in x_np] == want_roots, "pyfkm roots != hash nodes of the bins"
    best = "nmod" if r["nmod"].median < r["fmpz_mod"].median else "fmpz_mod"
    res["roots"] = (r["pyfkm"].median, r[best].median)
    res["roots_detail"] = (r["fmpz_mod"].median, r["nmod"].median, best)

    xs = want_roots
    T_rows = [[int(v) for v in T_np[t, :m]] for t in range(rows)]
    T_sys = np.ascontiguousarray(T_np[:, :m].T)     # (m, rows), as the decoder solves it
    fns = {"flint": lambda: flint_vandermonde(ctx, xs, S[:m]),
           "flint_all": lambda: flint_vandermonde_multi(ctx, xs, [S[:m]] + T_rows),
           "pyfkm": lambda: field.vandermonde_solve(x_np, S_np[:m], p),
           "pyfkm_all": lambda: field.VandermondeSolver(x_np, p).solve(T_sys)}
    r = interleave(fns, reps, max_first_seconds=cap)
    assert [int(c) for c in r["flint"].result] == want_counts, "FLINT Vandermonde != counts"
    assert [int(c) for c in r["flint_all"].result[0]] == want_counts, \
        "FLINT Vandermonde != counts"
    assert [int(c) for c in r["pyfkm"].result] == want_counts, "pyfkm Vandermonde != counts"
    # payload: W[j, t] = q_j v_{j,t}; check the solves agree
    Wf = np.array([[int(c) for c in row] for row in r["flint_all"].result[1:]],
                  dtype=np.uint64)
    assert np.array_equal(Wf.T, r["pyfkm_all"].result), "payload solves differ"
    res["vdm"] = (r["pyfkm"].median, r["flint"].median)
    res["vdm_payload"] = (r["pyfkm_all"].median, r["flint_all"].median - r["flint"].median)
    res["vdm_all_flint"] = r["flint_all"].median
    res["flint_core"] = res["bm"][1] + res["roots"][1] + res["vdm"][1]
    res["flint_all"] = res["bm"][1] + res["roots"][1] + r["flint_all"].median
    res["pyfkm_core"] = res["bm"][0] + res["roots"][0] + res["vdm"][0]
    return res


# --------------------------------------------------------------------------- one case

def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_case(K, L, d, args):
    rng = np.random.default_rng([args.seed, K, L, d])
    B = bins_per_dim(args.n)
    M = K * L
    case_time = Stopwatch()
    data, expected = make_clients(K, L, d, B, args.n, rng)
    params = ScmaParams.create(d, B, M, mode="auto", max_client_nonzeros=K)
    p = params.modulus
    res = {"K": K, "L": L, "d": d, "B": B, "M": M, "m": expected[0].shape[0],
           "mode": params.mode, "rows": params.n_payload_rows,
           "words": params.message_words, "points": int(expected[1].sum())}
    log(f"[{K},{L},{d}] mode {params.mode}, {params.message_words} words/message, "
        f"m = {res['m']} distinct bins of {M}")

    # key agreement
    clients = [ScmaClient(i) for i in range(L)]
    server = ScmaServer(params)
    aggs = []                                  # what the server's decode is given
    dec = instrument(server, "decode", aggs)
    key_bytes = [c.key_message(params.run_id).to_bytes() for c in clients]
    for kb in key_bytes:
        server.receive_key(KeyMessage.from_bytes(kb))
    roster = server.roster().to_bytes()
    ka = []
    for c in clients:
        rm = RosterMessage.from_bytes(roster)
        ka.append(call(lambda: c.receive_roster(rm))[0])
    res["key_agreement"] = statistics.median(ka)
    encs = [instrument(c, "encode") for c in clients]     # the encoding inside respond

    # (a) set_data (validation; the encoding is made by round 1's respond)
    sd = [[] for _ in clients]
    for _ in range(args.repeats):
        for i, (c, (bins, counts)) in enumerate(zip(clients, data)):
            sd[i].append(call(lambda: c.set_data(bins, counts))[0])
    res["set_data"] = statistics.median(statistics.median(v) for v in sd)

    # (b, c) round 1: key shares, every client responds (mask computed in the call), unmask
    shares, share_sizes = [], []
    share_round(server, clients, shares, share_sizes)
    res["shares"] = statistics.median(shares)
    res["share_up"] = statistics.median(u for u, _ in share_sizes)
    res["bundle_down"] = statistics.median(b for _, b in share_sizes)
    resp = []
    msgs1 = respond_all(server, clients, resp)
    res["respond"] = statistics.median(resp)
    if all(len(e) == 1 for e in encs):
        res["encode_in_respond"] = statistics.median(e[0] for e in encs)
        res["encode"] = res["set_data"] + res["encode_in_respond"]
    else:                       # not instrumented: encode + mask + add, an upper bound
        res["encode_in_respond"] = None
        res["encode"] = res["set_data"] + res["respond"]
    sizes = {len(b) for b in msgs1}
    assert len(sizes) == 1, "messages of one round differ in size"
    res["bytes"] = sizes.pop()
    log(f"  set_data {fmt(res['set_data'])}, key shares {fmt(res['shares'])}, respond round 1 "
        f"{fmt(res['respond'])} (encode {fmt(res['encode_in_respond'])})")
    um, um_sizes = [], []
    unmask_all(server, clients, um, um_sizes)
    res["unmask"] = statistics.median(um)
    res["unmask_up"] = statistics.median(um_sizes)

    # (d) live full decode of round 1
    n_dec = len(dec)
    t, w, r1 = call_cpu_wall(lambda: server.finish_round(incremental=False))
    check_result(r1, expected, "round 1 (full)")
    assert r1.report.bytes_per_client == res["bytes"], "report.bytes_per_client != len(to_bytes())"
    assert not r1.report.incremental
    res["report"] = r1.report
    full = [(t, w, r1.report.decode_seconds, dec[-1] if len(dec) > n_dec else None)]
    # the syndromes the decoder got: the plain sum's encoding once the masks are removed
    S = Codec(params).encode(expected[0], expected[1].astype(np.uint64) % np.uint64(p))
    if aggs:
        assert np.array_equal(aggs[0], S), "unmasked aggregate != encoding of the plain sum"
    del msgs1
    log(f"  full decode {fmt(r1.report.decode_seconds)}")

    # (e) one client lowers one count by 1, round 2 (masks precomputed offline), incremental
    ci = int(rng.integers(L))
    bins, counts = data[ci]
    j = int(np.argmax(counts))          # a count >= 2 keeps the bin (total ~ n/L >> K)
    assert counts[j] >= 2
    lowered = counts.copy()
    lowered[j] -= 1
    versions = [expected, plain_sum(data[:ci] + [(bins, lowered)] + data[ci + 1:])]
    clients[ci].set_data(bins, lowered)
    share_round(server, clients)
    pre = [call(lambda: c.precompute_mask(0))[0] for c in clients]
    res["precompute"] = statistics.median(pre)
    resp2 = []
    respond_all(server, clients, resp2)
    res["respond_online"] = statistics.median(resp2)
    unmask_all(server, clients)
    n_dec = len(dec)
    t, w, r2 = call_cpu_wall(lambda: server.finish_round(incremental=True))
    check_result(r2, versions[1], "round 2 (incremental)")
    if not r2.report.incremental:
        raise AssertionError("round 2: finish_round(incremental=True) did not use the "
                             "incremental path after a one-count change")
    inc = [(t, w, r2.report.decode_seconds, dec[-1] if len(dec) > n_dec else None)]
    log(f"  precompute_mask {fmt(res['precompute'])}, respond round 2 "
        f"{fmt(res['respond_online'])}, incremental decode {fmt(r2.report.decode_seconds)}")

    # repeats of (d) and (e): live rounds, full then after the same one-count change again
    version = 1
    for rep in range(args.repeats - 1):
        full.append(live_round(server, clients, False, versions[version], dec,
                               f"repeat {rep + 1} (full)"))
        version = 1 - version
        clients[ci].set_data(bins, lowered if version else counts)
        inc.append(live_round(server, clients, True, versions[version], dec,
                              f"repeat {rep + 1} (incremental)"))
    for name, v in (("full", full), ("inc", inc)):
        res[name + "_cpu"] = statistics.median(x[0] for x in v)
        res[name + "_wall"] = statistics.median(x[1] for x in v)
        res[name + "_decode"] = statistics.median(x[2] for x in v)
        # the decode's CPU time (instrumented), else the server's wall-clock decode_seconds
        res[name + "_dec"] = (statistics.median(x[3] for x in v) if v[0][3] is not None
                              else res[name + "_decode"])
    clients = server = None        # free the run before FLINT

    # (f) FLINT on the same aggregate syndromes
    if args.flint and M <= args.flint_max_m:
        log("  FLINT ...")
        res["flint"] = flint_compare(params, S, expected, args)
    res["seconds"] = case_time.wall
    return res


# --------------------------------------------------------------------------- report

def sci(x):
    """An int of any size as 1.23e45 (exact digits, no float conversion)."""
    s = str(int(x))
    return f"{s[0]}.{s[1:3].ljust(2, '0')}e{len(s) - 1}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=";".join(",".join(map(str, c)) for c in CASES),
                    help='";"-separated K,L,d triples (default "%(default)s")')
    ap.add_argument("--n", type=int, default=N_POINTS,
                    help="points in the data set: gamma = 1/sqrt(n), B = ceil(1/gamma)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--flint-max-m", type=int, default=1000,
                    help="compare with FLINT for M = K*L up to this (default %(default)s)")
    ap.add_argument("--max-repeat-seconds", type=float, default=5.0,
                    help="do not repeat a FLINT-side measurement whose first run took longer")
    ap.add_argument("--no-flint", dest="flint", action="store_false")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: cases " + ";".join(",".join(map(str, c)) for c in QUICK_CASES)
                    + " and --repeats 2 (unless given)")
    args = ap.parse_args(argv)
    if args.quick:
        if args.cases == ap.get_default("cases"):
            args.cases = ";".join(",".join(map(str, c)) for c in QUICK_CASES)
        if args.repeats == ap.get_default("repeats"):
            args.repeats = 2
    if args.flint and flint is None:
        log("python-flint is not installed: running without the FLINT comparison")
        args.flint = False
    cases = [tuple(int(v) for v in c.split(",")) for c in args.cases.split(";") if c.strip()]
    if args.repeats < 1 or any(len(c) != 3 for c in cases):
        ap.error("--repeats >= 1 and --cases of K,L,d triples")

    results = []
    with single_thread():
        for K, L, d in cases:
            results.append(run_case(K, L, d, args))

    p = results[0]["report"].modulus if results else field.DEFAULT_PRIME
    logp = (p - 1).bit_length()          # ceil(log2 p) for an odd prime
    R = args.repeats
    vs = f" vs python-flint {flint.__version__}" if args.flint else ""
    print(f"# pyfkm {pyfkm.__version__} secagg{vs}, numpy "
          f"{np.__version__}; p = {p} ({logp} bits); n = {args.n}, B = {bins_per_dim(args.n)}; "
          f"1 thread, CPU time, medians (set_data: {R} calls per client, respond, key shares, "
          f"unmask: one round per client, decode: {R} rounds)")
    print("\n## Clients (median over clients)\n")
    print("encode = set_data (validation) + the encoding inside round 1's respond; mask+respond "
          "= round 1's respond with its mask computed in the call (it includes that first "
          "encoding); respond online = round 2's respond, mask precomputed offline; key shares "
          "= share_keys + receive_shares of a round (offline, no data); unmask = the answer to "
          "the unmask request.\n")
    print("| K | L | d | M | m | mode (rows) | words | set_data | encode | mask+respond "
          "| set_data + mask+respond | mask precomputed offline | respond online "
          "| encode + online respond | key shares | unmask | key agreement |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['K']} | {r['L']} | {r['d']} | {r['M']:,} | {r['m']:,} | {r['mode']} "
              f"({r['rows']}) | {r['words']:,} | {fmt(r['set_data'])} | {fmt(r['encode'])} | "
              f"{fmt(r['respond'])} | {fmt(r['set_data'] + r['respond'])} | "
              f"{fmt(r['precompute'])} | {fmt(r['respond_online'])} | "
              f"{fmt(r['encode'] + r['respond_online'])} | {fmt(r['shares'])} | "
              f"{fmt(r['unmask'])} | {fmt(r['key_agreement'])} |")

    print("\n## Communication per client and round\n")
    print("| K | L | d | bytes (to_bytes) | paper 2KL*ceil(log2 p) | dense B^d*ceil(log2 p) "
          "| ours / paper | server bytes | key shares up | bundle down | unmask up |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        paper = 2 * r["K"] * r["L"] * logp
        dense = r["B"] ** r["d"] * logp
        rep = r["report"]
        assert rep.paper_bits_per_client == paper and rep.dense_bits_per_client == dense
        print(f"| {r['K']} | {r['L']} | {r['d']} | {r['bytes']:,} B | {paper:,} bits "
              f"({paper / 8:,.0f} B) | {sci(dense)} bits | {8 * r['bytes'] / paper:.1f}x | "
              f"{rep.server_bytes:,} B | {r['share_up']:,.0f} B | {r['bundle_down']:,.0f} B | "
              f"{r['unmask_up']:,.0f} B |")

    print("\n## Server decode (every result checked against the plain sum)\n")
    print("decode = CPU time of the server's decode call (instrumented); report = "
          "report.decode_seconds (wall clock); finish_round = CPU time of the whole call "
          "(rebuilds the survivors' self-mask seeds and removes their self streams, adds the L "
          "messages mod p, then decodes).\n")
    print("| K | L | d | M | m | full decode | (report) | full finish_round | incremental decode "
          "| (report) | incremental finish_round | full / incremental decode | (report) | "
          "(finish_round) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['K']} | {r['L']} | {r['d']} | {r['M']:,} | {r['m']:,} | "
              f"{fmt(r['full_dec'])} | {fmt(r['full_decode'])} | {fmt(r['full_cpu'])} | "
              f"{fmt(r['inc_dec'])} | {fmt(r['inc_decode'])} | {fmt(r['inc_cpu'])} | "
              f"**{r['full_dec'] / r['inc_dec']:.1f}x** | "
              f"{r['full_decode'] / r['inc_decode']:.1f}x | {r['full_cpu'] / r['inc_cpu']:.1f}x |")

    fl = [r for r in results if "flint" in r]
    if fl:
        print("\n## Full decode vs FLINT on the same aggregated syndromes\n")
        print("| K | L | d | m | FLINT BM | FLINT roots | FLINT Vandermonde (counts) | "
              "FLINT BM+roots+VdM | pyfkm full decode | ratio FLINT/pyfkm | "
              "FLINT + payload solves | ratio like-for-like |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in fl:
            f = r["flint"]
            fm, nm, best = f["roots_detail"]
            print(f"| {r['K']} | {r['L']} | {r['d']} | {f['m']:,} | {fmt(f['bm'][1])} | "
                  f"{fmt(f['roots'][1])} ({best}; fmpz_mod {fmt(fm)}, nmod {fmt(nm)}) | "
                  f"{fmt(f['vdm'][1])} | {fmt(f['flint_core'])} | {fmt(r['full_dec'])} | "
                  f"**{f['flint_core'] / r['full_dec']:.2f}x** | {fmt(f['flint_all'])} "
                  f"({r['rows']} more rhs) | {f['flint_all'] / r['full_dec']:.2f}x |")
        print("\npyfkm.field steps on the same S (breakdown of the full decode):\n")
        print("| K | L | d | BM | roots | VdM counts | VdM payload rows | sum | full decode | "
              "rest (checks, unpack, hash) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in fl:
            f = r["flint"]
            steps = f["bm"][0] + f["roots"][0] + f["vdm"][0] + f["vdm_payload"][0]
            print(f"| {r['K']} | {r['L']} | {r['d']} | {fmt(f['bm'][0])} | {fmt(f['roots'][0])} | "
                  f"{fmt(f['vdm'][0])} | {fmt(f['vdm_payload'][0])} ({r['rows']} rhs) | "
                  f"{fmt(steps)} | {fmt(r['full_dec'])} | "
                  f"{fmt(max(r['full_dec'] - steps, 0.0))} |")

    print("\nTargets:")
    for r in fl:
        f = r["flint"]
        ratio = f["flint_core"] / r["full_dec"]
        print(f"- full decode within 2x of FLINT BM+roots+Vandermonde, ({r['K']}, {r['L']}, "
              f"{r['d']}), M = {r['M']:,}: ratio {ratio:.2f} (>= {TARGET_FLINT_RATIO}) "
              f"{'yes' if ratio >= TARGET_FLINT_RATIO else '**NO**'} (on report.decode_seconds "
              f"{f['flint_core'] / r['full_decode']:.2f}, on finish_round "
              f"{f['flint_core'] / r['full_cpu']:.2f}; like-for-like with the payload solves on "
              f"FLINT's side {f['flint_all'] / r['full_dec']:.2f})")
    for r in results:
        s = r["full_dec"] / r["inc_dec"]
        s2 = r["full_cpu"] / r["inc_cpu"]
        print(f"- incremental decode >= {TARGET_INC_SPEEDUP:g}x faster than full, ({r['K']}, "
              f"{r['L']}, {r['d']}): {s:.1f}x {'yes' if s >= TARGET_INC_SPEEDUP else '**NO**'} "
              f"(report.decode_seconds {r['full_decode'] / r['inc_decode']:.1f}x; whole "
              f"finish_round {s2:.1f}x)")
    for r in results:
        if r["L"] != 100:
            continue
        e, em = r["encode"], r["set_data"] + r["respond"]
        line = (f"- client encode < {TARGET_ENCODE_S * 1e3:g} ms at L = 100, ({r['K']}, {r['L']}, "
                f"{r['d']}): encode alone {fmt(e)} {'yes' if e < TARGET_ENCODE_S else '**NO**'}; "
                f"encode + mask {fmt(em)} {'yes' if em < TARGET_ENCODE_S else '**NO**'}")
        eo = e + r["respond_online"]
        line += (f"; encode + respond with the mask precomputed offline {fmt(eo)} "
                 f"{'yes' if eo < TARGET_ENCODE_S else '**NO**'}")
        print(line)
    print("\nWall seconds per case: " + ", ".join(
        f"({r['K']}, {r['L']}, {r['d']}) {r['seconds']:.0f} s" for r in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
