"""Exact and floating-point noise samplers over an explicit random stream.

Used by the distributed DP noise of masked secure aggregation
(:mod:`pyfkm.secagg`) and by the DP estimators (:mod:`pyfkm.dp`), which
book the privacy spend (:mod:`pyfkm.dp.accounting`).

Noise streams and the privacy statement of each mode
----------------------------------------------------
:class:`NoiseStream` draws the noise in C (``csrc/fkm_noise.c``).

* ``NoiseStream.secure(key, iteration, tag)``: ChaCha20 (RFC 8439)
  keystream under a 32-byte key, nonce made of (iteration, tag); one stream
  per (key, iteration, tag), so the sum and count noise of an iteration
  (tags ``b"SUM"``, ``b"CNT"``) and the noise of different iterations are
  computationally independent, and equal inputs give equal samples.
* ``NoiseStream.from_generator(random_state)``: numpy's bit generator (not
  cryptographic; for simulations and comparisons, reproducible).
* ``discrete_gaussian`` (the default for fixed-point aggregation): exact
  samples of the discrete Gaussian ``N_Z(0, sigma^2)`` on the integers
  (Canonne, Kamath & Steinke, NeurIPS 2020, Algorithms 1-3), with only
  integer arithmetic in every accept/reject decision (sigma^2 is rounded up
  to a 61-bit rational, see :func:`discrete_gaussian_variance`).  What is
  claimed, for independent noise on each coordinate of an integer-valued
  query of L2 sensitivity ``Delta`` (in fixed-point units):

  1. rigorous: ``Delta^2 / (2 sigma^2)``-zCDP, the same as the continuous
     Gaussian (CKS20); zCDP composes additively, so T iterations that the
     :class:`PrivacyAccountant` books as mu-GDP are ``mu^2/2``-zCDP, hence
     ``(zcdp_epsilon(mu^2/2, delta), delta)``-DP (Bun & Steinke 2016,
     Prop. 1.3), reported by :meth:`PrivacyAccountant.summary` as
     ``epsilon_zcdp``;
  2. the figure the accountant reports as ``epsilon_spent`` is the
     continuous-Gaussian one; CKS20 show that the discrete Gaussian's
     (epsilon, delta) curve differs from it only through the gap between
     discrete and continuous Gaussian tail sums, numerically negligible for
     sigma >= 1 (here sigma is in units of 2^-16, i.e. ~1e4 to 1e7).  We do
     not claim a proof of that figure for the discrete mode; claim 1 is the
     proven one.

  Exactness assumes the random words are uniform (secure mode: up to
  ChaCha20's security as a PRF).
* ``gaussian``: double-precision Gaussian samples (polar Box-Muller from
  53-bit uniforms).  This is the paper's comparison mode.  Its (epsilon,
  delta) statement holds for the ideal real-valued mechanism only: textbook
  floating-point implementations of Gaussian/Laplace noise leak through the
  set of representable outputs (Mironov, CCS 2012), so no formal DP
  guarantee is claimed for this mode.
* ``laplace``: double-precision Laplace (SuLloyd baseline), same caveat.
"""
from __future__ import annotations

import functools
import math
import os
import threading
from fractions import Fraction
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from .._validation import check_int, check_positive
from ..exceptions import InvalidInputError

if TYPE_CHECKING:
    from ..rng import SeedLike

__all__ = ["NoiseStream", "discrete_gaussian_parameters", "discrete_gaussian_variance",
           "new_noise_key", "secure_nonce"]


def _float_scale(x: float, name: str) -> float:
    """A positive noise scale small enough that every sample stays finite
    (samples are at most ~1e3 scales from 0)."""
    x = check_positive(x, name)
    if x > 2.0 ** 500:
        raise InvalidInputError(f"{name}={x} is too large: samples would overflow float64")
    return x


def new_noise_key(random_state: SeedLike = None) -> bytes:
    """A 32-byte ChaCha20 key for :meth:`NoiseStream.secure`.

    ``None`` (the default) reads ``os.urandom`` (secret).  Any other value
    derives the key from ``random_state`` through :func:`pyfkm.rng.as_generator`:
    reproducible, for tests and simulations only, and **not secret**.

    Parameters
    ----------
    random_state : None, int, SeedSequence or Generator, default=None
        ``None``: a secret key from the operating system; anything else: a
        reproducible, public key.

    Returns
    -------
    key : bytes
        32 bytes.

    Examples
    --------
    >>> len(new_noise_key()), new_noise_key(0) == new_noise_key(0)
    (32, True)
    """
    if random_state is None:
        return os.urandom(32)
    from ..rng import as_generator
    return as_generator(random_state).bytes(32)


