"""CPU time per DPFederatedKMeans iteration, masking and noise included.

One iteration = every client's assignment and radius-bounded relative sums,
fixed-point encoding and masking (ChaCha20 pairwise + output masks), all
messages serialized to bytes and parsed, the server's sum and discrete
Gaussian noise (ChaCha20 stream), every client's unmasking and the centroid
update.  Measured as (fit with T2 iterations - fit with T1 iterations) /
(T2 - T1), so key agreement and initialization are excluded; CPU time
(``time.process_time``), one thread, median of repeats, all in-process
(no network).

Data: k Gaussian blobs (sd 0.1) clipped to [-1, 1]^d, split evenly.

    PYTHONPATH=. python benchmarks/bench_dp_iteration.py [--quick]

The last block breaks the target configuration (n = 1e4, d = 10, k = 10,
2 clients) down into its parts.
"""
import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from pyfkm.federated import DPFederatedKMeans, _LocalData, _update_centers, step_radius
from pyfkm.secagg._messages import RoundMessage
from pyfkm.secagg._msa import AggregateMessage, MaskedVectorMessage, setup_msa


def data(n, d, k, seed=0):
    rng = np.random.default_rng(seed)
    means = rng.uniform(-0.7, 0.7, (k, d))
    return np.clip(means[rng.integers(0, k, n)] + rng.normal(0, 0.1, (n, d)), -1, 1)


def fit_time(clients, k, T):
    t = time.process_time()
    DPFederatedKMeans(k, epsilon=1.0, max_iter=T, random_state=0).fit(clients)
    return time.process_time() - t


def per_iteration(n, d, k, L, repeats, t1=2, t2=12):
    X = data(n, d, k)
    clients = np.array_split(X, L)
    diffs = []
    for _ in range(repeats):
        a = fit_time(clients, k, t1)
        b = fit_time(clients, k, t2)
        diffs.append((b - a) / (t2 - t1))
    return float(np.median(diffs))


def median_time(f, repeats):
    ts = []
    for _ in range(repeats):
        t = time.process_time()
        f()
        ts.append(time.process_time() - t)
    return float(np.median(ts))


def breakdown(n=10_000, d=10, k=10, L=2, reps=200):
    X = data(n, d, k)
    local = [_LocalData(a) for a in np.array_split(X, L)]
    C = np.random.default_rng(1).uniform(-0.7, 0.7, (k, d))
    eta = step_radius(1, k, d)
    vecs = [c.stats(C, eta, True) for c in local]
    server, msa = setup_msa(L, k * d + k, random_state=0)
    seg = ((k * d, 20.0, b"SUM"), (k, 5.0, b"CNT"))

    def stats():
        for c in local:
            c.stats(C, eta, True)

    def protocol():
        r = RoundMessage.from_bytes(server.start_round().to_bytes())
        for c, v in zip(msa, vecs):
            server.receive(MaskedVectorMessage.from_bytes(c.respond(r, v).to_bytes()))
        agg = AggregateMessage.from_bytes(server.finish_round(seg).to_bytes())
        return [c.unmask(agg) for c in msa]

    out = protocol()[0]

    def update():
        _update_centers(C, out[:k * d].reshape(k, d), out[k * d:], eta, True, (-1, 1), "fold")

    def noise_only():
        server._noise_words(1, seg)

    def masks_only():
        for c in msa:
            c.mask(1)

    parts = {"client stats (assign + radius + sums), all clients": stats,
             "MSA round (encode, mask, bytes, sum, noise, unmask)": protocol,
             "  of which: server noise": noise_only,
             "  of which: mask streams (all clients)": masks_only,
             "centroid update (clip + fold)": update}
    return {name: median_time(f, reps) for name, f in parts.items()}


def main(quick=False):
    ns = (10_000,) if quick else (10_000, 100_000)
    reps = 3 if quick else 5
    rows = []
    with threadpool_limits(1):
        print("CPU ms per iteration (median of %d), epsilon=1, discrete Gaussian noise" % reps)
        print(f"{'n':>7} {'d':>3} {'k':>3} {'clients':>7} {'ms/iter':>8}")
        for n in ns:
            for d in (2, 10, 50):
                for k in (2, 10):
                    for L in (2, 10):
                        ms = 1e3 * per_iteration(n, d, k, L, reps)
                        rows.append((n, d, k, L, ms))
                        print(f"{n:>7} {d:>3} {k:>3} {L:>7} {ms:>8.3f}", flush=True)
        target = [r for r in rows if r[:4] == (10_000, 10, 10, 2)][0][4]
        print(f"\ntarget n=1e4, d=10, k=10, 2 clients: {target:.3f} ms/iteration "
              f"(goal < 1 ms; reference FastLloyd ~4.5 ms)")
        print("\nbreakdown of the target configuration (CPU ms, median):")
        for name, s in breakdown().items():
            print(f"  {name:<56} {1e3 * s:7.3f}")
    return rows


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="n = 1e4 only, 3 repeats")
    main(p.parse_args().quick)
