"""Pickling and copying of every public estimator (issue 18).

Each estimator is fitted, then passed through ``pickle`` (every protocol,
and protocol 5 with out-of-band, read-only buffers), ``copy.copy`` and
``copy.deepcopy``; the copy must predict bit for bit like the original and
hold an identical object graph (arrays compared byte for byte, with dtype
and shape).  The expected values are the original model's own, computed
before the round trip.  The deletion-capable models must also go on
deleting (removing) exactly as the original does.

``FederatedKMeans`` and ``RemovableSeeding`` are left out here on purpose:
their pickling and copying are covered in tests/mufc/test_estimator.py
and tests/core/test_seeding.py.
"""
import copy
import inspect
import math
import pickle
import threading

import numpy as np
import pytest

import pyfkm
from pyfkm import core, deletion, dp, mufc, outliers
from pyfkm._base import BaseEstimator
from pyfkm.mufc.dckmeans import FederatedDCKMeans
from pyfkm.mufc.kfed import KFed
from pyfkm.deletion import DCKMeans, QKMeans
from pyfkm.dp.baselines import GLloyd, SuLloyd
from pyfkm.dp.estimator import DPFederatedKMeans, FederatedLloyd
from pyfkm.core.kmeans import KMeans
from _helpers.state import assert_same_state
from pyfkm.outliers import (DistributedKZCenter, GuhaKZCenter, KZCenter, MalkomesKZCenter,
                            UniformSamplingKZCenter)

# covered in tests/mufc/test_estimator.py and tests/core/test_seeding.py
ELSEWHERE = {"FederatedKMeans", "RemovableSeeding"}


# ------------------------------------------------------------------ helpers

def fitted_attributes(model):
    """Public fitted attributes (names ending in ``_``), properties included."""
    return {name: getattr(model, name) for name in dir(model)
            if name.endswith("_") and not name.startswith("_")}


def round_trips(model):
    """(how, copy) for every way of copying ``model``."""
    out = [(f"pickle{p}", pickle.loads(pickle.dumps(model, protocol=p)))
           for p in range(pickle.HIGHEST_PROTOCOL + 1)]
    buffers = []  # protocol 5 with out-of-band buffers: read-only arrays
    data = pickle.dumps(model, protocol=5, buffer_callback=buffers.append)
    out.append(("pickle5-out-of-band",
                pickle.loads(data, buffers=[bytes(b.raw()) for b in buffers])))
    out.append(("copy", copy.copy(model)))
    out.append(("deepcopy", copy.deepcopy(model)))
    return out


def points(seed=0, n=90, d=2, lo=-0.9, hi=0.9):
    return np.random.default_rng(seed).uniform(lo, hi, size=(n, d))


def clients_of(X, parts=3):
    return [np.ascontiguousarray(c) for c in np.array_split(X, parts)]


# estimator factory, how it is fitted ("X": one array, "clients": a list)
CASES = [
    pytest.param(lambda: KMeans(3, random_state=0), "X", id="KMeans"),
    pytest.param(lambda: KMeans(3, n_threads=2, random_state=0), "X", id="KMeans-threads"),
    pytest.param(lambda: QKMeans(3, random_state=0), "X", id="QKMeans"),
    pytest.param(lambda: QKMeans(3, random_state=np.random.default_rng(4)), "X",
                 id="QKMeans-generator"),
    pytest.param(lambda: DCKMeans(3, n_leaves=4, random_state=0), "X", id="DCKMeans"),
    pytest.param(lambda: DPFederatedKMeans(3, epsilon=1.0, random_state=0), "clients",
                 id="DPFederatedKMeans"),
    pytest.param(lambda: FederatedLloyd(3, random_state=0), "clients", id="FederatedLloyd"),
    pytest.param(lambda: GLloyd(3, epsilon=1.0, random_state=0), "clients", id="GLloyd"),
    pytest.param(lambda: SuLloyd(3, epsilon=1.0, random_state=0), "clients", id="SuLloyd"),
    pytest.param(lambda: KZCenter(3, 2), "X", id="KZCenter"),
    pytest.param(lambda: DistributedKZCenter(3, 2, random_state=0), "clients",
                 id="DistributedKZCenter"),
    pytest.param(lambda: MalkomesKZCenter(3, 2), "clients", id="MalkomesKZCenter"),
    pytest.param(lambda: GuhaKZCenter(3, 2, random_state=0), "clients", id="GuhaKZCenter"),
    pytest.param(lambda: UniformSamplingKZCenter(3, 2, random_state=0), "clients",
                 id="UniformSamplingKZCenter"),
    pytest.param(lambda: KFed(3, client_clusters=2, random_state=0), "clients", id="KFed"),
    pytest.param(lambda: FederatedDCKMeans(3, random_state=0), "clients",
                 id="FederatedDCKMeans"),
]


