"""Shamir secret sharing of 32-byte secrets over the integers modulo a 257-bit prime.

A client of a secure-aggregation round shares its round secrets (an X25519
private key, a self-mask seed) ``t``-out-of-``n`` among its holders; the
server reconstructs them from the shares that ``t`` or more holders reveal
(Bonawitz et al., CCS 2017; Bell et al., CCS 2020).  One round shares two
secrets to up to about a thousand holders.  The arithmetic is Python's
integers, small enough to audit, except on the two hot paths, which call
compiled kernels of :mod:`pyfkm.field.kernels` (csrc/fkm_bigmod.c) over the
same field: the server's usual recovery (:func:`reconstruct_each`: one
Lagrange-weighted sum per secret, ``p256_dots``) and the evaluation of the
sharing polynomials of :func:`split` from 64 Horner steps on (``p256_eval``).
The Python paths stay for every other case and give every error.

The field.  :data:`PRIME` ``= 2**256 + 297`` is the smallest prime above
``2**256``, so a secret (32 bytes read little-endian, below ``2**256``) is a
field element and distinct secrets are distinct elements.  A share is a
field element, sent as :data:`SHARE_BYTES` ``= 33`` little-endian bytes.

Sharing.  Secret ``s`` is the value at 0 of a polynomial
``f(z) = s + a_1 z + ... + a_{t-1} z**(t-1)`` whose coefficients ``a_k``
are drawn uniformly from the field with the OS CSPRNG (``os.urandom`` and
rejection sampling, no modulo bias); the holder with abscissa ``x`` (an
integer in ``[1, 2**32]``, never 0) gets ``f(x)``.  Any ``t - 1`` shares are
uniformly distributed whatever the secret; any ``t`` determine it.

Reconstruction.  ``s = sum_i lambda_i f(x_i)`` over ``t`` points, with the
Lagrange coefficients at zero ``lambda_i = prod_{j != i} x_j / (x_j - x_i)``
(:func:`lagrange_at_zero`: O(t**2) products of small integers and a single
modular inversion).  Points beyond the first ``t`` are checked to lie on the
same polynomial, so a tampered or inconsistent share raises instead of
yielding a wrong secret -- but only then: from exactly ``t`` shares, a
tampered share gives a wrong secret silently (Shamir sharing does not
authenticate; the protocol carries shares inside authenticated encryption).

Side channels.  Python integers are not constant-time and cannot be wiped:
the timing of these functions depends on the values, and secrets linger in
memory until collected.  The intended threat model (an honest-but-curious
server that sees messages, not timings of the clients' processes) does not
depend on either.

Examples
--------
>>> key, seed = bytes(range(32)), b"\\x07" * 32
>>> shares = split([key, seed], threshold=2, xs=[1, 2, 3])
>>> reconstruct([3, 1], [shares[2], shares[0]], threshold=2) == [key, seed]
True
"""
import functools
import itertools
import math
import operator
import os
from operator import mul

import numpy as np

from ..exceptions import FieldError, InvalidInputError, ProtocolError
from ..field import kernels as _kernels

__all__ = [
    "MAX_X",
    "PRIME",
    "SECRET_BYTES",
    "SHARE_BYTES",
    "lagrange_at_zero",
    "reconstruct",
    "reconstruct_each",
    "reconstruct_many",
    "share_from_bytes",
    "share_to_bytes",
    "split",
]

PRIME = 2**256 + 297
"""The field's modulus: the smallest prime above ``2**256``."""

SECRET_BYTES = 32
"""Length of a secret in bytes (read little-endian, so always below :data:`PRIME`)."""

SHARE_BYTES = 33
"""Length of an encoded share: a field element as 33 little-endian bytes."""

MAX_X = 2**32
"""Largest abscissa of a holder; abscissas lie in ``[1, MAX_X]``."""

_WEIGHTS_CACHE = 4096  # node tuples whose Lagrange weights are kept (public values only)
_HORNER_CHUNK = 16   # Horner steps between two reductions mod the prime
_PRODUCT_CHUNK = 8   # node differences (<= 33 bits each) multiplied before one reduction
_EVAL_KERNEL_MIN = 64  # Horner steps per polynomial (holders x threshold) from which
#                        the compiled kernel is faster than Python's integers (measured)

_urandom = os.urandom  # the only source of randomness (tests may replace it)


# --------------------------------------------------------------------------------------
# public API


