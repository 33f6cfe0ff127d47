/* fkm_kcenter.h -- (k,z)-center with outliers: squared distances, ball
 * counting, the aggregating procedure of Guo & Li (NeurIPS 2018, Algorithm 2)
 * and the weighted greedy of Charikar et al. (SODA 2001).
 *
 * Every kernel works on squared Euclidean distances computed as
 * sum_t (x_t - y_t)^2 in coordinate order, in double precision; a ball of
 * squared radius t around p is {q : dist2(p, q) <= t}.  Radii are passed
 * squared, so callers decide exactly how thresholds are rounded.
 *
 * The greedy kernels read distances row by row, either from a precomputed
 * n x n float matrix F (fkm_kcenter_sqdist_f32; computed once and reused for
 * every radius guess; half the memory traffic of doubles) or, when F is
 * NULL, recomputed on the fly from the points (O(n d) per row, O(n) memory)
 * for sets too large for a matrix.  Every decision is exact either way: a
 * float entry v = fl(D) decides D <= t unless v == fl(t) (rounding is
 * monotone), and then D is recomputed in double.  Both modes give identical
 * results.
 */
#ifndef FKM_KCENTER_H
#define FKM_KCENTER_H

#include "fkm_common.h"

/* fkm_kcenter_sqdist: D[i*m + j] = sum_t (X[i,t] - Y[j,t])^2 for rows
 * [lo, hi) of X (n x d) against all m rows of Y (m x d), both row-major.
 * D OUT, (hi - lo) x m, row i - lo for point i.
 * Returns FKM_OK, FKM_ENOMEM (a d x m transposed copy of Y) or
 * FKM_ENONFINITE if a distance overflows to infinity (or is NaN).
 * Assumes without checking: 0 <= lo <= hi <= n, finite inputs. */
int fkm_kcenter_sqdist(double *D, const double *X, fkm_index_t lo,
                       fkm_index_t hi, const double *Y, fkm_index_t m,
                       fkm_index_t d);

/* fkm_kcenter_sqdist_f32: F[i*n + j] = the double squared distance of rows
 * i and j of X (n x d), rounded to float.  F OUT, n x n.  Returns FKM_OK,
 * FKM_EDOM, FKM_ENOMEM or FKM_ENONFINITE (a double distance overflows). */
int fkm_kcenter_sqdist_f32(float *F, const double *X, fkm_index_t n,
                           fkm_index_t d);

/* fkm_kcenter_nearest: for each of the n rows of X, the squared distance to
 * the nearest of the k rows of C (mind OUT, n) and its index (arg OUT, n,
 * or NULL; lowest index on ties).  k >= 1.  Returns FKM_OK or FKM_ENONFINITE
 * (some minimum is not finite). */
int fkm_kcenter_nearest(double *mind, fkm_index_t *arg, const double *X,
                        fkm_index_t n, const double *C, fkm_index_t k,
                        fkm_index_t d);

/* fkm_kcenter_aggregate: the aggregating procedure (Guo & Li, Algorithm 2).
 * U starts as all n points.  While some p in U has more than y points of U
 * in its ball of squared radius t2 (the 2L ball), pick the p with the most
 * (lowest index on ties), give it weight |U cap ball(p, t4)| (the 4L ball,
 * which contains p), and remove that ball from U.  Counts |U cap ball(q, t2)|
 * are maintained incrementally: each removed point decrements the counts
 * of its t2-neighbours once, looked up only among the points of U within
 * sqrt(t2) + sqrt(t4) of the pick (triangle inequality, with a relative
 * 1e-9 margin), so a pick costs O(n + |ball| |window|).
 *
 * reps    OUT, capacity min(n, max_reps): picked points, in pick order
 * weights OUT, same capacity: their weights (>= 1; they sum to n - |U|)
 * n_reps  OUT: number of picks; max_reps + 1 means the procedure stopped
 *         early, when a (max_reps + 1)-th pick was due (reps and weights
 *         then hold the first max_reps picks, remaining the state then)
 * remaining OUT or NULL, n bytes: 1 for the points left in U, else 0
 * F   IN or NULL: n x n matrix from fkm_kcenter_sqdist_f32(X); when NULL
 *     rows are computed from X
 * X   IN, n x d (always read: exact distances)
 * t2, t4: squared radii, 0 <= t2 <= t4; y: the threshold (a real number)
 * Returns FKM_OK, FKM_EDOM (n < 0, d < 1, max_reps < 0, t2 < 0, y < 0 or t2 > t4, or a
 * NaN threshold), FKM_ENOMEM, or FKM_ENONFINITE (a distance computed on the
 * fly overflows).  Assumes without checking: F built from this X. */
