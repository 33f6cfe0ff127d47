"""Wire format of SCMA's own messages: the roster and the masked syndromes.

:class:`RosterMessage` carries the run's :class:`ScmaParams` besides the
keys; :class:`SyndromeMessage` a client's masked power sums.  The header
and field checks are :mod:`pyfkm.secagg._framing`, the messages SCMA shares
with MSA (keys, rounds, shares, unmasking) :mod:`pyfkm.secagg._messages`.
"""
from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
from numpy.typing import NDArray

from ...exceptions import InvalidInputError, MessageFormatError
from .._framing import (_HEADER, _ROSTER, _SYNDROMES, HEADER_BYTES, MAGIC, SERVER_ID, TAG_BYTES,
                        VERSION, _built, _check_id, _check_roster_clients, _check_roster_extras,
                        _check_run_id, _check_tag, _counted, _expect_len, _pack_header,
                        _unpack_header)
from ._params import MODES, ScmaParams

if TYPE_CHECKING:
    from .._messages import InputRequest

_PARAMS = struct.Struct("<IQIIB32s")
_SYNDROME_HEAD = struct.Struct(_HEADER.format + "I")    # header + word count
_LITTLE = sys.byteorder == "little"
_EXTRAS = struct.Struct("<II32s")


def _extras_bytes(r: Any) -> bytes:
    return _EXTRAS.pack(r.threshold, r.degree, r.server_key)


def _params_bytes(P: ScmaParams) -> bytes:
    """The wire form of parameters (bound into the roster digest)."""
    return _PARAMS.pack(P.n_dims, P.bins_per_dim, P.max_nonzeros, P.max_client_nonzeros,
                        MODES.index(P.mode), P.hash_seed)


