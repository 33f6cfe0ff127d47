"""Tests of MSA's messages (pyfkm.secagg.msa._messages): round trips,
malformed bytes, semantic checks.  The oracles are described in
tests/_helpers/msa.py."""
import struct

import numpy as np
import pytest

from pyfkm.exceptions import InvalidInputError, MessageFormatError
from pyfkm.secagg._framing import VERSION
from pyfkm.secagg.msa import (AggregateMessage, GroupKeyMessage, MaskedVectorMessage,
                              MsaRosterMessage)
from _helpers.msa import M64, RUN


# ------------------------------------------------------------ messages

def _examples():
    w = np.array([0, 1, M64 - 1, 1 << 63], dtype=np.uint64)
    return [
        MsaRosterMessage(RUN, 7, 16, (0, 3, 9), (b"a" * 32, b"b" * 32, b"c" * 32), 2, 2,
                         b"s" * 32),
        GroupKeyMessage(RUN, 0, 3, b"n" * 12, b"x" * 48),
        MaskedVectorMessage(RUN, 5, 3, w, b"t" * 16),
        AggregateMessage(RUN, 5, w, (0, 3, 9)),
    ]


@pytest.mark.parametrize("msg", _examples(), ids=lambda m: type(m).__name__)
def test_message_round_trip(msg):
    data = msg.to_bytes()
    back = type(msg).from_bytes(data)
    assert back == msg
    assert back.to_bytes() == data


@pytest.mark.parametrize("msg", _examples(), ids=lambda m: type(m).__name__)
def test_message_rejects_malformed_bytes(msg):
    cls, data = type(msg), msg.to_bytes()
    for bad in (data[:-1], data + b"\0", data[:10], b"XXXX" + data[4:],
                data[:4] + bytes([VERSION + 1]) + data[5:],            # version
                data[:5] + bytes([99]) + data[6:],           # type
                data[:6] + b"\1\0" + data[8:]):              # reserved bits
        with pytest.raises(MessageFormatError):
            cls.from_bytes(bad)
    with pytest.raises(MessageFormatError):
        cls.from_bytes("not bytes")
    for other in _examples():                                # another type's bytes
        if type(other) is not cls:
            with pytest.raises(MessageFormatError):
                cls.from_bytes(other.to_bytes())


def test_message_semantic_checks():
    m = MaskedVectorMessage(RUN, 5, 3, np.zeros(2, np.uint64)).to_bytes()
    # masked vector claiming the server as sender
    with pytest.raises(MessageFormatError):
        MaskedVectorMessage.from_bytes(m[:32] + struct.pack("<I", 0xFFFFFFFF) + m[36:])
    # round 0 is not a round
    with pytest.raises(MessageFormatError):
        MaskedVectorMessage.from_bytes(m[:24] + struct.pack("<Q", 0) + m[32:])
    # a modulus where there is none
    with pytest.raises(MessageFormatError):
        MaskedVectorMessage.from_bytes(m[:36] + struct.pack("<Q", 7) + m[44:])
    with pytest.raises(InvalidInputError, match="tag"):
        MaskedVectorMessage(RUN, 5, 3, np.zeros(2, np.uint64), b"short")
    a = AggregateMessage(RUN, 5, np.zeros(2, np.uint64), (0, 1)).to_bytes()
    with pytest.raises(MessageFormatError):                  # not from the server
        AggregateMessage.from_bytes(a[:32] + struct.pack("<I", 1) + a[36:])
    with pytest.raises(MessageFormatError):                  # survivors not increasing
        AggregateMessage.from_bytes(a[:48] + struct.pack("<II", 1, 0) + a[56:])
    with pytest.raises(InvalidInputError, match="survivors"):
        AggregateMessage(RUN, 5, np.zeros(2, np.uint64), ())
    # roster: ids not increasing; threshold above the clients; odd degree
    r = MsaRosterMessage(RUN, 7, 16, (0, 3), (b"a" * 32, b"b" * 32), 2, 0, b"s" * 32).to_bytes()
    first_id = 44 + 13 + 32 + 4
    with pytest.raises(MessageFormatError):
        MsaRosterMessage.from_bytes(r[:first_id] + struct.pack("<I", 5) + r[first_id + 4:])
    with pytest.raises(MessageFormatError, match="threshold"):
        MsaRosterMessage.from_bytes(r[:49] + struct.pack("<I", 3) + r[53:])
    with pytest.raises(MessageFormatError, match="degree"):
        MsaRosterMessage.from_bytes(r[:53] + struct.pack("<I", 3) + r[57:])
    with pytest.raises(InvalidInputError):
        MsaRosterMessage(RUN, 0, 16, (0,), (b"a" * 32,))
