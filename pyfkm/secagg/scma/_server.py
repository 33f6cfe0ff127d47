"""The SCMA server (honest-but-curious): relays keys and shares, runs
rounds, removes the masks of the survivors' sum and decodes it.

Steps 1, 2 and 4 of a round are the shared :class:`~pyfkm.secagg._steps.RoundSteps`;
this module adds the roster, the inputs (one at a time or a queue of wire
bytes at once) and the decode, with its :class:`ScmaReport`.
"""
from __future__ import annotations

import hmac
import operator
import struct
import time
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from ..._base import Report
from ...exceptions import DecodeError, InvalidInputError, ProtocolError
from ...field import kernels as _field
from .._framing import TAG_BYTES, _built
from .._keys import mac
from .._masking import MaskingServer
from .._messages import InputRequest, RoundMessage
from .._steps import RoundSteps, client_id
from ._codec import Codec
from ._crypto import SCMA_TAG, _stream_limit
from ._messages import RosterMessage, SyndromeMessage, _request_bytes, parse_syndromes
from ._params import ScmaParams, count_budget, delta_params

def _sorted_ids(ids: Iterable[int]) -> tuple[int, ...]:
    """Client ids as a sorted tuple of ints (fast when they already are)."""
    if type(ids) is tuple and not set(map(type, ids)) - {int} \
            and all(map(operator.lt, ids, ids[1:])):
        return ids
    try:
        return tuple(sorted(client_id(i) for i in ids))
    except TypeError:
        raise InvalidInputError("participants must be a sequence of client ids") from None


@dataclass(frozen=True)
class ScmaReport(Report):
    """What one aggregation round cost.

    ``bytes_per_client`` is the size of one masked input (the key shares and
    unmask answers of the round come on top: :class:`RoundTrip` counts
    every message); ``n_participants`` the survivors summed; ``dropped`` the
    clients that shared keys but whose inputs did not arrive (recovered
    from the others' shares).

    Parameters
    ----------
    mode : {"index", "hashed"}
        The run's encoding.
    modulus : int
        The field prime.
    round : int
        The round.
    n_participants : int
        Number of survivors summed.
    message_words : int
        Field elements of one masked input (fewer in a difference round).
    bytes_per_client : int
        Bytes of one masked input (:meth:`SyndromeMessage.size`).
    server_bytes : int
        Bytes of the round message sent to each survivor, in total.
    decode_seconds : float
        Wall time of the decode.
    incremental : bool
        Whether the decode took the incremental path (the change since the
        previous decode; always for a difference round).
    paper_bits_per_client : int
        ``2 M log2 p`` bits: the message size of Pan et al.'s analysis.
    dense_bits_per_client : int
        ``B**d log2 p`` bits: a dense vector of every bin, for comparison.
    dropped : tuple of int, default=()
        The clients left out of the sum.

    Examples
    --------
    >>> from pyfkm.secagg import secure_sum_sparse
    >>> _, _, report = secure_sum_sparse([([[0, 1]], [2]), ([[0, 1]], [1]), ([[2, 2]], [4])],
    ...                                  bins_per_dim=3, dropouts=[1])
    >>> report.mode, report.n_participants, report.dropped
    ('index', 2, (1,))
    >>> report.message_words, report.bytes_per_client
    (7, 120)
    >>> report.as_dict()["round"]
    1
    """

    mode: str
    modulus: int
    round: int
    n_participants: int
    message_words: int
    bytes_per_client: int
    server_bytes: int
    decode_seconds: float
    incremental: bool
    paper_bits_per_client: int
    dense_bits_per_client: int
    dropped: tuple = ()


