"""Masked secure aggregation (MSA) in the ring Z_2^64, with distributed noise.

The aggregation step of FastLloyd (Diaa, Humphries and Kerschbaum): each
client encodes a real vector in fixed point (``round(x * 2**scale_bits)``,
two's complement in Z_2^64), adds its share of the differential-privacy
noise and its masks and sends it; the server removes what the masking
protocol lets it remove and broadcasts; clients remove the output masks and
decode.  The server sees neither the clients' vectors nor the (noisy) sum.

Masks.  The masking protocol of :mod:`._masking` (Bonawitz et al. 2017 with
the SecAgg+ graph): per round a fresh self mask and pair masks with the
neighbours, keyed by fresh OS keys, ChaCha20 keystreams read as 64-bit words
(uniform on Z_2^64; tags ``b"MSA\\0"`` for pair streams, ``b"MSAS"`` for self
streams), with dropout recovery and a threshold.  Output masks: the lowest
client id (the *leader*) draws a 32-byte group key and sends it to every
other client encrypted under their channel's group-key AEAD key (relayed by
the server); the ``OUTPUT_BEARERS`` lowest ids each add ``PRG(H(group key,
id), round)`` (tag ``b"MSAO"``), every client subtracts the surviving
bearers' output masks from the broadcast (a constant number of streams),
and clients refuse to unmask a round with no surviving bearer, so the
server only ever holds uniformly masked words.

Fixed point and overflow.  Each client's encoded entries and its noise share
must each have magnitude at most ``2**62 / (2 n_clients)``
(:class:`~pyfkm.exceptions.CapacityError` otherwise), and the server's
baseline noise at most ``2**62``; so the noisy sum, read as a signed 64-bit
integer, never wraps.

Noise.  Private fits use *distributed* discrete Gaussian noise: each client
adds its share (:func:`client_noise`, scale ``sigma / sqrt(threshold)``)
from a ChaCha20 stream under a fresh OS key; no party holds the noise and
neither the server nor fewer than ``threshold`` clients can remove it (the
guarantee and its accounting are in ``docs/threat_model.md``).  The
server's own noise modes (``noise="gaussian"`` or ``"laplace"`` of
:class:`MsaServer`) serve the trusted-curator baselines only.
"""
import dataclasses
import hashlib
import os
import struct
from dataclasses import dataclass, field

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from ..exceptions import CapacityError, InvalidInputError, MessageFormatError, ProtocolError
from ._masking import MaskingClient, MaskingServer, data_digest
from ._steps import RoundSteps
from ._messages import (HEADER_BYTES, SERVER_ID, TAG_BYTES, InputRequest, KeyMessage,
                        RoundMessage, ShareBundle, ShareMessage, UnmaskMessage, UnmaskRequest,
                        _check_id, _check_roster_extras, _check_run_id, _expect_len,
                        _pack_header, _unpack_header, check_key_message)

__all__ = [
    "MSA_TAG",
    "OUTPUT_TAG",
    "DEFAULT_SCALE_BITS",
    "encode_fixed",
    "decode_fixed",
    "encoding_limit",
    "mask_stream",
    "MsaRosterMessage",
    "GroupKeyMessage",
    "MaskedVectorMessage",
    "AggregateMessage",
    "MsaClient",
    "MsaServer",
    "NOISE_MODES",
    "check_discrete_sigma",
]

MSA_TAG = b"MSA\x00"
OUTPUT_TAG = b"MSAO"
SELF_TAG = b"MSAS"
MAX_WORDS = 1 << 23           # 64 MiB messages: clients refuse longer vectors
SERVER_NOISE_MODES = ("gaussian", "laplace", None)
MIN_SHARE_SCALE = 2.0         # smallest per-client noise scale, fixed-point units
OUTPUT_BEARERS = 8            # clients (lowest ids) that add an output mask
DEFAULT_SCALE_BITS = 16
NOISE_MODES = ("discrete_gaussian", "gaussian", "laplace", None)
_RING_HALF = 1 << 62          # bound on |each client's share| * n; |noise| < it
_MSA_ROSTER, _GROUP_KEY, _MASKED, _AGGREGATE = 11, 12, 13, 14


# --------------------------------------------------------------- fixed point

def encoding_limit(n_clients):
    """Largest magnitude of an encoded entry of one of ``n_clients`` clients."""
    return _RING_HALF // max(int(n_clients), 1)


