"""Message framing shared by SCMA and MSA: the header and the field checks.

Every message is a frozen dataclass with ``to_bytes()`` and
``from_bytes(data)``.  Layout (little-endian throughout, no pickle)::

    header (44 bytes)
        magic     4s   b"PFKM"
        version   u8   3
        type      u8   1 key, 2 roster, 3 round, 4 syndromes, 5 shares,
                       6 share bundle, 7 input request, 8 unmask request,
                       9 unmask answer; MSA: 11 roster, 12 group key,
                       13 masked vector, 14 aggregate, 15 key batch,
                       16 key batch bundle
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

The messages of the masking protocol shared by both live in
:mod:`._messages`; each protocol's own in its subpackage (:mod:`.scma`,
:mod:`.msa`).  The type codes of all of them are here, so no two collide.
"""
import operator
import struct

import numpy as np

from ..exceptions import InvalidInputError, MessageFormatError

MAGIC = b"PFKM"
VERSION = 3   # 2: round messages carry delta_nonzeros and base_round
#               3: dropout-tolerant rounds (shares, unmasking), authenticated
#                  client messages, rosters with threshold, degree, server key
SERVER_ID = 0xFFFFFFFF
_HEADER = struct.Struct("<4sBBH16sQIQ")
HEADER_BYTES = _HEADER.size
_KEY, _ROSTER, _ROUND, _SYNDROMES = 1, 2, 3, 4
_SHARES, _BUNDLE, _INPUTS, _UNMASK_REQ, _UNMASK = 5, 6, 7, 8, 9
_MSA_ROSTER, _GROUP_KEY, _MASKED, _AGGREGATE = 11, 12, 13, 14
_KEY_BATCH, _KEY_BATCH_BUNDLE = 15, 16
TAG_BYTES = 16


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


def _check_roster_clients(r, at_least_one=False):
    """Client ids (u32, strictly increasing) with one 32-byte key each, at
    least one client when ``at_least_one``; normalized in place."""
    ids = tuple(_check_id(i, "client id") for i in r.client_ids)
    keys = tuple(bytes(k) for k in r.public_keys)
    if (at_least_one and not ids) or len(ids) != len(keys) or any(len(k) != 32 for k in keys):
        raise InvalidInputError("one 32-byte key per client id"
                                + (", at least one client" if at_least_one else ""))
    if any(a >= b for a, b in zip(ids, ids[1:])):
        raise InvalidInputError("client ids must be strictly increasing")
    object.__setattr__(r, "client_ids", ids)
    object.__setattr__(r, "public_keys", keys)


def _counted(data, what, item_bytes, trailer=0):
    """The item count n (u32) that opens a message's body, after checking
    that the body holds exactly n items of ``item_bytes`` and ``trailer``
    bytes (MessageFormatError naming ``what`` otherwise)."""
    if len(data) < HEADER_BYTES + 4:
        raise MessageFormatError(f"truncated {what}")
    (n,) = struct.unpack_from("<I", data, HEADER_BYTES)
    _expect_len(data, HEADER_BYTES + 4 + item_bytes * n + trailer)
    return n


def _check_tag(msg):
    if not isinstance(msg.tag, (bytes, bytearray)) or len(msg.tag) != TAG_BYTES:
        raise InvalidInputError(f"tag must be {TAG_BYTES} bytes")
    object.__setattr__(msg, "tag", bytes(msg.tag))


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
