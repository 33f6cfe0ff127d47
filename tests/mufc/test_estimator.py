"""Tests of pyfkm.mufc: federated k-means with secure aggregation and exact unlearning."""
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from pyfkm.exceptions import InvalidIdError, InvalidInputError, NotFittedError
from pyfkm.mufc import FederatedKMeans, MufcClient, merge_sparse, scale_to_box


def gaussian_clients(rng, L=6, n_l=40, d=3, K=4, k_local=2, std=0.03):
    centers = rng.uniform(-0.4, 0.4, size=(K, d))
    out = []
    for _ in range(L):
        ks = rng.choice(K, size=k_local, replace=False)
        lab = rng.choice(ks, size=n_l)
        out.append(np.clip(centers[lab] + std * rng.normal(size=(n_l, d)), -0.5, 0.5))
    return out


def plain_aggregate(model):
    """Sum of the clients' quantized count vectors, recomputed here from the
    clients' centers and sizes (not from the model's aggregation)."""
    parts = []
    for i in model._participants:
        c = model._clients[i]
        C, s = model.client_centers_[i], model.client_sizes_[i]
        if C.shape[0] == 0:
            continue
        b = np.floor((C - model.bounds[0]) / model.gamma_).astype(np.int64)
        b = np.clip(b, 0, model.n_bins_per_dim_ - 1)
        parts.append((b[s > 0], s[s > 0]))
        assert c.n_active_ == int(s.sum())
    return merge_sparse(parts, model.n_features_in_)


@pytest.mark.parametrize("server_points", ["centers", "uniform"])
def test_secure_and_clear_give_the_same_model(server_points):
    clients = gaussian_clients(np.random.default_rng(0))
    a = FederatedKMeans(4, server_points=server_points, secure=True, random_state=3).fit(clients)
    b = FederatedKMeans(4, server_points=server_points, secure=False, random_state=3).fit(clients)
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
    assert np.array_equal(a.aggregate_bins_, b.aggregate_bins_)
    assert np.array_equal(a.aggregate_counts_, b.aggregate_counts_)
    assert a.bytes_sent_ > 0 and b.bytes_sent_ == 0
    # and after the same removals
    for m in (a, b):
        m.remove(1, [0, 5, 7])
        m.remove_clients([2])
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
    assert np.array_equal(a.aggregate_counts_, b.aggregate_counts_)


def _record_inputs(monkeypatch):
    """Record the size in bytes of every masked input (SyndromeMessage) the
    clients send, by round: ``{round: [bytes, ...]}``."""
    from pyfkm import secagg
    sent = {}
    real = secagg.ScmaClient.respond

    def respond(self, req):
        msg = real(self, req)
        sent.setdefault(req.round, []).append(len(msg.to_bytes()))
        return msg
    monkeypatch.setattr(secagg.ScmaClient, "respond", respond)
    return sent


def test_removals_use_short_difference_rounds_and_match_the_clear_model(monkeypatch):
    # L = 10 clients, K = 4: M = 40 aggregate bins, a full input is 2 M = 80
    # syndromes (+ 1 check word).  A one-client change fits a difference
    # round sized for the bins that changed (at most 2 K = 8: 16 syndromes
    # plus the hashed layout's rows), so every input of a removal is less
    # than a third of a fit's input (the same headers).  The whole round's
    # bytes also count key shares and unmask answers, which do not shrink:
    # the comparison is on the inputs.  The models stay equal to the clear
    # aggregation's.
    sent = _record_inputs(monkeypatch)
    clients = gaussian_clients(np.random.default_rng(11), L=10)
    a = FederatedKMeans(4, server_points="centers", secure=True, random_state=5).fit(clients)
    b = FederatedKMeans(4, server_points="centers", secure=False, random_state=5).fit(clients)
    (fit_inputs,) = sent.values()
    assert len(fit_inputs) == 10 and len(set(fit_inputs)) == 1
    full = fit_inputs[0]
    center = int(a._clients[3]._seeding.center_ids_[0])
    for client, ids in [(0, [1]), (3, [center]), (5, [0, 2, 4, 6]), (0, [3])]:
        sent.clear()
        ra = a.remove(client, ids)
        b.remove(client, ids)
        assert ra.incremental_decode and ra.bytes_sent > 0
        (inputs,) = sent.values()             # one round: no fallback to a full one
        assert len(inputs) == 10
        assert max(inputs) < full / 3, (inputs, full)
        assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
        assert np.array_equal(a.aggregate_bins_, b.aggregate_bins_)
        assert np.array_equal(a.aggregate_counts_, b.aggregate_counts_)
    sent.clear()
    ra = a.remove_clients([7])       # a new run: a full round (sized for 9 clients)
    b.remove_clients([7])
    (inputs,) = sent.values()
    assert len(inputs) == 9 and min(inputs) > full * 0.8
    a.remove(2, [5])
    b.remove(2, [5])
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
    assert np.array_equal(a.aggregate_counts_, b.aggregate_counts_)


