"""Per-client cost of one secure round as the number of clients grows.

Runs real rounds of pyfkm's roles in process (every message through its
bytes) and charges each call to the party that makes it, in CPU seconds
(``time.process_time``), so a client's cost is what one device would spend:

* ``setup``: the run's key message and roster (once per run);
* ``share``: step 1 (fresh round key and self seed, Shamir shares, AEAD);
* ``keys``: step 2 (decrypt the neighbours' shares, X25519 pair keys);
* ``mask``: expanding the self and pair streams (the part that grows with
  the neighbour count times the message length);
* ``input``: encoding and adding the mask (the message itself);
* ``unmask``: step 4 (the shares it reveals) -- and, for MSA, removing
  the survivors' output masks from the broadcast.

Bytes per client: everything a client sends and receives in the round
(round message, its share bundle, input request, unmask request, and its
own share, input and unmask messages), plus the run's roster separately.

Protocols: ``msa`` (a real vector of ``--words`` 64-bit words, the FastLloyd
path; comparable to Flower's SecAgg+ vector), and ``scma`` (MUFC's sparse
counts: each client two bins, ``M = 2 L``, so the message grows with L).

Examples::

    python benchmarks/bench_secagg_scale.py --clients 100 1000 --graph complete sparse \
        --dropout 0 0.1 --protocol msa --words 20 --json out.json
    python benchmarks/bench_secagg_scale.py --fit1000     # FederatedKMeans, 1000 x 2 points
    python benchmarks/bench_secagg_scale.py --removals    # MUFC removals at 100 clients
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
from _timing import call, call_cpu_wall

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from pyfkm._progress import progress_bar  # noqa: E402
from pyfkm.exceptions import ProtocolError  # noqa: E402
from pyfkm.secagg import (InputRequest, KeyMessage, MsaClient, MsaRosterMessage,  # noqa: E402
                          MsaServer, RosterMessage, RoundMessage, ScmaClient, ScmaParams,
                          ScmaServer, ShareBundle, ShareMessage, SyndromeMessage,
                          UnmaskMessage, UnmaskRequest)
from pyfkm.secagg import (AggregateMessage, GroupKeyMessage,  # noqa: E402
                          MaskedVectorMessage)


def auto_degree(L):
    """The sparse graph's degree of FederatedKMeans's "auto"; 0 (the complete graph, which
    "auto" is up to 64 clients) where it has none."""
    from pyfkm.mufc.aggregation import resolve_neighbors
    return resolve_neighbors("auto", L)


class Meter:
    def __init__(self, ids):
        self.t = {i: {} for i in ids}
        self.b = {i: 0 for i in ids}

    def run(self, i, stage, f, *a):
        """Call f(*a) and charge its CPU seconds to party i's stage."""
        dt, out = call(lambda: f(*a))
        self.t[i][stage] = self.t[i].get(stage, 0.0) + dt
        return out

    def server(self, stage, f, *a):
        return self.run("server", stage, f, *a)