@dataclass(frozen=True)
class ScmaResult:
    """Aggregated sparse vector (rows sorted lexicographically) and report.

    ``survivors``: the clients whose inputs are in this round's sum;
    ``dropped``: those that shared keys but whose inputs did not arrive.
    Returned by :meth:`ScmaServer.finish_round` and :meth:`RoundTrip.finish`.

    Parameters
    ----------
    bins : ndarray of shape (m, n_dims), dtype int64
        The aggregate's nonzero bins, rows sorted lexicographically.
    counts : ndarray of shape (m,)
        Their summed counts (positive).
    report : ScmaReport
        What the round cost.
    survivors : tuple of int, default=()
        The clients whose inputs are in the sum.
    dropped : tuple of int, default=()
        The clients that shared keys but whose inputs did not arrive.

    Examples
    --------
    >>> from pyfkm.secagg import RoundTrip, ScmaParams, setup_in_process
    >>> server, clients = setup_in_process(ScmaParams.create(2, 10, 4), 3)
    >>> for c, counts in zip(clients, [[1, 2], [3, 4], [5, 6]]):
    ...     c.set_data([[0, 0], [9, 9]], counts)
    >>> res = RoundTrip(server, dict(enumerate(clients)), silent=[0]).share().inputs().finish()
    >>> res.bins.tolist(), res.counts.tolist(), res.survivors, res.dropped
    ([[0, 0], [9, 9]], [8, 10], (1, 2), (0,))
    """

    bins: np.ndarray
    counts: np.ndarray
    report: ScmaReport
    survivors: tuple = ()
    dropped: tuple = ()


