"""Tests of the MSA client (pyfkm.secagg.msa._client): keys from the OS only,
refusals that change nothing, the threshold, tampered group keys, late
inputs, no pickling of key material.  The oracles are described in
tests/_helpers/msa.py."""
import inspect
import pickle

import numpy as np
import pytest

from pyfkm.exceptions import CapacityError, InvalidInputError, ProtocolError, PyfkmError
from pyfkm.secagg._messages import RoundMessage
from pyfkm.secagg.msa import GroupKeyMessage, MsaClient, MsaServer, setup_msa
from pyfkm.secagg.msa._fixed import encoding_limit
from _helpers.msa import close_round, open_round, send


def test_no_random_state_reaches_the_keys():
    # the API takes no seed, and seeding numpy's global generator fixes nothing
    assert "random_state" not in inspect.signature(setup_msa).parameters
    assert "random_state" not in inspect.signature(MsaServer).parameters
    with pytest.raises(TypeError):
        MsaClient(0, random_state=1)
    runs, state = [], np.random.get_state()
    try:
        for _ in range(2):
            np.random.seed(0)
            server, _ = setup_msa(2, 3)
            runs.append((server.run_id, server.roster().public_keys,
                         server.roster().server_key))
    finally:
        np.random.set_state(state)
    assert runs[0][0] != runs[1][0]
    assert not set(runs[0][1]) & set(runs[1][1]) and runs[0][2] != runs[1][2]


def test_client_share_overflow_raises_and_changes_nothing():
    server, (a, b) = setup_msa(2, 3)
    req = open_round(server, (a, b))
    # a share may use 2**62 / (2 n) of the ring: the noise gets the other half
    big = encoding_limit(4) / 2.0 ** 16 * 1.01
    with pytest.raises(CapacityError):
        a.respond(req, [0.0, big, 0.0])
    # the client can still answer the same round (nothing was consumed)
    send(server, a.respond(req, [1.0, 2.0, 3.0]))
    send(server, b.respond(req, [1.0, 1.0, 1.0]))
    assert a.unmask(close_round(server, (a, b))).tolist() == [2.0, 3.0, 4.0]


def test_respond_wrong_length_and_answered_twice():
    server, (a, b) = setup_msa(2, 3)
    req = open_round(server, (a, b))
    with pytest.raises(InvalidInputError):
        a.respond(req, [1.0, 2.0])
    a.respond(req, [1.0, 2.0, 3.0])
    with pytest.raises(ProtocolError):
        a.respond(req, [1.0, 2.0, 3.0])
    # and a round is never shared twice (its mask streams would repeat)
    with pytest.raises(ProtocolError, match="never reused"):
        a.share_keys(RoundMessage(server.run_id, req.round, (0, 1)))


def test_client_refuses_a_round_below_the_threshold():
    server, clients = setup_msa(5, 2)                  # threshold 3
    assert server.roster().threshold == 3
    with pytest.raises(ProtocolError, match="threshold"):
        clients[0].share_keys(RoundMessage(server.run_id, 1, (0, 1)))
    with pytest.raises(ProtocolError, match="threshold"):
        server.start_round((0, 1))
    # the client is unchanged: it takes the round over three
    clients[0].share_keys(RoundMessage(server.run_id, 1, (0, 1, 2)))


def test_tampered_group_key_is_rejected():
    run = b"r" * 16
    a, b = MsaClient(0), MsaClient(1)
    server = MsaServer(run, 2)
    for c in (a, b):
        server.receive_key(c.key_message(run))
    for c in (a, b):
        c.receive_roster(server.roster())
    (gk,) = a.group_key_messages()
    bad = GroupKeyMessage(run, 0, 1, gk.nonce, bytes([gk.ciphertext[0] ^ 1]) + gk.ciphertext[1:])
    with pytest.raises(ProtocolError, match="authentication"):
        b.receive_group_key(bad)
    with pytest.raises(ProtocolError, match="group key"):
        b.share_keys(RoundMessage(run, 1, (0, 1)))
    b.receive_group_key(gk)
    b.share_keys(RoundMessage(run, 1, (0, 1)))


def test_late_input_is_refused_and_stays_masked():
    # a client whose input arrives after the server named the survivors is
    # refused (the round is past inputs); the sum is the survivors'
    server, clients = setup_msa(4, 2, threshold=3)
    req = open_round(server, clients)
    for c in clients[:3]:
        send(server, c.respond(req, [1.0, 2.0]))
    late = clients[3].respond(req, [100.0, 100.0])
    ureq = server.unmask_request()
    with pytest.raises(ProtocolError):
        server.receive(late)
    for c in clients[:3]:
        server.receive_unmask(c.unmask_shares(ureq))
    assert clients[3].unmask(server.finish_round()).tolist() == [3.0, 6.0]


def test_client_with_key_material_is_not_pickled():
    # a copy of a client could answer one round twice, or reveal both kinds
    # of share of a peer (the consistency rule lives in the client): after
    # the roster a client refuses to be pickled
    _, (a, _b) = setup_msa(2, 3)
    with pytest.raises((TypeError, PyfkmError)):
        pickle.dumps(a)
