"""The messages of the masking protocol, shared by SCMA and MSA.

A run opens with each client's :class:`KeyMessage`; a round opens with a
:class:`RoundMessage` and runs the steps of :mod:`._masking`: key shares
(:class:`ShareMessage`, :class:`ShareBundle`), the input request
(:class:`InputRequest`; the inputs themselves are each protocol's own) and
unmasking (:class:`UnmaskRequest`, :class:`UnmaskMessage`).  Client messages
end in a 16-byte tag the server checks with the key it shares with the
sender; every list is length-prefixed and checked against the bytes present
before anything is allocated.  The header and the field checks are
:mod:`._framing`; each protocol's roster and input messages are in its
subpackage (:mod:`.scma`, :mod:`.msa`).
"""
from __future__ import annotations

import functools
import operator
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..exceptions import InvalidInputError, MessageFormatError, ProtocolError
from ._framing import (_BUNDLE, _INPUTS, _KEY, _ROUND, _SHARES, _UNMASK, _UNMASK_REQ,
                       HEADER_BYTES, SERVER_ID, TAG_BYTES, _built, _bytes_field, _check_id,
                       _check_run_id, _check_tag, _counted, _expect_len, _ids_tuple, _pack_header,
                       _parsed, _round_field, _unpack_header, _unpack_ids)


