"""In-process drivers of the MSA roles: every message through its bytes."""
import os

from .._messages import (InputRequest, KeyMessage, RoundMessage, ShareBundle, ShareMessage,
                         UnmaskMessage, UnmaskRequest)
from ._client import MsaClient
from ._fixed import DEFAULT_SCALE_BITS
from ._messages import AggregateMessage, GroupKeyMessage, MaskedVectorMessage, MsaRosterMessage
from ._server import MsaServer

def setup_msa(n_clients, n_words, *, scale_bits=DEFAULT_SCALE_BITS, noise=None,
              threshold=None, degree=0):
    """A server and ``n_clients`` clients (ids 0..n-1) after key agreement and
    group-key distribution, every message passed through its bytes.  Every
    key and the run id come from the operating system."""
    run_id = os.urandom(16)
    server = MsaServer(run_id, n_words, scale_bits=scale_bits, noise=noise,
                       threshold=threshold, degree=degree)
    clients = [MsaClient(i) for i in range(n_clients)]
    for c in clients:
        server.receive_key(KeyMessage.from_bytes(c.key_message(run_id).to_bytes()))
    roster = server.roster().to_bytes()
    for c in clients:
        c.receive_roster(MsaRosterMessage.from_bytes(roster))
    for m in clients[0].group_key_messages():
        server.relay_group_key(GroupKeyMessage.from_bytes(m.to_bytes()))
    for c in clients[1:]:
        c.receive_group_key(GroupKeyMessage.from_bytes(server.group_key_for(c.client_id).to_bytes()))
    return server, clients


def msa_round(server, clients, vectors, *, noise=(), server_noise=(), silent=()):
    """One MSA round in process, every message through its bytes: the
    clients in ``silent`` share keys and then go silent; returns the
    decoded sum of the others (as every client decodes it) and the
    survivors."""
    silent = set(silent)
    rmsg = RoundMessage.from_bytes(server.start_round().to_bytes())
    for c in clients:
        server.receive_shares(ShareMessage.from_bytes(c.share_keys(rmsg).to_bytes()))
    for c in clients:
        c.receive_shares(ShareBundle.from_bytes(server.bundle(c.client_id).to_bytes()))
    req = InputRequest.from_bytes(server.request_inputs().to_bytes())
    for c, v in zip(clients, vectors):
        if c.client_id not in silent:
            server.receive(MaskedVectorMessage.from_bytes(c.respond(req, v, noise).to_bytes()))
    ureq = UnmaskRequest.from_bytes(server.unmask_request().to_bytes())
    for c in clients:
        if c.client_id in ureq.survivors:
            server.receive_unmask(UnmaskMessage.from_bytes(c.unmask_shares(ureq).to_bytes()))
    agg = AggregateMessage.from_bytes(server.finish_round(server_noise).to_bytes())
    alive = [c for c in clients if c.client_id in agg.survivors]
    return alive[0].unmask(agg), agg.survivors
