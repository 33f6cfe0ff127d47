"""Keys, derivations and the neighbour graph of the masking protocol.

Pure functions of the two halves in :mod:`._masking`: fresh X25519 keys
from the OS, HKDF derivations of the channel, MAC and pair mask keys,
commitments and digests, the ring graph of SecAgg+ and its sizing.

Roster binding.  Every key derivation and every encryption is bound to the
*roster digest*, a SHA-256 of the run id, the parameters, the threshold, the
graph degree, every id and every channel key.  A server that shows clients
different rosters (a substituted key) makes their pair keys disagree: the
masks do not cancel and the round fails to decode or to authenticate; it
cannot make a client encrypt shares to a key the other clients do not see.
Without an out-of-band check of the keys (a PKI) the first contact remains
trust-on-first-use, as in any key agreement; see the threat model.

Message authentication.  The roster carries the server's channel key too;
client ``u`` and the server share ``HKDF(X25519(c_u, c_server))``, and every
message ``u`` sends after the roster ends in a 16-byte HMAC-SHA256 tag of
all its bytes (header included: run, round, sender, type).  A replayed,
re-addressed or altered message is rejected by the server before it is
summed.

Graph.  ``degree = 0`` is the complete graph (Bonawitz et al.); ``degree =
k`` (even) places the clients on a ring in an order fixed by the roster
digest (nobody can choose it after the keys are in) and joins each to its
``k / 2`` successors and predecessors (a Harary graph with a random
labelling, as in SecAgg+).  Shares go to the neighbours only, with threshold
``t_s = t`` (complete graph) or ``t_s = floor((k + 1) / 2) + 1`` (a majority
of the ``k + 1`` holders), so a client's work and bytes grow with ``k``, not
with the number of clients.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import struct

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ..exceptions import ProtocolError

TAG_BYTES = 16
DATA_PREFIX = b"pyfkm/secagg/data/v3"    # what data_digest's HMAC absorbs first


# ------------------------------------------------------------------ keys

def new_key():
    """A fresh X25519 private key from the OS CSPRNG (the only source)."""
    return X25519PrivateKey.generate()


def raw_public(key):
    return key.public_key().public_bytes(serialization.Encoding.Raw,
                                         serialization.PublicFormat.Raw)


def raw_private(key):
    return key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                             serialization.NoEncryption())


def exchange(key, peer_public, who):
    """X25519 shared secret; a low-order peer key is a :class:`ProtocolError`
    naming ``who``."""
    try:
        return key.exchange(_public_key(bytes(peer_public)))
    except ValueError:
        raise ProtocolError(f"the public key of {who} is not a usable X25519 key "
                            "(a low-order point: no shared secret)") from None


_P25519 = 2**255 - 19
# u-coordinates of the points of order dividing 8 on Curve25519 and 4 on its
# twist (0, 1, -1 and the two of order 8): X25519 maps exactly these (and
# their non-canonical encodings: u + p for u < 19, and any of them with bit
# 255 set, which decoding ignores) to the all-zero shared secret
_SMALL_ORDER_U = frozenset((
    0, 1, _P25519 - 1,
    325606250916557431795983626356110631294008115727848805560023387167927233504,
    39382357235489614581723060781553021112529911719440698176882885853963445705823))


def is_small_order(public_key):
    """Whether the 32-byte X25519 public key ``public_key`` is a point of
    small order: the keys for which :func:`exchange` fails (an all-zero
    shared secret) with every private key, decided without a scalar
    multiplication (RFC 7748's check, as libsodium's blocklist)."""
    u = int.from_bytes(bytes(public_key), "little") & ((1 << 255) - 1)
    return u % _P25519 in _SMALL_ORDER_U


@functools.lru_cache(maxsize=4096)
def _public_key(raw):
    """The public key object of 32 raw bytes, parsed once: a run's keys are
    each used by every neighbour (about 35 times at 100 clients), and a
    parse costs as much as 7% of the exchange.  Public values only; a
    malformed key raises ValueError (and is not cached)."""
    return X25519PublicKey.from_public_bytes(raw)


def _hkdf(secret, salt, info, n=32):
    return HKDF(algorithm=hashes.SHA256(), length=n, salt=salt, info=info).derive(secret)


def roster_digest(run_id, params_bytes, threshold, degree, server_key, ids, keys):
    """SHA-256 binding a run's roster: every derivation is salted with it."""
    return _roster_digest(bytes(run_id), bytes(params_bytes), int(threshold), int(degree),
                          bytes(server_key), tuple(ids), _bytes_tuple(keys))


