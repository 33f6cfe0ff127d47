"""Flower SecAgg+ per-client (and server) cost per round: the anchor pyfkm must beat.

What this measures
------------------
One SecAgg+ round as Flower (``flwr`` 1.42) runs it, without networking, at the
same number of clients ``L``, neighbour count, Shamir threshold and vector length
that pyfkm's own secure-aggregation benchmarks use, so the two can be put side
by side.

Client side (``flower_client_round``).  One client is timed through the four
stages of the protocol by calling Flower's **real client mod**,
``flwr.client.mod.secure_aggregation.secaggplus_mod.secaggplus_mod``, once per
stage with hand-built ``Message``/``Context`` objects (a ``Message`` carries the
stage's ``ConfigRecord``, exactly as ``SecAggPlusWorkflow`` would send it).  The
mod dispatches to Flower's own stage functions ``_setup``, ``_share_keys``,
``_collect_masked_vectors`` and ``_unmask`` and (de)serialises its state into
the ``Context`` between stages, so every operation of a Flower client is
included and nothing is re-implemented:

(a) ``setup``:      two SECP384R1 key pairs, serialised to PEM.
(b) ``share_keys``: a fresh 32-byte self-mask seed; Shamir shares of the seed
                    and of the PEM (PKCS#8) text of secret key 1
                    (pycryptodome's pure-Python GF(2^128) Shamir, 16-byte
                    chunks); per neighbour one ECDH(sk2, pk2_j) + HKDF key and
                    one Fernet encryption of the neighbour's two shares.
(c) ``collect_masked_vectors``: Fernet-decrypt the shares received from every
                    neighbour; quantise the float vector; add the self mask and
                    per neighbour one ECDH(sk1, pk1_j) + HKDF pair seed expanded
                    to a mask; reduce mod 2^32.
(d) ``unmask``:     reply with the self-mask-seed shares of surviving
                    neighbours (and its own) and the secret-key-1 shares of
                    dropped neighbours.

The ``call_next`` handler of stage (c) (the "training", which only builds the
FitRes carrying the float vector) is timed separately and subtracted.

Inputs a real client would receive from the server are built beforehand and
not timed: the neighbours' real public keys (every one of the ``L`` nodes gets
real SECP384R1 key pairs) and, in stage (c), one real Fernet ciphertext from
each neighbour, encrypted under the real ECDH(sk2_j, pk2_me) key and laid out
by Flower's ``share_keys_plaintext_concat`` with shares of the exact lengths
Flower produces (52 bytes for the seed, 324 bytes for the PEM key).  The share
*contents* of those incoming ciphertexts are random bytes: the client only
decrypts and stores them (it never interpolates), so only their lengths matter
for its cost, and producing real ones would need every neighbour's full
Shamir split (184 s each at L = 1000).

Server side (``flower_server_round``).  Flower's ``SecAggPlusWorkflow.unmask_stage``
needs a Grid, a Strategy and a LegacyContext, so its reconstruction loop is
*composed* from the same Flower primitives, in the same order:
``combine_shares`` over all shares it collected for each client (the workflow
passes every collected share, not just ``threshold`` of them; see
``reconstruct_frac``), ``pseudo_rand_gen`` for each survivor's self mask, and
for each dropped client ``bytes_to_private_key`` + ``generate_shared_key`` +
``pseudo_rand_gen`` with each of its neighbours; then ``parameters_mod``,
``factor_extract`` and ``dequantize``.  The summing of the masked vectors
(done in ``collect_masked_vectors_stage``) is timed separately.  The shares fed
to it are real: every client's seed (and every dropped client's PEM key) is
split with ``create_shares`` beforehand (untimed).  When affordable, the masked
vectors are real too and the script checks that the server recovers the exact
sum of the quantised inputs.

Dropouts are clients that sent their key shares (stage b) but not their masked
vector (stage c): the expensive case, where the server must rebuild their
secret key and regenerate their pairwise masks.  The timed client never drops.

Neighbour graph: complete (n = L - 1); an even n is Flower's own ring (each
client's neighbours are the n/2 clients on each side in a shuffled order); an
odd n (3) is a ring with n - 1 neighbours plus the antipodal client (needs L
even), because Flower's ring only yields even neighbour counts.  Each client
splits into ``share_num = n + 1`` shares (one kept), threshold t.

What matters for a fair comparison (flwr 1.42.0, read from its source)
----------------------------------------------------------------------
* Shamir: pycryptodome ``Shamir.split/combine`` over GF(2^128), pure Python,
  one polynomial per 16-byte chunk of the PKCS#7-padded secret: 3 chunks for
  the 32-byte seed, 20 for the 306-byte PEM of the P-384 key.  Splitting is
  O(chunks * share_num * threshold) field multiplications; this is 95-99 % of
  a client's round when the graph is complete.  The ThreadPoolExecutor over
  chunks does not help (GIL).
* The server passes *every* share it collected to ``combine_shares``
  (O(m^2) Lagrange per chunk, m = surviving holders), not ``threshold`` of
  them; ``reconstruct_frac=0`` times the threshold-only variant.
* Key agreement: ECDH on SECP384R1 + HKDF-SHA256, keys re-parsed from PEM for
  every neighbour; encryption of shares: Fernet (AES-128-CBC + HMAC-SHA256).
* Seeds to masks: ``pseudo_rand_gen`` XOR-folds the seed (the 32-byte self
  seed, or the 44-byte base64 text of the pair key) into a *32-bit* integer
  that seeds numpy's MT19937 ``RandomState``; ``randint(0, 2**32 - 1)`` int64
  entries.  So mask expansion is cheap but neither cryptographic nor more than
  32 bits of seed entropy: a secure PRG (AES-CTR/ChaCha) costs more per word.
* Vectors: float -> stochastic quantisation to 2^22 levels (clip +-8), weight
  factor prepended (d + 1 entries), arithmetic mod 2^32 held in int64 and sent
  as .npy int64 (8 bytes a word).
* Flower's ring topology only gives even neighbour counts (odd num_shares).

Usage
-----
The orchestrator runs in any Python (it does not import flwr) and re-invokes
this file with ``--worker flower`` in the Flower interpreter, one subprocess
per configuration, serially::

    python -m venv /tmp/flwr-venv
    /tmp/flwr-venv/bin/pip install "flwr==1.42.*" numpy
    python benchmarks/compare_flower_secagg.py --flower-python /tmp/flwr-venv/bin/python

writes ``benchmarks/flower_secagg_numbers.json``.  ``--L``, ``--neighbours``,
``--vector-lengths``, ``--dropouts`` and ``--repeats`` restrict the grid;
``--server-budget-s`` (default 600) skips server reconstructions (and their
untimed share preparation) estimated to take longer, recording the estimate.

A pyfkm side is reserved: ``pyfkm_client_round`` is a placeholder that will time
pyfkm's roles in the same stages, run in the main environment
(``--sides pyfkm``: pyfkm's roles in this interpreter, see ``pyfkm_client_round``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# the standard library only: this file also runs in the Flower environment
from _timing import Stopwatch, call, call_cpu_wall, measure

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "flower_secagg_numbers.json"
RESULT_MARK = "@@RESULT@@ "

# Flower's SecAggPlusWorkflow defaults.
CLIPPING_RANGE = 8.0
TARGET_RANGE = 1 << 22
MOD_RANGE = 1 << 32
MAX_WEIGHT = 1000.0
NUM_EXAMPLES = 100


# --------------------------------------------------------------------------
# grid (shared by both sides)
# --------------------------------------------------------------------------
def log_neighbours(L: int) -> int:
    """k = 2 * ceil(1.5 * log2 L): 20 at L = 100, 30 at L = 1000."""
    return 2 * math.ceil(1.5 * math.log2(L))


def resolve_neighbours(L: int, spec: str) -> int:
    if spec == "complete":
        return L - 1
    if spec == "log":
        return log_neighbours(L)
    return int(spec)


def threshold_for(n_neighbors: int) -> int:
    return n_neighbors // 2 + 1


def build_grid(args: argparse.Namespace) -> list[dict[str, Any]]:
    grid = []
    for L in args.L:
        for spec in args.neighbours:
            n = resolve_neighbours(L, spec)
            for vl in args.vector_lengths:
                for dr in args.dropouts:
                    grid.append(
                        {
                            "L": L,
                            "neighbours_spec": spec,
                            "n_neighbors": n,
                            "threshold": threshold_for(n),
                            "vector_length": vl,
                            "dropout_frac": dr,
                        }
                    )
    return grid


# --------------------------------------------------------------------------
# graph and dropouts (pure python, used by the Flower worker)
# --------------------------------------------------------------------------
def build_graph(
    L: int, n: int, rng: random.Random
) -> tuple[list[int], dict[int, set[int]]]:
    """Node ids (order[0] is the timed client) and open neighbourhoods."""
    if not 1 <= n <= L - 1:
        raise ValueError(f"need 1 <= neighbours <= L-1, got {n} at L={L}")
    ids = set()
    while len(ids) < L:
        ids.add(rng.randrange(1, 1 << 62))
    order = list(ids)
    rng.shuffle(order)
    if n == L - 1:
        nb = {v: set(order) - {v} for v in order}
        return order, nb
    if n % 2 == 0:
        offsets = [o for h in range(1, n // 2 + 1) for o in (h, -h)]
    else:
        if L % 2:
            raise ValueError("an odd neighbour count needs an even L (antipodal edge)")
        offsets = [o for h in range(1, (n - 1) // 2 + 1) for o in (h, -h)] + [L // 2]
    nb = {order[i]: {order[(i + o) % L] for o in offsets} for i in range(L)}
    assert all(len(s) == n for s in nb.values())
    return order, nb


def draw_dropouts(order, nb, frac, threshold, rng) -> set[int]:
    """Dropped clients (never order[0]); redrawn until Flower could still finish."""
    n_drop = round(frac * len(order))
    if n_drop == 0:
        return set()
    for _ in range(1000):
        dead = set(rng.sample(order[1:], n_drop))
        ok = True
        for v in order:
            holders = (nb[v] | {v}) - dead  # active clients holding a share of v
            if len(holders) < threshold:
                ok = False
                break
        if ok:
            return dead
    raise RuntimeError("could not draw a dropout set that leaves enough shares")


# --------------------------------------------------------------------------
# Flower side (runs inside the Flower interpreter)
# --------------------------------------------------------------------------
def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("flwr", "numpy", "cryptography", "pycryptodome"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:  # pragma: no cover
            out[pkg] = "n/a"
    return out


class _Nodes:
    """Real key material for every node of the graph (built once, untimed)."""

    def __init__(self, order):
        from flwr.supercore.primitives.asymmetric import (
            generate_key_pairs,
            private_key_to_bytes,
            public_key_to_bytes,
        )

        self.sk1, self.pk1, self.sk2, self.pk2 = {}, {}, {}, {}
        self.sk1_obj, self.sk2_obj = {}, {}
        for v in order:
            s1, p1 = generate_key_pairs()
            s2, p2 = generate_key_pairs()
            self.sk1_obj[v], self.sk2_obj[v] = s1, s2
            self.sk1[v], self.pk1[v] = private_key_to_bytes(s1), public_key_to_bytes(p1)
            self.sk2[v], self.pk2[v] = private_key_to_bytes(s2), public_key_to_bytes(p2)


def _proto_size(record) -> int:
    from flwr.common.serde import config_record_to_proto

    return config_record_to_proto(record).ByteSize()


def _content_size(content) -> int:
    from flwr.common.serde import recorddict_to_proto

    return recorddict_to_proto(content).ByteSize()


def _raw_payload(values) -> int:
    """Bytes of the payload itself: bytes fields at their length, ints as 8 bytes."""
    total = 0
    for v in values:
        if isinstance(v, (bytes, bytearray)):
            total += len(v)
        elif isinstance(v, str):
            total += len(v.encode())
        elif isinstance(v, (list, tuple)):
            total += _raw_payload(v)
        elif isinstance(v, (int, float)):
            total += 8
    return total


def _one_client_round(me, order, nb, dead, nodes, threshold, vector_length, np_rng):
    """One round of Flower's client mod for node ``me``; per-stage CPU/wall seconds."""
    import numpy as np
    from flwr.app import ConfigRecord, Context, Message, RecordDict
    from flwr.app.message_type import MessageType
    from flwr.client.mod.secure_aggregation.secaggplus_mod import secaggplus_mod
    from flwr.common import Code, FitRes, Status, ndarrays_to_parameters
    from flwr.common.secure_aggregation.crypto.symmetric_encryption import (
        encrypt,
        generate_shared_key,
    )
    from flwr.common.secure_aggregation.secaggplus_constants import (
        RECORD_KEY_CONFIGS,
        RECORD_KEY_STATE,
        Key,
        Stage,
    )
    from flwr.common.secure_aggregation.secaggplus_utils import (
        share_keys_plaintext_concat,
    )
    from flwr.compat.common import recorddict_compat as compat
    from flwr.supercore.primitives.asymmetric import bytes_to_public_key

    try:  # Message() stamps the sender's identity, normally set by the SuperLink
        from flwr.supercore.task_identity import TaskIdentity

        TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 0
    except ImportError:  # pragma: no cover - older flwr
        pass
    n = len(nb[me])
    share_num = n + 1
    ctxt = Context(
        run_id=1, node_id=me, node_config={}, state=RecordDict(), run_config={}
    )
    vec = np_rng.normal(0.0, 1.0, size=vector_length).astype(np.float32)
    train_calls = {"cpu": 0.0, "wall": 0.0}

    def call_next(msg, _ctxt):
        with Stopwatch() as sw:
            fitres = FitRes(
                status=Status(code=Code.OK, message=""),
                parameters=ndarrays_to_parameters([vec]),
                num_examples=NUM_EXAMPLES,
                metrics={},
            )
            out = Message(
                compat.fitres_to_recorddict(fitres, keep_input=True), reply_to=msg
            )
        train_calls["cpu"] += sw.cpu
        train_calls["wall"] += sw.wall
        return out

    def send(cfg: dict) -> tuple[Any, dict]:
        content = RecordDict({RECORD_KEY_CONFIGS: ConfigRecord(cfg)})
        recv = _proto_size(content.config_records[RECORD_KEY_CONFIGS])
        msg = Message(
            content=content,
            dst_node_id=me,
            message_type=MessageType.TRAIN,
            group_id="1",
        )
        cpu, wall, reply = call_cpu_wall(lambda: secaggplus_mod(msg, ctxt, call_next))
        rec = reply.content.config_records[RECORD_KEY_CONFIGS]
        info = {
            "cpu": cpu,
            "wall": wall,
            "sent_proto": _content_size(reply.content),
            "sent_raw": _raw_payload(list(rec.values())),
            "recv_proto": recv,
        }
        return rec, info

    stages = {}
    # (a) setup
    rec, stages["a_setup"] = send(
        {
            Key.STAGE: Stage.SETUP,
            Key.SAMPLE_NUMBER: len(order),
            Key.SHARE_NUMBER: share_num,
            Key.THRESHOLD: threshold,
            Key.CLIPPING_RANGE: CLIPPING_RANGE,
            Key.TARGET_RANGE: TARGET_RANGE,
            Key.MOD_RANGE: MOD_RANGE,
            Key.MAX_WEIGHT: MAX_WEIGHT,
        }
    )
    my_pk1, my_pk2 = rec[Key.PUBLIC_KEY_1], rec[Key.PUBLIC_KEY_2]

    # (b) share keys: the server forwards the public keys of the closed neighbourhood
    cfg = {str(j): [nodes.pk1[j], nodes.pk2[j]] for j in nb[me]}
    cfg[str(me)] = [my_pk1, my_pk2]
    cfg[Key.STAGE] = Stage.SHARE_KEYS
    rec, stages["b_share_keys"] = send(cfg)
    assert len(rec[Key.DESTINATION_LIST]) == n

    # untimed: every neighbour's ciphertext for me, as the server would forward it
    my_pk2_obj = bytes_to_public_key(my_pk2)
    srcs, ctxts = [], []
    seed_share_len = 4 + 16 * 3  # pad(32 bytes) -> 3 chunks
    sk_share_len = 4 + 16 * ((len(nodes.sk1[me]) // 16) + 1)
    for j in nb[me]:
        key = generate_shared_key(nodes.sk2_obj[j], my_pk2_obj)
        plain = share_keys_plaintext_concat(
            j, me, os.urandom(seed_share_len), os.urandom(sk_share_len)
        )
        srcs.append(j)
        ctxts.append(encrypt(key, plain))

    # (c) collect masked vectors
    rec, stages["c_collect_masked"] = send(
        {
            Key.STAGE: Stage.COLLECT_MASKED_VECTORS,
            Key.CIPHERTEXT_LIST: ctxts,
            Key.SOURCE_LIST: srcs,
        }
    )
    stages["c_collect_masked"]["cpu"] -= train_calls["cpu"]
    stages["c_collect_masked"]["wall"] -= train_calls["wall"]
    assert len(rec[Key.MASKED_PARAMETERS]) == 2  # [weight factor, vector]

    # (d) unmask
    closed = nb[me] | {me}
    rec, stages["d_unmask"] = send(
        {
            Key.STAGE: Stage.UNMASK,
            Key.ACTIVE_NODE_ID_LIST: sorted(closed - dead),
            Key.DEAD_NODE_ID_LIST: sorted(nb[me] & dead),
        }
    )
    assert len(rec[Key.SHARE_LIST]) == len(closed)
    assert RECORD_KEY_STATE in ctxt.state.config_records
    return stages


def _calibrate_shamir():
    """Per-operation costs of Flower's Shamir, to estimate what we may skip."""
    from flwr.common.secure_aggregation.crypto.shamir import (
        combine_shares,
        create_shares,
    )

    secret = os.urandom(32)  # 3 chunks
    t, shares = call(lambda: create_shares(secret, 10, 60))
    split = t / (3 * 60 * 10)  # per chunk * share * coeff
    pts = []
    for m in (15, 45):
        pts.append((m, call(lambda: combine_shares(shares[:m]))[0] / 3))
    # per chunk cost = g*m^2 + d*m, solved from the two points
    (m1, t1), (m2, t2) = pts
    g = (t2 / m2 - t1 / m1) / (m2 - m1)
    d = t1 / m1 - g * m1
    return {"split_per_mult": split, "combine_g": max(g, 0.0), "combine_d": max(d, 0.0)}


def _server_plan(order, nb, dead, threshold, reconstruct_frac):
    """Which shares the server combines: nid -> number of shares fed to combine."""
    plan = {}
    for v in order:
        holders = (nb[v] | {v}) - dead if v not in dead else nb[v] - dead
        m = len(holders)
        use = min(m, max(threshold, math.ceil(reconstruct_frac * m)))
        plan[v] = use
    return plan


def _estimate_server(order, nb, dead, threshold, plan, cal, chunks_sk, ecdh_s):
    n = len(nb[order[0]])
    comb = lambda m, ch: ch * (cal["combine_g"] * m * m + cal["combine_d"] * m)
    server = sum(comb(plan[v], chunks_sk if v in dead else 3) for v in order)
    server += sum(len(nb[v]) for v in dead) * ecdh_s
    split = lambda ch: ch * (n + 1) * threshold * cal["split_per_mult"]
    prep = len(order) * split(3) + len(dead) * split(chunks_sk)
    prep += len(order) * n / 2 * ecdh_s  # pair seeds for the real masked vectors
    return server, prep


def flower_server_round(
    order, nb, dead, nodes, threshold, vector_length, reconstruct_frac, np_rng
):
    """Time Flower's server reconstruction (unmask_stage's loop) for one round."""
    import numpy as np
    from flwr.common.secure_aggregation.crypto.shamir import (
        combine_shares,
        create_shares,
    )
    from flwr.common.secure_aggregation.crypto.symmetric_encryption import (
        generate_shared_key,
    )
    from flwr.common.secure_aggregation.ndarrays_arithmetic import (
        factor_extract,
        get_parameters_shape,
        parameters_addition,
        parameters_mod,
        parameters_subtraction,
    )
    from flwr.common.secure_aggregation.quantization import dequantize
    from flwr.common.secure_aggregation.secaggplus_utils import pseudo_rand_gen
    from flwr.supercore.primitives.asymmetric import (
        bytes_to_private_key,
        bytes_to_public_key,
    )

    n = len(nb[order[0]])
    share_num = n + 1
    active = [v for v in order if v not in dead]
    shapes = [(1,), (vector_length,)]

    # ---- untimed preparation: real secrets, real shares, real masked vectors ----
    prep = Stopwatch()
    rd_seed = {v: os.urandom(32) for v in order}
    collected: dict[int, list[bytes]] = {v: [] for v in order}
    for v in order:
        closed = sorted(nb[v] | {v})
        secret = nodes.sk1[v] if v in dead else rd_seed[v]
        shares = create_shares(secret, threshold, share_num)
        for idx, holder in enumerate(closed):
            if holder not in dead:
                collected[v].append(shares[idx])
    plan = _server_plan(order, nb, dead, threshold, reconstruct_frac)
    for v in order:
        collected[v] = collected[v][: plan[v]]
    # pair seeds (symmetric), exactly as the clients derive them
    pair_seed = {}
    for v in order:
        for j in nb[v]:
            if (j, v) not in pair_seed:
                pair_seed[(v, j)] = generate_shared_key(
                    nodes.sk1_obj[v], bytes_to_public_key(nodes.pk1[j])
                )
    plain_sum = np.zeros(vector_length + 1, dtype=np.int64)
    masked_vectors = []
    for v in active:
        x = [
            np.array([NUM_EXAMPLES * TARGET_RANGE // int(MAX_WEIGHT)], dtype=np.int64),
            np_rng.integers(0, TARGET_RANGE, size=vector_length, dtype=np.int64),
        ]
        plain_sum = (plain_sum + np.concatenate(x)) % MOD_RANGE
        m = parameters_addition(x, pseudo_rand_gen(rd_seed[v], MOD_RANGE, shapes))
        for j in nb[v]:
            seed = pair_seed.get((v, j)) or pair_seed[(j, v)]
            mask = pseudo_rand_gen(seed, MOD_RANGE, shapes)
            m = (
                parameters_addition(m, mask)
                if v > j
                else parameters_subtraction(m, mask)
            )
        masked_vectors.append(parameters_mod(m, MOD_RANGE))
    prep_wall = prep.wall

    # ---- timed: sum of masked vectors (collect_masked_vectors_stage) ----
    with Stopwatch() as sw:
        masked_vector = None
        for mv in masked_vectors:
            masked_vector = (
                mv if masked_vector is None else parameters_addition(masked_vector, mv)
            )
        masked_vector = parameters_mod(masked_vector, MOD_RANGE)
    sum_cpu = sw.cpu

    # ---- timed: unmask_stage reconstruction loop ----
    t = {
        "combine_seed": 0.0,
        "combine_sk": 0.0,
        "self_masks": 0.0,
        "pair_masks_dropped": 0.0,
    }
    unmask = Stopwatch()
    for nid in order:
        share_list = collected[nid]
        combine_cpu, secret = call(lambda: combine_shares(share_list))
        with Stopwatch() as sw:
            if nid not in dead:
                private_mask = pseudo_rand_gen(
                    secret, MOD_RANGE, get_parameters_shape(masked_vector)
                )
                masked_vector = parameters_subtraction(masked_vector, private_mask)
            else:
                for neighbor_nid in nb[nid]:
                    shared_key = generate_shared_key(
                        bytes_to_private_key(secret),
                        bytes_to_public_key(nodes.pk1[neighbor_nid]),
                    )
                    pairwise_mask = pseudo_rand_gen(
                        shared_key, MOD_RANGE, get_parameters_shape(masked_vector)
                    )
                    if nid > neighbor_nid:
                        masked_vector = parameters_addition(masked_vector, pairwise_mask)
                    else:
                        masked_vector = parameters_subtraction(masked_vector, pairwise_mask)
        if nid not in dead:
            t["combine_seed"] += combine_cpu
            t["self_masks"] += sw.cpu
        else:
            t["combine_sk"] += combine_cpu
            t["pair_masks_dropped"] += sw.cpu
    with Stopwatch() as sw:
        recon = parameters_mod(masked_vector, MOD_RANGE)
        _q_total_ratio, recon_params = factor_extract(recon)
        dequantize(recon_params, CLIPPING_RANGE, TARGET_RANGE)
    t["finalize"] = sw.cpu
    unmask_wall = unmask.wall

    ok = bool(np.array_equal(np.concatenate(recon), plain_sum))
    return {
        "server_seconds": sum(t.values()),
        "server_wall_seconds": unmask_wall,
        "server_stage_seconds": {k: round(v, 6) for k, v in t.items()},
        "server_sum_masked_seconds": sum_cpu,
        "server_shares_combined": {
            "per_survivor_mean": statistics.mean(plan[v] for v in active),
            "per_dropped_mean": statistics.mean(plan[v] for v in dead)
            if dead
            else None,
        },
        "server_prep_wall_seconds_untimed": prep_wall,
        "server_sum_verified": ok,
    }


# deliberate specialization: pyfkm_client_round mirrors this signature (see
# there).
def flower_client_round(
    L: int,
    n_neighbors: int,
    threshold: int,
    vector_length: int,
    reconstruct_frac: float = 1.0,
    dropout_frac: float = 0.0,
    *,
    repeats: int = 5,
    max_client_seconds: float = 60.0,
    server: bool = True,
    server_budget_s: float = 600.0,
    seed: int = 0,
) -> dict[str, Any]:
    """Time one Flower SecAgg+ client round (and optionally the server's unmasking).

    ``reconstruct_frac``: fraction of the shares it collected for a client that
    the server feeds to ``combine_shares`` (never fewer than ``threshold``).
    1.0 is what Flower's ``SecAggPlusWorkflow`` does (it passes every share);
    0.0 means exactly ``threshold`` shares, the minimum.

    Repeats stop early once ``max_client_seconds`` of client CPU have been spent
    (the number actually run is recorded); each repeat is a fresh client state.
    """
    import numpy as np

    rng = random.Random(seed)
    np_rng = np.random.default_rng(seed)
    order, nb = build_graph(L, n_neighbors, rng)
    dead = draw_dropouts(order, nb, dropout_frac, threshold, rng)
    keygen_wall, nodes = call(lambda: _Nodes(order), clock="wall")
    me = order[0]

    runs = []
    spent = 0.0
    for _ in range(repeats):
        st = _one_client_round(
            me, order, nb, dead, nodes, threshold, vector_length, np_rng
        )
        runs.append(st)
        spent += sum(s["cpu"] for s in st.values())
        if spent > max_client_seconds:
            break

    stage_names = list(runs[0])
    med = lambda key, s: statistics.median(r[s][key] for r in runs)
    client = {s: round(med("cpu", s), 6) for s in stage_names}
    client_wall = {s: round(med("wall", s), 6) for s in stage_names}
    totals = [sum(r[s]["cpu"] for s in stage_names) for r in runs]
    last = runs[-1]
    rec: dict[str, Any] = {
        "side": "flower",
        **_versions(),
        "L": L,
        "neighbours": n_neighbors,
        "threshold": threshold,
        "share_num": n_neighbors + 1,
        "vector_length": vector_length,
        "dropout": dropout_frac,
        "n_dropped": len(dead),
        "reconstruct_frac": reconstruct_frac,
        "repeats": len(runs),
        "client_stage_seconds": client,
        "client_seconds": round(statistics.median(totals), 6),
        "client_seconds_min_max": [round(min(totals), 6), round(max(totals), 6)],
        "client_stage_wall_seconds": client_wall,
        "client_bytes_sent": sum(last[s]["sent_proto"] for s in stage_names),
        "client_bytes_sent_per_stage": {s: last[s]["sent_proto"] for s in stage_names},
        "client_payload_bytes_sent": sum(last[s]["sent_raw"] for s in stage_names),
        "client_bytes_received_secagg": sum(last[s]["recv_proto"] for s in stage_names),
        "untimed_keygen_all_nodes_wall_seconds": round(keygen_wall, 3),
    }

    if server:
        cal = _calibrate_shamir()
        from flwr.common.secure_aggregation.crypto.symmetric_encryption import (
            generate_shared_key,
        )
        from flwr.supercore.primitives.asymmetric import (
            bytes_to_private_key,
            bytes_to_public_key,
        )

        a, b = order[0], order[1]
        ecdh_s = measure(
            lambda: generate_shared_key(
                bytes_to_private_key(nodes.sk1[a]), bytes_to_public_key(nodes.pk1[b])
            ),
            repeat=1,
            number=20,
        ).median
        chunks_sk = len(nodes.sk1[me]) // 16 + 1
        plan = _server_plan(order, nb, dead, threshold, reconstruct_frac)
        est_server, est_prep = _estimate_server(
            order, nb, dead, threshold, plan, cal, chunks_sk, ecdh_s
        )
        rec["server_estimate_seconds"] = round(est_server, 1)
        rec["server_prep_estimate_seconds"] = round(est_prep, 1)
        if est_server > server_budget_s or est_prep > server_budget_s:
            rec["server_seconds"] = None
            rec["server_skipped"] = (
                f"estimated {est_server:.0f} s of server reconstruction and "
                f"{est_prep:.0f} s of untimed share preparation > budget {server_budget_s:.0f} s"
            )
        else:
            sv = flower_server_round(
                order,
                nb,
                dead,
                nodes,
                threshold,
                vector_length,
                reconstruct_frac,
                np_rng,
            )
            rec.update(
                {k: (round(v, 6) if isinstance(v, float) else v) for k, v in sv.items()}
            )
    return rec


# --------------------------------------------------------------------------
# pyfkm side (placeholder)
# --------------------------------------------------------------------------
# deliberate specialization: pyfkm's side takes flower_client_round's
# parameters one for one, so that _worker calls either side with one set of
# arguments; the bodies are the two systems' own rounds.
def pyfkm_client_round(
    L: int,
    n_neighbors: int,
    threshold: int,
    vector_length: int,
    reconstruct_frac: float = 1.0,
    dropout_frac: float = 0.0,
    **kwargs: Any,
) -> dict[str, Any]:
    """pyfkm's side: one real MSA round of ``L`` clients through pyfkm's roles
    (``benchmarks/bench_secagg_scale.py``'s ``one_round``), every call charged
    to its party in CPU seconds, at the same ``L``, neighbour count (rounded up
    to pyfkm's even ring degree; ``L - 1`` is the complete graph) and vector
    length, with ``dropout_frac`` of the clients going silent after sharing
    their keys (the expensive case: their round keys are reconstructed).

    pyfkm's Shamir threshold on a sparse graph is ``floor((k + 1) / 2) + 1``
    of a client's ``k + 1`` holders and its round threshold a strict majority
    of the clients: ``threshold`` (Flower's) is recorded, not used.  The
    client's stages: (b) ``share`` (fresh round key and self seed, Shamir
    shares, AEAD), (c) ``keys`` + ``mask`` + ``input`` (decrypt shares,
    X25519 pair keys, expand ChaCha20 masks, encode and add), (d) ``unmask``
    (revealed shares, and removing the output masks from the broadcast);
    (a) the run's key set-up is reported apart (``client_setup_s``), as
    pyfkm's keys live for a run and Flower makes them every round.
    ``client_bytes_sent`` is what a pyfkm client sends *and receives* in the
    round (its own messages plus the round's broadcasts and its bundle).
    """
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_secagg_scale import one_round

    degree = 0 if n_neighbors >= L - 1 else n_neighbors + (n_neighbors % 2)
    r = one_round("msa", L, degree, dropout_frac, vector_length)
    st = r["client_stages_s"]
    return {
        "side": "pyfkm", "L": L, "neighbours": n_neighbors, "pyfkm_degree": r["degree"],
        "threshold": threshold, "pyfkm_threshold": r["threshold"],
        "vector_length": vector_length, "dropout": dropout_frac, "exact": r["exact"],
        "client_seconds": r["client_round_s"] + r["client_setup_s"],
        "client_round_seconds": r["client_round_s"],
        "client_stage_seconds": {"a_setup": r["client_setup_s"],
                                 "b_share_keys": st["share"],
                                 "c_collect_masked": st["keys"] + st["mask"] + st["input"],
                                 "d_unmask": st["unmask"]},
        "client_bytes_sent": r["client_bytes_round"], "repeats": 1,
        "server_seconds": r["server_round_s"],
    }


# --------------------------------------------------------------------------
# orchestration
# --------------------------------------------------------------------------
def _worker(args: argparse.Namespace) -> None:
    cfg = json.loads(args.config)
    fn = flower_client_round if args.worker == "flower" else pyfkm_client_round
    rec = fn(
        cfg["L"],
        cfg["n_neighbors"],
        cfg["threshold"],
        cfg["vector_length"],
        reconstruct_frac=cfg.get("reconstruct_frac", 1.0),
        dropout_frac=cfg["dropout_frac"],
        repeats=args.repeats,
        max_client_seconds=args.max_client_seconds,
        server=not args.no_server,
        server_budget_s=args.server_budget_s,
        seed=args.seed,
    )
    rec["neighbours_spec"] = cfg["neighbours_spec"]
    print(RESULT_MARK + json.dumps(rec), flush=True)


def _run_side(side: str, python: str, cfg: dict, args) -> dict:
    cmd = [
        python,
        str(Path(__file__).resolve()),
        "--worker",
        side,
        "--config",
        json.dumps(cfg),
        "--repeats",
        str(args.repeats),
        "--max-client-seconds",
        str(args.max_client_seconds),
        "--server-budget-s",
        str(args.server_budget_s),
        "--seed",
        str(args.seed),
    ] + (["--no-server"] if args.no_server else [])
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    wall, proc = call(
        lambda: subprocess.run(cmd, check=False, capture_output=True, text=True, env=env),
        clock="wall",
    )
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            rec = json.loads(line[len(RESULT_MARK) :])
            rec["worker_wall_seconds"] = round(wall, 1)
            return rec
    return {
        "side": side,
        **cfg,
        "error": (proc.stderr or proc.stdout)[-2000:],
        "returncode": proc.returncode,
    }


SIDE_NEEDS = {
    "flower": (
        "flwr",
        "Flower's side needs Flower in its own environment:\n"
        '    python -m venv /tmp/flwr-venv && /tmp/flwr-venv/bin/pip install "flwr==1.42.*" numpy\n'
        "then pass --flower-python /tmp/flwr-venv/bin/python (or time pyfkm's side alone: "
        "--sides pyfkm)",
    ),
    "pyfkm": ("pyfkm", "install pyfkm in it (pip install -e .) or name another --pyfkm-python"),
}


def _cannot_run(side: str, python: str) -> str | None:
    """Why ``python`` cannot run ``side``'s worker (None if it can import what it needs)."""
    module, how = SIDE_NEEDS[side]
    try:
        proc = subprocess.run(
            [python, "-c", f"import {module}, numpy"], capture_output=True, text=True
        )
    except OSError as e:
        return f"{python} does not run ({e}); {how}"
    if proc.returncode == 0:
        return None
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    return f"{python} cannot import {module} ({lines[-1] if lines else proc.returncode}); {how}"


def _fmt(rec: dict) -> str:
    if "error" in rec:
        return f"L={rec['L']} n={rec['n_neighbors']} ERROR {rec['error'][-300:]}"
    st = rec["client_stage_seconds"]
    srv = rec.get("server_seconds")
    srv_s = (
        f"{srv:.3f}"
        if srv is not None
        else f"skipped(~{rec.get('server_estimate_seconds')}s)"
    )
    return (
        f"L={rec['L']:5d} n={rec['neighbours']:4d} t={rec['threshold']:4d} "
        f"d={rec['vector_length']:5d} drop={rec['dropout']:.1f} | client "
        f"{rec['client_seconds']:.4f}s (a {st['a_setup']:.4f} b {st['b_share_keys']:.4f} "
        f"c {st['c_collect_masked']:.4f} d {st['d_unmask']:.5f}) x{rec['repeats']} "
        f"sent {rec['client_bytes_sent']}B | server {srv_s}"
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--flower-python",
        default=sys.executable,
        help="interpreter with flwr installed (default: this one)",
    )
    p.add_argument(
        "--pyfkm-python",
        default=sys.executable,
        help="interpreter with pyfkm importable (default: this one)",
    )
    p.add_argument(
        "--sides", nargs="+", default=["flower"], choices=["flower", "pyfkm"]
    )
    p.add_argument("--L", nargs="+", type=int, default=[100, 1000])
    p.add_argument(
        "--neighbours",
        nargs="+",
        default=["complete", "3", "log"],
        help="'complete' (L-1), 'log' (2*ceil(1.5*log2 L)) or an integer",
    )
    p.add_argument("--vector-lengths", nargs="+", type=int, default=[20, 2000])
    p.add_argument("--dropouts", nargs="+", type=float, default=[0.0, 0.1])
    p.add_argument("--reconstruct-frac", type=float, default=1.0)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--max-client-seconds",
        type=float,
        default=60.0,
        help="stop repeating once this much client CPU is spent",
    )
    p.add_argument("--server-budget-s", type=float, default=600.0)
    p.add_argument("--no-server", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument(
        "--append",
        action="store_true",
        help="add the records to those already in --out instead of replacing them",
    )
    p.add_argument("--worker", choices=["flower", "pyfkm"], help=argparse.SUPPRESS)
    p.add_argument("--config", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.worker:
        _worker(args)
        return 0

    for side in args.sides:
        why = _cannot_run(
            side, args.flower_python if side == "flower" else args.pyfkm_python
        )
        if why:
            sys.exit(f"compare_flower_secagg.py: {why}")
    grid = build_grid(args)
    for g in grid:
        g["reconstruct_frac"] = args.reconstruct_frac
    records: list[dict] = []
    commands = [" ".join(["python"] + sys.argv)]
    if args.append and args.out.exists():
        old = json.loads(args.out.read_text())
        records = old["records"]
        commands = old["meta"].get("commands", []) + commands
    meta = {
        "benchmark": "benchmarks/compare_flower_secagg.py",
        "commands": commands,
        "host": {"machine": platform.machine(), "cpus": os.cpu_count()},
        "timer": "time.process_time per stage (CPU of all threads), median over repeats",
        "date": time.strftime("%Y-%m-%d"),
        "flower_settings": {
            "clipping_range": CLIPPING_RANGE,
            "quantization_range": TARGET_RANGE,
            "modulus_range": MOD_RANGE,
            "max_weight": MAX_WEIGHT,
            "num_examples": NUM_EXAMPLES,
        },
    }
    for cfg in grid:
        for side in args.sides:
            python = args.flower_python if side == "flower" else args.pyfkm_python
            rec = _run_side(side, python, cfg, args)
            records.append(rec)
            print(_fmt(rec), flush=True)
            args.out.write_text(
                json.dumps({"meta": meta, "records": records}, indent=1) + "\n"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
