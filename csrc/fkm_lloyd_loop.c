/* fkm_lloyd_loop.c -- complete small Lloyd runs (see fkm_lloyd_loop.h). */
#include "fkm_lloyd_loop.h"
#include "fkm_lloyd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Scratch for one run: packed centers and points (fkm_lloyd.h). */
typedef struct {
    double *ct, *hnorm, *shift, *P;
} loop_ws;

/* The mean of the centers rounded to 16 significant bits per coordinate
 * (as pyfkm.kmeans._short_shift): x - s stays exact for simple data, so
 * exact distance ties stay ties. */
static void short_shift(double *shift, const double *centers, fkm_index_t k, fkm_index_t d)
{
    fkm_index_t j, c;
    for (c = 0; c < d; c++) {
        double m = 0.0, f;
        int e;
        for (j = 0; j < k; j++) m += centers[(size_t)j * (size_t)d + c];
        m /= (double)k;
        f = frexp(m, &e);
        shift[c] = ldexp(nearbyint(ldexp(f, 16)), e - 16);
    }
}

/* Assign every point to its nearest center with the tiled kernel; mind may
 * be NULL (distances not needed).  Returns a status; *changed counts the
 * labels that differ from their values on entry. */
static int assign(fkm_index_t *changed, int32_t *labels, double *mind, double *sums,
                  double *wsums, loop_ws *ws, const double *centers, const double *X,
                  const double *w, fkm_index_t n, fkm_index_t d, fkm_index_t k)
{
    double inertia;
    short_shift(ws->shift, centers, k, d);
    fkm_lloyd_pack_centers(ws->ct, ws->hnorm, centers, ws->shift, k, d);
    return fkm_lloyd_assign_f64(labels, changed, mind, sums, wsums, &inertia, X, ws->P,
                                w, 0, n, d, ws->ct, ws->hnorm, centers, k);
}

