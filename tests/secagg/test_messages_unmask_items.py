"""Unmask answers unpacked in one call (issue 22): ``UnmaskMessage.from_bytes``
and ``parse_unmask_answers`` read the items of answers of every size (one
cached layout up to 1024 items, item by item beyond) exactly as the format
says.  Expected fields come from ``struct.iter_unpack`` of the body written
out in this file (``items_of``), never from the parser under test.
"""
import random
import struct

import pytest

from pyfkm.secagg import MessageFormatError, UnmaskMessage
from pyfkm.secagg._framing import TAG_BYTES
from pyfkm.secagg._messages import HEADER_BYTES, parse_unmask_answers

RUN = bytes(range(16))


def answer(sender, n, seed, kinds=None):
    rng = random.Random(seed)
    owners = tuple(sorted(rng.sample(range(5000), n)))
    kinds = tuple(rng.randrange(2) for _ in owners) if kinds is None else kinds
    shares = tuple(rng.randbytes(33) for _ in owners)
    msg = UnmaskMessage._signed_by(RUN, 3, sender, owners, kinds, shares, lambda b: b"\x07" * 16)
    return msg.to_bytes(), (owners, kinds, shares)


def items_of(data):
    body = data[HEADER_BYTES:len(data) - TAG_BYTES]
    (n,) = struct.unpack_from("<I", body)
    rows = list(struct.iter_unpack("<IB33s", body[4:]))
    assert len(rows) == n
    return tuple(tuple(c) for c in zip(*rows)) if rows else ((), (), ())


# ---------------------------------------------------------------- errors first

@pytest.mark.parametrize("n", [3, 1025])
def test_bad_kind_or_order_refused_at_every_size(n):
    data, (owners, kinds, shares) = answer(1, n, n)
    k = HEADER_BYTES + 4 + 4          # the first item's kind (items: owner u4, kind u1, share)
    bad = data[:k] + b"\x02" + data[k + 1:]
    with pytest.raises(MessageFormatError, match="share kinds"):
        UnmaskMessage.from_bytes(bad)
    assert parse_unmask_answers([bad], RUN, 3) is None
    first, second = HEADER_BYTES + 4, HEADER_BYTES + 4 + 38
    swapped = data[:first] + data[second:second + 38] + data[first:second] + data[second + 38:]
    with pytest.raises(MessageFormatError):
        UnmaskMessage.from_bytes(swapped)
    assert parse_unmask_answers([swapped], RUN, 3) is None


# ---------------------------------------------------------------- equalities

@pytest.mark.parametrize("n", [1, 2, 35, 1024, 1025, 1500])
def test_items_read_as_the_format_says(n):
    data, fields = answer(7, n, n)
    assert items_of(data) == fields
    msg = UnmaskMessage.from_bytes(data)
    assert (msg.owners, msg.kinds, msg.shares) == fields
    assert msg.to_bytes() == data
    parsed = parse_unmask_answers([data, answer(8, n, n + 1)[0]], RUN, 3)
    assert [p[0] for p in parsed] == [7, 8]
    assert parsed[0][1:4] == fields
    assert parsed[0][4] == data[:-TAG_BYTES] and parsed[0][5] == data[-TAG_BYTES:]