def encode_fixed(x, scale_bits=DEFAULT_SCALE_BITS, limit=_RING_HALF):
    """``round(x * 2**scale_bits)`` as two's complement words of Z_2^64.

    Raises :class:`InvalidInputError` for NaN and :class:`CapacityError`
    when an entry's magnitude exceeds ``limit`` (default ``2**62``) after
    scaling, instead of wrapping.

    Examples
    --------
    >>> w = encode_fixed([1.5, -0.25])
    >>> w.dtype.name, decode_fixed(w).tolist()
    ('uint64', [1.5, -0.25])
    """
    x = np.asarray(x, dtype=np.float64)
    if np.isnan(x).any():
        raise InvalidInputError("cannot encode NaN in fixed point")
    v = np.rint(np.ldexp(x, int(scale_bits)))
    if v.size and not float(np.abs(v).max()) <= limit:
        raise CapacityError(
            f"fixed-point overflow: |x| * 2**{scale_bits} reaches {float(np.abs(v).max()):.4g}, "
            f"above the capacity {limit} of one share (2**62 / n_clients); scale the data "
            "down or lower scale_bits")
    return v.astype(np.int64).view(np.uint64)


def decode_fixed(words, scale_bits=DEFAULT_SCALE_BITS):
    """Signed reading of Z_2^64 words divided by ``2**scale_bits`` (float64)."""
    w = np.ascontiguousarray(words, dtype=np.uint64)
    return np.ldexp(w.view(np.int64).astype(np.float64), -int(scale_bits))


DISCRETE_SIGMA_RANGE = (2.0 ** -10, 2.0 ** 30)   # of pyfkm.privacy's discrete sampler


def check_discrete_sigma(scales, scale_bits=DEFAULT_SCALE_BITS):
    """Raise :class:`CapacityError` unless every positive real standard
    deviation in ``scales``, in fixed-point units (``* 2**scale_bits``), is
    within the discrete Gaussian sampler's range ``[2**-10, 2**30]``."""
    lo, hi = DISCRETE_SIGMA_RANGE
    for s in scales:
        s = float(s)
        if s > 0 and not lo <= np.ldexp(s, int(scale_bits)) <= hi:
            raise CapacityError(
                f"noise sigma {s:.6g} is {np.ldexp(s, int(scale_bits)):.4g} in fixed-point "
                f"units, outside the discrete Gaussian sampler's range [2**-10, 2**30]; "
                "use a larger epsilon, noise='gaussian', or smaller scale_bits")


def mask_stream(key, round_, tag, n):
    """``n`` words uniform on Z_2^64: the ChaCha20 keystream of ``key`` (32
    bytes) with nonce ``round (u64 LE) || tag (4 bytes)`` and block counter 0,
    read as little-endian 64-bit words.

    Uses the C ChaCha20 of :mod:`pyfkm._core._noise` when it is built (about
    5x faster on short vectors than setting up a ``cryptography`` cipher),
    else ``cryptography``; both give the same keystream (RFC 8439).
    """
    nonce = struct.pack("<Q", int(round_)) + bytes(tag)
    n = int(n)
    if _ChaChaStream is not None:
        return _ChaChaStream(np.frombuffer(bytes(key), np.uint8),
                             np.frombuffer(nonce, np.uint8), 0).words(n)
    enc = Cipher(algorithms.ChaCha20(bytes(key), b"\0\0\0\0" + nonce), mode=None).encryptor()
    return np.frombuffer(enc.update(bytes(8 * n)), dtype="<u8").astype(np.uint64)


try:  # the C keystream of the noise module (same stream as cryptography's)
    from ..core.kernels import noise as _noise
    _ChaChaStream = _noise.ChaChaStream
except ImportError:  # pragma: no cover - module not built
    _ChaChaStream = None


# --------------------------------------------------------------- messages

def _check_words(payload, name="payload"):
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


def _check_round(r):
    if not isinstance(r, (int, np.integer)) or isinstance(r, bool) or not 1 <= int(r) < 1 << 64:
        raise InvalidInputError(f"round must be an int in [1, 2**64), got {r!r}")
    return int(r)


def _words_body(payload):
    return struct.pack("<I", payload.size) + payload.astype("<u8").tobytes()


def _parse_words(data, what, trailer=0):
    if len(data) < HEADER_BYTES + 4:
        raise MessageFormatError(f"truncated {what} message")
    (n,) = struct.unpack_from("<I", data, HEADER_BYTES)
    _expect_len(data, HEADER_BYTES + 4 + 8 * n + trailer)
    return np.frombuffer(data, dtype="<u8", count=n, offset=HEADER_BYTES + 4).astype(np.uint64)


class _WordsEq:
    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
                   for a, b in zip(self._key(), other._key()))

    __hash__ = None