def one_round(protocol, L, degree, drop_frac, words, progress=False, seed=0):
    rng = np.random.default_rng(seed)
    ids = list(range(L))
    m = Meter(ids + ["server"])
    rid = os.urandom(16)
    silent = set(rng.choice(L, size=int(round(drop_frac * L)), replace=False).tolist())
    if protocol == "scma":
        M = 2 * L
        P = ScmaParams.create(2, 1000, M)
        server = ScmaServer(P, degree=degree)
        clients = [ScmaClient(i) for i in ids]
        rid = P.run_id
        data = [(rng.integers(0, 1000, (2, 2)), [1, 1]) for _ in ids]
    else:
        server = MsaServer(rid, words, degree=degree)
        clients = [MsaClient(i) for i in ids]
        data = [rng.uniform(-1, 1, words) for _ in ids]
    bar = progress_bar(progress, 5 * L, f"{protocol} L={L} k={degree or 'all'}")
    for c in clients:
        km = m.run(c.client_id, "setup", c.key_message, rid).to_bytes()
        m.b[c.client_id] += len(km)
        m.server("setup", server.receive_key, KeyMessage.from_bytes(km))
    raw = server.roster().to_bytes()
    roster_cls = RosterMessage if protocol == "scma" else MsaRosterMessage
    for c in clients:
        m.run(c.client_id, "setup", c.receive_roster, roster_cls.from_bytes(raw))
    roster_bytes = len(raw)
    if protocol == "msa":
        gk = m.run(0, "setup", clients[0].group_key_messages)
        for g in gk:
            server.relay_group_key(GroupKeyMessage.from_bytes(g.to_bytes()))
        for c in clients[1:]:
            g = server.group_key_for(c.client_id).to_bytes()
            m.run(c.client_id, "setup", c.receive_group_key, GroupKeyMessage.from_bytes(g))
    if protocol == "scma":
        for c, (b, q) in zip(clients, data):
            c.set_data(b, q)
    # step 1
    rm = m.server("round", server.start_round).to_bytes()
    for c in clients:
        m.b[c.client_id] += len(rm)
        out = m.run(c.client_id, "share", c.share_keys, RoundMessage.from_bytes(rm)).to_bytes()
        m.b[c.client_id] += len(out)
        m.server("round", server.receive_shares, ShareMessage.from_bytes(out))
        bar.update()
    # step 2
    for c in clients:
        bd = m.server("round", server.bundle, c.client_id).to_bytes()
        m.b[c.client_id] += len(bd)
        m.run(c.client_id, "keys", c.receive_shares, ShareBundle.from_bytes(bd))
        bar.update()
    # step 3
    req = m.server("round", server.request_inputs).to_bytes()
    for c, x in zip(clients, data):
        bar.update()
        if c.client_id in silent:
            continue
        m.b[c.client_id] += len(req)
        r = InputRequest.from_bytes(req)
        if protocol == "scma":
            m.run(c.client_id, "mask", c.precompute_mask)
            out = m.run(c.client_id, "input", c.respond, r).to_bytes()
            m.b[c.client_id] += len(out)
            m.server("round", server.receive, SyndromeMessage.from_bytes(out))
        else:
            # MSA's respond computes its mask inside: time the mask alone on
            # the side (the same streams) and charge respond minus it
            tm, _ = call(lambda: c.mask(r.round))
            out = m.run(c.client_id, "input", c.respond, r, x).to_bytes()
            m.t[c.client_id]["input"] -= tm
            m.t[c.client_id]["mask"] = tm
            m.b[c.client_id] += len(out)
            m.server("round", server.receive, MaskedVectorMessage.from_bytes(out))
    # step 4
    ur = m.server("round", server.unmask_request).to_bytes()
    ureq = UnmaskRequest.from_bytes(ur)
    for c in clients:
        bar.update()
        if c.client_id not in ureq.survivors:
            continue
        m.b[c.client_id] += len(ur)
        f = c.unmask if protocol == "scma" else c.unmask_shares
        out = m.run(c.client_id, "unmask", f, ureq).to_bytes()
        m.b[c.client_id] += len(out)
        m.server("round", server.receive_unmask, UnmaskMessage.from_bytes(out))
    res = m.server("round", server.finish_round)
    if protocol == "msa":
        agg = res.to_bytes()
        for c in clients:
            bar.update()
            if c.client_id in ureq.survivors:
                m.b[c.client_id] += len(agg)
                got = m.run(c.client_id, "unmask", c.unmask, AggregateMessage.from_bytes(agg))
        want = np.sum([x for i, x in enumerate(data) if i not in silent], axis=0)
        ok = bool(np.allclose(got, want, atol=L * 2.0 ** -16))
    else:
        want = {}
        for i, (b, q) in enumerate(data):
            if i in silent:
                continue
            for row, v in zip(b.tolist(), q):
                want[tuple(row)] = want.get(tuple(row), 0) + v
        ok = want == {tuple(r): int(v) for r, v in zip(res.bins.tolist(), res.counts.tolist())}
    bar.close()
    stages = ["share", "keys", "mask", "input", "unmask"]
    per = {s: statistics.median(m.t[i].get(s, 0.0) for i in ids if i not in silent)
           for s in stages}
    per_round = statistics.median(sum(m.t[i].get(s, 0.0) for s in stages)
                                  for i in ids if i not in silent)
    mask_work = statistics.median(sum(m.t[i].get(s, 0.0) for s in ("share", "keys", "mask",
                                                                     "unmask"))
                                  for i in ids if i not in silent)
    return {"protocol": protocol, "L": L, "degree": degree or L - 1,
            "graph": "complete" if degree == 0 else "sparse",
            "threshold": server.roster().threshold, "dropout": drop_frac,
            "words": words if protocol == "msa" else P.message_words,
            "exact": ok,
            "client_setup_s": statistics.median(m.t[i].get("setup", 0.0) for i in ids),
            "client_round_s": per_round, "client_mask_work_s": mask_work,
            "client_message_s": per["input"], "client_stages_s": per,
            "client_bytes_round": statistics.median(m.b[i] for i in ids if i not in silent),
            "roster_bytes": roster_bytes,
            "server_round_s": m.t["server"].get("round", 0.0)}