def _bytes_tuple(keys):
    """``keys`` as a tuple of bytes (the same object when it already is one:
    parsers build them, and a cache keyed on it hashes each key once)."""
    if type(keys) is tuple and not set(map(type, keys)) - {bytes}:
        return keys
    return tuple(bytes(k) for k in keys)


@functools.lru_cache(maxsize=16)
def _roster_digest(run_id, params_bytes, threshold, degree, server_key, ids, keys):
    # a pure function of public values, cached: every client of one run in a
    # process computes the same
    h = hashlib.sha256(b"pyfkm/secagg/roster/v3")
    h.update(run_id)
    h.update(struct.pack("<I", len(params_bytes)) + params_bytes)
    h.update(struct.pack("<III", threshold, degree, len(ids)))
    h.update(server_key)
    h.update(b"".join(struct.pack("<I", i) + k for i, k in zip(ids, keys)))
    return h.digest()


def channel_key(secret, digest, a, b, purpose=b"shares"):
    """The AEAD key of the pair's channel for one ``purpose`` (key shares,
    the MSA group key, ...): one key per purpose, so no two purposes ever
    share an AEAD key and nonce."""
    lo, hi = min(a, b), max(a, b)
    return _hkdf(secret, digest, b"pyfkm/secagg/channel/v3/" + bytes(purpose)
                 + struct.pack("<II", lo, hi))


def server_mac_key(secret, digest, client_id):
    return _hkdf(secret, digest, b"pyfkm/secagg/mac/v3" + struct.pack("<I", client_id))


def pair_mask_key(secret, digest, round_, a, b):
    lo, hi = min(a, b), max(a, b)
    return _hkdf(secret, digest, b"pyfkm/secagg/pair/v3" + struct.pack("<QII", round_, lo, hi))


def self_commitment(seed):
    """Public commitment to a self-mask seed: the server checks the seed it
    reconstructs against it (inconsistent shares are caught, not summed)."""
    return hashlib.sha256(b"pyfkm/secagg/self-commit/v3" + bytes(seed)).digest()


def round_view(round_, sharers):
    """Digest of a round's sharer set (what clients bind into their tags)."""
    ids = sorted(sharers)
    return hashlib.sha256(b"pyfkm/secagg/view/v3" + struct.pack("<QI", round_, len(ids))
                          + struct.pack(f"<{len(ids)}I", *ids)).digest()


def data_digest(key, *parts):
    """A keyed digest of a client's data (for the same-data rule): the key is
    the client's own, fresh per run, so the digest reveals nothing."""
    h = hmac.new(key, DATA_PREFIX, "sha256")
    for p in parts:
        b = bytes(p)
        h.update(struct.pack("<Q", len(b)) + b)
    return h.digest()


def mac(key, data):
    return hmac.digest(key, data, "sha256")[:TAG_BYTES]


class KeyedMac:
    """:func:`mac` (and :func:`data_digest` with ``prefix``) under one key,
    the key schedule done once: each call copies an HMAC-SHA256 state that
    has absorbed the key (and ``prefix``), then hashes the data -- the same
    bytes as ``mac(key, data)`` (``data_digest(key, data)``) for half the
    work.  Holds key material: the owner keeps it as long as the key, and it
    cannot be pickled."""

    __slots__ = ("_h",)

    def __init__(self, key, prefix=b""):
        self._h = hmac.new(bytes(key), bytes(prefix), "sha256")

    def __reduce__(self):
        raise TypeError("a keyed MAC holds key material and cannot be pickled")

    def tag(self, data):
        """``mac(key, data)``: 16 bytes."""
        h = self._h.copy()
        h.update(data)
        return h.digest()[:TAG_BYTES]

    def digest(self, part):
        """``data_digest(key, part)`` of a state built with
        ``prefix=DATA_PREFIX``: 32 bytes."""
        h = self._h.copy()
        b = bytes(part)
        h.update(struct.pack("<Q", len(b)) + b)
        return h.digest()

    def check(self, data, tag, who):
        """:func:`check_mac` under this key."""
        if not hmac.compare_digest(self.tag(data), bytes(tag)):
            raise ProtocolError(f"message from {who} fails authentication (altered, "
                                "replayed or re-addressed)")


def check_mac(key, data, tag, who):
    if not hmac.compare_digest(mac(key, data), bytes(tag)):
        raise ProtocolError(f"message from {who} fails authentication (altered, "
                            "replayed or re-addressed)")


# ------------------------------------------------------------------ graph