@dataclass(frozen=True)
class KeyMessage:
    """Client -> server: the client's X25519 public key (body: 32 bytes).

    The message that opens a run for one client (:meth:`ScmaClient.key_message`,
    :meth:`MsaClient.key_message`); once every key is in, the server answers
    with the roster.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    sender : int
        The client's id, in ``[0, 2**32 - 1)``.
    public_key : bytes
        The client's 32-byte X25519 channel key for this run.

    Raises
    ------
    InvalidInputError
        A field of the wrong type, length or range.

    Examples
    --------
    >>> from pyfkm.secagg import KeyMessage
    >>> msg = KeyMessage(run_id=bytes(16), sender=3, public_key=bytes(32))
    >>> data = msg.to_bytes()
    >>> len(data)
    76
    >>> KeyMessage.from_bytes(data) == msg
    True
    """

    run_id: bytes
    sender: int
    public_key: bytes

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "sender", _check_id(self.sender, "sender"))
        if not isinstance(self.public_key, (bytes, bytearray)) or len(self.public_key) != 32:
            raise InvalidInputError("public_key must be 32 bytes")
        object.__setattr__(self, "public_key", bytes(self.public_key))

    def to_bytes(self) -> bytes:
        """The wire form of the message.

        Returns
        -------
        bytes
            The 44-byte header (round and modulus 0) and the 32-byte key.
        """
        return _pack_header(_KEY, self.run_id, 0, self.sender, 0) + self.public_key

    @classmethod
    def from_bytes(cls, data: bytes) -> KeyMessage:
        """Parse a key message from its wire form.

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message, as :meth:`to_bytes` writes it.

        Returns
        -------
        KeyMessage
            The message.

        Raises
        ------
        MessageFormatError
            Not a key message of this format version, a wrong length, a round or
            modulus in the header, or the server's id as the sender.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _KEY)
        _expect_len(data, HEADER_BYTES + 32)
        if round_ != 0 or modulus != 0 or sender == SERVER_ID:
            raise MessageFormatError("key message with a round, modulus or server sender")
        return cls(run_id, sender, data[HEADER_BYTES:])


def check_key_message(msg: object, run_id: bytes, keys: dict[int, Any], roster_closed: bool
                      ) -> None:
    """Validate a client's key message for a server collecting keys: type,
    run, roster still open, first key of the sender.  Raises
    :class:`ProtocolError`."""
    if not isinstance(msg, KeyMessage):
        raise ProtocolError("expected a KeyMessage")
    if msg.run_id != run_id:
        raise ProtocolError("key message of another run")
    if roster_closed:
        raise ProtocolError("the roster is closed")
    if msg.sender in keys:
        raise ProtocolError(f"duplicate key message from client {msg.sender}")


@dataclass(frozen=True)
class RoundMessage:
    """Server -> clients: a round number and its participants (body: count
    u32, ids u32 strictly increasing, then delta_nonzeros u32 and base_round
    u64).

    ``delta_nonzeros = 0`` asks for the full masked message.  A positive
    value opens a *difference round*: every participant sends its change
    since round ``base_round`` (a finished round with the same
    participants), encoded for at most ``delta_nonzeros`` bins, under fresh
    masks of that shorter length.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    round : int
        The round number, in ``[1, 2**64)``; rounds of a run only increase.
    participants : sequence of int
        The clients asked to take part, strictly increasing ids in
        ``[0, 2**32 - 1)``; stored as a tuple.
    delta_nonzeros : int, default=0
        0 for a full round, else the largest number of changed bins of a
        difference round.
    base_round : int, default=0
        The round a difference round's changes are taken against, in
        ``[1, round)``; 0 exactly when ``delta_nonzeros`` is 0.

    Raises
    ------
    InvalidInputError
        A field out of range, participants not strictly increasing, or only
        one of ``delta_nonzeros`` and ``base_round`` set.

    Examples
    --------
    >>> from pyfkm.secagg import RoundMessage
    >>> msg = RoundMessage(bytes(16), round=1, participants=[0, 2, 5])
    >>> msg.participants, msg.delta_nonzeros
    ((0, 2, 5), 0)
    >>> data = msg.to_bytes()
    >>> len(data) == RoundMessage.size(3)
    True
    >>> RoundMessage.from_bytes(data) == msg
    True
    """

    run_id: bytes
    round: int
    participants: tuple
    delta_nonzeros: int = 0
    base_round: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        r = self.round
        if not isinstance(r, (int, np.integer)) or not 1 <= int(r) < 1 << 64:
            raise InvalidInputError(f"round must be an int in [1, 2**64), got {r!r}")
        object.__setattr__(self, "round", int(r))
        ids = self.participants
        if isinstance(ids, np.ndarray):
            if ids.dtype.kind not in "iu" or ids.ndim != 1:
                raise InvalidInputError("participants must be ints")
            ids = tuple(ids.tolist())
        else:
            ids = tuple(ids)
            if set(map(type, ids)) - {int}:
                if not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool)
                           for i in ids):
                    raise InvalidInputError("participants must be ints")
                ids = tuple(int(i) for i in ids)
        if not ids or not all(map(operator.lt, ids, ids[1:])):
            raise InvalidInputError("participants must be non-empty and strictly increasing")
        if ids[0] < 0 or ids[-1] >= SERVER_ID:
            raise InvalidInputError("participant ids must lie in [0, 2**32 - 1)")
        object.__setattr__(self, "participants", ids)
        dn, br = self.delta_nonzeros, self.base_round
        if not isinstance(dn, (int, np.integer)) or isinstance(dn, bool) \
                or not 0 <= int(dn) < SERVER_ID:
            raise InvalidInputError(f"delta_nonzeros must be an int in [0, 2**32 - 1), got {dn!r}")
        if not isinstance(br, (int, np.integer)) or isinstance(br, bool) \
                or not 0 <= int(br) < int(r):
            raise InvalidInputError(f"base_round must be an int in [0, round), got {br!r}")
        if (int(dn) == 0) != (int(br) == 0):
            raise InvalidInputError("a difference round needs both delta_nonzeros and base_round")
        object.__setattr__(self, "delta_nonzeros", int(dn))
        object.__setattr__(self, "base_round", int(br))

    @staticmethod
    def size(n_participants: int) -> int:
        """Bytes of a round message with ``n_participants`` participants.

        Parameters
        ----------
        n_participants : int
            Number of participants.

        Returns
        -------
        int
            ``44 + 4 + 4 n_participants + 12``: the header, the count, the ids
            and the difference-round fields.

        Examples
        --------
        >>> RoundMessage.size(3)
        72
        """
        return HEADER_BYTES + 4 + 4 * n_participants + 12

    def to_bytes(self) -> bytes:
        """The wire form of the message.

        Returns
        -------
        bytes
            :meth:`size` ``(len(participants))`` bytes, sent by the server.
        """
        n = len(self.participants)
        return (_pack_header(_ROUND, self.run_id, self.round, SERVER_ID, 0)
                + struct.pack(f"<I{n}IIQ", n, *self.participants, self.delta_nonzeros,
                              self.base_round))

    @classmethod
    def from_bytes(cls, data: bytes) -> RoundMessage:
        """Parse a round message from its wire form.

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message, as :meth:`to_bytes` writes it.

        Returns
        -------
        RoundMessage
            The message.

        Raises
        ------
        MessageFormatError
            Not a round message of this format version, a wrong length, a
            sender other than the server, or fields the constructor would refuse
            (round 0, participants not strictly increasing, an inconsistent
            difference round).
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _ROUND)
        n = _counted(data, "round message", 4, 12)
        if sender != SERVER_ID or modulus != 0:
            raise MessageFormatError("round message not from the server")
        ids = struct.unpack_from(f"<{n}I", data, HEADER_BYTES + 4)
        dn, br = struct.unpack_from("<IQ", data, HEADER_BYTES + 4 + 4 * n)
        # the constructor's checks, on values the wire format already makes
        # ints of the right width (the same conditions, cheaper)
        if round_ < 1:
            raise MessageFormatError("invalid round message: round must be >= 1")
        if not ids or not all(map(operator.lt, ids, ids[1:])) or ids[-1] >= SERVER_ID:
            raise MessageFormatError(
                "invalid round message: participants must be non-empty, strictly increasing "
                "and below 2**32 - 1")
        if dn >= SERVER_ID or br >= round_ or (dn == 0) != (br == 0):
            raise MessageFormatError(
                "invalid round message: bad delta_nonzeros / base_round")
        return _built(cls, run_id=run_id, round=round_, participants=ids,
                      delta_nonzeros=dn, base_round=br)


