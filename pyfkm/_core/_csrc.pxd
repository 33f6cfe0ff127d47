# Declarations of the whole C API in csrc/ (one block per header).
#
# deliberate specialization: each *_f64 / *_f32 pair is declared once per
# input type (C has no generics; csrc/fkm_typed.h instantiates one body for
# both), and every prototype restates its csrc/*.h one (and so the C
# definition), as Cython reads no C headers; these lines repeat by design.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

cdef extern from "fkm_common.h" nogil:
    enum:
        FKM_OK
        FKM_ENOMEM
        FKM_EDOM
        FKM_EOVERFLOW
        FKM_ENONFINITE
        FKM_ENOTSPLIT
        FKM_EREPEATED
        FKM_ENOSPLIT_RNG
    ctypedef int64_t fkm_index_t
    int fkm_debug_build()

cdef extern from "fkm_rng.h" nogil:
    ctypedef struct fkm_rng_t:
        void *state
        uint64_t (*next_uint64)(void *st) nogil
        double (*next_double)(void *st) nogil
        const uint64_t *words
        int *pos
        int nwords
    void fkm_rng_set(fkm_rng_t *rng, void *state, uint64_t (*next_uint64)(void *st) nogil,
                     double (*next_double)(void *st) nogil)

cdef extern from "fkm_seeding.h" nogil:
    int fkm_seeding_run_f64(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                            int32_t *labels, const double *X, const double *w,
                            const uint8_t *removed, fkm_index_t n, fkm_index_t d,
                            fkm_index_t k, fkm_index_t n_prefix)
    # deliberate specialization: the float32 twin (see the top of this file)
    int fkm_seeding_run_f32(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                            int32_t *labels, const float *X, const double *w,
                            const uint8_t *removed, fkm_index_t n, fkm_index_t d,
                            fkm_index_t k, fkm_index_t n_prefix)

    int fkm_seeding_resume_f64(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                               int32_t *labels, const double *X, const double *w,
                               const uint8_t *removed, fkm_index_t n, fkm_index_t d,
                               fkm_index_t k, fkm_index_t n_prefix)
    # deliberate specialization: the float32 twin (see the top of this file)
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
    # deliberate specialization: the float32 twin (see the top of this file)
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

cdef extern from "fkm_field.h" nogil:
    ctypedef struct fkm_field_t:
        uint64_t p
    int fkm_field_init(fkm_field_t *F, uint64_t p)
    int fkm_is_prime(uint64_t n)
    uint64_t fkm_prev_prime(uint64_t n)
    uint64_t fkm_addmod(uint64_t a, uint64_t b, fkm_field_t F)
    uint64_t fkm_submod(uint64_t a, uint64_t b, fkm_field_t F)
    uint64_t fkm_negmod(uint64_t a, fkm_field_t F)
    uint64_t fkm_mulmod(uint64_t a, uint64_t b, fkm_field_t F)
    uint64_t fkm_powmod(uint64_t a, uint64_t e, fkm_field_t F)
    uint64_t fkm_invmod(uint64_t a, fkm_field_t F)

