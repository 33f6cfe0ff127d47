"""Tests of pyfkm.secagg._keys.is_small_order: the keys it refuses are
exactly those for which X25519 gives no shared secret.

Oracle: the ``cryptography`` package's X25519 exchange (OpenSSL), which
fails on an all-zero shared secret, on every encoding near the small-order
u-coordinates, every non-canonical encoding and random keys.
"""
import os

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from pyfkm.secagg._keys import is_small_order

P = 2**255 - 19


def exchange_fails(key, value):
    try:
        key.exchange(X25519PublicKey.from_public_bytes(value.to_bytes(32, "little")))
        return False
    except ValueError:
        return True


def test_small_order_keys_are_exactly_those_without_a_shared_secret():
    keys = [X25519PrivateKey.generate() for _ in range(2)]
    # the integers near 0, 1 and p - 1, the non-canonical ones (p .. 2**255 - 1)
    # and the known order-8 points' neighbourhoods, each with and without bit 255
    u8 = [325606250916557431795983626356110631294008115727848805560023387167927233504,
          39382357235489614581723060781553021112529911719440698176882885853963445705823]
    values = set(range(64)) | {P - i for i in range(1, 64)} | {P + i for i in range(19)}
    for u in u8:
        values |= {u + d for d in range(-3, 4)}
    values |= {v | 1 << 255 for v in values}
    refused = 0
    for v in values:
        fails = [exchange_fails(k, v) for k in keys]
        assert fails[0] == fails[1] == is_small_order(v.to_bytes(32, "little")), v
        refused += fails[0]
    assert refused == 14          # 0, 1, p - 1, the two of order 8, p, p + 1; bit 255 either way


def test_random_keys_are_not_small_order():
    key = X25519PrivateKey.generate()
    for _ in range(500):
        b = os.urandom(32)
        assert not is_small_order(b)
        key.exchange(X25519PublicKey.from_public_bytes(b))
