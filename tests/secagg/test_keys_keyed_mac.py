"""KeyedMac (pyfkm.secagg._keys): the keyed HMAC-SHA256 state the clients
keep per run gives the bytes of HMAC-SHA256 computed from scratch by the
standard library (the oracle), call after call."""
import hashlib
import hmac
import os
import pickle
import struct

import pytest

from pyfkm.exceptions import ProtocolError
from pyfkm.secagg._keys import DATA_PREFIX, TAG_BYTES, KeyedMac, data_digest, mac


def oracle(key, data):
    return hmac.new(key, data, hashlib.sha256).digest()


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 1000])
def test_tags_are_truncated_hmac_sha256_every_call(n):
    key = os.urandom(32)
    km = KeyedMac(key)
    for _ in range(3):            # the keyed state is copied, never consumed
        data = os.urandom(n)
        assert km.tag(data) == oracle(key, data)[:TAG_BYTES] == mac(key, data)


def test_data_digest_absorbs_the_prefix_once():
    key = os.urandom(32)
    km = KeyedMac(key, DATA_PREFIX)
    for part in (b"", b"abc", os.urandom(880)):
        want = oracle(key, DATA_PREFIX + struct.pack("<Q", len(part)) + part)
        assert km.digest(part) == want == data_digest(key, part)
    assert KeyedMac(key).digest(b"abc") != data_digest(key, b"abc")   # the prefix matters


def test_check_refuses_a_wrong_tag_and_the_object_is_not_picklable():
    key = os.urandom(32)
    km = KeyedMac(key)
    km.check(b"msg", oracle(key, b"msg")[:TAG_BYTES], "client 1")
    with pytest.raises(ProtocolError, match="client 1"):
        km.check(b"msg", oracle(key, b"msh")[:TAG_BYTES], "client 1")
    with pytest.raises(ProtocolError):
        km.check(b"msg", oracle(os.urandom(32), b"msg")[:TAG_BYTES], "client 1")
    with pytest.raises(TypeError):
        pickle.dumps(km)