def split(secrets, threshold, xs):
    """Shamir-share each secret ``threshold``-out-of-``len(xs)``.

    Parameters
    ----------
    secrets : sequence of bytes
        The secrets, each :data:`SECRET_BYTES` ``= 32`` bytes (``bytes`` or
        ``bytearray``), read as little-endian integers.
    threshold : int
        Number of shares that determine a secret, ``1 <= threshold <= len(xs)``
        (1 means every share *is* the secret).
    xs : sequence of int
        The holders' abscissas: distinct integers in ``[1, 2**32]``.

    Returns
    -------
    shares : list of list of int
        ``shares[i][j]`` is the share of ``secrets[j]`` for the holder at
        ``xs[i]``, an integer in ``[0, PRIME)`` (:func:`share_to_bytes` encodes it).

    Raises
    ------
    InvalidInputError
        A secret that is not 32 bytes, a threshold out of range, abscissas
        that are not distinct integers in ``[1, 2**32]``.

    Notes
    -----
    Every call draws fresh polynomial coefficients from ``os.urandom``;
    nothing is reused across calls.  The polynomials are evaluated by Horner's
    rule: from 64 steps per polynomial (holders times threshold) by the
    compiled kernel ``p256_eval``, below that in Python, two polynomials at a
    time packed into one integer, with a reduction every 16 steps.

    Examples
    --------
    >>> shares = split([b"\\x01" * 32], threshold=2, xs=[5, 9, 11])
    >>> len(shares), len(shares[0]), all(0 <= s < PRIME for row in shares for s in row)
    (3, 1, True)
    >>> split([b"\\x01" * 32], threshold=1, xs=[5])   # threshold 1: the secret itself
    [[454086624460063511464984254936031011189294057512315937409637584344757371137]]
    """
    values = []
    for j, s in enumerate(_as_list(secrets, "secrets", InvalidInputError)):
        if not isinstance(s, (bytes, bytearray)) or len(s) != SECRET_BYTES:
            raise InvalidInputError(
                f"secret {j} must be {SECRET_BYTES} bytes, got "
                + (f"{len(s)} bytes" if isinstance(s, (bytes, bytearray)) else type(s).__name__))
        values.append(int.from_bytes(s, "little"))
    nodes = _check_nodes(xs, InvalidInputError)
    t = _check_threshold(threshold)
    if t > len(nodes):
        raise InvalidInputError(f"threshold={t} should be <= len(xs)={len(nodes)}")
    return _split(values, t, nodes, PRIME)


def reconstruct(xs, shares, threshold):
    """Recover the secrets from the shares of ``threshold`` or more holders.

    Parameters
    ----------
    xs : sequence of int
        The abscissas of the holders whose shares are given: distinct
        integers in ``[1, 2**32]``.
    shares : sequence of list or tuple
        ``shares[i][j]`` is the share of secret ``j`` held at ``xs[i]``: an
        int in ``[0, PRIME)`` or its :data:`SHARE_BYTES`-byte encoding.
        Every row holds the same number of shares.
    threshold : int
        The threshold the secrets were shared with (``>= 1``).

    Returns
    -------
    secrets : list of bytes
        The 32-byte secrets, in the order of the columns of ``shares``.

    Raises
    ------
    ProtocolError
        Fewer than ``threshold`` points; abscissas repeated, out of range or
        not integers; ``len(shares) != len(xs)`` or rows of different lengths
        (or rows that are not lists or tuples); a share that is not an
        integer in ``[0, PRIME)`` nor 33 bytes encoding one; a point beyond
        the first ``threshold`` that does not lie on the polynomial through
        them (a tampered or inconsistent share); a reconstructed value
        ``>= 2**256`` (not a 32-byte secret).
    InvalidInputError
        ``threshold`` is not an integer ``>= 1``.

    Notes
    -----
    The first ``threshold`` points determine the secrets (Lagrange
    interpolation at 0, :func:`lagrange_at_zero`, cached by abscissas); each
    further point is checked against the polynomial through them (the
    Lagrange basis at that abscissa, cached by abscissas like the weights:
    one dot product of ``threshold`` terms per point and secret).  With
    exactly ``threshold`` points nothing can be checked: a tampered share
    then yields a wrong secret.

    Examples
    --------
    >>> secret = bytes(range(32))
    >>> shares = split([secret], threshold=3, xs=[1, 2, 3, 4, 5])
    >>> reconstruct([2, 4, 5], [shares[1], shares[3], shares[4]], threshold=3) == [secret]
    True
    >>> bad = [list(row) for row in shares]
    >>> bad[4][0] = (bad[4][0] + 1) % PRIME
    >>> reconstruct([1, 2, 3, 4, 5], bad, threshold=3)
    Traceback (most recent call last):
    ...
    pyfkm.exceptions.ProtocolError: the share of secret 0 at x=5 does not lie on the polynomial ...
    """
    return _reconstruct(xs, shares, _check_threshold(threshold))


