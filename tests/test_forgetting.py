"""Issue 18: forgetting erases, state cannot be corrupted.

FederatedKMeans and RemovableSeeding: no removed value survives a removal
(object graph, pickle, saved file), tampered saved files only raise
PyfkmError (never crash C or leak raw exceptions), a call that fails changes
nothing, concurrent removals stay consistent, pickles round-trip exactly.
"""
import copy
import io
import json
import pickle
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyfkm
import pyfkm.mufc.aggregation as mufc_aggregation
import pyfkm.mufc.client as mufc_client
import pyfkm.mufc.estimator as mufc
import pyfkm.mufc.server as mufc_server
from pyfkm import FederatedKMeans, ModelFileError, PyfkmError, RemovableSeeding
from pyfkm._core import _seeding
from pyfkm.exceptions import ProtocolError

from oracles.forensics import patterns, search_file, search_object, search_pickle
from _helpers.mufc import assert_same_fit as _assert_same, fitted_state as _state
from _helpers.saved import read_saved as _read, write_saved as _write


def _clients(seed=0, sizes=(60, 50, 70, 40), d=3):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-0.5, 0.5, size=(n, d)) for n in sizes]


def _fit(seed=0, **kw):
    kw.setdefault("server_points", "centers")
    kw.setdefault("n_init", 2)
    return FederatedKMeans(4, random_state=seed, **kw).fit(_clients(seed))


def _center_id(model, client):
    """A client row that is one of its seeding centers (removing it reseeds)."""
    c = model._clients[client]
    return int(c._active[c._seeding.center_ids_[1]])


def _non_center_id(model, client):
    c = model._clients[client]
    centers = set(c._active[c._seeding.center_ids_].tolist())
    return next(i for i in np.flatnonzero(~c.removed_).tolist() if i not in centers)


# -- errors first: tampered and damaged files ----------------------------------

def _saved(tmp_path, **kw):
    m = _fit(**kw)
    m.remove(0, [_non_center_id(m, 0)])
    m.remove_clients([3])
    path = tmp_path / "m.npz"
    m.save(path)
    return m, path


