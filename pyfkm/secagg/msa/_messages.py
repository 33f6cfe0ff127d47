"""Wire format of MSA's own messages: roster, group key, key batches, masked vectors,
aggregate.

Framing and field checks are :mod:`pyfkm.secagg._framing`; the messages MSA
shares with SCMA (keys, rounds, shares, unmasking) are
:mod:`pyfkm.secagg._messages`.
"""
from __future__ import annotations

import operator
import struct
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...exceptions import InvalidInputError, MessageFormatError
from .._framing import (_AGGREGATE, _GROUP_KEY, _KEY_BATCH, _KEY_BATCH_BUNDLE, _MASKED,
                        _MSA_ROSTER, HEADER_BYTES, SERVER_ID, TAG_BYTES, _built, _bytes_field,
                        _check_id, _check_roster_clients, _check_roster_extras, _check_run_id,
                        _check_tag, _counted, _expect_len, _ids_tuple, _pack_header, _parsed,
                        _round_field, _unpack_header, _unpack_ids)
from .._messages import _holder_ciphertexts, _unpack_id_blobs
from ._keybatch import MAX_BATCH, batch_ct_bytes

MAX_WORDS = 1 << 23           # 64 MiB messages: clients refuse longer vectors


def _check_words(payload: ArrayLike, name: str = "payload") -> NDArray[np.uint64]:
    w = np.ascontiguousarray(payload)
    if w.dtype != np.uint64:
        if w.dtype.kind not in "iu":
            raise InvalidInputError(f"{name} must be uint64 words")
        w = w.astype(np.uint64)
    if w.ndim != 1:
        raise InvalidInputError(f"{name} must be 1-D")
    w = w.copy()
    w.setflags(write=False)
    return w


_WORDS = np.dtype("<u8")


def _check_round(r: object) -> int:
    if not isinstance(r, (int, np.integer)) or isinstance(r, bool) or not 1 <= int(r) < 1 << 64:
        raise InvalidInputError(f"round must be an int in [1, 2**64), got {r!r}")
    return int(r)


def _words_body(payload: NDArray[np.uint64]) -> bytes:
    words = payload if payload.dtype == _WORDS else payload.astype(_WORDS)
    return struct.pack("<I", payload.size) + words.tobytes()


def _words_view(data: bytes, n: int, offset: int) -> NDArray[np.uint64]:
    """``n`` little-endian u64 words of ``data`` (immutable bytes whose length
    the caller checked) from ``offset``, as a read-only uint64 array: a view
    of the message's bytes on a little-endian host (no copy; bytes cannot
    change and numpy refuses to make the view writable), a read-only copy
    elsewhere."""
    w = np.frombuffer(data, dtype=_WORDS, count=n, offset=offset)
    if w.dtype != np.uint64:                      # pragma: no cover - big-endian hosts
        w = w.astype(np.uint64)
        w.setflags(write=False)
    return w


def _parse_words(data: bytes, what: str, trailer: int = 0) -> NDArray[np.uint64]:
    n = _counted(data, f"{what} message", 8, trailer)
    return _words_view(data, n, HEADER_BYTES + 4)


def _round_ok(round_: int, what: str) -> int:
    """A parsed round (a u64 of the header) as the constructors' check
    (``_check_round``) takes it: at least 1; MessageFormatError naming
    ``what`` otherwise, with the constructor's text."""
    if round_ < 1:
        raise MessageFormatError(f"invalid {what}: round must be an int in [1, 2**64), "
                                 f"got {round_!r}")
    return round_


class _WordsEq:
    _key: Callable[[], tuple[Any, ...]]  # the subclass's fields to compare

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
                   for a, b in zip(self._key(), other._key()))

    __hash__ = None  # type: ignore[assignment]  # unhashable: array fields

    def __reduce__(self) -> tuple[Any, ...]:
        # a pickle or a copy is parsed again from the wire form, so its words
        # stay a read-only view of the bytes a tag covers (a plain pickle
        # would give back writable words beside the kept signed bytes)
        return (type(self).from_bytes, (self.to_bytes(),))  # type: ignore[attr-defined]


