"""Wire format of SCMA messages.

Every message is a frozen dataclass with ``to_bytes()`` and
``from_bytes(data)``.  Layout (little-endian throughout, no pickle)::

    header (44 bytes)
        magic     4s   b"PFKM"
        version   u8   3
        type      u8   1 key, 2 roster, 3 round, 4 syndromes, 5 shares,
                       6 share bundle, 7 input request, 8 unmask request,
                       9 unmask answer
        reserved  u16  0
        run_id    16s
        round     u64
        sender    u32  client id; 0xFFFFFFFF for the server
        modulus   u64  the field prime (0 where unused)
    body (per type, see each class)

``from_bytes`` checks the magic, version, type, every length against the
bytes actually present (no trailing bytes), ranges (field elements below the
modulus, ids below 2**32 - 1) and raises :class:`MessageFormatError` for
anything else; it never allocates more than the input's size suggests.
"""
import operator
import struct
import sys
from dataclasses import dataclass, field

import numpy as np

from ..exceptions import InvalidInputError, MessageFormatError, ProtocolError, PyfkmError
from ._params import MODES, ScmaParams

MAGIC = b"PFKM"
VERSION = 3   # 2: round messages carry delta_nonzeros and base_round
#               3: dropout-tolerant rounds (shares, unmasking), authenticated
#                  client messages, rosters with threshold, degree, server key
SERVER_ID = 0xFFFFFFFF
_HEADER = struct.Struct("<4sBBH16sQIQ")
HEADER_BYTES = _HEADER.size
_KEY, _ROSTER, _ROUND, _SYNDROMES = 1, 2, 3, 4
_SHARES, _BUNDLE, _INPUTS, _UNMASK_REQ, _UNMASK = 5, 6, 7, 8, 9
TAG_BYTES = 16
_PARAMS = struct.Struct("<IQIIB32s")
_SYNDROME_HEAD = struct.Struct(_HEADER.format + "I")    # header + word count
_LITTLE = sys.byteorder == "little"


def _pack_header(kind, run_id, round_, sender, modulus):
    return _HEADER.pack(MAGIC, VERSION, kind, 0, run_id, round_, sender, modulus)