def test_truncated_and_non_zip_files_raise_model_file_error(tmp_path):
    _, path = _saved(tmp_path)
    data = path.read_bytes()
    for cut in (0, 10, 100, len(data) // 2, len(data) - 1):
        p = tmp_path / f"cut{cut}.npz"
        p.write_bytes(data[:cut])
        with pytest.raises(ModelFileError):
            FederatedKMeans.load(p)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip at all" * 10)
    with pytest.raises(ModelFileError, match="not an npz"):
        FederatedKMeans.load(junk)
    with pytest.raises(ModelFileError, match="cannot read"):
        FederatedKMeans.load(tmp_path / "missing.npz")


def test_labels_out_of_range_are_refused_before_any_removal(tmp_path):
    """The issue's crash: c0.s.labels[0] = -1 or 10**8 loaded silently and
    the next remove wrote outside its buffer."""
    _, path = _saved(tmp_path)
    head, arrays = _read(path)
    for value in (-1, 10**8, 4, 3):
        bad = dict(arrays)
        lab = arrays["c0.s.labels"].copy()
        lab[np.flatnonzero(lab >= 0)[0]] = value if value != 3 else (lab.max() + 1) % 4
        bad["c0.s.labels"] = lab
        _write(tmp_path / "bad.npz", head, bad)
        with pytest.raises(ModelFileError, match="labels|counts|center"):
            FederatedKMeans.load(tmp_path / "bad.npz")


@pytest.mark.parametrize("field, value, match", [
    ("s.centers", np.nan, "NaN"),
    ("s.counts", -1, "positive"),
    ("c1.X", 0.75, "box"),
    ("c0.active", 10**8, "active"),
])
def test_inconsistent_fields_are_named(tmp_path, field, value, match):
    _, path = _saved(tmp_path)
    head, arrays = _read(path)
    a = arrays[field].astype(np.float64 if isinstance(value, float) else arrays[field].dtype)
    a.flat[-1] = value
    arrays[field] = a
    _write(tmp_path / "bad.npz", head, arrays)
    with pytest.raises(ModelFileError, match=match):
        FederatedKMeans.load(tmp_path / "bad.npz")


def test_swapped_client_arrays_and_foreign_generators_are_refused(tmp_path):
    _, path = _saved(tmp_path)
    head, arrays = _read(path)
    swapped = dict(arrays)
    swapped["c0.X"], swapped["c1.X"] = arrays["c1.X"], arrays["c0.X"]
    _write(tmp_path / "swap.npz", head, swapped)
    with pytest.raises(ModelFileError):
        FederatedKMeans.load(tmp_path / "swap.npz")
    # a bit-generator name is never looked up: np.random.seed must not run
    h = json.loads(json.dumps(head))
    h["clients"][0]["rng"]["bit_generator"] = "seed"
    _write(tmp_path / "gen.npz", h, arrays)
    with pytest.raises(ModelFileError, match="bit generator"):
        FederatedKMeans.load(tmp_path / "gen.npz")


def test_small_file_cannot_make_load_allocate_much(tmp_path):
    """An array header announcing 1.5 GiB inside a small file is refused
    from the header, before anything of that size is allocated."""
    _, path = _saved(tmp_path)
    head, arrays = _read(path)
    _write(tmp_path / "ok.npz", head, arrays)
    import zipfile
    big = tmp_path / "big.npz"
    with zipfile.ZipFile(tmp_path / "ok.npz") as zin, \
            zipfile.ZipFile(big, "w", compression=zipfile.ZIP_DEFLATED) as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name == "c0.X.npy":
                hdr = np.lib.format.header_data_from_array_1_0(np.zeros((1, 3)))
                hdr["shape"] = (64_000_000, 3)      # 1.5 GiB of float64
                b = io.BytesIO()
                np.lib.format.write_array_header_1_0(b, hdr)
                data = b.getvalue() + bytes(1_000_000)
            zout.writestr(name, data)
    assert big.stat().st_size < 200_000
    with pytest.raises(ModelFileError, match="announces|max_bytes"):
        FederatedKMeans.load(big)
    with pytest.raises(ModelFileError, match="max_bytes"):
        FederatedKMeans.load(tmp_path / "ok.npz", max_bytes=100)


_SWEEP = textwrap.dedent("""
    import io, json, sys, zipfile
    import numpy as np
    import pyfkm
    from pyfkm import FederatedKMeans, PyfkmError

    path, K = sys.argv[1], int(sys.argv[2])
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = arrays.pop("header")
    X = np.random.default_rng(5).uniform(-0.5, 0.5, size=(20, 3))
    stats = {"cases": 0, "refused": 0, "loaded": 0, "bad": []}

    def run(buf, what):
        stats["cases"] += 1
        try:
            m = FederatedKMeans.load(buf)
        except PyfkmError:
            stats["refused"] += 1
            return
        except Exception as e:
            stats["bad"].append(f"{what}: load: {type(e).__name__}: {e}")
            return
        stats["loaded"] += 1
        for op in (lambda: m.remove(0, [1]), lambda: m.predict(X),
                   lambda: m.remove(0, [int(np.flatnonzero(~m._clients[0].removed_)[-1])]),
                   lambda: m.remove_clients([1])):
            try:
                op()
            except PyfkmError:
                pass
            except Exception as e:
                stats["bad"].append(f"{what}: use: {type(e).__name__}: {e}")

    def write(arrs):
        b = io.BytesIO()
        np.savez(b, header=header, **arrs)
        p = path + ".t.npz"
        open(p, "wb").write(b.getvalue())
        return p

    for name, a in arrays.items():
        if a.size == 0:
            continue
        idx = [0, a.size // 2, a.size - 1]
        if a.dtype.kind == "f":
            values = [np.nan, np.inf, 1e300]
        else:
            values = [-1, 10**8, K]
        for i in sorted(set(idx)):
            for v in values:
                b = a.copy()
                if a.dtype.kind in "biu" and not (np.iinfo(np.int64).min <= v
                                                 and (a.dtype.kind == "b" or
                                                      np.can_cast(np.min_scalar_type(v), a.dtype))):
                    b = b.astype(np.int64)
                b.flat[i] = v
                run(write(dict(arrays, **{name: b})), f"{name}[{i}]={v}")
    data = open(path, "rb").read()
    for cut in np.linspace(1, len(data) - 1, 25).astype(int).tolist():
        p = path + ".c.npz"
        open(p, "wb").write(data[:cut])
        run(p, f"truncated at {cut}")
    print(json.dumps(stats))
""")


@pytest.mark.slow
@pytest.mark.parametrize("server_points", ["centers", "uniform"])
def test_tampered_files_never_crash_or_leak_raw_exceptions(tmp_path, server_points):
    """Each integer array of a saved model with one entry set to -1, 10**8
    or n_clusters, float arrays set to NaN/inf/1e300, truncated files: load +
    remove + predict in a subprocess (a C memory error would kill it) give
    PyfkmError or work, nothing else."""
    _, path = _saved(tmp_path, server_points=server_points)
    out = subprocess.run([sys.executable, "-c", _SWEEP, str(path), "4"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    stats = json.loads(out.stdout.strip().splitlines()[-1])
    assert stats["bad"] == []
    assert stats["cases"] > 150 and stats["refused"] > 0.8 * stats["cases"]


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_files_raise_only_pyfkm_errors(tmp_path_factory, data):
    """Hypothesis mutates a saved file's bytes (overwrite, insert, delete,
    truncate) and its arrays' entries; load and use raise PyfkmError or work."""
    tmp = tmp_path_factory.mktemp("fuzz")
    path = _FUZZ_BASE.setdefault("path", None)
    if path is None:
        _, path = _saved(tmp_path_factory.mktemp("base"))
        _FUZZ_BASE["path"] = path
        _FUZZ_BASE["bytes"] = path.read_bytes()
    raw = bytearray(_FUZZ_BASE["bytes"])
    kind = data.draw(st.sampled_from(["overwrite", "insert", "delete", "entry"]))
    if kind == "entry":
        head, arrays = _read(path)
        name = data.draw(st.sampled_from(sorted(k for k, a in arrays.items() if a.size)))
        a = arrays[name].astype(np.float64) if arrays[name].dtype.kind == "f" \
            else arrays[name].astype(np.int64)
        i = data.draw(st.integers(0, a.size - 1))
        a.flat[i] = data.draw(st.sampled_from([-1, 0, 1, 2, 3, 4, 10**8, -10**12])) \
            if a.dtype.kind == "i" else data.draw(st.floats(allow_nan=True, allow_infinity=True))
        arrays[name] = a
        _write(tmp / "m.npz", head, arrays)
    else:
        pos = data.draw(st.integers(0, len(raw) - 1))
        if kind == "overwrite":
            raw[pos] = data.draw(st.integers(0, 255))
        elif kind == "insert":
            raw[pos:pos] = data.draw(st.binary(min_size=1, max_size=16))
        else:
            del raw[pos:pos + data.draw(st.integers(1, 64))]
        (tmp / "m.npz").write_bytes(bytes(raw))
    try:
        m = FederatedKMeans.load(tmp / "m.npz")
    except PyfkmError:
        return
    for op in (lambda: m.remove(0, [2]), lambda: m.predict(np.zeros((3, 3))),
               lambda: m.remove_clients([2])):
        try:
            op()
        except PyfkmError:
            pass


_FUZZ_BASE = {}


def test_seeding_from_state_refuses_bad_state():
    X = np.random.default_rng(0).normal(size=(30, 2))
    s = RemovableSeeding(X, 3, random_state=0)
    good = s._state.export_state()
    Xs = s._state.X
    gen = np.random.default_rng(1)
    _seeding.SeedingState.from_state(Xs, None, 3, gen, good)          # accepted
    cases = {"labels": [(0, -1), (0, 3), (0, 10**8)], "removed": [(5, 2)],
             "centers": [(0, -1), (0, 30), (1, int(good["centers"][0]))],
             "counts": [(0, 0)], "mind": [(0, np.nan), (0, -1.0)]}
    for name, edits in cases.items():
        for i, v in edits:
            st_ = {k: (a.copy() if isinstance(a, np.ndarray) else a) for k, a in good.items()}
            arr = st_[name].astype(np.float64 if name == "mind" else np.int64)
            arr[i] = v
            st_[name] = arr
            with pytest.raises(ValueError, match="seeding state"):
                _seeding.SeedingState.from_state(Xs, None, 3, gen, st_)
    with pytest.raises(ValueError, match="n_clusters"):
        _seeding.SeedingState.from_state(Xs, None, 31, gen, good)


# -- erasure -------------------------------------------------------------------

def _check_erased(obj, removed_rows, kept_rows, saved=None):
    gone, kept = patterns(removed_rows), patterns(kept_rows)
    assert search_object(obj, gone) == []
    assert search_pickle(obj, gone) == []
    assert search_object(obj, kept) != []          # the search does find data
    assert search_pickle(obj, kept) != []
    if saved is not None:
        assert search_file(saved, gone) == []
        assert search_file(saved, kept) != []


def test_removable_seeding_erases_removed_rows_and_copies_its_input():
    X = np.random.default_rng(3).normal(size=(200, 4))
    s = RemovableSeeding(X, 5, random_state=0)
    X_before = X.copy()
    centre = int(s.center_ids_[2])
    others = [i for i in range(200) if i not in set(s.center_ids_.tolist())][:10]
    s.remove(others)
    s.remove(centre)                          # a reseed
    np.testing.assert_array_equal(X, X_before)  # the caller's array is untouched
    gone = [centre] + others
    kept = [i for i in range(200) if i not in gone][:20]
    Xr, Xk = X[gone], X[kept]
    del X, X_before
    _check_erased(s, Xr, Xk)


@pytest.mark.parametrize("server_points", ["centers", "uniform"])
@pytest.mark.parametrize("client_init", ["k-means++", "means"])
def test_federated_removal_erases_points_and_departed_clients(tmp_path, server_points,
                                                               client_init):
    data = _clients(7)
    m = FederatedKMeans(4, server_points=server_points, client_init=client_init, n_init=2,
                        random_state=7).fit(data)
    c = _center_id(m, 2)
    nc = _non_center_id(m, 2)
    m.remove(2, [c])                          # a center: the client reseeds
    m.remove(2, [nc, (nc + 1) % 70 if (nc + 1) % 70 != c else (nc + 2) % 70])
    removed2 = np.flatnonzero(m._clients[2].removed_)
    assert removed2.size == 3
    m.remove_clients([1])                     # client 1 leaves
    path = tmp_path / "m.npz"
    m.save(path)
    gone = np.vstack([data[2][removed2], data[1]])
    kept = np.vstack([data[0][:5], data[3][:5]])
    del data
    _check_erased(m, gone, kept, saved=path)
    assert m.client_centers_[1].shape == (0, 3) and m._clients[1] is None
    m2 = FederatedKMeans.load(path)
    _check_erased(m2, gone, kept)


def test_old_files_are_erased_when_read(tmp_path):
    """A version-2 file still holding removed rows and a departed client's
    array loads into a model that holds neither."""
    data = _clients(9)
    m = _fit(9)
    m.remove(0, [5])
    m.remove_clients([2])
    m.save(tmp_path / "m.npz")
    head, arrays = _read(tmp_path / "m.npz")
    head["version"] = 2
    arrays["c0.X"] = data[0].copy()                 # what version 2 wrote
    arrays["c2.X"] = data[2].copy()
    head["clients"][2] = head["clients"][0]
    _write(tmp_path / "v2.npz", head, arrays)
    m2 = FederatedKMeans.load(tmp_path / "v2.npz")
    _check_erased(m2, np.vstack([data[0][[5]], data[2]]), data[1][:5])
    _assert_same(m, m2)


# -- a call that fails changes nothing ------------------------------------------

class _Boom(RuntimeError):
    pass


def _failing(real, at):
    calls = []

    def f(*args, **kw):
        calls.append(1)
        if len(calls) == at:
            raise _Boom("injected")
        return real(*args, **kw)
    return f


@pytest.mark.parametrize("secure", [True, False])
@pytest.mark.parametrize("stage", ["removal", "round", "share", "share-next", "play",
                                   "finish", "server", "lloyd"])
@pytest.mark.parametrize("what", ["center", "point", "client"])
def test_a_failed_removal_changes_nothing(monkeypatch, secure, stage, what):
    """An injected failure at each stage of a removal (the client's local
    step, the secure round: its offline key sharing, before the round or
    for the next one after it, its inputs and its decoding; the server
    update and its Lloyd runs) leaves the model as a twin that never tried:
    the same removal then gives the same model on both."""
    a, b = _fit(11, secure=secure), _fit(11, secure=secure)
    ids = {"center": [_center_id(a, 1)], "point": [_non_center_id(a, 1)]}.get(what)
    trip = pyfkm.secagg.RoundTrip
    targets = {"removal": (mufc_client.MufcClient, "_removal", 1),
               "round": (type(a._agg), "round", 1),
               "share": (trip, "share", 1),
               "share-next": (trip, "share", 2),
               "play": (trip, "inputs", 1),
               "finish": (pyfkm.secagg.ScmaServer, "finish_round", 1),
               "server": (mufc_server.MufcServer, "update", 1),
               "lloyd": (mufc_server, "_lloyd_run", 1)}
    owner, name, at = targets[stage]
    if not secure and stage in ("share", "share-next", "play", "finish"):
        owner, name, at = mufc_aggregation._ClearAggregator, "round", 1
    if what == "client" and stage == "removal":
        owner, name = mufc.FederatedKMeans, "_update"
    before = [x.copy() for x in _state(a)]
    monkeypatch.setattr(owner, name, _failing(getattr(owner, name), at))
    with pytest.raises(_Boom):
        a.remove_clients([1]) if what == "client" else a.remove(1, ids)
    monkeypatch.undo()
    for x, y in zip(before, _state(a)):
        np.testing.assert_array_equal(x, y)
    _assert_same(a, b)
    for m in (a, b):       # the same call now succeeds on both, identically
        m.remove_clients([1]) if what == "client" else m.remove(1, ids)
        m.remove(0, [3])
    _assert_same(a, b)


def test_a_failed_refit_keeps_the_fitted_model(tmp_path):
    """The issue's case: set_params(modulus=7).fit(...) raised and left a
    model that could neither predict nor save consistently."""
    m = _fit(2, secure=True)
    X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(50, 3))
    labels = m.predict(X)
    centers = m.cluster_centers_.copy()
    with pytest.raises(PyfkmError):
        m.set_params(modulus=7).fit(_clients(3))
    m.set_params(modulus=None)
    np.testing.assert_array_equal(m.predict(X), labels)
    np.testing.assert_array_equal(m.cluster_centers_, centers)
    with pytest.raises(PyfkmError):
        m.fit([np.full((5, 3), 0.9)])            # outside the box
    m.save(tmp_path / "m.npz")
    np.testing.assert_array_equal(FederatedKMeans.load(tmp_path / "m.npz").predict(X), labels)


@pytest.mark.parametrize("secure", [True, False])
def test_a_failed_executor_task_keeps_the_fitted_model(secure):
    """A client whose task fails is dropped; with 2 clients and threshold 2
    too few survive, the fit raises and the fitted model stays (the dropout
    path itself: tests/mufc/test_estimator_dropouts.py)."""
    from concurrent.futures import ThreadPoolExecutor
    m = _fit(4, secure=secure)
    before = [x.copy() for x in _state(m)]
    with ThreadPoolExecutor(2) as ex:
        m.set_params(executor=ex, threshold=2)
        real = mufc._fit_client_task
        mufc._fit_client_task = _failing(real, 2)
        try:
            with pytest.raises(ProtocolError, match="threshold|dropout|survive"), \
                    pytest.warns(RuntimeWarning, match="dropped from the round"):
                m.fit(_clients(5, sizes=(60, 50)))
        finally:
            mufc._fit_client_task = real
    for x, y in zip(before, _state(m)):
        np.testing.assert_array_equal(x, y)
    assert m.dropped_clients_ == () and len(m._clients) == 4
    m.set_params(executor=None, threshold=None)
    _assert_same(m, _fit(4, secure=secure))
    m.remove(0, [3])                          # and it goes on working


# -- threads -------------------------------------------------------------------

def _run_threads(fns):
    errors = []
    barrier = threading.Barrier(len(fns))

    def wrap(f):
        barrier.wait()
        try:
            f()
        except BaseException as e:     # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=wrap, args=(f,)) for f in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors


def test_concurrent_seeding_removals_stay_consistent():
    """The issue's race: two threads removing centers left a removed point
    as a center (4 of 4 runs)."""
    X = np.random.default_rng(1).normal(size=(3000, 3))
    for run in range(8):
        s = RemovableSeeding(X, 8, random_state=run)
        first = [int(i) for i in s.center_ids_[1:4]]
        pool = [i for i in range(3000) if i not in set(s.center_ids_.tolist())]
        second = pool[:200]
        assert _run_threads([lambda: [s.remove(i) for i in first],
                             lambda: s.remove(second)]) == []
        gone = set(first) | set(second)
        assert not gone & set(s.center_ids_.tolist())
        assert s.removed_.sum() == len(gone) and s.n_active_ == 3000 - len(gone)
        assert s.cluster_sizes_.sum() == s.n_active_
        pickle.loads(pickle.dumps(s))          # the state passes validation


def test_concurrent_federated_removals_stay_consistent(tmp_path):
    for run in range(4):
        m = _fit(run, secure=True)
        a = [_center_id(m, 0), _non_center_id(m, 0)]
        b = [_non_center_id(m, 2)]
        errors = _run_threads([lambda: [m.remove(0, [i]) for i in a],
                               lambda: m.remove(2, b)])
        assert errors == []
        assert m._clients[0].removed_[a].all() and m._clients[2].removed_[b].all()
        m.save(tmp_path / "m.npz")            # the loader checks every invariant
        _assert_same(m, FederatedKMeans.load(tmp_path / "m.npz"))


# -- pickle and copy -------------------------------------------------------------

@pytest.mark.parametrize("secure", [True, False])
@pytest.mark.parametrize("server_points", ["centers", "uniform"])
def test_pickled_federated_model_continues_unlearning_identically(secure, server_points):
    m = _fit(6, secure=secure, server_points=server_points)
    m.remove(1, [_non_center_id(m, 1)])
    copies = [pickle.loads(pickle.dumps(m)), copy.deepcopy(m)]
    for c in copies:
        _assert_same(m, c)
    for x in [m] + copies:
        x.remove(1, [_center_id(x, 1)])
        x.remove(0, [1, 2, 3])
        x.remove_clients([2])
    for c in copies:
        _assert_same(m, c)
        assert c.get_params() == m.get_params()
    unfitted = pickle.loads(pickle.dumps(FederatedKMeans(3, gamma=0.1)))
    assert unfitted.get_params()["gamma"] == 0.1 and not hasattr(unfitted, "cluster_centers_")


def test_pickled_seeding_continues_identically():
    X = np.random.default_rng(8).normal(size=(500, 3))
    w = np.random.default_rng(9).uniform(0.5, 2, size=500)
    s = RemovableSeeding(X, 6, sample_weight=w, random_state=3)
    s.remove([1, 2, 3])
    copies = [pickle.loads(pickle.dumps(s)), copy.deepcopy(s), copy.copy(s)]
    copies = copies[:2]      # copy.copy shares the state: not an independent copy
    for x in [s] + copies:
        x.remove(int(x.center_ids_[2]))
        x.remove([10, 11])
    for c in copies:
        np.testing.assert_array_equal(c.center_ids_, s.center_ids_)
        np.testing.assert_array_equal(c.labels_, s.labels_)
        np.testing.assert_array_equal(c.cluster_weights_, s.cluster_weights_)


def test_secure_clients_keep_no_vector_of_replaced_rounds():
    """After a removal that moves a center, the removing client keeps only
    the vector of the last decoded round (the old one held the removed
    center's bin); a departed client keeps no data at all."""
    m = _fit(12, secure=True)
    for _ in range(3):
        m.remove(1, [_center_id(m, 1)])
    role = m._agg.roles[1]
    assert len(role._answered) == 1
    ((sent, _included),) = role._answered.values()
    bins, counts = m._clients[1].sparse_counts()
    np.testing.assert_array_equal(sent[0], bins)
    np.testing.assert_array_equal(sent[1], counts)
    old_roles = dict(m._agg.roles)
    m.remove_clients([1])
    # the departure runs a new secure run over the others: the departed
    # client has no role in it, and every role of the old run dropped its
    # data (the departed one's included)
    assert 1 not in m._agg.roles and sorted(m._agg.roles) == [0, 2, 3]
    assert old_roles[1]._data is None and old_roles[1]._answered == {}
    assert all(r._data is None and r._answered == {} for r in old_roles.values())


@pytest.mark.parametrize("fail", ["savez", "fsync", "replace"])
def test_a_failed_save_leaves_no_temporary_file_and_the_old_file(tmp_path, monkeypatch, fail):
    import os
    m = _fit(13)
    path = tmp_path / "m.npz"
    m.save(path)
    before = path.read_bytes()
    m.remove(0, [4])
    target = {"savez": (np, "savez"), "fsync": (os, "fsync"), "replace": (os, "replace")}[fail]
    monkeypatch.setattr(*target, _failing(getattr(*target), 1))
    with pytest.raises(_Boom):
        m.save(path)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]
    assert path.read_bytes() == before
    with pytest.raises(pyfkm.InvalidInputError, match="does not exist"):
        m.save(tmp_path / "no" / "m.npz")


# -- regressions from the review ---------------------------------------------------

def test_save_and_pickle_are_snapshots_when_a_removal_runs_meanwhile(tmp_path, monkeypatch):
    """save writes after releasing the lock: a removal committed while the
    archive is written (erasing rows in place) must not reach the file."""
    m = _fit(14)
    twin = _fit(14)
    real = np.savez

    def savez_with_a_removal(*args, **kw):
        monkeypatch.setattr(np, "savez", real)
        m.remove(0, [_center_id(m, 0), _non_center_id(m, 0)])
        return real(*args, **kw)
    monkeypatch.setattr(np, "savez", savez_with_a_removal)
    m.save(tmp_path / "m.npz")
    _assert_same(FederatedKMeans.load(tmp_path / "m.npz"), twin)
    state = m.__getstate__()
    m.remove(1, [_center_id(m, 1)])
    obj = FederatedKMeans.__new__(FederatedKMeans)
    obj.__setstate__(state)            # the pickle state taken before that removal
    assert not obj._clients[1].removed_.any()


def test_seeding_pickle_state_is_a_snapshot_and_oob_buffers_are_copied():
    X = np.random.default_rng(15).normal(size=(80, 2))
    s = RemovableSeeding(X, 4, random_state=0)
    state = s.__getstate__()
    centre = int(s.center_ids_[1])
    s.remove(centre)
    old = RemovableSeeding.__new__(RemovableSeeding)
    old.__setstate__(state)
    assert centre in old.center_ids_.tolist() and not old.removed_.any()
    # protocol 5 with out-of-band, read-only buffers (what Dask does)
    bufs = []
    data = pickle.dumps(old, protocol=5, buffer_callback=bufs.append)
    ro = [memoryview(bytes(b.raw())) for b in bufs]          # read-only copies
    copy_ = pickle.loads(data, buffers=ro)
    copy_.remove(centre)
    assert (copy_._state.X[centre] == 0).all() and copy_.removed_[centre]
    np.testing.assert_array_equal(copy_.center_ids_, s.center_ids_)


def test_zip_tricks_and_special_files_raise_model_file_error(tmp_path):
    import os
    import zipfile
    _, path = _saved(tmp_path)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    for method in (zipfile.ZIP_LZMA, zipfile.ZIP_BZIP2):
        p = tmp_path / f"m{method}.npz"
        with zipfile.ZipFile(p, "w", compression=method) as z:
            for n, b in members.items():
                z.writestr(n, b)
        with pytest.raises(ModelFileError, match="method"):
            FederatedKMeans.load(p)
    raw = bytearray(path.read_bytes())
    i = raw.find(b"PK\x03\x04")
    raw[i + 6] |= 1                          # the first member's "encrypted" flag
    j = raw.find(b"PK\x01\x02")
    raw[j + 8] |= 1                          # and in the central directory
    (tmp_path / "enc.npz").write_bytes(bytes(raw))
    with pytest.raises(ModelFileError):
        FederatedKMeans.load(tmp_path / "enc.npz")
    if os.path.exists("/dev/zero"):
        with pytest.raises(ModelFileError, match="regular file"):
            FederatedKMeans.load("/dev/zero")


def test_loader_refuses_foreign_dtypes_versions_and_missing_seeds(tmp_path):
    _, path = _saved(tmp_path)
    head, arrays = _read(path)
    for dt in (">f8", np.longdouble, np.float16):
        bad = dict(arrays)
        bad["c0.X"] = arrays["c0.X"].astype(dt)
        _write(tmp_path / "d.npz", head, bad)
        with pytest.raises(ModelFileError, match="c0.X"):
            FederatedKMeans.load(tmp_path / "d.npz")
    for v in (True, 3.0, "3"):
        _write(tmp_path / "v.npz", dict(head, version=v), arrays)
        with pytest.raises(ModelFileError, match="version"):
            FederatedKMeans.load(tmp_path / "v.npz")
    bad = {k: a for k, a in arrays.items() if k != "s.seeds"}
    h = json.loads(json.dumps(head))
    h["server"]["seeds"] = False
    _write(tmp_path / "s.npz", h, bad)
    with pytest.raises(ModelFileError, match="seeds"):
        FederatedKMeans.load(tmp_path / "s.npz")


def test_departed_clients_cost_no_key_agreement_on_load(tmp_path):
    """A small file listing many departed clients (null entries) must not
    make load run a key agreement for each of them."""
    _, path = _saved(tmp_path)
    head, arrays = _read(path)
    head["clients"] = head["clients"] + [None] * 500
    _write(tmp_path / "many.npz", head, arrays)
    m = FederatedKMeans.load(tmp_path / "many.npz")
    assert sorted(m._agg.roles) == head["participants"] == [0, 1, 2]
    assert len(m.client_centers_) == 504
    m.remove(0, [10])


def test_a_failed_fit_leaves_a_user_generator_unchanged():
    """A fit that raises (here: one of 2 clients fails, below threshold 2)
    spawns no child of the user's generator."""
    from concurrent.futures import ThreadPoolExecutor
    gen, twin = np.random.default_rng(3), np.random.default_rng(3)
    m = FederatedKMeans(3, n_init=2, random_state=gen, server_points="centers", threshold=2)
    data = _clients(1, sizes=(60, 50))
    with ThreadPoolExecutor(2) as ex:
        real = mufc._fit_client_task
        mufc._fit_client_task = _failing(real, 2)
        try:
            with pytest.raises(ProtocolError), pytest.warns(RuntimeWarning):
                m.set_params(executor=ex).fit(data)
        finally:
            mufc._fit_client_task = real
    m.set_params(executor=None).fit(data)
    ref = FederatedKMeans(3, n_init=2, random_state=twin, server_points="centers").fit(data)
    _assert_same(m, ref)
    assert gen.bit_generator.seed_seq.n_children_spawned == \
        twin.bit_generator.seed_seq.n_children_spawned


def test_server_copies_the_aggregate_it_keeps():
    srv = mufc_server.MufcServer(2, gamma=0.25, n_features=1, server_points="centers",
                                 n_init=2, random_state=0)
    bins, counts = np.array([[0], [1], [3]]), np.array([4, 2, 5])
    srv.update(bins, counts)
    counts[0] = 1                                # the caller reuses its buffer
    assert srv.counts_.tolist() == [4, 2, 5]
    assert srv.update(bins, counts)              # a real change, seen as one


def test_an_emptied_model_predicts_with_a_clear_error_and_round_trips(tmp_path):
    m = _fit(16, secure=False)
    for i, c in enumerate(m._clients):
        m.remove(i, np.flatnonzero(~c.removed_))
    assert m.cluster_centers_.shape == (0, 3)
    with pytest.raises(pyfkm.InvalidInputError, match="no centers"):
        m.predict(np.zeros((2, 3)))
    m.save(tmp_path / "m.npz")
    m2 = pickle.loads(pickle.dumps(FederatedKMeans.load(tmp_path / "m.npz")))
    assert m2.cluster_centers_.shape == (0, 3) and m2.fit_seconds_ == m.fit_seconds_
