"""In-process drivers of the MSA roles: every message through its bytes."""
from __future__ import annotations

import os
from typing import Iterable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._messages import (InputRequest, KeyMessage, RoundMessage, ShareBundle, ShareMessage,
                         UnmaskMessage, UnmaskRequest)
from ._client import MsaClient
from ._fixed import DEFAULT_SCALE_BITS
from ._messages import (AggregateMessage, GroupKeyMessage, KeyBatchBundle, KeyBatchMessage,
                        MaskedVectorMessage, MsaRosterMessage)
from ._server import MsaServer

def setup_msa(n_clients: int, n_words: int, *, scale_bits: int = DEFAULT_SCALE_BITS,
              noise: str | None = None, threshold: int | None = None, degree: int = 0
              ) -> tuple[MsaServer, list[MsaClient]]:
    """A server and ``n_clients`` clients (ids 0..n-1) after key agreement and
    group-key distribution, every message passed through its bytes.  Every
    key and the run id come from the operating system.

    Parameters
    ----------
    n_clients : int
        Number of clients.
    n_words : int
        Length of every vector.
    scale_bits : int, default=DEFAULT_SCALE_BITS
        Fixed-point scale ``2**scale_bits``.
    noise : {None, "gaussian", "laplace"}, default=None
        Noise the server adds to the sum (trusted-curator baselines only).
    threshold : int, optional
        Fewest clients of any round (default a strict majority).
    degree : int, default=0
        Neighbours per client (even; 0 is the complete graph).

    Returns
    -------
    server : MsaServer
        The server, ready to start a round.
    clients : list of MsaClient
        The clients, ids ``0..n_clients-1``.

    Examples
    --------
    >>> import numpy as np
    >>> server, clients = setup_msa(3, 2)
    >>> total, survivors = msa_round(server, clients, [[1.0, 2.0], [0.5, 0.0], [0.25, 1.0]])
    >>> np.round(total, 4).tolist(), list(survivors)
    ([1.75, 3.0], [0, 1, 2])
    """
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


def msa_key_batch(server: MsaServer, clients: Sequence[MsaClient], count: int) -> tuple[int, ...]:
    """Share the keys of the next ``count`` rounds in one flight, every
    message through its bytes: each client draws ``count`` fresh round keys
    and self seeds (OS CSPRNG) and sends their shares in one
    :class:`KeyBatchMessage`; :func:`msa_round` then runs those rounds
    without steps 1-2 (see ``docs/threat_model.md``).

    Parameters
    ----------
    server : MsaServer
        The server of :func:`setup_msa`.
    clients : list of MsaClient
        Its clients.
    count : int
        Rounds of the batch, in ``[1, MAX_BATCH]``.

    Returns
    -------
    tuple of int
        The clients that shared the batch (the default participants of its
        rounds).

    Examples
    --------
    >>> server, clients = setup_msa(3, 1)
    >>> msa_key_batch(server, clients, 2)
    (0, 1, 2)
    >>> msa_round(server, clients, [[1.0], [2.0], [4.0]])[0].tolist()
    [7.0]
    >>> msa_round(server, clients, [[0.5], [3.0], [5.0]], silent=[0])[0].tolist()
    [8.0]
    """
    rmsg = RoundMessage.from_bytes(server.start_key_batch(count).to_bytes())
    for c in clients:
        server.receive_key_batch(KeyBatchMessage.from_bytes(
            c.share_key_batch(rmsg, count).to_bytes()))
    sharers: tuple[int, ...] = ()
    for c in clients:
        b = KeyBatchBundle.from_bytes(server.key_batch_bundle(c.client_id).to_bytes())
        c.receive_key_batch(b)
        sharers = b.sharers
    return sharers


def msa_round(server: MsaServer, clients: Sequence[MsaClient], vectors: Sequence[ArrayLike], *,
              noise: Sequence[tuple[int, float, bytes]] = (),
              server_noise: Sequence[tuple[int, float, bytes]] = (), silent: Iterable[int] = ()
              ) -> tuple[NDArray[np.float64], tuple[int, ...]]:
    """One MSA round in process, every message through its bytes: the
    clients in ``silent`` share keys and then go silent; returns the
    decoded sum of the others (as every client decodes it) and the
    survivors.  A round of a key batch (:func:`msa_key_batch`) skips the
    key sharing.

    Parameters
    ----------
    server : MsaServer
        The server of :func:`setup_msa`.
    clients : list of MsaClient
        Its clients.
    vectors : sequence of array-like of float
        One vector of ``n_words`` reals per client, in the order of ``clients``.
    noise : sequence of (int, float, bytes), default=()
        The clients' distributed noise segments ``(length, sigma, tag)``
        (see :meth:`MsaClient.respond`).
    server_noise : sequence of (int, float, bytes), default=()
        The server's noise segments (only with a server ``noise`` mode).
    silent : iterable of int, default=()
        Ids of the clients that go silent after sharing keys.

    Returns
    -------
    total : ndarray of float64
        The decoded sum of the surviving clients' vectors.
    survivors : tuple of int
        Ids of the clients whose vectors are in the sum.

    Raises
    ------
    ProtocolError
        If too few clients survive.

    Examples
    --------
    >>> server, clients = setup_msa(3, 1)
    >>> total, survivors = msa_round(server, clients, [[1.0], [2.0], [4.0]], silent=[1])
    >>> total.tolist(), list(survivors)
    ([5.0], [0, 2])
    """
    silent = set(silent)
    rmsg = RoundMessage.from_bytes(server.start_round().to_bytes())
    if server.in_key_batch():
        # the round's keys came in the key batch: no steps 1-2
        for c in clients:
            if c.client_id in rmsg.participants:
                c.enter_round(rmsg)
    else:
        for c in clients:
            server.receive_shares(ShareMessage.from_bytes(c.share_keys(rmsg).to_bytes()))
        for c in clients:
            c.receive_shares(ShareBundle.from_bytes(server.bundle(c.client_id).to_bytes()))
    req = InputRequest.from_bytes(server.request_inputs().to_bytes())
    for c, v in zip(clients, vectors):
        if c.client_id not in silent and c.client_id in rmsg.participants:
            server.receive(MaskedVectorMessage.from_bytes(c.respond(req, v, noise).to_bytes()))
    ureq = UnmaskRequest.from_bytes(server.unmask_request().to_bytes())
    for c in clients:
        if c.client_id in ureq.survivors:
            server.receive_unmask(UnmaskMessage.from_bytes(c.unmask_shares(ureq).to_bytes()))
    agg = AggregateMessage.from_bytes(server.finish_round(server_noise).to_bytes())
    alive = [c for c in clients if c.client_id in agg.survivors]
    return alive[0].unmask(agg), agg.survivors
