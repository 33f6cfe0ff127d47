/* fkm_kcenter.c -- see fkm_kcenter.h. */
#include "fkm_kcenter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* out[j] = sum_t (YT[t*m + j] - x[t])^2, t in coordinate order (the same
 * rounding as a sequential sum of squared differences).  Loops over j are
 * contiguous and vectorize; D is a compile-time constant for small d. */
static inline __attribute__((always_inline)) void
row_sqdist_d(double *out, const double *x, const double *YT, fkm_index_t m,
             fkm_index_t D)
{
    const double x0 = x[0];
    for (fkm_index_t j = 0; j < m; ++j) {
        double t = YT[j] - x0;
        out[j] = t * t;
    }
    for (fkm_index_t c = 1; c < D; ++c) {
        const double xc = x[c];
        const double *yc = YT + c * m;
        for (fkm_index_t j = 0; j < m; ++j) {
            double t = yc[j] - xc;
            out[j] += t * t;
        }
    }
}

FKM_HOT static void row_sqdist(double *out, const double *x, const double *YT,
                               fkm_index_t m, fkm_index_t d)
{
#define FKM_ROW_SQDIST(DD) row_sqdist_d(out, x, YT, m, DD)
    FKM_WITH_CONST_D(d, FKM_ROW_SQDIST)
#undef FKM_ROW_SQDIST
}

static int row_finite(const double *row, fkm_index_t m)
{
    double s = 0.0;
    for (fkm_index_t j = 0; j < m; ++j)
        s += row[j];
    /* nonnegative terms: the sum is finite iff every term is finite and the
     * sum does not overflow; check terms only in the rare second case */
    if (isfinite(s))
        return 1;
    for (fkm_index_t j = 0; j < m; ++j)
        if (!isfinite(row[j]))
            return 0;
    return 1; /* finite terms whose sum overflows */
}

/* YT = Y transposed (d x m). */
static double *transpose(const double *Y, fkm_index_t m, fkm_index_t d)
{
    double *YT = malloc((size_t)(m > 0 ? m : 1) * (size_t)d * sizeof(double));
    if (!YT)
        return NULL;
    for (fkm_index_t j = 0; j < m; ++j)
        for (fkm_index_t c = 0; c < d; ++c)
            YT[c * m + j] = Y[j * d + c];
    return YT;
}

int fkm_kcenter_sqdist(double *D, const double *X, fkm_index_t lo,
                       fkm_index_t hi, const double *Y, fkm_index_t m,
                       fkm_index_t d)
{
    if (d < 1 || m < 0 || lo < 0 || hi < lo)
        return FKM_EDOM;
    if (hi == lo || m == 0)
        return FKM_OK;
    double *YT = transpose(Y, m, d);
    if (!YT)
        return FKM_ENOMEM;
    int status = FKM_OK;
    for (fkm_index_t i = lo; i < hi; ++i) {
        double *out = D + (i - lo) * m;
        row_sqdist(out, X + i * d, YT, m, d);
        if (!row_finite(out, m)) {
            status = FKM_ENONFINITE;
            break;
        }
    }
    free(YT);
    return status;
}

int fkm_kcenter_nearest(double *mind, fkm_index_t *arg, const double *X,
                        fkm_index_t n, const double *C, fkm_index_t k,
                        fkm_index_t d)
{
    if (k < 1 || d < 1 || n < 0)
        return FKM_EDOM;
    for (fkm_index_t i = 0; i < n; ++i) {
        const double *x = X + i * d;
        double best = HUGE_VAL;
        fkm_index_t bj = 0;
        for (fkm_index_t j = 0; j < k; ++j) {
            const double *c = C + j * d;
            double s = 0.0;
            for (fkm_index_t t = 0; t < d; ++t) {
                double u = x[t] - c[t];
                s += u * u;
            }
            if (s < best) {
                best = s;
                bj = j;
            }
        }
        if (!isfinite(best))
            return FKM_ENONFINITE;
        mind[i] = best;
        if (arg)
            arg[i] = bj;
    }
    return FKM_OK;
}

/* Rows of the squared-distance matrix: from D, or computed into buf. */
typedef struct {
    const double *D;
    double *XT; /* d x n, owned, when D is NULL */
    const double *X;
    double *buf;
    fkm_index_t n, d;
} fkm_rows_t;

static int rows_init(fkm_rows_t *R, const double *D, const double *X,
                     fkm_index_t n, fkm_index_t d)
{
    R->D = D;
    R->X = X;
    R->n = n;
    R->d = d;
    R->XT = NULL;
    R->buf = NULL;
    if (D)
        return FKM_OK;
    R->XT = transpose(X, n, d);
    R->buf = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!R->XT || !R->buf) {
        free(R->XT);
        free(R->buf);
        R->XT = R->buf = NULL;
        return FKM_ENOMEM;
    }
    return FKM_OK;
}

