# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython wrappers of csrc/fkm_lloyd.c (weighted Lloyd assignment/update).

No input validation beyond what protects memory: pyfkm.core.kmeans passes
C-contiguous float32/float64 X, float64 weights (or None) and float64
centers of matching shapes; the assignment wrappers still check every
length the kernels index with (a model's centers can come from a user or a
pickle), so a mismatch raises ValueError instead of reading past a buffer.
"""
import threading

import numpy as np

from libc.stdint cimport int32_t, int64_t
from pyfkm._core._csrc cimport (fkm_index_t, fkm_lloyd_packed_size,
                                FKM_LLOYD_PACK_MAX_D, fkm_lloyd_pack_points_f64,
                                fkm_lloyd_pack_points_f32,
                                fkm_lloyd_pack_centers, fkm_lloyd_assign_f64,
                                fkm_lloyd_assign_f32, fkm_lloyd_merge,
                                fkm_lloyd_loop_f64, fkm_qlloyd_assign_f64,
                                fkm_qlloyd_relabel_f64,
                                fkm_lloyd_trace, fkm_lloyd_trace_free,
                                fkm_lloyd_loop_traced_packed_f64, fkm_lloyd_label_f64,
                                fkm_lloyd_acc_scratch, fkm_lloyd_accumulate_f64,
                                fkm_lloyd_distances_f64, fkm_lloyd_bounds_norms_f64,
                                fkm_lloyd_bounds_moves_f64, fkm_lloyd_assign_bounded_f64,
                                fkm_lloyd_assign_masked_f64, fkm_lloyd_assign_masked_f32,
                                fkm_qlloyd_rescan_f64, fkm_qlloyd_cells_f64)
from libc.string cimport memset
from pyfkm._core._common cimport check_status, in_ptr, out_ptr



def part_bounds(fkm_index_t n, fkm_index_t k, fkm_index_t d):
    """Fixed partition of [0, n) into contiguous parts (depends on n, k, d only).

    At most 64 parts, at least ~4096 points each, and at most 2**25 doubles
    of partial sums in total.
    """
    cdef fkm_index_t n_parts = min(n // 4096, (1 << 25) // max(k * d, 1), 64)
    n_parts = max(n_parts, 1)
    b = np.linspace(0, n, n_parts + 1).astype(np.int64)
    inner = b[1:len(b) - 1]
    inner -= inner % 4  # parts start on packed panels (a view: updates b)
    return b


def pack_points(X):
    """X packed in panels of 4 points (float64), or None when d is too large
    for packing to pay."""
    cdef fkm_index_t n = X.shape[0], d = X.shape[1]
    if d > FKM_LLOYD_PACK_MAX_D or n < 4:
        return None
    P = np.empty(n * d, dtype=np.float64)
    cdef double[::1] Pv = P
    cdef const double[:, ::1] X64
    cdef const float[:, ::1] X32
    if X.dtype == np.float64:
        X64 = X
        with nogil:
            fkm_lloyd_pack_points_f64(&Pv[0], &X64[0, 0], 0, n, d)
    else:
        X32 = X
        with nogil:
            fkm_lloyd_pack_points_f32(&Pv[0], &X32[0, 0], 0, n, d)
    return P


def pack_centers(const double[:, ::1] centers, const double[::1] shift):
    """Packed panels and half squared norms of centers - shift."""
    cdef fkm_index_t k = centers.shape[0], d = centers.shape[1]
    if k < 1 or d < 1 or shift.shape[0] != d:
        raise ValueError(f"pack_centers: centers of shape ({k}, {d}) and a shift "
                         f"of length {shift.shape[0]}")
    ct = np.empty(max(fkm_lloyd_packed_size(k, d), 1), dtype=np.float64)
    hn = np.empty(((k + 7) // 8) * 8, dtype=np.float64)
    cdef double[::1] ctv = ct, hnv = hn
    with nogil:
        fkm_lloyd_pack_centers(&ctv[0], &hnv[0], &centers[0, 0], &shift[0], k, d)
    return ct, hn


cdef int _check_assign(object X, object P, const double[::1] w, const double[::1] ct,
                       const double[::1] hn, const double[:, ::1] centers,
                       const int32_t[::1] labels, object mind) except -1:
    """The lengths the assignment kernels index with, checked against X and
    the centers (ValueError on any mismatch)."""
    cdef fkm_index_t k = centers.shape[0], d = centers.shape[1]
    cdef fkm_index_t n = X.shape[0]
    if X.ndim != 2 or X.shape[1] != d or n < 1 or k < 1 or d < 1:
        raise ValueError(f"Lloyd assignment: X of shape {X.shape} and centers of "
                         f"shape ({k}, {d}) do not match")
    if labels.shape[0] != n or (mind is not None and len(mind) != n) or \
            w.shape[0] not in (0, n):
        raise ValueError("Lloyd assignment: labels, distances or weights have the wrong length")
    if ct.shape[0] < fkm_lloyd_packed_size(k, d) or hn.shape[0] < ((k + 7) // 8) * 8:
        raise ValueError("Lloyd assignment: packed centers of the wrong size")
    if P is not None and len(P) != n * d:
        raise ValueError("Lloyd assignment: packed points of the wrong size")
    return 0


def assign_parts(X, P, const double[::1] w_or_empty, const double[::1] ct,
                 const double[::1] hn, const double[:, ::1] centers,
                 const int64_t[::1] bounds, fkm_index_t part_lo,
                 fkm_index_t part_hi, int32_t[::1] labels, object mind,
                 double[:, :, ::1] part_sums, double[:, ::1] part_wsums,
                 double[::1] part_inertia, int64_t[::1] part_changed,
                 const unsigned char[::1] need=None):
    """Assign points and accumulate partial sums for parts [part_lo, part_hi).

    ``labels`` is INOUT: ``part_changed[p]`` counts the points of part p
    whose label differs from its value on entry.
    ``w_or_empty`` of length 0 means unit weights; ``P`` is pack_points(X)
    (or None); ``mind`` None skips distances and inertia.  ``need`` (uint8
    per point, or None: all) is the mask of fkm_lloyd_assign_masked: groups
    with no flagged point keep their labels (which must lie in [0, k):
    checked, ValueError) and are accumulated as if assigned; all zeros
    accumulates the given labels without scoring.  Releases the GIL.
    """
    cdef double[::1] mv = mind
    cdef const double[::1] Pv = P
    cdef double *mp = out_ptr(mv)
    cdef const double *Pp = in_ptr(Pv)
    cdef fkm_index_t k = centers.shape[0], d = centers.shape[1], p
    _check_assign(X, P, w_or_empty, ct, hn, centers, labels, mind)
    cdef fkm_index_t n = X.shape[0]
    if not (0 <= part_lo <= part_hi < bounds.shape[0] and part_sums.shape[0] >= part_hi
            and part_sums.shape[1] == k and part_sums.shape[2] == d
            and part_wsums.shape[0] >= part_hi and part_wsums.shape[1] == k
            and part_inertia.shape[0] >= part_hi and part_changed.shape[0] >= part_hi):
        raise ValueError("assign_parts: part arrays inconsistent with the parts and centers")
    for p in range(part_lo, part_hi):
        if not 0 <= bounds[p] <= bounds[p + 1] <= n or (P is not None and bounds[p] % 4):
            raise ValueError("assign_parts: part bounds out of range")
    cdef const double *wp = in_ptr(w_or_empty)
    cdef const double[:, ::1] X64
    cdef const float[:, ::1] X32
    cdef int status = 0
    cdef bint is64 = X.dtype == np.float64
    cdef const unsigned char *np_ = NULL
    cdef fkm_index_t i, bad = 0
    if need is not None:
        if need.shape[0] != n:
            raise ValueError("assign_parts: need has the wrong length")
        np_ = &need[0]
        with nogil:
            for i in range(bounds[part_lo], bounds[part_hi]):
                bad |= need[i] == 0 and not 0 <= labels[i] < k
        if bad:
            raise ValueError("assign_parts: a kept label is outside [0, k)")
    if is64:
        X64 = X
    else:
        X32 = X
    with nogil:
        for p in range(part_lo, part_hi):
            if np_ != NULL and is64:
                status = fkm_lloyd_assign_masked_f64(
                    &labels[0], &part_changed[p], mp, &part_sums[p, 0, 0],
                    &part_wsums[p, 0], &part_inertia[p], &X64[0, 0], Pp, wp, bounds[p],
                    bounds[p + 1], d, &ct[0], &hn[0], &centers[0, 0], k, np_)
            elif np_ != NULL:
                status = fkm_lloyd_assign_masked_f32(
                    &labels[0], &part_changed[p], mp, &part_sums[p, 0, 0],
                    &part_wsums[p, 0], &part_inertia[p], &X32[0, 0], Pp, wp, bounds[p],
                    bounds[p + 1], d, &ct[0], &hn[0], &centers[0, 0], k, np_)
            elif is64:
                status = fkm_lloyd_assign_f64(
                    &labels[0], &part_changed[p], mp, &part_sums[p, 0, 0],
                    &part_wsums[p, 0], &part_inertia[p], &X64[0, 0], Pp, wp, bounds[p], bounds[p + 1], d,
                    &ct[0], &hn[0], &centers[0, 0], k)
            else:
                status = fkm_lloyd_assign_f32(
                    &labels[0], &part_changed[p], mp, &part_sums[p, 0, 0],
                    &part_wsums[p, 0], &part_inertia[p], &X32[0, 0], Pp, wp, bounds[p], bounds[p + 1], d,
                    &ct[0], &hn[0], &centers[0, 0], k)
            if status != 0:
                break
    check_status(status, "Lloyd assignment")


def bounds_norms(const double[:, ::1] X):
    """Upper bounds of the row norms of float64 X, for :func:`assign_parts_bounded`."""
    cdef fkm_index_t n = X.shape[0], d = X.shape[1]
    xn = np.empty(max(n, 1), dtype=np.float64)
    cdef double[::1] xv = xn
    if n >= 1 and d >= 1:
        with nogil:
            fkm_lloyd_bounds_norms_f64(&xv[0], &X[0, 0], 0, n, d)
    return xn[:n]


def bounds_moves(const double[:, ::1] old, const double[:, ::1] centers):
    """Upper bounds of the center moves old -> centers: (move float64[k], j1, m1, m2)
    with j1 the center of the largest move m1 and m2 the second largest."""
    cdef fkm_index_t k = centers.shape[0], d = centers.shape[1], j1 = -1
    cdef double m1 = 0.0, m2 = 0.0
    if old.shape[0] != k or old.shape[1] != d or k < 1 or d < 1:
        raise ValueError("bounds_moves: old and new centers differ in shape")
    move = np.empty(k, dtype=np.float64)
    cdef double[::1] mv = move
    with nogil:
        fkm_lloyd_bounds_moves_f64(&mv[0], &j1, &m1, &m2, &old[0, 0], &centers[0, 0], k, d)
    return move, int(j1), float(m1), float(m2)


def assign_parts_bounded(const double[:, ::1] X, P, const double[::1] w_or_empty,
                         const double[::1] ct, const double[::1] hn,
                         const double[::1] shift, const double[:, ::1] centers,
                         const int64_t[::1] bounds, fkm_index_t part_lo,
                         fkm_index_t part_hi, int32_t[::1] labels, object mind,
                         double[:, :, ::1] part_sums, double[:, ::1] part_wsums,
                         double[::1] part_inertia, int64_t[::1] part_changed,
                         int64_t[::1] part_scored, double[::1] U, double[::1] L,
                         unsigned char[::1] need, const double[::1] xn, object move,
                         fkm_index_t j1, double m1, double m2):
    """:func:`assign_parts` for float64 X with Hamerly bounds (the same
    results bit for bit; csrc/fkm_lloyd_loop.h, fkm_lloyd_assign_bounded_f64).

    ``U``, ``L``, ``need`` and ``xn`` (:func:`bounds_norms`) have one entry
    per point; ``move`` None scores every point and sets the bounds, else
    (move, j1, m1, m2) are :func:`bounds_moves` from the centers of the
    previous bounded assignment (whose labels and bounds ``labels``, ``U``,
    ``L`` hold) to ``centers``.  ``part_scored[p]`` counts the points of
    part p that the bounds did not prove.  Releases the GIL.
    """
    cdef double[::1] mv = mind
    cdef const double[::1] Pv = P
    cdef const double[::1] movev = move
    cdef double *mp = out_ptr(mv)
    cdef const double *Pp = in_ptr(Pv)
    cdef const double *movep = in_ptr(movev)
    cdef fkm_index_t k = centers.shape[0], d = centers.shape[1], p
    _check_assign(X, P, w_or_empty, ct, hn, centers, labels, mind)
    cdef fkm_index_t n = X.shape[0]
    if not (0 <= part_lo <= part_hi < bounds.shape[0] and part_sums.shape[0] >= part_hi
            and part_sums.shape[1] == k and part_sums.shape[2] == d
            and part_wsums.shape[0] >= part_hi and part_wsums.shape[1] == k
            and part_inertia.shape[0] >= part_hi and part_changed.shape[0] >= part_hi
            and part_scored.shape[0] >= part_hi):
        raise ValueError("assign_parts_bounded: part arrays inconsistent with the parts "
                         "and centers")
    if U.shape[0] != n or L.shape[0] != n or need.shape[0] != n or xn.shape[0] != n \
            or shift.shape[0] != d or (move is not None and len(move) != k):
        raise ValueError("assign_parts_bounded: bounds arrays of the wrong length")
    for p in range(part_lo, part_hi):
        if not 0 <= bounds[p] <= bounds[p + 1] <= n or (P is not None and bounds[p] % 4):
            raise ValueError("assign_parts_bounded: part bounds out of range")
    cdef const double *wp = in_ptr(w_or_empty)
    cdef int status = 0
    with nogil:
        for p in range(part_lo, part_hi):
            status = fkm_lloyd_assign_bounded_f64(
                &labels[0], &part_changed[p], &part_scored[p], mp, &part_sums[p, 0, 0],
                &part_wsums[p, 0], &part_inertia[p], &U[0], &L[0], &need[0], &X[0, 0], Pp,
                wp, &xn[0], bounds[p], bounds[p + 1], d, &ct[0], &hn[0], &shift[0],
                &centers[0, 0], k, movep, j1, m1, m2)
            if status != 0:
                break
    check_status(status, "Lloyd assignment")


def assign_explicit(const double[:, ::1] X, P, const double[::1] w_or_empty,
                    const double[::1] ct, const double[::1] hn,
                    const double[:, ::1] centers, int32_t[::1] labels, object mind):
    """One assignment of all of float64 X by the rules of the one-call loop
    (:func:`lloyd_loop`): labels by the tiled kernel, sums and weights by
    the accumulation rule and distances by the distance rule of
    csrc/fkm_lloyd_acc.h.  ``labels`` is INOUT; ``mind`` None skips the
    distances.  Returns (sums float64[k, d], wsums float64[k], inertia (nan
    without mind), n_changed)."""
    cdef fkm_index_t n = X.shape[0], k = centers.shape[0], d = centers.shape[1]
    _check_assign(X, P, w_or_empty, ct, hn, centers, labels, mind)
    cdef fkm_index_t n_changed = 0
    cdef double inertia = float("nan")
    cdef int status
    sums = np.empty((k, d), dtype=np.float64)
    wsums = np.empty(k, dtype=np.float64)
    scratch = np.empty(fkm_lloyd_acc_scratch(k, d), dtype=np.float64)
    cdef double[:, ::1] sv = sums
    cdef double[::1] wv = wsums, scv = scratch
    cdef double[::1] mv = mind
    cdef const double[::1] Pv = P
    cdef double *mp = out_ptr(mv)
    cdef const double *Pp = in_ptr(Pv)
    cdef const double *wp = in_ptr(w_or_empty)
    with nogil:
        status = fkm_lloyd_label_f64(&labels[0], &n_changed, &X[0, 0], Pp, 0, n, d, &ct[0],
                                     &hn[0], k, NULL)
        if status == 0:
            fkm_lloyd_accumulate_f64(&sv[0, 0], &wv[0], &scv[0], &X[0, 0], wp, &labels[0],
                                     n, d, k, NULL)
            if mp != NULL:
                inertia = fkm_lloyd_distances_f64(mp, &X[0, 0], Pp, wp, &labels[0],
                                                  &centers[0, 0], n, d)
    check_status(status, "Lloyd assignment")
    return sums, wsums, inertia, int(n_changed)


def merge(const double[:, :, ::1] part_sums, const double[:, ::1] part_wsums,
          const double[::1] part_inertia):
    """Sum the parts in order; returns (sums[k, d], wsums[k], inertia)."""
    cdef fkm_index_t P = part_sums.shape[0], k = part_sums.shape[1]
    cdef fkm_index_t d = part_sums.shape[2]
    sums = np.empty((k, d), dtype=np.float64)
    wsums = np.empty(k, dtype=np.float64)
    cdef double[:, ::1] sv = sums
    cdef double[::1] wv = wsums
    cdef double inertia = 0.0
    with nogil:
        fkm_lloyd_merge(&sv[0, 0], &wv[0], &inertia, &part_sums[0, 0, 0],
                        &part_wsums[0, 0], &part_inertia[0], P, k, d)
    return sums, wsums, inertia


cdef object _loop(str name, const double[:, ::1] X, object centers, object sample_weight,
                  fkm_index_t max_iter, double tol_abs, bint bounds, fkm_lloyd_trace *tr,
                  object lock, object P=None):
    """The one-call loop, untraced (tr NULL, with bounds or not) or traced
    (under lock); see lloyd_loop."""
    cdef fkm_index_t n = X.shape[0], d = X.shape[1]
    C = np.array(centers, dtype=np.float64, order="C", copy=True)
    cdef double[:, ::1] cv = C
    cdef fkm_index_t k = cv.shape[0]
    if cv.shape[1] != d or n < 1 or d < 1 or k < 1 or max_iter < 0:
        raise ValueError(f"{name}: inconsistent shapes")
    labels = np.empty(n, dtype=np.int32)
    mind = np.empty(n, dtype=np.float64)
    cdef int32_t[::1] lv = labels
    cdef double[::1] mv = mind
    cdef const double[::1] wv = None
    cdef fkm_index_t n_iter = 0
    cdef double inertia = 0.0
    cdef int status
    cdef const double[::1] Pv = P
    cdef const double *Pp = in_ptr(Pv)
    if sample_weight is not None:
        wv = np.ascontiguousarray(sample_weight, dtype=np.float64)
        if wv.shape[0] != n:
            raise ValueError(f"{name}: sample_weight has the wrong length")
    cdef const double *wp = in_ptr(wv)
    if tr == NULL:
        with nogil:
            status = fkm_lloyd_loop_f64(&cv[0, 0], &lv[0], &mv[0], &n_iter, &inertia,
                                        &X[0, 0], wp, n, d, k, max_iter, tol_abs, bounds)
    else:
        with lock:
            with nogil:
                status = fkm_lloyd_loop_traced_packed_f64(&cv[0, 0], &lv[0], &mv[0], &n_iter,
                                                          &inertia, &X[0, 0], Pp, wp, n, d,
                                                          k, max_iter, tol_abs, tr)
    check_status(status, "Lloyd")
    return C, labels, mind, inertia, int(n_iter)


def lloyd_loop(const double[:, ::1] X, object centers, object sample_weight,
               fkm_index_t max_iter, double tol_abs, bint bounds=False):
    """A whole weighted Lloyd run in C (csrc/fkm_lloyd_loop.h), for small n.

    ``bounds`` skips the scoring of points whose label distance bounds prove
    unchanged between iterations; the results are bit for bit those of
    ``bounds=False`` (the full scan of every point at every iteration).  Off
    by default: within one run the centers move too much for enough points
    to be proven, so the bounds did not pay on the measured problems
    (federated server k-means, DC-k-means nodes).  Across runs they do: see
    :class:`LloydTrace`.

    Returns (centers float64[k, d] (a new array), labels int32[n],
    mind float64[n], inertia, n_iter).
    """
    return _loop("lloyd_loop", X, centers, sample_weight, max_iter, tol_abs, bounds, NULL,
                 None)


cdef class LloydTrace:
    """Repeated Lloyd runs on one float64 X that reuse the previous run
    (csrc/fkm_lloyd_loop.h, fkm_lloyd_loop_traced_f64).

    ``run(centers, sample_weight, max_iter, tol_abs)`` returns what
    :func:`lloyd_loop` returns for the same arguments, bit for bit; a run
    that starts from the same centers as the previous one, with slightly
    changed weights, skips the scoring of the points whose recorded distance
    bounds prove their labels.  The first run records (about twice the work
    of :func:`lloyd_loop`).  ``len`` is the number of assignments recorded.

    The trace keeps a read-only copy of X (a recording is only valid for
    the X it was made on) and of X packed for the kernels; ``like``, another
    LloydTrace, shares its copies instead (for several traces on one X run
    in turn: less memory to touch); X must then equal its X.
    (Re-)initialising forgets the recording.  Runs on one trace are
    serialised by a lock (they update the recording).
    """
    cdef fkm_lloyd_trace tr
    cdef readonly object X
    cdef object _P
    cdef object _lock

    def __cinit__(self):
        memset(&self.tr, 0, sizeof(self.tr))
        self._lock = threading.Lock()

    def __init__(self, const double[:, ::1] X, LloydTrace like=None):
        if like is not None:
            if like.X.shape != (X.shape[0], X.shape[1]) or not np.array_equal(like.X, X):
                raise ValueError("LloydTrace: like is a trace on another X")
            Xc, Pc = like.X, like._P
        else:
            Xc = np.array(X, dtype=np.float64, order="C", copy=True)
            Xc.setflags(write=False)
            Pc = pack_points(Xc) if Xc.shape[0] > 0 and Xc.shape[1] > 0 else None
            if Pc is not None:
                Pc.setflags(write=False)
        with self._lock:
            fkm_lloyd_trace_free(&self.tr)
            self.X, self._P = Xc, Pc

    def __dealloc__(self):
        fkm_lloyd_trace_free(&self.tr)

    @property
    def len(self):
        return int(self.tr.len)

    @property
    def last_stats(self):
        """(points scored, clusters summed again) over the last run's
        assignments; (-1, -1) when it recorded."""
        return int(self.tr.last_scored), int(self.tr.last_summed)

    def run(self, object centers, object sample_weight, fkm_index_t max_iter,
            double tol_abs):
        return _loop("LloydTrace.run", self.X, centers, sample_weight, max_iter, tol_abs,
                     False, &self.tr, self._lock, self._P)


cdef class QAssign:
    """Repeated Q-k-means assignment steps on one float64 X with Elkan
    bounds (csrc/fkm_qlloyd.h).  ``step(C)`` returns new arrays
    (labels int32[n], mind float64[n], sums float64[k, d], counts int64[k],
    loss); the first call scans every center, later calls use the bounds
    moved by the displacement of the centers since the previous call."""
    cdef object X, labels, lb, prev
    cdef fkm_index_t k

    def __init__(self, X, fkm_index_t k):
        cdef fkm_index_t n = X.shape[0]
        if X.ndim != 2 or n < 1 or X.shape[1] < 1 or k < 1 or X.dtype != np.float64 \
                or not X.flags.c_contiguous:
            raise ValueError("QAssign: X must be a non-empty C-contiguous float64 matrix")
        self.X, self.k = X, k
        self.labels = np.zeros(n, dtype=np.int32)
        self.lb = np.empty((n, k), dtype=np.float64)
        self.prev = None

    def step(self, centers, dist=None):
        """One assignment; ``dist`` (first call only): the float64 (n, k)
        squared distances to ``centers`` from race_seeding_dist, used instead
        of computing them (same result).  It is taken over (overwritten)."""
        cdef const double[:, ::1] X = self.X
        cdef fkm_index_t n = X.shape[0], d = X.shape[1], k = self.k
        C = np.ascontiguousarray(centers, dtype=np.float64)
        if C.shape[0] != k or C.shape[1] != d:
            raise ValueError("QAssign.step: centers have the wrong shape")
        cdef const double[:, ::1] cv = C
        cdef int first = self.prev is None
        cdef int given = first and dist is not None
        if given:
            if dist.shape != self.lb.shape or dist.dtype != np.float64 or \
                    not dist.flags.c_contiguous:
                raise ValueError("QAssign.step: dist has the wrong shape")
            self.lb = dist
        move = None if first else np.sqrt(((C - self.prev) ** 2).sum(axis=1))
        cdef const double[::1] mv
        cdef const double *mp = NULL
        if not first:
            mv = move
            mp = &mv[0]
        labels = self.labels.copy()
        mind = np.empty(n, dtype=np.float64)
        sums = np.empty((k, d), dtype=np.float64)
        counts = np.empty(k, dtype=np.int64)
        cdef int32_t[::1] lv = labels
        cdef double[::1] mdv = mind
        cdef double[:, ::1] lbv = self.lb
        cdef double[:, ::1] sv = sums
        cdef int64_t[::1] cnt = counts
        cdef double loss = 0.0
        cdef int status
        with nogil:
            status = fkm_qlloyd_assign_f64(&lv[0], &lbv[0, 0], &mdv[0], &sv[0, 0],
                                           &cnt[0], &loss, &X[0, 0], &cv[0, 0], mp,
                                           n, d, k, first, given)
        check_status(status, "Q-Lloyd assignment")
        self.labels, self.prev = labels, C.copy()
        return labels, mind, sums, counts, float(loss)


def qrelabel(X, rows, hints, centers, *, scan=None):
    """The labels (int32) and squared distances (float64) that a full
    QAssign scan gives the rows ``rows`` (int64) of ``X`` for ``centers``,
    computed from the ``hints`` (labels in [0, k), one per row;
    csrc/fkm_qlloyd.h).  Rows and hints out of range raise ValueError.

    ``scan=(ref_mind, keep, far)``: ``rows`` is None and ``hints`` the
    reference labels (int32, -1 for a dead row) of every row of ``X``, with
    their distances ``ref_mind`` (float64); the rows with ``keep`` (bool)
    whose distance is not below ``far`` (float64 (k,)) of their label are
    assigned again (fkm_qlloyd_rescan_f64).  Returns (rows, labels, mind,
    previous labels, previous distances, largest distance of a kept row).
    Labels outside [-1, k) raise ValueError."""
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1 or X.dtype != np.float64 \
            or not X.flags.c_contiguous:
        raise ValueError("qrelabel: X must be a non-empty C-contiguous float64 matrix")
    C = np.ascontiguousarray(centers, dtype=np.float64)
    if scan is not None:
        return _qrescan(X, rows, hints, C, *scan)
    R0, H0 = np.asarray(rows), np.asarray(hints)
    if R0.dtype.kind not in "iu" or H0.dtype.kind not in "iu":
        raise ValueError("qrelabel: rows and hints must be integer arrays")
    R = np.ascontiguousarray(R0, dtype=np.int64)
    labels = np.array(H0, dtype=np.int32)  # a fresh array: the kernel writes it
    if not np.array_equal(R, R0) or not np.array_equal(labels, H0):
        raise ValueError("qrelabel: rows or hints out of range")
    if C.ndim != 2 or C.shape[0] < 1 or C.shape[1] != X.shape[1]:
        raise ValueError("qrelabel: centers have the wrong shape")
    if R.ndim != 1 or labels.shape != R.shape:
        raise ValueError("qrelabel: rows and hints must be 1-d of the same length")
    cdef fkm_index_t m = R.shape[0], n = X.shape[0], d = X.shape[1], k = C.shape[0]
    mind = np.empty(m, dtype=np.float64)
    cc = np.empty(k * k, dtype=np.float64)
    if m == 0:
        return labels, mind
    cdef const double[:, ::1] xv = X
    cdef const double[:, ::1] cv = C
    cdef const int64_t[::1] rv = R
    cdef int32_t[::1] lv = labels
    cdef double[::1] mv = mind
    cdef double[::1] ccv = cc
    cdef int status
    with nogil:
        status = fkm_qlloyd_relabel_f64(&lv[0], &mv[0], &ccv[0], &xv[0, 0], &rv[0], &cv[0, 0],
                                        m, n, d, k)
    check_status(status, "Q-Lloyd relabel")
    return labels, mind


def _qrescan(X, rows, ref_labels, C, ref_mind, keep, far):
    """qrelabel's ``scan`` mode (checked X and C)."""
    cdef fkm_index_t n = X.shape[0], d = X.shape[1], k = C.shape[0], m = 0
    if rows is not None:
        raise ValueError("qrelabel: rows must be None with scan")
    if C.ndim != 2 or C.shape[0] < 1 or C.shape[1] != d:
        raise ValueError("qrelabel: centers have the wrong shape")
    for name, a, dt in (("labels", ref_labels, np.int32), ("distances", ref_mind, np.float64),
                        ("keep", keep, np.bool_)):
        if not isinstance(a, np.ndarray) or a.dtype != dt or a.shape != (n,) \
                or not a.flags.c_contiguous:
            raise ValueError(f"qrelabel: reference {name} must be C-contiguous {np.dtype(dt)} "
                             "of one entry per row")
    F = np.ascontiguousarray(far, dtype=np.float64)
    if F.shape != (k,):
        raise ValueError("qrelabel: far must hold one threshold per center")
    out_rows = np.empty(n, dtype=np.int64)
    out_lab = np.empty(n, dtype=np.int32)
    out_mind = np.empty(n, dtype=np.float64)
    out_prev = np.empty(n, dtype=np.int32)
    out_prev_mind = np.empty(n, dtype=np.float64)
    cc = np.empty(k * k, dtype=np.float64)
    cdef const double[:, ::1] xv = X
    cdef const double[:, ::1] cv = C
    cdef const int32_t[::1] rlv = ref_labels
    cdef const double[::1] rmv = ref_mind
    cdef const unsigned char[::1] kv = keep.view(np.uint8)
    cdef const double[::1] fv = F
    cdef int64_t[::1] orv = out_rows
    cdef int32_t[::1] olv = out_lab
    cdef double[::1] omv = out_mind
    cdef int32_t[::1] opv = out_prev
    cdef double[::1] opmv = out_prev_mind
    cdef double[::1] ccv = cc
    cdef double mx = 0.0
    cdef int status
    with nogil:
        status = fkm_qlloyd_rescan_f64(&orv[0], &olv[0], &omv[0], &opv[0], &opmv[0], &m, &mx,
                                       &ccv[0], &xv[0, 0], &rlv[0], &rmv[0], &kv[0], &fv[0],
                                       &cv[0, 0], n, d, k)
    check_status(status, "Q-Lloyd rescan")
    # copies: views would keep the n-row buffers alive while the replay holds them
    return (out_rows[:m].copy(), out_lab[:m].copy(), out_mind[:m].copy(), out_prev[:m].copy(),
            out_prev_mind[:m].copy(), mx)


