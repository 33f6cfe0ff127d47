"""MSA messages built once by their client, and the client's checked noise
plan (issue 22) against the checked constructors and the plain checks.

* A client's share and masked-vector messages, built from its own state
  without the constructor's checks and tagged once, equal the checked
  constructor's (fields and bytes), parse back equal, and an altered one is
  refused by the server.
* ``client_noise``'s checked segment plan is cached; failing checks raise
  every time; unhashable segments still work.
"""
import numpy as np
import pytest

from pyfkm.exceptions import CapacityError, InvalidInputError
from pyfkm.secagg import MaskedVectorMessage, ProtocolError, UnmaskMessage, msa_round, setup_msa
from pyfkm.secagg._framing import TAG_BYTES
from pyfkm.secagg._messages import (InputRequest, RoundMessage, ShareBundle, ShareMessage,
                                    UnmaskRequest)
from pyfkm.secagg.msa._noise import _kernel_plan, _noise_plan, client_noise


# ---------------------------------------------------------------- errors first

def test_msa_altered_masked_vector_is_refused():
    server, clients = setup_msa(3, 4)
    r = RoundMessage.from_bytes(server.start_round().to_bytes())
    for c in clients:
        server.receive_shares(ShareMessage.from_bytes(c.share_keys(r).to_bytes()))
    for c in clients:
        c.receive_shares(ShareBundle.from_bytes(server.bundle(c.client_id).to_bytes()))
    req = InputRequest.from_bytes(server.request_inputs().to_bytes())
    data = bytearray(clients[0].respond(req, [1.0, 2.0, 3.0, 4.0]).to_bytes())
    data[-TAG_BYTES - 1] ^= 1
    with pytest.raises(ProtocolError, match="authentication"):
        server.receive(MaskedVectorMessage.from_bytes(bytes(data)))


def test_client_noise_plan_checks_raise_every_time():
    for _ in range(2):
        with pytest.raises(InvalidInputError, match="cover"):
            client_noise(((3, 1.0, b"A"),), 4, 2, 16, 1, 2**40)
        with pytest.raises(InvalidInputError, match="distinct"):
            client_noise(((2, 1.0, b"A"), (2, 1.0, b"A")), 4, 2, 16, 1, 2**40)
        with pytest.raises(CapacityError):
            client_noise(((4, 1e-9, b"A"),), 4, 2, 16, 1, 2**40)


# ---------------------------------------------------------------- equalities

def test_msa_messages_built_once_equal_the_checked_constructors():
    server, clients = setup_msa(3, 4)
    r = RoundMessage.from_bytes(server.start_round().to_bytes())
    for c in clients:
        msg = c.share_keys(r)
        checked = ShareMessage(msg.run_id, msg.round, msg.sender, msg.round_key,
                               msg.commitment, msg.holders, msg.ciphertexts, msg.tag)
        assert checked == msg and checked.to_bytes() == msg.to_bytes()
        assert ShareMessage.from_bytes(msg.to_bytes()) == msg
        server.receive_shares(ShareMessage.from_bytes(msg.to_bytes()))
    for c in clients:
        c.receive_shares(ShareBundle.from_bytes(server.bundle(c.client_id).to_bytes()))
    req = InputRequest.from_bytes(server.request_inputs().to_bytes())
    for c, x in zip(clients, ([1.0, 2.0, 3.0, 4.0], [0.5, 0, 0, -1], [2, 2, 2, 2])):
        msg = c.respond(req, x, ((3, 0.5, b"S"), (1, 0.5, b"C")))
        checked = MaskedVectorMessage(msg.run_id, msg.round, msg.sender, msg.payload, msg.tag)
        assert checked == msg and checked.to_bytes() == msg.to_bytes()
        assert not msg.payload.flags.writeable
        assert MaskedVectorMessage.from_bytes(msg.to_bytes()) == msg
        server.receive(MaskedVectorMessage.from_bytes(msg.to_bytes()))
    ureq = UnmaskRequest.from_bytes(server.unmask_request().to_bytes())
    for c in clients:
        server.receive_unmask(UnmaskMessage.from_bytes(c.unmask_shares(ureq).to_bytes()))


def test_msa_round_sums_exactly_without_noise_over_many_rounds():
    server, clients = setup_msa(3, 5)
    rng = np.random.default_rng(0)
    for _ in range(4):
        vecs = [rng.integers(-50, 50, 5) / 4.0 for _ in clients]
        total, surv = msa_round(server, clients, vecs, silent=[1])
        assert surv == (0, 2)
        np.testing.assert_array_equal(total, vecs[0] + vecs[2])


def test_client_noise_plan_is_cached_and_unhashable_segments_work():
    _noise_plan.cache_clear()
    _kernel_plan.cache_clear()
    seg = ((3, 1.0, b"S"), (1, 0.0, b"C"))
    a = client_noise(seg, 4, 2, 16, 1, 2**40)
    b = client_noise(list(seg), 4, 2, 16, 2, 2**40)
    # checked once, then the kernel's arrays come from the cache
    assert _kernel_plan.cache_info().hits == 1 and _noise_plan.cache_info().misses == 1
    assert a.dtype == b.dtype == np.uint64 and a.shape == b.shape == (4,)
    assert a[3] == b[3] == 0                                  # sigma 0: no noise
    c = client_noise(((3, 1.0, bytearray(b"S")), (1, 0.0, b"C")), 4, 2, 16, 1, 2**40)
    assert c.shape == (4,) and c[3] == 0
    assert _noise_plan(seg, 4, 2, 16) == ((3, b"S", float(np.ldexp(1.0 / np.sqrt(2), 16))),
                                          (1, b"C", 0))
