"""In-process drivers of the SCMA roles: every message through its bytes."""
from __future__ import annotations

import threading
from concurrent.futures import Executor, Future, wait
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..._progress import progress_bar
from ...exceptions import InvalidInputError, ProtocolError
from ...field import DEFAULT_PRIME
from .._messages import (InputRequest, KeyMessage, RoundMessage, ShareBundle, ShareMessage,
                         UnmaskRequest)
from ._client import ScmaClient
from ._messages import RosterMessage
from ._params import ScmaParams
from ._server import ScmaServer

if TYPE_CHECKING:
    from ._server import ScmaReport, ScmaResult


@overload
def setup_in_process(params: ScmaParams, n_clients: int, client_ids: None = None, *,
                     threshold: int | None = None, degree: int = 0,
                     progress: bool | Callable[..., Any] = False
                     ) -> tuple[ScmaServer, list[ScmaClient]]: ...
@overload
def setup_in_process(params: ScmaParams, n_clients: int, client_ids: Iterable[int], *,
                     threshold: int | None = None, degree: int = 0,
                     progress: bool | Callable[..., Any] = False
                     ) -> tuple[ScmaServer, dict[int, ScmaClient]]: ...
def setup_in_process(params: ScmaParams, n_clients: int, client_ids: Iterable[int] | None = None,
                     *, threshold: int | None = None, degree: int = 0,
                     progress: bool | Callable[..., Any] = False
                     ) -> tuple[ScmaServer, list[ScmaClient] | dict[int, ScmaClient]]:
    """A server and ``n_clients`` clients (ids 0 .. n-1, or ``client_ids``)
    after key agreement, every message passed through its bytes; the clients
    come as a list, or a dict by id when ``client_ids`` is given.  Every key
    comes from the operating system.

    Parameters
    ----------
    params : ScmaParams
        The run's parameters (:meth:`ScmaParams.create`).
    n_clients : int
        Number of clients.
    client_ids : iterable of int, optional
        Their ids (default ``0..n_clients-1``).
    threshold : int, optional
        Fewest clients of any round (default a strict majority).
    degree : int, default=0
        Neighbours per client (even; 0 is the complete graph).
    progress : bool or callable, default=False
        Report the clients' key agreement ("keys", one step a client; see
        :mod:`pyfkm._progress`).

    Returns
    -------
    server : ScmaServer
        The server, ready to start a round.
    clients : list of ScmaClient or dict of int to ScmaClient
        The clients, a dict by id when ``client_ids`` is given.

    Examples
    --------
    >>> params = ScmaParams.create(2, 10, 4)
    >>> server, clients = setup_in_process(params, 2, client_ids=[5, 9])
    >>> sorted(clients), type(server).__name__
    ([5, 9], 'ScmaServer')
    """
    ids = list(range(n_clients)) if client_ids is None else [int(i) for i in client_ids]
    roles = [ScmaClient(i) for i in ids]
    server = ScmaServer(params, threshold=threshold, degree=degree)
    for c in roles:
        server.receive_key(KeyMessage.from_bytes(c.key_message(params.run_id).to_bytes()))
    # a broadcast: in process its bytes are parsed once for every client
    # (the message is immutable)
    roster = RosterMessage.from_bytes(server.roster().to_bytes())
    # each client's key agreement with its neighbours: the long loop
    bar = progress_bar(progress, len(roles), "keys")
    for c in roles:
        c.receive_roster(roster)
        bar.update()
    bar.close()
    return server, (roles if client_ids is None else dict(zip(ids, roles)))


