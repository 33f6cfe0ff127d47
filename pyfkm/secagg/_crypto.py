"""Key agreement, pairwise seeds and mask streams (Bonawitz et al. 2017 style).

* Each client holds an X25519 key pair; the server relays public keys.
* A pair's seed is HKDF-SHA256 of their X25519 shared secret with the run id
  as salt and the (ordered) pair of ids in the info, so seeds differ across
  pairs and runs and agree within a pair.
* A mask stream is the ChaCha20 keystream under the pair seed with a nonce
  made of the round number and a purpose tag, mapped to F_p by rejection
  sampling (uniform, no modulo bias).  One stream per (pair, run, round,
  purpose): no keystream is ever used twice.
* The mask of client ``l`` in a round is
  ``sum_{l' != l} (+1 if l < l' else -1) * PRG(seed_{l,l'}, round)`` over the
  round's participants, so the masks of a round cancel in the sum.
"""
import hashlib
import struct

import numpy as np
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from .._core import _field
from .._core._noise import ChaChaStream as _ChaChaStream
from ..exceptions import ProtocolError

SCMA_TAG = b"SCMA"
HASH_TAG = b"HASH"


def new_private_key(random_state=None):
    """An X25519 private key: OS randomness, or 32 bytes of ``random_state``
    (reproducible, for tests and simulations only: not secret)."""
    if random_state is None:
        return X25519PrivateKey.generate()
    from ..rng import as_generator
    return X25519PrivateKey.from_private_bytes(as_generator(random_state).bytes(32))


def public_bytes(private_key):
    return private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def pair_seed(private_key, peer_public, run_id, id_a, id_b):
    """32-byte seed shared by clients ``id_a`` and ``id_b`` in run ``run_id``."""
    shared = private_key.exchange(X25519PublicKey.from_public_bytes(bytes(peer_public)))
    lo, hi = min(id_a, id_b), max(id_a, id_b)
    info = b"pyfkm/scma/pair-seed/v1" + struct.pack("<II", lo, hi)
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=bytes(run_id), info=info).derive(shared)


def roster_seeds(roster, roster_cls, run_id, client_id, private_key, public_key):
    """Check a client's roster (type, run, the client's own key in it) and
    derive its pair seeds ``{other id: 32-byte seed}``.  Raises
    :class:`ProtocolError`."""
    if not isinstance(roster, roster_cls):
        raise ProtocolError(f"expected a {roster_cls.__name__}")
    if run_id is None or roster.run_id != run_id:
        raise ProtocolError("roster of another run")
    ids = dict(zip(roster.client_ids, roster.public_keys))
    if ids.get(client_id) != public_key:
        raise ProtocolError("the roster does not carry this client's key")
    return {o: pair_seed(private_key, k, roster.run_id, client_id, o)
            for o, k in ids.items() if o != client_id}


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
    the node hash, 1 for the check hash (independent streams)."""
    key = hashlib.sha256(b"pyfkm/scma/hash/v1" + bytes(hash_seed)).digest()
    a = field_stream(key, which, HASH_TAG, d + 1, p)
    return int(a[0]), np.ascontiguousarray(a[1:])
