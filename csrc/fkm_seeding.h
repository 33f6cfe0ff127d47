/* fkm_seeding.h -- weighted k-means++ (D^2) seeding, resumable from a prefix.
 *
 * This is the exact-unlearning primitive of MUFC (Pan et al., ICLR 2023,
 * Alg. 3): seeding a dataset whose removed points are masked out, keeping a
 * given prefix of centers and drawing the rest by D^2 sampling.
 *
 * Sampling rule (one candidate per step, as analysed by Arthur & Vassilvitskii
 * 2007): the first center is drawn with probability proportional to its
 * weight w_i, every later one with probability proportional to
 * w_i * D_i^2, D_i the distance to the nearest center chosen so far.  When all
 * w_i * D_i^2 vanish (fewer distinct points than centers), the next center is
 * drawn proportionally to weight among the active points not chosen yet; the
 * rule depends only on the prefix, so removal stays exact.
 *
 * Arithmetic is double precision for both input types.  Up to d = 16 every
 * distance is computed, reading X in place (or a packed copy when it fits in
 * cache); above, distances to a new center are skipped for points that the
 * triangle inequality proves cannot get closer (||c_new - c_l||^2 >=
 * 4 D_i^2, c_l the point's nearest center) when few are left in a block of
 * points.  Neither changes a result.
 */
#ifndef FKM_SEEDING_H
#define FKM_SEEDING_H

#include "fkm_common.h"
#include "fkm_rng.h"

/* fkm_seeding_run_{f64,f32}
 *
 * rng        generator; drawn from exactly k - max(n_prefix, 0) times
 * centers    INOUT, length k: centers[0..n_prefix) are given row ids (kept),
 *            centers[n_prefix..k) are written
 * mind       OUT, length n: squared distance of each active point to its
 *            nearest center (removed points: 0)
 * labels     OUT, length n: position (0..k-1) of the nearest center, first
 *            one on ties (removed points: -1); or NULL when not wanted
 *            (up to d = 16 the passes then neither read nor write labels)
 * X          IN, n x d row-major
 * w          IN, length n, nonnegative weights, or NULL for unit weights
 * removed    IN, length n, nonzero marks a removed point, or NULL
 * Assumes without checking: 0 <= n_prefix <= k, the prefix ids are active
 * and distinct, at least k active points have positive weight.
 * Non-finite X is allowed and safe: it makes the D^2 mass non-finite, which
 * returns FKM_ENONFINITE (pyfkm.core.seeding relies on this to skip a pass
 * over X and then names the bad values).
 * Returns FKM_OK, FKM_ENOMEM, FKM_ENONFINITE (squared distances overflow, or
 * NaN/inf in X) or FKM_EDOM (no point is left to sample: the assumption above
 * is violated).
 */
int fkm_seeding_run_f64(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                        int32_t *labels, const double *X, const double *w,
                        const uint8_t *removed, fkm_index_t n, fkm_index_t d,
                        fkm_index_t k, fkm_index_t n_prefix);
int fkm_seeding_run_f32(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                        int32_t *labels, const float *X, const double *w,
                        const uint8_t *removed, fkm_index_t n, fkm_index_t d,
                        fkm_index_t k, fkm_index_t n_prefix);

/* fkm_seeding_resume_{f64,f32}: like fkm_seeding_run, from a warm state.
 *
 * mind, labels  INOUT (labels not NULL, else FKM_EDOM): on entry, the
 *               outputs of a previous run (or resume)
 *               on the same X and w whose centers[0..n_prefix) are the same
 *               ids, with any number of points removed since (now marked in
 *               `removed`); on exit, as for fkm_seeding_run.
 * Points whose nearest center was in the prefix keep it without any
 * distance computation; only the others are compared with the prefix
 * centers, so removing a late center costs far less than seeding afresh.
 * The result is bit-identical to fkm_seeding_run with the same prefix and
 * the same generator state.  1 <= n_prefix <= k, else FKM_EDOM.
 */
int fkm_seeding_resume_f64(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                           int32_t *labels, const double *X, const double *w,
                           const uint8_t *removed, fkm_index_t n,
                           fkm_index_t d, fkm_index_t k, fkm_index_t n_prefix);
int fkm_seeding_resume_f32(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                           int32_t *labels, const float *X, const double *w,
                           const uint8_t *removed, fkm_index_t n,
                           fkm_index_t d, fkm_index_t k, fkm_index_t n_prefix);

/* fkm_seeding_run_ex_{f64,f32}: fkm_seeding_run (warm = 0) or
 * fkm_seeding_resume (warm != 0) with the layout of X chosen by the caller
 * (pack < 0: by size, as those two do; 0: read X in place; > 0: pack it when
 * d <= 16).  Results are bit-identical whatever pack is: it exists so that
 * tests reach both paths on small data.  labels may be NULL only when warm
 * is 0 (else FKM_EDOM). */
int fkm_seeding_run_ex_f64(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                           int32_t *labels, const double *X, const double *w,
                           const uint8_t *removed, fkm_index_t n,
                           fkm_index_t d, fkm_index_t k, fkm_index_t n_prefix,
                           int warm, int pack);
int fkm_seeding_run_ex_f32(fkm_rng_t *rng, fkm_index_t *centers, double *mind,
                           int32_t *labels, const float *X, const double *w,
                           const uint8_t *removed, fkm_index_t n,
                           fkm_index_t d, fkm_index_t k, fkm_index_t n_prefix,
                           int warm, int pack);

/* fkm_seeding_check_mind_{f64,f32}: the distance check of a saved state.
 *
 * For every point i with removed[i] == 0: labels[i] must lie in [0, k),
 * centers[labels[i]] in [0, n), and |mind[i] - D| <= rtol * D + atol, D the
 * squared distance of row i to row centers[labels[i]] (computed as the
 * seeding computes it).  Every index is checked before use.
 * bad   OUT: -1 when all of that holds, else the first point that fails
 * Returns FKM_OK (whatever the verdict), or FKM_EDOM (bad NULL, n < 0,
 * d < 1, k < 1, or a NULL array with n > 0).  Touches nothing but *bad.
 */
int fkm_seeding_check_mind_f64(fkm_index_t *bad, const double *mind,
                               const int32_t *labels,
                               const fkm_index_t *centers, const double *X,
                               const uint8_t *removed, fkm_index_t n,
                               fkm_index_t d, fkm_index_t k, double rtol,
                               double atol);
int fkm_seeding_check_mind_f32(fkm_index_t *bad, const double *mind,
                               const int32_t *labels,
                               const fkm_index_t *centers, const float *X,
                               const uint8_t *removed, fkm_index_t n,
                               fkm_index_t d, fkm_index_t k, double rtol,
                               double atol);

#endif /* FKM_SEEDING_H */