SHARE_CT_BYTES = 16 + 2 * 33 + 16      # (owner, holder, round) + 2 shares + AEAD tag


def _holder_ciphertexts(sender: int, holders: Any, ciphertexts: Any, size: int
                        ) -> tuple[tuple, tuple]:
    """Checked ``(holders, ciphertexts)``: strictly increasing holder ids (may
    be empty), one ``size``-byte ciphertext per holder, the sender not among
    them; raises :class:`InvalidInputError` otherwise."""
    h = _ids_tuple(holders, "holder", allow_empty=True)
    cts = tuple(_bytes_field(c, size, "ciphertext") for c in ciphertexts)
    if len(cts) != len(h) or sender in h:
        raise InvalidInputError("one ciphertext per holder, the sender not among them")
    return h, cts


def _unpack_id_blobs(data: bytes, off: int, n: int, size: int, tail: int
                     ) -> tuple[tuple, tuple]:
    """``n`` entries of (u32 id, ``size``-byte blob) from ``off`` of a whole
    message that ends ``tail`` bytes after them; the length is checked
    (:class:`MessageFormatError`) before anything is sliced."""
    _expect_len(data, off + n * (4 + size) + tail)
    ids, blobs = [], []
    for _ in range(n):
        ids.append(struct.unpack_from("<I", data, off)[0])
        blobs.append(data[off + 4:off + 4 + size])
        off += 4 + size
    return tuple(ids), tuple(blobs)