def fit(make, how, X):
    model = make()
    return model.fit(X if how == "X" else clients_of(X))


# ------------------------------------------------------------------ errors first

def test_unfitted_copies_stay_unfitted_and_keep_their_parameters():
    for p in CASES:
        make = p.values[0]
        model = make()
        for how, other in round_trips(model):
            assert type(other) is type(model)
            assert_same_state(other.get_params(), model.get_params(), f"{p.id} {how}")
            with pytest.raises(pyfkm.NotFittedError):
                other.predict(points(1, n=3))


def test_every_public_estimator_is_covered():
    """A new public estimator must be added to CASES (or to ELSEWHERE)."""
    covered = {p.id.split("-")[0] for p in CASES} | ELSEWHERE
    public = set()
    for mod in (pyfkm, core, deletion, dp, mufc, outliers):
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if inspect.isclass(obj) and (issubclass(obj, BaseEstimator)
                                         or hasattr(obj, "fit")):
                public.add(name)
    assert public - covered == set()
    assert {"KMeans", "QKMeans", "DCKMeans", "KFed"} <= public  # the scan works


# ------------------------------------------------------------------ round trips

@pytest.mark.parametrize("make, how", CASES)
def test_round_trip_is_exact(make, how):
    X = points(0)
    model = fit(make, how, X)
    Xt = np.vstack([X, points(7, n=40, lo=-1.0, hi=1.0)])
    pred = model.predict(Xt)
    attrs = fitted_attributes(model)
    assert attrs["cluster_centers_"].ndim == 2 and len(attrs) >= 2
    assert attrs["n_features_in_"] == 2
    for name, other in round_trips(model):
        assert other is not model
        assert_same_state(other, model, name)
        np.testing.assert_array_equal(other.predict(Xt), pred)
        assert other.predict(Xt).dtype == pred.dtype
        assert_same_state(fitted_attributes(other), attrs, name)
    # the original is unchanged by being copied
    np.testing.assert_array_equal(model.predict(Xt), pred)
    assert_same_state(fitted_attributes(model), attrs, "original")


@pytest.mark.parametrize("make, how", CASES)
def test_copies_are_independent(make, how):
    """Refitting a copy on other data leaves the original as it was (but for
    a Generator passed as random_state, which a shallow copy shares, as any
    parameter)."""
    X = points(0)
    model = fit(make, how, X)
    before = pickle.loads(pickle.dumps(model))
    shared_generator = isinstance(model.get_params().get("random_state"),
                                  np.random.Generator)
    for name, other in round_trips(model)[-2:]:  # copy, deepcopy
        other.fit(points(3) * 0.5 if how == "X" else clients_of(points(3) * 0.5))
        if name == "copy" and shared_generator:
            assert other.random_state is model.random_state
            other.random_state = before.random_state
            model.random_state = before.random_state
        assert_same_state(model, before, "original")


def test_helper_detects_differences():
    """assert_same_state fails on the differences the round trips must not
    introduce (a last-bit change, a dtype, a generator state, a list entry)."""
    a = QKMeans(3, random_state=0).fit(points(0))
    b = copy.deepcopy(a)
    b._state.C[-1][0, 0] = np.nextafter(b._state.C[-1][0, 0], np.inf)
    with pytest.raises(AssertionError):
        assert_same_state(a, b)
    for x, y in ((np.zeros(2), np.zeros(2, np.float32)), (0.0, -0.0), ([1, 2], [1, 3]),
                 (np.random.default_rng(1), np.random.default_rng(2)),
                 ({"a": 1.0}, {"a": math.nextafter(1.0, 2.0)})):
        with pytest.raises(AssertionError):
            assert_same_state(x, y)
    assert_same_state(np.random.default_rng(1), np.random.default_rng(1))