def _unpack_header(data, kind):
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise MessageFormatError(f"expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) < HEADER_BYTES:
        raise MessageFormatError(f"truncated message: {len(data)} bytes, header needs {HEADER_BYTES}")
    magic, version, typ, reserved, run_id, round_, sender, modulus = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise MessageFormatError("not a pyfkm message (bad magic)")
    if version != VERSION:
        raise MessageFormatError(f"unsupported message version {version} (this is {VERSION})")
    if typ != kind:
        raise MessageFormatError(f"message type {typ} where {kind} was expected")
    if reserved != 0:
        raise MessageFormatError("reserved header bits are set")
    return data, run_id, round_, sender, modulus


def _check_id(v, name):
    if not isinstance(v, (int, np.integer)) or not 0 <= int(v) < SERVER_ID:
        raise InvalidInputError(f"{name} must be an int in [0, 2**32 - 1), got {v!r}")
    return int(v)


def _check_run_id(run_id):
    if not isinstance(run_id, (bytes, bytearray)) or len(run_id) != 16:
        raise InvalidInputError("run_id must be 16 bytes")
    return bytes(run_id)


def _built(cls, **fields):
    """An instance of the frozen dataclass ``cls`` with ``fields`` set as
    given, without ``__post_init__``: for callers that checked every field
    (parsers, and roles building messages from their own state)."""
    obj = object.__new__(cls)
    obj.__dict__.update(fields)        # frozen: no __setattr__; no slots
    return obj


def _expect_len(data, n):
    if len(data) != n:
        what = "truncated" if len(data) < n else "oversized"
        raise MessageFormatError(f"{what} message: {len(data)} bytes, expected {n}")


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


_EXTRAS = struct.Struct("<II32s")


def _extras_bytes(r):
    return _EXTRAS.pack(r.threshold, r.degree, r.server_key)


def _check_roster_extras(r):
    """threshold in [1, clients], degree 0 or even, 32-byte server key."""
    n = len(r.client_ids)
    for name in ("threshold", "degree"):
        v = getattr(r, name)
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 0 <= int(v) < SERVER_ID:
            raise InvalidInputError(f"{name} must be an int in [0, 2**32 - 1), got {v!r}")
        object.__setattr__(r, name, int(v))
    if not 1 <= r.threshold <= max(n, 1):
        raise InvalidInputError(f"threshold {r.threshold} must lie in [1, {n} clients]")
    if r.degree % 2:
        raise InvalidInputError(f"degree {r.degree} must be even (0: the complete graph)")
    if not isinstance(r.server_key, (bytes, bytearray)) or len(r.server_key) != 32:
        raise InvalidInputError("server_key must be 32 bytes")
    object.__setattr__(r, "server_key", bytes(r.server_key))


def params_bytes(P):
    """The wire form of parameters (bound into the roster digest)."""
    return _params_bytes(P)


def _params_bytes(P):
    return _PARAMS.pack(P.n_dims, P.bins_per_dim, P.max_nonzeros, P.max_client_nonzeros,
                        MODES.index(P.mode), P.hash_seed)


@dataclass(frozen=True)
class RosterMessage:
    """Server -> clients: the run's public parameters and every client's key.

    Body: parameters (n_dims u32, bins_per_dim u64, max_nonzeros u32,
    max_client_nonzeros u32, mode u8, hash_seed 32s), threshold u32, degree
    u32 (0: complete graph), the server's channel key 32s, count u32, then
    per client id u32 and key 32s (ids strictly increasing).
    """

    run_id: bytes
    params: ScmaParams
    client_ids: tuple
    public_keys: tuple
    threshold: int = 1
    degree: int = 0
    server_key: bytes = bytes(32)

    def __post_init__(self):
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        if not isinstance(self.params, ScmaParams) or self.params.run_id != self.run_id:
            raise InvalidInputError("params must be ScmaParams of the same run")
        _check_roster_extras(self)
        ids = tuple(_check_id(i, "client id") for i in self.client_ids)
        keys = tuple(bytes(k) for k in self.public_keys)
        if len(ids) != len(keys) or any(len(k) != 32 for k in keys):
            raise InvalidInputError("one 32-byte key per client id")
        if any(a >= b for a, b in zip(ids, ids[1:])):
            raise InvalidInputError("client ids must be strictly increasing")
        object.__setattr__(self, "client_ids", ids)
        object.__setattr__(self, "public_keys", keys)

    def to_bytes(self):
        P = self.params
        body = [_params_bytes(P), _extras_bytes(self), struct.pack("<I", len(self.client_ids))]
        for i, k in zip(self.client_ids, self.public_keys):
            body.append(struct.pack("<I", i) + k)
        return _pack_header(_ROSTER, self.run_id, 0, SERVER_ID, P.modulus) + b"".join(body)

    @classmethod
    def from_bytes(cls, data):
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
        if len(data) < HEADER_BYTES + 4:
            raise MessageFormatError("truncated round message")
        (n,) = struct.unpack_from("<I", data, HEADER_BYTES)
        _expect_len(data, HEADER_BYTES + 4 + 4 * n + 12)
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


@dataclass(frozen=True, eq=False)
class SyndromeMessage:
    """Client -> server: the masked syndromes of one round (body: count u32,
    then that many u64 field elements, each below the modulus; then the
    16-byte tag authenticating every byte before it to the server)."""

    run_id: bytes
    round: int
    sender: int
    modulus: int
    payload: np.ndarray = field(repr=False)
    tag: bytes = field(default=bytes(TAG_BYTES), repr=False)

    def __post_init__(self):
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

    def __eq__(self, other):
        if not isinstance(other, SyndromeMessage):
            return NotImplemented
        return (self.run_id, self.round, self.sender, self.modulus, self.tag) == \
            (other.run_id, other.round, other.sender, other.modulus, other.tag) and \
            np.array_equal(self.payload, other.payload)

    __hash__ = None

    @classmethod
    def _trusted(cls, run_id, round_, sender, modulus, payload, tag=bytes(TAG_BYTES)):
        """A message built by a client from its own validated state (run id,
        round and id already checked; payload uint64, contiguous, reduced):
        skips the checks that guard untrusted input."""
        payload.setflags(write=False)
        return _built(cls, run_id=run_id, round=int(round_), sender=int(sender),
                      modulus=int(modulus), payload=payload, tag=tag)

    def signed_bytes(self):
        """The bytes the tag authenticates (everything before it)."""
        payload = self.payload
        return (_SYNDROME_HEAD.pack(MAGIC, VERSION, _SYNDROMES, 0, self.run_id, self.round,
                                    self.sender, self.modulus, payload.size)
                + (payload.tobytes() if _LITTLE else payload.astype("<u8").tobytes()))

    def to_bytes(self):
        return self.signed_bytes() + self.tag

    @classmethod
    def from_bytes(cls, data):
        data, run_id, round_, sender, modulus = _unpack_header(data, _SYNDROMES)
        if len(data) < HEADER_BYTES + 4:
            raise MessageFormatError("truncated syndrome message")
        (n,) = struct.unpack_from("<I", data, HEADER_BYTES)
        _expect_len(data, HEADER_BYTES + 4 + 8 * n + TAG_BYTES)
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
    def size(n_words):
        """Bytes of a message carrying ``n_words`` field elements."""
        return HEADER_BYTES + 4 + 8 * n_words + TAG_BYTES


def _check_tag(msg):
    if not isinstance(msg.tag, (bytes, bytearray)) or len(msg.tag) != TAG_BYTES:
        raise InvalidInputError(f"tag must be {TAG_BYTES} bytes")
    object.__setattr__(msg, "tag", bytes(msg.tag))


# a syndrome message: header (sender at _SENDER_AT), then the word count
# and the payload; every other header field is the same for one round
_SENDER_AT = _HEADER.size - 12
assert struct.calcsize("<4sBBH16sQ") == _SENDER_AT


def parse_syndromes(datas, run_id, round_, modulus, n_words):
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


# ---------------------------------------------------------------- dropout-tolerant rounds
#
# The messages of the masking protocol (:mod:`._masking`), shared by SCMA and
# MSA.  Client messages end in a 16-byte tag the server checks with the key
# it shares with the sender; every list is length-prefixed and checked
# against the bytes present before anything is allocated.

def _ids_tuple(v, name, allow_empty=False):
    if type(v) is tuple and not set(map(type, v)) - {int}:
        ids = v                          # the usual case (parsers, roles): plain ints
        if ids and (ids[0] < 0 or ids[-1] >= SERVER_ID):
            raise InvalidInputError(f"{name}s must lie in [0, 2**32 - 1)")
    else:
        try:
            ids = tuple(_check_id(i, name) for i in v)
        except TypeError:
            raise InvalidInputError(f"{name}s must be a sequence of ints") from None
    if (not ids and not allow_empty) or not all(map(operator.lt, ids, ids[1:])):
        raise InvalidInputError(f"{name}s must be non-empty and strictly increasing")
    return ids


def _bytes_field(v, n, name):
    if not isinstance(v, (bytes, bytearray)) or len(v) != n:
        raise InvalidInputError(f"{name} must be {n} bytes")
    return bytes(v)


def _round_field(r):
    if not isinstance(r, (int, np.integer)) or isinstance(r, bool) or not 1 <= int(r) < 1 << 64:
        raise InvalidInputError(f"round must be an int in [1, 2**64), got {r!r}")
    return int(r)


def _unpack_ids(data, off, what):
    if len(data) < off + 4:
        raise MessageFormatError(f"truncated {what}")
    (n,) = struct.unpack_from("<I", data, off)
    off += 4
    if len(data) < off + 4 * n:
        raise MessageFormatError(f"truncated {what}: {n} ids announced")
    ids = struct.unpack_from(f"<{n}I", data, off)
    return ids, off + 4 * n


def _parsed(cls, what, **fields):
    try:
        return cls(**fields)
    except InvalidInputError as e:
        raise MessageFormatError(f"invalid {what}: {e}") from None


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