@dataclass(frozen=True)
class MsaRosterMessage:
    """Server -> clients: vector length, fixed-point scale, threshold, graph
    degree, the server's channel key and every client's channel key.

    Body: n_words u32, scale_bits u8, threshold u32, degree u32, server key
    32s, count u32, then per client id u32 and X25519 key 32s (ids strictly
    increasing; the first is the leader).

    Built by :meth:`MsaServer.roster` once every key is in; each client
    checks it with :meth:`MsaClient.receive_roster`.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    n_words : int
        Length of every vector, in ``[1, 2**23]``.
    scale_bits : int
        Fixed-point scale ``2**scale_bits``, in ``[0, 48]``.
    client_ids : sequence of int
        The clients of the run, strictly increasing, at least one.
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
        A field of the wrong type, length or range, or not one key per
        client.

    Examples
    --------
    >>> from pyfkm.secagg import MsaRosterMessage, setup_msa
    >>> server, clients = setup_msa(3, 2)
    >>> roster = server.roster()
    >>> roster.n_words, roster.scale_bits, roster.client_ids, roster.threshold
    (2, 16, (0, 1, 2), 2)
    >>> MsaRosterMessage.from_bytes(roster.to_bytes()) == roster
    True
    """

    # deliberate specialization: the roster fields are declared again in
    # SCMA's RosterMessage (no shared dataclass base: a base's fields would come
    # first and change the positional order of the constructor, which
    # follows the wire format); their checks are shared (_framing)
    run_id: bytes
    n_words: int
    scale_bits: int
    client_ids: tuple
    public_keys: tuple
    threshold: int = 1
    degree: int = 0
    server_key: bytes = bytes(32)

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        nw, sb = self.n_words, self.scale_bits
        if not isinstance(nw, (int, np.integer)) or not 1 <= int(nw) <= MAX_WORDS:
            raise InvalidInputError(f"n_words must be an int in [1, {MAX_WORDS}], got {nw!r}")
        if not isinstance(sb, (int, np.integer)) or not 0 <= int(sb) <= 48:
            raise InvalidInputError(f"scale_bits must be an int in [0, 48], got {sb!r}")
        _check_roster_clients(self, at_least_one=True)
        object.__setattr__(self, "n_words", int(nw))
        object.__setattr__(self, "scale_bits", int(sb))
        _check_roster_extras(self)

    def params_bytes(self) -> bytes:
        """What the roster digest binds of the run's parameters.

        Returns
        -------
        bytes
            ``b"MSA"``, ``n_words`` (u32) and ``scale_bits`` (u8).
        """
        return b"MSA" + struct.pack("<IB", self.n_words, self.scale_bits)

    def to_bytes(self) -> bytes:
        """The wire form of the roster.

        Returns
        -------
        bytes
            The header (sent by the server) and the body.
        """
        body = [struct.pack("<IBII", self.n_words, self.scale_bits, self.threshold,
                            self.degree), self.server_key,
                struct.pack("<I", len(self.client_ids))]
        body += [struct.pack("<I", i) + k for i, k in zip(self.client_ids, self.public_keys)]
        return _pack_header(_MSA_ROSTER, self.run_id, 0, SERVER_ID, 0) + b"".join(body)

    @classmethod
    def from_bytes(cls, data: bytes) -> MsaRosterMessage:
        """Parse an MSA roster from its wire form.

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message, as :meth:`to_bytes` writes it.

        Returns
        -------
        MsaRosterMessage
            The roster.

        Raises
        ------
        MessageFormatError
            Not an MSA roster of this format version, a wrong length, a sender
            other than the server, a round or modulus in the header, or fields
            the constructor would refuse.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _MSA_ROSTER)
        off = HEADER_BYTES
        if len(data) < off + 13 + 32 + 4:
            raise MessageFormatError("truncated MSA roster message")
        nw, sb, t, deg = struct.unpack_from("<IBII", data, off)
        off += 13
        skey = data[off:off + 32]
        off += 32
        (n,) = struct.unpack_from("<I", data, off)
        off += 4
        _expect_len(data, off + 36 * n)
        if sender != SERVER_ID or round_ != 0 or modulus != 0:
            raise MessageFormatError("MSA roster not from the server, or with a round/modulus")
        ids = [struct.unpack_from("<I", data, off + 36 * j)[0] for j in range(n)]
        keys = [data[off + 36 * j + 4: off + 36 * j + 36] for j in range(n)]
        try:
            return cls(run_id, nw, sb, tuple(ids), tuple(keys), t, deg, skey)
        except InvalidInputError as e:
            raise MessageFormatError(f"invalid MSA roster: {e}") from None


@dataclass(frozen=True)
class GroupKeyMessage:
    """Leader -> (server relays) -> one client: the group key encrypted for
    the recipient.  Body: recipient u32, nonce 12s, ciphertext 48s
    (ChaCha20-Poly1305 of the 32-byte key under the pair's channel key,
    bound to the roster digest; 16-byte AEAD tag).

    Built by :meth:`MsaClient.group_key_messages`, relayed by
    :meth:`MsaServer.relay_group_key` and :meth:`MsaServer.group_key_for`,
    read by :meth:`MsaClient.receive_group_key`.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    sender : int
        The leader (the roster's lowest id).
    recipient : int
        The client the key is for, not the sender.
    nonce : bytes
        The 12-byte AEAD nonce.
    ciphertext : bytes
        The 48-byte encrypted group key (32 bytes and the AEAD tag).

    Raises
    ------
    InvalidInputError
        A field of the wrong type, length or range, or the sender as the
        recipient.

    Examples
    --------
    >>> from pyfkm.secagg import GroupKeyMessage, setup_msa
    >>> server, clients = setup_msa(3, 2)
    >>> msg = server.group_key_for(2)
    >>> msg.sender, msg.recipient, len(msg.ciphertext)
    (0, 2, 48)
    >>> GroupKeyMessage.from_bytes(msg.to_bytes()) == msg
    True
    """

    run_id: bytes
    sender: int
    recipient: int
    nonce: bytes
    ciphertext: bytes

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "sender", _check_id(self.sender, "sender"))
        object.__setattr__(self, "recipient", _check_id(self.recipient, "recipient"))
        if self.sender == self.recipient:
            raise InvalidInputError("a group key message to its own sender")
        if not isinstance(self.nonce, (bytes, bytearray)) or len(self.nonce) != 12:
            raise InvalidInputError("nonce must be 12 bytes")
        if not isinstance(self.ciphertext, (bytes, bytearray)) or len(self.ciphertext) != 48:
            raise InvalidInputError("ciphertext must be 48 bytes")
        object.__setattr__(self, "nonce", bytes(self.nonce))
        object.__setattr__(self, "ciphertext", bytes(self.ciphertext))

    def to_bytes(self) -> bytes:
        """The wire form of the message.

        Returns
        -------
        bytes
            The header (sent by the leader) and the 64-byte body.
        """
        return (_pack_header(_GROUP_KEY, self.run_id, 0, self.sender, 0)
                + struct.pack("<I", self.recipient) + self.nonce + self.ciphertext)

    @classmethod
    def from_bytes(cls, data: bytes) -> GroupKeyMessage:
        """Parse a group key message from its wire form.

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message, as :meth:`to_bytes` writes it.

        Returns
        -------
        GroupKeyMessage
            The message (the ciphertext is not decrypted).

        Raises
        ------
        MessageFormatError
            Not a group key message of this format version, a wrong length, the
            server's id as the sender, a round or modulus in the header, or
            fields the constructor would refuse.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _GROUP_KEY)
        _expect_len(data, HEADER_BYTES + 4 + 12 + 48)
        if sender == SERVER_ID or round_ != 0 or modulus != 0:
            raise MessageFormatError("group key message from the server id or with a round")
        (rec,) = struct.unpack_from("<I", data, HEADER_BYTES)
        o = HEADER_BYTES + 4
        try:
            return cls(run_id, sender, rec, data[o:o + 12], data[o + 12:o + 60])
        except InvalidInputError as e:
            raise MessageFormatError(f"invalid group key message: {e}") from None