cdef extern from "fkm_poly.h" nogil:
    ctypedef struct fkm_pctx_t:
        fkm_field_t F
        int two_adicity
    ctypedef struct fkm_poly_t:
        uint64_t *c
        int64_t len
        int64_t cap
    int fkm_pctx_init(fkm_pctx_t *C, uint64_t p)
    void fkm_pctx_clear(fkm_pctx_t *C)
    int fkm_pctx_reserve(fkm_pctx_t *C, int64_t len)
    void fkm_poly_init(fkm_poly_t *P)
    void fkm_poly_clear(fkm_poly_t *P)
    int fkm_poly_mul(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                     const uint64_t *b, int64_t lb, uint64_t *out)
    int fkm_poly_mullow(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                        const uint64_t *b, int64_t lb, int64_t n, uint64_t *out)
    int fkm_poly_inv_series(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                            int64_t n, uint64_t *out)
    int fkm_poly_divrem(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                        const uint64_t *b, int64_t lb, uint64_t *q, uint64_t *r)
    int fkm_poly_gcd(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                     const uint64_t *b, int64_t lb, fkm_poly_t *G)
    int fkm_poly_gcd_classical(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                               const uint64_t *b, int64_t lb, fkm_poly_t *G)
    int fkm_poly_gcd_hgcd(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                          const uint64_t *b, int64_t lb, fkm_poly_t *G,
                          int64_t cut)
    int fkm_poly_xgcd(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                      const uint64_t *b, int64_t lb, fkm_poly_t *G,
                      fkm_poly_t *S, fkm_poly_t *T)
    int fkm_poly_powmod(fkm_pctx_t *C, const uint64_t *base, int64_t lbase,
                        const uint64_t *e, int64_t ne, const uint64_t *f,
                        int64_t lf, uint64_t *out)
    void fkm_poly_derivative(const uint64_t *a, int64_t la, uint64_t *out,
                             fkm_field_t F)
    uint64_t fkm_poly_eval(const uint64_t *a, int64_t la, uint64_t x,
                           fkm_field_t F)

cdef extern from "fkm_bm.h" nogil:
    ctypedef struct fkm_bm_t:
        pass
    int fkm_bm_init(fkm_bm_t *bm, fkm_field_t F, int64_t cap)
    void fkm_bm_clear(fkm_bm_t *bm)
    int fkm_bm_add(fkm_bm_t *bm, const uint64_t *terms, int64_t n)
    void fkm_bm_result(const fkm_bm_t *bm, uint64_t *c)
    int64_t fkm_bm_length(const fkm_bm_t *bm)
    int64_t fkm_bm_nterms(const fkm_bm_t *bm)
    int fkm_berlekamp_massey(fkm_field_t F, const uint64_t *s, int64_t N,
                             uint64_t *c, int64_t *lc)
    int fkm_berlekamp_massey_cut(fkm_field_t F, const uint64_t *s, int64_t N,
                                 uint64_t *c, int64_t *lc, int64_t cut)

cdef extern from "fkm_polyfac.h" nogil:
    ctypedef struct fkm_faclist_t:
        uint64_t *coef
        int64_t *off
        int64_t *exps
        int64_t nf
    int fkm_poly_roots(fkm_pctx_t *C, const uint64_t *f, int64_t lf,
                       int require_split, fkm_rng_t *rng, uint64_t *roots,
                       int64_t *mult, int64_t *nroots)
    int fkm_poly_sqf(fkm_pctx_t *C, const uint64_t *f, int64_t lf,
                     fkm_faclist_t *out)
    int fkm_poly_factor(fkm_pctx_t *C, const uint64_t *f, int64_t lf,
                        fkm_rng_t *rng, fkm_faclist_t *out)

cdef extern from "fkm_vdm.h" nogil:
    ctypedef struct fkm_vdm_t:
        int64_t m
    int fkm_vdm_init(fkm_vdm_t *V, fkm_pctx_t *C, const uint64_t *nodes,
                     int64_t m)
    void fkm_vdm_clear(fkm_vdm_t *V)
    int fkm_vdm_solve(const fkm_vdm_t *V, fkm_pctx_t *C, const uint64_t *s,
                      uint64_t *c)
    int fkm_poly_eval_multi(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                            const uint64_t *x, int64_t n, uint64_t *out)

cdef extern from "fkm_scma.h" nogil:
    int fkm_scma_power_sums(fkm_field_t F, const uint64_t *x, int64_t k,
                            const uint64_t *w, int64_t r, int64_t n, uint64_t *out)
    void fkm_scma_affine_rows(fkm_field_t F, const uint64_t *a, int64_t n, int64_t d,
                              const uint64_t *coef, uint64_t c0, uint64_t *out)