def reconstruct_many(groups, threshold):
    """Recover the secrets of many sharings at once (a server's recovery step).

    Equivalent to ``[reconstruct(xs, shares, threshold) for xs, shares in
    groups]``: the same checks on every group, the same results, and the
    same error for the first group that fails; faster when many groups
    share abscissas.

    Parameters
    ----------
    groups : sequence of (xs, shares)
        Each as :func:`reconstruct` takes them.
    threshold : int
        The threshold every group was shared with (``>= 1``).

    Returns
    -------
    secrets : list of list of bytes
        Per group, its 32-byte secrets.

    Raises
    ------
    ProtocolError
        What :func:`reconstruct` raises for the first group that fails,
        including a point beyond the first ``threshold`` of a group that does
        not lie on the polynomial through them; a group that is not a pair.
    InvalidInputError
        ``threshold`` is not an integer ``>= 1``.

    Notes
    -----
    The work that depends on the abscissas only -- the Lagrange weights at 0
    of each group's first ``threshold`` nodes and, for each further node,
    the coefficients that evaluate the interpolating polynomial there -- is
    computed once per distinct node tuple (and cached); each secret then
    costs one dot product of ``threshold`` terms and one reduction, and each
    further point checked another.

    Examples
    --------
    >>> a, b = bytes(range(32)), b"9" * 32
    >>> sa, sb = split([a], 2, [1, 2, 3]), split([b], 2, [1, 2, 3])
    >>> reconstruct_many([([1, 2, 3], sa), ([2, 3], sb[1:])], 2) == [[a], [b]]
    True
    """
    t = _check_threshold(threshold)
    groups = _as_list(groups, "groups", ProtocolError)
    for i, g in enumerate(groups):
        if not isinstance(g, (tuple, list)) or len(g) != 2:
            raise ProtocolError(f"group {i} must be a pair (xs, shares)")
    out = _reconstruct_batch(groups, t)
    if out is None:          # some group fails a check: its error, in order
        out = [_reconstruct(xs, shares, t) for xs, shares in groups]
    return out


def _reconstruct_batch(groups, t):
    """:func:`reconstruct_many` after its threshold check when every share
    of every group is a valid encoding (checked once, over all groups, at C
    speed) and every group's rows are tuples or lists of one length; None
    otherwise (the caller then takes the groups one by one for the error)."""
    try:
        rows = [shares for _, shares in groups]
    except (TypeError, ValueError):
        return None
    if not rows or not all(type(r) in _ROW_TYPES and _ROW_TYPES.issuperset(map(type, r))
                           for r in rows):
        return None
    chain = itertools.chain.from_iterable
    flat = list(chain(chain(rows)))
    if not flat or set(map(type, flat)) != _BYTES or set(map(len, flat)) != _SHARE_LEN:
        return None
    flat = list(map(int.from_bytes, flat, itertools.repeat("little")))
    if max(flat) >= PRIME:
        return None
    out = []
    k = 0
    for (xs, _), r in zip(groups, rows):
        # the checks of _reconstruct, in its order, on rows already decoded
        nodes = _check_nodes(xs, ProtocolError)
        if len(r) != len(nodes):
            raise ProtocolError(f"{len(r)} rows of shares for {len(nodes)} abscissas")
        if len(nodes) < t:
            raise ProtocolError(f"{len(nodes)} points should be >= threshold={t}")
        m = len(r[0]) if r else 0
        if len(set(map(len, r))) > 1:
            return _reconstruct_rest(groups, len(out), t, out)
        n = len(r)
        if m == 1 and n == t:        # one secret, no further point: one dot product
            values = [sum(map(mul, _weights(tuple(nodes), PRIME)[0], flat[k:k + n])) % PRIME]
        else:
            values = _interpolate(nodes, [flat[k + i * m:k + (i + 1) * m] for i in range(n)],
                                  t, PRIME)
        k += m * n
        for j, v in enumerate(values):
            if v >> (8 * SECRET_BYTES):
                raise ProtocolError(f"reconstructed value {j} is not a {SECRET_BYTES}-byte "
                                    "secret (inconsistent shares)")
        out.append([v.to_bytes(SECRET_BYTES, "little") for v in values])
    return out


