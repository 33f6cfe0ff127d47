"""SCMA's mask streams over F_p and the public hash of the hashed mode.

Keys, pair keys and self seeds are made by :mod:`pyfkm.secagg._masking`
(fresh from the OS for every run and round).  A mask stream is the ChaCha20
keystream under such a 32-byte key with a nonce made of the round number
and a purpose tag, mapped to F_p by rejection sampling (uniform, no modulo
bias).  Every key is used for one round only, so no keystream is ever used
twice.  (MSA's streams, over Z_2^64, are :mod:`pyfkm.secagg.msa._fixed`.)
"""
import functools
import hashlib
import struct

import numpy as np
from ...core.kernels import noise as _noise
from ...field import kernels as _field

_ChaChaStream = _noise.ChaChaStream

SCMA_TAG = b"SCMA"
HASH_TAG = b"HASH"


_CHUNK_WORDS = 1 << 15


def add_stream(acc, key, round_, tag, p, *, negate=False):
    """acc <- acc +/- (the next len(acc) elements of the mask stream of
    ``(key, round, tag)``), in place, mod p.

    The stream is the ChaCha20 keystream (RFC 8439 block function, 32-byte
    key, block counter 0, 12-byte nonce = round u64 || tag) read as
    little-endian 64-bit words; a word ``w`` is kept iff it is below the
    largest multiple of ``p`` that fits in 64 bits and then mapped to
    ``w mod p``: uniform on F_p without bias.
    """
    n = acc.size
    if n == 0:
        return acc
    stream = _ChaChaStream(np.frombuffer(bytes(key), np.uint8),
                           np.frombuffer(struct.pack("<Q", round_) + tag, np.uint8), 0)
    lim = _stream_limit(p)
    filled = 0
    chunk = min(n + n // 32 + 8, _CHUNK_WORDS)
    while filled < n:
        # keystream words as little-endian integers (host-independent values)
        raw = memoryview(stream.words(chunk)).cast("B")
        filled = _field.stream_accumulate(raw, lim, negate, acc, filled, p)
    return acc


def _stream_limit(p):
    lim = ((1 << 64) // p) * p
    return 0 if lim == 1 << 64 else lim


def add_streams(acc, keys, negate, round_, tag, p):
    """acc <- acc + sum_j (-/+) stream(keys[j], round, tag), in place, mod p:
    :func:`add_stream` for many keys in one C call (``negate[j]`` subtracts
    stream j).  ``keys`` is a sequence of 32-byte keys or a uint8 array of
    shape (k, 32)."""
    if acc.size == 0 or len(keys) == 0:
        return acc
    if isinstance(keys, np.ndarray):
        k = keys
    else:
        k = np.frombuffer(b"".join(bytes(x) for x in keys), np.uint8).reshape(len(keys), 32)
    neg = np.asarray(negate, dtype=np.uint8)
    nonce = np.frombuffer(struct.pack("<Q", round_) + tag, np.uint8)
    _field.add_streams(acc, k, neg, nonce, _stream_limit(p), p)
    return acc


def field_stream(key, round_, tag, n, p):
    """``n`` elements uniform on F_p from the stream of ``(key, round, tag)``."""
    return add_stream(np.zeros(n, dtype=np.uint64), key, round_, tag, p)


def add_mod(acc, x, p):
    """acc <- (acc + x) mod p in place (entries below p < 2**63)."""
    _field.add_inplace(acc, np.ascontiguousarray(x, dtype=np.uint64), p)
    return acc


def hash_coefficients(hash_seed, d, p, which=0):
    """A public hash ``h(b) = a_0 + sum_t a_t b_t`` of the hashed mode:
    ``(a_0, a)`` uniform on F_p from the run's hash seed; ``which`` = 0 for
    the node hash, 1 for the check hash (independent streams).  ``a`` is
    read-only: the coefficients are public and depend on the arguments
    only, so the 64 most recent are kept (every client's codec of a
    difference round of a new size asks for the same ones)."""
    return _hash_coefficients(bytes(hash_seed), int(d), int(p), int(which))


@functools.lru_cache(maxsize=64)
def _hash_coefficients(hash_seed, d, p, which):
    key = hashlib.sha256(b"pyfkm/scma/hash/v1" + hash_seed).digest()
    a = field_stream(key, which, HASH_TAG, d + 1, p)
    coef = np.ascontiguousarray(a[1:])
    coef.setflags(write=False)
    return int(a[0]), coef