class ScmaServer(RoundSteps):
    """The aggregation server: relays keys and shares, runs rounds, decodes.

    It only ever sees masked messages, shares it cannot combine, and the
    aggregate over at least ``threshold`` clients.  Every method validates
    before changing state, so a rejected message or call leaves the server
    as it was.

    One round::

        start_round(participants)   -> RoundMessage (broadcast)
        receive_shares(ShareMessage) for each client
        bundle(client_id)           -> ShareBundle (one per sharer)
        request_inputs(delta_nonzeros) -> InputRequest (broadcast)
        receive(SyndromeMessage) / receive_many(bytes)
        unmask_request()            -> UnmaskRequest (broadcast to survivors)
        receive_unmask(UnmaskMessage) for each survivor
        finish_round()              -> ScmaResult

    Before the first round the server collects one
    :class:`KeyMessage` per client (``receive_key``) and sends the
    :meth:`roster`; :func:`setup_in_process` does both.

    Parameters
    ----------
    params : ScmaParams
        The run's public parameters (:meth:`ScmaParams.create`).
    threshold : int, optional
        Fewest clients any round may have at every step; clients refuse
        rounds below it.  Default: a strict majority of the roster.
    degree : int, default=0
        Neighbours per client (even); 0 is the complete graph.  With
        ``degree = k`` a client's keys, shares and masks involve ``k``
        peers, not the whole roster (SecAgg+).

    Raises
    ------
    InvalidInputError
        ``params`` not :class:`ScmaParams`, or an odd or negative degree.

    Examples
    --------
    One round, step by step, in which client 2 drops out after sharing its
    keys (in a deployment every message crosses the network as its
    ``to_bytes()``; :class:`RoundTrip` does that in process):

    >>> from pyfkm.secagg import ScmaParams, setup_in_process
    >>> server, clients = setup_in_process(ScmaParams.create(2, 10, 4), 3)
    >>> data = [([[0, 1]], [2]), ([[0, 1], [3, 3]], [1, 1]), ([[9, 9]], [5])]
    >>> for c, (bins, counts) in zip(clients, data):
    ...     c.set_data(bins, counts)
    >>> rmsg = server.start_round()
    >>> for c in clients:
    ...     server.receive_shares(c.share_keys(rmsg))
    >>> for c in clients:
    ...     c.receive_shares(server.bundle(c.client_id))
    >>> req = server.request_inputs()
    >>> for c in clients[:2]:
    ...     server.receive(c.respond(req))
    >>> ureq = server.unmask_request()
    >>> ureq.survivors
    (0, 1)
    >>> for c in clients[:2]:
    ...     server.receive_unmask(c.unmask(ureq))
    >>> res = server.finish_round()
    >>> res.bins.tolist(), res.counts.tolist(), res.dropped
    ([[0, 1], [3, 3]], [3, 1], (2,))
    >>> server.last_decoded
    (1, (0, 1))
    """

    # for the type checker: state set to None or {} in __init__
    _finished: tuple[int, tuple[int, ...]] | None
    _valid_ids: tuple[int, ...] | None
    _delta_codecs: dict[Any, Any]

    def __init__(self, params: ScmaParams, *, threshold: int | None = None, degree: int = 0
                 ) -> None:
        if not isinstance(params, ScmaParams):
            raise InvalidInputError("params must be ScmaParams")
        self.params = params
        self._threshold, self._degree = threshold, _check_degree(degree)
        self._codec = Codec(params)
        self._m = MaskingServer()
        self._keys = {}
        self._roster = None
        self._round = 0
        self._open = None          # the round in progress (dict), or None
        self._state = None         # previous decode (for incremental decode)
        self._finished = None      # (round, survivors) of the last decode
        self._included = ()        # clients whose data is in the aggregate
        self._delta_codecs = {}
        self._valid_ids = None     # participants checked against the roster

    @property
    def run_id(self) -> bytes:  # type: ignore[override]  # RoundSteps's attribute
        return self.params.run_id

    @property
    def last_decoded(self) -> tuple[int, tuple[int, ...]] | None:
        """(round, survivors) of the last decoded round, or None: the base
        of the next difference round."""
        return self._finished

    @property
    def threshold(self) -> int | None:
        return None if self._roster is None else self._roster.threshold

    def _roster_message(self, ids: Any, keys: Any, threshold: int, degree: int,
                        server_key: bytes) -> RosterMessage:
        return RosterMessage(self.run_id, self.params, ids, keys, threshold, degree, server_key)

    def neighbours(self, cid: int) -> tuple[int, ...]:
        """The neighbours of client ``cid`` in the run's graph.

        Parameters
        ----------
        cid : int
            A client of the roster.

        Returns
        -------
        tuple of int
            Its neighbours (every other client with the complete graph).

        Raises
        ------
        ProtocolError
            Before the roster, or ``cid`` not in it.
        """
        if self._roster is None:
            raise ProtocolError("send the roster first")
        cid = client_id(cid)
        if cid not in self._m._mac:
            raise ProtocolError(f"client {cid} is not in the roster")
        return self._m.neighbours(cid)

    def start_round(self, participants: Iterable[int] | None = None) -> RoundMessage:
        """Open the next round over ``participants`` (default: the roster);
        an unfinished round is abandoned.

        Parameters
        ----------
        participants : iterable of int, optional
            The clients asked to take part (default: every roster client).

        Returns
        -------
        RoundMessage
            The broadcast that opens the round (its number is the last round's
            plus one).

        Raises
        ------
        ProtocolError
            Before the roster; participants outside the roster, repeated or
            none, or fewer than ``threshold``.
        InvalidInputError
            Participants that are not ints.
        """
        if self._roster is None:
            raise ProtocolError("send the roster before starting a round")
        ids = self._roster.client_ids if participants is None else participants
        if ids is not self._valid_ids:     # a driver passes the same tuple each round
            ids = _sorted_ids(ids)
            unknown = set(ids) - set(self._roster.client_ids)
            if unknown:
                raise ProtocolError(f"participants not in the roster: {sorted(unknown)}")
            if len(set(ids)) != len(ids) or not ids:
                raise ProtocolError("participants must be distinct and non-empty")
            self._valid_ids = ids
        st = self._m.new_round(self._round + 1, ids)
        msg = _built(RoundMessage, run_id=self.run_id, round=self._round + 1, participants=ids,
                     delta_nonzeros=0, base_round=0)
        self._round += 1
        self._open = {"step": "shares", "msg": msg, "st": st, "got": {}, "req": None}
        return msg

    def request_inputs(self, delta_nonzeros: int = 0) -> InputRequest:
        """Step 3: the :class:`InputRequest` of the open round.

        ``delta_nonzeros > 0`` asks for a difference round: every
        participant sends its change since the last decoded round, for at
        most ``delta_nonzeros`` changed bins in total, in messages of
        ``delta_params(params, delta_nonzeros).message_words`` words.  The
        server learns what a full round would tell it (the new aggregate,
        whose difference to the last one it could compute anyway).

        Parameters
        ----------
        delta_nonzeros : int, default=0
            0 for a full round; else the difference round's bound on changed
            bins, in ``[1, max_nonzeros]``.

        Returns
        -------
        InputRequest
            The broadcast to the sharers; ``base_round`` is the last decoded
            round in a difference round.

        Raises
        ------
        ProtocolError
            No round is ready for inputs, ``delta_nonzeros`` out of range, a
            difference round before any decoded round, or (closing key sharing)
            fewer than ``threshold`` clients shared keys.
        """
        o = self._open
        if o is None or o["step"] not in ("shares", "bundles"):
            raise ProtocolError("no round is ready for inputs")
        base = 0
        if delta_nonzeros:
            if not isinstance(delta_nonzeros, (int, np.integer)) or \
                    isinstance(delta_nonzeros, bool) or \
                    not 1 <= int(delta_nonzeros) <= self.params.max_nonzeros:
                raise ProtocolError(
                    f"delta_nonzeros = {delta_nonzeros!r} must be an int in "
                    f"[1, max_nonzeros = {self.params.max_nonzeros}]")
            if self._finished is None:
                raise ProtocolError("a difference round needs a decoded round")
            base = self._finished[0]
        if o["step"] == "shares":               # everything checked: close U2
            self._m.close_shares(o["st"])
        req = _built(InputRequest, run_id=self.run_id, round=o["st"]["round"],
                     delta_nonzeros=int(delta_nonzeros), base_round=base)
        o["step"], o["req"] = "inputs", req
        return req

    def _delta_codec(self, m: int) -> Any:  # a Codec
        c = self._delta_codecs.get(m)
        if c is None:
            c = self._delta_codecs[m] = Codec(delta_params(self.params, m))
        return c

    def _round_words(self) -> int:
        """Words of a message of the open round."""
        dn = self._open["req"].delta_nonzeros
        return self._delta_codec(dn).params.message_words if dn else self.params.message_words

    def receive(self, msg: SyndromeMessage) -> None:
        """Step 3: a client's masked :class:`SyndromeMessage` (authenticated).

        Parameters
        ----------
        msg : SyndromeMessage
            The client's masked input for the open round.

        Raises
        ------
        ProtocolError
            No round is waiting for inputs, a message of another run or round,
            a sender that did not share keys or already sent, another modulus or
            length than the round's, or a tag that fails.
        """
        o = self._need("inputs")
        if not isinstance(msg, SyndromeMessage):
            raise ProtocolError("expected a SyndromeMessage")
        if msg.run_id != self.run_id:
            raise ProtocolError("SyndromeMessage of another run")
        if msg.round != o["req"].round:
            raise ProtocolError(f"message for round {msg.round}, the open round is "
                                f"{o['req'].round}")
        if msg.sender not in o["st"]["u2"]:
            raise ProtocolError(f"client {msg.sender} did not share keys in round "
                                f"{msg.round}")
        if msg.sender in o["got"]:
            raise ProtocolError(f"duplicate message from client {msg.sender}")
        words = self._round_words()
        if msg.modulus != self.params.modulus or msg.payload.size != words:
            raise ProtocolError(
                f"client {msg.sender}: message for another modulus or size "
                f"({msg.payload.size} words, expected {words})")
        self._m.check_tag(msg.sender, msg.signed_bytes()
                          + self._m.view(o["st"], _request_bytes(o["req"])), msg.tag)
        o["got"][msg.sender] = msg.payload

    def receive_many(self, datas: Iterable[bytes]) -> None:
        """Receive many syndrome messages of the open round, as wire bytes.

        The same checks as ``receive(SyndromeMessage.from_bytes(data))`` for
        each, all messages at once (a server draining its queue); either
        every message is accepted or, on the first that is rejected (same
        error as :meth:`receive`), none is and the server is unchanged.

        Parameters
        ----------
        datas : iterable of bytes
            The messages' wire forms (:meth:`SyndromeMessage.to_bytes`).

        Raises
        ------
        MessageFormatError
            A message that does not parse.
        ProtocolError
            A message :meth:`receive` would refuse.
        """
        datas = list(datas)
        if not datas:
            return
        o = self._open
        if o is None or o["step"] != "inputs":      # the errors receive would give
            for data in datas:
                self.receive(SyndromeMessage.from_bytes(data))
        got = o["got"]
        parsed = parse_syndromes(datas, self.run_id, o["req"].round, self.params.modulus,
                                 self._round_words())
        if parsed is not None:
            senders, payloads = parsed
            u2 = o["st"]["u2set"] if "u2set" in o["st"] else \
                o["st"].setdefault("u2set", frozenset(o["st"]["u2"]))
            macs = self._m._mac
            view = self._m.view(o["st"], _request_bytes(o["req"]))
            if len(set(senders)) == len(senders) and u2.issuperset(senders) \
                    and got.keys().isdisjoint(senders) and all(
                        hmac.compare_digest(mac(macs[i], x[:-TAG_BYTES] + view),
                                            x[-TAG_BYTES:])
                        for i, x in zip(senders, datas)):
                got.update(zip(senders, payloads))
                return
        # some message is rejected: find it (and its error) one by one on a
        # copy of the round, so the server stays unchanged
        saved = o["got"]
        o["got"] = dict(saved)
        try:
            for data in datas:
                self.receive(SyndromeMessage.from_bytes(data))
        except BaseException:
            o["got"] = saved
            raise

    def finish_round(self, *, incremental: bool = True) -> ScmaResult:
        """Remove the survivors' self masks and their pair masks with the
        dropped clients, and decode the survivors' sum.

        The server is unchanged when this raises.

        Parameters
        ----------
        incremental : bool, default=True
            Decode the change since the previous decode when that is cheaper
            (the result is the same); False always runs the full decode.  A
            difference round is always decoded against the previous one.

        Returns
        -------
        ScmaResult
            The aggregate (bins sorted lexicographically, counts), the report,
            the survivors and the dropped clients.

        Raises
        ------
        ProtocolError
            No round is waiting for unmasking, or some secret has too few
            shares (more dropouts than the threshold allows; more unmask
            answers may still arrive).
        DecodeError
            The aggregate cannot be decoded (more than ``max_nonzeros`` bins, a
            hash collision) or its counts are out of the range honest clients
            allow.
        """
        o = self._need("unmask")
        st = o["st"]
        selfs, pair_keys, neg, dropped = self._m.recover(st)
        P = self.params
        rnd = st["round"]
        req = o["req"]
        dn = req.delta_nonzeros
        survivors = st["u3"]
        got = o["got"]
        cols = np.stack([got[i] for i in survivors], axis=1)     # (words, survivors)
        agg = _field.affine_rows(cols, np.ones(cols.shape[1], dtype=np.uint64), 0, P.modulus)
        nonce = np.frombuffer(struct.pack("<Q", rnd) + SCMA_TAG, np.uint8)
        lim = _stream_limit(P.modulus)
        _field.add_streams(agg, selfs, np.ones(selfs.shape[0], dtype=np.uint8), nonce, lim,
                           P.modulus)
        if pair_keys.shape[0]:
            _field.add_streams(agg, pair_keys, neg, nonce, lim, P.modulus)
        t0 = time.perf_counter()
        if dn:
            state = self._codec.decode_difference(agg, self._delta_codec(dn), self._state)
            used_inc = True
            included = self._included
        else:
            state, used_inc = self._codec.decode(agg, self._state if incremental else None)
            included = survivors
        bins, counts = state.sorted_rows()
        bound = count_budget(P.modulus, len(self._roster.client_ids)) * len(included)
        if counts.size and sum(counts.tolist()) > bound:
            raise DecodeError(
                f"round {rnd}: decoded counts sum to more than {len(included)} clients may "
                "send (forged or inconsistent messages)")
        dt = time.perf_counter() - t0
        self._state = state
        self._finished = (rnd, survivors)
        self._included = included
        self._open = None
        n = len(survivors)
        logp = (P.modulus - 1).bit_length()
        report = ScmaReport(
            mode=P.mode, modulus=P.modulus, round=rnd, n_participants=n,
            message_words=agg.size,
            bytes_per_client=SyndromeMessage.size(agg.size),
            server_bytes=RoundMessage.size(len(o["msg"].participants)) * n, decode_seconds=dt,
            incremental=used_inc,
            paper_bits_per_client=2 * P.max_nonzeros * logp,
            dense_bits_per_client=P.bins_per_dim ** P.n_dims * logp,
            dropped=tuple(dropped))
        return ScmaResult(bins, counts, report, tuple(survivors), tuple(dropped))


def _check_degree(degree: object) -> int:
    if not isinstance(degree, (int, np.integer)) or isinstance(degree, bool) or degree < 0 \
            or degree % 2:
        raise InvalidInputError(f"degree must be 0 (complete graph) or an even int >= 2, "
                                f"got {degree!r}")
    return int(degree)
