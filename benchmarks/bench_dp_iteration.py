"""CPU time per DPFederatedKMeans iteration, masking and noise included.

One iteration = every client's assignment and radius-bounded relative sums,
then one secure-aggregation round: every client fixed-point encodes its
sums, adds its share of the distributed discrete Gaussian noise (ChaCha20
stream under a fresh OS key) and masks them (self, pairwise and output
ChaCha20 streams, HMAC tag); the server checks the tags, reconstructs the
self seeds from the unmask answers and removes the self masks; every client
removes the output masks and updates the centroids.  Each round has its own
fresh round key and self seed per client (X25519, HKDF), drawn and
Shamir-shared (ChaCha20-Poly1305) for all the fit's rounds in one key batch
at the start (issue 22); a fit of T2 rounds draws T2 - T1 more rounds' keys
than one of T1, so that work counts in the iteration.  All messages are
serialized to bytes and parsed.  Measured as (fit with T2 iterations - fit
with T1 iterations) / (T2 - T1), so key agreement and initialization are
excluded; CPU time (``time.process_time``), one thread, median of repeats,
all in-process (no network).

Data: k Gaussian blobs (sd 0.1) clipped to [-1, 1]^d, split evenly.

    PYTHONPATH=. python benchmarks/bench_dp_iteration.py [--quick] [--repeats R] [--target]

The last block breaks the target configuration (n = 1e4, d = 10, k = 10,
2 clients) down into its parts.  ``--repeats 11`` gives the median of 11
runs of the acceptance line ("under 1 ms"); ``--target`` measures that
configuration (and its breakdown) only.
"""
import argparse

import numpy as np
from _timing import interleave, measure, single_thread

from pyfkm.dp import DPFederatedKMeans, step_radius
from pyfkm.dp._lloyd_base import _LocalData
from pyfkm.dp.steps import _update_centers
from pyfkm.secagg._messages import InputRequest, RoundMessage, ShareBundle, ShareMessage
from pyfkm.secagg import msa_round, setup_msa
from pyfkm.secagg.msa import MAX_BATCH, msa_key_batch
from pyfkm.secagg.msa._fixed import encoding_limit
from pyfkm.secagg.msa._noise import client_noise


def data(n, d, k, seed=0):
    rng = np.random.default_rng(seed)
    means = rng.uniform(-0.7, 0.7, (k, d))
    return np.clip(means[rng.integers(0, k, n)] + rng.normal(0, 0.1, (n, d)), -1, 1)


def per_iteration(n, d, k, L, repeats, t1=2, t2=12):
    """Median over repeats of (fit with t2 iterations - fit with t1) / (t2 - t1), the two
    fits of a repeat run one after the other."""
    X = data(n, d, k)
    clients = np.array_split(X, L)

    def fit(T):
        return lambda: DPFederatedKMeans(k, epsilon=1.0, max_iter=T, random_state=0).fit(clients)

    r = interleave({"a": fit(t1), "b": fit(t2)}, repeats)
    return float(np.median([(b - a) / (t2 - t1)
                            for a, b in zip(r["a"].samples, r["b"].samples)]))


def _open_round(server, clients):
    """Steps 1-2 of a round (key sharing); the input request."""
    r = RoundMessage.from_bytes(server.start_round().to_bytes())
    for c in clients:
        server.receive_shares(ShareMessage.from_bytes(c.share_keys(r).to_bytes()))
    for c in clients:
        c.receive_shares(ShareBundle.from_bytes(server.bundle(c.client_id).to_bytes()))
    return InputRequest.from_bytes(server.request_inputs().to_bytes())