static void rows_clear(fkm_rows_t *R)
{
    free(R->XT);
    free(R->buf);
}

/* Row i, or NULL when a distance computed on the fly is not finite. */
static const double *rows_get(fkm_rows_t *R, fkm_index_t i)
{
    if (R->D)
        return R->D + i * R->n;
    row_sqdist(R->buf, R->X + i * R->d, R->XT, R->n, R->d);
    return row_finite(R->buf, R->n) ? R->buf : NULL;
}

/* Squared distance between points a and b, bit-identical to the entries of
 * the rows above (same terms, same order). */
static inline double rows_pair(const fkm_rows_t *R, fkm_index_t a, fkm_index_t b)
{
    if (R->D)
        return R->D[a * R->n + b];
    const double *x = R->X + a * R->d, *y = R->X + b * R->d;
    double s = 0.0;
    for (fkm_index_t t = 0; t < R->d; ++t) {
        double u = y[t] - x[t];
        s += u * u;
    }
    return s;
}

/* Squared radius of the window that holds every t_small-neighbour of every
 * point of the t_large ball of a pick: (sqrt(t_small) + sqrt(t_large))^2 by
 * the triangle inequality, enlarged by a relative 1e-9 against rounding. */
static double window_sq(double t_small, double t_large)
{
    double r = sqrt(t_small) + sqrt(t_large);
    return r * r * (1.0 + 1e-9);
}

/* cnt[i] = number (or weight, when w) of j with row_i[j] <= t. */
FKM_HOT static void count_le(int64_t *cnt, fkm_index_t i, const double *row,
                             const int64_t *w, fkm_index_t n, double t)
{
    int64_t c = 0;
    if (w) {
        for (fkm_index_t j = 0; j < n; ++j)
            c += row[j] <= t ? w[j] : 0;
    } else {
        for (fkm_index_t j = 0; j < n; ++j)
            c += row[j] <= t;
    }
    cnt[i] = c;
}

int fkm_kcenter_aggregate(fkm_index_t *reps, int64_t *weights,
                          fkm_index_t *n_reps, uint8_t *remaining,
                          const double *D, const double *X, fkm_index_t n,
                          fkm_index_t d, double t2, double t4, double y,
                          fkm_index_t max_reps)
{
    *n_reps = 0;
    if (n < 0 || d < 1 || max_reps < 0 || isnan(t2) || isnan(t4) ||
        isnan(y) || t2 > t4)
        return FKM_EDOM;
    if (n == 0)
        return FKM_OK;
    const size_t sn = (size_t)n;
    const double tw = window_sq(t2, t4);
    int64_t *cnt = malloc(sn * sizeof(int64_t));
    fkm_index_t *rem = malloc(sn * sizeof(fkm_index_t));
    fkm_index_t *win = malloc(sn * sizeof(fkm_index_t));
    uint8_t *inU = malloc(sn);
    fkm_rows_t R;
    int status = rows_init(&R, D, X, n, d);
    if (!cnt || !rem || !win || !inU || status != FKM_OK) {
        if (status == FKM_OK)
            rows_clear(&R);
        free(cnt);
        free(rem);
        free(win);
        free(inU);
        return FKM_ENOMEM;
    }
    memset(inU, 1, sn);
    for (fkm_index_t i = 0; i < n; ++i) {
        const double *row = rows_get(&R, i);
        if (!row) {
            status = FKM_ENONFINITE;
            goto done;
        }
        count_le(cnt, i, row, NULL, n, t2);
    }
    fkm_index_t nr = 0;
    for (;;) {
        fkm_index_t best = -1;
        int64_t bc = -1;
        for (fkm_index_t i = 0; i < n; ++i)
            if (inU[i] && cnt[i] > bc) {
                bc = cnt[i];
                best = i;
            }
        if (best < 0 || !((double)bc > y))
            break;
        if (nr == max_reps) {
            nr = max_reps + 1;
            break;
        }
        const double *row = rows_get(&R, best);
        if (!row) {
            status = FKM_ENONFINITE;
            goto done;
        }
        fkm_index_t nrem = 0, nwin = 0;
        for (fkm_index_t j = 0; j < n; ++j) {
            if (row[j] <= tw && inU[j])
                win[nwin++] = j;
            if (inU[j] && row[j] <= t4) {
                inU[j] = 0;
                rem[nrem++] = j;
            }
        }
        reps[nr] = best;
        weights[nr] = (int64_t)nrem;
        ++nr;
        /* only points of U inside the window can lose a neighbour */
        fkm_index_t nw = 0;
        for (fkm_index_t q = 0; q < nwin; ++q)
            if (inU[win[q]])
                win[nw++] = win[q];
        for (fkm_index_t r = 0; r < nrem; ++r)
            for (fkm_index_t q = 0; q < nw; ++q)
                cnt[win[q]] -= rows_pair(&R, rem[r], win[q]) <= t2;
    }
    *n_reps = nr;
    if (remaining)
        memcpy(remaining, inU, sn);
done:
    rows_clear(&R);
    free(cnt);
    free(rem);
    free(win);
    free(inU);
    return status;
}