def reconstruct_each(groups, threshold):
    """One secret per sharing from exactly ``threshold`` shares each (a
    server's usual recovery: the first ``threshold`` holders of every client).

    Equivalent to ``[reconstruct(xs, [(s,) for s in shares], threshold)[0]
    for xs, shares in groups]``: the same checks, the same secrets and the
    same error for the first group that fails; one dot product per group
    with the cached Lagrange weights, and no per-row containers.

    Parameters
    ----------
    groups : sequence of (xs, shares)
        ``xs``: the ``threshold`` abscissas of a sharing; ``shares``: its
        encoded shares (:data:`SHARE_BYTES` bytes each), one per abscissa.
    threshold : int
        The threshold every group was shared with (``>= 1``).

    Returns
    -------
    secrets : list of bytes
        Per group, its 32-byte secret.

    Raises
    ------
    ProtocolError
        What :func:`reconstruct` raises for the first group that fails.
    InvalidInputError
        ``threshold`` is not an integer ``>= 1``.

    Examples
    --------
    >>> a, b = bytes(range(32)), b"9" * 32
    >>> sa, sb = split([a], 2, [1, 2, 3]), split([b], 2, [1, 2, 3])
    >>> reconstruct_each([([1, 2], [sa[0][0], sa[1][0]]), ([2, 3], [sb[1][0], sb[2][0]])],
    ...                  2) == [a, b]
    True
    """
    t = _check_threshold(threshold)
    groups = _as_list(groups, "groups", ProtocolError)
    out = _each_fast(groups, t)
    if out is None:      # some group is not of the usual form or fails: one by one
        for i, g in enumerate(groups):   # reconstruct_many's own first check and error
            if not isinstance(g, (tuple, list)) or len(g) != 2:
                raise ProtocolError(f"group {i} must be a pair (xs, shares)")
        out = [r[0] for r in reconstruct_many(
            [(xs, [(s,) for s in _as_list(shares, "shares", ProtocolError)])
             for xs, shares in groups], t)]
    return out


def _each_fast(groups, t):
    """:func:`reconstruct_each` when every group is a pair of a tuple of
    ``t`` valid nodes and ``t`` encoded shares below :data:`PRIME`, and
    every secret reconstructs to 32 bytes; None otherwise.  The shares'
    types, lengths and ranges are checked, and the dot products with the
    cached Lagrange weights computed, by one compiled call
    (:func:`pyfkm.field.kernels.p256_dots`)."""
    weights = []
    flat = []
    extend = flat.extend
    seen = _EACH_WEIGHTS
    for g in groups:
        if type(g) not in _ROW_TYPES or len(g) != 2:
            return None
        xs, shares = g
        if type(xs) is not tuple or len(xs) != t or type(shares) not in _ROW_TYPES \
                or len(shares) != t:
            return None
        # a node tuple met before (the same object: a server passes its
        # cached tuples round after round) was checked then; the entry holds
        # the tuple, so its id cannot be reused while the entry lives
        e = seen.get(id(xs))
        if e is None or e[0] is not xs:
            if not _INT.issuperset(map(type, xs)) or not _valid_nodes(xs):
                return None
            e = (xs, _weight_bytes(xs))
            if len(seen) >= _WEIGHTS_CACHE:
                seen.clear()
            seen[id(xs)] = e
        weights.append(e[1])
        extend(shares)
    try:
        out = _kernels.p256_dots(weights, flat, t)
    except (TypeError, ValueError, FieldError):   # a share that is not a valid encoding
        return None
    if any(out[SECRET_BYTES::SHARE_BYTES]):       # a value >= 2**256: not a secret
        return None
    return [out[k:k + SECRET_BYTES] for k in range(0, len(out), SHARE_BYTES)]


_EACH_WEIGHTS: dict = {}   # id(node tuple) -> (node tuple, encoded weights): _each_fast's


@functools.lru_cache(maxsize=_WEIGHTS_CACHE)
def _weight_bytes(xs):
    """The Lagrange weights at 0 of the node tuple ``xs`` (valid nodes) in
    :data:`PRIME`'s field, as one ``bytes`` of their 33-byte encodings."""
    return b"".join(v.to_bytes(SHARE_BYTES, "little") for v in _weights(xs, PRIME)[0])


@functools.lru_cache(maxsize=_WEIGHTS_CACHE)
def _valid_nodes(xs):
    """Whether a non-empty tuple of Python ints holds distinct nodes in
    ``[1, MAX_X]`` (what :func:`_check_nodes` accepts as they are); cached,
    like the weights, by node tuple."""
    return 1 <= min(xs) and max(xs) <= MAX_X and len(set(xs)) == len(xs)


def _reconstruct_rest(groups, start, t, done):
    """The groups from ``start`` on, one by one, after ``done``."""
    return done + [_reconstruct(xs, shares, t) for xs, shares in groups[start:]]


