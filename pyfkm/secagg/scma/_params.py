"""Public parameters of an SCMA run.

Message size.  A client message holds :attr:`ScmaParams.message_words`
field elements of 8 bytes; :data:`MAX_MESSAGE_WORDS` caps it (64 MiB), so
that no party allocates, masks or sums a larger vector because of a
parameter it was given (a roster read from the network included).  The
parameters of difference rounds derive from the run's by
``dataclasses.replace`` and pass the same check.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import operator
import os
from dataclasses import dataclass
from typing import Any

from ...exceptions import CapacityError, InvalidInputError
from ...field import DEFAULT_PRIME, is_prime

MODES = ("index", "hashed")
MAX_NONZEROS_LIMIT = 1 << 22   # 4M distinct bins
MAX_DIMS = 1 << 20
MAX_MESSAGE_WORDS = 1 << 23    # 64 MiB of 8-byte words per message
INDEX_CHECK_WORDS = 1          # check words of the index mode (see pyfkm.secagg.scma._codec)


def _int(value: Any, name: str, lo: int, hi: int | None = None) -> int:
    try:
        v = operator.index(value)
    except TypeError:
        raise InvalidInputError(f"{name} must be an integer, got {type(value).__name__}") from None
    if v < lo or (hi is not None and v > hi):
        bound = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise InvalidInputError(f"{name} must be {bound}, got {v}")
    return v


def coords_per_element(bins_per_dim: int, modulus: int) -> int:
    """Largest c with bins_per_dim**c < modulus (coordinates packed per field element)."""
    if bins_per_dim == 1:
        return 64
    c = 0
    while bins_per_dim ** (c + 1) < modulus:
        c += 1
    return c


def grid_below(bins_per_dim: int, n_dims: int, modulus: int) -> bool:
    """Is ``bins_per_dim**n_dims < modulus``?  Decided without computing a
    power of millions of bits when the answer is plainly no
    (``B**d >= 2**(d (bits(B) - 1))``)."""
    if bins_per_dim == 1:
        return 1 < modulus
    if n_dims * (bins_per_dim.bit_length() - 1) >= modulus.bit_length():
        return False
    return bins_per_dim ** n_dims < modulus


@dataclass(frozen=True)
class ScmaParams:
    """Public parameters every party of one SCMA run agrees on.

    Parameters
    ----------
    n_dims : int
        Dimension ``d`` of the bins.
    bins_per_dim : int
        Bins per dimension ``B``; coordinates lie in ``[0, B)``.
    max_nonzeros : int
        ``M``, the largest number of distinct nonzero bins the *aggregate*
        may have (the paper's ``K L``); messages carry ``2M`` syndromes.
    modulus : int
        Prime ``p < 2**63`` (default :data:`pyfkm.field.DEFAULT_PRIME`).
    mode : {"index", "hashed"}
        ``"index"`` (the paper's encoding, bin ``b`` -> ``1 + index(b)``)
        needs ``B**d < p``, and adds :attr:`n_check_words` words that make
        an aggregate of more than ``M`` bins fail to decode; ``"hashed"``
        maps ``b`` to a public random linear hash and sends the bin
        coordinates as payload syndromes.
    hash_seed : bytes
        32 public bytes seeding the hash of the hashed mode and the check
        point of the index mode.
    max_client_nonzeros : int
        Largest number of nonzero bins one client may send (default ``M``).
    run_id : bytes
        16 bytes naming the run; bound into every pairwise seed.

    Raises
    ------
    InvalidInputError
        A parameter out of range, a modulus that is not prime, index mode
        with ``B**d >= p``.
    CapacityError
        :attr:`message_words` exceeds :data:`MAX_MESSAGE_WORDS`.

    Use :meth:`create` to pick the mode automatically and draw ``run_id``
    and ``hash_seed`` from the OS.

    Examples
    --------
    >>> P = ScmaParams(n_dims=2, bins_per_dim=10, max_nonzeros=4, mode="index")
    >>> P.n_syndromes, P.n_check_words, P.message_words
    (8, 1, 9)
    >>> P = ScmaParams(n_dims=3, bins_per_dim=10**7, max_nonzeros=4)   # hashed
    >>> P.coords_per_element, P.n_payload_rows, P.message_words
    (2, 3, 20)
    >>> ScmaParams(n_dims=3, bins_per_dim=10**7, max_nonzeros=4, mode="index")
    Traceback (most recent call last):
    ...
    pyfkm.exceptions.InvalidInputError: index mode needs bins_per_dim**n_dims < modulus; ...
    """

    n_dims: int
    bins_per_dim: int
    max_nonzeros: int
    modulus: int = DEFAULT_PRIME
    mode: str = "hashed"
    hash_seed: bytes = bytes(32)
    max_client_nonzeros: int = 0
    run_id: bytes = bytes(16)

    def __post_init__(self) -> None:
        d = _int(self.n_dims, "n_dims", 1, MAX_DIMS)
        B = _int(self.bins_per_dim, "bins_per_dim", 1)
        M = _int(self.max_nonzeros, "max_nonzeros", 1, MAX_NONZEROS_LIMIT)
        p = _int(self.modulus, "modulus", 3, (1 << 63) - 1)
        if not is_prime(p):
            raise InvalidInputError(f"modulus {p} is not prime")
        if self.mode not in MODES:
            raise InvalidInputError(f"mode must be one of {MODES}, got {self.mode!r}")
        if B >= p:
            raise InvalidInputError(f"bins_per_dim = {B} must be below the modulus {p}")
        if self.mode == "index" and not grid_below(B, d, p):
            raise InvalidInputError(
                f"index mode needs bins_per_dim**n_dims < modulus; {B}**{d} >= {p} "
                f"(use mode='hashed')")
        if M > p - 1:
            raise InvalidInputError(f"max_nonzeros = {M} exceeds p - 1")
        kc = self.max_client_nonzeros or M
        kc = _int(kc, "max_client_nonzeros", 1, M)
        for name, n in (("hash_seed", 32), ("run_id", 16)):
            v = getattr(self, name)
            if not isinstance(v, (bytes, bytearray)) or len(v) != n:
                raise InvalidInputError(f"{name} must be {n} bytes")
        object.__setattr__(self, "n_dims", d)
        object.__setattr__(self, "bins_per_dim", B)
        object.__setattr__(self, "max_nonzeros", M)
        object.__setattr__(self, "modulus", p)
        object.__setattr__(self, "max_client_nonzeros", kc)
        object.__setattr__(self, "hash_seed", bytes(self.hash_seed))
        object.__setattr__(self, "run_id", bytes(self.run_id))
        # small integers only (rows <= d + 1 <= 2**20 + 1, M <= 2**22)
        per_bin = 2 + self.n_payload_rows
        words = per_bin * M + self.n_check_words
        if words > MAX_MESSAGE_WORDS:
            most = (MAX_MESSAGE_WORDS - self.n_check_words) // per_bin
            what = "" if self.mode == "index" else (
                f" ({self.n_payload_rows} payload rows of M words in hashed mode; fewer "
                f"dimensions or a smaller bins_per_dim need fewer)")
            raise CapacityError(
                f"an SCMA message of {words} words ({per_bin} M"
                f"{f' + {self.n_check_words}' if self.n_check_words else ''} with max_nonzeros "
                f"M = {M}) exceeds "
                f"MAX_MESSAGE_WORDS = {MAX_MESSAGE_WORDS} (64 MiB); lower max_nonzeros to at "
                f"most {most}{what}")

    @classmethod
    def create(cls, n_dims: int, bins_per_dim: int, max_nonzeros: int, *,
               modulus: int = DEFAULT_PRIME, mode: str = "auto",
               max_client_nonzeros: int | None = None, run_id: bytes | None = None
               ) -> ScmaParams:
        """Parameters with ``mode="auto"`` resolved (index iff ``B**d < p``)
        and ``run_id`` (unless given) and ``hash_seed`` drawn from
        ``os.urandom``: run ids and seeds never follow a user seed.

        Parameters
        ----------
        n_dims : int
            Dimension ``d`` of the bins.
        bins_per_dim : int
            Bins per dimension ``B``.
        max_nonzeros : int
            ``M``, the largest number of distinct nonzero bins of the aggregate.
        modulus : int, default=DEFAULT_PRIME
            Prime ``p < 2**63``.
        mode : {"auto", "index", "hashed"}, default="auto"
            The encoding; ``"auto"`` takes ``"index"`` when ``B**d < p``, else
            ``"hashed"``.
        max_client_nonzeros : int, optional
            Largest number of nonzero bins one client may send (default ``M``).
        run_id : bytes, optional
            16 bytes naming the run (default: drawn from ``os.urandom``).

        Returns
        -------
        ScmaParams
            The parameters, with a fresh ``hash_seed``.

        Raises
        ------
        InvalidInputError
            A parameter out of range (as the constructor).
        CapacityError
            The messages would exceed :data:`MAX_MESSAGE_WORDS`.

        Examples
        --------
        >>> P = ScmaParams.create(2, 10, 8)
        >>> P.mode, P.n_syndromes, P.n_check_words, P.message_words
        ('index', 16, 1, 17)
        >>> P.run_id != ScmaParams.create(2, 10, 8).run_id
        True
        >>> ScmaParams.create(3, 10**7, 8).mode
        'hashed'
        """
        d = _int(n_dims, "n_dims", 1, MAX_DIMS)
        B = _int(bins_per_dim, "bins_per_dim", 1)
        p = _int(modulus, "modulus", 3, (1 << 63) - 1)
        if mode == "auto":
            mode = "index" if grid_below(B, d, p) else "hashed"
        return cls(n_dims=d, bins_per_dim=B, max_nonzeros=max_nonzeros, modulus=p,
                   mode=mode, hash_seed=os.urandom(32),
                   run_id=run_id if run_id is not None else os.urandom(16),
                   max_client_nonzeros=max_client_nonzeros or 0)

    @property
    def n_syndromes(self) -> int:
        """``2M`` power sums of the counts, ``S_0 .. S_{2M-1}`` (what
        Berlekamp-Massey reads)."""
        return 2 * self.max_nonzeros

    @property
    def n_check_words(self) -> int:
        """Words after the syndromes that only verify a decode: 1 in index
        mode (``sum_j q_j / (t - x_j)`` at a public point ``t``, see
        :mod:`pyfkm.secagg.scma._codec`), 0 in hashed mode (its check row is a
        payload row)."""
        return INDEX_CHECK_WORDS if self.mode == "index" else 0

    @functools.cached_property
    def coords_per_element(self) -> int:
        """Bin coordinates packed into one payload element (hashed mode)."""
        return min(coords_per_element(self.bins_per_dim, self.modulus), self.n_dims)

    @functools.cached_property
    def n_payload_rows(self) -> int:
        """Payload syndrome rows: ``ceil(d / c)`` coordinate rows plus one
        check row in hashed mode, 0 in index mode."""
        if self.mode == "index":
            return 0
        return math.ceil(self.n_dims / self.coords_per_element) + 1

    @functools.cached_property
    def message_words(self) -> int:
        """Field elements per client message: ``2M + n_check_words + rows * M``
        (at most :data:`MAX_MESSAGE_WORDS`)."""
        return self.n_syndromes + self.n_check_words + self.n_payload_rows * self.max_nonzeros


@functools.lru_cache(maxsize=64)
def delta_params(params: ScmaParams, m: int) -> ScmaParams:
    """Parameters of the difference rounds with at most ``m`` changed bins:
    the run's, with ``max_nonzeros = m``, always in the hashed layout.  Its
    payload rows and squared check hash make a change of more than ``m``
    bins fail to decode (probability ~1/p of slipping through), which the
    index layout's ``2m`` power sums alone cannot promise.  Memoized: every
    role and driver of a run asks for the same few sizes."""
    return dataclasses.replace(params, max_nonzeros=m, max_client_nonzeros=m, mode="hashed")


def count_budget(p: int, n_clients: int) -> int:
    """Largest total count one of ``n_clients`` clients may send modulo ``p``."""
    return (int(p) - 1) // (2 * max(int(n_clients), 1))