@dataclass(frozen=True)
class MsaRosterMessage:
    """Server -> clients: vector length, fixed-point scale, threshold, graph
    degree, the server's channel key and every client's channel key.

    Body: n_words u32, scale_bits u8, threshold u32, degree u32, server key
    32s, count u32, then per client id u32 and X25519 key 32s (ids strictly
    increasing; the first is the leader).
    """

    run_id: bytes
    n_words: int
    scale_bits: int
    client_ids: tuple
    public_keys: tuple
    threshold: int = 1
    degree: int = 0
    server_key: bytes = bytes(32)

    def __post_init__(self):
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        nw, sb = self.n_words, self.scale_bits
        if not isinstance(nw, (int, np.integer)) or not 1 <= int(nw) <= MAX_WORDS:
            raise InvalidInputError(f"n_words must be an int in [1, {MAX_WORDS}], got {nw!r}")
        if not isinstance(sb, (int, np.integer)) or not 0 <= int(sb) <= 48:
            raise InvalidInputError(f"scale_bits must be an int in [0, 48], got {sb!r}")
        ids = tuple(_check_id(i, "client id") for i in self.client_ids)
        keys = tuple(bytes(k) for k in self.public_keys)
        if not ids or len(ids) != len(keys) or any(len(k) != 32 for k in keys):
            raise InvalidInputError("one 32-byte key per client id, at least one client")
        if any(a >= b for a, b in zip(ids, ids[1:])):
            raise InvalidInputError("client ids must be strictly increasing")
        object.__setattr__(self, "n_words", int(nw))
        object.__setattr__(self, "scale_bits", int(sb))
        object.__setattr__(self, "client_ids", ids)
        object.__setattr__(self, "public_keys", keys)
        _check_roster_extras(self)

    def params_bytes(self):
        """What the roster digest binds of the run's parameters."""
        return b"MSA" + struct.pack("<IB", self.n_words, self.scale_bits)

    def to_bytes(self):
        body = [struct.pack("<IBII", self.n_words, self.scale_bits, self.threshold,
                            self.degree), self.server_key,
                struct.pack("<I", len(self.client_ids))]
        body += [struct.pack("<I", i) + k for i, k in zip(self.client_ids, self.public_keys)]
        return _pack_header(_MSA_ROSTER, self.run_id, 0, SERVER_ID, 0) + b"".join(body)

    @classmethod
    def from_bytes(cls, data):
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
    bound to the roster digest; 16-byte AEAD tag)."""

    run_id: bytes
    sender: int
    recipient: int
    nonce: bytes
    ciphertext: bytes

    def __post_init__(self):
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

    def to_bytes(self):
        return (_pack_header(_GROUP_KEY, self.run_id, 0, self.sender, 0)
                + struct.pack("<I", self.recipient) + self.nonce + self.ciphertext)

    @classmethod
    def from_bytes(cls, data):
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
    the 16-byte tag authenticating every byte before it to the server."""

    run_id: bytes
    round: int
    sender: int
    payload: np.ndarray = field(repr=False)
    tag: bytes = field(default=bytes(TAG_BYTES), repr=False)

    def __post_init__(self):
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _check_round(self.round))
        object.__setattr__(self, "sender", _check_id(self.sender, "sender"))
        object.__setattr__(self, "payload", _check_words(self.payload))
        if not isinstance(self.tag, (bytes, bytearray)) or len(self.tag) != TAG_BYTES:
            raise InvalidInputError(f"tag must be {TAG_BYTES} bytes")
        object.__setattr__(self, "tag", bytes(self.tag))

    def _key(self):
        return (self.run_id, self.round, self.sender, self.payload, self.tag)

    def signed_bytes(self):
        return (_pack_header(_MASKED, self.run_id, self.round, self.sender, 0)
                + _words_body(self.payload))

    def to_bytes(self):
        return self.signed_bytes() + self.tag

    @classmethod
    def from_bytes(cls, data):
        data, run_id, round_, sender, modulus = _unpack_header(data, _MASKED)
        payload = _parse_words(data, "masked vector", TAG_BYTES)
        if sender == SERVER_ID or modulus != 0:
            raise MessageFormatError("masked vector from the server id or with a modulus")
        try:
            return cls(run_id, round_, sender, payload, data[-TAG_BYTES:])
        except InvalidInputError as e:
            raise MessageFormatError(f"invalid masked vector message: {e}") from None


@dataclass(frozen=True, eq=False)
class AggregateMessage(_WordsEq):
    """Server -> clients: the survivors' sum, still under the output masks
    (body: survivor count u32 and ids u32, then count u32 and u64 words)."""

    run_id: bytes
    round: int
    payload: np.ndarray = field(repr=False)
    survivors: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _check_round(self.round))
        object.__setattr__(self, "payload", _check_words(self.payload))
        ids = tuple(_check_id(i, "survivor") for i in self.survivors)
        if not ids or any(a >= b for a, b in zip(ids, ids[1:])):
            raise InvalidInputError("survivors must be non-empty and strictly increasing")
        object.__setattr__(self, "survivors", ids)

    def _key(self):
        return (self.run_id, self.round, self.payload, self.survivors)

    def to_bytes(self):
        return (_pack_header(_AGGREGATE, self.run_id, self.round, SERVER_ID, 0)
                + struct.pack("<I", len(self.survivors))
                + np.asarray(self.survivors, dtype="<u4").tobytes()
                + _words_body(self.payload))

    @classmethod
    def from_bytes(cls, data):
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
        payload = _parse_words(data[:HEADER_BYTES] + data[off:], "aggregate")
        try:
            return cls(run_id, round_, payload, ids)
        except InvalidInputError as e:
            raise MessageFormatError(f"invalid aggregate message: {e}") from None


