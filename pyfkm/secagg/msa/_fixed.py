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
    from ...core.kernels import noise as _noise
    _ChaChaStream = _noise.ChaChaStream
except ImportError:  # pragma: no cover - module not built
    _ChaChaStream = None