def fit1000(L=1000):
    from pyfkm import FederatedKMeans
    rng = np.random.default_rng(0)
    clients = [rng.uniform(-0.5, 0.5, (2, 2)) for _ in range(L)]
    cpu, wall, f = call_cpu_wall(
        lambda: FederatedKMeans(3, random_state=0, progress=True).fit(clients))
    return {"what": f"FederatedKMeans(3).fit({L} clients x 2 points)", "wall_s": wall,
            "cpu_s": cpu, "stages_s": f.fit_seconds_, "bytes": f.bytes_sent_}


def removals(L=100, n=30000, n_removals=40):
    """Online / offline / wall time of single-point removals (secure MUFC,
    Gaussian mixture n x 10, K = 10, non-iid over L clients)."""
    from pyfkm import FederatedKMeans
    from pyfkm.datasets import make_gaussian_mixture, split_non_iid
    X, y, _ = make_gaussian_mixture(n, 10, 10, random_state=0)
    parts = split_non_iid(X, y, L, 3, random_state=0)
    f = FederatedKMeans(10, server_points="centers", random_state=0).fit([X[p] for p in parts])
    rng = np.random.default_rng(1)
    on, off, wall = [], [], []
    for _ in range(n_removals):
        c = int(rng.integers(L))
        alive = np.flatnonzero(~f._clients[c].removed_)
        t, r = call(lambda: f.remove(c, int(rng.choice(alive))), clock="wall")
        wall.append(t)
        on.append(r.client_seconds + r.aggregation_seconds + r.server_seconds)
        off.append(r.offline_seconds)
    return {"what": f"FederatedKMeans.remove, L={L}, n={n}", "online_median_s": float(
        np.median(on)), "offline_median_s": float(np.median(off)),
        "wall_median_s": float(np.median(wall))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--graph", nargs="+", default=["complete", "sparse"],
                    help="complete, sparse (FederatedKMeans's auto) or an even degree")
    ap.add_argument("--dropout", type=float, nargs="+", default=[0.0, 0.1])
    ap.add_argument("--protocol", nargs="+", default=["msa"], choices=["msa", "scma"])
    ap.add_argument("--words", type=int, nargs="+", default=[20])
    ap.add_argument("--fit1000", action="store_true")
    ap.add_argument("--removals", action="store_true",
                    help="time single-point removals of a 100-client secure model")
    ap.add_argument("--json")
    ap.add_argument("--no-progress", action="store_true")
    a = ap.parse_args(argv)
    rows = []
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "date": time.strftime("%Y-%m-%d")}
    if a.fit1000 or a.removals:
        r = fit1000() if a.fit1000 else removals()
        print(json.dumps(r))
        rows.append(r)
    else:
        for proto in a.protocol:
            for L in a.clients:
                for g in a.graph:
                    deg = 0 if g == "complete" else auto_degree(L) if g == "sparse" else int(g)
                    for dr in a.dropout:
                        for w in (a.words if proto == "msa" else [0]):
                            try:
                                r = one_round(proto, L, deg, dr, w,
                                              progress=not a.no_progress)
                            except ProtocolError as e:   # too many dropouts for the graph
                                r = {"protocol": proto, "L": L, "degree": deg or L - 1,
                                     "dropout": dr, "words": w, "failed": str(e)}
                            r.update(meta)
                            print(json.dumps(r), flush=True)
                            rows.append(r)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
