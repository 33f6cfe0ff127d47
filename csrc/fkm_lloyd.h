/* fkm_lloyd.h -- weighted Lloyd iteration: assignment and accumulation.
 *
 * One iteration = pack the centers once (fkm_lloyd_pack_centers), then call
 * fkm_lloyd_assign_* on fixed, contiguous ranges of points ("parts"), each
 * with its own partial sums, and merge the parts in order
 * (fkm_lloyd_merge).  The parts depend on n only, never on the number of
 * threads that process them, so results are identical for any thread count.
 *
 * Assignment minimises the score 0.5 ||c'||^2 + <c', s> - <x, c'>, c' = c - s,
 * which is 0.5 ||x - c||^2 up to terms that do not depend on c, for a fixed
 * shift s near the data (the data mean).  Rounding errors are then of order
 * eps * |x| * |c - s| instead of eps * |x| * |c|, which keeps assignments right
 * for data far from the origin.  Scores are computed in register tiles (the
 * GEMM formulation, without a BLAS dependency); the
 * squared distance reported for the chosen center is recomputed exactly as
 * sum_j (x_j - c_j)^2.  Arithmetic is double precision for both input types.
 * The score tiles use fused multiply-adds where the CPU has them (this file
 * enables contraction), so labels of points equidistant to two centers up to
 * rounding may differ between CPUs; on one machine results are deterministic
 * and independent of the thread count.
 *
 * deliberate specialization: each *_{f64,f32} pair below is declared twice,
 * once per input type, as C has no generics; both are instantiated from one
 * body (fkm_lloyd_impl.h through fkm_typed.h), so only the prototypes repeat.
 */
#ifndef FKM_LLOYD_H
#define FKM_LLOYD_H

#include "fkm_common.h"

/* Number of centers per packed panel. */
#define FKM_LLOYD_PANEL 8

/* Size in doubles of the packed-centers buffer for k centers in d dims. */
static inline fkm_index_t fkm_lloyd_packed_size(fkm_index_t k, fkm_index_t d)
{
    return ((k + FKM_LLOYD_PANEL - 1) / FKM_LLOYD_PANEL) * FKM_LLOYD_PANEL * d;
}

/* fkm_lloyd_pack_centers
 * ct     OUT, fkm_lloyd_packed_size(k, d) doubles: panel p, coordinate j,
 *        lane l holds c'[p*8 + l, j] = centers[p*8 + l, j] - shift[j]
 *        (0 for padding lanes)
 * hnorm  OUT, 8 * ceil(k / 8) doubles: 0.5 ||c'||^2 + <c', shift>, +inf for
 *        padding lanes
 * centers IN, k x d row-major, finite; shift IN, d doubles
 */
void fkm_lloyd_pack_centers(double *ct, double *hnorm, const double *centers,
                            const double *shift, fkm_index_t k, fkm_index_t d);

/* Largest d for which packing the points pays (see fkm_lloyd_pack_points). */
#define FKM_LLOYD_PACK_MAX_D 16

/* fkm_lloyd_pack_points_{f64,f32}: copy points [lo, hi) of X (lo a multiple
 * of 4; a trailing partial group of fewer than 4 points is left out) into
 * panels of 4 points, coordinate major: P[i*d + 4*j + l] = X[i + l, j] for
 * the panel starting at point i.  P is indexed by point id like X (n*d
 * doubles); done once per fit, it lets the assignment vectorize over points
 * for small d. */
void fkm_lloyd_pack_points_f64(double *P, const double *X, fkm_index_t lo,
                               fkm_index_t hi, fkm_index_t d);
/* deliberate specialization: the float32 twin (see the top of this file). */
void fkm_lloyd_pack_points_f32(double *P, const float *X, fkm_index_t lo,
                               fkm_index_t hi, fkm_index_t d);

/* fkm_lloyd_assign_{f64,f32}: points [lo, hi) of X (n x d row-major).
 * labels   INOUT, indexed by point id (only [lo, hi) used): nearest center,
 *          lowest index on exact ties of the score
 * n_changed OUT: number of points in [lo, hi) whose label differs from the
 *          value labels held on entry (initialise labels to -1 to count all)
 * mind     OUT or NULL, indexed by point id: exact squared distance to it;
 *          when NULL, distances and inertia are not computed (inertia = 0)
 * sums     OUT, k x d: sum of w_i x_i per center (zeroed first)
 * wsums    OUT, k: sum of w_i per center (zeroed first)
 * inertia  OUT: sum of w_i * squared distance
 * P        IN or NULL: X packed by fkm_lloyd_pack_points (then lo must be a
 *          multiple of 4, else FKM_EDOM); whole panels in [lo, hi) use it
 * w        IN or NULL (unit weights)
 * ct, hnorm from fkm_lloyd_pack_centers; centers the unpacked k x d array.
 * Returns FKM_OK or FKM_ENOMEM (a scratch buffer of 4*d doubles).
 */
