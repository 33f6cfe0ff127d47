"""Tests of the MUFC server's multi-init loop and its coupled update for count
decrements (pyfkm.mufc.MufcServer with server_points="centers")."""
from collections import Counter
from itertools import permutations

import numpy as np
import pytest
from scipy import stats

from pyfkm._core import _lloyd
from pyfkm.exceptions import InvalidInputError, NumericalError
from pyfkm.core.kmeans import KMeans, absolute_tolerance
from pyfkm.mufc import MufcServer
from _helpers.mufc_server import GAMMA, LOWER, copy_gen, server


def centres(bins):
    """Bin centres, computed here from the grid definition."""
    return np.ascontiguousarray((np.asarray(bins, dtype=np.float64) + 0.5) * GAMMA + LOWER)


def random_aggregate(rng, n_bins, d, max_count=6):
    """Distinct bins in lexicographic order (as the aggregation returns them)
    with positive counts."""
    side = max(8, 2 * int(np.ceil(n_bins ** (1 / d))))
    flat = rng.choice(side ** d, size=n_bins, replace=False)
    bins = np.array(np.unravel_index(np.sort(flat), (side,) * d)).T.astype(np.int64, order="C")
    return bins, rng.integers(1, max_count + 1, size=n_bins).astype(np.int64)


# -- bad input first -----------------------------------------------------------

@pytest.mark.parametrize("kw", [{"n_init": 0}, {"max_iter": 0}, {"tol": -1.0},
                                {"tol": float("nan")}, {"server_points": "median"}])
def test_bad_parameters_raise(kw):
    args = dict(gamma=GAMMA, n_features=2, server_points="centers")
    args.update(kw)
    with pytest.raises(InvalidInputError):
        MufcServer(3, **args)