# --------------------------------------------------------------- roles

def _group_nonce(recipient):
    return struct.pack("<4sI4s", b"MSAG", recipient, b"\0\0\0\0")


class MsaClient:
    """One client of an MSA run.

    Parameters
    ----------
    client_id : int
        In ``[0, 2**32 - 1)``, unique in the run.

    Every key comes from the operating system (a fresh channel key per run,
    a fresh round key and self seed per round, the leader's group key);
    none follows a user seed.  One round, in message order::

        share_keys(RoundMessage)          -> ShareMessage
        receive_shares(ShareBundle)
        respond(InputRequest, x, noise)   -> MaskedVectorMessage
        unmask_shares(UnmaskRequest)      -> UnmaskMessage
        unmask(AggregateMessage)          -> the decoded sum (float64)

    ``noise`` (a sequence of ``(length, sigma, tag)``) makes the client add
    its share of the round's distributed discrete Gaussian noise: variance
    ``sigma**2 / threshold`` on each entry, drawn from a ChaCha20 stream
    keyed by the OS (:class:`pyfkm.privacy.NoiseStream`).  The survivors'
    shares (at least ``threshold``) sum to variance at least ``sigma**2``,
    which no party can remove: see ``docs/threat_model.md``.

    The same refusals as :class:`ScmaClient`: rounds below the threshold,
    repeated rounds, both kinds of share of one peer.
    """

    def __init__(self, client_id):
        self.client_id = _check_id(client_id, "client_id")
        self._m = MaskingClient(self.client_id)
        self._run_id = None
        self._group_key = None
        self.n_words = self.scale_bits = self.leader = None
        self._sent = None
        self._input_round = None
        self._answered = None

    def key_message(self, run_id):
        """The :class:`KeyMessage` opening run ``run_id`` (16 bytes): a fresh
        channel key."""
        rid = _check_run_id(run_id)
        pk = self._m.open_run(rid)
        self._run_id = rid
        self._group_key = None
        self.n_words = self.scale_bits = self.leader = None
        return KeyMessage(rid, self.client_id, pk)

    def receive_roster(self, roster):
        """Check the roster and derive the channel keys; the leader (the
        lowest id) draws the group key of the output masks."""
        if not isinstance(roster, MsaRosterMessage):
            raise ProtocolError("expected an MsaRosterMessage")
        if self._run_id is None or roster.run_id != self._run_id:
            raise ProtocolError("roster of another run")
        leader = roster.client_ids[0]
        extra = roster.client_ids if leader == self.client_id else (leader,)
        self._m.join(roster.params_bytes(), roster.threshold, roster.degree,
                     roster.server_key, roster.client_ids, roster.public_keys,
                     extra_peers=extra)
        self.n_words, self.scale_bits = roster.n_words, roster.scale_bits
        self.participants = tuple(roster.client_ids)
        self.threshold = roster.threshold
        self.leader = leader
        # the output mask is carried by a few clients (the lowest ids): a
        # client removes those of the surviving bearers, O(1) streams
        self._bearers = frozenset(roster.client_ids[:OUTPUT_BEARERS])
        if self.leader == self.client_id:
            self._group_key = os.urandom(32)

    @property
    def is_leader(self):
        return self.leader == self.client_id

    def _group_ad(self, recipient):
        return b"pyfkm/msa/group-key/v3" + self._m.digest + struct.pack(
            "<II", self.leader, recipient)

    def group_key_messages(self):
        """Leader only: the group key encrypted for each other client."""
        if not self.is_leader or self._group_key is None:
            raise ProtocolError("only the leader, after the roster, sends group keys")
        out = []
        for other in self.participants:
            if other == self.client_id:
                continue
            nonce = _group_nonce(other)
            ct = self._m.channel(other).encrypt(nonce, self._group_key, self._group_ad(other))
            out.append(GroupKeyMessage(self._run_id, self.client_id, other, nonce, ct))
        return out

    def receive_group_key(self, msg):
        if not isinstance(msg, GroupKeyMessage):
            raise ProtocolError("expected a GroupKeyMessage")
        if self.leader is None or msg.run_id != self._run_id or \
                msg.recipient != self.client_id or msg.sender != self.leader or self.is_leader:
            raise ProtocolError("group key message of another run, recipient or sender")
        if self._group_key is not None:
            raise ProtocolError("the group key was already received")
        try:
            key = self._m.channel(msg.sender).decrypt(msg.nonce, msg.ciphertext,
                                                      self._group_ad(self.client_id))
        except InvalidTag:
            raise ProtocolError("group key message fails authentication") from None
        self._group_key = key

    def _check_ready(self):
        if self.n_words is None:
            raise ProtocolError("receive the roster first")
        if self._group_key is None:
            raise ProtocolError("the group key has not been received")

    def share_keys(self, round_msg):
        """Step 1: a fresh round key and self seed, shared among this
        client's neighbours (:class:`ShareMessage`)."""
        if not isinstance(round_msg, RoundMessage):
            raise ProtocolError("expected a RoundMessage")
        self._check_ready()
        if round_msg.run_id != self._run_id:
            raise ProtocolError("round of another run")
        pk, commit, items = self._m.share(round_msg.round, round_msg.participants)
        self._input_round = self._sent = self._answered = None
        msg = ShareMessage(self._run_id, round_msg.round, self.client_id, pk, commit,
                           tuple(h for h, _ in items), tuple(c for _, c in items))
        return dataclasses.replace(msg, tag=self._m.tag(msg.signed_bytes()))

    def receive_shares(self, bundle):
        """Step 2: neighbours' shares and round keys; derives the pair keys."""
        if not isinstance(bundle, ShareBundle):
            raise ProtocolError("expected a ShareBundle")
        if bundle.run_id != self._run_id or bundle.recipient != self.client_id:
            raise ProtocolError("share bundle of another run or for another client")
        self._m.receive_shares(bundle.round, bundle.sharers,
                               zip(bundle.owners, bundle.round_keys, bundle.ciphertexts))
        self._input_round = bundle.round

    def mask(self, round_):
        """This client's mask of its open round: self stream, signed pair
        streams and its output mask."""
        if self._input_round is None or int(round_) != self._input_round:
            raise ProtocolError(f"round {round_}: shares not received")
        b, keys = self._m.mask_keys(round_)
        acc = mask_stream(b, round_, SELF_TAG, self.n_words).copy()
        for other, key in keys.items():
            s = mask_stream(key, round_, MSA_TAG, self.n_words)
            if self.client_id < other:
                acc += s
            else:
                acc -= s
        if self.client_id in self._bearers:
            acc += self._output_mask(round_, self.client_id)
        return acc

    def _output_mask(self, round_, client_id):
        key = hashlib.sha256(b"pyfkm/msa/output/v3" + self._group_key
                             + struct.pack("<I", client_id)).digest()
        return mask_stream(key, round_, OUTPUT_TAG, self.n_words)

    def respond(self, req, x, noise=()):
        """Step 3: encode ``x`` (``n_words`` reals), add this client's noise
        share (``noise``: ``(length, sigma, tag)`` segments covering the
        vector, see the class notes) and mask it.

        Raises :class:`CapacityError` (before anything changes) when an
        entry does not fit in one share of the ring.
        """
        if not isinstance(req, InputRequest):
            raise ProtocolError("expected an InputRequest")
        self._check_ready()
        if req.run_id != self._run_id or req.delta_nonzeros:
            raise ProtocolError("input request of another run, or a difference round")
        if self._input_round is None or req.round != self._input_round:
            raise ProtocolError(f"round {req.round}: this client has not received its shares")
        x = np.asarray(x, dtype=np.float64).ravel()
        if x.size != self.n_words:
            raise InvalidInputError(f"vector has {x.size} entries, the run uses {self.n_words}")
        limit = encoding_limit(2 * len(self.participants))
        enc = encode_fixed(x, self.scale_bits, limit)
        digest = data_digest(self._m.data_key, enc.tobytes())
        noise = tuple(noise)
        if noise:
            enc = enc + client_noise(noise, self.n_words, self.threshold, self.scale_bits,
                                     req.round, limit)
        mask = self.mask(req.round)
        self._m.mark_sent(req.round)
        enc += mask
        self._sent = (req.round, digest)
        self._input_round = None
        msg = MaskedVectorMessage(self._run_id, req.round, self.client_id, enc)
        return dataclasses.replace(msg, tag=self._m.tag(msg.signed_bytes()
                                                        + self._m.view(req.round)))

    def unmask_shares(self, req):
        """Step 4: the shares this client reveals for the round's survivors."""
        if not isinstance(req, UnmaskRequest):
            raise ProtocolError("expected an UnmaskRequest")
        if req.run_id != self._run_id or self._sent is None or self._sent[0] != req.round:
            raise ProtocolError(f"unmask request for round {req.round}, not this client's "
                                "last input")
        # the same vector summed over two survivor sets would reveal the
        # difference: refused (a FastLloyd iteration that repeats its stats
        # over the same clients is fine)
        if not self._bearers.intersection(req.survivors):
            raise ProtocolError(f"round {req.round}: no client carrying the output mask "
                                "survived; the sum would be in the clear: refused")
        items = self._m.unmask(req.round, req.survivors, self._sent[1])
        self._sent = None
        self._answered = (req.round, tuple(req.survivors))
        msg = UnmaskMessage(self._run_id, req.round, self.client_id,
                            tuple(o for o, _, _ in items), tuple(k for _, k, _ in items),
                            tuple(s for _, _, s in items))
        return dataclasses.replace(msg, tag=self._m.tag(msg.signed_bytes()))

    def unmask(self, agg):
        """Remove the survivors' output masks from the broadcast and decode
        (float64).  Every client of the run may decode it."""
        if not isinstance(agg, AggregateMessage):
            raise ProtocolError("expected an AggregateMessage")
        self._check_ready()
        if agg.run_id != self._run_id:
            raise ProtocolError("aggregate of another run")
        if agg.payload.size != self.n_words:
            raise ProtocolError(f"aggregate of {agg.payload.size} words, expected {self.n_words}")
        if len(agg.survivors) < self.threshold or \
                not set(agg.survivors) <= set(self.participants):
            raise ProtocolError("aggregate over fewer than threshold clients or unknown ones")
        # the broadcast carries no tag: it must be the round this client
        # took part in, over the survivors it revealed shares for (a client
        # that dropped before the unmask request can only check the round)
        ans = self._answered
        if ans is not None and (agg.round, tuple(agg.survivors)) != ans:
            raise ProtocolError("aggregate of another round or survivor set than this client's")
        if ans is None and agg.round != self._m._last:
            raise ProtocolError("aggregate of another round than this client's last")
        w = agg.payload.copy()
        for u in self._bearers.intersection(agg.survivors):
            w -= self._output_mask(agg.round, u)
        return decode_fixed(w, self.scale_bits)


