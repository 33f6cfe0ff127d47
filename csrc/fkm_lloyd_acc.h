/* fkm_lloyd_acc.h -- the sums and distances of the one-call Lloyd loop
 * (fkm_lloyd_loop.h), by explicit rounding rules that other code can
 * reproduce bit for bit, for all clusters or only some of them.
 *
 * Accumulation rule.  Point i (of 0..n-1) belongs to stream r = i mod 4;
 * stream r's sum for center c is the recursive sum, in increasing i over
 * its points of label c,
 *     S_r[c] = fl(... fl(fl(0 + fl(w_i1 x_i1)) + fl(w_i2 x_i2)) ...)
 * per coordinate (w_i = 1 for unit weights: fl(1 x) = x), its weight W_r[c]
 * the same recursive sum of the w_i; then sums[c] = fl(fl(fl(S_0 + S_1) +
 * S_2) + S_3), and wsums[c] likewise from the W_r.  Every product and sum
 * is rounded separately (this file is compiled without contraction into
 * fused multiply-adds).  A cluster's sums depend only on its points (ids,
 * coordinates, weights), so they can be recomputed for a few clusters.
 * Four streams: consecutive points of one cluster do not wait on each other.
 *
 * Distance rule.  mind[i] = sum_j (x_ij - m_j)^2, m the center of point i,
 * the recursive sum in coordinate order of rounded squares of rounded
 * differences; inertia = the recursive sum in point order of fl(w_i
 * mind_i).
 */
#ifndef FKM_LLOYD_ACC_H
#define FKM_LLOYD_ACC_H

#include "fkm_common.h"

/* Size in doubles of the scratch of fkm_lloyd_accumulate_f64. */
static inline fkm_index_t fkm_lloyd_acc_scratch(fkm_index_t k, fkm_index_t d)
{
    return 4 * k * ((d + 4) & ~(fkm_index_t)3);
}

/* sums OUT (k x d), wsums OUT (k): the rule above for the points of X (n x
 * d) with labels (in [0, k), unchecked) and weights w (n, or NULL for unit
 * weights).  With dirty (k flags) only the flagged clusters are computed
 * and the other rows of sums and wsums are left as they are.  scratch:
 * fkm_lloyd_acc_scratch(k, d) doubles. */
void fkm_lloyd_accumulate_f64(double *sums, double *wsums, double *scratch,
                              const double *X, const double *w, const int32_t *labels,
                              fkm_index_t n, fkm_index_t d, fkm_index_t k,
                              const unsigned char *dirty);

/* sums OUT (d), *wsum OUT: the rule above for one cluster, from its points
 * listed by stream: ids[off[r] .. off[r + 1]) are its points i with i mod 4
 * = r, in increasing order (r = 0..3; unchecked).  Same result as
 * fkm_lloyd_accumulate_f64 for that cluster, without scanning the other
 * points.  scratch: 4 ((d + 4) & ~3) doubles (fkm_lloyd_acc_scratch(1, d)). */
void fkm_lloyd_accumulate_members_f64(double *sums, double *wsum, double *scratch,
                                      const double *X, const double *w,
                                      const int32_t *ids, const int32_t *off,
                                      fkm_index_t d);

/* mind OUT (n): the distance rule to centers[labels[i]] (k x d); returns
 * the inertia.  P: X packed by fkm_lloyd_pack_points_f64 (read for whole
 * panels of 4) or NULL; the results do not depend on it. */
double fkm_lloyd_distances_f64(double *mind, const double *X, const double *P,
                               const double *w, const int32_t *labels,
                               const double *centers, fkm_index_t n, fkm_index_t d);

/* fkm_lloyd_rowdist4_{f64,f32}: dd[r] (r < 4) = the distance rule above
 * for row rows[r] (d values, converted to double) and center cs[r] (d
 * doubles): the value the blocked assignment (fkm_lloyd.h) reports in mind.
 * The four chains run interleaved: one chain is d dependent additions,
 * bound by their latency.  Rows r >= m (1 <= m <= 4) are not read; their
 * dd[r] are 0. */
void fkm_lloyd_rowdist4_f64(double *dd, const double *const *rows, const double *const *cs,
                            int m, fkm_index_t d);
/* deliberate specialization: the float32 twin (float rows, as fkm_lloyd.h). */
void fkm_lloyd_rowdist4_f32(double *dd, const float *const *rows, const double *const *cs,
                            int m, fkm_index_t d);

#endif /* FKM_LLOYD_ACC_H */
