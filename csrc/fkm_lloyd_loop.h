/* fkm_lloyd_loop.h -- a complete weighted Lloyd run in one call, for small
 * problems (up to a few tens of thousands of points) where the per-step
 * overhead of the Python-driven blocked kernels (fkm_lloyd.h) dominates:
 * the nodes of DC-k-means, the server step of federated k-means.
 *
 * Assignments use the tiled kernel of fkm_lloyd.h (shift = the centers'
 * mean rounded to 16 bits, so exact ties of simple data stay ties, broken by
 * the lowest center index); the reported squared distances are direct,
 * sum_c (x_c - m_c)^2.
 */
#ifndef FKM_LLOYD_LOOP_H
#define FKM_LLOYD_LOOP_H

#include "fkm_common.h"

/* Lloyd iterations from the k x d centers (INOUT), at most max_iter.
 *
 * Each iteration assigns every point to its nearest center and moves every
 * center to the weighted mean of its points.  A cluster of total weight
 * <= 0 takes the point farthest from its assigned center (largest squared
 * distance, ties to the lowest position) not taken by another empty
 * cluster in the same iteration.  Stops after an iteration in which no
 * label changed (strict convergence; never at the first iteration nor after
 * a relocation) or whose total squared center shift is <= tol_abs.  A final
 * assignment to the returned centers fills labels[n] (int32), mind[n]
 * (squared distance to the center) and *inertia = sum_i w_i mind_i.
 *
 * w (n weights, >= 0) may be NULL for unit weights.  *n_iter receives the
 * number of iterations run.  Returns FKM_ENOMEM, or FKM_ENONFINITE when a
 * center or the inertia is not finite.  Assumes n, d, k >= 1 and
 * max_iter >= 0 (unchecked); X, centers finite.
 *
 * use_bounds != 0 skips the scoring of points whose label is proven not to
 * change by distance bounds (Hamerly's upper and lower bound, with a margin
 * covering the rounding of the kernel's scores; see fkm_lloyd_loop.c), for
 * the iterations after the first and the final assignment.  The results
 * are bit for bit those of use_bounds = 0 (only the work differs); it costs
 * 3 n doubles and n bytes more, and is ignored for k = 1.
 */
int fkm_lloyd_loop_f64(double *centers, int32_t *labels, double *mind,
                       fkm_index_t *n_iter, double *inertia,
                       const double *X, const double *w, fkm_index_t n,
                       fkm_index_t d, fkm_index_t k, fkm_index_t max_iter,
                       double tol_abs, int use_bounds);

/* A recorded Lloyd run, for rerunning it cheaply after small changes of the
 * weights (the server of federated k-means after a point is unlearned).
 *
 * Entry a (0 <= a < len) holds, for the run's assignment number a (the
 * in-loop ones, then the final one): the k x d centers it used, the labels
 * it gave, and per point an upper bound U of the distance to the assigned
 * center and a lower bound L of the distance to every other one (the
 * bounds of fkm_lloyd_loop.c).  Owned by the caller; zero it (all fields 0
 * or NULL) before first use and release it with fkm_lloyd_trace_free.
 */
typedef struct {
    fkm_index_t n, d, k;  /* the run's shape (len is reset when it differs) */
    fkm_index_t len, cap; /* entries recorded, entries allocated */
    double *C;            /* cap x k x d */
    int32_t *labels;      /* cap x n */
    double *U, *L;        /* cap x n */
    double *xn;           /* n: upper bounds of ||x_i|| (inf: too large) */
} fkm_lloyd_trace;

void fkm_lloyd_trace_free(fkm_lloyd_trace *trace);

/* fkm_lloyd_loop_f64 (use_bounds = 0) that records its assignments in
 * trace and, when trace already holds a run on the same X (same n, d, k),
 * skips the scoring of the points whose recorded bounds, moved by the
 * distance between the recorded and the current centers of the same
 * assignment, prove the recorded label (the test of fkm_lloyd_loop.c).
 * Rerunning from the same starting centers with slightly changed weights
 * then scores almost no point.  The results (centers, labels, mind,
 * inertia, n_iter) are bit for bit those of fkm_lloyd_loop_f64 whatever
 * the trace holds, provided it was recorded on the same X (unchecked: the
 * caller ties a trace to one X).  On success the trace holds this run; on
 * error its len is 0.  k = 1 records nothing.
 */
int fkm_lloyd_loop_traced_f64(double *centers, int32_t *labels, double *mind,
                              fkm_index_t *n_iter, double *inertia,
                              const double *X, const double *w, fkm_index_t n,
                              fkm_index_t d, fkm_index_t k, fkm_index_t max_iter,
                              double tol_abs, fkm_lloyd_trace *trace);

#endif /* FKM_LLOYD_LOOP_H */
