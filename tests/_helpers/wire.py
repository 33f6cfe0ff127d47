"""Hand-built wire bytes and constructor verdicts for the parser tests of
tests/secagg (issue 22): messages are built with struct, not with the
classes' to_bytes, so that a parser is checked against the format itself."""
import struct

from pyfkm.exceptions import InvalidInputError
from pyfkm.secagg._framing import VERSION

RUN = bytes(range(16))
SERVER = 0xFFFFFFFF


def header(kind, round_, sender=SERVER):
    """The 44-byte message header: magic, version, kind, flags, run id,
    round, sender and modulus 0."""
    return struct.pack("<4sBBH16sQIQ", b"PFKM", VERSION, kind, 0, RUN, round_, sender, 0)


def constructor_error(make):
    """The message of the InvalidInputError that ``make()`` raises, or None."""
    try:
        make()
    except InvalidInputError as e:
        return str(e)
    return None