@pytest.mark.parametrize("path", ["coupled", "full"])
def test_an_update_that_fails_changes_nothing(path, monkeypatch):
    """A Lloyd run that raises midway (the third one) leaves the server as it
    was: the next update gives what a server that never failed gives."""
    import pyfkm.mufc.server as mufc
    rng = np.random.default_rng(13)
    bins, counts = random_aggregate(rng, 25, 2, max_count=5)
    counts[:4] = 5
    a, b = server(3, 2, 5, 6), server(3, 2, 5, 6)
    for srv in (a, b):                  # a first decrement: traces recorded
        srv.update(bins, counts)
        srv.update(bins, counts - np.eye(25, dtype=np.int64)[3])
    counts = a.counts_.copy()
    assert any(t is not None for t in a._traces)
    new = counts.copy()
    new[:3] -= 4                        # big decrements: some inits reseed
    if path == "full":
        new[5] += 1
    real, calls = mufc._lloyd_run, []

    def failing(*args, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise NumericalError("injected")
        return real(*args, **kw)

    monkeypatch.setattr(mufc, "_lloyd_run", failing)
    state = a._rng.bit_generator.state
    seeds, centers = a._seeds.copy(), a.cluster_centers_.copy()
    with pytest.raises(InvalidInputError, match="injected"):
        a.update(bins, new)
    assert a._rng.bit_generator.state == state
    assert np.array_equal(a._seeds, seeds) and np.array_equal(a.cluster_centers_, centers)
    assert np.array_equal(a.counts_, counts)
    monkeypatch.setattr(mufc, "_lloyd_run", real)
    a.update(bins, new)
    b.update(bins, new)
    assert np.array_equal(a._seeds, b._seeds)
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a._rng.bit_generator.state == b._rng.bit_generator.state


# -- a fresh recluster is KMeans ---------------------------------------------------

@pytest.mark.parametrize("n_bins,d,k,n_init,seed", [
    (40, 2, 4, 10, 0), (7, 3, 3, 4, 1), (3, 2, 5, 3, 2), (60, 1, 6, 2, 3)])
def test_full_recluster_equals_kmeans_with_the_same_generator(n_bins, d, k, n_init, seed):
    rng = np.random.default_rng(100 + seed)
    bins, counts = random_aggregate(rng, n_bins, d)
    s = server(k, d, n_init, seed)
    gen = copy_gen(s._rng)
    assert s.update(bins, counts)
    km = KMeans(min(k, n_bins), n_init=n_init, max_iter=300, tol=1e-4,
                random_state=gen).fit(centres(bins), sample_weight=counts.astype(float))
    assert np.array_equal(s.cluster_centers_, km.cluster_centers_)
    assert s.inertia_ == km.inertia_ and s.n_iter_ == km.n_iter_
    # the same generator use
    assert s._rng.bit_generator.state == gen.bit_generator.state


# -- decrement-only updates: the bookkeeping and the traces ----------------------

def _direct(P, seeds, w, max_iter, tol):
    """Best (first on ties) of plain lloyd_loop runs from each init's seeds."""
    tol_abs = absolute_tolerance(P, tol)
    best = None
    for s in seeds:
        C, _, _, inertia, n_iter = _lloyd.lloyd_loop(P, P[s], w, max_iter, tol_abs)
        if best is None or inertia < best[1]:
            best = (C, inertia, n_iter)
    return best


@pytest.mark.parametrize("n_bins,d,k,n_init,seed", [(30, 2, 4, 6, 0), (12, 3, 3, 3, 1)])
def test_decrements_equal_lloyd_from_the_kept_seeds(n_bins, d, k, n_init, seed):
    rng = np.random.default_rng(200 + seed)
    bins, counts = random_aggregate(rng, n_bins, d, max_count=4)
    s = server(k, d, n_init, seed)
    s.update(bins, counts)
    P = centres(bins)
    n_reseeded = n_kept = 0
    for step in range(40):
        room = np.flatnonzero(counts > 1)
        if room.size == 0:
            break
        new = counts.copy()
        for b in rng.choice(room, size=min(room.size, 1 + step % 3), replace=False):
            new[b] -= rng.integers(1, counts[b])
        before = s._seeds.copy()
        assert s.update(bins, new)
        counts = new
        changed = (s._seeds != before).any(axis=1)
        traced = np.array([t is not None for t in s._traces])
        # an init whose seeds changed reran without a trace (a reseed may
        # draw the same seeds again: then either is possible)
        assert not (changed & traced).any()
        n_reseeded += int(changed.sum())
        n_kept += int(traced.sum())
        for row in s._seeds:
            assert np.unique(row).size == k
        C, inertia, n_iter = _direct(P, s._seeds, counts.astype(float), 300, 1e-4)
        assert np.array_equal(s.cluster_centers_, C)
        assert s.inertia_ == inertia and s.n_iter_ == n_iter
        assert np.array_equal(s.counts_, counts)
    assert n_reseeded > 0 and n_kept > 0


def test_decrements_on_a_large_server_run_without_traces():
    # >= 2 * 4096 points: lloyd is not one lloyd_loop call there, no trace
    rng = np.random.default_rng(7)
    bins, counts = random_aggregate(rng, 8200, 5, max_count=3)
    s = server(3, 5, 2, 4, max_iter=20)
    s.update(bins, counts)
    new = counts.copy()
    new[np.flatnonzero(counts > 1)[:50]] -= 1
    before = s._seeds.copy()
    s.update(bins, new)
    assert s._traces == [None, None]
    assert (s._seeds == before).all(axis=1).any()   # the coupled update kept seeds
    km_from = [KMeans(3, init=centres(bins)[row], n_init=1, max_iter=20, tol=1e-4)
               .fit(centres(bins), sample_weight=new.astype(float)) for row in s._seeds]
    best = min(km_from, key=lambda km: km.inertia_)   # min keeps the first on ties
    assert np.array_equal(s.cluster_centers_, best.cluster_centers_)
    assert s.inertia_ == best.inertia_


# -- the full path for any other change -------------------------------------------

@pytest.mark.parametrize("change", ["to-zero", "increase", "new-bin", "fewer-bins"])
def test_other_changes_recluster_from_scratch(change):
    rng = np.random.default_rng(11)
    bins, counts = random_aggregate(rng, 20, 2, max_count=5)
    counts[3] = 1
    s = server(3, 2, 4, 5)
    s.update(bins, counts)
    new_bins, new = bins, counts.copy()
    new[0] = max(new[0] - 1, 1)          # also a decrement, which alone would couple
    if change == "to-zero":              # the aggregate drops a bin that reached 0
        keep = np.arange(20) != 3
        new_bins, new = bins[keep], new[keep]
    elif change == "increase":
        new[5] += 1
    elif change == "new-bin":
        extra = np.array([[7, 7]])
        assert not (bins == extra).all(1).any()
        new_bins = np.vstack([bins, extra])
        new = np.append(new, 2)
    else:
        new_bins, new = bins[:-1], new[:-1]
    gen = copy_gen(s._rng)
    s.update(new_bins, new)
    km = KMeans(3, n_init=4, random_state=gen).fit(centres(new_bins),
                                                  sample_weight=new.astype(float))
    assert np.array_equal(s.cluster_centers_, km.cluster_centers_)
    assert s._rng.bit_generator.state == gen.bit_generator.state
    assert s._traces == [None] * 4


def test_a_decrement_does_not_recluster_from_scratch():
    # the negative of the test above: the coupled update draws far less
    rng = np.random.default_rng(11)
    bins, counts = random_aggregate(rng, 20, 2, max_count=5)
    counts[0] = 5
    s = server(3, 2, 4, 5)
    s.update(bins, counts)
    new = counts.copy()
    new[0] -= 1
    gen = copy_gen(s._rng)
    s.update(bins, new)
    KMeans(3, n_init=4, random_state=gen).fit(centres(bins), sample_weight=new.astype(float))
    assert s._rng.bit_generator.state != gen.bit_generator.state


def test_an_unchanged_aggregate_does_nothing():
    rng = np.random.default_rng(12)
    bins, counts = random_aggregate(rng, 10, 2)
    s = server(3, 2, 2, 0)
    assert s.update(bins, counts)
    state = s._rng.bit_generator.state
    assert not s.update(bins.copy(), counts.copy())
    assert s._rng.bit_generator.state == state


# -- statistical exactness of the coupling -----------------------------------------

def d2_law(P, w, k):
    """Exact law of the ordered seed sequence of weighted D^2 seeding, by
    enumeration: first seed proportional to w, each later one to
    w * (squared distance to the nearest earlier seed), or, when that mass
    is zero, proportional to w among the points not chosen yet."""
    n = len(P)
    D = ((P[:, None, :] - P[None, :, :]) ** 2).sum(-1)
    law = {}
    for seq in permutations(range(n), k):
        p = 1.0
        for j, b in enumerate(seq):
            if j == 0:
                mass = w.astype(float)
            else:
                mass = w * D[:, list(seq[:j])].min(axis=1)
                if mass.sum() == 0:
                    mass = w * ~np.isin(np.arange(n), seq[:j])
            p *= mass[b] / mass.sum()
        if p > 0:
            law[seq] = p
    return law


def cells(law, n):
    """Chi-square cells: each outcome expected at least 5 times under ``law``
    alone, the others pooled (with the last cell if they are expected fewer
    than 5 times together)."""
    big = sorted(k for k in law if law[k] * n >= 5)
    small = sorted(k for k in law if law[k] * n < 5)
    groups = [[k] for k in big]
    if small and sum(law[k] for k in small) * n >= 5:
        groups.append(small)
    else:
        groups[-1] += small
    return groups


def cell_probs(law, groups):
    return np.array([sum(law.get(k, 0.0) for k in g) for g in groups])


def chi2_pvalue(counter, law, n):
    assert set(counter) <= set(law)   # no impossible outcome
    groups = cells(law, n)
    obs = np.array([sum(counter[k] for k in g) for g in groups], dtype=float)
    return stats.chisquare(obs, cell_probs(law, groups) * n).pvalue


CASES = {
    # 1-D: 5 bins on a line; bins 0 and 2 lose copies
    "1d": (np.array([[0], [1], [3], [6], [7]]), np.array([4, 2, 5, 1, 3]),
           np.array([1, 2, 1, 1, 3]), 2),
    # 2-D, k = 3: a reseed can start at any position
    "2d": (np.array([[0, 0], [0, 1], [3, 0], [4, 4], [1, 5], [6, 2]]),
           np.array([3, 4, 2, 5, 1, 3]), np.array([1, 4, 2, 2, 1, 1]), 3),
}


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("case", sorted(CASES))
def test_coupled_seeds_follow_the_d2_law_of_the_new_counts(case):
    """N = 20000 trials of (recluster on the old counts, decrement to the new
    ones) on one server (independent draws of one generator), n_init = 1.

    Three chi-square goodness-of-fit tests against the enumerated laws, at
    alpha = 1e-3 (fixed seed; outcomes expected fewer than 5 times pooled in
    one cell): the seeds after the recluster follow the old law; the seeds
    after the coupled update follow the new law (the claim); the seeds of a
    coupling that never reseeds -- the old seeds kept as they are -- are
    rejected against the new law (p < 1e-6).  Power of that rejection,
    computed below from the noncentral chi-square with noncentrality
    N * sum (p_old - p_new)^2 / p_new over the cells: > 0.999.
    """
    bins, old, new, k = CASES[case]
    P = centres(bins)
    law_old = d2_law(P, old, k)
    law_new = d2_law(P, new, k)
    N = 20000
    groups = cells(law_new, N)
    p_new, p_old = cell_probs(law_new, groups), cell_probs(law_old, groups)
    lam = N * ((p_old - p_new) ** 2 / p_new).sum()
    df = len(groups) - 1
    assert stats.ncx2.sf(stats.chi2.isf(1e-6, df), df, lam) > 0.999
    s = server(k, bins.shape[1], 1, 31 + len(case), max_iter=1)
    before, after = Counter(), Counter()
    for _ in range(N):
        s.update(bins, old)
        before[tuple(s._seeds[0].tolist())] += 1
        s.update(bins, new)
        after[tuple(s._seeds[0].tolist())] += 1
    assert chi2_pvalue(before, law_old, N) > 1e-3
    assert chi2_pvalue(after, law_new, N) > 1e-3
    # the wrong coupling (never reseed) keeps the seeds drawn on the old counts
    assert chi2_pvalue(before, law_new, N) < 1e-6
