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
import operator
import struct
from dataclasses import dataclass, field

import numpy as np

from ..exceptions import InvalidInputError, MessageFormatError, ProtocolError
from ._framing import (_BUNDLE, _INPUTS, _KEY, _ROUND, _SHARES, _UNMASK, _UNMASK_REQ,
                       HEADER_BYTES, SERVER_ID, TAG_BYTES, _built, _bytes_field, _check_id,
                       _check_run_id, _check_tag, _counted, _expect_len, _ids_tuple, _pack_header,
                       _parsed, _round_field, _unpack_header, _unpack_ids)


@dataclass(frozen=True)
class KeyMessage:
    """Client -> server: the client's X25519 public key (body: 32 bytes)."""

    run_id: bytes
    sender: int
    public_key: bytes

    def __post_init__(self):
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "sender", _check_id(self.sender, "sender"))
        if not isinstance(self.public_key, (bytes, bytearray)) or len(self.public_key) != 32:
            raise InvalidInputError("public_key must be 32 bytes")
        object.__setattr__(self, "public_key", bytes(self.public_key))

    def to_bytes(self):
        return _pack_header(_KEY, self.run_id, 0, self.sender, 0) + self.public_key

    @classmethod
    def from_bytes(cls, data):
        data, run_id, round_, sender, modulus = _unpack_header(data, _KEY)
        _expect_len(data, HEADER_BYTES + 32)
        if round_ != 0 or modulus != 0 or sender == SERVER_ID:
            raise MessageFormatError("key message with a round, modulus or server sender")
        return cls(run_id, sender, data[HEADER_BYTES:])


def check_key_message(msg, run_id, keys, roster_closed):
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
    """

    run_id: bytes
    round: int
    participants: tuple
    delta_nonzeros: int = 0
    base_round: int = 0

    def __post_init__(self):
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
    def size(n_participants):
        """Bytes of a round message with ``n_participants`` participants."""
        return HEADER_BYTES + 4 + 4 * n_participants + 12

    def to_bytes(self):
        ids = np.asarray(self.participants, dtype="<u4").tobytes()
        return (_pack_header(_ROUND, self.run_id, self.round, SERVER_ID, 0)
                + struct.pack("<I", len(self.participants)) + ids
                + struct.pack("<IQ", self.delta_nonzeros, self.base_round))

    @classmethod
    def from_bytes(cls, data):
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


@dataclass(frozen=True)
class ShareMessage:
    """Client -> server (step 1): the client's round key, the commitment to
    its self seed and one encrypted share pair per holder (body: key 32s,
    commitment 32s, count u32, then per holder id u32 and ciphertext of
    ``SHARE_CT_BYTES``; then the tag)."""

    run_id: bytes
    round: int
    sender: int
    round_key: bytes
    commitment: bytes
    holders: tuple
    ciphertexts: tuple
    tag: bytes = field(default=bytes(TAG_BYTES), repr=False)

    def __post_init__(self):
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _round_field(self.round))
        object.__setattr__(self, "sender", _check_id(self.sender, "sender"))
        object.__setattr__(self, "round_key", _bytes_field(self.round_key, 32, "round_key"))
        object.__setattr__(self, "commitment", _bytes_field(self.commitment, 32, "commitment"))
        h = _ids_tuple(self.holders, "holder", allow_empty=True)
        cts = tuple(_bytes_field(c, SHARE_CT_BYTES, "ciphertext") for c in self.ciphertexts)
        if len(cts) != len(h) or self.sender in h:
            raise InvalidInputError("one ciphertext per holder, the sender not among them")
        object.__setattr__(self, "holders", h)
        object.__setattr__(self, "ciphertexts", cts)
        _check_tag(self)

    def signed_bytes(self):
        body = b"".join(struct.pack("<I", h) + c for h, c in zip(self.holders, self.ciphertexts))
        return (_pack_header(_SHARES, self.run_id, self.round, self.sender, 0) + self.round_key
                + self.commitment + struct.pack("<I", len(self.holders)) + body)

    def to_bytes(self):
        return self.signed_bytes() + self.tag

    @classmethod
    def from_bytes(cls, data):
        data, run_id, round_, sender, modulus = _unpack_header(data, _SHARES)
        off = HEADER_BYTES + 64
        if len(data) < off + 4 or sender == SERVER_ID or modulus != 0:
            raise MessageFormatError("truncated share message, or not from a client")
        (n,) = struct.unpack_from("<I", data, off)
        off += 4
        _expect_len(data, off + n * (4 + SHARE_CT_BYTES) + TAG_BYTES)
        hs, cts = [], []
        for _ in range(n):
            hs.append(struct.unpack_from("<I", data, off)[0])
            cts.append(data[off + 4: off + 4 + SHARE_CT_BYTES])
            off += 4 + SHARE_CT_BYTES
        return _parsed(cls, "share message", run_id=run_id, round=round_, sender=sender,
                       round_key=data[HEADER_BYTES:HEADER_BYTES + 32],
                       commitment=data[HEADER_BYTES + 32:HEADER_BYTES + 64],
                       holders=tuple(hs), ciphertexts=tuple(cts), tag=data[-TAG_BYTES:])


@dataclass(frozen=True)
class ShareBundle:
    """Server -> one client (step 2): the clients that shared keys (``U2``)
    and, for each of the recipient's neighbours among them, its round key
    and the ciphertext addressed to the recipient (body: recipient u32,
    U2 count u32 + ids, item count u32, items of owner u32, key 32s,
    ciphertext)."""

    run_id: bytes
    round: int
    recipient: int
    sharers: tuple
    owners: tuple
    round_keys: tuple
    ciphertexts: tuple

    def __post_init__(self):
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

    def to_bytes(self):
        head = _pack_header(_BUNDLE, self.run_id, self.round, SERVER_ID, 0)
        u2 = struct.pack("<II", self.recipient, len(self.sharers)) + \
            np.asarray(self.sharers, dtype="<u4").tobytes()
        items = b"".join(struct.pack("<I", o) + k + c
                         for o, k, c in zip(self.owners, self.round_keys, self.ciphertexts))
        return head + u2 + struct.pack("<I", len(self.owners)) + items

    @classmethod
    def from_bytes(cls, data):
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
    (body: delta_nonzeros u32, base_round u64; both 0 for a full round)."""

    run_id: bytes
    round: int
    delta_nonzeros: int = 0
    base_round: int = 0

    def __post_init__(self):
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

    def to_bytes(self):
        return (_pack_header(_INPUTS, self.run_id, self.round, SERVER_ID, 0)
                + struct.pack("<IQ", self.delta_nonzeros, self.base_round))

    @classmethod
    def from_bytes(cls, data):
        data, run_id, round_, sender, modulus = _unpack_header(data, _INPUTS)
        _expect_len(data, HEADER_BYTES + 12)
        if sender != SERVER_ID or modulus != 0:
            raise MessageFormatError("input request not from the server")
        dn, br = struct.unpack_from("<IQ", data, HEADER_BYTES)
        return _parsed(cls, "input request", run_id=run_id, round=round_,
                       delta_nonzeros=dn, base_round=br)


