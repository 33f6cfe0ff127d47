"""Fixed point in the ring Z_2^64 and the ring's mask streams.

A real ``x`` is ``round(x * 2**scale_bits)`` in two's complement.  Each
client's encoded entries and its noise share must each have magnitude at
most ``2**62 / (2 n_clients)`` (:class:`~pyfkm.exceptions.CapacityError`
otherwise), and the server's baseline noise at most ``2**62``; so the noisy
sum, read as a signed 64-bit integer, never wraps.  Masks are ChaCha20
keystreams read as 64-bit words (uniform on Z_2^64), one purpose tag each:
``b"MSA\\0"`` for pair streams, ``b"MSAS"`` for self streams, ``b"MSAO"``
for output masks.
"""
import struct

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from ...exceptions import CapacityError, InvalidInputError

MSA_TAG = b"MSA\x00"
OUTPUT_TAG = b"MSAO"
SELF_TAG = b"MSAS"
DEFAULT_SCALE_BITS = 16
_RING_HALF = 1 << 62          # bound on |each client's share| * n; |noise| < it


def encoding_limit(n_clients):
    """Largest magnitude of an encoded entry of one of ``n_clients`` clients."""
    return _RING_HALF // max(int(n_clients), 1)


def encode_fixed(x, scale_bits=DEFAULT_SCALE_BITS, limit=_RING_HALF):
    """``round(x * 2**scale_bits)`` as two's complement words of Z_2^64.

    Raises :class:`InvalidInputError` for NaN and :class:`CapacityError`
    when an entry's magnitude exceeds ``limit`` (default ``2**62``) after
    scaling, instead of wrapping.  A vector goes through one C loop
    (``fkm_ring_encode``), anything else (or an error, to name it) through
    numpy: the same words either way.

    Examples
    --------
    >>> w = encode_fixed([1.5, -0.25])
    >>> w.dtype.name, decode_fixed(w).tolist()
    ('uint64', [1.5, -0.25])
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1 and _ring is not None and 0 <= limit < 1 << 64:
        status, words = _ring.ring_encode(np.ascontiguousarray(x), int(scale_bits), int(limit))
        if not status:
            return words
    return _encode_numpy(x, scale_bits, limit)


def _encode_numpy(x, scale_bits, limit):
    """:func:`encode_fixed` in numpy (its errors are raised here)."""
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


def stream_nonce(round_, tag):
    """The 12-byte nonce of the mask stream of ``round_`` and ``tag``:
    ``round (u64 LE) || tag (4 bytes)``."""
    return struct.pack("<Q", int(round_)) + bytes(tag)


def mask_stream(key, round_, tag, n):
    """``n`` words uniform on Z_2^64: the ChaCha20 keystream of ``key`` (32
    bytes) with nonce ``round (u64 LE) || tag (4 bytes)`` and block counter 0,
    read as little-endian 64-bit words.

    Uses the C ChaCha20 of :mod:`pyfkm._core._noise` when it is built (about
    5x faster on short vectors than setting up a ``cryptography`` cipher),
    else ``cryptography``; both give the same keystream (RFC 8439).
    """
    nonce = stream_nonce(round_, tag)
    n = int(n)
    if _ring is not None:
        return _ring.ChaChaStream(np.frombuffer(bytes(key), np.uint8),
                                  np.frombuffer(nonce, np.uint8), 0).words(n)
    enc = Cipher(algorithms.ChaCha20(bytes(key), b"\0\0\0\0" + nonce), mode=None).encryptor()
    return np.frombuffer(enc.update(bytes(8 * n)), dtype="<u8").astype(np.uint64)


def add_streams(acc, keys, nonces, signs):
    """``acc += sum_j signs[j] * stream_j`` in place, modulo 2**64: stream
    ``j`` is the keystream of key ``keys[32j:32j+32]`` with nonce
    ``nonces[12j:12j+12]`` (:func:`mask_stream`'s words for that key and
    nonce), ``signs`` a bytes of +1 / -1 (as int8).  One C loop
    (``fkm_ring_add_streams``) when built, else :func:`mask_stream` per
    stream; ``acc``: a writable contiguous uint64 vector."""
    m = len(signs)
    if len(keys) != 32 * m or len(nonces) != 12 * m:
        raise ValueError("keys must hold 32 bytes and nonces 12 per sign")
    if _ring is not None:
        _ring.ring_add_streams(acc, np.frombuffer(keys, np.uint8),
                               np.frombuffer(nonces, np.uint8), np.frombuffer(signs, np.int8))
        return acc
    sg = np.frombuffer(signs, np.int8)
    if not np.isin(sg, (1, -1)).all():
        raise ValueError("signs must be +1 or -1")
    n = acc.shape[0]
    for j in range(m):
        nonce = nonces[12 * j:12 * j + 12]
        enc = Cipher(algorithms.ChaCha20(bytes(keys[32 * j:32 * j + 32]), b"\0\0\0\0" + nonce),
                     mode=None).encryptor()
        s = np.frombuffer(enc.update(bytes(8 * n)), dtype="<u8").astype(np.uint64)
        if sg[j] > 0:
            acc += s
        else:
            acc -= s
    return acc


PLUS, MINUS = b"\x01", b"\xff"      # signs of add_streams (int8 +1, -1)

try:  # the C keystream and ring kernels of the noise module
    from ...core.kernels import noise as _ring
except ImportError:  # pragma: no cover - module not built
    _ring = None  # type: ignore[assignment]
