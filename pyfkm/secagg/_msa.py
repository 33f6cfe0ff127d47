"""Masked secure aggregation (MSA) in the ring Z_2^64, with server-side noise.

The aggregation step of FastLloyd (Diaa, Humphries and Kerschbaum): each
client encodes a real vector in fixed point (``round(x * 2**scale_bits)``,
two's complement in Z_2^64), adds masks and sends it; the server adds the
messages, adds differential-privacy noise in the same fixed point and
broadcasts; clients remove the remaining mask and decode.  The server sees
neither the clients' vectors nor the (noisy) aggregate.

Masks.
    * Pairwise masks: client ``l`` adds ``sum_{l' != l} (+1 if l < l' else -1)
      * PRG(seed_{l,l'}, round)``; they cancel in the sum.  ``seed_{l,l'}``
      comes from the X25519 + HKDF-SHA256 key agreement of :mod:`._crypto`
      (the same one as SCMA, salted with this run's id); ``PRG`` is the
      ChaCha20 keystream under the seed with the 12-byte nonce
      ``round (u64) || b"MSA\\0"``, read as little-endian 64-bit words
      (uniform on Z_2^64, no rejection needed).  A round number is used once
      per run (clients refuse to answer a round twice), so no keystream is
      ever reused; the tag separates MSA streams from SCMA ones.
    * Output mask: the lowest client id (the *leader*) draws a 32-byte group
      key, sends it to every other client encrypted under a key derived from
      their pair seed (ChaCha20-Poly1305, relayed by the server), and adds
      ``PRG(group_key, round)`` (tag ``b"MSAO"``) to its message.  Every
      client subtracts it from the broadcast, so the server only ever holds
      uniformly masked words.

Fixed point and overflow.  Each client's encoded entries must have magnitude
at most ``2**62 / n_clients`` (:class:`~pyfkm.exceptions.CapacityError`
otherwise), and the server's noise magnitude at most ``2**62``; so the
noisy sum, read as a signed 64-bit integer, never wraps.  Nothing wraps
silently: every bound is checked before encoding.

Noise modes of the server (``noise=``): ``"discrete_gaussian"`` (exact
discrete Gaussian on the fixed-point integers, sigma scaled by
``2**scale_bits``), ``"gaussian"`` (continuous Gaussian, rounded to the
grid: post-processing of the continuous mechanism on the real values),
``"laplace"`` (rounded, for the SuLloyd baseline) and ``None`` (no noise,
non-private).  Noise comes from :class:`pyfkm.privacy.NoiseStream` in its
secure ChaCha20 mode keyed by the server's noise key, one independent stream
per (round, segment tag).

Security model: honest-but-curious server and clients that do not collude
with it; every roster client takes part in every round (a missing message
makes the server raise, never return a wrong sum).
"""
import os
import struct
from dataclasses import dataclass, field

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ..exceptions import CapacityError, InvalidInputError, MessageFormatError, ProtocolError
from ._crypto import new_private_key, public_bytes
from ._messages import (HEADER_BYTES, SERVER_ID, KeyMessage, RoundMessage, _check_id,
                        check_key_message, check_round_message, roster_pair_seeds,
                        _check_run_id, _expect_len, _pack_header, _unpack_header)

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
    from .._core._noise import ChaChaStream as _ChaChaStream
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