def client_noise(segments, n_words, threshold, scale_bits, round_, limit):
    """One client's share of distributed discrete Gaussian noise: for each
    ``(length, sigma, tag)`` segment, ``length`` samples of the discrete
    Gaussian of scale ``sigma * 2**scale_bits / sqrt(threshold)`` (fixed-point
    units), from a ChaCha20 stream under a fresh OS key.  As int64 words of
    Z_2^64; raises :class:`CapacityError` if a sample reaches ``limit``."""
    from ..core.noise import NoiseStream
    segments = tuple(segments)
    if sum(int(sg[0]) for sg in segments) != n_words:
        raise InvalidInputError("noise segments must cover the vector exactly")
    tags = [bytes(sg[2]) for sg in segments]
    if len(set(tags)) != len(tags) or any(not 1 <= len(t) <= 4 for t in tags):
        raise InvalidInputError("segment tags must be distinct, 1 to 4 bytes")
    scales = []
    for sg in segments:
        sigma = float(sg[1])
        if not (sigma >= 0 and np.isfinite(sigma)):
            raise InvalidInputError("noise scales must be finite and >= 0")
        scales.append(sigma / np.sqrt(threshold))
    check_discrete_sigma(scales, scale_bits)
    for sc in scales:
        # the distributed accounting (a sum of discrete Gaussians as one
        # Gaussian, Kairouz, Liu and Steinke 2021) needs shares of at least
        # 2 grid units: its error term is then below 1e-15 per client
        if 0 < sc and np.ldexp(sc, scale_bits) < MIN_SHARE_SCALE:
            raise CapacityError(
                f"a client's noise share of scale {np.ldexp(sc, scale_bits):.3g} fixed-point "
                f"units is below {MIN_SHARE_SCALE}: the distributed noise accounting would not "
                "hold; use a smaller epsilon or a larger scale_bits")
    key = os.urandom(32)
    parts = []
    for (length, _, tag), sc in zip(segments, scales):
        if sc == 0:
            parts.append(np.zeros(int(length), dtype=np.int64))
            continue
        ns = NoiseStream.secure(key, round_, bytes(tag))
        v = np.asarray(ns.discrete_gaussian(int(length), float(np.ldexp(sc, scale_bits))),
                       dtype=np.int64)
        if v.size and int(np.abs(v).max()) >= limit:
            raise CapacityError("a noise sample reaches the capacity of one share")
        parts.append(v)
    return np.concatenate(parts).view(np.uint64)