def ring_seed(run_id, params_bytes, ids, keys):
    """The seed of the ring order: the run id (drawn before any key), the
    parameters and the clients' keys -- not the server's key, which the
    server picks after seeing the clients' and could otherwise try until a
    victim's neighbours suit it."""
    return _roster_digest(bytes(run_id), bytes(params_bytes), 0, 0, bytes(32), tuple(ids),
                          _bytes_tuple(keys))


@functools.lru_cache(maxsize=16)
def _ring(digest, ids):
    """(order, position by id) of the ring: ids sorted by ``SHA-256(digest ||
    id)`` (a pure function of public values, cached: every client of one
    run in a process asks for the same)."""
    order = sorted(ids, key=lambda i: hashlib.sha256(digest + struct.pack("<I", i)).digest())
    return tuple(order), {i: p for p, i in enumerate(order)}


def ring_neighbours(digest, ids, degree, me):
    """The neighbours of ``me`` (sorted tuple without ``me``), or None for
    the complete graph (``degree`` 0 or at least ``len(ids) - 1``): on a
    ring in the order of ``SHA-256(digest || id)``, the ``degree / 2``
    successors and predecessors."""
    ids = tuple(ids)
    n = len(ids)
    if degree == 0 or degree >= n - 1:
        return None
    order, pos = _ring(digest, ids)
    p, half = pos[me], degree // 2
    nb = {order[(p + s) % n] for s in range(1, half + 1)}
    nb.update(order[(p - s) % n] for s in range(1, half + 1))
    return tuple(sorted(nb))


def neighbour_graph(digest, ids, degree):
    """``{id: neighbours}`` for every id (see :func:`ring_neighbours`), or
    None for the complete graph."""
    ids = tuple(ids)
    if degree == 0 or degree >= len(ids) - 1:
        return None
    return {i: ring_neighbours(digest, ids, degree, i) for i in ids}


@functools.lru_cache(maxsize=64)
def sparse_degree(n_clients: int, colluding: float = 0.05, dropout: float = 0.1,
                  security_bits: int = 40, correctness_bits: int = 20) -> int:
    """The smallest even degree ``k`` of the ring graph such that, with a
    fraction ``colluding`` of clients colluding with the server and a
    fraction ``dropout`` dropping (each client independently), the chance
    that some client's neighbours hold ``t_s`` colluders (its secrets
    exposed) is at most ``2**-security_bits`` and the chance that some
    client's holders lose more than ``k + 1 - t_s`` to dropouts (recovery
    fails) at most ``2**-correctness_bits`` (binomial tails, union bound
    over the clients; SecAgg+, Bell et al. 2020).  0 (the complete graph)
    when no smaller degree does.

    Parameters
    ----------
    n_clients : int
        Number of clients.
    colluding : float, default=0.05
        Fraction of clients colluding with the server.
    dropout : float, default=0.1
        Probability that a client drops.
    security_bits : int, default=40
        Exposure probability at most ``2**-security_bits``.
    correctness_bits : int, default=20
        Recovery failure probability at most ``2**-correctness_bits``.

    Returns
    -------
    k : int
        The even degree, or 0 for the complete graph.

    Examples
    --------
    >>> sparse_degree(1000), sparse_degree(10000)
    (36, 40)
    """
    from scipy.stats import binom
    n = int(n_clients)
    for k in range(2, n - 1, 2):
        ts = (k + 1) // 2 + 1
        if n * binom.sf(ts - 1, k, colluding) <= 2.0 ** -security_bits and \
                n * binom.sf(k + 1 - ts, k, dropout) <= 2.0 ** -correctness_bits:
            return k
    return 0


def share_threshold(n_clients, threshold, degree):
    """Shares needed to reconstruct one client's secrets."""
    if degree == 0 or degree >= n_clients - 1:
        return threshold
    return (degree + 1) // 2 + 1


def check_graph_params(n_clients, threshold, degree):
    """The run's threshold and degree, or a :class:`ProtocolError`."""
    if not 1 <= threshold <= n_clients:
        raise ProtocolError(f"threshold {threshold} must lie in [1, {n_clients} clients]")
    if degree < 0 or degree % 2 or (degree and degree < 2):
        raise ProtocolError(f"neighbour degree {degree} must be 0 (complete) or even >= 2")


def default_threshold(n_clients: int) -> int:
    """A strict majority: two sets of ``t`` clients always share one, so no
    server can collect both kinds of shares of a client.

    Parameters
    ----------
    n_clients : int
        Number of clients of the run.

    Returns
    -------
    threshold : int
        ``n_clients // 2 + 1``.

    Examples
    --------
    >>> default_threshold(4), default_threshold(5)
    (3, 3)
    """
    return n_clients // 2 + 1