# ------------------------------------------------------- deletion models go on

def blobs(seed, n=240, d=3, k=3, spread=8.0):
    rng = np.random.default_rng(seed)
    means = rng.uniform(-spread, spread, size=(k, d))
    return means[rng.integers(0, k, size=n)] + rng.normal(size=(n, d))


@pytest.mark.parametrize("make", [
    pytest.param(lambda: QKMeans(3, epsilon=1.0, random_state=5), id="QKMeans"),
    pytest.param(lambda: DCKMeans(3, n_leaves=4, random_state=5), id="DCKMeans"),
])
def test_deletion_models_continue_identically(make):
    """Unpickled and copied models delete exactly like the original: same
    reports (but the time), same centers, same state, deletion after
    deletion (certified ones, retrainings and a compaction)."""
    X = blobs(21)
    model = make().fit(X)
    model.remove([3, 17])
    copies = [c for _, c in round_trips(model)]
    rng = np.random.default_rng(8)
    kinds = set()
    for step in range(14):
        size = 40 if step == 10 else 1 + step % 3
        victims = rng.choice(model.sample_ids_, size=size, replace=False)
        if step == 5 and isinstance(model, QKMeans):
            victims = model.seed_ids_[1:2]  # forces a retraining
        rep = model.remove(victims)
        kinds.add(rep.reason)
        for c in copies:
            r = c.remove(victims)
            assert (r.n_deleted, r.retrained, r.reason) == (rep.n_deleted, rep.retrained,
                                                            rep.reason)
            np.testing.assert_array_equal(c.cluster_centers_, model.cluster_centers_)
            np.testing.assert_array_equal(c.sample_ids_, model.sample_ids_)
    inertia = model.inertia_
    for c in copies:
        assert c.inertia_ == inertia
        assert_same_state(c, model)
    if isinstance(model, QKMeans):
        assert {"", "seed"} < kinds  # certified, seed and some other retraining
    else:
        assert kinds == {"leaf path"}
    assert model._state.ids.shape[0] < 240  # compacted (forgot the deleted ids)


def test_shallow_copy_of_a_deletion_model_does_not_share_its_state():
    """Deletions overwrite rows in place: a copy.copy must not see them."""
    X = blobs(22)
    for model in (QKMeans(3, epsilon=1.0, random_state=1).fit(X),
                  DCKMeans(3, n_leaves=4, random_state=1).fit(X)):
        other = copy.copy(model)
        ref = pickle.loads(pickle.dumps(model))
        model.remove(np.arange(10, 20))
        assert_same_state(other, ref)
        assert other.sample_ids_.shape == (240,)
        assert isinstance(other._lock, type(threading.RLock()))
        assert other._lock is not model._lock


@pytest.mark.parametrize("make", [
    pytest.param(lambda: KFed(3, client_clusters=2, random_state=0), id="KFed"),
    pytest.param(lambda: FederatedDCKMeans(3, random_state=0), id="FederatedDCKMeans"),
])
def test_federated_baselines_continue_identically(make):
    model = make().fit(clients_of(points(0)))
    copies = [c for _, c in round_trips(model)]
    for client, ids in ((0, [1, 4]), (2, [0]), (1, [5, 6, 7])):
        rep = model.remove(client, ids)
        for c in copies:
            r = c.remove(client, ids)
            assert (r.n_removed, r.centers_changed) == (rep.n_removed, rep.centers_changed)
            np.testing.assert_array_equal(c.cluster_centers_, model.cluster_centers_)
    rep = model.remove_clients([1])
    for c in copies:
        assert c.remove_clients([1]).n_removed == rep.n_removed
    for c in copies:
        assert_same_state(c, model)
