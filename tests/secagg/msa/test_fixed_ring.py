"""The ring kernels behind MSA's words (csrc/fkm_ring.c through
pyfkm.secagg.msa._fixed and ._noise) against the arithmetic they replaced,
written out here in numpy: ``rint(ldexp(x, s))`` as int64 words, one
keystream per mask added or subtracted modulo 2**64 (a pure-Python ChaCha20,
tests/_helpers/msa.py), and the noise of ``NoiseStream.secure(key, round,
tag).discrete_gaussian(length, units)`` per segment.  Equal words, errors
raised as before, and a failed call changes nothing."""
import hashlib
import os
import struct

import numpy as np
import pytest

from pyfkm.core.noise import NoiseStream
from pyfkm.exceptions import CapacityError, InvalidInputError
from pyfkm.secagg.msa import _fixed, _noise
from pyfkm.secagg.msa._fixed import (MINUS, MSA_TAG, OUTPUT_TAG, PLUS, SELF_TAG, add_streams,
                                     encode_fixed, mask_stream)
from _helpers.msa import M64, oracle_stream

pytestmark = pytest.mark.skipif(_fixed._ring is None, reason="the kernels are not built")


def numpy_encode(x, scale_bits, limit):
    """The encoding before the kernel: numpy's rint(ldexp(.)), checked."""
    x = np.asarray(x, dtype=np.float64)
    if np.isnan(x).any():
        raise InvalidInputError("NaN")
    v = np.rint(np.ldexp(x, int(scale_bits)))
    if v.size and not float(np.abs(v).max()) <= limit:
        raise CapacityError("overflow")
    return v.astype(np.int64).view(np.uint64)


# ------------------------------------------------------------ encoding

@pytest.mark.parametrize("scale_bits", [0, 1, 16, 40, 62])
def test_encode_equals_numpy_rint_ldexp(scale_bits):
    rng = np.random.default_rng(scale_bits)
    lim = (1 << 62) // 3
    top = np.ldexp(float(lim), -scale_bits)
    x = np.concatenate([
        rng.uniform(-1, 1, 200) * top,                       # anywhere in range
        (rng.integers(-1000, 1000, 50) + 0.5) * 2.0 ** -scale_bits,   # exact halves
        [0.0, -0.0, 2.0 ** -1074, -(2.0 ** -1074), top, -top],
        np.array([0.5, -0.5, 1.5, -2.5, 3.5]) * 2.0 ** -scale_bits,
    ])
    got = encode_fixed(x, scale_bits, lim)
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, numpy_encode(x, scale_bits, lim))


@pytest.mark.parametrize("limit", [0, 1, 5, (1 << 62) // 6, (1 << 62) // 7, 1 << 62])
def test_encode_limit_is_compared_exactly(limit):
    # limits that are not floats: the largest encodable word is accepted, the
    # next one refused, as numpy's comparison of a float with an int does
    at = float(limit)
    below = np.nextafter(at, 0) if float(int(at)) > limit else at
    assert int(encode_fixed([below], 0, limit)[0]) <= limit
    above = float(limit) + max(1.0, np.spacing(float(limit)))
    with pytest.raises(CapacityError):
        encode_fixed([above], 0, limit)
    with pytest.raises(CapacityError):
        numpy_encode([above], 0, limit)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 1e300, 2.0 ** 63])
def test_encode_errors_as_numpy(bad):
    x = [0.25, bad, -1.0]
    with pytest.raises((InvalidInputError, CapacityError)) as got:
        encode_fixed(x, 16, 1 << 62)
    with pytest.raises((InvalidInputError, CapacityError)) as want:
        numpy_encode(x, 16, 1 << 62)
    assert type(got.value) is type(want.value)


def test_encode_nan_is_named_even_after_an_overflow():
    # the kernel stops at the first bad entry; the error is the numpy path's
    with pytest.raises(InvalidInputError, match="NaN"):
        encode_fixed([1e300, np.nan], 16)


def test_encode_other_shapes_and_scales_take_numpy():
    x = np.arange(6.0).reshape(2, 3) / 7
    np.testing.assert_array_equal(encode_fixed(x, 16), numpy_encode(x, 16, 1 << 62))
    np.testing.assert_array_equal(encode_fixed([0.25, -0.375], 63, 1 << 62),
                                  numpy_encode([0.25, -0.375], 63, 1 << 62))
    assert encode_fixed([], 16).shape == (0,)


# ------------------------------------------------------------ streams

def oracle_sum(acc, streams):
    """acc + sum of sign * keystream (pure-Python ChaCha20), modulo 2**64."""
    out = [int(v) for v in acc]
    for key, round_, tag, sign in streams:
        for i, w in enumerate(oracle_stream(key, round_, tag, len(out))):
            out[i] = (out[i] + sign * w) % M64
    return np.array(out, dtype=np.uint64)


@pytest.mark.parametrize("n", [1, 7, 64, 65, 130])
def test_add_streams_equals_signed_keystreams(n):
    rng = np.random.default_rng(n)
    acc = rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2)
    streams = [(os.urandom(32), 5, SELF_TAG, 1), (os.urandom(32), 5, MSA_TAG, -1),
               (os.urandom(32), 5, MSA_TAG, 1), (os.urandom(32), 9, OUTPUT_TAG, -1)]
    want = oracle_sum(acc, streams)
    got = acc.copy()
    add_streams(got, b"".join(s[0] for s in streams),
                b"".join(struct.pack("<Q", s[1]) + s[2] for s in streams),
                b"".join(PLUS if s[3] > 0 else MINUS for s in streams))
    np.testing.assert_array_equal(got, want)
    # the same words as mask_stream added and subtracted one by one
    one = acc.copy()
    for key, round_, tag, sign in streams:
        s = mask_stream(key, round_, tag, n)
        one = one + s if sign > 0 else one - s
    np.testing.assert_array_equal(got, one)


