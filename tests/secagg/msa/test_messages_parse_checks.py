"""MSA's masked vector and aggregate parsers against the checked constructors
(issue 22): the parsers check the fields inline instead of calling the
constructors; on hand-built wire bytes (struct, not the classes' to_bytes)
with every field in and out of range, a parser refuses exactly when the
constructor refuses, with the constructor's words, and otherwise returns the
constructor's message with read-only words."""
import itertools
import struct

import numpy as np
import pytest

from pyfkm.exceptions import MessageFormatError
from pyfkm.secagg.msa import AggregateMessage, MaskedVectorMessage
from _helpers.wire import RUN, SERVER, constructor_error, header



def words(w):
    return struct.pack(f"<I{len(w)}Q", len(w), *w)


ROUNDS = (0, 1, 7, (1 << 64) - 1)
WORDS = ((), (5,), (0, (1 << 64) - 1, 1 << 63))


# ---------------------------------------------------------------- errors first

@pytest.mark.parametrize("round_, ids", itertools.product(
    ROUNDS, [(), (0,), (0, 3, 9), (3, 3), (4, 2), (SERVER,), (1, SERVER), (SERVER, 1),
             (SERVER - 1,)]))
@pytest.mark.parametrize("w", WORDS)
def test_aggregate_parser_refuses_as_the_constructor(round_, ids, w):
    data = (header(14, round_, SERVER) + struct.pack(f"<I{len(ids)}I", len(ids), *ids)
            + words(w))
    err = constructor_error(lambda: AggregateMessage(RUN, round_, np.array(w, np.uint64), ids))
    if err is None:
        got = AggregateMessage.from_bytes(data)
        assert got == AggregateMessage(RUN, round_, np.array(w, np.uint64), ids)
        assert got.to_bytes() == data and not got.payload.flags.writeable
        assert got.payload.dtype == np.uint64 and got.survivors == tuple(ids)
    else:
        with pytest.raises(MessageFormatError) as e:
            AggregateMessage.from_bytes(data)
        assert str(e.value) == f"invalid aggregate message: {err}"


@pytest.mark.parametrize("round_, sender", itertools.product(ROUNDS, (0, 5, SERVER - 1)))
@pytest.mark.parametrize("w", WORDS)
def test_masked_vector_parser_refuses_as_the_constructor(round_, sender, w):
    data = header(13, round_, sender) + words(w) + b"t" * 16
    err = constructor_error(
        lambda: MaskedVectorMessage(RUN, round_, sender, np.array(w, np.uint64), b"t" * 16))
    if err is None:
        got = MaskedVectorMessage.from_bytes(data)
        assert got == MaskedVectorMessage(RUN, round_, sender, np.array(w, np.uint64),
                                          b"t" * 16)
        assert got.to_bytes() == data and got.signed_bytes() == data[:-16]
        assert not got.payload.flags.writeable and got.payload.dtype == np.uint64
        with pytest.raises(ValueError):
            got.payload.setflags(write=True)       # a view of immutable bytes
    else:
        with pytest.raises(MessageFormatError) as e:
            MaskedVectorMessage.from_bytes(data)
        assert str(e.value) == f"invalid masked vector message: {err}"


def test_aggregate_parser_lengths():
    good = header(14, 3, SERVER) + struct.pack("<II", 1, 4) + words((1, 2))
    assert AggregateMessage.from_bytes(good).payload.tolist() == [1, 2]
    cut = good[:44 + 4 + 4]                                      # no word count
    with pytest.raises(MessageFormatError, match="^truncated aggregate message$"):
        AggregateMessage.from_bytes(cut)
    # the lengths named as if the survivors were cut out (44 + 4 + 16 expected)
    with pytest.raises(MessageFormatError, match="^truncated message: 63 bytes, expected 64$"):
        AggregateMessage.from_bytes(good[:-1])
    with pytest.raises(MessageFormatError, match="^oversized message: 65 bytes, expected 64$"):
        AggregateMessage.from_bytes(good + b"\0")
    with pytest.raises(MessageFormatError, match="^truncated aggregate message$"):
        AggregateMessage.from_bytes(header(14, 3, SERVER) + struct.pack("<I", 9))


def test_parsed_words_of_a_bytearray_are_a_read_only_copy():
    data = bytearray(header(13, 2, 1) + words((7, 8)) + b"t" * 16)
    got = MaskedVectorMessage.from_bytes(data)
    data[48:56] = bytes(8)                                      # the caller's buffer changes
    assert got.payload.tolist() == [7, 8] and not got.payload.flags.writeable


# ---------------------------------------------------------------- the server's own

def test_server_built_messages_equal_the_checked_constructors():
    from pyfkm.secagg import setup_msa
    from pyfkm.secagg.msa import msa_key_batch
    from pyfkm.secagg._messages import InputRequest, RoundMessage
    server, clients = setup_msa(3, 2)
    msa_key_batch(server, clients, 2)
    r = server.start_round()
    assert r == RoundMessage(r.run_id, r.round, r.participants)
    assert RoundMessage.from_bytes(r.to_bytes()) == r
    for c in clients:
        c.enter_round(r)
    req = server.request_inputs()
    assert req == InputRequest(req.run_id, req.round)
    for c, v in zip(clients, ([1.0, 2.0], [3.0, 4.0], [5.0, 6.0])):
        server.receive(MaskedVectorMessage.from_bytes(c.respond(req, v).to_bytes()))
    from pyfkm.secagg._messages import UnmaskMessage, UnmaskRequest
    ureq = UnmaskRequest.from_bytes(server.unmask_request().to_bytes())
    for c in clients:
        server.receive_unmask(UnmaskMessage.from_bytes(c.unmask_shares(ureq).to_bytes()))
    agg = server.finish_round()
    assert agg == AggregateMessage(agg.run_id, agg.round, agg.payload, agg.survivors)
    assert not agg.payload.flags.writeable
    assert clients[1].unmask(AggregateMessage.from_bytes(agg.to_bytes())).tolist() == [9.0, 12.0]


# ---------------------------------------------------------------- copies

@pytest.mark.parametrize("how", ["pickle", "deepcopy", "copy"])
def test_copies_keep_read_only_words_that_agree_with_the_signed_bytes(how):
    """A parsed masked vector keeps the bytes its tag covers beside a view
    of its words: a pickle or copy must not give back words that can change
    under those kept bytes (review of issue 22's fifth round)."""
    import copy
    import pickle
    data = header(13, 3, 7) + words([1, 2, 3]) + bytes(range(16))
    parsed = MaskedVectorMessage.from_bytes(data)
    agg = AggregateMessage(RUN, 2, [5, 6], (0, 4))
    for msg in (parsed, agg):
        dup = {"pickle": lambda m: pickle.loads(pickle.dumps(m)),
               "deepcopy": copy.deepcopy, "copy": copy.copy}[how](msg)
        assert dup == msg and dup.to_bytes() == msg.to_bytes()
        assert not dup.payload.flags.writeable
        with pytest.raises(ValueError):
            dup.payload[0] = 999
    # the kept signed bytes are what the fields serialize to
    dup = pickle.loads(pickle.dumps(parsed))
    fresh = MaskedVectorMessage(dup.run_id, dup.round, dup.sender, dup.payload.copy(), dup.tag)
    assert dup.signed_bytes() == fresh.signed_bytes() == data[:-16]