def test_aggregate_is_the_sum_of_the_quantized_client_counts():
    clients = gaussian_clients(np.random.default_rng(1), L=5)
    m = FederatedKMeans(4, server_points="centers", random_state=0).fit(clients)
    bins, counts = plain_aggregate(m)
    assert np.array_equal(bins, m.aggregate_bins_) and np.array_equal(counts, m.aggregate_counts_)
    assert counts.sum() == sum(len(X) for X in clients)
    rep = m.remove(0, [3])
    bins, counts = plain_aggregate(m)
    assert np.array_equal(counts, m.aggregate_counts_)
    assert counts.sum() == sum(len(X) for X in clients) - 1
    assert rep.clients == (0,) and rep.aggregate_changed and rep.bytes_sent > 0
    m.remove_clients([1, 3])
    bins, counts = plain_aggregate(m)
    assert np.array_equal(counts, m.aggregate_counts_)
    assert counts.sum() == sum(len(clients[i]) for i in (0, 2, 4)) - 1


def test_removal_of_a_non_center_keeps_the_centers_and_decrements_one_count():
    clients = gaussian_clients(np.random.default_rng(2), L=3)
    m = FederatedKMeans(4, server_points="centers", random_state=1).fit(clients)
    c0 = m.client_centers_[0].copy()
    s0 = m.client_sizes_[0].copy()
    center_ids = set(m._clients[0]._seeding.center_ids_.tolist())
    victim = next(i for i in range(len(clients[0])) if i not in center_ids)
    rep = m.remove(0, victim)
    assert not rep.reseeded and rep.position is None
    assert np.array_equal(m.client_centers_[0], c0)
    assert (s0 - m.client_sizes_[0]).tolist().count(1) == 1
    assert (s0 - m.client_sizes_[0]).sum() == 1
    assert rep.incremental_decode  # one count changed: decoded on the old support


def test_removal_of_a_center_reseeds():
    clients = gaussian_clients(np.random.default_rng(3), L=3)
    m = FederatedKMeans(4, random_state=1).fit(clients)
    cid = int(m._clients[1]._seeding.center_ids_[2])
    rep = m.remove(1, cid)
    assert rep.reseeded and rep.position == 2


def test_bad_ids_raise_and_change_nothing():
    clients = gaussian_clients(np.random.default_rng(4), L=3)
    m = FederatedKMeans(4, server_points="centers", random_state=1).fit(clients)
    m.remove(0, 1)
    snap = (m.cluster_centers_.copy(), m.aggregate_counts_.copy(),
            m._clients[0].removed_.copy())
    for bad in ([1], [0, 0], [10**6], [-1]):
        with pytest.raises(InvalidIdError):
            m.remove(0, bad)
    with pytest.raises(InvalidIdError):
        m.remove(7, [0])
    m.remove_clients([2])
    with pytest.raises(InvalidIdError):
        m.remove_clients([2])
    with pytest.raises(InvalidIdError):
        m.remove(2, [0])
    with pytest.raises(InvalidIdError):
        m.remove_clients([0, 1])  # would remove everyone
    assert np.array_equal(m._clients[0].removed_, snap[2])