cdef extern from "fkm_stream.h" nogil:
    int64_t fkm_stream_accumulate(fkm_field_t F, const uint64_t *words, int64_t nw,
                                  uint64_t lim, int negate, uint64_t *acc,
                                  int64_t n, int64_t filled)
    enum: FKM_STREAMS_MAX_N
    void fkm_streams_accumulate(fkm_field_t F, const uint64_t *words, int64_t nk, int64_t nw,
                                uint64_t lim, const uint8_t *negate, uint64_t *acc, int64_t n,
                                int64_t *filled)

cdef extern from "fkm_race.h" nogil:
    double fkm_race_uniform(uint64_t key, int64_t id, uint64_t step)
    int fkm_race_seeding_f64(fkm_index_t *seeds, double *d2, const double *X,
                             const int64_t *ids, const uint8_t *excluded,
                             fkm_index_t n, fkm_index_t d, fkm_index_t k, uint64_t key,
                             fkm_index_t n_trials)
    int fkm_race_seeding_f32(fkm_index_t *seeds, double *d2, const float *X,
                             const int64_t *ids, const uint8_t *excluded,
                             fkm_index_t n, fkm_index_t d, fkm_index_t k, uint64_t key,
                             fkm_index_t n_trials)
    int fkm_race_seeding_dist_f64(fkm_index_t *seeds, double *d2, double *dist,
                                  const double *X, const int64_t *ids,
                                  fkm_index_t n, fkm_index_t d, fkm_index_t k,
                                  uint64_t key)
    int fkm_race_seeding_trace_f64(fkm_index_t *seeds, double *d2, fkm_index_t *cand,
                                   double *pot, const double *X, const int64_t *ids,
                                   const uint8_t *excluded, fkm_index_t n,
                                   fkm_index_t d, fkm_index_t k, uint64_t key,
                                   fkm_index_t n_trials)

cdef extern from "fkm_lloyd.h" nogil:
    int fkm_lloyd_label_f64(int32_t *labels, fkm_index_t *n_changed, const double *X,
                            const double *P, fkm_index_t lo, fkm_index_t hi, fkm_index_t d,
                            const double *ct, const double *hnorm, fkm_index_t k,
                            const unsigned char *need)
    int fkm_lloyd_assign_masked_f64(int32_t *labels, fkm_index_t *n_changed,
                                    double *mind, double *sums, double *wsums,
                                    double *inertia, const double *X, const double *P,
                                    const double *w, fkm_index_t lo, fkm_index_t hi,
                                    fkm_index_t d, const double *ct, const double *hnorm,
                                    const double *centers, fkm_index_t k,
                                    const unsigned char *need)
    int fkm_lloyd_assign_masked_f32(int32_t *labels, fkm_index_t *n_changed,
                                    double *mind, double *sums, double *wsums,
                                    double *inertia, const float *X, const double *P,
                                    const double *w, fkm_index_t lo, fkm_index_t hi,
                                    fkm_index_t d, const double *ct, const double *hnorm,
                                    const double *centers, fkm_index_t k,
                                    const unsigned char *need)

cdef extern from "fkm_lloyd_acc.h" nogil:
    fkm_index_t fkm_lloyd_acc_scratch(fkm_index_t k, fkm_index_t d)
    void fkm_lloyd_accumulate_f64(double *sums, double *wsums, double *scratch,
                                  const double *X, const double *w, const int32_t *labels,
                                  fkm_index_t n, fkm_index_t d, fkm_index_t k,
                                  const unsigned char *dirty)
    double fkm_lloyd_distances_f64(double *mind, const double *X, const double *P,
                                   const double *w, const int32_t *labels,
                                   const double *centers, fkm_index_t n, fkm_index_t d)