@dataclass(frozen=True, eq=False)
class MaskedVectorMessage(_WordsEq):
    """Client -> server: one round's masked fixed-point vector (body: count
    u32, then that many u64 words; any word is a valid ring element), then
    the 16-byte tag authenticating every byte before it to the server.

    Built by :meth:`MsaClient.respond`, read by :meth:`MsaServer.receive`.
    Two messages are equal when every field and the payload are.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    round : int
        The round, in ``[1, 2**64)``.
    sender : int
        The client's id, in ``[0, 2**32 - 1)``.
    payload : array-like of int
        The masked words, 1-D (signed ints are taken modulo ``2**64``);
        stored as a read-only uint64 copy.
    tag : bytes, default=bytes(16)
        The 16-byte tag authenticating :meth:`signed_bytes` to the server;
        the client sets it after building the rest.

    Raises
    ------
    InvalidInputError
        A field of the wrong type, length or range.

    Examples
    --------
    >>> from pyfkm.secagg import MaskedVectorMessage
    >>> msg = MaskedVectorMessage(bytes(16), round=1, sender=2, payload=[1, -1])
    >>> msg.payload.tolist()
    [1, 18446744073709551615]
    >>> data = msg.to_bytes()
    >>> len(data)
    80
    >>> MaskedVectorMessage.from_bytes(data) == msg
    True
    """

    run_id: bytes
    round: int
    sender: int
    payload: np.ndarray = field(repr=False)
    tag: bytes = field(default=bytes(TAG_BYTES), repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _check_round(self.round))
        object.__setattr__(self, "sender", _check_id(self.sender, "sender"))
        object.__setattr__(self, "payload", _check_words(self.payload))
        if not isinstance(self.tag, (bytes, bytearray)) or len(self.tag) != TAG_BYTES:
            raise InvalidInputError(f"tag must be {TAG_BYTES} bytes")
        object.__setattr__(self, "tag", bytes(self.tag))

    def _key(self) -> tuple[Any, ...]:
        return (self.run_id, self.round, self.sender, self.payload, self.tag)

    def signed_bytes(self) -> bytes:
        """The bytes the tag authenticates: the wire form without the tag.

        Returns
        -------
        bytes
            Header, word count and words (little-endian u64).
        """
        # a client's own message keeps the bytes it tagged (its fields never
        # change once built); any other is serialized from its fields
        signed = self.__dict__.get("_signed")
        if signed is not None:
            return signed
        return (_pack_header(_MASKED, self.run_id, self.round, self.sender, 0)
                + _words_body(self.payload))

    def to_bytes(self) -> bytes:
        """The wire form of the message.

        Returns
        -------
        bytes
            :meth:`signed_bytes` followed by the 16-byte tag.
        """
        return self.signed_bytes() + self.tag

    @classmethod
    def from_bytes(cls, data: bytes) -> MaskedVectorMessage:
        """Parse a masked vector from its wire form (the tag is kept, not
        checked: only the server can check it).

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message, as :meth:`to_bytes` writes it.

        Returns
        -------
        MaskedVectorMessage
            The message.

        Raises
        ------
        MessageFormatError
            Not a masked vector of this format version, a wrong length, the
            server's id as the sender, a modulus in the header, or fields the
            constructor would refuse.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _MASKED)
        payload = _parse_words(data, "masked vector", TAG_BYTES)
        if sender == SERVER_ID or modulus != 0:
            raise MessageFormatError("masked vector from the server id or with a modulus")
        # the constructor's checks on fields the format already typed (a
        # 16-byte run id, a u32 sender below the server's id, 1-D uint64
        # words, a 16-byte tag): only the round's range is left; the words
        # stay a read-only view of the message's bytes, which are kept as
        # the signed bytes (the format is canonical: exactly what
        # signed_bytes would write from the fields)
        msg = _built(cls, run_id=run_id, round=_round_ok(round_, "masked vector message"),
                     sender=sender, payload=payload, tag=data[-TAG_BYTES:])
        msg.__dict__["_signed"] = data[:-TAG_BYTES]
        return msg


@dataclass(frozen=True, eq=False)
class AggregateMessage(_WordsEq):
    """Server -> clients: the survivors' sum, still under the output masks
    (body: survivor count u32 and ids u32, then count u32 and u64 words).

    Returned by :meth:`MsaServer.finish_round`; every client decodes it
    with :meth:`MsaClient.unmask`.  Two messages are equal when every
    field and the payload are.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    round : int
        The round, in ``[1, 2**64)``.
    payload : array-like of int
        The summed words, 1-D; stored as a read-only uint64 copy.
    survivors : sequence of int, default=()
        The clients whose vectors are in the sum, strictly increasing,
        non-empty (the default is refused: it is there for the field order).

    Raises
    ------
    InvalidInputError
        A field of the wrong type or range, or survivors empty or not
        strictly increasing.

    Examples
    --------
    >>> from pyfkm.secagg import AggregateMessage
    >>> agg = AggregateMessage(bytes(16), round=1, payload=[5, 7], survivors=[0, 2])
    >>> agg.survivors, agg.payload.tolist()
    ((0, 2), [5, 7])
    >>> AggregateMessage.from_bytes(agg.to_bytes()) == agg
    True
    """

    run_id: bytes
    round: int
    payload: np.ndarray = field(repr=False)
    survivors: tuple = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _check_round(self.round))
        object.__setattr__(self, "payload", _check_words(self.payload))
        ids = tuple(_check_id(i, "survivor") for i in self.survivors)
        if not ids or any(a >= b for a, b in zip(ids, ids[1:])):
            raise InvalidInputError("survivors must be non-empty and strictly increasing")
        object.__setattr__(self, "survivors", ids)

    def _key(self) -> tuple[Any, ...]:
        return (self.run_id, self.round, self.payload, self.survivors)

    def to_bytes(self) -> bytes:
        """The wire form of the message.

        Returns
        -------
        bytes
            The header (sent by the server), the survivors and the words.
        """
        return (_pack_header(_AGGREGATE, self.run_id, self.round, SERVER_ID, 0)
                + struct.pack(f"<I{len(self.survivors)}I", len(self.survivors), *self.survivors)
                + _words_body(self.payload))

    @classmethod
    def from_bytes(cls, data: bytes) -> AggregateMessage:
        """Parse an aggregate from its wire form.

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message, as :meth:`to_bytes` writes it.

        Returns
        -------
        AggregateMessage
            The message.

        Raises
        ------
        MessageFormatError
            Not an aggregate of this format version, a wrong length, a sender
            other than the server, a modulus in the header, or fields the
            constructor would refuse.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _AGGREGATE)
        if sender != SERVER_ID or modulus != 0:
            raise MessageFormatError("aggregate message not from the server")
        if len(data) < HEADER_BYTES + 4:
            raise MessageFormatError("truncated aggregate message")
        (n,) = struct.unpack_from("<I", data, HEADER_BYTES)
        off = HEADER_BYTES + 4 + 4 * n
        if len(data) < off:
            raise MessageFormatError("truncated aggregate message")
        ids = struct.unpack_from(f"<{n}I", data, HEADER_BYTES + 4)
        # the words' count and length, as if the survivors were cut out
        # (the errors name those lengths), read in place
        if len(data) < off + 4:
            raise MessageFormatError("truncated aggregate message")
        (m,) = struct.unpack_from("<I", data, off)
        have, want = len(data) - off + HEADER_BYTES, HEADER_BYTES + 4 + 8 * m
        if have != want:
            what = "truncated" if have < want else "oversized"
            raise MessageFormatError(f"{what} message: {have} bytes, expected {want}")
        payload = _words_view(data, m, off + 4)
        # the constructor's checks, in its order, on fields the format typed
        # (a 16-byte run id, 1-D uint64 words, u32 ids)
        round_ = _round_ok(round_, "aggregate message")
        if ids and max(ids) >= SERVER_ID:
            bad = next(i for i in ids if i >= SERVER_ID)
            raise MessageFormatError("invalid aggregate message: survivor must be an int in "
                                     f"[0, 2**32 - 1), got {bad!r}")
        if not ids or not all(map(operator.lt, ids, ids[1:])):
            raise MessageFormatError("invalid aggregate message: survivors must be non-empty "
                                     "and strictly increasing")
        return _built(cls, run_id=run_id, round=round_, payload=payload, survivors=ids)