def lagrange_at_zero(xs):
    """The Lagrange coefficients that interpolate at 0 from values at ``xs``.

    ``f(0) = sum_i lam[i] * f(xs[i]) mod PRIME`` for every polynomial ``f``
    of degree below ``len(xs)``, with
    ``lam[i] = prod_{j != i} xs[j] / (xs[j] - xs[i]) mod PRIME``.

    Parameters
    ----------
    xs : sequence of int
        The nodes: integers that are nonzero and distinct modulo :data:`PRIME`.

    Returns
    -------
    lam : list of int
        The coefficients, in ``[0, PRIME)``, in the order of ``xs``.

    Raises
    ------
    InvalidInputError
        ``xs`` empty, not integers, zero or repeated modulo :data:`PRIME`.

    Notes
    -----
    O(len(xs)**2) products of node differences (exact integers, reduced
    every 8 factors) and one modular inversion for the whole set
    (Montgomery's batch-inversion trick).  Results are cached for the 4096 most
    recent node tuples (a server's recovery meets one tuple per client of
    its neighbour graph, round after round); they depend on the nodes only.

    Examples
    --------
    >>> lam = lagrange_at_zero([1, 2, 3])
    >>> [c if c < PRIME // 2 else c - PRIME for c in lam]   # 3, -3, 1
    [3, -3, 1]
    >>> sum(c * (7 + 5 * x) for c, x in zip(lam, [1, 2, 3])) % PRIME   # f(z) = 7 + 5z
    7
    """
    nodes = []
    for i, x in enumerate(_as_list(xs, "xs", InvalidInputError)):
        if isinstance(x, bool):
            raise InvalidInputError(f"xs[{i}] must be an integer, got bool")
        try:
            nodes.append(operator.index(x) % PRIME)
        except TypeError:
            raise InvalidInputError(
                f"xs[{i}] must be an integer, got {type(x).__name__}") from None
    if not nodes:
        raise InvalidInputError("xs must not be empty")
    if 0 in nodes:
        raise InvalidInputError("a node is zero modulo PRIME")
    if len(set(nodes)) != len(nodes):
        raise InvalidInputError("nodes are repeated modulo PRIME")
    return list(_weights(tuple(nodes), PRIME)[0])


def share_to_bytes(v):
    """Encode a share as :data:`SHARE_BYTES` ``= 33`` little-endian bytes.

    Raises
    ------
    InvalidInputError
        ``v`` is not an integer in ``[0, PRIME)``.

    Examples
    --------
    >>> b = share_to_bytes(258)
    >>> len(b), b[:3].hex(), b[3:] == bytes(30)
    (33, '020100', True)
    >>> share_from_bytes(share_to_bytes(PRIME - 1)) == PRIME - 1
    True
    """
    if isinstance(v, bool):
        raise InvalidInputError("a share must be an integer, got bool")
    try:
        v = operator.index(v)
    except TypeError:
        raise InvalidInputError(f"a share must be an integer, got {type(v).__name__}") from None
    if not 0 <= v < PRIME:
        raise InvalidInputError("a share must lie in [0, PRIME)")
    return v.to_bytes(SHARE_BYTES, "little")


def share_from_bytes(b):
    """Decode a share encoded by :func:`share_to_bytes`.

    Raises
    ------
    ProtocolError
        ``b`` is not ``bytes``/``bytearray`` of length 33, or encodes a value
        ``>= PRIME``.

    Examples
    --------
    >>> share_from_bytes(bytes([5]) + bytes(32))
    5
    >>> share_from_bytes(b"\\xff" * 33)
    Traceback (most recent call last):
    ...
    pyfkm.exceptions.ProtocolError: an encoded share must be below PRIME
    """
    if not isinstance(b, (bytes, bytearray)):
        raise ProtocolError(f"an encoded share must be bytes, got {type(b).__name__}")
    if len(b) != SHARE_BYTES:
        raise ProtocolError(f"an encoded share must be {SHARE_BYTES} bytes, got {len(b)}")
    v = int.from_bytes(b, "little")
    if v >= PRIME:
        raise ProtocolError("an encoded share must be below PRIME")
    return v


def _reconstruct(xs, shares, t):
    """:func:`reconstruct` after its threshold check (``t`` an int >= 1)."""
    nodes = _check_nodes(xs, ProtocolError)
    rows = _as_list(shares, "shares", ProtocolError)
    if len(rows) != len(nodes):
        raise ProtocolError(f"{len(rows)} rows of shares for {len(nodes)} abscissas")
    if len(nodes) < t:
        raise ProtocolError(f"{len(nodes)} points should be >= threshold={t}")
    rows = _check_rows(rows)
    values = _interpolate(nodes, rows, t, PRIME)
    for j, v in enumerate(values):
        if v >> (8 * SECRET_BYTES):
            raise ProtocolError(f"reconstructed value {j} is not a {SECRET_BYTES}-byte secret "
                                "(inconsistent shares)")
    return [v.to_bytes(SECRET_BYTES, "little") for v in values]