cdef extern from "fkm_lloyd_loop.h" nogil:
    int fkm_lloyd_loop_f64(double *centers, int32_t *labels, double *mind,
                           fkm_index_t *n_iter, double *inertia,
                           const double *X, const double *w, fkm_index_t n,
                           fkm_index_t d, fkm_index_t k, fkm_index_t max_iter,
                           double tol_abs, int use_bounds)
    ctypedef struct fkm_lloyd_trace:
        fkm_index_t n, d, k, len, cap, last_scored, last_summed
    void fkm_lloyd_trace_free(fkm_lloyd_trace *trace)
    int fkm_lloyd_loop_traced_f64(double *centers, int32_t *labels, double *mind,
                                  fkm_index_t *n_iter, double *inertia,
                                  const double *X, const double *w, fkm_index_t n,
                                  fkm_index_t d, fkm_index_t k, fkm_index_t max_iter,
                                  double tol_abs, fkm_lloyd_trace *trace)
    # deliberate specialization: the prototype of csrc/fkm_lloyd_loop.h restated
    # (see the top of this file)
    int fkm_lloyd_loop_traced_packed_f64(double *centers, int32_t *labels, double *mind,
                                         fkm_index_t *n_iter, double *inertia,
                                         const double *X, const double *P, const double *w,
                                         fkm_index_t n, fkm_index_t d, fkm_index_t k,
                                         fkm_index_t max_iter, double tol_abs,
                                         fkm_lloyd_trace *trace)
    void fkm_lloyd_bounds_norms_f64(double *xn, const double *X, fkm_index_t lo,
                                    fkm_index_t hi, fkm_index_t d)
    void fkm_lloyd_bounds_moves_f64(double *move, fkm_index_t *j1, double *m1, double *m2,
                                    const double *old, const double *centers, fkm_index_t k,
                                    fkm_index_t d)
    int fkm_lloyd_assign_bounded_f64(
        int32_t *labels, fkm_index_t *n_changed, fkm_index_t *n_scored, double *mind,
        double *sums, double *wsums, double *inertia, double *U, double *L,
        unsigned char *need, const double *X, const double *P, const double *w,
        const double *xn, fkm_index_t lo, fkm_index_t hi, fkm_index_t d, const double *ct,
        const double *hnorm, const double *shift, const double *centers, fkm_index_t k,
        const double *move, fkm_index_t j1, double m1, double m2)
from libc.stdint cimport uint32_t

cdef extern from "fkm_chacha.h" nogil:
    enum: FKM_CHACHA_NBLK
    ctypedef struct fkm_chacha_t:
        uint32_t input[16]
        int pos
        int last
        int failed
    void fkm_chacha_block(uint32_t *out, const uint32_t *input)
    void fkm_chacha_init(fkm_chacha_t *st, const uint8_t *key,
                         const uint8_t *nonce, uint32_t counter)
    int fkm_chacha_words(fkm_chacha_t *st, uint64_t *out, fkm_index_t n)
    void fkm_chacha_first_blocks(const uint8_t *keys, fkm_index_t nk, const uint8_t *nonce,
                                 uint32_t nb, uint64_t *out)
    void fkm_chacha_rng(fkm_rng_t *rng, fkm_chacha_t *st)

cdef extern from "fkm_noise.h" nogil:
    ctypedef struct fkm_dgauss_t:
        uint64_t P
        uint64_t Q
        uint64_t t
    int fkm_dgauss_init(fkm_dgauss_t *G, uint64_t P, uint64_t Q)
    int fkm_noise_gaussian(fkm_rng_t *rng, double *out, fkm_index_t n, double sigma)
    int fkm_noise_laplace(fkm_rng_t *rng, double *out, fkm_index_t n, double scale)
    int fkm_noise_discrete_gaussian(fkm_rng_t *rng, int64_t *out, fkm_index_t n,
                                    const fkm_dgauss_t *G)
    int fkm_noise_discrete_laplace(fkm_rng_t *rng, int64_t *out, fkm_index_t n,
                                   uint64_t t)
    int fkm_noise_bernoulli_exp(fkm_rng_t *rng, uint8_t *out, fkm_index_t n,
                                uint64_t num, uint64_t den)

