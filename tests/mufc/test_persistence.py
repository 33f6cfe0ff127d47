"""Saved MUFC models (pyfkm.mufc.persistence): corrupt and unknown files are
refused, a model saved between removals continues identically, version 1
files load and recluster from scratch."""
import numpy as np
import pytest

from pyfkm.datasets import make_gaussian_mixture, split_non_iid
from pyfkm.exceptions import InvalidInputError
from pyfkm.core.kmeans import KMeans
from pyfkm.mufc import FederatedKMeans
from _helpers.mufc_server import copy_gen
from _helpers.saved import read_saved, write_saved


def _federation(seed=0, L=5, n=600, d=2, K=3):
    X, y, _ = make_gaussian_mixture(n, d, K, random_state=seed)
    parts = split_non_iid(X, y, L, 2, random_state=seed)
    return [np.ascontiguousarray(X[p]) for p in parts]


def _non_center_ids(model, client, count, rng):
    """``count`` active, non-center points of ``client`` whose removal leaves
    every client center in place (at least one other point in its bin)."""
    c = model._clients[client]
    centers = set(c._active[c._seeding.center_ids_].tolist())
    cand = [i for i in np.flatnonzero(~c.removed_).tolist() if i not in centers]
    return rng.choice(cand, size=count, replace=False).tolist()


def test_corrupt_seeds_and_unknown_versions_are_refused(tmp_path):
    m = FederatedKMeans(3, server_points="centers", secure=False, n_init=2,
                        random_state=0).fit(_federation())
    m.save(tmp_path / "m.npz")
    head, arrays = read_saved(tmp_path / "m.npz")
    assert head["version"] == 3 and arrays["s.seeds"].shape == (2, 3)
    bad = dict(arrays)
    bad["s.seeds"] = arrays["s.seeds"][:, :2]
    write_saved(tmp_path / "a.npz", head, bad)
    with pytest.raises(InvalidInputError, match="seeds"):
        FederatedKMeans.load(tmp_path / "a.npz")
    bad["s.seeds"] = arrays["s.seeds"].copy()
    bad["s.seeds"][0, 1] = bad["s.seeds"][0, 0]   # a repeated seed
    write_saved(tmp_path / "b.npz", head, bad)
    with pytest.raises(InvalidInputError, match="seeds"):
        FederatedKMeans.load(tmp_path / "b.npz")
    write_saved(tmp_path / "c.npz", dict(head, version=4), arrays)
    with pytest.raises(InvalidInputError, match="version.*4"):
        FederatedKMeans.load(tmp_path / "c.npz")


# -- persistence ------------------------------------------------------------------

def test_save_load_mid_removals_continues_identically(tmp_path):
    clients = _federation(seed=3)
    m = FederatedKMeans(3, server_points="centers", secure=False, n_init=4,
                        random_state=9).fit(clients)
    rng = np.random.default_rng(1)
    m.remove(0, _non_center_ids(m, 0, 1, rng))
    assert any(t is not None for t in m._server._traces)   # the coupled update ran
    m.save(tmp_path / "m.npz")
    m2 = FederatedKMeans.load(tmp_path / "m.npz")
    assert np.array_equal(m2._server._seeds, m._server._seeds)
    assert m2._server._traces == [None] * 4
    steps = [(1, _non_center_ids(m, 1, 1, rng)), (2, _non_center_ids(m, 2, 2, rng)),
             (0, [int(m._clients[0]._active[m._clients[0]._seeding.center_ids_[0]])]),
             (3, _non_center_ids(m, 3, 1, rng))]
    for client, ids in steps:
        r1, r2 = m.remove(client, ids), m2.remove(client, ids)
        assert r1.server_reclustered == r2.server_reclustered
        assert np.array_equal(m.cluster_centers_, m2.cluster_centers_)
        assert m.n_iter_ == m2.n_iter_
        assert np.array_equal(m._server._seeds, m2._server._seeds)
        assert m._server._rng.bit_generator.state == m2._server._rng.bit_generator.state


def test_version_1_files_load_and_recluster_from_scratch(tmp_path):
    clients = _federation(seed=4)
    m = FederatedKMeans(3, server_points="centers", secure=False, n_init=3,
                        random_state=2).fit(clients)
    m.save(tmp_path / "m.npz")
    head, arrays = read_saved(tmp_path / "m.npz")
    # what version 1 wrote: no seeds
    del arrays["s.seeds"]
    del head["server"]["seeds"]
    head["version"] = 1
    write_saved(tmp_path / "v1.npz", head, arrays)
    m1 = FederatedKMeans.load(tmp_path / "v1.npz")
    assert np.array_equal(m1.cluster_centers_, m.cluster_centers_)
    ids = _non_center_ids(m1, 0, 1, np.random.default_rng(0))
    gen = copy_gen(m1._server._rng)
    m1.remove(0, ids)
    P, w = m1._server.points()
    km = KMeans(3, n_init=3, random_state=gen).fit(P, sample_weight=w)
    assert np.array_equal(m1.cluster_centers_, km.cluster_centers_)
    assert m1._server._seeds is not None      # and it couples from then on


def test_save_refuses_to_replace_what_is_not_a_regular_file(tmp_path):
    # issue 21 review: saving over a device, a pipe or a folder would destroy
    # it (a model saved to /dev/null as root replaced /dev/null)
    import os

    rng = np.random.default_rng(0)
    clients = [rng.uniform(-0.5, 0.5, size=(30, 2)) for _ in range(3)]
    est = FederatedKMeans(2, server_points="centers", random_state=0).fit(clients)
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    for name in ("pipe", "folder"):
        with pytest.raises(InvalidInputError, match="not a regular file"):
            est.save(tmp_path / name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "pipe"]  # no temp left
    est.save(tmp_path / "m.npz")
    est.save(tmp_path / "m.npz")  # a regular file is replaced
    # through a link, the file it names is replaced (the link would otherwise
    # go and the old model, removed rows included, stay behind)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "real.npz").write_bytes((tmp_path / "m.npz").read_bytes())
    (tmp_path / "link.npz").symlink_to(tmp_path / "sub" / "real.npz")
    est.remove_clients([0])
    est.save(tmp_path / "link.npz")
    assert (tmp_path / "link.npz").is_symlink()
    assert FederatedKMeans.load(tmp_path / "sub" / "real.npz").participants_ == [1, 2]
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["real.npz"]
    # other hard links keep the old content: a warning says so
    os.link(tmp_path / "m.npz", tmp_path / "hard.npz")
    with pytest.warns(UserWarning, match="1 other hard link"):
        est.save(tmp_path / "m.npz")
