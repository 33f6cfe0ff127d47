"""pyfkm.demo: every system in a timed section, then a summary table."""
import re

import pytest

from pyfkm import InvalidInputError
from pyfkm.demo import run_demo

SYSTEMS = ["KMeans", "RemovableSeeding", "FederatedKMeans", "QKMeans", "DCKMeans",
           "DPFederatedKMeans", "KZCenter", "DistributedKZCenter"]


@pytest.mark.parametrize("seed", [-1, 1.5, True, "0", None])
def test_bad_seed_is_a_clear_error(seed):
    with pytest.raises(InvalidInputError, match="seed"):
        run_demo(seed=seed, quick=True, out=lambda line: None)


@pytest.fixture(scope="module")
def quick():
    lines = []
    summary = run_demo(seed=1, quick=True, out=lines.append)
    return summary, lines


def test_quick_demo_has_every_section_and_the_summary_table(quick):
    summary, lines = quick
    text = "\n".join(lines)
    # five numbered sections, in order
    heads = [int(m.group(1)) for m in re.finditer(r"^(\d)\. ", text, re.M)]
    assert heads == [1, 2, 3, 4, 5]
    assert [r["system"] for r in summary["rows"]] == [
        "KMeans", "RemovableSeeding", "FederatedKMeans", "FederatedKMeans", "QKMeans",
        "DCKMeans", "DPFederatedKMeans", "KZCenter", "DistributedKZCenter"]
    table = text[text.index("\nSummary\n"):]
    for system in SYSTEMS:
        assert re.search(rf"^  {system} +\S", table, re.M), system
    for row in summary["rows"]:
        assert row["seconds"] > 0 and row["quality"]
        assert row["quality"] in table and row["what"] in table
    # the total is at least the sum of the timed rows
    assert summary["total_seconds"] >= sum(r["seconds"] for r in summary["rows"])
    assert "secure aggregation" in text and "epsilon=1" in text


def test_quick_demo_numbers_are_sensible(quick):
    summary, _ = quick
    # blobs with std 1.5 in a [-10, 10]^d box are well separated: Lloyd finds
    # them (inertia near the ideal one, labels right)
    assert 0.9 < summary["inertia_ratio"] < 1.2
    assert summary["agreement"] > 0.9
    # the federated objective cannot beat the best centralized one by much
    assert 0.9 < summary["fed_loss_ratio"] < 2.5
    # DP with epsilon 1 on 4,000 points of 2-D blobs, against the same
    # algorithm and init without noise: the noise comes from the OS (not the
    # seed), so a loose bound; far from putting all points in one cluster
    assert 0.5 < summary["dp_nicv_ratio"] < 4
    assert summary["dp_kmeans_ratio"] >= 0.99      # never beats the best centralized fit
    # the planted outliers are far from the blobs: the greedy finds most
    assert summary["kz_recall"] >= 0.8
    # Guo & Li's guarantee on the radius (24(1+eps) of the optimum, which the
    # centralized 3-approximation bounds from below by a third of it)
    assert 0 < summary["dkz_radius_ratio"] <= 3 * 24 * 1.1


def test_same_seed_same_quality_numbers():
    a = run_demo(seed=3, quick=True, out=lambda line: None)
    b = run_demo(seed=3, quick=True, out=lambda line: None)
    # times differ; what the algorithms compute does not (DP noise aside)
    for key in ("inertia_ratio", "agreement", "fed_loss_ratio", "kz_recall",
                "dkz_radius_ratio"):
        assert a[key] == b[key], key


@pytest.mark.slow
def test_default_demo_runs_in_under_a_minute(capsys):
    summary = run_demo(seed=0, out=print)
    out = capsys.readouterr().out
    assert "100,000 points" in out and "Summary" in out
    assert summary["total_seconds"] < 60
    assert summary["inertia_ratio"] < 1.05 and summary["fed_loss_ratio"] < 1.5


def test_a_factor_below_one_reads_slower_never_faster():
    from pyfkm.demo import _faster, _slower
    assert _faster(37.2, "retraining") == "37x faster than retraining"
    assert _faster(2.5, "reseeding") == "2.5x faster than reseeding"
    assert _faster(0.6, "retraining") == "1.7x slower than retraining"
    assert _slower(37.2) == "37x slower" and _slower(0.5) == "2.0x faster"