int fkm_kcenter_aggregate(fkm_index_t *reps, int64_t *weights,
                          fkm_index_t *n_reps, uint8_t *remaining,
                          const float *F, const double *X, fkm_index_t n,
                          fkm_index_t d, double t2, double t4, double y,
                          fkm_index_t max_reps);

/* fkm_kcenter_greedy: the weighted greedy of Charikar et al. (kzc of Guo &
 * Li, Algorithm 1).  U starts as all n points.  For up to k rounds: pick the
 * point p (any point, covered or not) maximising w(U cap ball(p, t_small))
 * (lowest index on ties); stop before picking if that weight is 0; add p
 * to the centers and remove ball(p, t_large) from U (counts maintained
 * incrementally as in fkm_kcenter_aggregate, within the window of radius
 * sqrt(t_small) + sqrt(t_large) around p).
 *
 * centers   OUT, capacity k: picked indices in pick order
 * n_centers OUT: number picked (< k only when U ran out of positive weight)
 * uncovered_weight OUT: w(U) at the end
 * uncovered OUT or NULL, n bytes: 1 for points left in U
 * F IN or NULL (then rows from X), X IN n x d
 * w IN or NULL (unit weights): nonnegative integer weights
 * Returns FKM_OK, FKM_EDOM (k < 1, n < 0, d < 1, t_small > t_large, NaN
 * radius, a negative weight), FKM_EOVERFLOW (the weights sum past
 * INT64_MAX), FKM_ENOMEM or FKM_ENONFINITE (as fkm_kcenter_aggregate). */
int fkm_kcenter_greedy(fkm_index_t *centers, fkm_index_t *n_centers,
                       int64_t *uncovered_weight, uint8_t *uncovered,
                       const float *F, const double *X, const int64_t *w,
                       fkm_index_t n, fkm_index_t d, double t_small,
                       double t_large, fkm_index_t k);

/* fkm_kcenter_nn: squared distance of each point to its nearest other point
 * (nn OUT, n; +inf when n == 1), from F or (F NULL) from X.  Returns FKM_OK,
 * FKM_ENOMEM or FKM_ENONFINITE. */
int fkm_kcenter_nn(double *nn, const float *F, const double *X,
                   fkm_index_t n, fkm_index_t d);

/* ------------------------------------------------------------------ index
 * fkm_kctree_t: a KD-tree over the n points of one machine, built once and
 * reused for every radius guess (Guo & Li's machines answer one query per
 * guess).  Nodes split at the median position along their widest
 * coordinate (balanced whatever the values); each node keeps the tight
 * bounding box of its points.  Ball decisions stay exact: the box bounds
 * are computed with the same per-coordinate differences, squares and
 * coordinate-order sums as a pair's squared distance, and floating-point
 * subtraction, squaring of nonnegatives and addition are monotone, so the
 * computed lower (upper) bound of a box never exceeds (falls below) the
 * computed squared distance of any of its points.  A node is skipped only
 * when its lower bound exceeds the threshold and counted whole only when
 * its upper bound is within it; otherwise each point is decided with its
 * double squared distance, bit-identical to fkm_kcenter_sqdist. */
typedef struct fkm_kctree fkm_kctree_t;

/* fkm_kctree_build: *out = a new index of X (n x d, copied).  n >= 1,
 * d >= 1.  Returns FKM_OK, FKM_EDOM, FKM_ENOMEM or FKM_ENONFINITE (the
 * squared diagonal of the bounding box overflows, so some distance might;
 * callers then use the matrix-free kernels above).  Free with
 * fkm_kctree_free.  Assumes without checking: finite X. */
int fkm_kctree_build(fkm_kctree_t **out, const double *X, fkm_index_t n,
                     fkm_index_t d);

/* fkm_kctree_free: releases T (NULL is allowed). */
void fkm_kctree_free(fkm_kctree_t *T);

/* fkm_kctree_nn: as fkm_kcenter_nn on the indexed points (nn OUT, n, in the
 * original order).  Returns FKM_OK or FKM_ENOMEM. */
int fkm_kctree_nn(double *nn, const fkm_kctree_t *T);

/* fkm_kctree_aggregate: as fkm_kcenter_aggregate on the indexed points (same
 * outputs, same picks, indices in the original order), with ball counts
 * from the tree. */
int fkm_kctree_aggregate(fkm_index_t *reps, int64_t *weights,
                         fkm_index_t *n_reps, uint8_t *remaining,
                         const fkm_kctree_t *T, double t2, double t4,
                         double y, fkm_index_t max_reps);

#endif /* FKM_KCENTER_H */