# --------------------------------------------------------------------------------------
# validation (the public functions' edge)


def _as_list(seq, name, error):
    if isinstance(seq, (str, bytes, bytearray)):
        raise error(f"{name} must be a sequence, got {type(seq).__name__}")
    try:
        return list(seq)
    except TypeError:
        raise error(f"{name} must be a sequence, got {type(seq).__name__}") from None


def _check_threshold(threshold):
    if isinstance(threshold, bool):
        raise InvalidInputError("threshold must be an integer, got bool")
    try:
        t = operator.index(threshold)
    except TypeError:
        raise InvalidInputError(
            f"threshold must be an integer, got {type(threshold).__name__}") from None
    if t < 1:
        raise InvalidInputError(f"threshold={t} should be >= 1")
    return t


def _check_nodes(xs, error):
    """Distinct Python ints in [1, MAX_X], or ``error``."""
    if type(xs) in (list, tuple) and xs and _INT.issuperset(map(type, xs)) \
            and 1 <= min(xs) and max(xs) <= MAX_X and len(set(xs)) == len(xs):
        return list(xs)              # the usual case, checked at C speed
    nodes = []
    for i, x in enumerate(_as_list(xs, "xs", error)):
        if isinstance(x, bool):
            raise error(f"xs[{i}] must be an integer, got bool")
        try:
            x = operator.index(x)
        except TypeError:
            raise error(f"xs[{i}] must be an integer, got {type(x).__name__}") from None
        if not 1 <= x <= MAX_X:
            raise error(f"xs[{i}]={x} must lie in [1, 2**32]")
        nodes.append(x)
    if len(set(nodes)) != len(nodes):
        raise error("xs must be distinct")
    return nodes


_ROW_TYPES = frozenset((list, tuple))
_INT = frozenset((int,))
_BYTES = {bytes}
_SHARE_LEN = {SHARE_BYTES}


def _check_rows(rows):
    """The rows of shares as lists of ints in [0, PRIME), all of one length,
    or ProtocolError (the first bad row's)."""
    # the usual case, checked at C speed: rows of one length holding
    # SHARE_BYTES-byte encodings of field elements
    if rows and _ROW_TYPES.issuperset(map(type, rows)) and len(set(map(len, rows))) == 1:
        m = len(rows[0])
        flat = list(itertools.chain.from_iterable(rows))
        if not flat:
            return [[] for _ in rows]
        if set(map(type, flat)) == _BYTES and set(map(len, flat)) == _SHARE_LEN:
            flat = list(map(int.from_bytes, flat, itertools.repeat("little")))
            if max(flat) < PRIME:
                return [flat[k:k + m] for k in range(0, len(flat), m)]
    rows = [_check_row(row, i) for i, row in enumerate(rows)]
    m = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != m:
            raise ProtocolError(f"row {i} of shares holds {len(row)} shares, row 0 holds {m}")
    return rows


def _check_row(row, i):
    """Row ``i`` of shares as a list of ints in [0, PRIME), or ProtocolError."""
    if not isinstance(row, (list, tuple)):
        raise ProtocolError(f"row {i} of shares must be a list or tuple, got {type(row).__name__}")
    out = []
    for j, v in enumerate(row):
        if isinstance(v, (bytes, bytearray)):
            out.append(share_from_bytes(v))
            continue
        if isinstance(v, bool):
            raise ProtocolError(f"share [{i}][{j}] must be an integer or bytes, got bool")
        try:
            v = operator.index(v)
        except TypeError:
            raise ProtocolError(f"share [{i}][{j}] must be an integer or bytes, "
                                f"got {type(v).__name__}") from None
        if not 0 <= v < PRIME:
            raise ProtocolError(f"share [{i}][{j}] must lie in [0, PRIME)")
        out.append(v)
    return out


# --------------------------------------------------------------------------------------
# kernels: no input validation; ``prime`` is a parameter so that tests can run
# them over a tiny field and check secrecy by enumeration.


