"""Tests of SCMA's streams (pyfkm.secagg.scma._crypto): rejection-mapped
ChaCha20 keystreams checked against the ``cryptography`` package, batched
stream accumulation.  The oracles are described in tests/_helpers/scma.py."""
import struct

import pytest

import numpy as np

from pyfkm.field import DEFAULT_PRIME
from pyfkm.secagg.scma import _crypto
from _helpers.scma import P31, as_ints, make_params, make_run, share_round


def test_mask_stream_is_rejection_mapped_chacha20_keystream():
    # Oracle: the `cryptography` ChaCha20 keystream (16-byte nonce = block
    # counter 0 || round u64 LE || tag), read as little-endian 64-bit words,
    # words >= the largest multiple of p below 2^64 dropped, the rest mod p.
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    key = bytes(range(1, 33))
    for p, n, round_ in [(DEFAULT_PRIME, 300, 7), (13, 50, 0), ((1 << 63) - 25, 40, 2 ** 40)]:
        nonce = struct.pack("<IQ", 0, round_) + b"SCMA"
        enc = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor()
        words = [int.from_bytes(enc.update(bytes(8)), "little") for _ in range(4 * n)]
        lim = ((1 << 64) // p) * p
        want = [w % p for w in words if w < lim][:n]
        got = _crypto.field_stream(key, round_, b"SCMA", n, p)
        assert got.tolist() == want
        acc = np.full(n, 5, dtype=np.uint64)
        _crypto.add_stream(acc, key, round_, b"SCMA", p, negate=True)
        assert acc.tolist() == [(5 - w) % p for w in want]


def test_client_masks_are_chacha20_streams_of_the_round_keys():
    # The whole mask of a client, from the `cryptography` keystream directly
    # (not _crypto): self seed and pair keys of the round (client._m), nonce
    # round || "SCMA", signs + for the smaller id.
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    params = make_params(3, 7, 4, modulus=P31)
    server, clients = make_run(params, [3, 8, 9])
    rm = share_round(server, clients)
    p, W = params.modulus, params.message_words
    lim = ((1 << 64) // p) * p

    def stream(key):
        enc = Cipher(algorithms.ChaCha20(key, struct.pack("<IQ", 0, rm.round) + b"SCMA"),
                     mode=None).encryptor()
        out = []
        while len(out) < W:
            w = int.from_bytes(enc.update(bytes(8)), "little")
            if w < lim:
                out.append(w % p)
        return out

    for i, c in clients.items():
        b, keys = c._m.mask_keys(rm.round)
        want = stream(b)
        for v, k in keys.items():
            s = stream(k)
            want = [(a + (x if i < v else -x)) % p for a, x in zip(want, s)]
        assert as_ints(c.mask(rm.round)) == want


def test_add_streams_equals_one_add_stream_per_key():
    # Oracle: add_stream (itself checked against the `cryptography` keystream
    # above), key by key.  Lengths around the one-block path (<= 64 words)
    # and the buffered path; a prime just above 2**62 rejects ~25% of the
    # words, so the two paths must consume the stream identically.
    from pyfkm.field import prev_prime

    rng = np.random.default_rng(76)
    for p in (DEFAULT_PRIME, 13, prev_prime(2 ** 62 + 10 ** 6), (1 << 63) - 25):
        for n in (0, 1, 5, 8, 9, 63, 64, 65, 100, 600, 5000):
            keys = [rng.bytes(32) for _ in range(int(rng.choice([1, 3, 8, 9, 20])))]
            neg = rng.integers(0, 2, size=len(keys)).astype(bool)
            want = np.zeros(n, dtype=np.uint64)
            for k, g in zip(keys, neg):
                _crypto.add_stream(want, k, 77, b"SCMA", p, negate=bool(g))
            got = _crypto.add_streams(np.zeros(n, dtype=np.uint64), keys, neg, 77, b"SCMA", p)
            assert np.array_equal(got, want), (p, n)
            arr = np.frombuffer(b"".join(keys), np.uint8).reshape(-1, 32)
            got2 = _crypto.add_streams(np.zeros(n, dtype=np.uint64), arr, neg, 77, b"SCMA", p)
            assert np.array_equal(got2, want), (p, n)


def test_add_streams_rounds_equals_add_streams_per_round():
    # Oracle: add_streams (checked against add_stream above), nonce by nonce.
    from pyfkm._core import _field
    from pyfkm.field import prev_prime

    rng = np.random.default_rng(81)
    for p in (DEFAULT_PRIME, 13, prev_prime(2 ** 62 + 10 ** 6)):
        for n in (0, 1, 5, 9, 64, 65, 300):
            keys = np.frombuffer(rng.bytes(32 * 7), np.uint8).reshape(7, 32)
            neg = rng.integers(0, 2, size=7).astype(np.uint8)
            rounds = [3, 4, 9, 2 ** 40]
            nonces = np.frombuffer(b"".join(struct.pack("<Q", r) + b"SCMA" for r in rounds),
                                   np.uint8).reshape(len(rounds), 12)
            got = _field.add_streams_rounds(np.zeros((len(rounds), n), dtype=np.uint64), keys,
                                            neg, nonces, _crypto._stream_limit(p), p)
            for k, r in enumerate(rounds):
                want = _crypto.add_streams(np.zeros(n, dtype=np.uint64), keys, neg, r,
                                           b"SCMA", p)
                assert np.array_equal(got[k], want), (p, n, r)


def test_stream_accumulate_limit_zero_keeps_every_word():
    # The kernel's contract: lim = 0 stands for 2**64 (no word rejected).
    # Oracle: Python ints, every word reduced mod p, added or subtracted.
    from pyfkm._core import _field
    p = DEFAULT_PRIME
    rng = np.random.default_rng(3)
    words = rng.integers(0, 2**64, size=12, dtype=np.uint64, endpoint=False)
    words[0] = np.uint64(2**64 - 1)
    raw = words.astype("<u8").tobytes()
    for negate in (False, True):
        acc = np.full(12, 7, dtype=np.uint64)
        filled = _field.stream_accumulate(raw, 0, negate, acc, 0, p)
        sign = -1 if negate else 1
        assert filled == 12
        assert acc.tolist() == [(7 + sign * int(w)) % p for w in words.tolist()]
    # and a real limit rejects the words at or above it
    lim = ((1 << 64) // p) * p
    acc = np.zeros(12, dtype=np.uint64)
    filled = _field.stream_accumulate(raw, lim, False, acc, 0, p)
    kept = [int(w) % p for w in words.tolist() if int(w) < lim]
    assert filled == len(kept) and acc[:filled].tolist() == kept


def test_hash_coefficients_are_the_streams_words_shared_read_only():
    # the kept coefficients equal the stream they come from, for every
    # (seed, d, p, which), and cannot be altered by one codec for the others
    import hashlib

    from pyfkm.secagg.scma._crypto import HASH_TAG, field_stream, hash_coefficients
    for seed, d, p, which in [(b"\x01" * 16, 10, 2 ** 61 - 1, 0), (b"\x01" * 16, 10, 2 ** 61 - 1, 1),
                              (bytearray(b"\x02" * 16), 3, 101, 0)]:
        key = hashlib.sha256(b"pyfkm/scma/hash/v1" + bytes(seed)).digest()
        want = field_stream(key, which, HASH_TAG, d + 1, p)
        for _ in range(2):
            a0, a = hash_coefficients(seed, d, p, which)
            assert a0 == int(want[0]) and a.tolist() == want[1:].tolist()
            assert not a.flags.writeable
            with pytest.raises(ValueError):
                a[0] = 1
