"""Noise of MSA: the clients' shares of distributed discrete Gaussian noise.

Private fits use *distributed* discrete Gaussian noise: each client adds its
share (:func:`client_noise`, scale ``sigma / sqrt(threshold)``) from a
ChaCha20 stream under a fresh OS key; no party holds the noise and neither
the server nor fewer than ``threshold`` clients can remove it (the
guarantee and its accounting are in ``docs/threat_model.md``).  The
server's own noise modes (``noise="gaussian"`` or ``"laplace"`` of
:class:`~pyfkm.secagg.MsaServer`) serve the trusted-curator baselines only.
"""
from __future__ import annotations

import functools
from typing import Iterable

import numpy as np
from numpy.typing import NDArray

from ...core import kernels as _kernels
from ...core.noise import discrete_gaussian_parameters, new_noise_key, secure_nonce
from ...exceptions import CapacityError, InvalidInputError
from ._fixed import DEFAULT_SCALE_BITS

SERVER_NOISE_MODES = ("gaussian", "laplace", None)
MIN_SHARE_SCALE = 2.0         # smallest per-client noise scale, fixed-point units
NOISE_MODES = ("discrete_gaussian", "gaussian", "laplace", None)
DISCRETE_SIGMA_RANGE = (2.0 ** -10, 2.0 ** 30)   # of pyfkm.core.noise's discrete sampler


def check_discrete_sigma(scales: Iterable[float], scale_bits: int = DEFAULT_SCALE_BITS) -> None:
    """Raise :class:`CapacityError` unless every positive real standard
    deviation in ``scales``, in fixed-point units (``* 2**scale_bits``), is
    within the discrete Gaussian sampler's range ``[2**-10, 2**30]``.

    Parameters
    ----------
    scales : iterable of float
        Standard deviations in real units (nonpositive ones are ignored).
    scale_bits : int, default=DEFAULT_SCALE_BITS
        Fixed-point fraction bits (16).

    Raises
    ------
    CapacityError
        If a scale is outside the sampler's range once scaled.

    Examples
    --------
    >>> check_discrete_sigma([0.5, 2.0])          # 2**15 and 2**17 units: fine
    >>> check_discrete_sigma([2.0 ** 20])
    Traceback (most recent call last):
    ...
    pyfkm.exceptions.CapacityError: ...outside the discrete Gaussian sampler's range...
    """
    lo, hi = DISCRETE_SIGMA_RANGE
    for s in scales:
        s = float(s)
        if s > 0 and not lo <= np.ldexp(s, int(scale_bits)) <= hi:
            raise CapacityError(
                f"noise sigma {s:.6g} is {np.ldexp(s, int(scale_bits)):.4g} in fixed-point "
                f"units, outside the discrete Gaussian sampler's range [2**-10, 2**30]; "
                "use a larger epsilon, noise='gaussian', or smaller scale_bits")


def client_noise(segments: Iterable[tuple[int, float, bytes]], n_words: int, threshold: int,
                 scale_bits: int, round_: int, limit: int) -> NDArray[np.uint64]:
    """One client's share of distributed discrete Gaussian noise: for each
    ``(length, sigma, tag)`` segment, ``length`` samples of the discrete
    Gaussian of scale ``sigma * 2**scale_bits / sqrt(threshold)`` (fixed-point
    units), from a ChaCha20 stream under a fresh OS key.  As int64 words of
    Z_2^64 (uint64, two's complement); raises :class:`CapacityError` if a
    sample reaches ``limit``."""
    return add_client_noise(np.zeros(int(n_words), np.uint64), segments, n_words, threshold,
                            scale_bits, round_, limit)


