"""One-call secure sum of sparse vectors through the real SCMA roles."""

import numpy as np

from ..exceptions import InvalidInputError
from ..field import DEFAULT_PRIME
from ..rng import as_generator, spawn
from ._messages import KeyMessage, RosterMessage, RoundMessage, SyndromeMessage
from ._params import ScmaParams
from ._roles import ScmaClient, ScmaServer


def setup_in_process(params, n_clients, random_state=None, client_ids=None):
    """A server and ``n_clients`` clients (ids 0 .. n-1, or ``client_ids``)
    after key agreement, every message passed through its bytes; the clients
    come as a list, or a dict by id when ``client_ids`` is given.
    ``random_state`` None draws the keys from the OS; a generator makes them
    reproducible (tests only)."""
    ids = list(range(n_clients)) if client_ids is None else [int(i) for i in client_ids]
    gen = None if random_state is None else as_generator(random_state)
    keys = spawn(gen, len(ids)) if gen is not None else [None] * len(ids)
    roles = [ScmaClient(i, random_state=k) for i, k in zip(ids, keys)]
    server = ScmaServer(params)
    for c in roles:
        server.receive_key(KeyMessage.from_bytes(c.key_message(params.run_id).to_bytes()))
    roster = server.roster().to_bytes()
    for c in roles:
        c.receive_roster(RosterMessage.from_bytes(roster))
    return server, (roles if client_ids is None else dict(zip(ids, roles)))


def secure_sum_sparse(clients, bins_per_dim, *, mode="auto", max_nonzeros=None,
                      modulus=DEFAULT_PRIME, random_state=None):
    """Securely sum the clients' sparse count vectors (SCMA), in process.

    Runs the whole protocol through :class:`ScmaClient` and
    :class:`ScmaServer` with every message serialized to bytes and parsed
    back, as it would cross a network: key agreement, encoding, masking,
    aggregation and decoding.

    Parameters
    ----------
    clients : sequence of (bins, counts)
        ``bins``: int array (nnz, d), coordinates in ``[0, bins_per_dim)``;
        ``counts``: positive ints.  A client may have no bins.
    bins_per_dim : int
        ``B``.
    mode : {"auto", "index", "hashed"}
        Encoding; "auto" takes "index" when ``B**d < modulus``.
    max_nonzeros : int, optional
        ``M``, bound on the aggregate's distinct bins; default the sum of
        the clients' nonzeros (the paper's ``K L``).
    modulus : int
        Field prime.
    random_state : None, int or Generator
        Seeds the run id, hash seed and the clients' keys (None: OS
        randomness, as a deployment would use).

    Returns
    -------
    bins : ndarray (m, d) int64, rows sorted lexicographically
    counts : ndarray (m,) int64
    report : ScmaReport

    Examples
    --------
    >>> bins, counts, rep = secure_sum_sparse(
    ...     [([[0, 1], [2, 2]], [3, 1]), ([[0, 1]], [4])], bins_per_dim=3, random_state=0)
    >>> bins.tolist(), counts.tolist(), rep.mode
    ([[0, 1], [2, 2]], [7, 1], 'index')
    """
    clients = list(clients)
    if not clients:
        raise InvalidInputError("need at least one client")
    dims = [np.asarray(b).shape[1] for b, _ in clients if np.asarray(b).ndim == 2]
    if not dims:
        raise InvalidInputError("cannot infer n_dims: every client is empty; pass 2-D bins")
    d = dims[0]
    nnz = sum(np.asarray(c).size for _, c in clients)
    M = max_nonzeros if max_nonzeros is not None else max(nnz, 1)
    gen = None if random_state is None else as_generator(random_state)
    params = ScmaParams.create(d, bins_per_dim, M, modulus=modulus, mode=mode,
                               random_state=gen)
    server, roles = setup_in_process(params, len(clients), gen)
    for c, (bins, counts) in zip(roles, clients):
        c.set_data(bins, counts)
    rnd = server.start_round().to_bytes()
    for c in roles:
        server.receive(SyndromeMessage.from_bytes(
            c.respond(RoundMessage.from_bytes(rnd)).to_bytes()))
    res = server.finish_round()
    return res.bins, res.counts, res.report