@dataclass(frozen=True)
class ShareMessage:
    """Client -> server (step 1): the client's round key, the commitment to
    its self seed and one encrypted share pair per holder (body: key 32s,
    commitment 32s, count u32, then per holder id u32 and ciphertext of
    ``SHARE_CT_BYTES``; then the tag).

    Built by :meth:`ScmaClient.share_keys` and :meth:`MsaClient.share_keys`;
    the server checks it with :meth:`ScmaServer.receive_shares` and forwards
    each ciphertext to its holder in a :class:`ShareBundle`.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    round : int
        The round, in ``[1, 2**64)``.
    sender : int
        The client's id, in ``[0, 2**32 - 1)``.
    round_key : bytes
        The client's 32-byte public round key (the X25519 key its pair masks
        of this round derive from).
    commitment : bytes
        32 bytes committing to the client's self-mask seed.
    holders : sequence of int
        The neighbours that hold the client's shares, strictly increasing,
        the sender not among them (may be empty).
    ciphertexts : sequence of bytes
        One ``SHARE_CT_BYTES`` (98) byte ciphertext per holder, in the order
        of ``holders``: the holder's shares of the round key and of the self
        seed, encrypted under the pair's channel key.
    tag : bytes, default=bytes(16)
        The 16-byte tag authenticating :meth:`signed_bytes` to the server;
        the client sets it after building the rest.

    Raises
    ------
    InvalidInputError
        A field of the wrong type, length or range, or not one ciphertext per
        holder.

    Examples
    --------
    >>> from pyfkm.secagg import ScmaParams, ShareMessage, setup_in_process
    >>> server, clients = setup_in_process(ScmaParams.create(2, 10, 4), 3)
    >>> msg = clients[0].share_keys(server.start_round())
    >>> msg.round, msg.sender, msg.holders, len(msg.ciphertexts[0])
    (1, 0, (1, 2), 98)
    >>> ShareMessage.from_bytes(msg.to_bytes()) == msg
    True
    >>> server.receive_shares(msg)          # the tag checks out
    """

    run_id: bytes
    round: int
    sender: int
    round_key: bytes
    commitment: bytes
    holders: tuple
    ciphertexts: tuple
    tag: bytes = field(default=bytes(TAG_BYTES), repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _round_field(self.round))
        object.__setattr__(self, "sender", _check_id(self.sender, "sender"))
        object.__setattr__(self, "round_key", _bytes_field(self.round_key, 32, "round_key"))
        object.__setattr__(self, "commitment", _bytes_field(self.commitment, 32, "commitment"))
        h, cts = _holder_ciphertexts(self.sender, self.holders, self.ciphertexts, SHARE_CT_BYTES)
        object.__setattr__(self, "holders", h)
        object.__setattr__(self, "ciphertexts", cts)
        _check_tag(self)

    def signed_bytes(self) -> bytes:
        """The bytes the tag authenticates: the wire form without the tag.

        Returns
        -------
        bytes
            Header and body.
        """
        # a client's own message keeps the bytes it tagged (its fields never
        # change once built); any other is serialized from its fields
        signed = self.__dict__.get("_signed")
        if signed is not None:
            return signed
        body = b"".join(struct.pack("<I", h) + c for h, c in zip(self.holders, self.ciphertexts))
        return (_pack_header(_SHARES, self.run_id, self.round, self.sender, 0) + self.round_key
                + self.commitment + struct.pack("<I", len(self.holders)) + body)

    def to_bytes(self) -> bytes:
        """The wire form of the message.

        Returns
        -------
        bytes
            :meth:`signed_bytes` followed by the 16-byte tag.
        """
        return self.signed_bytes() + self.tag

    @classmethod
    def from_bytes(cls, data: bytes) -> ShareMessage:
        """Parse a share message from its wire form (the tag is kept, not
        checked: only the server can check it).

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message, as :meth:`to_bytes` writes it.

        Returns
        -------
        ShareMessage
            The message.

        Raises
        ------
        MessageFormatError
            Not a share message of this format version, a wrong length, the
            server's id as the sender, or fields the constructor would refuse.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _SHARES)
        off = HEADER_BYTES + 64
        if len(data) < off + 4 or sender == SERVER_ID or modulus != 0:
            raise MessageFormatError("truncated share message, or not from a client")
        (n,) = struct.unpack_from("<I", data, off)
        hs, cts = _unpack_id_blobs(data, off + 4, n, SHARE_CT_BYTES, TAG_BYTES)
        return _parsed(cls, "share message", run_id=run_id, round=round_, sender=sender,
                       round_key=data[HEADER_BYTES:HEADER_BYTES + 32],
                       commitment=data[HEADER_BYTES + 32:HEADER_BYTES + 64],
                       holders=hs, ciphertexts=cts, tag=data[-TAG_BYTES:])


@dataclass(frozen=True)
class ShareBundle:
    """Server -> one client (step 2): the clients that shared keys (``U2``)
    and, for each of the recipient's neighbours among them, its round key
    and the ciphertext addressed to the recipient (body: recipient u32,
    U2 count u32 + ids, item count u32, items of owner u32, key 32s,
    ciphertext).

    Built by the server's ``bundle(client_id)``; read by the recipient's
    ``receive_shares``.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    round : int
        The round, in ``[1, 2**64)``.
    recipient : int
        The client the bundle is for.
    sharers : sequence of int
        Every client that shared keys in the round (``U2``), strictly
        increasing, non-empty.
    owners : sequence of int
        The recipient's neighbours among the sharers, strictly increasing,
        the recipient not among them.
    round_keys : sequence of bytes
        The 32-byte public round key of each owner.
    ciphertexts : sequence of bytes
        The ``SHARE_CT_BYTES`` ciphertext each owner addressed to the
        recipient.

    Raises
    ------
    InvalidInputError
        A field of the wrong type, length or range, not one key and one
        ciphertext per owner, or an owner that is not a sharer.

    Examples
    --------
    >>> from pyfkm.secagg import ScmaParams, ShareBundle, setup_in_process
    >>> server, clients = setup_in_process(ScmaParams.create(2, 10, 4), 3)
    >>> rmsg = server.start_round()
    >>> for c in clients:
    ...     server.receive_shares(c.share_keys(rmsg))
    >>> bundle = server.bundle(0)
    >>> bundle.recipient, bundle.sharers, bundle.owners
    (0, (0, 1, 2), (1, 2))
    >>> ShareBundle.from_bytes(bundle.to_bytes()) == bundle
    True
    >>> clients[0].receive_shares(bundle)
    """

    run_id: bytes
    round: int
    recipient: int
    sharers: tuple
    owners: tuple
    round_keys: tuple
    ciphertexts: tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _round_field(self.round))
        object.__setattr__(self, "recipient", _check_id(self.recipient, "recipient"))
        object.__setattr__(self, "sharers", _ids_tuple(self.sharers, "sharer"))
        owners = _ids_tuple(self.owners, "owner", allow_empty=True)
        keys = tuple(_bytes_field(k, 32, "round key") for k in self.round_keys)
        cts = tuple(_bytes_field(c, SHARE_CT_BYTES, "ciphertext") for c in self.ciphertexts)
        if not len(owners) == len(keys) == len(cts):
            raise InvalidInputError("one round key and ciphertext per owner")
        if not set(owners) <= set(self.sharers) or self.recipient in owners:
            raise InvalidInputError("owners must be sharers other than the recipient")
        object.__setattr__(self, "owners", owners)
        object.__setattr__(self, "round_keys", keys)
        object.__setattr__(self, "ciphertexts", cts)

    def to_bytes(self) -> bytes:
        """The wire form of the bundle.

        Returns
        -------
        bytes
            Header (sent by the server) and body.
        """
        head = _pack_header(_BUNDLE, self.run_id, self.round, SERVER_ID, 0)
        u2 = struct.pack("<II", self.recipient, len(self.sharers)) + \
            np.asarray(self.sharers, dtype="<u4").tobytes()
        items = b"".join(struct.pack("<I", o) + k + c
                         for o, k, c in zip(self.owners, self.round_keys, self.ciphertexts))
        return head + u2 + struct.pack("<I", len(self.owners)) + items

    @classmethod
    def from_bytes(cls, data: bytes) -> ShareBundle:
        """Parse a share bundle from its wire form.

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message, as :meth:`to_bytes` writes it.

        Returns
        -------
        ShareBundle
            The bundle.

        Raises
        ------
        MessageFormatError
            Not a share bundle of this format version, a wrong length, a sender
            other than the server, or fields the constructor would refuse.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _BUNDLE)
        if sender != SERVER_ID or modulus != 0 or len(data) < HEADER_BYTES + 4:
            raise MessageFormatError("share bundle not from the server, or truncated")
        (recipient,) = struct.unpack_from("<I", data, HEADER_BYTES)
        sharers, off = _unpack_ids(data, HEADER_BYTES + 4, "share bundle")
        if len(data) < off + 4:
            raise MessageFormatError("truncated share bundle")
        (m,) = struct.unpack_from("<I", data, off)
        off += 4
        item = 4 + 32 + SHARE_CT_BYTES
        _expect_len(data, off + m * item)
        owners, keys, cts = [], [], []
        for _ in range(m):
            owners.append(struct.unpack_from("<I", data, off)[0])
            keys.append(data[off + 4:off + 36])
            cts.append(data[off + 36:off + item])
            off += item
        return _parsed(cls, "share bundle", run_id=run_id, round=round_, recipient=recipient,
                       sharers=sharers, owners=tuple(owners), round_keys=tuple(keys),
                       ciphertexts=tuple(cts))