def _parse_words(data, what):
    if len(data) < HEADER_BYTES + 4:
        raise MessageFormatError(f"truncated {what} message")
    (n,) = struct.unpack_from("<I", data, HEADER_BYTES)
    _expect_len(data, HEADER_BYTES + 4 + 8 * n)
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
    """Server -> clients: vector length, fixed-point scale, every client's key.

    Body: n_words u32, scale_bits u8, count u32, then per client id u32 and
    X25519 key 32s (ids strictly increasing; the first is the leader).
    """

    run_id: bytes
    n_words: int
    scale_bits: int
    client_ids: tuple
    public_keys: tuple

    def __post_init__(self):
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        nw, sb = self.n_words, self.scale_bits
        if not isinstance(nw, (int, np.integer)) or not 1 <= int(nw) < 1 << 32:
            raise InvalidInputError(f"n_words must be an int in [1, 2**32), got {nw!r}")
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

    def to_bytes(self):
        body = [struct.pack("<IBI", self.n_words, self.scale_bits, len(self.client_ids))]
        body += [struct.pack("<I", i) + k for i, k in zip(self.client_ids, self.public_keys)]
        return _pack_header(_MSA_ROSTER, self.run_id, 0, SERVER_ID, 0) + b"".join(body)

    @classmethod
    def from_bytes(cls, data):
        data, run_id, round_, sender, modulus = _unpack_header(data, _MSA_ROSTER)
        off = HEADER_BYTES
        if len(data) < off + 9:
            raise MessageFormatError("truncated MSA roster message")
        nw, sb, n = struct.unpack_from("<IBI", data, off)
        off += 9
        _expect_len(data, off + 36 * n)
        if sender != SERVER_ID or round_ != 0 or modulus != 0:
            raise MessageFormatError("MSA roster not from the server, or with a round/modulus")
        ids = [struct.unpack_from("<I", data, off + 36 * t)[0] for t in range(n)]
        keys = [data[off + 36 * t + 4: off + 36 * t + 36] for t in range(n)]
        try:
            return cls(run_id, nw, sb, tuple(ids), tuple(keys))
        except InvalidInputError as e:
            raise MessageFormatError(f"invalid MSA roster: {e}") from None