def test_input_validation():
    rng = np.random.default_rng(5)
    with pytest.raises(InvalidInputError, match="box"):
        FederatedKMeans(2).fit([rng.uniform(-1, 1, size=(20, 2))])
    with pytest.raises(InvalidInputError):
        FederatedKMeans(2).fit([np.zeros((5, 2)), np.zeros((5, 3))])
    with pytest.raises(InvalidInputError):
        FederatedKMeans(0).fit([np.zeros((5, 2))])
    with pytest.raises(InvalidInputError):
        FederatedKMeans(2, gamma=-1.0).fit([np.zeros((5, 2))])
    with pytest.raises(InvalidInputError):
        FederatedKMeans(2, server_points="median").fit([np.zeros((5, 2))])
    with pytest.raises(InvalidInputError, match="client_init"):
        FederatedKMeans(2, client_init="lloyd").fit([np.zeros((5, 2))])
    with pytest.raises(NotFittedError):
        FederatedKMeans(2).predict([[0.0, 0.0]])
    assert scale_to_box([[2.0], [4.0]], 2.0, 4.0).ravel().tolist() == [-0.5, 0.5]
    with pytest.raises(InvalidInputError):
        scale_to_box([[5.0]], 2.0, 4.0)


def test_client_with_fewer_points_than_clusters_and_emptied_client():
    rng = np.random.default_rng(6)
    clients = [rng.uniform(-0.5, 0.5, size=(2, 2)), rng.uniform(-0.5, 0.5, size=(30, 2))]
    m = FederatedKMeans(3, server_points="centers", random_state=0).fit(clients)
    assert m._clients[0].k_ == 2
    rep = m.remove(0, [0, 1])
    assert m._clients[0].k_ == 0 and rep.clients == (0,)
    assert m.aggregate_counts_.sum() == 30
    with pytest.raises(InvalidIdError):
        m.remove(0, [0])


def test_predict_and_score_use_the_server_centroids():
    clients = gaussian_clients(np.random.default_rng(7), L=4)
    m = FederatedKMeans(4, server_points="centers", random_state=0).fit(clients)
    X = np.vstack(clients)
    d2 = ((X[:, None, :] - m.cluster_centers_[None]) ** 2).sum(-1)
    assert np.array_equal(m.predict(X), d2.argmin(1))
    assert np.isclose(m.score(X), -d2.min(1).sum())


def _outcome(model, client):
    c = model._clients[client]
    ids = c._active[c._seeding.center_ids_] if c._seeding is not None else []
    return (tuple(sorted(int(i) for i in ids)),
            tuple(map(tuple, model.aggregate_bins_.tolist())),
            tuple(model.aggregate_counts_.tolist()))


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("removal,client_init", [
    ("single", "k-means++"), ("batch", "k-means++"), ("center-heavy", "k-means++"),
    ("client", "k-means++"), ("saved", "k-means++"), ("single", "means"),
    ("center-heavy", "means")])
def test_removal_is_distributed_as_refitting(removal, client_init, tmp_path):
    """Chi-square over enumerated outcomes (client 0's center set and the
    aggregate) after removal vs a fresh fit on the remaining data.

    Tiny federation: client 0 has 6 one-dimensional points, K = 2, so
    there are at most 15 center sets; 1500 runs per side.  Two-sample
    chi-square at alpha = 1e-3: exact at the null, so it fails by chance once
    in a thousand seeds (the seeds are fixed).  Power: the negative control
    below shows the same test, with fewer runs, rejects a model that was
    not unlearned.
    """
    X0 = np.array([[-0.45], [-0.4], [-0.1], [0.05], [0.3], [0.42]])
    X1 = np.array([[-0.3], [0.0], [0.2], [0.25]])
    if removal in ("single", "saved"):
        rm0, rm_clients = [2], []
    elif removal == "batch":
        rm0, rm_clients = [0, 5], []
    elif removal == "center-heavy":
        rm0, rm_clients = [0, 1, 4], []
    else:
        rm0, rm_clients = [1], [1]
    keep0 = np.setdiff1d(np.arange(len(X0)), rm0)
    after, fresh = Counter(), Counter()
    runs = 1500
    for s in range(runs):
        m = FederatedKMeans(2, gamma=0.25, server_points="centers", secure=False, n_init=1,
                            client_init=client_init, random_state=s).fit([X0, X1])
        if removal == "saved":  # the removal happens on a model saved and loaded
            m.save(tmp_path / "m.npz")
            m = FederatedKMeans.load(tmp_path / "m.npz")
        m.remove(0, rm0)
        if rm_clients:
            m.remove_clients(rm_clients)
        o = _outcome(m, 0)
        after[(tuple(sorted(int(keep0.tolist().index(i)) for i in o[0])),) + o[1:]] += 1
        data = [X0[keep0]] + ([] if rm_clients else [X1])
        f = FederatedKMeans(2, gamma=0.25, server_points="centers", secure=False, n_init=1,
                            client_init=client_init, random_state=10**6 + s).fit(data)
        fresh[_outcome(f, 0)] += 1
    keys = sorted(set(after) | set(fresh))
    table = np.array([[after[k] for k in keys], [fresh[k] for k in keys]])
    table = table[:, table.sum(0) > 0]
    assert table.shape[1] >= 2
    _, pval, _, _ = stats.chi2_contingency(table)
    assert pval > 1e-3, (pval, keys, table)


