/* fkm_lloyd_loop.h -- a complete weighted Lloyd run in one call, for small
 * problems (up to a few tens of thousands of points) where the per-step
 * overhead of the Python-driven blocked kernels (fkm_lloyd.h) dominates:
 * the nodes of DC-k-means, the server step of federated k-means.
 *
 * Labels come from the tiled kernel of fkm_lloyd.h (fkm_lloyd_label; shift =
 * the centers' mean rounded to 16 bits, so exact ties of simple data stay
 * ties, broken by the lowest center index); the sums and weights of the new
 * centers and the reported squared distances follow the explicit rounding
 * rules of fkm_lloyd_acc.h (a cluster's sums depend on its points only).
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
 * Owned by the caller: zero it (all fields 0 or NULL) before first use,
 * release it with fkm_lloyd_trace_free; the fields are private to
 * fkm_lloyd_loop.c except len (0: nothing recorded).
 */
typedef struct {
    fkm_index_t n, d, k;  /* the recording's shape */
    fkm_index_t len, cap; /* entries recorded, entries allocated */
    double *C;            /* cap x k x d: the centers of each assignment */
    double *S;            /* cap x (k d + k): its sums, then its weights */
    double *S2;           /* the same for the current run (scratch) */
    int32_t *labels;      /* cap x n */
    double *U, *L;        /* cap x n: distance bounds */
    int32_t *order;       /* cap x n: point ids by class of L - U */
    unsigned char *cls;   /* cap x n: the class of each point */
    int32_t *start;       /* cap x (classes + 2): class starts, then a binade */
    int32_t *mem;         /* cap x n: point ids by (label, id mod 4), ids increasing */
    int32_t *mstart;      /* cap x (4 k + 1): where each (label, id mod 4) starts */
    fkm_index_t *ndiff;   /* cap: labels of entry a other than entry a - 1's (n: a = 0) */
    double *w;            /* n: the recording's weights (1 for unit weights) */
    double *xn;           /* n: upper bounds of ||x_i|| (inf: too large) */
    double xnmax;         /* their maximum */
    double *P;            /* n x d: the points packed (fkm_lloyd_pack_points_f64) */
    /* statistics of the last run: points scored, and clusters summed again,
     * over its assignments (-1, -1: the run recorded or ran untraced) */
    fkm_index_t last_scored, last_summed;
} fkm_lloyd_trace;

void fkm_lloyd_trace_free(fkm_lloyd_trace *trace);

/* fkm_lloyd_loop_f64 (use_bounds = 0) with a trace.  When the trace holds
 * no recording (len = 0), the run is recorded (a few times the work of an
 * untraced run).  Otherwise the run reuses the recording: at each
 * assignment, only the points whose recorded distance bounds, moved by the
 * distance between the recorded and the current centers, cannot prove the
 * recorded label are scored, and only the clusters whose points or weights
 * differ from the recording's are summed again (fkm_lloyd_loop.c).  A rerun
 * from the same starting centers with a few changed weights then costs a
 * small fraction of a run.  Each rerun rebases the recording on itself
 * (its weights, sums and the scored points' labels and bounds), so the
 * next rerun compares with it.  A rerun that scored more than n / 8 points
 * per assignment, or ran longer than the recording, empties the trace (the
 * next run records).
 *
 * The results (centers, labels, mind, inertia, n_iter) are bit for bit
 * those of fkm_lloyd_loop_f64 whatever the trace holds, provided every run
 * on it used the same X (unchecked: the caller ties a trace to one X; a
 * trace whose n, d or k differ is emptied).  On error the trace is empty.
 * k = 1 records nothing.
 */
int fkm_lloyd_loop_traced_f64(double *centers, int32_t *labels, double *mind,
                              fkm_index_t *n_iter, double *inertia,
                              const double *X, const double *w, fkm_index_t n,
                              fkm_index_t d, fkm_index_t k, fkm_index_t max_iter,
                              double tol_abs, fkm_lloyd_trace *trace);

/* fkm_lloyd_loop_traced_f64 with the points packed by the caller: P =
 * fkm_lloyd_pack_points_f64 of all of X (n d doubles), or NULL (then as
 * fkm_lloyd_loop_traced_f64).  P is only read, and used only when d <=
 * FKM_LLOYD_PACK_MAX_D and n >= 4 (the trace then keeps no packed copy), so
 * several traces on one X can share one X and one P (less memory to touch
 * when they run in turn).  Same results bit for bit. */
int fkm_lloyd_loop_traced_packed_f64(double *centers, int32_t *labels, double *mind,
                                     fkm_index_t *n_iter, double *inertia,
                                     const double *X, const double *P, const double *w,
                                     fkm_index_t n, fkm_index_t d, fkm_index_t k,
                                     fkm_index_t max_iter, double tol_abs,
                                     fkm_lloyd_trace *trace);

/* Hamerly bounds for the blocked assignment of fkm_lloyd.h (issue 22).
 *
 * fkm_lloyd_bounds_norms_f64: xn[i] (i in [lo, hi), indexed by point id)
 * = an upper bound of ||x_i|| (inf when too large for bounds to be used).
 *
 * fkm_lloyd_bounds_moves_f64: move OUT (k) = upper bounds of the distances
 * from old[j] to centers[j] (k x d each); *j1 the center of the largest,
 * *m1 the largest, *m2 the second largest.
 *
 * fkm_lloyd_assign_bounded_f64: fkm_lloyd_assign_f64 on points [lo, hi)
 * (same arguments and results, bit for bit: labels, n_changed, mind, sums,
 * wsums, inertia), skipping the scoring of the points whose distance bounds
 * prove their label (fkm_lloyd_loop.c).  U, L (upper bound of the distance
 * to the assigned center, lower bound of the distance to every other
 * center) and need (scratch) are indexed by point id; xn from
 * fkm_lloyd_bounds_norms_f64; shift the one ct and hnorm were packed with.
 * With move NULL every point is scored and U, L of [lo, hi) are set for the
 * new labels.  Otherwise labels, U and L on entry must be those this
 * function left for the centers old, and move, j1, m1, m2 come from
 * fkm_lloyd_bounds_moves_f64(old -> centers): the bounds are moved, the
 * points they do not prove are scored (fkm_lloyd_assign_masked_f64) and
 * get tight bounds again.  *n_scored counts the points that the moved
 * bounds did not prove (their bounds were recomputed from all k scores,
 * then the points still not proven were scored): the work done.  The
 * points of [lo, hi) depend on nothing outside it, so results do not depend
 * on how ranges are spread over threads.  Returns FKM_OK, FKM_ENOMEM or
 * FKM_EDOM (P and lo % 4 != 0).
 */
void fkm_lloyd_bounds_norms_f64(double *xn, const double *X, fkm_index_t lo, fkm_index_t hi,
                                fkm_index_t d);
void fkm_lloyd_bounds_moves_f64(double *move, fkm_index_t *j1, double *m1, double *m2,
                                const double *old, const double *centers, fkm_index_t k,
                                fkm_index_t d);
int fkm_lloyd_assign_bounded_f64(
    int32_t *labels, fkm_index_t *n_changed, fkm_index_t *n_scored, double *mind,
    double *sums, double *wsums, double *inertia, double *U, double *L,
    unsigned char *need, const double *X, const double *P, const double *w,
    const double *xn, fkm_index_t lo, fkm_index_t hi, fkm_index_t d, const double *ct,
    const double *hnorm, const double *shift, const double *centers, fkm_index_t k,
    const double *move, fkm_index_t j1, double m1, double m2);

#endif /* FKM_LLOYD_LOOP_H */