def _keys_field(v: Any, count: int, name: str) -> tuple[bytes, ...]:
    keys = tuple(v)
    if len(keys) != count or any(not isinstance(k, (bytes, bytearray)) or len(k) != 32
                                 for k in keys):
        raise InvalidInputError(f"{name}: one 32-byte value per round ({count})")
    return tuple(bytes(k) for k in keys)


def _check_count(count: object) -> int:
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) \
            or not 1 <= int(count) <= MAX_BATCH:
        raise InvalidInputError(f"count must be an int in [1, {MAX_BATCH}], got {count!r}")
    return int(count)


@dataclass(frozen=True)
class KeyBatchMessage:
    """Client -> server: the round keys, self-seed commitments and encrypted
    shares of ``count`` rounds from ``round`` on, in one message (body:
    count u32, count round keys 32s, count commitments 32s, holder count u32,
    then per holder id u32 and a ciphertext of ``batch_ct_bytes(count)``;
    then the tag).

    Built by :meth:`MsaClient.share_key_batch`, checked by
    :meth:`MsaServer.receive_key_batch`; each ciphertext goes to its holder
    in a :class:`KeyBatchBundle`.

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    round : int
        The batch's first round, in ``[1, 2**64)``.
    sender : int
        The client's id, in ``[0, 2**32 - 1)``.
    count : int
        Rounds of the batch, in ``[1, MAX_BATCH]``.
    round_keys, commitments : sequence of bytes
        One 32-byte public round key and one 32-byte self-seed commitment per
        round.
    holders : sequence of int
        The neighbours holding the client's shares, strictly increasing, the
        sender not among them.
    ciphertexts : sequence of bytes
        One ciphertext per holder: its shares of every round's round key and
        self seed.
    tag : bytes, default=bytes(16)
        The tag authenticating :meth:`signed_bytes` to the server.

    Raises
    ------
    InvalidInputError
        A field of the wrong type, length or range.

    Examples
    --------
    >>> from pyfkm.secagg.msa import KeyBatchMessage
    >>> from pyfkm.secagg.msa._keybatch import batch_ct_bytes
    >>> msg = KeyBatchMessage(bytes(16), 1, 0, 2, [bytes(32)] * 2, [bytes(32)] * 2, [1],
    ...                       [bytes(batch_ct_bytes(2))])
    >>> KeyBatchMessage.from_bytes(msg.to_bytes()) == msg
    True
    """

    run_id: bytes
    round: int
    sender: int
    count: int
    round_keys: tuple
    commitments: tuple
    holders: tuple
    ciphertexts: tuple
    tag: bytes = field(default=bytes(TAG_BYTES), repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _round_field(self.round))
        object.__setattr__(self, "sender", _check_id(self.sender, "sender"))
        count = _check_count(self.count)
        object.__setattr__(self, "count", count)
        object.__setattr__(self, "round_keys", _keys_field(self.round_keys, count, "round_keys"))
        object.__setattr__(self, "commitments",
                           _keys_field(self.commitments, count, "commitments"))
        h, cts = _holder_ciphertexts(self.sender, self.holders, self.ciphertexts,
                                     batch_ct_bytes(count))
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
        body = b"".join(struct.pack("<I", h) + c for h, c in zip(self.holders, self.ciphertexts))
        return (_pack_header(_KEY_BATCH, self.run_id, self.round, self.sender, 0)
                + struct.pack("<I", self.count) + b"".join(self.round_keys)
                + b"".join(self.commitments) + struct.pack("<I", len(self.holders)) + body)

    def to_bytes(self) -> bytes:
        """The wire form: :meth:`signed_bytes` and the 16-byte tag.

        Returns
        -------
        bytes
        """
        return self.signed_bytes() + self.tag

    @classmethod
    def from_bytes(cls, data: bytes) -> KeyBatchMessage:
        """Parse a key batch from its wire form (the tag is kept, not checked).

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message.

        Returns
        -------
        KeyBatchMessage

        Raises
        ------
        MessageFormatError
            Not a key batch of this format version, a wrong length, the
            server's id as the sender, or fields the constructor would refuse.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _KEY_BATCH)
        off = HEADER_BYTES
        if len(data) < off + 4 or sender == SERVER_ID or modulus != 0:
            raise MessageFormatError("truncated key batch, or not from a client")
        (count,) = struct.unpack_from("<I", data, off)
        if not 1 <= count <= MAX_BATCH:
            raise MessageFormatError(f"key batch of {count} rounds")
        off += 4
        keys_end = off + 64 * count
        if len(data) < keys_end + 4:
            raise MessageFormatError("truncated key batch")
        keys = tuple(data[o:o + 32] for o in range(off, off + 32 * count, 32))
        commits = tuple(data[o:o + 32] for o in range(off + 32 * count, keys_end, 32))
        (n,) = struct.unpack_from("<I", data, keys_end)
        hs, cts = _unpack_id_blobs(data, keys_end + 4, n, batch_ct_bytes(count), TAG_BYTES)
        return _parsed(cls, "key batch", run_id=run_id, round=round_, sender=sender,
                       count=count, round_keys=keys, commitments=commits, holders=hs,
                       ciphertexts=cts, tag=data[-TAG_BYTES:])


@dataclass(frozen=True)
class KeyBatchBundle:
    """Server -> one client: the clients whose key batch arrived (the
    batch's sharers) and, for each neighbour among them, its round keys and
    the ciphertext of its shares for the recipient (body: count u32,
    recipient u32, sharer count u32 and ids u32, owner count u32, then per
    owner its id u32, ``count`` round keys 32s and a ciphertext of
    ``batch_ct_bytes(count)``).

    Parameters
    ----------
    run_id : bytes
        16 bytes naming the run.
    round : int
        The batch's first round.
    count : int
        Rounds of the batch, in ``[1, MAX_BATCH]``.
    recipient : int
        The client the bundle is for.
    sharers : sequence of int
        The clients whose key batch arrived, strictly increasing.
    owners : sequence of int
        The recipient's neighbours among them, strictly increasing.
    round_keys : sequence of sequence of bytes
        Per owner, its ``count`` 32-byte public round keys.
    ciphertexts : sequence of bytes
        Per owner, the ciphertext of its shares for the recipient.

    Raises
    ------
    InvalidInputError
        A field of the wrong type, length or range.

    Examples
    --------
    >>> from pyfkm.secagg.msa import KeyBatchBundle
    >>> from pyfkm.secagg.msa._keybatch import batch_ct_bytes
    >>> b = KeyBatchBundle(bytes(16), 1, 1, 0, [0, 1], [1], [[bytes(32)]],
    ...                    [bytes(batch_ct_bytes(1))])
    >>> KeyBatchBundle.from_bytes(b.to_bytes()) == b
    True
    """

    run_id: bytes
    round: int
    count: int
    recipient: int
    sharers: tuple
    owners: tuple
    round_keys: tuple
    ciphertexts: tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _round_field(self.round))
        count = _check_count(self.count)
        object.__setattr__(self, "count", count)
        object.__setattr__(self, "recipient", _check_id(self.recipient, "recipient"))
        object.__setattr__(self, "sharers", _ids_tuple(self.sharers, "sharer"))
        owners = _ids_tuple(self.owners, "owner", allow_empty=True)
        keys = tuple(_keys_field(k, count, "round_keys") for k in self.round_keys)
        n = batch_ct_bytes(count)
        cts = tuple(_bytes_field(c, n, "ciphertext") for c in self.ciphertexts)
        if not len(owners) == len(keys) == len(cts):
            raise InvalidInputError("round keys and a ciphertext per owner")
        object.__setattr__(self, "owners", owners)
        object.__setattr__(self, "round_keys", keys)
        object.__setattr__(self, "ciphertexts", cts)

    def to_bytes(self) -> bytes:
        """The wire form of the bundle.

        Returns
        -------
        bytes
        """
        body = b"".join(struct.pack("<I", o) + b"".join(k) + c
                        for o, k, c in zip(self.owners, self.round_keys, self.ciphertexts))
        return (_pack_header(_KEY_BATCH_BUNDLE, self.run_id, self.round, SERVER_ID, 0)
                + struct.pack(f"<III{len(self.sharers)}I", self.count, self.recipient,
                              len(self.sharers), *self.sharers)
                + struct.pack("<I", len(self.owners)) + body)

    @classmethod
    def from_bytes(cls, data: bytes) -> KeyBatchBundle:
        """Parse a key batch bundle from its wire form.

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            One whole message.

        Returns
        -------
        KeyBatchBundle

        Raises
        ------
        MessageFormatError
            Not a key batch bundle of this format version, a wrong length, not
            from the server, or fields the constructor would refuse.
        """
        data, run_id, round_, sender, modulus = _unpack_header(data, _KEY_BATCH_BUNDLE)
        off = HEADER_BYTES
        if len(data) < off + 8 or sender != SERVER_ID or modulus != 0:
            raise MessageFormatError("truncated key batch bundle, or not from the server")
        count, recipient = struct.unpack_from("<II", data, off)
        if not 1 <= count <= MAX_BATCH:
            raise MessageFormatError(f"key batch bundle of {count} rounds")
        sharers, off = _unpack_ids(data, off + 8, "key batch bundle")
        if len(data) < off + 4:
            raise MessageFormatError("truncated key batch bundle")
        (n,) = struct.unpack_from("<I", data, off)
        k = 32 * count
        owners, blobs = _unpack_id_blobs(data, off + 4, n, k + batch_ct_bytes(count), 0)
        keys = tuple(tuple(b[p:p + 32] for p in range(0, k, 32)) for b in blobs)
        return _parsed(cls, "key batch bundle", run_id=run_id, round=round_, count=count,
                       recipient=recipient, sharers=tuple(sharers), owners=owners,
                       round_keys=keys, ciphertexts=tuple(b[k:] for b in blobs))