class MsaServer(RoundSteps):
    """The MSA server: relays keys and shares, sums masked vectors.

    Parameters
    ----------
    run_id : bytes (16)
    n_words : int
        Length of every vector.
    scale_bits : int
        Fixed-point scale ``2**scale_bits`` (default 16).
    threshold : int, optional
        Fewest clients of any round (default a strict majority).
    degree : int, default=0
        Neighbours per client (even; 0 is the complete graph).
    noise : {None, "gaussian", "laplace"}, default=None
        Noise the *server* adds to the sum: only for the baselines that
        model a trusted curator (GLloyd, SuLloyd).  Private fits use the
        clients' distributed noise instead (:meth:`MsaClient.respond`),
        which the server cannot remove.
    noise_key : bytes (32), optional
        Key of the server's noise streams (default: OS randomness).

    It never holds a client's vector or the aggregate in the clear: only
    masked words.  A rejected message or call leaves the server unchanged.
    """

    def __init__(self, run_id, n_words, *, scale_bits=DEFAULT_SCALE_BITS, threshold=None,
                 degree=0, noise=None, noise_key=None):
        self.run_id = _check_run_id(run_id)
        if noise not in SERVER_NOISE_MODES:
            raise InvalidInputError(f"noise must be one of {SERVER_NOISE_MODES}, got {noise!r}")
        if noise_key is None and noise is not None:
            from ..core.noise import new_noise_key
            noise_key = new_noise_key()
        if noise_key is not None and (not isinstance(noise_key, (bytes, bytearray))
                                      or len(noise_key) != 32):
            raise InvalidInputError("noise_key must be 32 bytes")
        if not isinstance(degree, (int, np.integer)) or isinstance(degree, bool) \
                or degree < 0 or degree % 2:
            raise InvalidInputError(f"degree must be 0 or an even int >= 2, got {degree!r}")
        self._noise_key = None if noise_key is None else bytes(noise_key)
        self.noise = noise
        self._m = MaskingServer()
        self._keys = {}
        self._roster = None
        self._pending_keys = {}
        self._round = 0
        self._open = None
        self._n_words, self._scale_bits = n_words, scale_bits
        if threshold is not None and (isinstance(threshold, bool)
                                      or not isinstance(threshold, (int, np.integer))
                                      or threshold < 1):
            raise InvalidInputError(f"threshold must be None or an int >= 1, got {threshold!r}")
        self._threshold, self._degree = threshold, int(degree)
        MsaRosterMessage(self.run_id, n_words, scale_bits, (0,), (bytes(32),))  # validate

    def receive_key(self, msg):
        check_key_message(msg, self.run_id, self._keys, self._roster is not None)
        self._keys[msg.sender] = msg.public_key

    def roster(self):
        """Close key collection; the roster every client receives."""
        if not self._keys:
            raise ProtocolError("no client keys received")
        if self._roster is None:
            ids, keys, t, deg = self._roster_fields()
            r = MsaRosterMessage(self.run_id, self._n_words, self._scale_bits, ids, keys,
                                 t, deg, self._m.server_key)
            self._m.close_roster(self.run_id, r.params_bytes(), t, deg, ids, keys)
            self._roster = r
        return self._roster

    def relay_group_key(self, msg):
        """Accept the leader's encrypted group key for one client."""
        if not isinstance(msg, GroupKeyMessage):
            raise ProtocolError("expected a GroupKeyMessage")
        if self._roster is None or msg.run_id != self.run_id:
            raise ProtocolError("group key before the roster or of another run")
        ids = self._roster.client_ids
        if msg.sender != ids[0] or msg.recipient not in ids[1:]:
            raise ProtocolError("group keys come from the leader to roster clients")
        self._pending_keys[msg.recipient] = msg

    def group_key_for(self, client_id):
        """The relayed group key message for ``client_id``."""
        if client_id not in self._pending_keys:
            raise ProtocolError(f"no group key message for client {client_id}")
        return self._pending_keys[client_id]

    def start_round(self, participants=None):
        """Open the next round (default: every roster client)."""
        if self._roster is None:
            raise ProtocolError("send the roster before starting a round")
        if participants is None:
            ids = self._roster.client_ids
        else:
            try:
                ids = tuple(sorted(participants))
            except TypeError:
                raise InvalidInputError("participants must be client ids") from None
            if any(isinstance(i, bool) or not isinstance(i, (int, np.integer)) for i in ids):
                raise InvalidInputError("participants must be int client ids")
            ids = tuple(int(i) for i in ids)
        if not set(ids) <= set(self._roster.client_ids) or len(set(ids)) != len(ids):
            raise ProtocolError("participants must be distinct roster clients")
        st = self._m.new_round(self._round + 1, ids)
        msg = RoundMessage(self.run_id, self._round + 1, ids)
        self._round += 1
        self._open = {"step": "shares", "st": st, "got": {}, "req": None}
        return msg

    def request_inputs(self):
        o = self._open
        if o is None or o["step"] not in ("shares", "bundles"):
            raise ProtocolError("no round is ready for inputs")
        if o["step"] == "shares":
            self._m.close_shares(o["st"])
        req = InputRequest(self.run_id, o["st"]["round"])
        o["step"], o["req"] = "inputs", req
        return req

    def receive(self, msg):
        o = self._need("inputs")
        if not isinstance(msg, MaskedVectorMessage):
            raise ProtocolError("expected a MaskedVectorMessage")
        if msg.run_id != self.run_id:
            raise ProtocolError("MaskedVectorMessage of another run")
        if msg.round != o["st"]["round"]:
            raise ProtocolError(f"message for round {msg.round}, the open round is "
                                f"{o['st']['round']}")
        if msg.sender not in o["st"]["u2"]:
            raise ProtocolError(f"client {msg.sender} did not share keys in round {msg.round}")
        if msg.sender in o["got"]:
            raise ProtocolError(f"duplicate message from client {msg.sender}")
        if msg.payload.size != self._n_words:
            raise ProtocolError(f"client {msg.sender}: {msg.payload.size} words, "
                                f"expected {self._n_words}")
        self._m.check_tag(msg.sender, msg.signed_bytes() + self._m.view(o["st"]), msg.tag)
        o["got"][msg.sender] = msg.payload

    def _noise_words(self, round_, segments):
        from ..core.noise import NoiseStream
        parts = []
        for length, scale, tag in segments:
            if self.noise is None or scale == 0:
                parts.append(np.zeros(length, dtype=np.int64))
                continue
            ns = NoiseStream.secure(self._noise_key, round_, tag)
            draw = ns.gaussian if self.noise == "gaussian" else ns.laplace
            v = np.rint(np.ldexp(np.asarray(draw(length, float(scale))), self._scale_bits))
            # strictly below 2**62: with the clients' sum at most 2**62 in
            # magnitude the noisy sum stays within int64 (found by review)
            if v.size and not float(np.abs(v).max()) < _RING_HALF:
                raise CapacityError("noise sample reaches 2**62 in fixed point")
            parts.append(v.astype(np.int64))
        return np.concatenate(parts).view(np.uint64) if parts else np.zeros(0, np.uint64)

    def finish_round(self, segments=()):
        """Remove the survivors' self masks and their pair masks with the
        dropped, add the server's baseline noise (``segments``: ``(length,
        scale, tag)`` triples covering the vector; only with a ``noise``
        mode), and return the broadcast.

        Raises :class:`ProtocolError` when too few shares arrived (the
        round stays open for more unmask answers).
        """
        o = self._need("unmask")
        st = o["st"]
        segments = tuple(segments)
        if segments:
            if self.noise is None:
                raise InvalidInputError("this server adds no noise (noise=None): private "
                                        "fits add the clients' distributed noise")
            if sum(int(sg[0]) for sg in segments) != self._n_words:
                raise InvalidInputError("noise segments must cover the vector exactly")
            tags = [bytes(sg[2]) for sg in segments]
            if len(set(tags)) != len(tags) or any(not 1 <= len(t) <= 4 for t in tags):
                raise InvalidInputError("segment tags must be distinct, 1 to 4 bytes")
            if any(not (float(sg[1]) >= 0 and np.isfinite(float(sg[1]))) for sg in segments):
                raise InvalidInputError("noise scales must be finite and >= 0")
        selfs, pair_keys, neg, dropped = self._m.recover(st)
        rnd = st["round"]
        agg = np.zeros(self._n_words, dtype=np.uint64)
        for u in st["u3"]:
            agg += o["got"][u]
        for key in selfs:
            agg -= mask_stream(key.tobytes(), rnd, SELF_TAG, self._n_words)
        for key, ng in zip(pair_keys, neg):
            s = mask_stream(key.tobytes(), rnd, MSA_TAG, self._n_words)
            if ng:
                agg -= s
            else:
                agg += s
        if segments:
            agg += self._noise_words(rnd, segments)
        self._open = None
        self.last_dropped = tuple(dropped)
        return AggregateMessage(self.run_id, rnd, agg, st["u3"])


