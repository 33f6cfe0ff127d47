"""The one report base (issue 20): every report the package returns derives
from pyfkm._base.Report, keeps its attribute names, and shares ``as_dict``
and a readable ``str``; an idea with two names has both (aliases).

Expected values: the fields each report declares (dataclasses.fields) and
tables written out by hand.
"""
import dataclasses

import numpy as np
import pytest

import pyfkm
from pyfkm._base import Report
from pyfkm.core import RemovalReport
from pyfkm.deletion import DeletionReport
from pyfkm.mufc import BaselineRemovalReport, FederatedRemovalReport, KFed
from pyfkm.mufc.client import ClientRemovalReport
from pyfkm.outliers import CommunicationReport, DistributedKZCenter, make_noisy_blobs
from pyfkm.outliers.distributed import RoundTraffic
from pyfkm.secagg import ScmaReport, secure_sum_sparse

REPORTS = [RemovalReport, ClientRemovalReport, FederatedRemovalReport, BaselineRemovalReport,
           DeletionReport, CommunicationReport, RoundTraffic, ScmaReport]

# the attribute names each report had before the base (public API: unchanged)
FIELDS = {
    RemovalReport: ["n_removed", "reseeded", "position"],
    ClientRemovalReport: ["n_removed", "reseeded", "position", "refit", "seconds"],
    FederatedRemovalReport: ["clients", "reseeded", "position", "aggregate_changed",
                             "server_reclustered", "client_seconds", "aggregation_seconds",
                             "server_seconds", "bytes_sent", "incremental_decode",
                             "offline_seconds", "details", "dropped"],
    BaselineRemovalReport: ["clients", "n_removed", "client_retrained", "server_retrained",
                            "centers_changed", "client_seconds", "server_seconds"],
    DeletionReport: ["n_deleted", "retrained", "reason", "seconds"],
    CommunicationReport: ["rounds"],
    RoundTraffic: ["name", "sender", "points", "weights", "scalars"],
    ScmaReport: ["mode", "modulus", "round", "n_participants", "message_words",
                 "bytes_per_client", "server_bytes", "decode_seconds", "incremental",
                 "paper_bits_per_client", "dense_bits_per_client", "dropped"],
}


@pytest.mark.parametrize("cls", REPORTS, ids=lambda c: c.__name__)
def test_every_report_derives_from_the_base_and_keeps_its_fields(cls):
    assert issubclass(cls, Report)
    assert dataclasses.is_dataclass(cls)
    assert [f.name for f in dataclasses.fields(cls)] == FIELDS[cls]


def test_reports_are_frozen_and_round_trip_through_as_dict():
    r = DeletionReport(3, True, "seed", 0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.n_deleted = 4
    d = r.as_dict()
    assert d == {"n_deleted": 3, "retrained": True, "reason": "seed", "seconds": 0.5}
    assert list(d) == FIELDS[DeletionReport]          # declaration order
    assert DeletionReport(**d) == r
    d["n_deleted"] = 9                                 # a new dict: the report is unchanged
    assert r.n_deleted == 3


def test_str_is_a_table_of_the_fields_then_the_totals():
    r = BaselineRemovalReport(clients=(0, 2), n_removed=3, client_retrained=True,
                              server_retrained=False, centers_changed=True,
                              client_seconds=0.25, server_seconds=1 / 3)
    assert str(r) == "\n".join([
        "BaselineRemovalReport",
        "  clients           (0, 2)",
        "  n_removed         3",
        "  client_retrained  True",
        "  server_retrained  False",
        "  centers_changed   True",
        "  client_seconds    0.25",
        "  server_seconds    0.333333",
        "  total_seconds     0.583333",
    ])
    # repr stays the dataclass's (evaluable)
    assert repr(r).startswith("BaselineRemovalReport(clients=(0, 2), n_removed=3,")


def test_str_leaves_out_bulky_fields_and_summarizes_long_tuples():
    inner = ClientRemovalReport(1, False, None, False, 0.0)
    r = FederatedRemovalReport((1,), False, None, True, True, 0.1, 0.2, 0.3, 100,
                               details=(inner,), dropped=tuple(range(12)))
    text = str(r)
    assert "details" not in text                       # repr=False: not in the table
    assert "  dropped              (12 items)" in text.splitlines()
    assert r.as_dict()["details"] == (inner,)          # but kept by as_dict
    rounds = tuple(RoundTraffic(f"r{i}", "machines", points=i) for i in range(3))
    c = CommunicationReport(rounds)
    assert str(c).splitlines() == [
        "CommunicationReport",
        "  rounds    (3 items)",
        "  n_rounds  3",
        "  points    3",
        "  weights   0",
        "  scalars   0",
        "  total     3",
    ]


def test_one_name_per_idea_by_aliases():
    d = DeletionReport(4, False, "", 0.1)
    assert d.n_removed == d.n_deleted == 4
    c = ClientRemovalReport(2, True, 0, True, 0.0)
    assert c.retrained is c.refit is True
    assert "n_removed" not in d.as_dict() and "retrained" not in c.as_dict()


def test_reports_returned_by_the_estimators():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    reports = [pyfkm.RemovableSeeding(X, 3, random_state=0).remove([0, 1]),
               pyfkm.QKMeans(3, random_state=0).fit(X).remove([0, 1]),
               pyfkm.DCKMeans(3, n_leaves=2, random_state=0).fit(X).remove([0, 1])]
    clients = [rng.uniform(-0.4, 0.4, (60, 2)) for _ in range(3)]
    fkm = pyfkm.FederatedKMeans(3, secure=False, random_state=0).fit(clients)
    reports.append(fkm.remove(1, [0, 1]))
    reports.append(reports[-1].details[0])
    reports.append(KFed(3, random_state=0).fit(clients).remove(0, [2]))
    Y, _, _ = make_noisy_blobs(150, 2, 3, 10, random_state=0)
    reports.append(DistributedKZCenter(3, 10, random_state=0).fit([Y[:75], Y[75:]])
                   .communication_)
    reports.append(secure_sum_sparse([([[1, 2]], [2]), ([[0, 3]], [1])], bins_per_dim=10)[2])
    assert {type(r) for r in reports} == set(REPORTS) - {RoundTraffic}
    for r in reports:
        assert isinstance(r, Report)
        lines = str(r).splitlines()
        assert lines[0] == type(r).__name__
        shown = [f.name for f in dataclasses.fields(r) if f.repr]
        assert [line.split()[0] for line in lines[1:len(shown) + 1]] == shown
        assert r.as_dict() == {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}
