"""The input and unmask request parsers against the checked constructors
(issue 22): on hand-built wire bytes (struct, not the classes' to_bytes) with
every field in and out of range, a parser refuses exactly when the
constructor refuses, with the constructor's words, and otherwise returns the
constructor's message."""
import itertools
import struct

import pytest

from pyfkm.exceptions import MessageFormatError
from pyfkm.secagg._messages import InputRequest, RoundMessage, UnmaskRequest
from _helpers.wire import RUN, SERVER, constructor_error, header

ROUNDS = (0, 1, 5, (1 << 64) - 1)


@pytest.mark.parametrize("round_, dn, br", itertools.product(
    ROUNDS, (0, 1, SERVER - 1, SERVER), (0, 1, 4, 5, (1 << 64) - 1)))
def test_input_request_parser_refuses_as_the_constructor(round_, dn, br):
    data = header(7, round_) + struct.pack("<IQ", dn, br)
    err = constructor_error(lambda: InputRequest(RUN, round_, dn, br))
    if err is None:
        got = InputRequest.from_bytes(data)
        assert got == InputRequest(RUN, round_, dn, br) and got.to_bytes() == data
    else:
        with pytest.raises(MessageFormatError) as e:
            InputRequest.from_bytes(data)
        assert str(e.value) == f"invalid input request: {err}"


@pytest.mark.parametrize("round_, ids", itertools.product(
    ROUNDS, [(), (0,), (0, 3, 9), (3, 3), (4, 2), (SERVER,), (1, SERVER), (SERVER - 1,)]))
def test_unmask_request_parser_refuses_as_the_constructor(round_, ids):
    data = header(8, round_) + struct.pack(f"<I{len(ids)}I", len(ids), *ids)
    err = constructor_error(lambda: UnmaskRequest(RUN, round_, ids))
    if err is None:
        got = UnmaskRequest.from_bytes(data)
        assert got == UnmaskRequest(RUN, round_, ids) and got.to_bytes() == data
    else:
        with pytest.raises(MessageFormatError) as e:
            UnmaskRequest.from_bytes(data)
        assert str(e.value) == f"invalid unmask request: {err}"


@pytest.mark.parametrize("ids", [(0,), (0, 3, 9), (SERVER - 1,), tuple(range(0, 3000, 3))])
def test_round_and_unmask_request_bytes_by_hand(ids):
    n = len(ids)
    r = RoundMessage(RUN, 9, ids, 2, 4)
    assert r.to_bytes() == header(3, 9) + struct.pack(f"<I{n}IIQ", n, *ids, 2, 4)
    u = UnmaskRequest(RUN, 9, ids)
    assert u.to_bytes() == header(8, 9) + struct.pack(f"<I{n}I", n, *ids)