def setup_msa(n_clients, n_words, *, scale_bits=DEFAULT_SCALE_BITS, noise=None,
              threshold=None, degree=0):
    """A server and ``n_clients`` clients (ids 0..n-1) after key agreement and
    group-key distribution, every message passed through its bytes.  Every
    key and the run id come from the operating system."""
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


def msa_round(server, clients, vectors, *, noise=(), server_noise=(), silent=()):
    """One MSA round in process, every message through its bytes: the
    clients in ``silent`` share keys and then go silent; returns the
    decoded sum of the others (as every client decodes it) and the
    survivors."""
    silent = set(silent)
    rmsg = RoundMessage.from_bytes(server.start_round().to_bytes())
    for c in clients:
        server.receive_shares(ShareMessage.from_bytes(c.share_keys(rmsg).to_bytes()))
    for c in clients:
        c.receive_shares(ShareBundle.from_bytes(server.bundle(c.client_id).to_bytes()))
    req = InputRequest.from_bytes(server.request_inputs().to_bytes())
    for c, v in zip(clients, vectors):
        if c.client_id not in silent:
            server.receive(MaskedVectorMessage.from_bytes(c.respond(req, v, noise).to_bytes()))
    ureq = UnmaskRequest.from_bytes(server.unmask_request().to_bytes())
    for c in clients:
        if c.client_id in ureq.survivors:
            server.receive_unmask(UnmaskMessage.from_bytes(c.unmask_shares(ureq).to_bytes()))
    agg = AggregateMessage.from_bytes(server.finish_round(server_noise).to_bytes())
    alive = [c for c in clients if c.client_id in agg.survivors]
    return alive[0].unmask(agg), agg.survivors