@dataclass(frozen=True)
class InputRequest:
    """Server -> clients (step 3): send your masked input for this round
    (body: delta_nonzeros u32, base_round u64; both 0 for a full round).

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    round : int
        The round, in ``[1, 2**64)``.
    delta_nonzeros : int, default=0
        0 for a full round; else a difference round with at most this many
        changed bins (see :class:`RoundMessage`).
    base_round : int, default=0
        The round a difference round's changes are taken against, in
        ``[1, round)``; 0 exactly when ``delta_nonzeros`` is 0.

    Raises
    ------
    InvalidInputError
        A field out of range, or only one of ``delta_nonzeros`` and
        ``base_round`` set.

    Examples
    --------
    >>> from pyfkm.secagg import InputRequest
    >>> req = InputRequest(bytes(16), round=3)
    >>> InputRequest.from_bytes(req.to_bytes()) == req
    True
    >>> InputRequest(bytes(16), round=3, delta_nonzeros=5, base_round=2).base_round
    2
    >>> InputRequest(bytes(16), round=3, delta_nonzeros=5)
    Traceback (most recent call last):
    ...
    pyfkm.exceptions.InvalidInputError: a difference round needs both delta_nonzeros and base_round
    """

    run_id: bytes
    round: int
    delta_nonzeros: int = 0
    base_round: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        r = _round_field(self.round)
        object.__setattr__(self, "round", r)
        dn, br = self.delta_nonzeros, self.base_round
        if not isinstance(dn, (int, np.integer)) or isinstance(dn, bool) \
                or not 0 <= int(dn) < SERVER_ID:
            raise InvalidInputError(f"delta_nonzeros must be an int in [0, 2**32 - 1), got {dn!r}")
        if not isinstance(br, (int, np.integer)) or isinstance(br, bool) \
                or not 0 <= int(br) < r:
            raise InvalidInputError(f"base_round must be an int in [0, round), got {br!r}")
        if (int(dn) == 0) != (int(br) == 0):
            raise InvalidInputError("a difference round needs both delta_nonzeros and base_round")
        object.__setattr__(self, "delta_nonzeros", int(dn))
        object.__setattr__(self, "base_round", int(br))

    def to_bytes(self) -> bytes:
        """The wire form of the request.

        Returns
        -------
        bytes
            The header (sent by the server) and the 12-byte body.
        """
        return (_pack_header(_INPUTS, self.run_id, self.round, SERVER_ID, 0)
                + struct.pack("<IQ", self.delta_nonzeros, self.base_round))

    @classmethod
    def from_bytes(cls, data: bytes) -> InputRequest:
        """Parse an input request from its wire form.

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message, as :meth:`to_bytes` writes it.

        Returns
        -------
        InputRequest
            The request.

        Raises
        ------
        MessageFormatError
            Not an input request of this format version, a wrong length, a
            sender other than the server, or fields the constructor would refuse.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _INPUTS)
        _expect_len(data, HEADER_BYTES + 12)
        if sender != SERVER_ID or modulus != 0:
            raise MessageFormatError("input request not from the server")
        dn, br = struct.unpack_from("<IQ", data, HEADER_BYTES)
        # the constructor's checks, in its order and with its words, on
        # values the wire format already makes ints of the right width
        what = "invalid input request: "
        if round_ < 1:
            raise MessageFormatError(f"{what}round must be an int in [1, 2**64), got {round_!r}")
        if dn >= SERVER_ID:
            raise MessageFormatError(f"{what}delta_nonzeros must be an int in [0, 2**32 - 1), "
                                     f"got {dn!r}")
        if br >= round_:
            raise MessageFormatError(f"{what}base_round must be an int in [0, round), got {br!r}")
        if (dn == 0) != (br == 0):
            raise MessageFormatError(f"{what}a difference round needs both delta_nonzeros and "
                                     "base_round")
        return _built(cls, run_id=run_id, round=round_, delta_nonzeros=dn, base_round=br)


@dataclass(frozen=True)
class UnmaskRequest:
    """Server -> clients (step 4): the survivors ``U3`` whose inputs arrived
    (body: count u32, ids u32 strictly increasing).

    Each survivor answers with an :class:`UnmaskMessage`.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    round : int
        The round, in ``[1, 2**64)``.
    survivors : sequence of int
        The clients whose inputs arrived, strictly increasing, non-empty.

    Raises
    ------
    InvalidInputError
        A field of the wrong type or range, or survivors not strictly
        increasing.

    Examples
    --------
    >>> from pyfkm.secagg import UnmaskRequest
    >>> req = UnmaskRequest(bytes(16), round=1, survivors=[0, 2])
    >>> req.survivors
    (0, 2)
    >>> UnmaskRequest.from_bytes(req.to_bytes()) == req
    True
    """

    run_id: bytes
    round: int
    survivors: tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _round_field(self.round))
        object.__setattr__(self, "survivors", _ids_tuple(self.survivors, "survivor"))

    def survivor_set(self) -> frozenset:
        """The survivors as a frozenset, built once per message (a broadcast
        parsed once serves every survivor; its fields never change).

        Returns
        -------
        frozenset of int
            ``frozenset(self.survivors)``.
        """
        s = self.__dict__.get("_survivor_set")
        if s is None:
            s = self.__dict__["_survivor_set"] = frozenset(self.survivors)
        return s

    def to_bytes(self) -> bytes:
        """The wire form of the request.

        Returns
        -------
        bytes
            The header (sent by the server), the count and the ids.
        """
        n = len(self.survivors)
        return (_pack_header(_UNMASK_REQ, self.run_id, self.round, SERVER_ID, 0)
                + struct.pack(f"<I{n}I", n, *self.survivors))

    @classmethod
    def from_bytes(cls, data: bytes) -> UnmaskRequest:
        """Parse an unmask request from its wire form.

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message, as :meth:`to_bytes` writes it.

        Returns
        -------
        UnmaskRequest
            The request.

        Raises
        ------
        MessageFormatError
            Not an unmask request of this format version, a wrong length, a
            sender other than the server, or survivors the constructor would
            refuse.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _UNMASK_REQ)
        if sender != SERVER_ID or modulus != 0:
            raise MessageFormatError("unmask request not from the server")
        ids, off = _unpack_ids(data, HEADER_BYTES, "unmask request")
        _expect_len(data, off)
        # the constructor's checks on fields the format typed (a 16-byte run
        # id, a u64 round, u32 ids)
        try:
            round_ = _round_field(round_)
            ids = _ids_tuple(ids, "survivor")
        except InvalidInputError as e:
            raise MessageFormatError(f"invalid unmask request: {e}") from None
        return _built(cls, run_id=run_id, round=round_, survivors=ids)