@dataclass(frozen=True)
class GroupKeyMessage:
    """Leader -> (server relays) -> one client: the group key encrypted for
    the recipient.  Body: recipient u32, nonce 12s, ciphertext 48s
    (ChaCha20-Poly1305 of the 32-byte key, 16-byte tag)."""

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
    u32, then that many u64 words; any word is a valid ring element)."""

    run_id: bytes
    round: int
    sender: int
    payload: np.ndarray = field(repr=False)

    def __post_init__(self):
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _check_round(self.round))
        object.__setattr__(self, "sender", _check_id(self.sender, "sender"))
        object.__setattr__(self, "payload", _check_words(self.payload))

    def _key(self):
        return (self.run_id, self.round, self.sender, self.payload)

    def to_bytes(self):
        return (_pack_header(_MASKED, self.run_id, self.round, self.sender, 0)
                + _words_body(self.payload))

    @classmethod
    def from_bytes(cls, data):
        data, run_id, round_, sender, modulus = _unpack_header(data, _MASKED)
        payload = _parse_words(data, "masked vector")
        if sender == SERVER_ID or modulus != 0:
            raise MessageFormatError("masked vector from the server id or with a modulus")
        try:
            return cls(run_id, round_, sender, payload)
        except InvalidInputError as e:
            raise MessageFormatError(f"invalid masked vector message: {e}") from None


@dataclass(frozen=True, eq=False)
class AggregateMessage(_WordsEq):
    """Server -> clients: the noisy sum, still under the output mask (body:
    count u32, then that many u64 words)."""

    run_id: bytes
    round: int
    payload: np.ndarray = field(repr=False)

    def __post_init__(self):
        object.__setattr__(self, "run_id", _check_run_id(self.run_id))
        object.__setattr__(self, "round", _check_round(self.round))
        object.__setattr__(self, "payload", _check_words(self.payload))

    def _key(self):
        return (self.run_id, self.round, self.payload)

    def to_bytes(self):
        return (_pack_header(_AGGREGATE, self.run_id, self.round, SERVER_ID, 0)
                + _words_body(self.payload))

    @classmethod
    def from_bytes(cls, data):
        data, run_id, round_, sender, modulus = _unpack_header(data, _AGGREGATE)
        payload = _parse_words(data, "aggregate")
        if sender != SERVER_ID or modulus != 0:
            raise MessageFormatError("aggregate message not from the server")
        try:
            return cls(run_id, round_, payload)
        except InvalidInputError as e:
            raise MessageFormatError(f"invalid aggregate message: {e}") from None


# --------------------------------------------------------------- roles

def _wrap_key(seed, run_id, leader, recipient):
    info = b"pyfkm/msa/group-key/v1" + struct.pack("<II", leader, recipient)
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=bytes(run_id), info=info).derive(seed)


def _aad(run_id, leader, recipient):
    return b"pyfkm/msa" + bytes(run_id) + struct.pack("<II", leader, recipient)


class MsaClient:
    """One client of an MSA run.

    Parameters
    ----------
    client_id : int
        In ``[0, 2**32 - 1)``, unique in the run.
    random_state : None, int or Generator
        None (default): X25519 key and group key from the OS.  A seed makes
        them reproducible -- for tests and simulations only (not secret).

    Notes
    -----
    After :meth:`receive_roster` the X25519 private key is discarded; the
    object then holds only bytes and arrays and can be pickled (e.g. to run
    on a process pool).  Round protocol: :meth:`respond` encodes and masks a
    vector for a :class:`RoundMessage`, :meth:`unmask` decodes the server's
    :class:`AggregateMessage` of that round.
    """

    def __init__(self, client_id, *, random_state=None):
        self.client_id = _check_id(client_id, "client_id")
        self._gen = None
        if random_state is not None:
            from ..rng import as_generator
            self._gen = as_generator(random_state)
        self._key = new_private_key(self._gen)
        self.public_key = public_bytes(self._key)
        self._run_id = None
        self._seeds = {}
        self._group_key = None
        self._last_round = 0
        self.n_words = self.scale_bits = self.leader = None

    def key_message(self, run_id):
        """The :class:`KeyMessage` opening run ``run_id`` (16 bytes)."""
        msg = KeyMessage(run_id, self.client_id, self.public_key)
        self._run_id = msg.run_id
        return msg

    def receive_roster(self, roster):
        """Derive the pair seeds; the leader also draws the group key."""
        if self._key is None and isinstance(roster, MsaRosterMessage):
            raise ProtocolError("the roster was already received")
        self._seeds = roster_pair_seeds(roster, MsaRosterMessage, self._run_id,
                                        self.client_id, self._key, self.public_key)
        self._key = None          # not needed any more (and not picklable)
        self.n_words, self.scale_bits = roster.n_words, roster.scale_bits
        self.participants = tuple(roster.client_ids)
        self.leader = roster.client_ids[0]
        if self.leader == self.client_id:
            self._group_key = self._random_bytes(32)

    def _random_bytes(self, n):
        return os.urandom(n) if self._gen is None else self._gen.bytes(n)

    @property
    def is_leader(self):
        return self.leader == self.client_id

    def group_key_messages(self):
        """Leader only: the group key encrypted for each other client."""
        if not self.is_leader or self._group_key is None:
            raise ProtocolError("only the leader, after the roster, sends group keys")
        out = []
        for other in self.participants:
            if other == self.client_id:
                continue
            nonce = self._random_bytes(12)
            aead = ChaCha20Poly1305(_wrap_key(self._seeds[other], self._run_id,
                                              self.client_id, other))
            ct = aead.encrypt(nonce, self._group_key, _aad(self._run_id, self.client_id, other))
            out.append(GroupKeyMessage(self._run_id, self.client_id, other, nonce, ct))
        return out

    def receive_group_key(self, msg):
        if not isinstance(msg, GroupKeyMessage):
            raise ProtocolError("expected a GroupKeyMessage")
        if msg.run_id != self._run_id or msg.recipient != self.client_id \
                or msg.sender != self.leader or self.is_leader:
            raise ProtocolError("group key message of another run, recipient or sender")
        aead = ChaCha20Poly1305(_wrap_key(self._seeds[msg.sender], self._run_id,
                                          msg.sender, self.client_id))
        try:
            self._group_key = aead.decrypt(msg.nonce, msg.ciphertext,
                                           _aad(self._run_id, msg.sender, self.client_id))
        except InvalidTag:
            raise ProtocolError("group key message fails authentication") from None

    def pair_seed(self, other_id):
        """The seed shared with ``other_id`` (for audits and tests)."""
        if other_id not in self._seeds:
            raise ProtocolError(f"no seed with client {other_id}")
        return self._seeds[other_id]

    def mask(self, round_):
        """This client's total mask of a round (pairwise, plus the output
        mask for the leader)."""
        acc = np.zeros(self.n_words, dtype=np.uint64)
        for other, seed in self._seeds.items():
            s = mask_stream(seed, round_, MSA_TAG, self.n_words)
            if self.client_id < other:
                acc += s
            else:
                acc -= s
        if self.is_leader:
            acc += mask_stream(self._group_key, round_, OUTPUT_TAG, self.n_words)
        return acc

    def _check_ready(self):
        if self.n_words is None:
            raise ProtocolError("receive the roster first")
        if self._group_key is None:
            raise ProtocolError("the group key has not been received")

    def respond(self, round_msg, x):
        """Encode ``x`` (``n_words`` reals) and mask it for ``round_msg``.

        Raises :class:`CapacityError` (before anything changes) when an
        entry does not fit in one share of the ring.
        """
        if not isinstance(round_msg, RoundMessage):
            raise ProtocolError("expected a RoundMessage")
        self._check_ready()
        if round_msg.run_id != self._run_id:
            raise ProtocolError("round of another run")
        if round_msg.round <= self._last_round:
            raise ProtocolError(f"round {round_msg.round} is not after the last answered "
                                f"round {self._last_round}: masks are never reused")
        if tuple(round_msg.participants) != self.participants:
            raise ProtocolError("every roster client must take part in every MSA round")
        x = np.asarray(x, dtype=np.float64).ravel()
        if x.size != self.n_words:
            raise InvalidInputError(f"vector has {x.size} entries, the run uses {self.n_words}")
        enc = encode_fixed(x, self.scale_bits, encoding_limit(len(self.participants)))
        enc += self.mask(round_msg.round)
        self._last_round = round_msg.round
        return MaskedVectorMessage(self._run_id, round_msg.round, self.client_id, enc)

    def unmask(self, agg):
        """Remove the output mask from the broadcast and decode (float64)."""
        if not isinstance(agg, AggregateMessage):
            raise ProtocolError("expected an AggregateMessage")
        self._check_ready()
        if agg.run_id != self._run_id or agg.round != self._last_round:
            raise ProtocolError("aggregate of another run or round")
        if agg.payload.size != self.n_words:
            raise ProtocolError(f"aggregate of {agg.payload.size} words, expected {self.n_words}")
        w = agg.payload - mask_stream(self._group_key, agg.round, OUTPUT_TAG, self.n_words)
        return decode_fixed(w, self.scale_bits)


class MsaServer:
    """The MSA server: relays keys, sums masked vectors, adds noise.

    Parameters
    ----------
    run_id : bytes (16)
    n_words : int
        Length of every vector.
    scale_bits : int
        Fixed-point scale ``2**scale_bits`` (default 16).
    noise : {"discrete_gaussian", "gaussian", "laplace", None}
        Noise added to each round's sum (see the module notes).
    noise_key : bytes (32), optional
        Key of the server's ChaCha20 noise streams; default
        :func:`pyfkm.privacy.new_noise_key` (OS randomness).

    It never holds a client's vector or the aggregate in the clear: only
    masked words.  A rejected message or call leaves the server unchanged.
    """

    def __init__(self, run_id, n_words, *, scale_bits=DEFAULT_SCALE_BITS,
                 noise="discrete_gaussian", noise_key=None):
        self.run_id = _check_run_id(run_id)
        if noise not in NOISE_MODES:
            raise InvalidInputError(f"noise must be one of {NOISE_MODES}, got {noise!r}")
        if noise_key is None and noise is not None:
            from ..privacy import new_noise_key
            noise_key = new_noise_key()
        if noise_key is not None and (not isinstance(noise_key, (bytes, bytearray))
                                      or len(noise_key) != 32):
            raise InvalidInputError("noise_key must be 32 bytes")
        self._noise_key = None if noise_key is None else bytes(noise_key)
        self.noise = noise
        self._keys = {}
        self._roster = None
        self._pending_keys = {}
        self._round = 0
        self._open = None
        self._n_words, self._scale_bits = n_words, scale_bits
        MsaRosterMessage(self.run_id, n_words, scale_bits, (0,), (bytes(32),))  # validate

    def receive_key(self, msg):
        check_key_message(msg, self.run_id, self._keys, self._roster is not None)
        self._keys[msg.sender] = msg.public_key

    def roster(self):
        """Close key collection; the roster every client receives."""
        if not self._keys:
            raise ProtocolError("no client keys received")
        if self._roster is None:
            ids = tuple(sorted(self._keys))
            self._roster = MsaRosterMessage(self.run_id, self._n_words, self._scale_bits, ids,
                                            tuple(self._keys[i] for i in ids))
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

    def start_round(self):
        """Open the next round (every roster client takes part)."""
        if self._roster is None:
            raise ProtocolError("send the roster before starting a round")
        msg = RoundMessage(self.run_id, self._round + 1,
                           np.asarray(self._roster.client_ids, dtype=np.int64))
        self._round += 1
        self._open = (msg, {})
        return msg

    def receive(self, msg):
        got = check_round_message(msg, MaskedVectorMessage, self.run_id, self._open)
        if msg.payload.size != self._n_words:
            raise ProtocolError(f"client {msg.sender}: {msg.payload.size} words, "
                                f"expected {self._n_words}")
        got[msg.sender] = msg.payload

    def _noise_words(self, round_, segments):
        from ..privacy import NoiseStream
        parts = []
        for length, scale, tag in segments:
            if self.noise is None or scale == 0:
                parts.append(np.zeros(length, dtype=np.int64))
                continue
            ns = NoiseStream.secure(self._noise_key, round_, tag)
            if self.noise == "discrete_gaussian":
                v = np.asarray(ns.discrete_gaussian(length, float(np.ldexp(scale, self._scale_bits))),
                               dtype=np.int64)
            else:
                draw = ns.gaussian if self.noise == "gaussian" else ns.laplace
                v = np.rint(np.ldexp(np.asarray(draw(length, float(scale))), self._scale_bits))
                if v.size and not float(np.abs(v).max()) < _RING_HALF:
                    raise CapacityError("noise sample reaches 2**62 in fixed point")
                v = v.astype(np.int64)
            # strictly below 2**62: with the clients' sum at most 2**62 in
            # magnitude the noisy sum stays within int64 (found by review)
            if v.size and int(np.abs(v).max()) >= _RING_HALF:
                raise CapacityError("noise sample reaches 2**62 in fixed point")
            parts.append(v)
        return np.concatenate(parts).view(np.uint64) if parts else np.zeros(0, np.uint64)

    def finish_round(self, segments=()):
        """Sum the round's masked vectors, add noise, return the broadcast.

        ``segments``: ``(length, scale, tag)`` triples covering the vector in
        order (lengths summing to ``n_words``); ``scale`` is the real-valued
        standard deviation (Gaussian modes) or Laplace scale of that part,
        ``tag`` (<= 4 bytes, distinct) names its noise stream.  Empty: no
        noise.  Raises :class:`ProtocolError` when a participant is missing;
        the round then stays open.
        """
        if self._open is None:
            raise ProtocolError("no round is open")
        rmsg, got = self._open
        missing = sorted(set(rmsg.participants) - set(got))
        if missing:
            raise ProtocolError(f"round {rmsg.round}: no message from clients {missing}")
        segments = tuple(segments)
        if segments:
            if sum(int(s[0]) for s in segments) != self._n_words:
                raise InvalidInputError("noise segments must cover the vector exactly")
            tags = [bytes(s[2]) for s in segments]
            if len(set(tags)) != len(tags) or any(not 1 <= len(t) <= 4 for t in tags):
                raise InvalidInputError("segment tags must be distinct, 1 to 4 bytes")
            if any(not (float(s[1]) >= 0 and np.isfinite(float(s[1]))) for s in segments):
                raise InvalidInputError("noise scales must be finite and >= 0")
            if self.noise == "discrete_gaussian":
                check_discrete_sigma([s[1] for s in segments], self._scale_bits)
        agg = np.zeros(self._n_words, dtype=np.uint64)
        for payload in got.values():
            agg += payload
        if segments:
            agg += self._noise_words(rmsg.round, segments)
        self._open = None
        return AggregateMessage(self.run_id, rmsg.round, agg)


def setup_msa(n_clients, n_words, *, scale_bits=DEFAULT_SCALE_BITS, noise="discrete_gaussian",
              random_state=None):
    """A server and ``n_clients`` clients (ids 0..n-1) after key agreement and
    group-key distribution, every message passed through its bytes.

    ``random_state`` None draws the run id and every key from the OS; a seed
    makes them reproducible (tests and simulations only).
    """
    from ..rng import as_generator
    gen = None if random_state is None else as_generator(random_state)
    run_id = os.urandom(16) if gen is None else gen.bytes(16)
    noise_key = None
    if noise is not None:
        from ..privacy import new_noise_key
        noise_key = new_noise_key(None if gen is None else gen.spawn(1)[0])
    server = MsaServer(run_id, n_words, scale_bits=scale_bits, noise=noise, noise_key=noise_key)
    kids = gen.spawn(n_clients) if gen is not None else [None] * n_clients
    clients = [MsaClient(i, random_state=k) for i, k in enumerate(kids)]
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