def test_means_clients_send_the_means_of_their_seeds_cells():
    # Oracle: brute force nearest seed (ties to the lowest seed position, as
    # k-means++ labels them) and numpy means, before and after removals.
    rng = np.random.default_rng(21)
    X = rng.uniform(-0.5, 0.5, size=(60, 3))
    c = MufcClient(X, 5, gamma=0.05, client_init="means", random_state=4)
    seeds = MufcClient(X, 5, gamma=0.05, random_state=4)
    removed = np.zeros(len(X), dtype=bool)
    for ids in ([], [3], [10, 11, 12], [int(c._seeding.center_ids_[1])]):
        if ids:
            c.remove(ids)
            seeds.remove(ids)
            removed[ids] = True
        S = seeds.cluster_centers_
        Xa = X[~removed]
        d2 = ((Xa[:, None, :] - S[None, :, :]) ** 2).sum(-1)
        lab = np.argmin(d2, axis=1)
        want = np.array([Xa[lab == j].mean(0) for j in range(len(S))])
        np.testing.assert_allclose(c.cluster_centers_, want, rtol=0, atol=1e-15)
        assert c.cluster_sizes_.tolist() == np.bincount(lab, minlength=len(S)).tolist()
        # the sizes-weighted mean of the centers is the data mean
        np.testing.assert_allclose(c.cluster_sizes_ @ c.cluster_centers_ / len(Xa),
                                   Xa.mean(0), atol=1e-14)


@pytest.mark.slow
@pytest.mark.statistical
def test_negative_control_not_unlearning_is_detected():
    """The chi-square of the exactness test rejects (p < 1e-6) when the
    'after' model is a fit on the full data, i.e. when nothing was unlearned
    (only the counts are compared after dropping the removed point)."""
    X0 = np.array([[-0.45], [-0.4], [-0.1], [0.05], [0.3], [0.42]])
    X1 = np.array([[-0.3], [0.0], [0.2], [0.25]])
    keep0 = np.array([0, 1, 3, 4, 5])
    wrong, fresh = Counter(), Counter()
    for s in range(800):
        m = FederatedKMeans(2, gamma=0.25, server_points="centers", secure=False, n_init=1,
                            random_state=s).fit([X0, X1])
        ids = m._clients[0]._seeding.center_ids_.tolist()
        wrong[tuple(sorted(keep0.tolist().index(i) if i in keep0 else -1 for i in ids))] += 1
        f = FederatedKMeans(2, gamma=0.25, server_points="centers", secure=False, n_init=1,
                            random_state=10**6 + s).fit([X0[keep0], X1])
        fresh[tuple(sorted(f._clients[0]._seeding.center_ids_.tolist()))] += 1
    keys = sorted(set(wrong) | set(fresh))
    table = np.array([[wrong[k] for k in keys], [fresh[k] for k in keys]])
    _, pval, _, _ = stats.chi2_contingency(table)
    assert pval < 1e-6


@pytest.mark.parametrize("secure,server_points,client_init", [
    (True, "uniform", "k-means++"), (False, "centers", "full"), (True, "centers", "means")])
