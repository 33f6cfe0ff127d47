"""Oracles and round runners shared by the MSA tests (tests/secagg/msa/).

Oracles: Python integers mod 2**64, a pure-Python ChaCha20 block function
(RFC 8439, checked against the RFC's test vector), exact rationals for the
fixed-point rounding, scipy's chi-square quantiles for the noise variances.

Every key of a run comes from the OS (no seed reaches any of them), so the
tests check properties that hold for every draw: exact sums, cancellation
of the masks against the oracle streams, refusals, and variances within
bounds whose false-alarm rate is stated (1e-6 per test) together with the
power to see the smallest error of interest.
"""
import struct
from fractions import Fraction

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from pyfkm.secagg._keys import raw_private
from pyfkm.secagg._messages import (
    InputRequest,
    RoundMessage,
    ShareBundle,
    ShareMessage,
    UnmaskMessage,
    UnmaskRequest,
)
from pyfkm.secagg.msa import AggregateMessage, MaskedVectorMessage


M64 = 1 << 64
RUN = bytes(range(16))


# ------------------------------------------------------------ oracle: ChaCha20

def rotl(v, c):
    return ((v << c) & 0xFFFFFFFF) | (v >> (32 - c))


def qr(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = rotl(s[b] ^ s[c], 7)


def chacha20_block(key, counter, nonce12):
    """RFC 8439 section 2.3, written from the RFC."""
    const = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
    st = const + list(struct.unpack("<8I", key)) + [counter] + list(struct.unpack("<3I", nonce12))
    w = st[:]
    for _ in range(10):
        qr(w, 0, 4, 8, 12); qr(w, 1, 5, 9, 13); qr(w, 2, 6, 10, 14); qr(w, 3, 7, 11, 15)
        qr(w, 0, 5, 10, 15); qr(w, 1, 6, 11, 12); qr(w, 2, 7, 8, 13); qr(w, 3, 4, 9, 14)
    return struct.pack("<16I", *[(a + b) & 0xFFFFFFFF for a, b in zip(w, st)])


def oracle_stream(key, round_, tag, n):
    nonce = struct.pack("<Q", round_) + tag
    raw = b"".join(chacha20_block(key, c, nonce) for c in range((8 * n + 63) // 64))
    return [int.from_bytes(raw[8 * i:8 * i + 8], "little") for i in range(n)]


# ------------------------------------------------------------ oracle: fixed-point sums

def fixed(x, scale_bits=16):
    """round(x * 2**scale_bits), half to even, with exact rationals."""
    return round(Fraction(float(x)) * 2 ** scale_bits)


def grid(decoded, scale_bits=16):
    """A decoded sum in grid units (Python ints; exact below 2**53)."""
    return [int(v) for v in np.ldexp(decoded, scale_bits)]


# ------------------------------------------------------------ round helpers

def open_round(server, clients):
    """Steps 1-2 of a round (every message through its bytes); the input request."""
    rmsg = RoundMessage.from_bytes(server.start_round().to_bytes())
    for c in clients:
        server.receive_shares(ShareMessage.from_bytes(c.share_keys(rmsg).to_bytes()))
    for c in clients:
        c.receive_shares(ShareBundle.from_bytes(server.bundle(c.client_id).to_bytes()))
    return InputRequest.from_bytes(server.request_inputs().to_bytes())


def send(server, msg):
    server.receive(MaskedVectorMessage.from_bytes(msg.to_bytes()))


def close_round(server, clients, segments=()):
    """Step 4 for the survivors the server names; the aggregate broadcast."""
    ureq = UnmaskRequest.from_bytes(server.unmask_request().to_bytes())
    for c in clients:
        if c.client_id in ureq.survivors:
            server.receive_unmask(UnmaskMessage.from_bytes(c.unmask_shares(ureq).to_bytes()))
    return AggregateMessage.from_bytes(server.finish_round(segments).to_bytes())


# ------------------------------------------------------------ no client secret at the server

def server_bytes(obj, strict=True):
    """Every byte string reachable from ``obj`` through ``vars()``, containers
    and arrays (ints as 32- and 64-byte little- and big-endian strings,
    private keys as their raw bytes); with ``strict``, raises on an opaque
    object that could hide key material (an AEAD or a private key it cannot
    read) -- a client holds its channels' AEADs, the server must hold none."""
    out, seen = [], set()

    def walk(o):
        if id(o) in seen:
            return
        seen.add(id(o))
        if isinstance(o, (bytes, bytearray, memoryview)):
            out.append(bytes(o))
        elif isinstance(o, np.ndarray):
            out.append(np.ascontiguousarray(o).tobytes())
        elif isinstance(o, bool) or o is None or isinstance(o, (float, str, np.generic)):
            pass
        elif isinstance(o, int):
            if o.bit_length() > 64:
                for n in (32, 33, 64):
                    if o.bit_length() <= 8 * n:
                        out.extend([o.to_bytes(n, "little"), o.to_bytes(n, "big")])
        elif isinstance(o, X25519PrivateKey):
            out.append(raw_private(o))
        elif isinstance(o, dict):
            for k, v in o.items():
                walk(k)
                walk(v)
        elif isinstance(o, (list, tuple, set, frozenset)):
            for v in o:
                walk(v)
        elif hasattr(o, "__dict__"):
            walk(vars(o))
        elif hasattr(type(o), "__slots__"):
            for s in type(o).__slots__:
                walk(getattr(o, s, None))
        elif strict:
            raise AssertionError(f"an opaque {type(o).__name__} in the server's state")

    walk(obj)
    return out