def qcells(const double[:, :, ::1] sums, const int64_t[:, ::1] counts,
           const double[:, :, ::1] prev, const double[:, ::1] phases, double g, double eps,
           const double[::1] quantum, const double[::1] maxabs, cells=None):
    """The lattice cells of the balanced centroids of the grid ``sums``
    (T, k, d) of clusters of ``counts`` (T, k) points with the previous
    centers ``prev`` (T, k, d), the ``phases`` (T, d), ``g = gamma n / k``
    and the step ``eps``, and where they are sure (the bound of the grid
    ``quantum`` and of ``maxabs``, both (d,)): (lo, sure) as
    pyfkm.deletion._qlloyd._q_cells, bit for bit (fkm_qlloyd_cells_f64);
    with the stored ``cells`` (int64 (T, k, d)), the number of entries not
    sure or not equal to them instead.  Shapes that do not match raise
    ValueError."""
    cdef fkm_index_t T = sums.shape[0], k = sums.shape[1], d = sums.shape[2], moved = 0
    cdef const int64_t[:, :, ::1] cv
    cdef int status
    if T < 1 or k < 1 or d < 1 or counts.shape[0] != T or counts.shape[1] != k \
            or prev.shape[0] != T or prev.shape[1] != k or prev.shape[2] != d \
            or phases.shape[0] != T or phases.shape[1] != d or quantum.shape[0] != d \
            or maxabs.shape[0] != d:
        raise ValueError("qcells: shapes do not match")
    if cells is not None:
        cv = cells
        if cv.shape[0] != T or cv.shape[1] != k or cv.shape[2] != d:
            raise ValueError("qcells: shapes do not match")
        with nogil:
            status = fkm_qlloyd_cells_f64(NULL, NULL, &moved, &sums[0, 0, 0], &counts[0, 0],
                                          &prev[0, 0, 0], &phases[0, 0], &cv[0, 0, 0], g, eps,
                                          &quantum[0], &maxabs[0], T, k, d)
        check_status(status, "Q-Lloyd cells")
        return moved
    lo = np.empty((T, k, d), dtype=np.float64)
    sure = np.empty((T, k, d), dtype=np.bool_)
    cdef double[:, :, ::1] lv = lo
    cdef unsigned char[:, :, ::1] sv = sure.view(np.uint8)
    with nogil:
        status = fkm_qlloyd_cells_f64(&lv[0, 0, 0], &sv[0, 0, 0], &moved, &sums[0, 0, 0],
                                      &counts[0, 0], &prev[0, 0, 0], &phases[0, 0], NULL, g,
                                      eps, &quantum[0], &maxabs[0], T, k, d)
    check_status(status, "Q-Lloyd cells")
    return lo, sure