@dataclass(frozen=True)
class RosterMessage:
    """Server -> clients: the run's public parameters and every client's key.

    Body: parameters (n_dims u32, bins_per_dim u64, max_nonzeros u32,
    max_client_nonzeros u32, mode u8, hash_seed 32s), threshold u32, degree
    u32 (0: complete graph), the server's channel key 32s, count u32, then
    per client id u32 and key 32s (ids strictly increasing).  The modulus
    travels in the header.

    Built by :meth:`ScmaServer.roster` once every key is in; each client
    checks it with :meth:`ScmaClient.receive_roster`.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    params : ScmaParams
        The run's parameters (their ``run_id`` must be ``run_id``).
    client_ids : sequence of int
        The clients of the run, strictly increasing.
    public_keys : sequence of bytes
        Each client's 32-byte X25519 channel key, in the order of
        ``client_ids``.
    threshold : int, default=1
        Fewest clients of any step of a round, in ``[1, len(client_ids)]``.
    degree : int, default=0
        Neighbours per client (even; 0 is the complete graph).
    server_key : bytes, default=bytes(32)
        The server's 32-byte channel key (the clients' message tags are
        keyed with it).

    Raises
    ------
    InvalidInputError
        A field of the wrong type, length or range, parameters of another
        run, or not one key per client.

    Examples
    --------
    >>> from pyfkm.secagg import RosterMessage, ScmaParams, setup_in_process
    >>> server, clients = setup_in_process(ScmaParams.create(2, 10, 4), 3)
    >>> roster = server.roster()
    >>> roster.client_ids, roster.threshold, roster.degree, roster.params.mode
    ((0, 1, 2), 2, 0, 'index')
    >>> RosterMessage.from_bytes(roster.to_bytes()) == roster
    True
    """

    # deliberate specialization: the roster fields are declared again in
    # MSA's MsaRosterMessage (no shared dataclass base: a base's fields would come
    # first and change the positional order of the constructor, which
    # follows the wire format); their checks are shared (_framing)
    run_id: bytes
    params: ScmaParams
    client_ids: tuple
    public_keys: tuple
    threshold: int = 1
    degree: int = 0
    server_key: bytes = bytes(32)

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        if not isinstance(self.params, ScmaParams) or self.params.run_id != self.run_id:
            raise InvalidInputError("params must be ScmaParams of the same run")
        _check_roster_extras(self)
        _check_roster_clients(self)

    def params_bytes(self) -> bytes:
        """What the roster digest binds of the run's parameters.

        Returns
        -------
        bytes
            The parameters' part of the body (from ``n_dims`` to ``hash_seed``).
        """
        return _params_bytes(self.params)

    def to_bytes(self) -> bytes:
        """The wire form of the roster.

        Returns
        -------
        bytes
            The header (sent by the server, with the modulus) and the body.
        """
        P = self.params
        body = [_params_bytes(P), _extras_bytes(self), struct.pack("<I", len(self.client_ids))]
        for i, k in zip(self.client_ids, self.public_keys):
            body.append(struct.pack("<I", i) + k)
        return _pack_header(_ROSTER, self.run_id, 0, SERVER_ID, P.modulus) + b"".join(body)

    @classmethod
    def from_bytes(cls, data: bytes) -> RosterMessage:
        """Parse a roster from its wire form.

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message, as :meth:`to_bytes` writes it.

        Returns
        -------
        RosterMessage
            The roster, with its :class:`ScmaParams` rebuilt (and checked).

        Raises
        ------
        MessageFormatError
            Not a roster of this format version, a wrong length, a sender other
            than the server, an unknown mode, parameters :class:`ScmaParams`
            refuses, or fields the constructor would refuse.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _ROSTER)
        off = HEADER_BYTES
        if len(data) < off + _PARAMS.size + _EXTRAS.size + 4:
            raise MessageFormatError("truncated roster message")
        d, B, M, kc, mode, seed = _PARAMS.unpack_from(data, off)
        off += _PARAMS.size
        t, deg, skey = _EXTRAS.unpack_from(data, off)
        off += _EXTRAS.size
        (n,) = struct.unpack_from("<I", data, off)
        off += 4
        _expect_len(data, off + 36 * n)
        if sender != SERVER_ID or round_ != 0:
            raise MessageFormatError("roster message not from the server")
        if mode >= len(MODES):
            raise MessageFormatError(f"unknown mode code {mode}")
        # the constructor reads max_client_nonzeros = 0 as "max_nonzeros";
        # on the wire only the resolved value is valid (one spelling per
        # message; found by fuzzing)
        if kc == 0:
            raise MessageFormatError(
                "invalid parameters in roster: max_client_nonzeros must be >= 1, got 0")
        # index mode needs B**d < p < 2**63; B**d >= 2**(d (bits(B) - 1)), so
        # refuse a large d before the constructor computes B**d (about ten
        # seconds for n_dims = 2**20 and B near p; found while fuzzing)
        if MODES[mode] == "index" and d * (B.bit_length() - 1) >= 63:
            raise MessageFormatError(
                f"invalid parameters in roster: index mode needs bins_per_dim**n_dims < "
                f"modulus; {B}**{d} >= 2**63")
        try:
            P = ScmaParams(n_dims=d, bins_per_dim=B, max_nonzeros=M, modulus=modulus,
                           mode=MODES[mode], hash_seed=seed, max_client_nonzeros=kc,
                           run_id=run_id)
        except InvalidInputError as e:
            raise MessageFormatError(f"invalid parameters in roster: {e}") from None
        ids, keys = [], []
        for _ in range(n):
            (i,) = struct.unpack_from("<I", data, off)
            ids.append(i)
            keys.append(data[off + 4: off + 36])
            off += 36
        try:
            return cls(run_id, P, tuple(ids), tuple(keys), t, deg, skey)
        except InvalidInputError as e:
            raise MessageFormatError(f"invalid roster: {e}") from None


@dataclass(frozen=True, eq=False)
class SyndromeMessage:
    """Client -> server: the masked syndromes of one round (body: count u32,
    then that many u64 field elements, each below the modulus; then the
    16-byte tag authenticating every byte before it to the server).

    Built by :meth:`ScmaClient.respond`; read by :meth:`ScmaServer.receive`
    (or, as wire bytes, :meth:`ScmaServer.receive_many`).  Two messages are
    equal when every field and the payload are.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    round : int
        The round, in ``[1, 2**64)``.
    sender : int
        The client's id, in ``[0, 2**32 - 1)``.
    modulus : int
        The field prime, in ``(2, 2**63)``.
    payload : array-like of int
        The masked field elements, 1-D, each below ``modulus``; stored as a
        read-only uint64 array.
    tag : bytes, default=bytes(16)
        The 16-byte tag authenticating :meth:`signed_bytes` to the server;
        the client sets it after building the rest.

    Raises
    ------
    InvalidInputError
        A field of the wrong type, length or range, or a payload entry not
        below the modulus.

    Examples
    --------
    >>> from pyfkm.secagg import SyndromeMessage
    >>> msg = SyndromeMessage(bytes(16), round=1, sender=4, modulus=101, payload=[7, 0, 100])
    >>> msg.payload.dtype, msg.payload.flags.writeable
    (dtype('uint64'), False)
    >>> data = msg.to_bytes()
    >>> len(data) == SyndromeMessage.size(3)
    True
    >>> SyndromeMessage.from_bytes(data) == msg
    True
    """

    run_id: bytes
    round: int
    sender: int
    modulus: int
    payload: np.ndarray = field(repr=False)
    tag: bytes = field(default=bytes(TAG_BYTES), repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "sender", _check_id(self.sender, "sender"))
        r, p = self.round, self.modulus
        if not isinstance(r, (int, np.integer)) or not 1 <= int(r) < 1 << 64:
            raise InvalidInputError(f"round must be an int in [1, 2**64), got {r!r}")
        if not isinstance(p, (int, np.integer)) or not 2 < int(p) < 1 << 63:
            raise InvalidInputError(f"modulus must be an int in (2, 2**63), got {p!r}")
        payload = self.payload
        if not (isinstance(payload, np.ndarray) and payload.dtype == np.uint64
                and payload.flags.c_contiguous):
            payload = np.ascontiguousarray(payload, dtype=np.uint64)
        if payload.ndim != 1:
            raise InvalidInputError("payload must be 1-D")
        if payload.size and int(payload.max()) >= int(p):
            raise InvalidInputError("payload entries must be below the modulus")
        _check_tag(self)
        payload.setflags(write=False)
        object.__setattr__(self, "round", int(r))
        object.__setattr__(self, "modulus", int(p))
        object.__setattr__(self, "payload", payload)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SyndromeMessage):
            return NotImplemented
        return (self.run_id, self.round, self.sender, self.modulus, self.tag) == \
            (other.run_id, other.round, other.sender, other.modulus, other.tag) and \
            np.array_equal(self.payload, other.payload)

    __hash__ = None  # type: ignore[assignment]  # unhashable: array fields

    @classmethod
    def _trusted(cls, run_id: bytes, round_: int, sender: int, modulus: int, payload: NDArray[np.uint64],
                 tag: bytes = bytes(TAG_BYTES)) -> SyndromeMessage:
        """A message built by a client from its own validated state (run id,
        round and id already checked; payload uint64, contiguous, reduced):
        skips the checks that guard untrusted input."""
        payload.setflags(write=False)
        return _built(cls, run_id=run_id, round=int(round_), sender=int(sender),
                      modulus=int(modulus), payload=payload, tag=tag)

    def signed_bytes(self) -> bytes:
        """The bytes the tag authenticates (everything before it).

        Returns
        -------
        bytes
            Header, word count and payload (little-endian u64).
        """
        payload = self.payload
        return (_SYNDROME_HEAD.pack(MAGIC, VERSION, _SYNDROMES, 0, self.run_id, self.round,
                                    self.sender, self.modulus, payload.size)
                + (payload.tobytes() if _LITTLE else payload.astype("<u8").tobytes()))

    def to_bytes(self) -> bytes:
        """The wire form of the message.

        Returns
        -------
        bytes
            :meth:`signed_bytes` followed by the 16-byte tag:
            :meth:`size` ``(payload.size)`` bytes.
        """
        return self.signed_bytes() + self.tag

    @classmethod
    def from_bytes(cls, data: bytes) -> SyndromeMessage:
        """Parse a syndrome message from its wire form (the tag is kept, not
        checked: only the server can check it).

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message, as :meth:`to_bytes` writes it.

        Returns
        -------
        SyndromeMessage
            The message; its payload is a read-only view of the bytes on
            little-endian hosts.

        Raises
        ------
        MessageFormatError
            Not a syndrome message of this format version, a wrong length, the
            server's id as the sender, round 0, a modulus outside
            ``(2, 2**63)``, or a payload entry not below the modulus.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _SYNDROMES)
        n = _counted(data, "syndrome message", 8, TAG_BYTES)
        if sender == SERVER_ID:
            raise MessageFormatError("syndrome message from the server id")
        # a read-only view of the (immutable) bytes on little-endian hosts
        payload = np.frombuffer(data, dtype="<u8", count=n,
                                offset=HEADER_BYTES + 4).astype(np.uint64, copy=False)
        # the constructor's checks (run_id and sender widths come from the format)
        if round_ < 1:
            raise MessageFormatError("invalid syndrome message: round must be >= 1")
        if not 2 < modulus < 1 << 63:
            raise MessageFormatError("invalid syndrome message: modulus outside (2, 2**63)")
        if payload.size and int(payload.max()) >= modulus:
            raise MessageFormatError(
                "invalid syndrome message: payload entries must be below the modulus")
        payload.setflags(write=False)
        return _built(cls, run_id=run_id, round=round_, sender=sender, modulus=modulus,
                      payload=payload, tag=data[-TAG_BYTES:])

    @staticmethod
    def size(n_words: int) -> int:
        """Bytes of a message carrying ``n_words`` field elements.

        Parameters
        ----------
        n_words : int
            Field elements in the payload.

        Returns
        -------
        int
            ``44 + 4 + 8 n_words + 16``: header, count, payload and tag.

        Examples
        --------
        >>> SyndromeMessage.size(3)
        88
        """
        return HEADER_BYTES + 4 + 8 * n_words + TAG_BYTES