_Array = TypeVar("_Array", bound="np.ndarray[Any, Any]")

_KIND = {"gaussian": 0, "laplace": 1, "discrete_gaussian": 2, "discrete_laplace": 3,
         "bernoulli_exp": 4}
_SIGMA_MIN, _SIGMA_MAX = 2.0 ** -10, 2.0 ** 30


@functools.lru_cache(maxsize=256)
def _sigma2_rational(sigma: float) -> tuple[int, int]:
    """(P, Q): the smallest P/Q >= sigma^2 with Q = 2^k (k <= 62), P < 2^61
    and the C sampler's bounds (2 P Q t^2 < 2^127, Q t < 2^64)."""
    s2 = Fraction(sigma) ** 2
    for k in range(62, -1, -1):
        Q = 1 << k
        P = -((-s2.numerator * Q) // s2.denominator)  # ceil(s2 * Q)
        if P >= 1 << 61:
            continue
        t = math.isqrt(P // Q) + 1
        if 2 * P * Q * t * t < 1 << 127 and Q * t < 1 << 64:
            return P, Q
    raise InvalidInputError(f"sigma={sigma} is too large for the discrete Gaussian sampler")


def secure_nonce(iteration: int, tag: bytes) -> bytes:
    """The 12-byte ChaCha20 nonce of :meth:`NoiseStream.secure` for
    ``(iteration, tag)``: ``tag`` zero-padded to 4 bytes, then ``iteration``
    as 8 little-endian bytes.

    Parameters
    ----------
    iteration : int
        0 <= iteration < 2**64.
    tag : bytes
        1 to 4 bytes without NUL.

    Returns
    -------
    nonce : bytes
        12 bytes.

    Raises
    ------
    InvalidInputError
        If ``iteration`` or ``tag`` is invalid.

    Examples
    --------
    >>> secure_nonce(3, b"SUM").hex()
    '53554d000300000000000000'
    """
    iteration = check_int(iteration, "iteration", 0)
    if iteration >= 1 << 64:
        raise InvalidInputError(f"iteration={iteration} must be < 2**64")
    if (not isinstance(tag, (bytes, bytearray)) or not 1 <= len(tag) <= 4
            or b"\0" in tag):
        raise InvalidInputError(f"tag={tag!r} must be 1 to 4 bytes without NUL, e.g. b'SUM'")
    return bytes(tag).ljust(4, b"\0") + iteration.to_bytes(8, "little")


def discrete_gaussian_parameters(sigma: float) -> tuple[int, int]:
    """``(P, Q)``: the exact variance ``P / Q`` that
    :meth:`NoiseStream.discrete_gaussian` samples with for ``sigma`` (see
    :func:`discrete_gaussian_variance`, which returns it reduced), as the
    sampler kernel takes it.

    Parameters
    ----------
    sigma : float
        The requested standard deviation, in ``[2**-10, 2**30]``.

    Returns
    -------
    P, Q : int
        ``sigma'^2 = P / Q`` with ``Q`` a power of two.

    Raises
    ------
    InvalidInputError
        If ``sigma`` is out of range.

    Examples
    --------
    >>> discrete_gaussian_parameters(2.0) == (4 << 58, 1 << 58)
    True
    """
    return _sigma2_rational(_check_sigma(sigma))


def _check_sigma(sigma: float, name: str = "sigma") -> float:
    sigma = check_positive(sigma, name)
    if not _SIGMA_MIN <= sigma <= _SIGMA_MAX:
        raise InvalidInputError(
            f"{name}={sigma} must be in [2**-10, 2**30] for the discrete Gaussian sampler; "
            "rescale the fixed-point domain")
    return sigma


def discrete_gaussian_variance(sigma: float) -> Fraction:
    """The exact variance parameter sigma'^2 used for ``discrete_gaussian(n, sigma)``.

    sigma^2 is rounded *up* to a rational ``P / 2^k`` with ``P < 2^61``
    and ``2^k <= 2^62`` (relative increase below ``1 / P``: about 2^-59 for
    sigma >= 1, up to about 2^-45 for the smallest sigma, 2^-10), so the
    sampled N_Z(0, sigma'^2) has at least the requested noise.

    Parameters
    ----------
    sigma : float
        The requested standard deviation, ``2**-10 <= sigma <= 2**30``.

    Returns
    -------
    variance : fractions.Fraction
        sigma'^2 >= sigma^2, exactly.

    Raises
    ------
    InvalidInputError
        If ``sigma`` is out of range.

    Examples
    --------
    >>> discrete_gaussian_variance(1.5)
    Fraction(9, 4)
    """
    sigma = _check_sigma(sigma)
    P, Q = _sigma2_rational(sigma)
    return Fraction(P, Q)


class NoiseStream:
    """One reproducible stream of noise samples (see the module notes for
    the privacy statement of each mode).

    Build it with :meth:`secure` (ChaCha20 keystream, for real runs) or
    :meth:`from_generator` (numpy, for simulations).  Successive calls
    continue the stream; the result of a call depends only on the stream's
    inputs and on the calls made before it.  A stream is safe to share
    between threads (calls are serialized) but is meant to be used by one.

    Parameters
    ----------
    *_args
        Not accepted: ``NoiseStream(...)`` raises; build a stream with
        :meth:`secure` or :meth:`from_generator`.
    **_kwargs
        Not accepted either.

    Examples
    --------
    >>> key = new_noise_key(0)            # reproducible, NOT secret
    >>> a = NoiseStream.secure(key, iteration=3, tag=b"SUM").gaussian(4, sigma=2.0)
    >>> b = NoiseStream.secure(key, iteration=3, tag=b"SUM").gaussian(4, sigma=2.0)
    >>> c = NoiseStream.secure(key, iteration=3, tag=b"CNT").gaussian(4, sigma=2.0)
    >>> bool((a == b).all()), bool((a == c).any())
    (True, False)
    >>> z = NoiseStream.from_generator(0).discrete_gaussian(5, sigma=1e6)
    >>> z.dtype, z.shape
    (dtype('int64'), (5,))
    """

    # set by _make: the ChaCha20 stream of secure mode (else None), the
    # generator otherwise, the repr, the lock of the draws
    _impl: Any
    _generator: np.random.Generator | None
    _desc: str
    _lock: threading.Lock

    def __init__(self, *_args: object, **_kwargs: object) -> None:
        raise TypeError("use NoiseStream.secure(key, iteration, tag) or "
                        "NoiseStream.from_generator(random_state)")

    @classmethod
    def _make(cls, impl: Any, generator: np.random.Generator | None, desc: str) -> NoiseStream:
        self = object.__new__(cls)
        self._impl = impl
        self._generator = generator
        self._desc = desc
        self._lock = threading.Lock()
        return self

    @classmethod
    def secure(cls, key: bytes, iteration: int, tag: bytes) -> NoiseStream:
        """ChaCha20 (RFC 8439) stream for one (key, iteration, tag).

        Parameters
        ----------
        key : bytes
            32 secret bytes (:func:`new_noise_key`).
        iteration : int
            0 <= iteration < 2**64, e.g. the Lloyd iteration.
        tag : bytes
            1 to 4 bytes without NUL, e.g. ``b"SUM"`` or ``b"CNT"``.

        Returns
        -------
        stream : NoiseStream
            A new stream at the start of its keystream.

        Raises
        ------
        InvalidInputError
            If ``key``, ``iteration`` or ``tag`` is invalid.

        Notes
        -----
        The 96-bit nonce is ``tag`` zero-padded to 4 bytes followed by
        ``iteration`` as 8 little-endian bytes, the block counter starts
        at 0: distinct (iteration, tag) give distinct nonces, hence
        computationally independent streams under one key.  A stream
        yields at most 2**32 blocks (2**35 words); drawing beyond raises
        :class:`pyfkm.exceptions.CapacityError`.
        """
        if not isinstance(key, (bytes, bytearray)) or len(key) != 32:
            raise InvalidInputError("key must be 32 bytes (use pyfkm.dp.new_noise_key())")
        nonce = secure_nonce(iteration, tag)
        from .._core import _noise
        impl = _noise.ChaChaStream(np.frombuffer(bytes(key), np.uint8),
                                   np.frombuffer(nonce, np.uint8), 0)
        return cls._make(impl, None, f"secure(iteration={int(iteration)}, tag={bytes(tag)!r})")

    @classmethod
    def from_generator(cls, random_state: SeedLike = None) -> NoiseStream:
        """Stream drawing from a numpy Generator (not cryptographic).

        ``random_state`` is anything :func:`pyfkm.rng.as_generator`
        accepts; a Generator passed in is advanced by the draws.

        Parameters
        ----------
        random_state : None, int, SeedSequence or Generator, default=None
            The source of the draws.

        Returns
        -------
        stream : NoiseStream
            A new stream.
        """
        from ..rng import as_generator
        return cls._make(None, as_generator(random_state), "from_generator")

    @property
    def secure_mode(self) -> bool:
        """True for a ChaCha20 stream."""
        return self._impl is not None

    def __repr__(self) -> str:
        return f"NoiseStream.{self._desc}"

    def _sample(self, kind: int, out: _Array, x: float = 0.0, a: int = 0, b: int = 0) -> _Array:
        from .._core import _noise
        with self._lock:
            if self._impl is not None:
                self._impl.sample(kind, out, x, a, b)
            else:
                _noise.sample_generator(self._generator, kind, out, x, a, b)
        return out

    @staticmethod
    def _n(n: int) -> int:
        n = check_int(n, "n", 0)
        return n

    def gaussian(self, n: int, sigma: float) -> NDArray[np.float64]:
        """n samples of N(0, sigma^2) as float64 (polar method).

        Floating-point noise: the paper's comparison mode, no formal DP
        guarantee (Mironov 2012); prefer :meth:`discrete_gaussian`.

        Parameters
        ----------
        n : int
            Number of samples (>= 0).
        sigma : float
            Standard deviation (> 0).

        Returns
        -------
        samples : ndarray of shape (n,), float64
            The draws.
        """
        n = self._n(n)
        sigma = _float_scale(sigma, "sigma")
        return self._sample(_KIND["gaussian"], np.empty(n, np.float64), sigma)

    def laplace(self, n: int, scale: float) -> NDArray[np.float64]:
        """n samples of Laplace(0, scale) as float64 (density
        ``exp(-|x|/scale) / (2 scale)``); floating point, as :meth:`gaussian`.

        Parameters
        ----------
        n : int
            Number of samples (>= 0).
        scale : float
            The scale b (> 0).

        Returns
        -------
        samples : ndarray of shape (n,), float64
            The draws.
        """
        n = self._n(n)
        scale = _float_scale(scale, "scale")
        return self._sample(_KIND["laplace"], np.empty(n, np.float64), scale)

    def discrete_gaussian(self, n: int, sigma: float) -> NDArray[np.int64]:
        """n exact samples of the discrete Gaussian N_Z(0, sigma^2) as int64.

        ``P[x] = exp(-x^2/(2 sigma'^2)) / sum_y exp(-y^2/(2 sigma'^2))`` on
        the integers, with ``sigma'^2 = discrete_gaussian_variance(sigma)``
        (sigma^2 rounded up, see :func:`discrete_gaussian_variance`).  Exact sampler of
        Canonne, Kamath & Steinke (2020), integer arithmetic only;
        ``2**-10 <= sigma <= 2**30``.

        Parameters
        ----------
        n : int
            Number of samples (>= 0).
        sigma : float
            The requested standard deviation.

        Returns
        -------
        samples : ndarray of shape (n,), int64
            The draws.

        Raises
        ------
        InvalidInputError
            If ``sigma`` is out of range.
        """
        n = self._n(n)
        sigma = _check_sigma(sigma)
        P, Q = _sigma2_rational(sigma)
        return self._sample(_KIND["discrete_gaussian"], np.empty(n, np.int64), 0.0, P, Q)

    def discrete_laplace(self, n: int, t: int) -> NDArray[np.int64]:
        """n exact samples with ``P[x]`` proportional to ``exp(-|x|/t)`` on
        the integers (integer scale ``1 <= t <= 2**62``), as int64.

        Parameters
        ----------
        n : int
            Number of samples (>= 0).
        t : int
            The integer scale, ``1 <= t <= 2**62``.

        Returns
        -------
        samples : ndarray of shape (n,), int64
            The draws.
        """
        n = self._n(n)
        t = check_int(t, "t", 1)
        if t > 1 << 62:
            raise InvalidInputError(f"t={t} must be <= 2**62")
        return self._sample(_KIND["discrete_laplace"], np.empty(n, np.int64), 0.0, t)

    def _bernoulli_exp(self, n: int, num: int, den: int) -> NDArray[np.uint8]:
        """n exact Bernoulli(exp(-num/den)) draws as uint8 (for tests)."""
        return self._sample(_KIND["bernoulli_exp"], np.empty(self._n(n), np.uint8),
                            0.0, int(num), int(den))