def _random_coefficients(count, prime=PRIME):
    """``count`` independent uniform elements of ``[0, prime)`` from ``_urandom``.

    Each is read from ``nbytes = ceil(bits(prime) / 8) + 1`` little-endian
    bytes ``v``; it is kept iff ``v < limit``, the largest multiple of
    ``prime`` not above ``256**nbytes``, and mapped to ``v % prime``, which
    is then exactly uniform (a draw is rejected with probability below 1/256).
    """
    nbytes = (prime.bit_length() + 7) // 8 + 1
    limit = (1 << (8 * nbytes)) // prime * prime
    out = []
    while len(out) < count:
        buf = _urandom((count - len(out)) * nbytes)
        for k in range(0, len(buf), nbytes):
            v = int.from_bytes(buf[k:k + nbytes], "little")
            if v < limit:
                out.append(v % prime)
    return out


def _split(values, threshold, xs, prime):
    """Shares of ``values`` (ints in ``[0, prime)``) at the distinct nonzero
    ``xs`` (ints below ``prime``): ``shares[i][j] = f_j(xs[i]) mod prime``.

    ``f_j(z) = values[j] + sum_{k=1}^{t-1} a[j (t-1) + k - 1] z**k`` with
    ``a = _random_coefficients(len(values) * (threshold - 1), prime)``: one
    call per split, secret-major, degree 1 first.
    """
    t = threshold
    a = _random_coefficients(len(values) * (t - 1), prime)
    # coefficient lists, highest degree first, for Horner's rule
    polys = [a[j * (t - 1):(j + 1) * (t - 1)][::-1] + [s] for j, s in enumerate(values)]
    if prime == PRIME and polys and len(xs) * t >= _EVAL_KERNEL_MIN and max(xs) <= MAX_X:
        return _evaluate_p256(polys, xs)
    return _evaluate(polys, xs, prime)


def _evaluate_p256(polys, xs):
    """:func:`_evaluate` over :data:`PRIME`'s field for ``xs`` in ``[0, MAX_X]``,
    by the compiled Horner kernel (:func:`pyfkm.field.kernels.p256_eval`)."""
    m = len(polys)
    coefs = b"".join(c.to_bytes(SHARE_BYTES, "little") for f in polys for c in f)
    out = _kernels.p256_eval(coefs, m, np.array(xs, dtype=np.uint64))
    vals = list(map(int.from_bytes, [out[k:k + SHARE_BYTES]
                                     for k in range(0, len(out), SHARE_BYTES)],
                    itertools.repeat("little")))
    return [vals[i:i + m] for i in range(0, len(vals), m)]


def _evaluate(polys, xs, prime):
    """``out[i][j] = polys[j](xs[i]) mod prime`` for coefficient lists of one
    length, highest degree first, with entries in ``[0, prime)``, and
    nonnegative ``xs``.

    Horner's rule on two polynomials at a time: ``f`` and ``g`` are packed
    into one integer, ``f + g * 2**W``; a step ``acc * x + c`` acts on both
    halves, and with both halves nonnegative and below ``2**W`` no carry
    crosses between them.  Each half is reduced every ``_HORNER_CHUNK = g``
    steps; starting below ``prime``, after ``g`` steps it is below
    ``prime * (1 + X + ... + X**g) <= prime * (g + 1) * X**g`` with
    ``X = max(xs)``, which ``W`` bounds.
    """
    m = len(polys)
    if m == 0:
        return [[] for _ in xs]
    deg1 = len(polys[0])
    g = _HORNER_CHUNK
    w = prime.bit_length() + g * max(xs).bit_length() + (g + 1).bit_length()
    mask = (1 << w) - 1
    cols = []
    for j in range(0, m, 2):
        f = polys[j]
        h = polys[j + 1] if j + 1 < m else [0] * deg1
        packed = [a + (b << w) for a, b in zip(f, h)]
        chunks = [packed[k:k + g] for k in range(0, deg1, g)]
        last = chunks.pop()
        lo, hi = [], []
        for x in xs:
            acc = 0
            for chunk in chunks:
                for c in chunk:
                    acc = acc * x + c
                acc = (acc & mask) % prime + ((acc >> w) % prime << w)
            for c in last:
                acc = acc * x + c
            lo.append((acc & mask) % prime)
            hi.append((acc >> w) % prime)
        cols.append(lo)
        if j + 1 < m:
            cols.append(hi)
    return [list(r) for r in zip(*cols)]


def _batch_inverse(values, prime):
    """Inverses mod ``prime`` of nonzero ``values`` with one modular inversion
    (Montgomery's trick: prefix products, invert the total, walk back)."""
    prefix = []
    acc = 1
    for v in values:
        prefix.append(acc)
        acc = acc * v % prime
    inv = pow(acc, -1, prime)
    out = [0] * len(values)
    for i in range(len(values) - 1, -1, -1):
        out[i] = inv * prefix[i] % prime
        inv = inv * values[i] % prime
    return out


