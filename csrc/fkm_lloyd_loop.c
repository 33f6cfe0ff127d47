/* fkm_lloyd_loop.c -- complete small Lloyd runs (see fkm_lloyd_loop.h). */
#include "fkm_lloyd_loop.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Assign every point to its nearest center; accumulate weighted sums.
 * mt is workspace of d * kp doubles (kp = k rounded up to a multiple of 4)
 * and acc of kp doubles: the centers are transposed so that the inner loop
 * runs over centers (vectorizable) while each distance still sums its
 * coordinates in order.  Returns the number of labels that changed. */
FKM_HOT static fkm_index_t assign(int32_t *labels, double *mind, double *sums, double *wsums,
                                  double *mt, double *acc, const double *centers,
                                  const double *X, const double *w, fkm_index_t n,
                                  fkm_index_t d, fkm_index_t k)
{
    fkm_index_t i, j, c, changed = 0, kp = (k + 3) & ~(fkm_index_t)3;
    memset(sums, 0, sizeof(double) * (size_t)(k * d));
    memset(wsums, 0, sizeof(double) * (size_t)k);
    for (c = 0; c < d; c++)
        for (j = 0; j < kp; j++)
            mt[(size_t)c * (size_t)kp + j] = j < k ? centers[(size_t)j * (size_t)d + c] : 0.0;
    for (i = 0; i < n; i++) {
        const double *x = X + (size_t)i * (size_t)d;
        double best = INFINITY, wi = w ? w[i] : 1.0;
        int32_t lab = 0;
        double *s;
        /* four centers at a time: independent accumulation chains, each
         * summing its coordinates in order (same rounding as one at a time) */
        for (j = 0; j < kp; j += 4) {
            double t0 = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0;
            for (c = 0; c < d; c++) {
                const double xc = x[c], *row = mt + (size_t)c * (size_t)kp + j;
                double u0 = xc - row[0], u1 = xc - row[1];
                double u2 = xc - row[2], u3 = xc - row[3];
                t0 += u0 * u0;
                t1 += u1 * u1;
                t2 += u2 * u2;
                t3 += u3 * u3;
            }
            acc[j] = t0;
            acc[j + 1] = t1;
            acc[j + 2] = t2;
            acc[j + 3] = t3;
        }
        for (j = 0; j < k; j++)
            if (acc[j] < best) { best = acc[j]; lab = (int32_t)j; }
        changed += (labels[i] != lab);
        labels[i] = lab;
        mind[i] = best;
        s = sums + (size_t)lab * (size_t)d;
        for (c = 0; c < d; c++) s[c] += wi * x[c];
        wsums[lab] += wi;
    }
    return changed;
}

int fkm_lloyd_loop_f64(double *centers, int32_t *labels, double *mind,
                       fkm_index_t *n_iter, double *inertia,
                       const double *X, const double *w, fkm_index_t n,
                       fkm_index_t d, fkm_index_t k, fkm_index_t max_iter,
                       double tol_abs)
{
    fkm_index_t it, i, j, c, q;
    fkm_index_t kp = (k + 3) & ~(fkm_index_t)3;
    double *sums = malloc(sizeof(double) * (size_t)(k * d + k + d * kp + kp));
    fkm_index_t *taken = malloc(sizeof(fkm_index_t) * (size_t)k);
    int32_t *prev = malloc(sizeof(int32_t) * (size_t)n);
    double *wsums, *mt, *acc, total = 0.0;
    int status = FKM_OK;
    if (!sums || !taken || !prev) {
        status = FKM_ENOMEM;
        goto done;
    }
    wsums = sums + (size_t)(k * d);
    mt = wsums + k;
    acc = mt + (size_t)(d * kp);
    for (i = 0; i < n; i++) labels[i] = -1;
    *n_iter = 0;
    for (it = 0; it < max_iter; it++) {
        fkm_index_t changed, n_taken = 0;
        double shift = 0.0;
        memcpy(prev, labels, sizeof(int32_t) * (size_t)n);
        changed = assign(labels, mind, sums, wsums, mt, acc, centers, X, w, n, d, k);
        for (j = 0; j < k; j++) {  /* empty clusters take the farthest points */
            fkm_index_t far = -1;
            double fd = -1.0, wi;
            const double *x;
            if (wsums[j] > 0.0) continue;
            for (i = 0; i < n; i++) {
                int skip = 0;
                for (q = 0; q < n_taken; q++) skip |= (taken[q] == i);
                if (!skip && mind[i] > fd) { fd = mind[i]; far = i; }
            }
            if (far < 0) continue;  /* more empty clusters than points */
            taken[n_taken++] = far;
            x = X + (size_t)far * (size_t)d;
            wi = w ? w[far] : 1.0;
            for (c = 0; c < d; c++) sums[(size_t)labels[far] * (size_t)d + c] -= wi * x[c];
            wsums[labels[far]] -= wi;
            labels[far] = (int32_t)j;
            for (c = 0; c < d; c++) {  /* the empty cluster's center is the point */
                double v = x[c], m = centers[(size_t)j * (size_t)d + c];
                shift += (v - m) * (v - m);
                centers[(size_t)j * (size_t)d + c] = v;
            }
        }
        for (j = 0; j < k; j++) {
            double *m = centers + (size_t)j * (size_t)d;
            int skip = 0;
            for (q = 0; q < n_taken; q++) skip |= (labels[taken[q]] == (int32_t)j);
            if (skip || !(wsums[j] > 0.0)) continue;
            if (n_taken) {  /* a cluster that gave away all its points keeps its center */
                int has = 0;
                for (i = 0; i < n && !has; i++) has = (labels[i] == (int32_t)j);
                if (!has) continue;
            }
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
    assign(labels, mind, sums, wsums, mt, acc, centers, X, w, n, d, k);
    for (i = 0; i < n; i++) total += (w ? w[i] : 1.0) * mind[i];
    *inertia = total;
    for (j = 0; j < k * d; j++)
        if (!isfinite(centers[j])) status = FKM_ENONFINITE;
    if (!isfinite(total)) status = FKM_ENONFINITE;
done:
    free(sums);
    free(taken);
    free(prev);
    return status;
}
