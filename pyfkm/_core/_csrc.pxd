# Declarations of the whole C API in csrc/ (one block per header).
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

cdef extern from "fkm_common.h" nogil:
    enum:
        FKM_OK
        FKM_ENOMEM
        FKM_EDOM
        FKM_EOVERFLOW
        FKM_ENONFINITE
    ctypedef int64_t fkm_index_t

cdef extern from "fkm_rng.h" nogil:
    ctypedef struct fkm_rng_t:
        void *state
        uint64_t (*next_uint64)(void *st) nogil
        double (*next_double)(void *st) nogil

cdef extern from "fkm_seeding.h" nogil:
    int fkm_seeding_run_f64(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                            int32_t *labels, const double *X, const double *w,
                            const uint8_t *removed, fkm_index_t n, fkm_index_t d,
                            fkm_index_t k, fkm_index_t n_prefix)
    int fkm_seeding_run_f32(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                            int32_t *labels, const float *X, const double *w,
                            const uint8_t *removed, fkm_index_t n, fkm_index_t d,
                            fkm_index_t k, fkm_index_t n_prefix)

    int fkm_seeding_resume_f64(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                               int32_t *labels, const double *X, const double *w,
                               const uint8_t *removed, fkm_index_t n, fkm_index_t d,
                               fkm_index_t k, fkm_index_t n_prefix)
    int fkm_seeding_resume_f32(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                               int32_t *labels, const float *X, const double *w,
                               const uint8_t *removed, fkm_index_t n, fkm_index_t d,
                               fkm_index_t k, fkm_index_t n_prefix)

cdef extern from "fkm_lloyd.h" nogil:
    fkm_index_t fkm_lloyd_packed_size(fkm_index_t k, fkm_index_t d)
    void fkm_lloyd_pack_centers(double *ct, double *hnorm, const double *centers,
                                const double *shift, fkm_index_t k, fkm_index_t d)
    enum: FKM_LLOYD_PACK_MAX_D
    void fkm_lloyd_pack_points_f64(double *P, const double *X, fkm_index_t lo,
                                   fkm_index_t hi, fkm_index_t d)
    void fkm_lloyd_pack_points_f32(double *P, const float *X, fkm_index_t lo,
                                   fkm_index_t hi, fkm_index_t d)
    int fkm_lloyd_assign_f64(int32_t *labels, fkm_index_t *n_changed,
                             double *mind, double *sums,
                             double *wsums, double *inertia, const double *X,
                             const double *P, const double *w, fkm_index_t lo, fkm_index_t hi,
                             fkm_index_t d, const double *ct, const double *hnorm,
                             const double *centers, fkm_index_t k)
    int fkm_lloyd_assign_f32(int32_t *labels, fkm_index_t *n_changed,
                             double *mind, double *sums,
                             double *wsums, double *inertia, const float *X,
                             const double *P, const double *w, fkm_index_t lo, fkm_index_t hi,
                             fkm_index_t d, const double *ct, const double *hnorm,
                             const double *centers, fkm_index_t k)
    void fkm_lloyd_merge(double *sums, double *wsums, double *inertia,
                         const double *part_sums, const double *part_wsums,
                         const double *part_inertia, fkm_index_t n_parts,
                         fkm_index_t k, fkm_index_t d)

cdef extern from "fkm_lattice.h" nogil:
    int fkm_lattice_quantize_f64(int64_t *bins, const double *X,
                                 const double *phase, fkm_index_t n,
                                 fkm_index_t d, double step)
    int fkm_lattice_quantize_f32(int64_t *bins, const float *X,
                                 const double *phase, fkm_index_t n,
                                 fkm_index_t d, double step)
    int fkm_lattice_centers(double *out, const int64_t *bins, const double *phase,
                            fkm_index_t n, fkm_index_t d, double step)
    int fkm_lattice_sample(fkm_rng_t *rng, double *out, const int64_t *bins,
                           const double *phase, fkm_index_t n, fkm_index_t d,
                           double step)
    int fkm_lattice_grid_size(int64_t *size, fkm_index_t d, int64_t n_bins)
    int fkm_lattice_flatten(int64_t *index, const int64_t *bins, fkm_index_t n,
                            fkm_index_t d, int64_t n_bins)
    int fkm_lattice_unflatten(int64_t *bins, const int64_t *index, fkm_index_t n,
                              fkm_index_t d, int64_t n_bins)