# a syndrome message: header (sender at _SENDER_AT), then the word count
# and the payload; every other header field is the same for one round
_SENDER_AT = _HEADER.size - 12
assert struct.calcsize("<4sBBH16sQ") == _SENDER_AT


def parse_syndromes(datas: Sequence[bytes], run_id: bytes, round_: int, modulus: int,
                    n_words: int) -> tuple[list[int], NDArray[np.uint64]] | None:
    """Parse many syndrome messages of one round at once.

    Returns ``(senders, payloads)`` -- a list of ints and an (n, n_words)
    read-only uint64 array -- when every message is well formed (tags are
    not checked here: the server checks them with its keys) (the checks
    of :meth:`SyndromeMessage.from_bytes`) *and* carries this ``run_id``,
    ``round_``, ``modulus`` and ``n_words``; returns None otherwise (the
    caller then takes the messages one by one for the precise error).
    """
    n = len(datas)
    if n == 0:
        return [], np.zeros((0, n_words), dtype=np.uint64)
    if round_ < 1 or not 2 < modulus < 1 << 63:
        return None
    size = SyndromeMessage.size(n_words)
    # the fields before the sender, and modulus + word count after it, are
    # this round's in every message
    head = _HEADER.pack(MAGIC, VERSION, _SYNDROMES, 0, run_id, round_, 0, modulus)
    before, after = head[:_SENDER_AT], head[_SENDER_AT + 4:] + struct.pack("<I", n_words)
    for x in datas:
        if type(x) is not bytes or len(x) != size or not x.startswith(before) \
                or not x.startswith(after, _SENDER_AT + 4):
            return None
    rows = np.frombuffer(b"".join(datas), dtype=np.uint8).reshape(n, size)
    senders = rows[:, _SENDER_AT:_SENDER_AT + 4].copy().view("<u4").ravel()
    payloads = rows[:, HEADER_BYTES + 4:size - TAG_BYTES].copy().view("<u8") \
        .astype(np.uint64, copy=False)
    if (senders == SERVER_ID).any() or (payloads.size and int(payloads.max()) >= modulus):
        return None
    payloads.setflags(write=False)
    return senders.tolist(), payloads


def _request_bytes(req: InputRequest) -> bytes:
    """What of an input request a client binds into its tag."""
    return struct.pack("<IQ", req.delta_nonzeros, req.base_round)
