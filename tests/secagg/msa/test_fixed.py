"""Tests of MSA's fixed point and mask streams (pyfkm.secagg.msa._fixed)
against exact rationals and a pure-Python ChaCha20 (RFC 8439).  The oracles
are described in tests/_helpers/msa.py."""
import numpy as np
import pytest

from pyfkm.exceptions import CapacityError, InvalidInputError
from pyfkm.secagg.msa import _fixed
from pyfkm.secagg.msa._fixed import (MSA_TAG, OUTPUT_TAG, decode_fixed, encode_fixed,
                                     encoding_limit, mask_stream)
from _helpers.msa import M64, chacha20_block, fixed, oracle_stream


def test_oracle_chacha_matches_rfc8439_vector():
    key = bytes(range(32))
    nonce = bytes.fromhex("000000090000004a00000000")
    out = chacha20_block(key, 1, nonce)
    assert out[:16].hex() == "10f1e7e4d13b5915500fdd1fa32071c4"   # RFC 8439, 2.3.2


# ------------------------------------------------------------ errors first

def test_encode_rejects_nan():
    with pytest.raises(InvalidInputError, match="NaN"):
        encode_fixed([0.0, np.nan])


@pytest.mark.parametrize("x", [2.0 ** 46 + 1, -(2.0 ** 46) - 1, np.inf, -np.inf, 1e300])
def test_encode_overflow_raises_instead_of_wrapping(x):
    with pytest.raises(CapacityError):
        encode_fixed([0.5, x])


def test_encode_limit_boundary():
    assert int(encode_fixed([2.0 ** 46])[0]) == 1 << 62
    with pytest.raises(CapacityError):
        encode_fixed([2.0 ** 46 + 2.0 ** -6])   # next float above the limit
    assert encoding_limit(4) == (1 << 62) // 4


# ------------------------------------------------------------ fixed point

def test_fixed_point_round_trip_matches_exact_rounding():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 1e3, 500), rng.uniform(-1, 1, 500),
                        [0.0, -0.0, 2.0 ** -17, -(2.0 ** -17), 3 * 2.0 ** -17, 2.0 ** 40]])
    w = encode_fixed(x)
    for xi, wi in zip(x, w):
        assert int(wi) == fixed(xi) % M64                # two's complement, half to even
    back = decode_fixed(w)
    assert np.all(np.abs(back - x) <= 2.0 ** -17)


# ------------------------------------------------------------ masks

def test_mask_stream_is_chacha20_keystream():
    key = bytes(range(100, 132))
    got = mask_stream(key, 7, MSA_TAG, 20)
    assert [int(v) for v in got] == oracle_stream(key, 7, MSA_TAG, 20)


def test_mask_stream_fallback_is_the_same_keystream(monkeypatch):
    key = bytes(range(7, 39))
    fast = [int(v) for v in mask_stream(key, 3, OUTPUT_TAG, 11)]
    monkeypatch.setattr(_fixed, "_ring", None)
    slow = [int(v) for v in _fixed.mask_stream(key, 3, OUTPUT_TAG, 11)]
    assert fast == slow == oracle_stream(key, 3, OUTPUT_TAG, 11)