_UNMASK_ITEM = struct.Struct("<IB33s")


_BULK_ITEMS = 1024        # answers up to this many items are unpacked in one call


@functools.lru_cache(maxsize=64)
def _unmask_items_struct(n: int) -> struct.Struct:
    """The layout of ``n`` unmask items in a row (one unpack for all)."""
    return struct.Struct("<" + "IB33s" * n)


def _unmask_items(signed: bytes, n: int) -> tuple[tuple, tuple, tuple]:
    """``(owners, kinds, shares)`` of the ``n`` items of an unmask answer's
    signed bytes (whose length the caller checked)."""
    if not n:
        return (), (), ()
    if n > _BULK_ITEMS:       # (no layout cached for a huge count)
        items = _UNMASK_ITEM.iter_unpack(memoryview(signed)[HEADER_BYTES + 4:])
        return tuple(tuple(c) for c in zip(*items))  # type: ignore[return-value]
    flat = _unmask_items_struct(n).unpack_from(signed, HEADER_BYTES + 4)
    return flat[0::3], flat[1::3], flat[2::3]


@dataclass(frozen=True)
class UnmaskMessage:
    """Client -> server (step 4): the shares the client reveals -- of the
    self seed of each surviving holder-peer (kind 0) and of the round key
    of each dropped one (kind 1) -- then the tag (body: count u32, items of
    owner u32, kind u8, share 33s).

    Built by :meth:`ScmaClient.unmask` and :meth:`MsaClient.unmask_shares`;
    the server collects them with ``receive_unmask`` until every secret it
    needs has enough shares.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    round : int
        The round, in ``[1, 2**64)``.
    sender : int
        The client's id, in ``[0, 2**32 - 1)``.
    owners : sequence of int
        The clients whose shares are revealed, strictly increasing,
        non-empty.
    kinds : sequence of int
        Per owner, 0 (a share of its self seed: a survivor) or 1 (a share of
        its round key: a dropped client).
    shares : sequence of bytes
        Per owner, the 33-byte Shamir share.
    tag : bytes, default=bytes(16)
        The 16-byte tag authenticating :meth:`signed_bytes` to the server;
        the client sets it after building the rest.

    Raises
    ------
    InvalidInputError
        A field of the wrong type, length or range, or not one kind and one
        share per owner.

    Examples
    --------
    A message with placeholder shares (a client reveals real ones):

    >>> from pyfkm.secagg import UnmaskMessage
    >>> msg = UnmaskMessage(bytes(16), round=1, sender=0, owners=(1, 2), kinds=(0, 1),
    ...                     shares=(bytes(33), bytes(33)))
    >>> data = msg.to_bytes()
    >>> len(data) == len(msg.signed_bytes()) + 16
    True
    >>> UnmaskMessage.from_bytes(data) == msg
    True
    """

    run_id: bytes
    round: int
    sender: int
    owners: tuple
    kinds: tuple
    shares: tuple
    tag: bytes = field(default=bytes(TAG_BYTES), repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _round_field(self.round))
        object.__setattr__(self, "sender", _check_id(self.sender, "sender"))
        owners = _ids_tuple(self.owners, "owner")
        kinds = tuple(self.kinds)
        if any(k not in (0, 1) or isinstance(k, bool) for k in kinds):
            raise InvalidInputError("share kinds must be 0 (self seed) or 1 (round key)")
        shares = tuple(_bytes_field(s, 33, "share") for s in self.shares)
        if not len(owners) == len(kinds) == len(shares):
            raise InvalidInputError("one kind and share per owner")
        object.__setattr__(self, "owners", owners)
        object.__setattr__(self, "kinds", tuple(int(k) for k in kinds))
        object.__setattr__(self, "shares", shares)
        _check_tag(self)

    @classmethod
    def _signed_by(cls, run_id: bytes, round_: int, sender: int, owners: tuple,
                   kinds: tuple, shares: tuple, sign: Any, body: bytes | None = None
                   ) -> UnmaskMessage:
        """A message built by a client from its own checked state (run id,
        round, id; owners strictly increasing and non-empty, kinds 0/1,
        33-byte shares), tagged with ``sign(signed bytes)``: serialized once,
        without the checks that guard untrusted input.  ``body``, when given,
        is ``unmask_body(owners, kinds, shares)`` laid out ahead."""
        msg = _built(cls, run_id=run_id, round=int(round_), sender=int(sender), owners=owners,
                     kinds=kinds, shares=shares)
        if body is None:
            signed = _unmask_signed(msg)
        else:
            signed = _pack_header(_UNMASK, run_id, msg.round, msg.sender, 0) + body
        msg.__dict__["tag"] = bytes(sign(signed))
        msg.__dict__["_signed"] = signed
        return msg

    def signed_bytes(self) -> bytes:
        """The bytes the tag authenticates: the wire form without the tag.

        Returns
        -------
        bytes
            Header and body.
        """
        # a parsed message keeps the bytes it was parsed from (the format is
        # canonical: they are exactly what this would write); the fields of
        # a frozen message never change after it is built
        signed = self.__dict__.get("_signed")
        return _unmask_signed(self) if signed is None else signed

    def to_bytes(self) -> bytes:
        """The wire form of the message.

        Returns
        -------
        bytes
            :meth:`signed_bytes` followed by the 16-byte tag.
        """
        return self.signed_bytes() + self.tag

    @classmethod
    def from_bytes(cls, data: bytes) -> UnmaskMessage:
        """Parse an unmask answer from its wire form (the tag is kept, not
        checked: only the server can check it).

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message, as :meth:`to_bytes` writes it.

        Returns
        -------
        UnmaskMessage
            The message.

        Raises
        ------
        MessageFormatError
            Not an unmask answer of this format version, a wrong length, the
            server's id as the sender, or fields the constructor would refuse.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _UNMASK)
        if sender == SERVER_ID or modulus != 0 or len(data) < HEADER_BYTES + 4:
            raise MessageFormatError("unmask answer not from a client, or truncated")
        (n,) = struct.unpack_from("<I", data, HEADER_BYTES)
        _expect_len(data, HEADER_BYTES + 4 + n * _UNMASK_ITEM.size + TAG_BYTES)
        signed = data[:-TAG_BYTES]
        owners, kinds, shares = _unmask_items(signed, n)
        # the constructor's checks, in its order, on fields the format already
        # typed (run id 16 bytes, sender an id, kinds u8, shares 33 bytes, one
        # kind and share per owner, a 16-byte tag)
        try:
            round_ = _round_field(round_)
            owners = _ids_tuple(owners, "owner")
        except InvalidInputError as e:
            raise MessageFormatError(f"invalid unmask answer: {e}") from None
        if not _KINDS.issuperset(kinds):
            raise MessageFormatError("invalid unmask answer: share kinds must be 0 (self seed) "
                                     "or 1 (round key)")
        msg = _built(cls, run_id=run_id, round=round_, sender=sender, owners=owners,
                     kinds=kinds, shares=shares, tag=data[-TAG_BYTES:])
        msg.__dict__["_signed"] = signed
        return msg


_KINDS = frozenset((0, 1))
_SENDER_AT = HEADER_BYTES - 12                  # header: ..., round u64, sender u32, modulus u64
_SENDER = struct.Struct("<I")


def parse_unmask_answers(datas: list, run_id: bytes, round_: int) -> list | None:
    """Parse many unmask answers of one round at once.

    Returns ``[(sender, owners, kinds, shares, signed bytes, tag)]`` when
    every message is a well-formed unmask answer (the checks of
    :meth:`UnmaskMessage.from_bytes`) of this ``run_id`` and ``round_``;
    None otherwise (the caller then takes the messages one by one for the
    precise error).  Tags are not checked here: the server checks them.
    """
    if round_ < 1:
        return None
    head = _pack_header(_UNMASK, run_id, round_, 0, 0)
    before, after = head[:_SENDER_AT], head[_SENDER_AT + 4:]
    low = HEADER_BYTES + 4 + TAG_BYTES
    out = []
    for x in datas:
        if type(x) is not bytes or len(x) <= low or not x.startswith(before) \
                or not x.startswith(after, _SENDER_AT + 4):
            return None
        (sender,) = _SENDER.unpack_from(x, _SENDER_AT)
        (n,) = _SENDER.unpack_from(x, HEADER_BYTES)
        if sender == SERVER_ID or len(x) != low + n * _UNMASK_ITEM.size:
            return None
        signed = x[:-TAG_BYTES]
        owners, kinds, shares = _unmask_items(signed, n)
        if not _KINDS.issuperset(kinds) or owners[-1] >= SERVER_ID \
                or not all(map(operator.lt, owners, owners[1:])):
            return None
        out.append((sender, owners, kinds, shares, signed, x[-TAG_BYTES:]))
    return out


def unmask_body(owners: tuple, kinds: tuple, shares: tuple) -> bytes:
    """The part of an unmask answer's signed bytes after its header: the
    item count and the items (a client may lay it out before the round's
    request, from the tuples :meth:`MaskingClient.reveal_all` gives)."""
    return struct.pack("<I", len(owners)) + b"".join(map(_UNMASK_ITEM.pack, owners, kinds,
                                                         shares))


def _unmask_signed(msg: UnmaskMessage) -> bytes:
    return (_pack_header(_UNMASK, msg.run_id, msg.round, msg.sender, 0)
            + unmask_body(msg.owners, msg.kinds, msg.shares))