class RoundTrip:
    """One round of the roles in process, step by step, counting bytes.

    ``share()`` runs steps 1-2 (the offline part: no data involved);
    ``inputs(delta_nonzeros)`` and ``finish()`` the online part.  Clients in
    ``silent`` share keys and then go silent (their inputs and unmask
    answers never arrive); a client whose step raises
    :class:`ProtocolError` is treated the same way (a client that cannot
    answer is a dropout), so the round completes over the survivors or
    raises when too few remain.  Every message goes through its bytes.

    Parameters
    ----------
    server : ScmaServer
        The run's server, after the roster (:func:`setup_in_process`).
    roles : dict of int to ScmaClient
        The clients by id.
    participants : iterable of int, optional
        The clients of the round (default: every id of ``roles``).
    silent : iterable of int, default=()
        Ids of the clients that go silent after sharing keys.
    progress : bool or callable, default=False
        Report progress of the round's steps (see :mod:`pyfkm._progress`).

    Attributes
    ----------
    bytes_up, bytes_down : int
        Bytes sent to and from the server so far, every message counted.
    round : int
        The round (after :meth:`share`).
    sharers : tuple of int
        The participants whose key shares reached the server.
    failed : dict of int to ProtocolError
        The clients whose step raised, with the error.

    Examples
    --------
    >>> from pyfkm.secagg import RoundTrip, ScmaParams, setup_in_process
    >>> server, clients = setup_in_process(ScmaParams.create(2, 10, 4), 3)
    >>> for c, counts in zip(clients, [[1], [2], [4]]):
    ...     c.set_data([[5, 5]], counts)
    >>> trip = RoundTrip(server, dict(enumerate(clients)), silent=[2])
    >>> res = trip.share().inputs().finish()
    >>> res.counts.tolist(), res.dropped, trip.sharers
    ([3], (2,), (0, 1, 2))
    >>> trip.bytes_up > 0 and trip.bytes_down > 0
    True
    """

    def __init__(self, server: ScmaServer, roles: Mapping[int, ScmaClient],
                 participants: Iterable[int] | None = None, silent: Iterable[int] = (),
                 progress: bool | Callable[..., Any] = False) -> None:
        self.server, self.roles = server, roles
        self.parts = tuple(sorted(roles) if participants is None else participants)
        self.silent = set(silent)
        self.bytes_up = self.bytes_down = 0
        self.progress = progress
        self.failed: dict[int, BaseException] = {}

    def _bar(self, desc: str) -> Any:
        return progress_bar(self.progress, len(self.parts), desc)

    def share(self, executor: Executor | None = None) -> RoundTrip:
        """Steps 1-2: open the round, collect the key shares and deliver the
        bundles (no data involved: can run ahead of time).

        Parameters
        ----------
        executor : concurrent.futures.Executor, optional
            A ``ThreadPoolExecutor`` (the roles stay in this process) on
            which each client computes its mask of a full round
            (:meth:`ScmaClient.precompute_mask`, a kernel that releases the
            GIL) as soon as its shares arrived, in batches, while this
            thread delivers the other clients' bundles (their key
            exchanges hold the GIL).  A later full round's
            :meth:`inputs` then only adds the encodings.  Every task has
            ended when this returns; the masks are those :meth:`inputs`
            would compute.

        Returns
        -------
        RoundTrip
            ``self``, for chaining.

        Raises
        ------
        ProtocolError
            The server refuses the round, or fewer than ``threshold`` clients
            share keys.
        """
        srv, roles = self.server, self.roles
        rmsg = srv.start_round(self.parts)
        raw = rmsg.to_bytes()
        msg = RoundMessage.from_bytes(raw)
        self.round = rmsg.round
        bar = self._bar(f"round {rmsg.round}: key shares")
        for i in self.parts:
            self.bytes_down += len(raw)
            try:
                out = roles[i].share_keys(msg).to_bytes()
            except ProtocolError as e:
                self.failed[i] = e
                bar.update()
                continue
            self.bytes_up += len(out)
            srv.receive_shares(ShareMessage.from_bytes(out))
            bar.update()
        bar.close()
        self.sharers = tuple(i for i in self.parts if i not in self.failed)
        # each client decrypts its neighbours' shares (a key exchange each)
        bar = progress_bar(self.progress, len(self.sharers),
                           f"round {rmsg.round}: share bundles")
        masks = None if executor is None else _Batches(executor, _precompute_masks)
        size = max(1, -(-len(self.sharers) // _ANSWER_TASKS))
        ready: list[ScmaClient] = []
        try:
            for i in self.sharers:
                b = srv.bundle(i).to_bytes()
                self.bytes_down += len(b)
                try:
                    roles[i].receive_shares(ShareBundle.from_bytes(b))
                except ProtocolError as e:
                    self.failed[i] = e
                else:
                    ready.append(roles[i])
                bar.update()
                if masks is not None and len(ready) >= size:
                    masks.submit(ready)
                    ready = []
        except BaseException:
            if masks is not None:
                masks.abandon()        # no task uses a role once this raises
            raise
        finally:
            bar.close()
        if masks is not None:
            if ready:
                masks.submit(ready)
            masks.finish()             # raises once no task uses a role
        return self

    def inputs(self, delta_nonzeros: int = 0, executor: Executor | None = None) -> RoundTrip:
        """Step 3: request and collect the masked inputs of the clients that
        are not silent.

        Parameters
        ----------
        delta_nonzeros : int, default=0
            0 for a full round; else a difference round for at most this many
            changed bins (see :meth:`ScmaServer.request_inputs`).
        executor : concurrent.futures.Executor, optional
            Runs the clients' answers (their encodings and masks, computed in
            kernels that release the GIL) as tasks, a few clients each.  The
            roles stay in this process (they cannot be pickled: keys), so it
            must run tasks in this process: a ``ThreadPoolExecutor``.  Each
            role is used by one task at a time; the server only here.  The
            answers are identical to the serial ones and reach the server
            in the same order.

        Returns
        -------
        RoundTrip
            ``self``, for chaining.

        Raises
        ------
        ProtocolError
            The server refuses the request or an input.
        """
        srv, roles = self.server, self.roles
        req = srv.request_inputs(delta_nonzeros).to_bytes()
        msg = InputRequest.from_bytes(req)
        outs = []
        bar = progress_bar(self.progress, len(self.sharers), f"round {self.round}: masked inputs")
        if executor is None:
            for i in self.sharers:
                if i not in self.silent and i not in self.failed:
                    self.bytes_down += len(req)
                    try:
                        outs.append(roles[i].respond(msg).to_bytes())
                    except ProtocolError as e:
                        self.failed[i] = e
                bar.update()
        else:
            todo = [i for i in self.sharers if i not in self.silent and i not in self.failed]
            self.bytes_down += len(req) * len(todo)
            bar.update(len(self.sharers) - len(todo))
            for i, out in zip(todo, _answer_all(roles, todo, msg, executor, bar)):
                if isinstance(out, ProtocolError):
                    self.failed[i] = out
                else:
                    outs.append(out)
        bar.close()
        self.bytes_up += sum(map(len, outs))
        srv.receive_many(outs)
        return self

    def finish(self, incremental: bool = True) -> ScmaResult:
        """Step 4 and the decode: the survivors reveal their shares and the
        server decodes their sum.

        Parameters
        ----------
        incremental : bool, default=True
            Passed to :meth:`ScmaServer.finish_round`.

        Returns
        -------
        ScmaResult
            The survivors' aggregate and the round's report.

        Raises
        ------
        ProtocolError
            Fewer than ``threshold`` inputs arrived, or too few shares to
            remove the masks (naming the survivors that refused to unmask).
        DecodeError
            The aggregate cannot be decoded.
        """
        srv, roles = self.server, self.roles
        req = srv.unmask_request()
        raw = req.to_bytes()
        msg = UnmaskRequest.from_bytes(raw)
        bar = progress_bar(self.progress, len(req.survivors), f"round {self.round}: unmask")
        outs = []
        for i in req.survivors:
            self.bytes_down += len(raw)
            try:
                outs.append(roles[i].unmask(msg).to_bytes())
            except ProtocolError as e:      # a survivor that cannot answer: the
                self.failed[i] = e          # others' shares may still do
            bar.update()
        bar.close()
        self.bytes_up += sum(map(len, outs))
        # the server drains its queue: every answer checked as
        # receive_unmask(UnmaskMessage.from_bytes(out)) would
        srv.receive_unmask_many(outs)
        # one step (the recovery and the decode run in the server's kernels):
        # announced as it starts (0 done), so a long decode is not silent
        bar = progress_bar(self.progress, 1, f"round {self.round}: decode")
        bar.update(0)
        try:
            res = srv.finish_round(incremental=incremental)
            bar.update()
            return res
        except ProtocolError as e:
            refused = {i: err for i, err in self.failed.items() if i in req.survivors}
            if refused:               # say why: clients refused, not only "too few shares"
                i, err = next(iter(refused.items()))
                raise ProtocolError(f"{e}; {len(refused)} survivors refused to unmask "
                                    f"(client {i}: {err})") from None
            raise
        finally:
            bar.close()


# tasks of RoundTrip.inputs on an executor (batches of clients): few enough
# that their overhead stays small (tens of microseconds each), enough to
# balance a pool of up to that many workers
_ANSWER_TASKS = 16


def _answer_batch(roles: Mapping[int, ScmaClient], ids: Sequence[int], msg: InputRequest
                  ) -> list[bytes | ProtocolError]:
    """The wire answers of clients ``ids`` to ``msg`` (a refusal as its
    :class:`ProtocolError`)."""
    out: list[bytes | ProtocolError] = []
    for i in ids:
        try:
            out.append(roles[i].respond(msg).to_bytes())
        except ProtocolError as e:
            out.append(e)
    return out


def _precompute_masks(batch: Sequence[ScmaClient]) -> None:
    """Each client's mask of a full round of its open round."""
    for c in batch:
        c.precompute_mask(0)


class _Batches:
    """Batches of work on an executor, each run exactly once: by a worker, or
    by the calling thread in :meth:`finish` when no worker has started it
    (so the work completes even when every worker of the pool is busy with
    other tasks, e.g. a client's fit that timed out and still runs).
    :meth:`finish` returns (or raises) only once no task runs any more, so
    no task still uses a role afterwards."""

    def __init__(self, executor: Executor, fn: Callable[[Any], Any]) -> None:
        self.executor, self.fn = executor, fn
        self.lock = threading.Lock()
        self.args: list[Any] = []
        self.futures: list[Future[Any] | None] = []
        self.owner: list[str] = []     # "" (unclaimed), "pool" or "caller"
        self.error: BaseException | None = None

    def _claim(self, k: int, who: str) -> bool:
        with self.lock:
            if self.owner[k]:
                return False
            self.owner[k] = who
            return True

    def _task(self, k: int) -> Any:
        return self.fn(self.args[k]) if self._claim(k, "pool") else None

    def submit(self, arg: Any) -> None:
        """Queue one batch.  After a failed submission no batch is
        submitted any more and none runs in the calling thread:
        :meth:`finish` raises the submission's error once no task runs."""
        k = len(self.args)
        self.args.append(arg)
        self.owner.append("")
        self.futures.append(None)
        if self.error is None:
            try:
                self.futures[k] = self.executor.submit(self._task, k)
            except BaseException as e:     # raised by finish, once no task runs
                self.error = e

    def abandon(self) -> None:
        """Run no more batches: those no worker started never run; wait for
        the others (their results and errors are dropped)."""
        for k in range(len(self.args)):
            self._claim(k, "caller")
        wait([f for f, o in zip(self.futures, self.owner) if o == "pool" and f is not None])

    def finish(self) -> list[Any]:
        """The batches' results in order; the calling thread runs the
        batches no worker started (from the last one back)."""
        n = len(self.args)
        mine: dict[int, Any] = {}
        error = self.error
        if error is None:
            try:
                for k in reversed(range(n)):
                    if self._claim(k, "caller"):
                        fut = self.futures[k]
                        if fut is not None:
                            fut.cancel()
                        mine[k] = self.fn(self.args[k])
            except BaseException as e:
                error = e
        for k in range(n):
            self._claim(k, "caller")   # the batches no worker started never run
        # every batch is claimed: wait for those the workers run (a task that
        # no worker started is not waited for: it does nothing)
        wait([f for f, o in zip(self.futures, self.owner) if o == "pool" and f is not None])
        if error is not None:
            raise error
        return [mine[k] if k in mine else self.futures[k].result()  # type: ignore[union-attr]
                for k in range(n)]


def _answer_all(roles: Mapping[int, ScmaClient], ids: Sequence[int], msg: InputRequest,
                executor: Executor, bar: Any) -> list[bytes | ProtocolError]:
    """The answers of clients ``ids`` in their order, computed in batches on
    ``executor`` (:class:`_Batches`: every task is waited for before
    anything is returned or raised, and the calling thread runs the batches
    that no worker has started)."""
    n = max(1, min(len(ids), _ANSWER_TASKS))
    step, extra = divmod(len(ids), n)
    chunks, at = [], 0
    batches = _Batches(executor, lambda c: _answer_batch(roles, c, msg))
    for k in range(n):
        size = step + (k < extra)
        chunks.append(list(ids[at:at + size]))
        at += size
        batches.submit(chunks[-1])
    out: list[bytes | ProtocolError] = []
    for c, res in zip(chunks, batches.finish()):
        out.extend(res)                # a task's error raised in finish
        bar.update(len(c))
    return out


def secure_sum_sparse(clients: Sequence[tuple[ArrayLike, ArrayLike]], bins_per_dim: int, *,
                      mode: str = "auto", max_nonzeros: int | None = None,
                      modulus: int = DEFAULT_PRIME, threshold: int | None = None,
                      neighbors: int = 0, dropouts: Sequence[int] = (),
                      progress: bool | Callable[..., Any] = False
                      ) -> tuple[NDArray[np.int64], NDArray[np.int64], ScmaReport]:
    """Securely sum the clients' sparse count vectors (SCMA), in process.

    Runs the whole protocol through :class:`ScmaClient` and
    :class:`ScmaServer` with every message serialized to bytes and parsed
    back, as it would cross a network: key agreement, key shares, masked
    inputs, unmasking and decoding.  Every key comes from the operating
    system (there is no seed to pass).

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
    threshold : int, optional
        Fewest clients any step of the round may have (clients refuse
        fewer); default a strict majority of the clients.
    neighbors : int, default=0
        Neighbours per client (even; SecAgg+'s sparse graph); 0 is the
        complete graph.
    dropouts : sequence of int
        Client positions that go silent after sharing their keys (their
        inputs never arrive): the result is the survivors' sum, recovered
        from the others' shares.
    progress : bool or callable, default=False
        Report progress of the round's steps (see :mod:`pyfkm._progress`).

    Returns
    -------
    bins : ndarray (m, d) int64, rows sorted lexicographically
    counts : ndarray (m,) int64
    report : ScmaReport
        ``report.dropped`` names the clients left out of the sum.

    Raises
    ------
    ProtocolError
        Fewer than ``threshold`` clients remain at some step, or too few
        shares survive to remove the dropped clients' masks.

    Examples
    --------
    >>> bins, counts, rep = secure_sum_sparse(
    ...     [([[0, 1], [2, 2]], [3, 1]), ([[0, 1]], [4]), ([[1, 1]], [2])],
    ...     bins_per_dim=3, dropouts=[2])
    >>> bins.tolist(), counts.tolist(), rep.mode, rep.dropped
    ([[0, 1], [2, 2]], [7, 1], 'index', (2,))
    """
    clients = list(clients)
    if not clients:
        raise InvalidInputError("need at least one client")
    dims = [np.asarray(b).shape[1] for b, _ in clients if np.asarray(b).ndim == 2]
    if not dims:
        raise InvalidInputError("cannot infer n_dims: every client is empty; pass 2-D bins")
    silent = set()
    for i in dropouts:
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool) \
                or not 0 <= int(i) < len(clients):
            raise InvalidInputError(f"dropouts must be client positions, got {i!r}")
        silent.add(int(i))
    d = dims[0]
    nnz = sum(np.asarray(c).size for _, c in clients)
    M = max_nonzeros if max_nonzeros is not None else max(nnz, 1)
    params = ScmaParams.create(d, bins_per_dim, M, modulus=modulus, mode=mode)
    server, roles = setup_in_process(params, len(clients), threshold=threshold,
                                     degree=neighbors, progress=progress)
    for c, (bins, counts) in zip(roles, clients):
        c.set_data(bins, counts)
    trip = RoundTrip(server, dict(enumerate(roles)), silent=silent, progress=progress)
    res = trip.share().inputs().finish()
    return res.bins, res.counts, res.report
