# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython wrappers of csrc/fkm_lattice.c (quantize, centers, sample, flatten).

No input validation beyond what protects memory: callers in pyfkm.core.lattice
pass C-contiguous arrays of the right dtypes (X float32/float64 2-D, bins
int64 2-D, indices int64 1-D, phase None or float64 of length d) and a
finite positive step.  The kernels' own checks (NaN, overflow, bins out of
the grid) become exceptions with messages that point at the culprit.
"""
import numpy as np

from libc.stdint cimport int64_t
from numpy.random cimport bitgen_t
from pyfkm._core._csrc cimport (fkm_rng_t, fkm_index_t, FKM_OK, FKM_EDOM,
                                FKM_EOVERFLOW, FKM_ENONFINITE,
                                fkm_lattice_quantize_f64, fkm_lattice_quantize_f32,
                                fkm_lattice_centers, fkm_lattice_sample,
                                fkm_lattice_grid_size, fkm_lattice_flatten,
                                fkm_lattice_unflatten)
from pyfkm._core._common cimport check_status, bitgen_of, rng_from_bitgen

from pyfkm.exceptions import CapacityError, InvalidInputError, NumericalError


cdef const double *_phase_ptr(object phase, const double[::1] view,
                               fkm_index_t d) except? NULL:
    """The phase's data, NULL for no phase; a phase whose length is not the
    number of columns is refused (the kernels read d entries)."""
    if phase is None:
        return NULL
    if view.shape[0] != d:
        raise ValueError(f"phase has {view.shape[0]} entries, expected one per "
                         f"feature ({d})")
    if d == 0:
        return NULL
    return &view[0]


def _first_where(mask):
    """Position (tuple) of the first True entry of a boolean array."""
    return tuple(int(v) for v in np.unravel_index(int(np.argmax(mask)), mask.shape))


def _grid_overflow(int64_t n_bins, fkm_index_t d):
    return CapacityError(
        f"n_bins**n_features = {n_bins}**{d} exceeds 2**63 - 1, the largest "
        f"int64 bin index; use fewer bins per dimension or fewer features")


def quantize(object X, object phase, double step):
    """int64 bins floor(X / step - phase) of C-contiguous float X."""
    cdef fkm_index_t n = X.shape[0], d = X.shape[1]
    cdef const double[:, ::1] X64
    cdef const float[:, ::1] X32
    cdef const double[::1] ph = phase
    cdef const double *pp = _phase_ptr(phase, ph, d)
    bins = np.empty((n, d), dtype=np.int64)
    cdef int64_t[:, ::1] b = bins
    cdef int status = FKM_OK
    if n * d == 0:
        return bins
    if X.dtype == np.float64:
        X64 = X
        with nogil:
            status = fkm_lattice_quantize_f64(&b[0, 0], &X64[0, 0], pp, n, d, step)
    else:
        X32 = X
        with nogil:
            status = fkm_lattice_quantize_f32(&b[0, 0], &X32[0, 0], pp, n, d, step)
    if status == FKM_ENONFINITE:
        raise InvalidInputError("X contains NaN or infinity")
    if status == FKM_EOVERFLOW:
        with np.errstate(over="ignore", invalid="ignore"):
            t = np.asarray(X, dtype=np.float64) / step
            if phase is not None:
                t -= phase
        i, j = _first_where(~(np.abs(t) < 2.0 ** 62))
        raise CapacityError(
            f"X[{i}, {j}] / step - phase = {t[i, j]:.6g} is beyond the int64 bin "
            f"range (|value| < 2**62); use a larger step (step={step:.6g})")
    check_status(status, "lattice quantize")
    return bins


def _check_finite_out(int status, str what):
    if status == FKM_ENONFINITE:
        raise NumericalError(
            f"{what} overflow the float64 range: |bins| * step is too large")
    check_status(status, f"lattice {what}")


def centers(object bins, object phase, double step):
    """float64 centers (bins + 0.5 + phase) * step of C-contiguous int64 bins."""
    return _points_in_bins(bins, phase, step, False, None)


def sample(object bins, object phase, double step, object generator):
    """float64 points (bins + U + phase) * step, U = generator.random((n, d))."""
    return _points_in_bins(bins, phase, step, True, generator)


cdef object _points_in_bins(object bins, object phase, double step, bint draw,
                            object generator):
    """One float64 point per row of bins: the bin's center
    (fkm_lattice_centers), or with draw a uniform point in it drawn from
    generator (fkm_lattice_sample)."""
    cdef fkm_index_t n = bins.shape[0], d = bins.shape[1]
    cdef const int64_t[:, ::1] b = bins
    cdef const double[::1] ph = phase
    cdef const double *pp = _phase_ptr(phase, ph, d)
    out = np.empty((n, d), dtype=np.float64)
    cdef double[:, ::1] o = out
    cdef bitgen_t *bg = bitgen_of(generator) if draw else NULL
    cdef fkm_rng_t rng
    cdef int status = FKM_OK
    if n * d == 0:
        return out
    if not draw:
        with nogil:
            status = fkm_lattice_centers(&o[0, 0], &b[0, 0], pp, n, d, step)
        _check_finite_out(status, "bin centers")
        return out
    rng_from_bitgen(&rng, bg)
    with generator.bit_generator.lock:
        with nogil:
            status = fkm_lattice_sample(&rng, &o[0, 0], &b[0, 0], pp, n, d, step)
    _check_finite_out(status, "sampled points")
    return out


def grid_size(fkm_index_t d, int64_t n_bins):
    """n_bins**d as an int; CapacityError when it exceeds 2**63 - 1."""
    cdef int64_t size = 0
    cdef int status = fkm_lattice_grid_size(&size, d, n_bins)
    if status == FKM_EOVERFLOW:
        raise _grid_overflow(n_bins, d)
    check_status(status, "lattice grid size")
    return size


def flatten(object bins, int64_t n_bins):
    """Row-major int64 index of each row of C-contiguous int64 bins."""
    cdef fkm_index_t n = bins.shape[0], d = bins.shape[1]
    cdef const int64_t[:, ::1] b = bins
    index = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] idx = index
    cdef const int64_t *bp = &b[0, 0] if n * d > 0 else NULL
    cdef int status = FKM_OK
    if n == 0:
        grid_size(d, n_bins)
        return index
    with nogil:
        status = fkm_lattice_flatten(&idx[0], bp, n, d, n_bins)
    if status == FKM_EOVERFLOW:
        raise _grid_overflow(n_bins, d)
    if status == FKM_EDOM and n_bins >= 1:
        i, j = _first_where((bins < 0) | (bins >= n_bins))
        raise InvalidInputError(
            f"bins must lie in [0, n_bins={n_bins}); bins[{i}, {j}] = {bins[i, j]}")
    check_status(status, "lattice flatten")
    return index


def unflatten(object index, int64_t n_bins, fkm_index_t d):
    """int64 bins (n x d) of C-contiguous int64 row-major indices."""
    cdef fkm_index_t n = index.shape[0]
    cdef const int64_t[::1] idx = index
    bins = np.zeros((n, d), dtype=np.int64)
    cdef int64_t[:, ::1] b = bins
    cdef int64_t *bp = &b[0, 0] if n * d > 0 else NULL
    cdef int status = FKM_OK
    cdef int64_t size = grid_size(d, n_bins)
    if n == 0:
        return bins
    with nogil:
        status = fkm_lattice_unflatten(bp, &idx[0], n, d, n_bins)
    if status == FKM_EDOM:
        (i,) = _first_where((index < 0) | (index >= size))
        raise InvalidInputError(
            f"indices must lie in [0, n_bins**n_features = {n_bins}**{d} = {size}); "
            f"indices[{i}] = {index[i]}")
    check_status(status, "lattice unflatten")
    return bins
