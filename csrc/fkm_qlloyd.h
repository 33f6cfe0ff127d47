/* fkm_qlloyd.h -- the assignment step of Q-k-means (pyfkm.deletion) with
 * Elkan's distance bounds.
 *
 * Q-Lloyd reassigns every point at each iteration to centers that move
 * little once the run settles (lattice cell centers).  Each point keeps a
 * lower bound on its distance to every center (C. Elkan, "Using the
 * triangle inequality to accelerate k-means", ICML 2003), moved in by the
 * center's displacement at each step.  The distance to the point's current
 * center is always computed (the squared distances are stored); another
 * center is skipped when its lower bound exceeds that distance, and its
 * distance computed otherwise.
 *
 * Exactness: the bounds are deflated by a relative margin that covers the
 * float rounding of every distance involved, so a skipped center is
 * strictly farther than the chosen one in exact arithmetic.  The label is
 * the center of smallest computed squared distance among those computed
 * (ties to the lowest index).  The outcome for a
 * point depends only on that point and the sequence of centers, never on
 * the other points: the memo that certified deletion relies on.
 */
#ifndef FKM_QLLOYD_H
#define FKM_QLLOYD_H

#include "fkm_common.h"

/* fkm_qlloyd_assign_f64: assign the n points of X (n x d, row-major) to the
 * k centers C (k x d).
 *
 * labels INOUT int32[n]: the previous labels (ignored when first != 0)
 * lb     INOUT n x k: the lower bounds of the previous call (ignored, then
 *        set, when first != 0)
 * move   IN [k]: |C_j - C_prev_j| (Euclidean) for the centers of the
 *        previous call, or NULL when first != 0; may be inexact up to a
 *        relative 2^-40 (it is inflated here)
 * mind   OUT [n]: squared distance to the assigned center, computed as in
 *        a full scan (same arithmetic whether or not the label was kept)
 * sums   OUT k x d: sum of the points of each center (in point order)
 * counts OUT int64[k]; *loss OUT: sum of mind in point order
 * lb_holds_dist: with first != 0, lb holds on entry the squared distances
 *        of the points to the centers, computed as here (four partial sums
 *        over the coordinates c = 0..3 mod 4, the remainder added to the
 *        first, then (a0 + a1) + (a2 + a3); fkm_race_seeding_dist_f64 does),
 *        so the first step computes no distance; the result is the same
 * Returns FKM_ENONFINITE when a distance or the loss is not finite,
 * FKM_OK otherwise.  Assumes n, d, k >= 1 and k < 2^31 (unchecked).
 */
int fkm_qlloyd_assign_f64(int32_t *labels, double *lb, double *mind,
                          double *sums, int64_t *counts, double *loss,
                          const double *X, const double *C, const double *move,
                          fkm_index_t n, fkm_index_t d, fkm_index_t k, int first,
                          int lb_holds_dist);

/* fkm_qlloyd_relabel_f64: the label and squared distance that a full scan
 * of fkm_qlloyd_assign_f64 (first != 0) gives the m rows `rows` of X
 * (n x d) for the k centers C, from a hint: the hint's center is measured
 * first, and a center farther from it than twice that distance (with a
 * relative margin covering the rounding, as the Elkan bounds above) is
 * skipped: its computed distance is strictly larger, so the result is the
 * full scan's (smallest computed distance, ties to the lowest index).
 *
 * labels INOUT int32[m]: the hints (any labels in [0, k)), then the labels
 * mind   OUT [m]: the squared distances to the assigned centers
 * cc     scratch [k * k]
 * rows   IN int64[m]: row indices in [0, n) (repeats allowed)
 * Returns FKM_EDOM when n, d or k is < 1, k >= 2^31, m < 0, or a row or a
 * hint is out of range (checked before anything is written),
 * FKM_ENONFINITE when a distance is not finite, FKM_OK otherwise.
 */
int fkm_qlloyd_relabel_f64(int32_t *labels, double *mind, double *cc,
                           const double *X, const int64_t *rows, const double *C,
                           fkm_index_t m, fkm_index_t n, fkm_index_t d, fkm_index_t k);

/* fkm_qlloyd_rescan_f64: a known assignment (ref_labels, ref_mind) of the
 * n rows of X (n x d) to centers of which some changed into C (k x d): the
 * rows i with keep[i] != 0, ref_labels[i] >= 0 (-1: a dead row) and
 * !(ref_mind[i] < far[ref_labels[i]]) are assigned again by the arithmetic
 * of fkm_qlloyd_relabel_f64 (hint: the reference label); the caller's
 * thresholds far (k) guarantee that the others keep their label and
 * distance (-INFINITY for a changed center: all its rows).
 *
 * rows OUT int64[n], labels OUT int32[n], mind OUT [n], prev OUT int32[n],
 * prev_mind OUT [n]: the first *m_out entries: the rows assigned again (in
 * increasing order), their new labels and distances, and their reference
 * ones
 * max_mind OUT: the largest distance of a kept row after the change (0.0
 * when there is none)
 * cc     scratch [k * k]
 * Returns FKM_EDOM when n, d or k is < 1, k >= 2^31, or a reference label
 * is outside [-1, k) (checked before any other work), FKM_ENONFINITE when a
 * distance is not finite, FKM_OK otherwise.  The outputs are scratch: on
 * failure their contents are undefined; the inputs are never written.
 */
int fkm_qlloyd_rescan_f64(int64_t *rows, int32_t *labels, double *mind, int32_t *prev,
                          double *prev_mind, fkm_index_t *m_out, double *max_mind,
                          double *cc, const double *X, const int32_t *ref_labels,
                          const double *ref_mind, const uint8_t *keep,
                          const double *far, const double *C, fkm_index_t n,
                          fkm_index_t d, fkm_index_t k);

/* fkm_qlloyd_cells_f64: the lattice cells of the balanced centroids of T
 * assignments and where they are sure, the operations of
 * pyfkm.deletion._qlloyd._balanced_centroids and _q_cells one element at a
 * time (bit for bit the same results).
 *
 * sums IN T x k x d (grid sums), counts IN int64 T x k, prev IN T x k x d
 * (the previous centers), phases IN T x d, g = gamma n / k, eps the step,
 * quantum IN [d] (the grid), maxabs IN [d] (the bound on |x|)
 * lo OUT T x k x d (or NULL): floor(c / eps - phase - margin)
 * sure OUT uint8 T x k x d (or NULL): whether that is also the floor with
 *        + margin
 * cells IN int64 T x k x d (or NULL): the stored cells; *n_moved OUT: the
 *        entries not sure or not equal to them (0 when cells is NULL)
 * Returns FKM_EDOM when T < 0, k < 1 or d < 1, FKM_OK otherwise.
 */
int fkm_qlloyd_cells_f64(double *lo, uint8_t *sure, fkm_index_t *n_moved,
                         const double *sums, const int64_t *counts, const double *prev,
                         const double *phases, const int64_t *cells, double g, double eps,
                         const double *quantum, const double *maxabs, fkm_index_t T,
                         fkm_index_t k, fkm_index_t d);

#endif /* FKM_QLLOYD_H */