def add_client_noise(acc: NDArray[np.uint64], segments: Iterable[tuple[int, float, bytes]],
                     n_words: int, threshold: int, scale_bits: int, round_: int,
                     limit: int) -> NDArray[np.uint64]:
    """``acc += client_noise(...)`` in place (modulo 2**64; ``acc``: a
    writable contiguous uint64 vector of ``n_words``), every segment's stream
    ``NoiseStream.secure(key, round_, tag)`` under one fresh OS key, drawn
    and checked in one C call (``fkm_ring_add_dgauss``); ``acc`` is unchanged
    when it raises."""
    segments = tuple(segments)
    args = (segments, int(n_words), int(threshold), int(scale_bits))
    try:
        plan = _kernel_plan(*args)
    except TypeError:             # unhashable segments (a bytearray tag): not cached
        plan = _kernel_plan.__wrapped__(*args)
    tags, lengths, P, Q = plan
    if acc.shape != (int(n_words),):
        raise InvalidInputError(f"the vector has {acc.shape} words, expected {n_words}")
    r = int(round_)
    if not 0 <= r < 1 << 64:
        raise InvalidInputError(f"round {round_} must be in [0, 2**64)")
    r8 = r.to_bytes(8, "little")
    nonces = b"".join([t + r8 for t in tags])       # secure_nonce(round_, tag) each
    key = new_noise_key()         # 32 bytes from the OS, fresh every call
    status = _kernels.noise.ring_add_dgauss(acc, np.frombuffer(key, np.uint8),
                                            np.frombuffer(nonces, np.uint8), lengths, P, Q,
                                            int(limit))
    if status == _kernels.noise.RING_ELIMIT:
        raise CapacityError("a noise sample reaches the capacity of one share")
    if status:
        raise CapacityError("noise stream exhausted or the sampler overflowed (probability "
                            "below exp(-2**30)); use a new round")
    return acc


@functools.lru_cache(maxsize=64)
def _kernel_plan(segments: tuple[tuple[int, float, bytes], ...], n_words: int, threshold: int,
                 scale_bits: int) -> tuple[tuple[bytes, ...], NDArray[np.int64],
                                           NDArray[np.uint64], NDArray[np.uint64]]:
    """:func:`_noise_plan` as the kernel's arrays: the tags (zero-padded to
    4 bytes, the nonce's prefix), the lengths and
    each segment's exact variance ``P / Q`` (``P = 0``: no noise), read-only
    (public parameters, checked once; a failing check raises every time)."""
    try:
        plan = _noise_plan(segments, n_words, threshold, scale_bits)
    except TypeError:             # unhashable segments: not cached either
        plan = _noise_plan.__wrapped__(segments, n_words, threshold, scale_bits)
    tags, lengths, P, Q = [], [], [], []
    for length, tag, units in plan:
        # NoiseStream.secure's check of the tag (no NUL), its padded nonce prefix
        pad = secure_nonce(0, tag)[:4]
        p, q = (0, 1) if units == 0 else discrete_gaussian_parameters(units)
        tags.append(pad)
        lengths.append(length)
        P.append(p)
        Q.append(q)
    arrays = (np.array(lengths, np.int64), np.array(P, np.uint64), np.array(Q, np.uint64))
    for a in arrays:
        a.setflags(write=False)
    return (tuple(tags),) + arrays


@functools.lru_cache(maxsize=64)
def _noise_plan(segments: tuple[tuple[int, float, bytes], ...], n_words: int, threshold: int,
                scale_bits: int) -> tuple[tuple[int, bytes, float], ...]:
    """The checked segments of :func:`client_noise`: ``(length, tag, scale in
    fixed-point units)`` each (public parameters, the same every round:
    checked once; a failing check raises every time, nothing is cached)."""
    if sum(int(sg[0]) for sg in segments) != n_words:
        raise InvalidInputError("noise segments must cover the vector exactly")
    tags = [bytes(sg[2]) for sg in segments]
    if len(set(tags)) != len(tags) or any(not 1 <= len(t) <= 4 for t in tags):
        raise InvalidInputError("segment tags must be distinct, 1 to 4 bytes")
    scales = []
    for sg in segments:
        sigma = float(sg[1])
        if not (sigma >= 0 and np.isfinite(sigma)):
            raise InvalidInputError("noise scales must be finite and >= 0")
        scales.append(sigma / np.sqrt(threshold))
    check_discrete_sigma(scales, scale_bits)
    for sc in scales:
        # the distributed accounting (a sum of discrete Gaussians as one
        # Gaussian, Kairouz, Liu and Steinke 2021) needs shares of at least
        # 2 grid units: its error term is then below 1e-15 per client
        if 0 < sc and np.ldexp(sc, scale_bits) < MIN_SHARE_SCALE:
            raise CapacityError(
                f"a client's noise share of scale {np.ldexp(sc, scale_bits):.3g} fixed-point "
                f"units is below {MIN_SHARE_SCALE}: the distributed noise accounting would not "
                "hold; use a smaller epsilon or a larger scale_bits")
    return tuple((int(length), bytes(tag), 0 if sc == 0 else float(np.ldexp(sc, scale_bits)))
                 for (length, _, tag), sc in zip(segments, scales))