cdef extern from "fkm_kcenter.h" nogil:
    int fkm_kcenter_sqdist(double *D, const double *X, fkm_index_t lo,
                           fkm_index_t hi, const double *Y, fkm_index_t m,
                           fkm_index_t d)
    int fkm_kcenter_sqdist_f32(float *F, const double *X, fkm_index_t n,
                               fkm_index_t d)
    int fkm_kcenter_nearest(double *mind, fkm_index_t *arg, const double *X,
                            fkm_index_t n, const double *C, fkm_index_t k,
                            fkm_index_t d)
    int fkm_kcenter_aggregate(fkm_index_t *reps, int64_t *weights,
                              fkm_index_t *n_reps, uint8_t *remaining,
                              const float *F, const double *X, fkm_index_t n,
                              fkm_index_t d, double t2, double t4, double y,
                              fkm_index_t max_reps)
    int fkm_kcenter_greedy(fkm_index_t *centers, fkm_index_t *n_centers,
                           int64_t *uncovered_weight, uint8_t *uncovered,
                           const float *F, const double *X, const int64_t *w,
                           fkm_index_t n, fkm_index_t d, double t_small,
                           double t_large, fkm_index_t k)
    int fkm_kcenter_nn(double *nn, const float *F, const double *X,
                       fkm_index_t n, fkm_index_t d)
    ctypedef struct fkm_kctree_t:
        pass
    int fkm_kctree_build(fkm_kctree_t **out, const double *X, fkm_index_t n,
                         fkm_index_t d)
    void fkm_kctree_free(fkm_kctree_t *T)
    int fkm_kctree_nn(double *nn, const fkm_kctree_t *T)
    int fkm_kctree_aggregate(fkm_index_t *reps, int64_t *weights,
                             fkm_index_t *n_reps, uint8_t *remaining,
                             const fkm_kctree_t *T, double t2, double t4,
                             double y, fkm_index_t max_reps)

cdef extern from "fkm_qlloyd.h" nogil:
    int fkm_qlloyd_assign_f64(int32_t *labels, double *lb, double *mind,
                              double *sums, int64_t *counts, double *loss,
                              const double *X, const double *C, const double *move,
                              fkm_index_t n, fkm_index_t d, fkm_index_t k, int first,
                              int lb_holds_dist)
    int fkm_qlloyd_relabel_f64(int32_t *labels, double *mind, double *cc,
                               const double *X, const int64_t *rows, const double *C,
                               fkm_index_t m, fkm_index_t n, fkm_index_t d, fkm_index_t k)
    int fkm_qlloyd_rescan_f64(int64_t *rows, int32_t *labels, double *mind, int32_t *prev,
                              double *prev_mind, fkm_index_t *m_out, double *max_mind,
                              double *cc, const double *X, const int32_t *ref_labels,
                              const double *ref_mind, const unsigned char *keep,
                              const double *far, const double *C, fkm_index_t n,
                              fkm_index_t d, fkm_index_t k)
    int fkm_qlloyd_cells_f64(double *lo, unsigned char *sure, fkm_index_t *n_moved,
                             const double *sums, const int64_t *counts, const double *prev,
                             const double *phases, const int64_t *cells, double g, double eps,
                             const double *quantum, const double *maxabs, fkm_index_t T,
                             fkm_index_t k, fkm_index_t d)

cdef extern from "fkm_bigmod.h" nogil:
    enum: FKM_P256_BYTES
    int64_t FKM_P256_MAX_TERMS
    int fkm_p256_dots(int64_t n, int64_t t, const uint8_t *const *w,
                      const uint8_t *const *s, uint8_t *out, int64_t *bad)
    int fkm_p256_eval(int64_t m, int64_t deg1, const uint8_t *c, int64_t n,
                      const uint64_t *x, uint8_t *out, int64_t *bad)