int fkm_lloyd_assign_f64(int32_t *labels, fkm_index_t *n_changed,
                         double *mind, double *sums,
                         double *wsums, double *inertia, const double *X,
                         const double *P, const double *w, fkm_index_t lo, fkm_index_t hi,
                         fkm_index_t d, const double *ct, const double *hnorm,
                         const double *centers, fkm_index_t k);
/* deliberate specialization: the float32 twin (see the top of this file). */
int fkm_lloyd_assign_f32(int32_t *labels, fkm_index_t *n_changed,
                         double *mind, double *sums,
                         double *wsums, double *inertia, const float *X,
                         const double *P, const double *w, fkm_index_t lo, fkm_index_t hi,
                         fkm_index_t d, const double *ct, const double *hnorm,
                         const double *centers, fkm_index_t k);

/* fkm_lloyd_assign_masked_{f64,f32}: fkm_lloyd_assign with a per-point
 * mask need (indexed by point id, or NULL = all points).  The points are
 * processed in the same groups as fkm_lloyd_assign (8 or 4 packed points,
 * then rows in fours); a group with no flagged point is not scored: its
 * points keep the labels they hold on entry, and are accumulated (sums,
 * wsums, mind, inertia) exactly as if those labels had been computed.  A
 * group with a flagged point is scored whole, by the same code as without a
 * mask, so its labels are those fkm_lloyd_assign gives.  With need NULL the
 * two functions are the same (fkm_lloyd_assign calls this one).  Assumes
 * labels of unflagged points in [0, k) (unchecked).
 */
int fkm_lloyd_assign_masked_f64(int32_t *labels, fkm_index_t *n_changed,
                                double *mind, double *sums, double *wsums,
                                double *inertia, const double *X, const double *P,
                                const double *w, fkm_index_t lo, fkm_index_t hi,
                                fkm_index_t d, const double *ct, const double *hnorm,
                                const double *centers, fkm_index_t k,
                                const unsigned char *need);
/* deliberate specialization: the float32 twin (see the top of this file). */
int fkm_lloyd_assign_masked_f32(int32_t *labels, fkm_index_t *n_changed,
                                double *mind, double *sums, double *wsums,
                                double *inertia, const float *X, const double *P,
                                const double *w, fkm_index_t lo, fkm_index_t hi,
                                fkm_index_t d, const double *ct, const double *hnorm,
                                const double *centers, fkm_index_t k,
                                const unsigned char *need);

/* fkm_lloyd_label_{f64,f32}: the labels of fkm_lloyd_assign_masked alone
 * (the same groups, scores and tie rule), without sums or distances:
 * labels INOUT and n_changed OUT as there; need as there (NULL: score every
 * group; a group with no flagged point keeps its labels).  Returns FKM_OK,
 * FKM_ENOMEM (scratch of the row path) or FKM_EDOM (P and lo % 4 != 0). */
int fkm_lloyd_label_f64(int32_t *labels, fkm_index_t *n_changed, const double *X,
                        const double *P, fkm_index_t lo, fkm_index_t hi, fkm_index_t d,
                        const double *ct, const double *hnorm, fkm_index_t k,
                        const unsigned char *need);
/* deliberate specialization: the float32 twin (see the top of this file). */
int fkm_lloyd_label_f32(int32_t *labels, fkm_index_t *n_changed, const float *X,
                        const double *P, fkm_index_t lo, fkm_index_t hi, fkm_index_t d,
                        const double *ct, const double *hnorm, fkm_index_t k,
                        const unsigned char *need);

/* fkm_lloyd_merge: sums = sum_p part_sums[p], wsums likewise, inertia
 * likewise, parts added in order p = 0, 1, ...  (part_sums is
 * n_parts x k x d, part_wsums n_parts x k). */
void fkm_lloyd_merge(double *sums, double *wsums, double *inertia,
                     const double *part_sums, const double *part_wsums,
                     const double *part_inertia, fkm_index_t n_parts,
                     fkm_index_t k, fkm_index_t d);

#endif /* FKM_LLOYD_H */
