"""Uniform lattice quantization with a phase (MUFC, Q-k-means).

A :class:`Lattice` with step ``s`` and phase ``theta`` cuts every axis into
half-open bins ``[(b + theta_j) s, (b + 1 + theta_j) s)``.  Clients of MUFC
(Pan et al., ICLR 2023) quantize their local centroids on it and send bin
counts; Q-k-means (Ginart et al., NeurIPS 2019) quantizes centroids on a
lattice with a fresh random phase at every use.
"""
from __future__ import annotations

import math
import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core import _lattice
from .._validation import check_array
from ..exceptions import InvalidInputError
from ..rng import SeedLike, as_generator

__all__ = ["Lattice"]

_INT64_MAX = np.iinfo(np.int64).max


def _check_step(step: object) -> float:
    if isinstance(step, bool) or not isinstance(step, numbers.Real):
        raise InvalidInputError(f"step must be a real number, got {step!r}")
    step = float(step)
    if not (math.isfinite(step) and step > 0):
        raise InvalidInputError(f"step must be finite and > 0, got {step!r}")
    return step


def _check_count(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(f"{name} must be an int, got {value!r}")
    value = int(value)
    if value < minimum:
        raise InvalidInputError(f"{name}={value} must be >= {minimum}")
    if value > _INT64_MAX:
        raise InvalidInputError(f"{name}={value} must be <= 2**63 - 1")
    return value


def _check_int_array(a: ArrayLike, name: str, ndim: int) -> NDArray[np.int64]:
    """Return ``a`` as a C-contiguous int64 array with ``ndim`` dimensions."""
    try:
        arr = np.asarray(a)
    except Exception as e:  # ragged lists and the like
        raise InvalidInputError(f"{name} could not be converted to an array: {e}") from None
    if ndim == 1 and arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != ndim:
        raise InvalidInputError(
            f"{name} must be a {ndim}-D array, got {arr.ndim}-D with shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise InvalidInputError(f"{name} must be integers, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and int(arr.max()) > _INT64_MAX:
        raise InvalidInputError(f"{name} has values above 2**63 - 1 (int64 range)")
    return np.ascontiguousarray(arr, dtype=np.int64)


def row_keys(bins: ArrayLike) -> NDArray[np.void]:
    """One sortable key per row of nonnegative integer ``bins`` (n, d): the
    row's coordinates as big-endian int64 bytes, which compare like the
    numbers, so keys sort (and ``np.unique`` them) lexicographically by row,
    much faster than ``lexsort`` on d keys or ``unique(axis=0)``.  No input
    validation."""
    bins = np.asarray(bins)
    return np.ascontiguousarray(bins.astype(">i8")).view(
        np.dtype((np.void, 8 * bins.shape[1]))).ravel()


class Lattice:
    """Cubic lattice of step ``step`` shifted by ``phase`` (in units of the step).

    Coordinate ``j`` of a point ``x`` falls into bin
    ``b_j = floor(x_j / step - phase_j)``, which covers
    ``[(b_j + phase_j) * step, (b_j + 1 + phase_j) * step)``.  Bins are
    int64 coordinates; :meth:`flatten` numbers the bins of a ``B^d`` grid in
    row-major order.

    Parameters
    ----------
    step : float
        Bin width, finite and > 0 (MUFC's gamma; ``1/sqrt(n)`` for data in
        the unit hypercube).
    phase : None or array-like of shape (n_features,)
        Shift of the bin edges in units of the step, any finite values
        (``[-1/2, 1/2]`` covers every shift once).  None means no shift and
        lets the lattice accept any number of features.  Use
        :meth:`Lattice.random` for a random phase.

    Attributes
    ----------
    step : float
    phase : ndarray of shape (n_features,) or None
        Read-only copy of the phase.
    n_features : int or None
        Length of the phase, or None when the lattice accepts any dimension.

    Raises
    ------
    InvalidInputError
        ``step`` is not finite and positive, or ``phase`` is not a finite
        1-D array of reals.

    Notes
    -----
    Arithmetic is float64 for float32 and float64 inputs alike, with the
    operation order documented on each method, so a numpy expression with
    the same order reproduces the results bit for bit.  Bin coordinates must
    satisfy ``|x / step - phase| < 2**62`` (headroom below the int64 limit).

    References: Pan, Chien, Milenkovic, "Machine Unlearning of Federated
    Clusters", ICLR 2023 (uniform quantization of client centroids);
    Ginart, Guan, Valiant, Zou, "Making AI Forget You: Data Deletion in
    Machine Learning", NeurIPS 2019 (Q-k-means, random phase).

    Examples
    --------
    >>> import numpy as np
    >>> lat = Lattice(0.5)
    >>> bins = lat.quantize([[0.1, -0.1], [1.2, 0.75]])
    >>> bins
    array([[ 0, -1],
           [ 2,  1]])
    >>> lat.centers(bins)
    array([[ 0.25, -0.25],
           [ 1.25,  0.75]])
    >>> Lattice(0.5, phase=[0.5, -0.5]).quantize([[0.1, -0.1]])
    array([[-1,  0]])
    """

    def __init__(self, step: float, phase: ArrayLike | None = None) -> None:
        self.step = _check_step(step)
        if isinstance(phase, str):
            raise InvalidInputError(
                f"phase must be None or an array of floats, got {phase!r}; for a random "
                "phase use Lattice.random(step, n_features, random_state)")
        if phase is not None:
            phase = check_array(phase, "phase", dtype=(np.float64,), ndim=1).copy()
            phase.flags.writeable = False
        self.phase = phase

    @classmethod
    def random(cls, step: float, n_features: int, random_state: SeedLike = None) -> Lattice:
        """Lattice with a phase drawn uniformly in ``[-1/2, 1/2)^n_features``.

        Q-k-means (Ginart et al., 2019) uses a fresh random phase for every
        quantization: call this once per use, with a new ``random_state``
        or one generator advanced across calls.

        Parameters
        ----------
        step : float
            Bin width, finite and > 0.
        n_features : int
            Dimension, >= 1.
        random_state : None, int, SeedSequence or Generator
            The phase is ``generator.random(n_features) - 0.5`` (one draw
            per coordinate, in order).

        Returns
        -------
        Lattice

        Examples
        --------
        >>> a = Lattice.random(0.1, 3, random_state=7)
        >>> b = Lattice.random(0.1, 3, random_state=7)
        >>> bool((a.phase == b.phase).all()), a.n_features
        (True, 3)
        >>> bool(((a.phase >= -0.5) & (a.phase < 0.5)).all())
        True
        """
        step = _check_step(step)
        d = _check_count(n_features, "n_features", 1)
        generator = as_generator(random_state)
        return cls(step, generator.random(d) - 0.5)

    @property
    def n_features(self) -> int | None:
        return None if self.phase is None else int(self.phase.shape[0])

    def __repr__(self) -> str:
        if self.phase is None:
            return f"Lattice(step={self.step!r})"
        return f"Lattice(step={self.step!r}, phase={self.phase.tolist()!r})"

    def _check_width(self, d: int, name: str) -> None:
        if self.phase is not None and d != self.phase.shape[0]:
            raise InvalidInputError(
                f"{name} has {d} columns but the lattice has "
                f"n_features={self.phase.shape[0]} (length of phase)")

    def _bins(self, bins: ArrayLike, name: str = "bins") -> NDArray[np.int64]:
        bins = _check_int_array(bins, name, 2)
        self._check_width(bins.shape[1], name)
        return bins

    def quantize(self, X: ArrayLike) -> NDArray[np.int64]:
        """Bin coordinates ``floor(X / step - phase)`` of each point.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Points; float32 and float64 are used as is, other real types are
            converted to float64.  Computed as ``float64(x) / step - phase``.

        Returns
        -------
        bins : ndarray of shape (n_samples, n_features), int64

        Raises
        ------
        InvalidInputError
            ``X`` is not 2-D, holds NaN or infinity, or its width differs
            from the phase length.
        CapacityError
            A coordinate ``|x / step - phase|`` reaches ``2**62``.

        Examples
        --------
        >>> Lattice(0.25).quantize([[0.3, -0.3, 0.0]])
        array([[ 1, -2,  0]])
        """
        X = check_array(X, "X", allow_empty=True)
        self._check_width(X.shape[1], "X")
        return _lattice.quantize(X, self.phase, self.step)

    def centers(self, bins: ArrayLike) -> NDArray[np.float64]:
        """Centers ``((bins + 0.5) + phase) * step`` of the given bins.

        Parameters
        ----------
        bins : array-like of int, shape (n_bins, n_features)

        Returns
        -------
        points : ndarray of shape (n_bins, n_features), float64

        Raises
        ------
        InvalidInputError
            ``bins`` is not a 2-D integer array or its width differs from
            the phase length.
        NumericalError
            A center overflows the float64 range.

        Examples
        --------
        >>> Lattice(2.0, phase=[0.25]).centers([[0], [-1]])
        array([[ 1.5],
               [-0.5]])
        """
        bins = self._bins(bins)
        return _lattice.centers(bins, self.phase, self.step)

    def sample(self, bins: ArrayLike, random_state: SeedLike = None) -> NDArray[np.float64]:
        """One point drawn uniformly inside each given bin.

        Point ``i`` is ``((bins[i] + u_i) + phase) * step`` with
        ``u = generator.random(bins.shape)``: the same ``n * d`` draws, in
        row-major order, as that numpy call.

        Parameters
        ----------
        bins : array-like of int, shape (n_points, n_features)
            Repeat a bin to draw several points in it.
        random_state : None, int, SeedSequence or Generator
            Source of the uniform draws (a Generator is advanced).

        Returns
        -------
        points : ndarray of shape (n_points, n_features), float64

        Raises
        ------
        InvalidInputError
            Bad ``bins``, as for :meth:`centers`.
        NumericalError
            A bin reaches beyond the float64 range (nothing is drawn).

        Notes
        -----
        Up to rounding the points lie in their half-open bins; rounding
        ``bins + u`` can reach the upper edge with probability about
        ``|bins| * 2**-53`` per coordinate.

        Examples
        --------
        >>> lat = Lattice(0.5)
        >>> pts = lat.sample([[0, -1], [0, -1]], random_state=0)
        >>> pts.shape
        (2, 2)
        >>> lat.quantize(pts)
        array([[ 0, -1],
               [ 0, -1]])
        """
        bins = self._bins(bins)
        generator = as_generator(random_state)
        return _lattice.sample(bins, self.phase, self.step, generator)

    def _n_bins(self, n_bins: object) -> int:
        return _check_count(n_bins, "n_bins", 1)

    def flatten(self, bins: ArrayLike, n_bins: int) -> NDArray[np.int64]:
        """Row-major index of each bin in a grid of ``n_bins`` bins per axis.

        ``index = ((b_0 * B + b_1) * B + ...) + b_{d-1}`` with ``B = n_bins``;
        the same numbering as :func:`numpy.ravel_multi_index` with
        ``dims=(B,) * d``, without its size limit.

        Parameters
        ----------
        bins : array-like of int, shape (n_points, n_features)
            Each coordinate in ``[0, n_bins)`` (shift quantized bins by the
            grid's lowest bin first).
        n_bins : int
            Bins per dimension ``B >= 1``; ``B ** n_features`` must be at
            most ``2**63 - 1``.

        Returns
        -------
        index : ndarray of shape (n_points,), int64

        Raises
        ------
        InvalidInputError
            ``bins`` is not a 2-D integer array, a coordinate lies outside
            ``[0, n_bins)``, or ``n_bins`` is not an int >= 1.
        CapacityError
            ``n_bins ** n_features`` exceeds ``2**63 - 1``.

        Examples
        --------
        >>> Lattice(0.1).flatten([[1, 2, 3], [0, 0, 1]], n_bins=4)
        array([27,  1])
        """
        n_bins = self._n_bins(n_bins)
        bins = self._bins(bins)
        return _lattice.flatten(bins, n_bins)

    def unflatten(self, indices: ArrayLike, n_bins: int, n_features: int | None = None
                  ) -> NDArray[np.int64]:
        """Bins of row-major grid indices (inverse of :meth:`flatten`).

        Parameters
        ----------
        indices : array-like of int, shape (n_points,)
            Each in ``[0, n_bins ** n_features)``.
        n_bins : int
            Bins per dimension ``B >= 1``.
        n_features : int, optional
            Dimension of the grid; defaults to the lattice's
            ``n_features`` and must match it when both are known.

        Returns
        -------
        bins : ndarray of shape (n_points, n_features), int64

        Raises
        ------
        InvalidInputError
            An index is outside the grid, ``n_bins`` is not an int >= 1, or
            ``n_features`` is missing or differs from the phase length.
        CapacityError
            ``n_bins ** n_features`` exceeds ``2**63 - 1``.

        Examples
        --------
        >>> Lattice(0.1).unflatten([27, 1], n_bins=4, n_features=3)
        array([[1, 2, 3],
               [0, 0, 1]])
        """
        n_bins = self._n_bins(n_bins)
        if n_features is None:
            if self.phase is None:
                raise InvalidInputError(
                    "n_features is required: this lattice has no phase and "
                    "accepts any dimension")
            n_features = self.phase.shape[0]
        d = _check_count(n_features, "n_features", 0)
        if self.phase is not None and d != self.phase.shape[0]:
            raise InvalidInputError(
                f"n_features={d} differs from the lattice's "
                f"n_features={self.phase.shape[0]} (length of phase)")
        indices = _check_int_array(indices, "indices", 1)
        return _lattice.unflatten(indices, n_bins, d)
