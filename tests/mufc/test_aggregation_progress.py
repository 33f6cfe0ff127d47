"""Progress of the secure rounds of FederatedKMeans (issue 21): every
per-client loop of a round is a named phase whose counts reach their totals,
and reporting changes nothing in the model."""
import numpy as np

from pyfkm.mufc import FederatedKMeans

ROUND = ["key shares", "share bundles", "masked inputs", "unmask", "decode"]


def _clients(L=5, n=12, d=3):
    rng = np.random.default_rng(3)
    return [rng.uniform(-0.5, 0.5, (n, d)) for _ in range(L)]


def _phases(calls):
    """[(desc, [done, ...], total)] in the order the phases ran."""
    out = []
    for done, total, desc in calls:
        if not out or out[-1][0] != desc:
            out.append((desc, [], total))
        assert out[-1][2] == total, desc
        out[-1][1].append(done)
    return out


def _check_counts(phases):
    for desc, dones, total in phases:
        # each phase counts up to its total, one step at a time (the decode is
        # announced at 0 as it starts)
        start = 0 if desc.endswith("decode") else 1
        assert dones == list(range(start, total + 1)), (desc, dones, total)


def _kw(**kw):
    return dict(n_clusters=3, random_state=0, server_points="centers", secure=True, **kw)


def test_fit_reports_every_phase_of_the_round_in_order_and_the_same_model():
    clients = _clients()
    calls = []
    est = FederatedKMeans(**_kw(progress=lambda *a: calls.append(a))).fit(clients)
    phases = _phases(calls)
    _check_counts(phases)
    assert [p[0] for p in phases] == ["client fits", "keys"] + [f"round 1: {s}" for s in ROUND]
    assert [p[2] for p in phases] == [5, 5, 5, 5, 5, 5, 1]
    ref = FederatedKMeans(**_kw()).fit(clients)
    assert np.array_equal(est.cluster_centers_, ref.cluster_centers_)
    assert all(np.array_equal(a, b) for a, b in zip(est.client_centers_, ref.client_centers_))


def test_removal_rounds_report_their_phases_and_give_the_same_model():
    clients = _clients()
    calls = []
    est = FederatedKMeans(**_kw(progress=lambda *a: calls.append(a))).fit(clients)
    ref = FederatedKMeans(**_kw()).fit(clients)
    calls.clear()
    est.remove(1, [0, 2])
    ref.remove(1, [0, 2])
    phases = _phases(calls)
    _check_counts(phases)
    descs = [p[0] for p in phases]
    # the round of the removal (its offline part run ahead or not) and the
    # next round's offline part, run after it
    assert any(s.endswith("masked inputs") for s in descs)
    assert any(s.endswith("decode") for s in descs)
    assert descs[-1].endswith("masks ahead")
    assert np.array_equal(est.cluster_centers_, ref.cluster_centers_)
    calls.clear()
    est.remove_clients([3])
    ref.remove_clients([3])
    _check_counts(_phases(calls))
    assert any(s.endswith("decode") for _, _, s in calls)
    assert np.array_equal(est.cluster_centers_, ref.cluster_centers_)