int fkm_lloyd_loop_f64(double *centers, int32_t *labels, double *mind,
                       fkm_index_t *n_iter, double *inertia,
                       const double *X, const double *w, fkm_index_t n,
                       fkm_index_t d, fkm_index_t k, fkm_index_t max_iter,
                       double tol_abs)
{
    fkm_index_t it, i, j, c, q;
    double *sums = malloc(sizeof(double) * (size_t)(k * d + k));
    fkm_index_t *taken = malloc(sizeof(fkm_index_t) * (size_t)k);
    int32_t *prev = malloc(sizeof(int32_t) * (size_t)n);
    unsigned char *empty = malloc((size_t)k), *lost = calloc((size_t)k, 1);
    double *wsums, total = 0.0;
    int status = FKM_OK;
    int pack = d <= FKM_LLOYD_PACK_MAX_D && n >= 4;
    loop_ws ws;
    ws.ct = malloc(sizeof(double) * (size_t)fkm_lloyd_packed_size(k, d));
    ws.hnorm = malloc(sizeof(double) * (size_t)(((k + 7) / 8) * 8));
    ws.shift = malloc(sizeof(double) * (size_t)d);
    ws.P = pack ? malloc(sizeof(double) * (size_t)(n * d)) : NULL;
    if (!sums || !taken || !prev || !empty || !lost || !ws.ct || !ws.hnorm || !ws.shift || (pack && !ws.P)) {
        status = FKM_ENOMEM;
        goto done;
    }
    if (pack) fkm_lloyd_pack_points_f64(ws.P, X, 0, n, d);
    wsums = sums + (size_t)(k * d);
    for (i = 0; i < n; i++) labels[i] = -1;
    *n_iter = 0;
    for (it = 0; it < max_iter; it++) {
        fkm_index_t changed, n_taken = 0;
        double shift = 0.0;
        memcpy(prev, labels, sizeof(int32_t) * (size_t)n);
        status = assign(&changed, labels, NULL, sums, wsums, &ws, centers, X, w, n, d, k);
        if (status != FKM_OK) goto done;
        for (j = 0; j < k && wsums[j] > 0.0; j++) {}
        if (j < k) {  /* an empty cluster: redo with distances to relocate */
            memcpy(labels, prev, sizeof(int32_t) * (size_t)n);
            status = assign(&changed, labels, mind, sums, wsums, &ws, centers, X, w, n, d, k);
            if (status != FKM_OK) goto done;
        }
        /* the clusters empty after the assignment (decided before any
         * relocation) take the farthest points, in index order */
        for (j = 0; j < k; j++) empty[j] = !(wsums[j] > 0.0);
        for (j = 0; j < k; j++) {
            fkm_index_t far = -1;
            double fd = -1.0;
            const double *x;
            if (!empty[j]) continue;
            for (i = 0; i < n; i++) {
                int skip = 0;
                for (q = 0; q < n_taken; q++) skip |= (taken[q] == i);
                if (!skip && mind[i] > fd) { fd = mind[i]; far = i; }
            }
            if (far < 0) continue;  /* more empty clusters than points */
            taken[n_taken++] = far;
            x = X + (size_t)far * (size_t)d;
            lost[labels[far]] = 1;
            labels[far] = (int32_t)j;
            for (c = 0; c < d; c++) {  /* the empty cluster's center is the point */
                double v = x[c], m = centers[(size_t)j * (size_t)d + c];
                shift += (v - m) * (v - m);
                centers[(size_t)j * (size_t)d + c] = v;
            }
        }
        /* a cluster that lost points: sums and weight again from its members
         * (as the reference: no cancellation in running sums; weight exactly 0
         * when only zero-weight points are left) */
        for (j = 0; j < k; j++) {
            double *sj = sums + (size_t)j * (size_t)d;
            if (!lost[j]) continue;
            for (c = 0; c < d; c++) sj[c] = 0.0;
            wsums[j] = 0.0;
            for (i = 0; i < n; i++) {
                double wi = w ? w[i] : 1.0;
                const double *xi = X + (size_t)i * (size_t)d;
                if (labels[i] != (int32_t)j) continue;
                for (c = 0; c < d; c++) sj[c] += wi * xi[c];
                wsums[j] += wi;
            }
            lost[j] = 0;
        }
        for (j = 0; j < k; j++) {
            double *m = centers + (size_t)j * (size_t)d;
            int skip = 0;
            for (q = 0; q < n_taken; q++) skip |= (labels[taken[q]] == (int32_t)j);
            /* no weight left (all its points taken): keeps its center */
            if (skip || !(wsums[j] > 0.0)) continue;
            for (c = 0; c < d; c++) {
                double v = sums[(size_t)j * (size_t)d + c] / wsums[j];
                shift += (v - m[c]) * (v - m[c]);
                m[c] = v;
            }
        }
        *n_iter = it + 1;
        if (it > 0) {  /* strict convergence: labels equal the previous iteration's */
            int same = (changed == 0);
            if (n_taken)
                for (i = 0, same = 1; i < n && same; i++) same = (labels[i] == prev[i]);
            if (same) break;
        }
        if (shift <= tol_abs) break;
    }
    {
        fkm_index_t changed;
        status = assign(&changed, labels, mind, sums, wsums, &ws, centers, X, w, n, d, k);
        if (status != FKM_OK) goto done;
    }
    for (i = 0; i < n; i++) total += (w ? w[i] : 1.0) * mind[i];
    *inertia = total;
    for (j = 0; j < k * d; j++)
        if (!isfinite(centers[j])) status = FKM_ENONFINITE;
    if (!isfinite(total)) status = FKM_ENONFINITE;
done:
    free(ws.ct);
    free(ws.hnorm);
    free(ws.shift);
    free(ws.P);
    free(sums);
    free(taken);
    free(prev);
    free(empty);
    free(lost);
    return status;
}