@functools.lru_cache(maxsize=_WEIGHTS_CACHE)
def _weights(xs, prime):
    """``(lam, w)`` for a tuple ``xs`` of distinct nonzero ints below ``prime``:
    the Lagrange coefficients at 0, ``lam[i] = prod_{j != i} x_j / (x_j - x_i)``,
    and the barycentric weights ``w[i] = 1 / prod_{j != i} (x_i - x_j)``.

    With ``e_i = prod_{j != i} (x_j - x_i)`` and ``P = prod_j x_j``:
    ``lam[i] = P / (x_i e_i)`` and ``w[i] = (-1)**(n-1) x_i / (x_i e_i)``;
    the ``n`` values ``x_i e_i`` are inverted together.
    """
    n = len(xs)
    k = _PRODUCT_CHUNK
    xe = []
    for i, xi in enumerate(xs):
        d = [xj - xi for xj in xs]
        d[i] = xi            # x_i e_i directly
        acc = 1
        for s in range(0, n, k):
            acc = acc * math.prod(d[s:s + k]) % prime
        xe.append(acc)
    inv = _batch_inverse(xe, prime)
    total = 1
    for s in range(0, n, k):
        total = total * math.prod(xs[s:s + k]) % prime
    lam = tuple(total * v % prime for v in inv)
    if n % 2:
        w = tuple(x * v % prime for x, v in zip(xs, inv))
    else:
        w = tuple(-x * v % prime for x, v in zip(xs, inv))
    return lam, w


def _value_at(x, xs, u, prime):
    """``sum_i u_i prod_{k != i} (x - xs[k]) mod prime``.

    With ``u_i = w_i y_i`` (barycentric weights ``w`` of ``xs``) this is the
    value at ``x`` of the polynomial through the points ``(xs[i], y_i)``.
    Accumulated as ``num / den = sum_{i <= k} u_i / (x - xs[i])`` with
    ``den = prod_{i <= k} (x - xs[i])``, so no inversion is needed:
    ``num <- num (x - x_k) + u_k den``, ``den <- den (x - x_k)``, both reduced
    every ``_PRODUCT_CHUNK`` steps.
    """
    g = _PRODUCT_CHUNK
    num, den = 0, 1
    for s in range(0, len(xs), g):
        for xk, uk in zip(xs[s:s + g], u[s:s + g]):
            d = x - xk
            num = num * d + uk * den
            den *= d
        num %= prime
        den %= prime
    return num


def _interpolate(xs, rows, threshold, prime):
    """Values at 0 of the polynomials of degree < ``threshold`` through the
    first ``threshold`` points (``rows[i][j]``: value of polynomial ``j`` at
    ``xs[i]``); every further point must lie on them, else ProtocolError.
    ``xs`` distinct nonzero ints below ``prime``, ``rows`` reduced and of one
    length, ``len(xs) >= threshold``.

    A further point ``x`` is checked against the Lagrange form
    ``f(x) = sum_i c_i y_i`` with ``c_i = w_i prod_{k != i} (x - x_k)``
    (:func:`_coefficients_at`, computed once per node tuple and ``x``, no
    inversion): one dot product per point and polynomial.
    :func:`_value_at` evaluates the same form from ``u_i = w_i y_i``.
    """
    t = threshold
    base = tuple(xs[:t])
    lam, w = _weights(base, prime)
    columns = list(zip(*rows[:t]))
    values = [sum(map(mul, lam, col)) % prime for col in columns]
    for i in range(t, len(xs)):
        coef = _coefficients_at(xs[i], base, prime)
        for j, col in enumerate(columns):
            if sum(map(mul, coef, col)) % prime != rows[i][j]:
                raise ProtocolError(f"the share of secret {j} at x={xs[i]} does not lie "
                                    f"on the polynomial through the first {t} points")
    return values


@functools.lru_cache(maxsize=_WEIGHTS_CACHE)
def _coefficients_at(x, xs, prime):
    """``c`` with ``f(x) = sum_i c[i] f(xs[i]) mod prime`` for every
    polynomial ``f`` of degree below ``len(xs)`` (``x`` not in ``xs``): the
    Lagrange basis at ``x``, ``c[i] = w[i] prod_{k != i} (x - xs[k])`` with
    the barycentric weights ``w`` of :func:`_weights`.  The products are
    exact integers: ``prod_k (x - xs[k])`` divided by ``x - xs[i]``.
    Depends on the nodes only (cached)."""
    w = _weights(xs, prime)[1]
    full = math.prod(x - xk for xk in xs)
    return tuple(wi * (full // (x - xk) % prime) % prime for wi, xk in zip(w, xs))
