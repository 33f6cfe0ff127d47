# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython wrappers of csrc/fkm_seeding.c (weighted D^2 seeding, exact removal).

No input validation beyond what protects memory: callers in pyfkm.core.seeding
validate shapes, dtypes, finiteness and weights.
"""
import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from numpy.random cimport bitgen_t
from pyfkm._core._csrc cimport (fkm_rng_t, fkm_index_t, fkm_race_seeding_f64,
                                fkm_race_seeding_f32, fkm_race_seeding_trace_f64,
                                fkm_race_seeding_dist_f64)
from pyfkm._core._common cimport check_status, bitgen_of, rng_from_bitgen, in_ptr


# "auto" picks warm or cold resumption by cost; "always"/"never" force one
# (both give bit-identical results; tests compare them).
resume_mode = "auto"
# Layout of X for d <= 16: "auto" (a packed copy when it fits in cache),
# "packed" or "in_place" (bit-identical results; tests force each).
pack_mode = "auto"
_PACK = {"auto": -1, "in_place": 0, "packed": 1}

cdef extern from "fkm_seeding.h" nogil:
    int fkm_seeding_run_ex_f64(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                               int32_t *labels, const double *X, const double *w,
                               const uint8_t *removed, fkm_index_t n, fkm_index_t d,
                               fkm_index_t k, fkm_index_t n_prefix, int warm, int pack)
    int fkm_seeding_run_ex_f32(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                               int32_t *labels, const float *X, const double *w,
                               const uint8_t *removed, fkm_index_t n, fkm_index_t d,
                               fkm_index_t k, fkm_index_t n_prefix, int warm, int pack)
    int fkm_seeding_check_mind_f64(fkm_index_t *bad, const double *mind,
                                   const int32_t *labels, const fkm_index_t *centers,
                                   const double *X, const uint8_t *removed, fkm_index_t n,
                                   fkm_index_t d, fkm_index_t k, double rtol, double atol)
    int fkm_seeding_check_mind_f32(fkm_index_t *bad, const double *mind,
                                   const int32_t *labels, const fkm_index_t *centers,
                                   const float *X, const uint8_t *removed, fkm_index_t n,
                                   fkm_index_t d, fkm_index_t k, double rtol, double atol)


cdef fkm_index_t _check_mind(object X, double[::1] mind, int32_t[::1] labels,
                             fkm_index_t[::1] centers, uint8_t[::1] removed,
                             fkm_index_t k) except -2:
    # the first active point whose mind is not its distance to its labelled
    # center (1e-9 relative), or -1; labels and centers are checked in C too
    cdef const double[:, ::1] X64
    cdef const float[:, ::1] X32
    cdef fkm_index_t n = X.shape[0], d = X.shape[1], bad = -1
    cdef int status = 0
    if n == 0:
        return -1
    if X.dtype == np.float64:
        X64 = X
        with nogil:
            status = fkm_seeding_check_mind_f64(&bad, &mind[0], &labels[0], &centers[0],
                                                &X64[0, 0], &removed[0], n, d, k,
                                                1e-9, 1e-290)
    else:
        X32 = X
        with nogil:
            status = fkm_seeding_check_mind_f32(&bad, &mind[0], &labels[0], &centers[0],
                                                &X32[0, 0], &removed[0], n, d, k,
                                                1e-9, 1e-290)
    check_status(status, "seeding state check")
    return bad


cdef int _run(object generator, fkm_index_t[::1] centers, double[::1] mind,
              int32_t[::1] labels, object X, const double *w,
              const uint8_t *removed, fkm_index_t k,
              fkm_index_t n_prefix, bint warm=False) except -1:
    # labels None: not wanted (cold runs only; the kernel then skips them)
    cdef int32_t *lp = NULL if labels is None else &labels[0]
    cdef const double[:, ::1] X64
    cdef const float[:, ::1] X32
    cdef fkm_index_t n = X.shape[0], d = X.shape[1]
    cdef bitgen_t *bg = bitgen_of(generator)
    cdef fkm_rng_t rng
    cdef int status = 0
    cdef int pack = _PACK[pack_mode]
    cdef int iwarm = 1 if warm else 0
    rng_from_bitgen(&rng, bg)
    with generator.bit_generator.lock:
        if X.dtype == np.float64:
            X64 = X
            with nogil:
                status = fkm_seeding_run_ex_f64(
                    &rng, &centers[0], &mind[0], lp, &X64[0, 0], w,
                    removed, n, d, k, n_prefix, iwarm, pack)
        else:
            X32 = X
            with nogil:
                status = fkm_seeding_run_ex_f32(
                    &rng, &centers[0], &mind[0], lp, &X32[0, 0], w,
                    removed, n, d, k, n_prefix, iwarm, pack)
    check_status(status, "k-means++ seeding")
    return 0


cdef tuple _seed(object X, object sample_weight, object prefix, fkm_index_t k,
                 object generator, bint want_labels=True):
    cdef fkm_index_t n = X.shape[0]
    ids = np.asarray(prefix, dtype=np.int64)
    cdef fkm_index_t m = ids.shape[0]
    centers = np.zeros(k, dtype=np.int64)
    centers[:m] = ids
    mind = np.empty(n, dtype=np.float64)
    labels = np.empty(n, dtype=np.int32) if want_labels else None
    cdef const double[::1] w = sample_weight
    _run(generator, centers, mind, labels, X, in_ptr(w), NULL, k, m)
    return centers, mind, labels


def seed(object X, object sample_weight, fkm_index_t k, object generator,
         bint labels=True):
    """D^2 seeding of all rows of C-contiguous float X (float32/float64).

    Returns (center_ids int64[k], min_sq_dist float64[n], labels int32[n]);
    ``labels=False``: labels is None, and the kernel, which then neither
    writes nor reads them up to d = 16, runs faster (same ids and distances).
    """
    return _seed(X, sample_weight, (), k, generator, labels)


def seed_from(object X, object sample_weight, object prefix, fkm_index_t k,
              object generator):
    """D^2 seeding of all rows of C-contiguous float X that keeps the row ids
    ``prefix`` (distinct, of positive weight, at most k; unchecked) as its
    first centers and draws the others, as a run resumed after them would.

    Returns center_ids int64[k].
    """
    return _seed(X, sample_weight, prefix, k, generator, False)[0]


def race_seeding(object X, const int64_t[::1] ids, fkm_index_t k, uint64_t key,
                 object excluded=None, fkm_index_t n_trials=1):
    """Exponential-race D^2 seeding keyed by ``ids`` (csrc/fkm_race.h).

    ``X`` is C-contiguous float32/float64 (n, d); ``excluded`` an optional
    bool/uint8 array of rows that take no part; ``n_trials > 1`` is greedy
    k-means++.  Returns (seeds int64[k],
    d2 float64[n]: squared distance of every row to its nearest seed).
    """
    cdef fkm_index_t n = X.shape[0], d = X.shape[1]
    if ids.shape[0] != n or k < 1 or n < 1 or d < 1:
        raise ValueError("race_seeding: inconsistent shapes")
    seeds = np.empty(k, dtype=np.int64)
    d2 = np.empty(n, dtype=np.float64)
    cdef fkm_index_t[::1] sv = seeds
    cdef double[::1] dv = d2
    cdef const uint8_t[::1] ex
    cdef const uint8_t *exp_ = NULL
    cdef const double[:, ::1] x64
    cdef const float[:, ::1] x32
    cdef int status
    if excluded is not None:
        ex = np.ascontiguousarray(excluded, dtype=np.uint8)
        if ex.shape[0] != n:
            raise ValueError("race_seeding: excluded has the wrong length")
        exp_ = &ex[0]
    if X.dtype == np.float64:
        x64 = X
        with nogil:
            status = fkm_race_seeding_f64(&sv[0], &dv[0], &x64[0, 0], &ids[0], exp_,
                                          n, d, k, key, n_trials)
    else:
        x32 = X
        with nogil:
            status = fkm_race_seeding_f32(&sv[0], &dv[0], &x32[0, 0], &ids[0], exp_,
                                          n, d, k, key, n_trials)
    check_status(status, "race seeding")
    return seeds, d2


def race_seeding_dist(const double[:, ::1] X, const int64_t[::1] ids, fkm_index_t k,
                      uint64_t key):
    """Plain race_seeding of all rows of float64 ``X`` that also returns the
    squared distances of every row to every seed (csrc/fkm_race.h,
    fkm_race_seeding_dist_f64).  Returns (seeds int64[k], dist float64[n, k])."""
    cdef fkm_index_t n = X.shape[0], d = X.shape[1]
    if ids.shape[0] != n or k < 1 or n < 1 or d < 1:
        raise ValueError("race_seeding_dist: inconsistent shapes")
    seeds = np.empty(k, dtype=np.int64)
    d2 = np.empty(n, dtype=np.float64)
    dist = np.empty((n, k), dtype=np.float64)
    cdef fkm_index_t[::1] sv = seeds
    cdef double[::1] dv = d2
    cdef double[:, ::1] tv = dist
    cdef int status
    with nogil:
        status = fkm_race_seeding_dist_f64(&sv[0], &dv[0], &tv[0, 0], &X[0, 0], &ids[0],
                                           n, d, k, key)
    check_status(status, "race seeding")
    return seeds, dist


def race_seeding_trace(const double[:, ::1] X, const int64_t[::1] ids, fkm_index_t k,
                       uint64_t key, fkm_index_t n_trials=1):
    """race_seeding of all rows of float64 ``X`` with its decisions
    (csrc/fkm_race.h, fkm_race_seeding_trace_f64).

    Returns (seeds int64[k], cand int64[k, n_trials], pot float64[k, n_trials]).
    """
    cdef fkm_index_t n = X.shape[0], d = X.shape[1]
    if ids.shape[0] != n or k < 1 or n < 1 or d < 1:
        raise ValueError("race_seeding_trace: inconsistent shapes")
    seeds = np.empty(k, dtype=np.int64)
    d2 = np.empty(n, dtype=np.float64)
    cand = np.empty((k, max(n_trials, 1)), dtype=np.int64)
    pot = np.empty((k, max(n_trials, 1)), dtype=np.float64)
    cdef fkm_index_t[::1] sv = seeds
    cdef double[::1] dv = d2
    cdef fkm_index_t[:, ::1] cv = cand
    cdef double[:, ::1] pv = pot
    cdef int status
    with nogil:
        status = fkm_race_seeding_trace_f64(&sv[0], &dv[0], &cv[0, 0], &pv[0, 0], &X[0, 0],
                                            &ids[0], NULL, n, d, k, key, n_trials)
    check_status(status, "race seeding")
    return seeds, cand, pot


cdef class SeedingState:
    """Seeding of a dataset with stable ids that supports exact removal.

    Holds the per-point nearest-center labels and squared distances, the
    removed mask and per-cluster counts, so that removing a non-center point
    costs O(1) and removing a center reseeds from the first removed position.
    """
    cdef readonly object X
    cdef readonly object sample_weight
    cdef readonly fkm_index_t n_clusters
    cdef readonly fkm_index_t n_active
    cdef readonly fkm_index_t n_positive
    cdef readonly object generator
    cdef object _removed_arr, _mind_arr, _labels_arr, _centers_arr
    cdef object _pos_arr, _counts_arr, _wsizes_arr
    cdef uint8_t[::1] removed
    cdef double[::1] mind
    cdef int32_t[::1] labels
    cdef fkm_index_t[::1] centers
    cdef int32_t[::1] center_pos
    cdef int64_t[::1] counts
    cdef double[::1] wsizes
    cdef const double[::1] w

    def __init__(self, X, sample_weight, fkm_index_t n_clusters, generator):
        cdef fkm_index_t n = X.shape[0]
        self.X = X
        self.sample_weight = sample_weight
        self.n_clusters = n_clusters
        self.generator = generator
        self.n_active = n
        if sample_weight is None:
            self.n_positive = n
        else:
            self.w = sample_weight
            self.n_positive = int(np.count_nonzero(sample_weight > 0))
        self._removed_arr = np.zeros(n, dtype=np.uint8)
        self.removed = self._removed_arr
        self._pos_arr = np.full(n, -1, dtype=np.int32)
        self.center_pos = self._pos_arr
        self._reseed(0, self._removed_arr)

    def export_state(self):
        """The mutable state as plain arrays and ints (for persistence)."""
        return {"n_active": int(self.n_active), "n_positive": int(self.n_positive),
                "removed": self._removed_arr.copy(), "mind": self._mind_arr.copy(),
                "labels": self._labels_arr.copy(), "centers": self._centers_arr.copy(),
                "counts": self._counts_arr.copy(), "wsizes": self._wsizes_arr.copy()}

    def __reduce__(self):
        # through from_state, which validates: a pickle is data from outside
        return (_from_pickle, (self.X, self.sample_weight, int(self.n_clusters),
                               self.generator, self.export_state()))

    @staticmethod
    def from_state(X, sample_weight, fkm_index_t n_clusters, generator, dict state):
        """Rebuild a state saved by :meth:`export_state`.

        Everything that comes from outside is checked before use, so that no
        later call can index out of bounds: X (C-contiguous float32/float64,
        finite), the weights, every array's dtype and shape, removed flags in
        {0, 1}, labels in [-1, k) and -1 exactly at removed points, finite
        nonnegative distances (0 at removed points and at centers), distinct
        center ids of active points, counts and weighted sizes equal to those
        of the labels, the active and positive-weight counts.  Raises
        ValueError naming the field.
        """
        cdef SeedingState s = SeedingState.__new__(SeedingState)
        if not isinstance(X, np.ndarray) or X.ndim != 2 or \
                X.dtype not in (np.float64, np.float32) or not X.flags.c_contiguous:
            raise ValueError("seeding state: X must be a C-contiguous 2-D float32/float64 array")
        cdef fkm_index_t n = X.shape[0], k = n_clusters, i
        if not 1 <= k <= n or X.shape[1] < 1:
            raise ValueError(f"seeding state: n_clusters={k} must lie in [1, {n}] "
                             "and X must have at least one column")
        if not np.isfinite(X).all():
            raise ValueError("seeding state: X has NaN or infinite values")
        # removal erases rows in place: the state owns writeable buffers
        # (an unpickled array may be read-only or another object's memory)
        if not (X.flags.writeable and X.flags.owndata):
            X = X.copy()
        if sample_weight is not None:
            if not isinstance(sample_weight, np.ndarray) or sample_weight.dtype != np.float64 \
                    or sample_weight.shape != (n,) or not sample_weight.flags.c_contiguous:
                raise ValueError(f"seeding state: sample_weight must be float64 of shape ({n},)")
            if not (np.isfinite(sample_weight).all() and (sample_weight >= 0).all()):
                raise ValueError("seeding state: sample_weight must be finite and >= 0")
            if not (sample_weight.flags.writeable and sample_weight.flags.owndata):
                sample_weight = sample_weight.copy()
        arrays = {
            "removed": (np.uint8, n), "mind": (np.float64, n), "labels": (np.int32, n),
            "centers": (np.int64, k), "counts": (np.int64, k), "wsizes": (np.float64, k)}
        conv = {}
        for name, (dt, size) in arrays.items():
            if name not in state:
                raise ValueError(f"seeding state: {name} is missing")
            a = np.asarray(state[name])
            if a.dtype.kind not in "biuf" or a.shape != (size,):
                raise ValueError(f"seeding state: {name} has dtype {a.dtype} and shape "
                                 f"{a.shape}, expected a numeric array of shape ({size},)")
            b = np.ascontiguousarray(a, dtype=dt).copy()
            if not np.array_equal(b, a):       # the conversion changed values
                raise ValueError(f"seeding state: {name} does not fit {np.dtype(dt).name}")
            conv[name] = b
        rm, lab, mind = conv["removed"], conv["labels"], conv["mind"]
        centers, counts, wsizes = conv["centers"], conv["counts"], conv["wsizes"]
        if rm.size and rm.max() > 1:
            raise ValueError("seeding state: removed must hold 0 or 1")
        gone = rm.astype(bool)
        if lab.size and (lab.min() < -1 or lab.max() >= k):
            raise ValueError(f"seeding state: labels must lie in [-1, {k})")
        if not np.array_equal(lab < 0, gone):
            raise ValueError("seeding state: labels must be -1 exactly at removed points")
        if not (np.isfinite(mind).all() and (mind >= 0).all() and (mind[gone] == 0).all()):
            raise ValueError("seeding state: mind must be finite, >= 0 and 0 at removed points")
        if centers.min() < 0 or centers.max() >= n or np.unique(centers).size != k:
            raise ValueError(f"seeding state: centers must be {k} distinct ids in [0, {n})")
        if gone[centers].any():
            raise ValueError("seeding state: a center is a removed point")
        active = ~gone
        if _check_mind(X, mind, lab, centers, rm, k) >= 0:
            raise ValueError("seeding state: mind differs from the distances to the "
                             "labelled centers")
        if (mind[centers] != 0).any() or (lab[centers] > np.arange(k)).any():
            raise ValueError("seeding state: a center is not at distance 0 from "
                             "its own or an earlier center")
        if not np.array_equal(counts, np.bincount(lab[active], minlength=k)):
            raise ValueError("seeding state: counts differ from the counts of the labels")
        n_act = int(np.count_nonzero(active))
        if sample_weight is None:
            n_pos = n_act
            if not np.array_equal(wsizes, counts.astype(np.float64)):
                raise ValueError("seeding state: wsizes differ from the counts")
        else:
            n_pos = int(np.count_nonzero(active & (sample_weight > 0)))
            ref = np.bincount(lab[active], weights=sample_weight[active], minlength=k)
            if not np.allclose(wsizes, ref, rtol=1e-9, atol=1e-9 * max(float(ref.sum()), 1.0)):
                raise ValueError("seeding state: wsizes differ from the weights of the labels")
        if int(state.get("n_active", -1)) != n_act or int(state.get("n_positive", -1)) != n_pos:
            raise ValueError("seeding state: n_active or n_positive differs from the arrays")
        if n_pos < k:
            raise ValueError(f"seeding state: {n_pos} active points of positive weight, "
                             f"fewer than n_clusters={k}")
        s.X = X
        s.sample_weight = sample_weight
        if sample_weight is not None:
            s.w = sample_weight
        s.n_clusters = k
        s.generator = generator
        s.n_active = n_act
        s.n_positive = n_pos
        s._removed_arr = rm
        s.removed = s._removed_arr
        s._mind_arr, s._labels_arr, s._centers_arr = mind, lab, centers
        s.mind, s.labels, s.centers = s._mind_arr, s._labels_arr, s._centers_arr
        s._counts_arr, s._wsizes_arr = counts, wsizes
        s.counts, s.wsizes = s._counts_arr, s._wsizes_arr
        s._pos_arr = np.full(n, -1, dtype=np.int32)
        s.center_pos = s._pos_arr
        for i in range(k):
            s.center_pos[centers[i]] = <int32_t> i
        return s

    def copy(self, generator):
        """A state whose arrays are copies of this one's, drawing from
        ``generator``; X and the weights are shared (read only by both
        until :meth:`erase`)."""
        cdef SeedingState s = SeedingState.__new__(SeedingState)
        s.X = self.X
        s.sample_weight = self.sample_weight
        if self.sample_weight is not None:
            s.w = self.sample_weight
        s.n_clusters, s.generator = self.n_clusters, generator
        s.n_active, s.n_positive = self.n_active, self.n_positive
        s._removed_arr = self._removed_arr.copy()
        s._mind_arr, s._labels_arr = self._mind_arr.copy(), self._labels_arr.copy()
        s._centers_arr, s._pos_arr = self._centers_arr.copy(), self._pos_arr.copy()
        s._counts_arr, s._wsizes_arr = self._counts_arr.copy(), self._wsizes_arr.copy()
        s.removed, s.mind, s.labels = s._removed_arr, s._mind_arr, s._labels_arr
        s.centers, s.center_pos = s._centers_arr, s._pos_arr
        s.counts, s.wsizes = s._counts_arr, s._wsizes_arr
        return s

    def erase(self, const int64_t[::1] ids):
        """Overwrite the rows (and weights) of removed points ``ids`` with
        zeros; X and the weights must be writeable arrays this state owns."""
        cdef fkm_index_t t, n = self.X.shape[0]
        for t in range(ids.shape[0]):
            if ids[t] < 0 or ids[t] >= n or not self.removed[ids[t]]:
                raise ValueError("erase: ids must be removed points")
        idx = np.asarray(ids)
        self.X[idx] = 0
        if self.sample_weight is not None:
            self.sample_weight[idx] = 0.0

    cdef const double *_wptr(self):
        if self.sample_weight is None:
            return NULL
        return &self.w[0]

    cdef int _reseed(self, fkm_index_t n_prefix, object removed) except -1:
        """Keep centers[:n_prefix], resample the rest; atomic on failure."""
        cdef fkm_index_t n = self.X.shape[0], k = self.n_clusters, i
        centers = np.zeros(k, dtype=np.int64)
        # Warm resume (bit-identical to a cold one) recomputes the points
        # whose nearest center is at or after n_prefix against the n_prefix
        # prefix centers, row by row; for d <= 16 a cold pass over packed
        # data is ~2.5x cheaper per point, so warm pays only when few points
        # need it.
        cdef bint warm = n_prefix > 0
        if warm and resume_mode == "never":
            warm = False
        elif warm and resume_mode == "auto" and self.X.shape[1] <= 16:
            moved = self._counts_arr[n_prefix:].sum()
            warm = 2.5 * moved < max(self.n_active, 1)
        if n_prefix > 0:
            centers[:n_prefix] = self._centers_arr[:n_prefix]
        if warm:
            # Resume from a copy of the current state (kept intact on error).
            mind = self._mind_arr.copy()
            labels = self._labels_arr.copy()
        else:
            mind = np.empty(n, dtype=np.float64)
            labels = np.empty(n, dtype=np.int32)
        cdef uint8_t[::1] rm = removed
        _run(self.generator, centers, mind, labels, self.X, self._wptr(),
             &rm[0], k, n_prefix, warm)
        # Success: swap in the new state.
        if self._centers_arr is not None:
            for i in range(k):
                self.center_pos[self._centers_arr[i]] = -1
        self._centers_arr, self._mind_arr, self._labels_arr = centers, mind, labels
        self.centers, self.mind, self.labels = centers, mind, labels
        for i in range(k):
            self.center_pos[centers[i]] = <int32_t> i
        active = labels >= 0
        self._counts_arr = np.bincount(labels[active], minlength=k).astype(np.int64)
        if self.sample_weight is None:
            self._wsizes_arr = self._counts_arr.astype(np.float64)
        else:
            self._wsizes_arr = np.bincount(labels[active],
                                           weights=self.sample_weight[active],
                                           minlength=k).astype(np.float64)
        self.counts, self.wsizes = self._counts_arr, self._wsizes_arr
        return 0

    def remove(self, const int64_t[::1] ids):
        """Remove the points `ids` (validated here, atomically).

        Returns (reseeded, position): position is the index of the first
        removed center in the seeding order, or -1.
        """
        cdef fkm_index_t m = ids.shape[0], n = self.X.shape[0], t, i
        cdef fkm_index_t first = -1, n_pos_removed = 0
        cdef int bad = 0
        cdef str why = ""
        # Validate, marking with 2 to catch repeats; roll back on error.
        for t in range(m):
            i = ids[t]
            if i < 0 or i >= n:
                bad, why = 1, f"id {i} is out of range [0, {n})"
                break
            if self.removed[i] == 2:
                bad, why = 1, f"id {i} is repeated in the request"
                break
            if self.removed[i] == 1:
                bad, why = 1, f"id {i} was already removed"
                break
            self.removed[i] = 2
            if self.sample_weight is None or self.w[i] > 0:
                n_pos_removed += 1
            if self.center_pos[i] >= 0 and (first < 0 or self.center_pos[i] < first):
                first = self.center_pos[i]
        if not bad and self.n_positive - n_pos_removed < self.n_clusters:
            bad = 1
            why = (f"removing {m} point(s) would leave "
                   f"{self.n_positive - n_pos_removed} point(s) with positive "
                   f"weight, fewer than n_clusters={self.n_clusters}")
        if bad:
            for t in range(m):
                i = ids[t]
                if 0 <= i < n and self.removed[i] == 2:
                    self.removed[i] = 0
            from pyfkm.exceptions import InvalidIdError
            raise InvalidIdError(why + "; nothing was removed")
        for t in range(m):
            self.removed[ids[t]] = 1
        if first >= 0:
            try:
                self._reseed(first, self._removed_arr)
            except BaseException:
                for t in range(m):
                    self.removed[ids[t]] = 0
                raise
        else:
            for t in range(m):
                i = ids[t]
                self.counts[self.labels[i]] -= 1
                self.wsizes[self.labels[i]] -= 1.0 if self.sample_weight is None else self.w[i]
                self.labels[i] = -1
                self.mind[i] = 0.0
        self.n_active -= m
        self.n_positive -= n_pos_removed
        return first >= 0, first

    def remove_one(self, int64_t i):
        """Fast path of remove() for a single id."""
        cdef fkm_index_t n = self.X.shape[0]
        cdef int32_t lab
        if i < 0 or i >= n or self.removed[i] or self.center_pos[i] >= 0 or \
                (self.n_positive - 1 < self.n_clusters and
                 (self.sample_weight is None or self.w[i] > 0)):
            return self.remove(np.array([i], dtype=np.int64))
        self.removed[i] = 1
        lab = self.labels[i]
        self.counts[lab] -= 1
        if self.sample_weight is None:
            self.wsizes[lab] -= 1.0
        else:
            self.wsizes[lab] -= self.w[i]
            if self.w[i] > 0:
                self.n_positive -= 1
        if self.sample_weight is None:
            self.n_positive -= 1
        self.labels[i] = -1
        self.mind[i] = 0.0
        self.n_active -= 1
        return False, -1

    @property
    def center_ids(self):
        return self._centers_arr.copy()

    @property
    def labels_array(self):
        return self._labels_arr.copy()

    @property
    def min_sq_dist(self):
        return self._mind_arr.copy()

    @property
    def counts_array(self):
        return self._counts_arr.copy()

    @property
    def weights_array(self):
        return self._wsizes_arr.copy()

    @property
    def removed_mask(self):
        return self._removed_arr.astype(bool)


def _from_pickle(X, sample_weight, n_clusters, generator, state):
    return SeedingState.from_state(X, sample_weight, n_clusters, generator, state)
