"""Public parameters of an SCMA run."""
import functools
import math
import operator
import os
from dataclasses import dataclass

from ..exceptions import InvalidInputError
from ..field import DEFAULT_PRIME, is_prime

MODES = ("index", "hashed")
MAX_NONZEROS_LIMIT = 1 << 22   # 4M distinct bins: 8M syndromes, 64 MiB per message
MAX_DIMS = 1 << 20


def _int(value, name, lo, hi=None):
    try:
        v = operator.index(value)
    except TypeError:
        raise InvalidInputError(f"{name} must be an integer, got {type(value).__name__}") from None
    if v < lo or (hi is not None and v > hi):
        bound = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise InvalidInputError(f"{name} must be {bound}, got {v}")
    return v


def coords_per_element(bins_per_dim, modulus):
    """Largest c with bins_per_dim**c < modulus (coordinates packed per field element)."""
    if bins_per_dim == 1:
        return 64
    c = 0
    while bins_per_dim ** (c + 1) < modulus:
        c += 1
    return c


def _random_bytes(n, random_state):
    if random_state is None:
        return os.urandom(n)
    from ..rng import as_generator
    return as_generator(random_state).bytes(n)


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
        needs ``B**d < p``; ``"hashed"`` maps ``b`` to a public random
        linear hash and sends the bin coordinates as payload syndromes.
    hash_seed : bytes
        32 public bytes seeding the hash of the hashed mode.
    max_client_nonzeros : int
        Largest number of nonzero bins one client may send (default ``M``).
    run_id : bytes
        16 bytes naming the run; bound into every pairwise seed.

    Use :meth:`create` to pick the mode automatically and draw ``run_id``
    and ``hash_seed``.
    """

    n_dims: int
    bins_per_dim: int
    max_nonzeros: int
    modulus: int = DEFAULT_PRIME
    mode: str = "hashed"
    hash_seed: bytes = bytes(32)
    max_client_nonzeros: int = 0
    run_id: bytes = bytes(16)

    def __post_init__(self):
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
        if self.mode == "index" and B ** d >= p:
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

    @classmethod
    def create(cls, n_dims, bins_per_dim, max_nonzeros, *, modulus=DEFAULT_PRIME,
               mode="auto", max_client_nonzeros=None, run_id=None, random_state=None):
        """Parameters with ``mode="auto"`` resolved (index iff ``B**d < p``)
        and ``run_id`` / ``hash_seed`` drawn from ``random_state`` (OS
        randomness when None).

        >>> P = ScmaParams.create(2, 10, 8, random_state=0)
        >>> P.mode, P.n_syndromes, P.message_words
        ('index', 16, 16)
        """
        d = _int(n_dims, "n_dims", 1, MAX_DIMS)
        B = _int(bins_per_dim, "bins_per_dim", 1)
        p = _int(modulus, "modulus", 3, (1 << 63) - 1)
        if mode == "auto":
            mode = "index" if B ** d < p else "hashed"
        raw = _random_bytes(48, random_state)
        return cls(n_dims=d, bins_per_dim=B, max_nonzeros=max_nonzeros, modulus=p,
                   mode=mode, hash_seed=raw[16:], run_id=run_id if run_id is not None else raw[:16],
                   max_client_nonzeros=max_client_nonzeros or 0)

    @property
    def n_syndromes(self):
        """``2M`` power sums of the counts."""
        return 2 * self.max_nonzeros

    @functools.cached_property
    def coords_per_element(self):
        """Bin coordinates packed into one payload element (hashed mode)."""
        return min(coords_per_element(self.bins_per_dim, self.modulus), self.n_dims)

    @functools.cached_property
    def n_payload_rows(self):
        """Payload syndrome rows: ``ceil(d / c)`` coordinate rows plus one
        check row in hashed mode, 0 in index mode."""
        if self.mode == "index":
            return 0
        return math.ceil(self.n_dims / self.coords_per_element) + 1

    @functools.cached_property
    def message_words(self):
        """Field elements per client message: ``2M + rows * M``."""
        return self.n_syndromes + self.n_payload_rows * self.max_nonzeros