def test_add_streams_refuses_bad_signs_and_sizes_unchanged():
    acc = np.arange(5, dtype=np.uint64)
    key, nonce = os.urandom(32), bytes(12)
    with pytest.raises(Exception):
        add_streams(acc, key * 2, nonce * 2, PLUS + b"\x02")
    np.testing.assert_array_equal(acc, np.arange(5))
    with pytest.raises(ValueError):
        add_streams(acc, key, nonce * 2, PLUS)
    with pytest.raises(ValueError):
        add_streams(acc, key * 2, nonce, PLUS + MINUS)
    np.testing.assert_array_equal(acc, np.arange(5))
    assert add_streams(acc, b"", b"", b"") is acc


# ------------------------------------------------------------ noise

SEGMENTS = ((40, 3.0, b"SUM"), (0, 1.0, b"NIL"), (7, 0.0, b"OFF"), (13, 0.5, b"CNT"))


def numpy_noise(key, segments, n_words, threshold, scale_bits, round_):
    """The noise before the kernel: one NoiseStream per segment, zeros for
    a zero scale."""
    parts = []
    for length, sigma, tag in segments:
        units = np.ldexp(sigma / np.sqrt(threshold), scale_bits)
        if units == 0:
            parts.append(np.zeros(length, np.int64))
            continue
        parts.append(NoiseStream.secure(key, round_, tag).discrete_gaussian(length, units))
    return np.concatenate(parts)


@pytest.mark.parametrize("threshold, round_", [(1, 1), (3, 77), (2, (1 << 32) - 1)])
def test_client_noise_equals_the_noise_streams(monkeypatch, threshold, round_):
    key = os.urandom(32)
    monkeypatch.setattr(_noise, "new_noise_key", lambda: key)
    got = _noise.client_noise(SEGMENTS, 60, threshold, 10, round_, 1 << 60).view(np.int64)
    want = numpy_noise(key, SEGMENTS, 60, threshold, 10, round_)
    np.testing.assert_array_equal(got, want)
    assert np.count_nonzero(got[:40]) > 20 and not got[40:47].any()
    # added in place to words: the same, modulo 2**64
    acc = np.full(60, M64 - 3, dtype=np.uint64)
    _noise.add_client_noise(acc, SEGMENTS, 60, threshold, 10, round_, 1 << 60)
    np.testing.assert_array_equal(acc, np.full(60, M64 - 3, np.uint64) + want.view(np.uint64))


def test_client_noise_keys_are_fresh_every_call():
    a = _noise.client_noise(SEGMENTS, 60, 1, 10, 4, 1 << 60)
    b = _noise.client_noise(SEGMENTS, 60, 1, 10, 4, 1 << 60)
    assert (a[:40] != b[:40]).any()


def test_noise_reaching_the_limit_raises_and_changes_nothing():
    acc = np.arange(60, dtype=np.uint64)
    with pytest.raises(CapacityError, match="capacity of one share"):
        _noise.add_client_noise(acc, SEGMENTS, 60, 1, 10, 3, 1)
    np.testing.assert_array_equal(acc, np.arange(60))


def test_noise_checks_as_the_stream_does():
    acc = np.zeros(4, np.uint64)
    with pytest.raises(InvalidInputError, match="without NUL"):
        _noise.add_client_noise(acc, ((4, 1.0, b"A\0"),), 4, 1, 10, 3, 1 << 60)
    with pytest.raises(InvalidInputError, match="cover"):
        _noise.add_client_noise(acc, ((3, 1.0, b"A"),), 4, 1, 10, 3, 1 << 60)
    with pytest.raises(InvalidInputError, match="words"):
        _noise.add_client_noise(np.zeros(5, np.uint64), ((4, 1.0, b"A"),), 4, 1, 10, 3,
                                1 << 60)
    assert not acc.any()


def test_ring_dgauss_kernel_refuses_bad_segments_unchanged():
    from pyfkm.core import kernels
    acc = np.arange(6, dtype=np.uint64)
    key = np.zeros(32, np.uint8)
    nonces = np.zeros(24, np.uint8)
    P, Q = np.array([4, 4], np.uint64), np.array([1, 1], np.uint64)
    for lengths in ([3, 2], [3, 4], [-1, 7]):
        status = kernels.noise.ring_add_dgauss(acc, key, nonces, np.array(lengths, np.int64),
                                               P, Q, 1 << 60)
        assert status != 0
        np.testing.assert_array_equal(acc, np.arange(6))
    assert kernels.noise.ring_add_dgauss(acc, key, nonces, np.array([3, 3], np.int64),
                                         P, np.array([1, 0], np.uint64), 1 << 60) != 0
    np.testing.assert_array_equal(acc, np.arange(6))


# ------------------------------------------------------------ the client's mask

def test_client_mask_equals_the_streams_one_by_one():
    from pyfkm.secagg.msa import setup_msa
    from _helpers.msa import open_round
    server, clients = setup_msa(3, 9)
    open_round(server, clients)
    for c in clients:
        rnd = c._input_round
        b, keys = c._m.mask_keys(rnd)
        want = mask_stream(b, rnd, SELF_TAG, 9).copy()
        for other, key in keys.items():
            s = mask_stream(key, rnd, MSA_TAG, 9)
            want = want + s if c.client_id < other else want - s
        out_key = hashlib.sha256(b"pyfkm/msa/output/v3" + c._group_key
                                 + struct.pack("<I", c.client_id)).digest()
        want += mask_stream(out_key, rnd, OUTPUT_TAG, 9)
        np.testing.assert_array_equal(c.mask(rnd), want)
