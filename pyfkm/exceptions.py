"""Exceptions raised by pyfkm.

Every error a user can cause by passing bad input is an :class:`InvalidInputError`,
which subclasses both :class:`PyfkmError` and :class:`ValueError`, so
``except ValueError`` keeps working.  An operation that raises leaves the
object it was called on unchanged.
"""

# pyfkm re-exports the errors users catch and lists them in its own literal
# __all__ (deliberate repetition)
__all__ = [
    "PyfkmError",
    "InvalidInputError",
    "InvalidIdError",
    "NotFittedError",
    "NumericalError",
    "CapacityError",
    "FieldError",
    "DecodeError",
    "ProtocolError",
    "MessageFormatError",
    "ModelFileError",
]


class PyfkmError(Exception):
    """Base class of all pyfkm errors."""


class InvalidInputError(PyfkmError, ValueError):
    """An argument (data, weights, parameter) is not acceptable."""


class InvalidIdError(InvalidInputError):
    """A point id to remove is unknown, repeated or already removed."""


class NotFittedError(PyfkmError, ValueError, AttributeError):
    """An estimator was used before ``fit``.

    When scikit-learn is loaded, the error raised is also an instance of
    ``sklearn.exceptions.NotFittedError`` (a subclass of both, made on
    first use), so that scikit-learn's tools (``check_is_fitted``,
    ``Pipeline``, ``check_estimator``) recognise it; pyfkm never imports
    scikit-learn itself.
    """

    def __new__(cls, *args, **kwargs):
        if cls is NotFittedError:
            cls = _with_sklearn_not_fitted() or cls
        return super().__new__(cls, *args, **kwargs)

    def __reduce__(self):
        return NotFittedError, self.args


_SKLEARN_NOT_FITTED: list[type] = []


def _with_sklearn_not_fitted():
    """NotFittedError combined with scikit-learn's, if scikit-learn is loaded."""
    import sys

    sk = sys.modules.get("sklearn.exceptions")
    if sk is None or not isinstance(getattr(sk, "NotFittedError", None), type):
        return None
    if not _SKLEARN_NOT_FITTED:
        _SKLEARN_NOT_FITTED.append(type("NotFittedError", (NotFittedError, sk.NotFittedError),
                                        {"__module__": __name__, "__doc__": NotFittedError.__doc__}))
    return _SKLEARN_NOT_FITTED[0]


class NumericalError(InvalidInputError):
    """The data make the computation overflow (e.g. squared distances reach inf)."""


class CapacityError(InvalidInputError, OverflowError):
    """An integer result (bin coordinate, flattened index) does not fit in 64 bits."""


class FieldError(InvalidInputError):
    """A prime-field argument is not acceptable: modulus not a prime below
    2**63, entries not reduced modulo p, nodes repeated or zero, a zero
    polynomial where a nonzero one is required."""


class DecodeError(PyfkmError, ValueError):
    """Decoding failed: the received data are not what an honest run could
    have produced (e.g. a polynomial that should split into distinct linear
    factors does not), or a hash collision was detected."""


class ProtocolError(PyfkmError, ValueError):
    """A secure-aggregation message or call breaks the protocol: unknown or
    duplicate sender, wrong run or round, a participant missing at the end
    of a round, a round answered twice.  The receiving object is unchanged."""


class MessageFormatError(ProtocolError):
    """Bytes that do not parse as a valid message: bad magic, version or
    type, truncated or trailing bytes, inconsistent lengths, field elements
    not reduced modulo the message's prime."""


class ModelFileError(InvalidInputError):
    """A saved model (a file or a pickle) cannot be used: unreadable, not a
    pyfkm model, truncated or damaged, of an unsupported version, or with a
    field inconsistent with the header or the other fields (the message
    names it).  Nothing read is trusted: every field is checked before use."""
