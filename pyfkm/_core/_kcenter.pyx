# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython wrappers of csrc/fkm_kcenter.c ((k,z)-center kernels).

No input validation beyond what protects memory: pyfkm.outliers passes
C-contiguous float64 points (finite), int64 weights and squared radii.
``D`` arguments are either a :class:`Matrix` of ``X`` or None (rows are
then recomputed from ``X``); decisions are exact in both cases.
"""
import numpy as np

from libc.stdlib cimport malloc, free
from libc.stdint cimport int64_t, uint8_t
from pyfkm._core._csrc cimport (fkm_index_t, fkm_kcenter_sqdist,
                                fkm_kcenter_sqdist_f32,
                                fkm_kcenter_nearest, fkm_kcenter_aggregate,
                                fkm_kcenter_greedy, fkm_kcenter_nn,
                                fkm_kctree_t, fkm_kctree_build, fkm_kctree_free,
                                fkm_kctree_nn, fkm_kctree_aggregate)
from pyfkm._core._common cimport check_status


cdef class Matrix:
    """The n x n squared distances of X rounded to float32, in a plain
    malloc'd buffer (the kernels settle rounding ties exactly from X).

    (numpy asks the kernel for transparent huge pages on large arrays;
    faulting those in costs several times more than ordinary pages on some
    virtual machines, and this matrix is rebuilt for every fit.)
    """
    cdef float *data
    cdef readonly fkm_index_t n

    def __cinit__(self, const double[:, ::1] X):
        # deliberate specialization: Matrix and Tree are the two indexes of X
        # the kernels take; their constructors share only the build-and-check
        # shape around different C objects.
        cdef fkm_index_t n = X.shape[0], d = X.shape[1]
        cdef int status
        self.n = n
        self.data = <float *>malloc(max(n * n, 1) * sizeof(float))
        if self.data == NULL:
            raise MemoryError("squared-distance matrix: out of memory")
        if n > 0:
            with nogil:
                status = fkm_kcenter_sqdist_f32(self.data, &X[0, 0], n, d)
            check_status(status, "squared distances")

    def __dealloc__(self):
        free(self.data)

    def __reduce__(self):
        raise TypeError("Matrix is not picklable; rebuild it from the points")


cdef const float *_dptr(object D, fkm_index_t n) except? NULL:
    cdef Matrix M
    if D is None:
        return NULL
    if not isinstance(D, Matrix):
        raise TypeError("D must be a Matrix or None")
    M = D
    if M.n != n:
        raise ValueError("D must be the Matrix of X")
    return M.data


def sqdist(const double[:, ::1] X, const double[:, ::1] Y):
    """Squared distances, shape (len(X), len(Y)) (sequential sums of
    squared coordinate differences).  Releases the GIL."""
    cdef fkm_index_t n = X.shape[0], m = Y.shape[0], d = X.shape[1]
    if Y.shape[1] != d:
        raise ValueError("X and Y must have the same number of columns")
    out = np.empty((n, m), dtype=np.float64)
    if n == 0 or m == 0:
        return out
    cdef double[:, ::1] ov = out
    cdef int status
    with nogil:
        status = fkm_kcenter_sqdist(&ov[0, 0], &X[0, 0], 0, n, &Y[0, 0], m, d)
    check_status(status, "squared distances")
    return out


def nearest(const double[:, ::1] X, const double[:, ::1] C):
    """(squared distance to the nearest row of C, its index) for each row of X."""
    cdef fkm_index_t n = X.shape[0], k = C.shape[0], d = X.shape[1]
    if C.shape[1] != d or k < 1:
        raise ValueError("C must have >= 1 row and the columns of X")
    mind = np.empty(n, dtype=np.float64)
    arg = np.empty(n, dtype=np.int64)
    if n == 0:
        return mind, arg
    cdef double[::1] mv = mind
    cdef int64_t[::1] av = arg
    cdef int status
    with nogil:
        status = fkm_kcenter_nearest(&mv[0], <fkm_index_t *>&av[0], &X[0, 0], n,
                                     &C[0, 0], k, d)
    check_status(status, "nearest center")
    return mind, arg


def aggregate(const double[:, ::1] X, object D, double t2, double t4, double y,
              fkm_index_t max_reps):
    """Guo & Li's aggregating on X with squared radii t2 (2L) and t4 (4L).

    Returns (reps int64, weights int64, remaining bool mask, stopped) where
    ``stopped`` is True when more than ``max_reps`` picks were due (reps
    then holds the first max_reps).  Releases the GIL.
    """
    cdef fkm_index_t n = X.shape[0], d = X.shape[1]
    cdef const float *Dp = _dptr(D, n)
    cdef fkm_index_t cap = max(min(n, max_reps), 1)
    reps = np.empty(cap, dtype=np.int64)
    weights = np.empty(cap, dtype=np.int64)
    remaining = np.zeros(max(n, 1), dtype=np.uint8)
    cdef int64_t[::1] rv = reps, wv = weights
    cdef uint8_t[::1] remv = remaining
    cdef fkm_index_t nr = 0
    cdef int status
    cdef const double *Xp = &X[0, 0] if n > 0 else NULL
    with nogil:
        status = fkm_kcenter_aggregate(<fkm_index_t *>&rv[0], &wv[0], &nr, &remv[0],
                                       Dp, Xp, n, d, t2, t4, y, max_reps)
    check_status(status, "aggregating")
    stopped = nr > max_reps
    nr = min(nr, max_reps)
    return reps[:nr].copy(), weights[:nr].copy(), remaining[:n].astype(bool), stopped


def greedy(const double[:, ::1] X, object D, object w, double t_small,
           double t_large, fkm_index_t k):
    """Charikar et al.'s weighted greedy (kzc) on X with integer weights w
    (int64 array or None for unit weights) and squared radii.

    Returns (centers int64, uncovered weight int, uncovered bool mask).
    Releases the GIL.
    """
    cdef fkm_index_t n = X.shape[0], d = X.shape[1]
    cdef const float *Dp = _dptr(D, n)
    cdef const int64_t[::1] wv
    cdef const int64_t *wp = NULL
    if w is not None:
        wv = w
        if wv.shape[0] != n:
            raise ValueError("w must have one entry per row of X")
        if n > 0:
            wp = &wv[0]
    centers = np.empty(max(k, 1), dtype=np.int64)
    uncovered = np.zeros(max(n, 1), dtype=np.uint8)
    cdef int64_t[::1] cv = centers
    cdef uint8_t[::1] uv = uncovered
    cdef fkm_index_t nc = 0
    cdef int64_t uw = 0
    cdef int status
    cdef const double *Xp = &X[0, 0] if n > 0 else NULL
    with nogil:
        status = fkm_kcenter_greedy(<fkm_index_t *>&cv[0], &nc, &uw, &uv[0], Dp, Xp,
                                    wp, n, d, t_small, t_large, k)
    check_status(status, "weighted greedy (kzc)")
    return centers[:nc].copy(), int(uw), uncovered[:n].astype(bool)


def nn_sqdist(const double[:, ::1] X, object D):
    """Squared distance of each row of X to its nearest other row (+inf if
    X has one row)."""
    cdef fkm_index_t n = X.shape[0], d = X.shape[1]
    cdef const float *Dp = _dptr(D, n)
    out = np.empty(n, dtype=np.float64)
    if n == 0:
        return out
    cdef double[::1] ov = out
    cdef int status
    with nogil:
        status = fkm_kcenter_nn(&ov[0], Dp, &X[0, 0], n, d)
    check_status(status, "nearest neighbours")
    return out


cdef class Tree:
    """A KD-tree index of X (n >= 1 rows, copied), built once and reused for
    every radius guess; its kernels decide every ball exactly (see
    csrc/fkm_kcenter.h).  Raises FloatingPointError-like errors through
    check_status when distances may overflow (use the matrix-free kernels
    then)."""
    cdef fkm_kctree_t *tree
    cdef readonly fkm_index_t n

    def __cinit__(self, const double[:, ::1] X):
        # deliberate specialization: see Matrix.__cinit__.
        cdef fkm_index_t n = X.shape[0], d = X.shape[1]
        cdef int status
        self.tree = NULL
        self.n = n
        if n < 1 or d < 1:
            raise ValueError("Tree needs at least one row and one column")
        with nogil:
            status = fkm_kctree_build(&self.tree, &X[0, 0], n, d)
        check_status(status, "KD-tree index")

    def __dealloc__(self):
        fkm_kctree_free(self.tree)

    def __reduce__(self):
        raise TypeError("Tree is not picklable; rebuild it from the points")

    def nn_sqdist(self):
        """As :func:`nn_sqdist` on the indexed points."""
        out = np.empty(self.n, dtype=np.float64)
        cdef double[::1] ov = out
        cdef int status
        with nogil:
            status = fkm_kctree_nn(&ov[0], self.tree)
        check_status(status, "nearest neighbours")
        return out

    def aggregate(self, double t2, double t4, double y, fkm_index_t max_reps):
        """As :func:`aggregate` on the indexed points (same results)."""
        cdef fkm_index_t n = self.n
        cdef fkm_index_t cap = max(min(n, max_reps), 1)
        reps = np.empty(cap, dtype=np.int64)
        weights = np.empty(cap, dtype=np.int64)
        remaining = np.zeros(n, dtype=np.uint8)
        cdef int64_t[::1] rv = reps, wv = weights
        cdef uint8_t[::1] remv = remaining
        cdef fkm_index_t nr = 0
        cdef int status
        with nogil:
            status = fkm_kctree_aggregate(<fkm_index_t *>&rv[0], &wv[0], &nr,
                                          &remv[0], self.tree, t2, t4, y, max_reps)
        check_status(status, "aggregating")
        stopped = nr > max_reps
        nr = min(nr, max_reps)
        return reps[:nr].copy(), weights[:nr].copy(), remaining.astype(bool), stopped