def test_save_load_continues_identically(tmp_path, secure, server_points, client_init):
    clients = gaussian_clients(np.random.default_rng(8), L=4)
    m = FederatedKMeans(4, server_points=server_points, client_init=client_init,
                        secure=secure, random_state=5).fit(clients)
    m.remove(0, [1, 2])
    path = tmp_path / "model.npz"
    m.save(path)
    assert not any(p.name.startswith(".pyfkm-") for p in tmp_path.iterdir())
    m2 = FederatedKMeans.load(path)
    assert m2.get_params()["n_clusters"] == 4
    assert np.array_equal(m2.cluster_centers_, m.cluster_centers_)
    # the same removals afterwards give the same models, including reseeding
    steps = [(1, [int(m._clients[1]._seeding.center_ids_[0])]), (2, [3, 4, 5]), (0, [7])]
    for client, ids in steps:
        r1, r2 = m.remove(client, ids), m2.remove(client, ids)
        assert (r1.reseeded, r1.position) == (r2.reseeded, r2.position)
        assert np.array_equal(m.cluster_centers_, m2.cluster_centers_)
        assert np.array_equal(m.aggregate_counts_, m2.aggregate_counts_)
        for a, b in zip(m.client_centers_, m2.client_centers_):
            assert np.array_equal(a, b)
    m.remove_clients([3])
    m2.remove_clients([3])
    assert np.array_equal(m.cluster_centers_, m2.cluster_centers_)


def test_load_rejects_other_files(tmp_path):
    bad = tmp_path / "x.npz"
    np.savez(bad, header=np.frombuffer(b'{"format": "other", "version": 1}', dtype=np.uint8))
    with pytest.raises(InvalidInputError):
        FederatedKMeans.load(bad)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file")
    with pytest.raises(InvalidInputError):
        FederatedKMeans.load(junk)


def test_executor_runs_give_the_same_model():
    from concurrent.futures import ThreadPoolExecutor

    clients = gaussian_clients(np.random.default_rng(9), L=5)
    ref = FederatedKMeans(4, server_points="centers", random_state=11).fit(clients)
    with ThreadPoolExecutor(2) as ex:
        m = FederatedKMeans(4, server_points="centers", random_state=11, executor=ex).fit(clients)
    assert np.array_equal(ref.cluster_centers_, m.cluster_centers_)
    for a, b in zip(ref.client_centers_, m.client_centers_):
        assert np.array_equal(a, b)
    # and removals continue identically (the client generators were carried over)
    for mm in (ref, m):
        mm.remove(2, [int(mm._clients[2]._seeding.center_ids_[0]), 5])
    assert np.array_equal(ref.cluster_centers_, m.cluster_centers_)


def test_dask_executor_gives_the_same_model():
    import distributed  # in the test extras

    clients = gaussian_clients(np.random.default_rng(10), L=4)
    ref = FederatedKMeans(3, server_points="centers", random_state=12).fit(clients)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        m = FederatedKMeans(3, server_points="centers", random_state=12,
                            executor=client.get_executor()).fit(clients)
    assert np.array_equal(ref.cluster_centers_, m.cluster_centers_)
    assert np.array_equal(ref.aggregate_counts_, m.aggregate_counts_)


@pytest.mark.statistical
def test_uniform_server_keeps_a_uniform_subset_of_its_samples():
    """After a count decrement the server keeps q - 1 of its q samples of the
    bin; which one is dropped must be uniform (so the kept samples are iid
    uniform in the bin, as a fresh draw).  Chi-square over 1200 runs of the
    index of the dropped sample among q = 4, alpha = 1e-3."""
    from pyfkm.mufc import MufcServer

    drops = Counter()
    for s in range(1200):
        srv = MufcServer(1, gamma=0.5, n_features=1, server_points="uniform", n_init=1,
                         random_state=s)
        srv.update(np.array([[0]]), np.array([4]))
        before = srv._samples[(0,)].copy()
        srv.update(np.array([[0]]), np.array([3]))
        after = srv._samples[(0,)]
        kept = [int(np.flatnonzero(before[:, 0] == v)[0]) for v in after[:, 0]]
        dropped = sorted(set(range(4)) - set(kept))
        assert len(dropped) == 1 and after.shape == (3, 1)
        drops[dropped[0]] += 1
        # every sample lies in its bin [lower + 0, lower + 0.5)
        assert np.all((after >= -0.5) & (after < 0.0))
    _, pval = stats.chisquare([drops[i] for i in range(4)])
    assert pval > 1e-3