int fkm_kcenter_greedy(fkm_index_t *centers, fkm_index_t *n_centers,
                       int64_t *uncovered_weight, uint8_t *uncovered,
                       const double *D, const double *X, const int64_t *w,
                       fkm_index_t n, fkm_index_t d, double t_small,
                       double t_large, fkm_index_t k)
{
    *n_centers = 0;
    *uncovered_weight = 0;
    if (k < 1 || n < 0 || d < 1 || isnan(t_small) || isnan(t_large) ||
        t_small > t_large)
        return FKM_EDOM;
    int64_t total = 0;
    for (fkm_index_t i = 0; i < n; ++i) {
        int64_t wi = w ? w[i] : 1;
        if (wi < 0)
            return FKM_EDOM;
        if (total > INT64_MAX - wi)
            return FKM_EOVERFLOW;
        total += wi;
    }
    if (n == 0)
        return FKM_OK;
    const size_t sn = (size_t)n;
    const double tw = window_sq(t_small, t_large);
    int64_t *cnt = malloc(sn * sizeof(int64_t));
    fkm_index_t *rem = malloc(sn * sizeof(fkm_index_t));
    fkm_index_t *win = malloc(sn * sizeof(fkm_index_t));
    uint8_t *inU = malloc(sn);
    fkm_rows_t R;
    int status = rows_init(&R, D, X, n, d);
    if (!cnt || !rem || !win || !inU || status != FKM_OK) {
        if (status == FKM_OK)
            rows_clear(&R);
        free(cnt);
        free(rem);
        free(win);
        free(inU);
        return FKM_ENOMEM;
    }
    memset(inU, 1, sn);
    for (fkm_index_t i = 0; i < n; ++i) {
        const double *row = rows_get(&R, i);
        if (!row) {
            status = FKM_ENONFINITE;
            goto done;
        }
        count_le(cnt, i, row, w, n, t_small);
    }
    fkm_index_t nc = 0;
    while (nc < k) {
        fkm_index_t best = 0;
        for (fkm_index_t i = 1; i < n; ++i)
            if (cnt[i] > cnt[best])
                best = i;
        if (cnt[best] <= 0)
            break;
        centers[nc++] = best;
        const double *row = rows_get(&R, best);
        if (!row) {
            status = FKM_ENONFINITE;
            goto done;
        }
        fkm_index_t nrem = 0, nwin = 0;
        for (fkm_index_t j = 0; j < n; ++j) {
            if (row[j] <= tw)
                win[nwin++] = j; /* every point whose count can drop */
            if (inU[j] && row[j] <= t_large) {
                inU[j] = 0;
                rem[nrem++] = j;
            }
        }
        for (fkm_index_t r = 0; r < nrem; ++r) {
            int64_t wr = w ? w[rem[r]] : 1;
            total -= wr;
            if (wr == 0 || nc == k)
                continue; /* counts are not needed after the last pick */
            for (fkm_index_t q = 0; q < nwin; ++q)
                cnt[win[q]] -= rows_pair(&R, rem[r], win[q]) <= t_small ? wr : 0;
        }
    }
    *n_centers = nc;
    *uncovered_weight = total;
    if (uncovered)
        memcpy(uncovered, inU, sn);
done:
    rows_clear(&R);
    free(cnt);
    free(rem);
    free(win);
    free(inU);
    return status;
}

int fkm_kcenter_nn(double *nn, const double *D, const double *X,
                   fkm_index_t n, fkm_index_t d)
{
    if (n < 0 || d < 1)
        return FKM_EDOM;
    if (n == 0)
        return FKM_OK;
    fkm_rows_t R;
    if (rows_init(&R, D, X, n, d) != FKM_OK)
        return FKM_ENOMEM;
    int status = FKM_OK;
    for (fkm_index_t i = 0; i < n; ++i) {
        const double *row = rows_get(&R, i);
        if (!row) {
            status = FKM_ENONFINITE;
            break;
        }
        double best = HUGE_VAL;
        for (fkm_index_t j = 0; j < n; ++j)
            if (j != i && row[j] < best)
                best = row[j];
        nn[i] = best;
    }
    rows_clear(&R);
    return status;
}