@dataclass(frozen=True)
class UnmaskRequest:
    """Server -> clients (step 4): the survivors ``U3`` whose inputs arrived
    (body: count u32, ids u32 strictly increasing)."""

    run_id: bytes
    round: int
    survivors: tuple

    def __post_init__(self):
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _round_field(self.round))
        object.__setattr__(self, "survivors", _ids_tuple(self.survivors, "survivor"))

    def to_bytes(self):
        return (_pack_header(_UNMASK_REQ, self.run_id, self.round, SERVER_ID, 0)
                + struct.pack("<I", len(self.survivors))
                + np.asarray(self.survivors, dtype="<u4").tobytes())

    @classmethod
    def from_bytes(cls, data):
        data, run_id, round_, sender, modulus = _unpack_header(data, _UNMASK_REQ)
        if sender != SERVER_ID or modulus != 0:
            raise MessageFormatError("unmask request not from the server")
        ids, off = _unpack_ids(data, HEADER_BYTES, "unmask request")
        _expect_len(data, off)
        return _parsed(cls, "unmask request", run_id=run_id, round=round_, survivors=ids)


_UNMASK_ITEM = struct.Struct("<IB33s")


@dataclass(frozen=True)
class UnmaskMessage:
    """Client -> server (step 4): the shares the client reveals -- of the
    self seed of each surviving holder-peer (kind 0) and of the round key
    of each dropped one (kind 1) -- then the tag (body: count u32, items of
    owner u32, kind u8, share 33s)."""

    run_id: bytes
    round: int
    sender: int
    owners: tuple
    kinds: tuple
    shares: tuple
    tag: bytes = field(default=bytes(TAG_BYTES), repr=False)

    def __post_init__(self):
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

    def signed_bytes(self):
        return (_pack_header(_UNMASK, self.run_id, self.round, self.sender, 0)
                + struct.pack("<I", len(self.owners))
                + b"".join(_UNMASK_ITEM.pack(o, k, s)
                           for o, k, s in zip(self.owners, self.kinds, self.shares)))

    def to_bytes(self):
        return self.signed_bytes() + self.tag

    @classmethod
    def from_bytes(cls, data):
        data, run_id, round_, sender, modulus = _unpack_header(data, _UNMASK)
        if sender == SERVER_ID or modulus != 0 or len(data) < HEADER_BYTES + 4:
            raise MessageFormatError("unmask answer not from a client, or truncated")
        (n,) = struct.unpack_from("<I", data, HEADER_BYTES)
        _expect_len(data, HEADER_BYTES + 4 + n * _UNMASK_ITEM.size + TAG_BYTES)
        items = [_UNMASK_ITEM.unpack_from(data, HEADER_BYTES + 4 + j * _UNMASK_ITEM.size)
                 for j in range(n)]
        return _parsed(cls, "unmask answer", run_id=run_id, round=round_, sender=sender,
                       owners=tuple(i[0] for i in items), kinds=tuple(i[1] for i in items),
                       shares=tuple(i[2] for i in items), tag=data[-TAG_BYTES:])
