"""Data, models and replays shared by the tests of pyfkm.deletion."""
import pickle

import numpy as np
import pytest

from pyfkm.deletion import _qlloyd
from oracles.forensics import patterns, search_everywhere
from _helpers.state import assert_same_state


def blobs(seed, n=600, d=3, k=4, spread=6.0):
    rng = np.random.default_rng(seed)
    means = rng.uniform(-spread, spread, size=(k, d))
    lab = rng.integers(0, k, size=n)
    return means[lab] + rng.normal(size=(n, d)), lab


def ref_mix(z):
    """SplitMix64 finalizer on uint64 arrays (numpy twin of the C mixer)."""
    M = np.uint64(0xFFFFFFFFFFFFFFFF)
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (z ^ (z >> np.uint64(31))) & M


def ref_expo(ids, key, step):
    """The race's Exp(1) keys of ``ids`` at ``step`` (numpy twin)."""
    with np.errstate(over="ignore"):
        h = ref_mix(ids.astype(np.uint64) * np.uint64(0x100000001B3) + np.uint64(step))
        h = ref_mix(h ^ np.uint64(key))
    return -np.log(((h >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53)


def q_position(model, i):
    """Row position of id ``i`` in the model's state."""
    s = model._state
    return s.order[np.searchsorted(s.ids_sorted, [i])]


def q_certified_ids(model, count):
    """The first alive ids whose deletions, one at a time in this order,
    are certified (found by deleting them from a copy)."""
    m, out = pickle.loads(pickle.dumps(model)), []
    for i in m.sample_ids_:
        if len(out) == count:
            break
        if _qlloyd._q_certify(m._state, q_position(m, i))[0] == "":
            assert m.remove([i]).reason == ""
            out.append(int(i))
    assert len(out) == count
    return out


class Injected(RuntimeError):
    pass


def proxy_qassign(orig, hook):
    class QAssignProxy:
        def __init__(self, *a):
            hook()
            self._qa = orig(*a)

        def step(self, *a):
            hook()
            return self._qa.step(*a)
    return QAssignProxy


def inject(mp, owner, name, fail_at, counter):
    """Patch ``owner.name`` to count its calls and raise Injected at call
    number ``fail_at`` (0: never)."""
    orig = getattr(owner, name)

    def hook():
        counter[0] += 1
        if counter[0] == fail_at:
            raise Injected(f"{name} call {fail_at}")

    if name == "QAssign":
        mp.setattr(owner, name, proxy_qassign(orig, hook))
        return

    def wrapper(*a, **kw):
        hook()
        return orig(*a, **kw)
    mp.setattr(owner, name, wrapper)


# what each operation must reach (so that the injection covers every stage)
MUST_REACH = {
    ("Q", "refit"): {"_q_fit", "race_seeding_dist", "QAssign", "quantize", "centers"},
    ("Q", "refit-generator"): {"as_generator", "_q_fit"},
    ("Q", "certified"): {"lookup", "_q_certify", "_q_certified", "_write_rows"},
    ("Q", "seed"): {"_q_retrained", "race_seeding_dist", "QAssign"},
    # a moved cell: the run replayed on the memo (issue 22), no retraining
    ("Q", "centroid"): {"_q_certify", "_q_replayed", "_q_cells", "_q_relabeled", "qrelabel",
                        "_q_assemble", "_write_rows"},
    ("Q", "compaction"): {"_q_certify", "_q_certified"},
    ("DC", "refit"): {"_dc_fit", "race_seeding_trace", "race_seeding", "lloyd_loop"},
    ("DC", "refit-generator"): {"as_generator", "_dc_leaf_fit"},
    ("DC", "one"): {"lookup", "remove", "_dc_leaf_fit", "_dc_node_fit", "_write_rows"},
    ("DC", "batch"): {"remove", "race_seeding_trace", "lloyd_loop", "_write_rows"},
    ("DC", "compaction"): {"_dc_deleted", "_dc_leaf_fit", "_dc_node_fit"},
}


def run_injections(kind, name, build, prep, call, targets, monkeypatch):
    twin = build()
    prep(twin)
    ref = build()
    prep(ref)
    call(ref)
    X, _ = blobs(21, n=240, spread=8)
    reached, n_failures = set(), 0
    for owner, target in targets:
        counter = [0]
        m = build()
        prep(m)
        with monkeypatch.context() as mp:
            inject(mp, owner, target, 0, counter)
            call(m)
        n_calls = counter[0]
        if n_calls == 0:
            continue
        reached.add(target)
        for fail_at in sorted({1, (n_calls + 1) // 2, n_calls}):
            m = build()
            prep(m)
            counter = [0]
            with monkeypatch.context() as mp:
                inject(mp, owner, target, fail_at, counter)
                with pytest.raises(Injected):
                    call(m)
            n_failures += 1
            assert_same_state(m, twin, f"{kind} {name}: {target} #{fail_at}")
            np.testing.assert_array_equal(m.predict(X), twin.predict(X))
            call(m)  # now for real: as on a model that never failed
            assert_same_state(m, ref, f"{kind} {name}: {target} #{fail_at}, then")
    missing = MUST_REACH[kind, name] - reached
    assert not missing, f"{kind} {name} never reached {missing}"
    # every reached target failed at its first, middle and last calls (where
    # they differ; the certification calls each of its steps once)
    assert n_failures >= len(reached)


# --------------------------------------------------------- issue 18: erasure

def f64(values):
    return [np.float64(v).tobytes() for v in np.ravel(values)]


def erasure_check(model, X, deleted, kept):
    """No byte pattern of a deleted row's values anywhere in the model or
    its pickle; patterns of retained rows are found in both."""
    gone = search_everywhere(model, patterns(X[deleted]))
    assert gone == {"object": [], "pickle": []}, gone
    here = search_everywhere(model, patterns(X[kept]))
    assert here["object"]
    # the rows are stored as float64: all their float64 patterns are found
    assert set(here["pickle"]) >= set(f64(X[kept]))