def test_merge_sparse_sums_counts_per_bin_in_lexicographic_order():
    # Oracle: a Counter over row tuples, sorted.  Few rows (the Python path)
    # and many (the vector path), negative coordinates, repeated bins within
    # and across parts, and counts cancelling to zero (dropped).
    from collections import Counter
    rng = np.random.default_rng(5)
    for trial in range(40):
        d = int(rng.integers(1, 4))
        n_parts = int(rng.integers(1, 4))
        lo = -3 if trial % 2 else 0
        parts = []
        for _ in range(n_parts):
            k = int(rng.integers(0, 5 if trial < 20 else 60))
            parts.append((rng.integers(lo, 3, size=(k, d)), rng.integers(-3, 4, size=k)))
        want = Counter()
        for b, c in parts:
            for row, q in zip(map(tuple, b.tolist()), c.tolist()):
                want[row] += q
        items = sorted((r, q) for r, q in want.items() if q != 0)
        bins, counts = merge_sparse(parts, d)
        assert bins.dtype == np.int64 and counts.dtype == np.int64
        assert bins.shape == (len(items), d)
        assert [tuple(r) for r in bins.tolist()] == [r for r, _ in items]
        assert counts.tolist() == [q for _, q in items]
    # totals outside int64 raise on both paths; huge counts that cancel do not
    from pyfkm.exceptions import CapacityError
    for rows in (2, 65):
        zeros = [0] * (rows - 2)
        with pytest.raises(CapacityError, match="int64"):
            merge_sparse([(np.zeros((rows, 1), dtype=np.int64),
                           np.array([2**62, 2**62] + zeros))], 1)
        bins, counts = merge_sparse([(np.zeros((rows, 1), dtype=np.int64),
                                      np.array([2**62, -2**62] + zeros))], 1)
        assert bins.tolist() == [] and counts.tolist() == []
        bins, counts = merge_sparse([(np.zeros((rows, 1), dtype=np.int64),
                                      np.array([-2**63, 2**62] + zeros))], 1)
        assert bins.tolist() == [[0]] and counts.tolist() == [-2**62]



def test_the_federation_state_is_public_and_read_only():
    clients = gaussian_clients(np.random.default_rng(21), L=4)
    m = FederatedKMeans(4, random_state=2)
    for name in ("participants_", "removed_", "client_center_rows_", "threshold_"):
        with pytest.raises(NotFittedError):
            getattr(m, name)
    m.fit(clients)
    assert m.participants_ == [0, 1, 2, 3]
    assert [r.tolist() for r in m.removed_] == [[False] * len(X) for X in clients]
    assert m.threshold_ == m._agg.threshold >= 1
    # the rows of the local centers, in seeding order: a center of client 1
    # is found again by distance to its local centers
    rows = m.client_center_rows_[1]
    np.testing.assert_array_equal(clients[1][rows], m.client_centers_[1])
    # a non-center row: the mask marks it, the copy cannot change the model
    other = next(i for i in range(len(clients[2])) if i not in m.client_center_rows_[2])
    m.remove(2, other)
    mask = m.removed_[2]
    assert np.flatnonzero(mask).tolist() == [other]
    mask[:] = True
    assert np.flatnonzero(m.removed_[2]).tolist() == [other]
    # removing the first center reseeds from position 0; the rows move on
    first = int(m.client_center_rows_[1][0])
    rep = m.remove(1, first)
    assert rep.reseeded and rep.position == 0
    assert first not in m.client_center_rows_[1].tolist()
    assert not m.removed_[1][m.client_center_rows_[1]].any()
    # a client that leaves is out of the roster; its data is gone
    m.remove_clients([3])
    assert m.participants_ == [0, 1, 2]
    assert m.removed_[3] is None and m.client_center_rows_[3] is None
