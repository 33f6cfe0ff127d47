"""Tests of the MSA driver (pyfkm.secagg.msa._driver): setup_msa with a
missing participant.  The oracles are described in tests/_helpers/msa.py."""
import pytest

from pyfkm.exceptions import ProtocolError
from pyfkm.secagg.msa import setup_msa
from _helpers.msa import close_round, open_round, send


def test_setup_msa_three_clients_and_a_missing_participant():
    # threshold 3 of 3: a missing message makes the round fail, never a wrong sum
    server, clients = setup_msa(3, 2, threshold=3)
    req = open_round(server, clients)
    for c in clients[:2]:
        send(server, c.respond(req, [1.0, 1.0]))
    with pytest.raises(ProtocolError, match="below the threshold"):
        server.unmask_request()
    send(server, clients[2].respond(req, [1.0, -5.0]))
    agg = close_round(server, clients)
    assert [c.unmask(agg).tolist() for c in clients] == [[3.0, -3.0]] * 3
    # threshold 2 of 3: the missing client is a dropout, the round sums the others
    server, clients = setup_msa(3, 2)
    req = open_round(server, clients)
    for c in clients[:2]:
        send(server, c.respond(req, [1.0, 1.0]))
    agg = close_round(server, clients)
    assert agg.survivors == (0, 1) and server.last_dropped == (2,)
    assert [c.unmask(agg).tolist() for c in clients] == [[2.0, 2.0]] * 3