def breakdown(n=10_000, d=10, k=10, L=2, reps=200):
    X = data(n, d, k)
    local = [_LocalData(a) for a in np.array_split(X, L)]
    C = np.random.default_rng(1).uniform(-0.7, 0.7, (k, d))
    eta = step_radius(1, k, d)
    vecs = [c.stats(C, eta, True) for c in local]
    n_words = k * d + k
    server, msa = setup_msa(L, n_words)
    seg = ((k * d, 20.0, b"SUM"), (k, 5.0, b"CNT"))
    threshold = server.roster().threshold
    limit = encoding_limit(2 * L)

    def stats():
        for c in local:
            c.stats(C, eta, True)

    # the estimator's path: the rounds' keys came in a key batch
    msa_key_batch(server, msa, MAX_BATCH)

    def protocol():
        return msa_round(server, msa, vecs, noise=seg)[0]

    out = protocol()
    bserver, bclients = setup_msa(L, n_words)

    def key_batch():        # 10 rounds' keys in one flight
        msa_key_batch(bserver, bclients, 10)

    kserver, kclients = setup_msa(L, n_words)

    def update():
        _update_centers(C, out[:k * d].reshape(k, d), out[k * d:], eta, True, (-1, 1), "fold")

    def key_sharing():
        _open_round(kserver, kclients)

    def noise_only():
        for _ in msa:
            client_noise(seg, n_words, threshold, 16, 1, limit)

    # masks of an open round of a second run (mask() is a pure function of
    # the round's keys)
    mserver, mclients = setup_msa(L, n_words)
    mreq = _open_round(mserver, mclients)

    def masks_only():
        for c in mclients:
            c.mask(mreq.round)

    parts = {"client stats (assign + radius + sums), all clients": stats,
             "MSA round of a key batch (encode, noise, mask, bytes, unmask)": protocol,
             "  of which: noise shares (all clients)": noise_only,
             "  of which: mask streams (all clients)": masks_only,
             "key batch, per round (keys, shares of 10 rounds / 10)": key_batch,
             "centroid update (clip + fold)": update,
             "(round-by-round key sharing, steps 1-2, for comparison)": key_sharing}
    out = {name: measure(f, repeat=reps).median for name, f in parts.items()}
    out["key batch, per round (keys, shares of 10 rounds / 10)"] /= 10
    return out


def main(quick=False, repeats=None, target_only=False):
    ns = (10_000,) if quick or target_only else (10_000, 100_000)
    reps = repeats if repeats is not None else 3 if quick else 5
    rows = []
    with single_thread():
        print(f"CPU ms per iteration (median of {reps}), epsilon=1, distributed discrete "
              "Gaussian noise")
        print(f"{'n':>7} {'d':>3} {'k':>3} {'clients':>7} {'ms/iter':>8}")
        for n in ns:
            for d in (10,) if target_only else (2, 10, 50):
                for k in (10,) if target_only else (2, 10):
                    for L in (2,) if target_only else (2, 10):
                        ms = 1e3 * per_iteration(n, d, k, L, reps)
                        rows.append((n, d, k, L, ms))
                        print(f"{n:>7} {d:>3} {k:>3} {L:>7} {ms:>8.3f}", flush=True)
        target = next(r for r in rows if r[:4] == (10_000, 10, 10, 2))[4]
        print(f"\ntarget n=1e4, d=10, k=10, 2 clients: {target:.3f} ms/iteration "
              f"(goal < 1 ms; reference FastLloyd ~4.5 ms)")
        print("\nbreakdown of the target configuration (CPU ms, median):")
        for name, s in breakdown().items():
            print(f"  {name:<62} {1e3 * s:7.3f}")
    return rows


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="n = 1e4 only, 3 repeats")
    p.add_argument("--repeats", type=int, default=None,
                   help="repeats per configuration (median; default 3 with --quick, else 5)")
    p.add_argument("--target", action="store_true",
                   help="only the target configuration (n=1e4, d=10, k=10, 2 clients)")
    a = p.parse_args()
    if a.repeats is not None and a.repeats < 1:
        p.error("--repeats must be >= 1")
    main(a.quick, a.repeats, a.target)
