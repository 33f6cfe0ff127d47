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
    FKM_ASSERT(hi <= lo || m <= 0 || (D != NULL && X != NULL && Y != NULL));
    FKM_ASSERT_EACH(t, d >= 1 && lo >= 0 && hi > lo ? (hi - lo) * d : 0,
                    isfinite(X[lo * d + t]));
    FKM_ASSERT_EACH(t, d >= 1 && m > 0 ? m * d : 0, isfinite(Y[t]));
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
    FKM_ASSERT(n <= 0 || (mind != NULL && X != NULL && C != NULL));
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

/* Rows of the squared-distance matrix: from the float matrix F (entries
 * rounded to nearest from the exact double values; decisions that the
 * rounding leaves open are settled on the exact value), or computed in
 * double into buf. */
typedef struct {
    const float *F;
    double *XT; /* d x n, owned, when F is NULL */
    const double *X;
    double *buf;
    fkm_index_t n, d;
} fkm_rows_t;

/* A threshold: exact, and rounded to float.  For v = fl(D), rounding is
 * monotone, so v < tf implies D < t and v > tf implies D > t; only v == tf
 * needs the exact D. */
typedef struct {
    double t;
    float tf;
} fkm_thr_t;

static fkm_thr_t thr_make(double t)
{
    fkm_thr_t h;
    h.t = t;
    h.tf = (float)t;
    return h;
}

static int rows_init(fkm_rows_t *R, const float *F, const double *X,
                     fkm_index_t n, fkm_index_t d)
{
    *R = (fkm_rows_t){.F = F, .X = X, .n = n, .d = d}; /* XT, buf NULL */
    if (F)
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

/* Exact squared distance between points a and b, bit-identical to row a of
 * fkm_kcenter_sqdist (same terms, same order). */
static inline double exact_pair(const fkm_rows_t *R, fkm_index_t a, fkm_index_t b)
{
    const double *x = R->X + a * R->d, *y = R->X + b * R->d;
    double s = 0.0;
    for (fkm_index_t t = 0; t < R->d; ++t) {
        double u = y[t] - x[t];
        s += u * u;
    }
    return s;
}

/* dist2(a, b) <= h.t, exactly. */
static inline int pair_le(const fkm_rows_t *R, fkm_index_t a, fkm_index_t b,
                          fkm_thr_t h)
{
    if (R->F) {
        float v = R->F[a * R->n + b];
        if (v != h.tf)
            return v < h.tf;
    }
    return exact_pair(R, a, b) <= h.t;
}

/* Double row i into buf (no matrix); NULL if a distance is not finite. */
static const double *rows_compute(fkm_rows_t *R, fkm_index_t i)
{
    row_sqdist(R->buf, R->X + i * R->d, R->XT, R->n, R->d);
    return row_finite(R->buf, R->n) ? R->buf : NULL;
}

/* Squared radius of the window that holds every t_small-neighbour of every
 * point of the t_large ball of a pick: (sqrt(t_small) + sqrt(t_large))^2 by
 * the triangle inequality, enlarged by a relative 1e-9 against rounding. */
static double window_sq(double t_small, double t_large)
{
    double r = sqrt(t_small) + sqrt(t_large);
    return r * r * (1.0 + 1e-9);
}

/* *out = number (or weight, when w) of j with dist2(i, j) <= h.t.
 * Returns FKM_OK or FKM_ENONFINITE. */
FKM_HOT static int count_row(int64_t *out, fkm_rows_t *R, fkm_index_t i,
                             fkm_thr_t h, const int64_t *w)
{
    const fkm_index_t n = R->n;
    int64_t c = 0;
    if (R->F) {
        const float *row = R->F + i * n;
        const float tf = h.tf;
        int64_t neq = 0;
        if (w) {
            for (fkm_index_t j = 0; j < n; ++j) {
                c += row[j] < tf ? w[j] : 0;
                neq += row[j] == tf;
            }
        } else {
            /* 32-bit lanes vectorize with the float compares (a matrix of
             * n^2 floats in memory implies n < 2^31) */
            int32_t c32 = 0, e32 = 0;
            for (fkm_index_t j = 0; j < n; ++j) {
                c32 += row[j] < tf;
                e32 += row[j] == tf;
            }
            c = c32;
            neq = e32;
        }
        if (neq)
            for (fkm_index_t j = 0; j < n; ++j)
                if (row[j] == tf && exact_pair(R, i, j) <= h.t)
                    c += w ? w[j] : 1;
    } else {
        const double *row = rows_compute(R, i);
        if (!row)
            return FKM_ENONFINITE;
        if (w) {
            for (fkm_index_t j = 0; j < n; ++j)
                c += row[j] <= h.t ? w[j] : 0;
        } else {
            for (fkm_index_t j = 0; j < n; ++j)
                c += row[j] <= h.t;
        }
    }
    *out = c;
    return FKM_OK;
}

/* For the pick p: remove from U (inU) the points within h (appended to
 * rem), and list in win the points within squared distance tw (only those
 * in U before the removal when win_u_only).  Returns FKM_OK or
 * FKM_ENONFINITE. */
static int scan_pick(fkm_rows_t *R, fkm_index_t p, fkm_thr_t h, double tw,
                     int win_u_only, uint8_t *inU, fkm_index_t *rem,
                     fkm_index_t *nrem, fkm_index_t *win, fkm_index_t *nwin)
{
    const fkm_index_t n = R->n;
    fkm_index_t nr = 0, nw = 0;
    if (R->F) {
        const float *row = R->F + p * n;
        const float twf = (float)tw; /* fl is monotone: a superset */
        for (fkm_index_t j = 0; j < n; ++j) {
            if (row[j] <= twf && (inU[j] || !win_u_only))
                win[nw++] = j;
            if (inU[j] && row[j] <= h.tf &&
                (row[j] < h.tf || exact_pair(R, p, j) <= h.t)) {
                inU[j] = 0;
                rem[nr++] = j;
            }
        }
    } else {
        const double *row = rows_compute(R, p);
        if (!row)
            return FKM_ENONFINITE;
        for (fkm_index_t j = 0; j < n; ++j) {
            if (row[j] <= tw && (inU[j] || !win_u_only))
                win[nw++] = j;
            if (inU[j] && row[j] <= h.t) {
                inU[j] = 0;
                rem[nr++] = j;
            }
        }
    }
    *nrem = nr;
    *nwin = nw;
    return FKM_OK;
}

int fkm_kcenter_sqdist_f32(float *F, const double *X, fkm_index_t n,
                           fkm_index_t d)
{
    FKM_ASSERT(n <= 0 || (F != NULL && X != NULL));
    if (n < 0 || d < 1)
        return FKM_EDOM;
    if (n == 0)
        return FKM_OK;
    fkm_rows_t R;
    if (rows_init(&R, NULL, X, n, d) != FKM_OK)
        return FKM_ENOMEM;
    int status = FKM_OK;
    for (fkm_index_t i = 0; i < n; ++i) {
        const double *row = rows_compute(&R, i);
        if (!row) {
            status = FKM_ENONFINITE;
            break;
        }
        float *out = F + i * n;
        for (fkm_index_t j = 0; j < n; ++j)
            out[j] = (float)row[j];
    }
    rows_clear(&R);
    return status;
}

/* Scratch of the greedy kernels. */
typedef struct {
    int64_t *cnt;
    fkm_index_t *rem, *win;
    uint8_t *inU;
} fkm_scratch_t;

static int scratch_init(fkm_scratch_t *S, fkm_rows_t *R, const float *F,
                        const double *X, fkm_index_t n, fkm_index_t d)
{
    const size_t sn = (size_t)n;
    S->cnt = malloc(sn * sizeof(int64_t));
    S->rem = malloc(sn * sizeof(fkm_index_t));
    S->win = malloc(sn * sizeof(fkm_index_t));
    S->inU = malloc(sn);
    int status = rows_init(R, F, X, n, d);
    if (!S->cnt || !S->rem || !S->win || !S->inU || status != FKM_OK) {
        if (status == FKM_OK)
            rows_clear(R);
        free(S->cnt);
        free(S->rem);
        free(S->win);
        free(S->inU);
        return FKM_ENOMEM;
    }
    memset(S->inU, 1, sn);
    return FKM_OK;
}

static void scratch_clear(fkm_scratch_t *S, fkm_rows_t *R)
{
    rows_clear(R);
    free(S->cnt);
    free(S->rem);
    free(S->win);
    free(S->inU);
}

int fkm_kcenter_aggregate(fkm_index_t *reps, int64_t *weights,
                          fkm_index_t *n_reps, uint8_t *remaining,
                          const float *F, const double *X, fkm_index_t n,
                          fkm_index_t d, double t2, double t4, double y,
                          fkm_index_t max_reps)
{
    FKM_ASSERT(n_reps != NULL && (n <= 0 || X != NULL));
    FKM_ASSERT(n <= 0 || max_reps <= 0 || (reps != NULL && weights != NULL));
    *n_reps = 0;
    /* t2, y >= 0: every pick then removes at least itself, so there are at
     * most n picks (the caller's buffers hold min(n, max_reps)) */
    if (n < 0 || d < 1 || max_reps < 0 || !(t2 >= 0.0) || isnan(t4) ||
        !(y >= 0.0) || t2 > t4)
        return FKM_EDOM;
    if (n == 0)
        return FKM_OK;
    const fkm_thr_t h2 = thr_make(t2), h4 = thr_make(t4);
    const double tw = window_sq(t2, t4);
    fkm_rows_t R;
    fkm_scratch_t S;
    if (scratch_init(&S, &R, F, X, n, d) != FKM_OK)
        return FKM_ENOMEM;
    int64_t *cnt = S.cnt;
    uint8_t *inU = S.inU;
    int status = FKM_OK;
    for (fkm_index_t i = 0; i < n && status == FKM_OK; ++i)
        status = count_row(&cnt[i], &R, i, h2, NULL);
    fkm_index_t nr = 0;
    while (status == FKM_OK) {
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
        fkm_index_t nrem, nwin;
        status = scan_pick(&R, best, h4, tw, 1, inU, S.rem, &nrem, S.win, &nwin);
        if (status != FKM_OK)
            break;
        reps[nr] = best;
        weights[nr] = (int64_t)nrem;
        ++nr;
        /* only points still in U inside the window can lose a neighbour */
        fkm_index_t nw = 0;
        for (fkm_index_t q = 0; q < nwin; ++q)
            if (inU[S.win[q]])
                S.win[nw++] = S.win[q];
        for (fkm_index_t r = 0; r < nrem; ++r)
            for (fkm_index_t q = 0; q < nw; ++q)
                cnt[S.win[q]] -= pair_le(&R, S.rem[r], S.win[q], h2);
    }
    if (status == FKM_OK) {
        *n_reps = nr;
        if (remaining)
            memcpy(remaining, inU, (size_t)n);
    }
    scratch_clear(&S, &R);
    return status;
}

int fkm_kcenter_greedy(fkm_index_t *centers, fkm_index_t *n_centers,
                       int64_t *uncovered_weight, uint8_t *uncovered,
                       const float *F, const double *X, const int64_t *w,
                       fkm_index_t n, fkm_index_t d, double t_small,
                       double t_large, fkm_index_t k)
{
    FKM_ASSERT(n_centers != NULL && uncovered_weight != NULL);
    FKM_ASSERT(n <= 0 || (X != NULL && (k < 1 || centers != NULL)));
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
    const fkm_thr_t hs = thr_make(t_small), hl = thr_make(t_large);
    const double tw = window_sq(t_small, t_large);
    fkm_rows_t R;
    fkm_scratch_t S;
    if (scratch_init(&S, &R, F, X, n, d) != FKM_OK)
        return FKM_ENOMEM;
    int64_t *cnt = S.cnt;
    int status = FKM_OK;
    for (fkm_index_t i = 0; i < n && status == FKM_OK; ++i)
        status = count_row(&cnt[i], &R, i, hs, w);
    fkm_index_t nc = 0;
    while (status == FKM_OK && nc < k) {
        fkm_index_t best = 0;
        for (fkm_index_t i = 1; i < n; ++i)
            if (cnt[i] > cnt[best])
                best = i;
        if (cnt[best] <= 0)
            break;
        centers[nc++] = best;
        fkm_index_t nrem, nwin;
        /* every point (covered or not) whose count can drop */
        status = scan_pick(&R, best, hl, tw, 0, S.inU, S.rem, &nrem, S.win, &nwin);
        if (status != FKM_OK)
            break;
        for (fkm_index_t r = 0; r < nrem; ++r) {
            int64_t wr = w ? w[S.rem[r]] : 1;
            total -= wr;
            if (wr == 0 || nc == k)
                continue; /* counts are not needed after the last pick */
            for (fkm_index_t q = 0; q < nwin; ++q)
                cnt[S.win[q]] -= pair_le(&R, S.rem[r], S.win[q], hs) ? wr : 0;
        }
    }
    if (status == FKM_OK) {
        *n_centers = nc;
        *uncovered_weight = total;
        if (uncovered)
            memcpy(uncovered, S.inU, (size_t)n);
    }
    scratch_clear(&S, &R);
    return status;
}

int fkm_kcenter_nn(double *nn, const float *F, const double *X,
                   fkm_index_t n, fkm_index_t d)
{
    FKM_ASSERT(n <= 0 || (nn != NULL && X != NULL));
    if (n < 0 || d < 1)
        return FKM_EDOM;
    if (n == 0)
        return FKM_OK;
    fkm_rows_t R;
    if (rows_init(&R, F, X, n, d) != FKM_OK)
        return FKM_ENOMEM;
    int status = FKM_OK;
    for (fkm_index_t i = 0; i < n; ++i) {
        double best = HUGE_VAL;
        if (F) {
            /* the exact minimum rounds to the smallest float: look there */
            const float *row = F + i * n;
            float mf = HUGE_VALF;
            for (fkm_index_t j = 0; j < i; ++j)
                mf = row[j] < mf ? row[j] : mf;
            for (fkm_index_t j = i + 1; j < n; ++j)
                mf = row[j] < mf ? row[j] : mf;
            for (fkm_index_t j = 0; j < n; ++j)
                if (j != i && row[j] == mf) {
                    double v = exact_pair(&R, i, j);
                    if (v < best)
                        best = v;
                }
        } else {
            const double *row = rows_compute(&R, i);
            if (!row) {
                status = FKM_ENONFINITE;
                break;
            }
            for (fkm_index_t j = 0; j < n; ++j)
                if (j != i && row[j] < best)
                    best = row[j];
        }
        nn[i] = best;
    }
    rows_clear(&R);
    return status;
}

/* ------------------------------------------------------------ KD-tree index */

#define FKM_KCTREE_LEAF 16

struct fkm_kctree {
    fkm_index_t n, d, n_nodes;
    double *X;          /* points in tree order, n x d */
    double *XT;         /* the same transposed, d x n (contiguous leaves) */
    fkm_index_t *perm;  /* tree position -> original index */
    fkm_index_t *start, *end, *left, *right; /* per node; left < 0: leaf */
    double *lo, *hi;    /* per node bounding box, n_nodes x d */
};

/* Squared distance of two rows, the same terms in the same order as
 * exact_pair (|b - a| == |a - b| in floating point). */
static inline double tree_pair(const double *a, const double *b, fkm_index_t d)
{
    double s = 0.0;
    for (fkm_index_t t = 0; t < d; ++t) {
        double u = b[t] - a[t];
        s += u * u;
    }
    return s;
}

/* out[j - lo] = squared distance of x to position j in [lo, lo + m), from
 * the transposed points (stride n): the terms and order of tree_pair. */
static inline __attribute__((always_inline)) void
seg_sqdist_d(double *out, const double *x, const double *XT, fkm_index_t n,
             fkm_index_t lo, fkm_index_t m, fkm_index_t D)
{
    const double *y0 = XT + lo;
    for (fkm_index_t j = 0; j < m; ++j) {
        double u = y0[j] - x[0];
        out[j] = 0.0 + u * u;
    }
    for (fkm_index_t c = 1; c < D; ++c) {
        const double *yc = XT + c * n + lo;
        const double xc = x[c];
        for (fkm_index_t j = 0; j < m; ++j) {
            double u = yc[j] - xc;
            out[j] += u * u;
        }
    }
}

/* Lower bound on tree_pair(x, p) for every p in the box of node v. */
static inline double box_min(const fkm_kctree_t *T, fkm_index_t v, const double *x)
{
    const double *lo = T->lo + v * T->d, *hi = T->hi + v * T->d;
    double s = 0.0;
    for (fkm_index_t t = 0; t < T->d; ++t) {
        double u = x[t] < lo[t] ? lo[t] - x[t] : (x[t] > hi[t] ? x[t] - hi[t] : 0.0);
        s += u * u;
    }
    return s;
}

/* Upper bound on tree_pair(x, p) for every p in the box of node v. */
static inline double box_max(const fkm_kctree_t *T, fkm_index_t v, const double *x)
{
    const double *lo = T->lo + v * T->d, *hi = T->hi + v * T->d;
    double s = 0.0;
    for (fkm_index_t t = 0; t < T->d; ++t) {
        double a = fabs(x[t] - lo[t]), b = fabs(hi[t] - x[t]);
        double u = a > b ? a : b;
        s += u * u;
    }
    return s;
}

/* Rearranges perm[s, e) so that position k holds an element of rank k by
 * coordinate c (three-way partitions: linear on repeated values). */
static void tree_select(fkm_index_t *perm, fkm_index_t s, fkm_index_t e,
                        fkm_index_t k, const double *X, fkm_index_t d,
                        fkm_index_t c)
{
    while (e - s > 1) {
        const double pv = X[perm[s + (e - s) / 2] * d + c];
        fkm_index_t lt = s, i = s, gt = e;
        while (i < gt) {
            const double v = X[perm[i] * d + c];
            fkm_index_t tmp;
            if (v < pv) {
                tmp = perm[lt]; perm[lt] = perm[i]; perm[i] = tmp;
                ++lt;
                ++i;
            } else if (v > pv) {
                --gt;
                tmp = perm[gt]; perm[gt] = perm[i]; perm[i] = tmp;
            } else {
                ++i;
            }
        }
        if (k < lt)
            e = lt;
        else if (k >= gt)
            s = gt;
        else
            return;
    }
}

static fkm_index_t tree_build_node(fkm_kctree_t *T, const double *X,
                                   fkm_index_t s, fkm_index_t e)
{
    const fkm_index_t d = T->d, v = T->n_nodes++;
    double *lo = T->lo + v * d, *hi = T->hi + v * d;
    for (fkm_index_t t = 0; t < d; ++t)
        lo[t] = hi[t] = X[T->perm[s] * d + t];
    for (fkm_index_t i = s + 1; i < e; ++i) {
        const double *x = X + T->perm[i] * d;
        for (fkm_index_t t = 0; t < d; ++t) {
            lo[t] = x[t] < lo[t] ? x[t] : lo[t];
            hi[t] = x[t] > hi[t] ? x[t] : hi[t];
        }
    }
    T->start[v] = s;
    T->end[v] = e;
    T->left[v] = T->right[v] = -1;
    if (e - s <= FKM_KCTREE_LEAF)
        return v;
    fkm_index_t c = 0;
    for (fkm_index_t t = 1; t < d; ++t)
        if (hi[t] - lo[t] > hi[c] - lo[c])
            c = t;
    const fkm_index_t mid = s + (e - s) / 2;
    tree_select(T->perm, s, e, mid, X, d, c);
    T->left[v] = tree_build_node(T, X, s, mid);
    T->right[v] = tree_build_node(T, X, mid, e);
    return v;
}

void fkm_kctree_free(fkm_kctree_t *T)
{
    if (!T)
        return;
    free(T->X);
    free(T->XT);
    free(T->perm);
    free(T->start);
    free(T->end);
    free(T->left);
    free(T->right);
    free(T->lo);
    free(T->hi);
    free(T);
}

int fkm_kctree_build(fkm_kctree_t **out, const double *X, fkm_index_t n,
                     fkm_index_t d)
{
    FKM_ASSERT(out != NULL && (n < 1 || X != NULL));
    FKM_ASSERT_EACH(t, n >= 1 && d >= 1 ? n * d : 0, isfinite(X[t]));
    *out = NULL;
    if (n < 1 || d < 1)
        return FKM_EDOM;
    fkm_kctree_t *T = calloc(1, sizeof(*T));
    if (!T)
        return FKM_ENOMEM;
    const size_t sn = (size_t)n, sd = (size_t)d, nn = 2 * sn;
    T->n = n;
    T->d = d;
    T->X = malloc(sn * sd * sizeof(double));
    T->XT = malloc(sn * sd * sizeof(double));
    T->perm = malloc(sn * sizeof(fkm_index_t));
    T->start = malloc(nn * sizeof(fkm_index_t));
    T->end = malloc(nn * sizeof(fkm_index_t));
    T->left = malloc(nn * sizeof(fkm_index_t));
    T->right = malloc(nn * sizeof(fkm_index_t));
    T->lo = malloc(nn * sd * sizeof(double));
    T->hi = malloc(nn * sd * sizeof(double));
    if (!T->X || !T->XT || !T->perm || !T->start || !T->end || !T->left || !T->right ||
        !T->lo || !T->hi) {
        fkm_kctree_free(T);
        return FKM_ENOMEM;
    }
    for (fkm_index_t i = 0; i < n; ++i)
        T->perm[i] = i;
    tree_build_node(T, X, 0, n);
    /* every squared distance is at most the box diagonal's (monotone) */
    if (!isfinite(box_max(T, 0, T->lo))) {
        fkm_kctree_free(T);
        return FKM_ENONFINITE;
    }
    for (fkm_index_t i = 0; i < n; ++i) {
        memcpy(T->X + i * d, X + T->perm[i] * d, sd * sizeof(double));
        for (fkm_index_t t = 0; t < d; ++t)
            T->XT[t * n + i] = X[T->perm[i] * d + t];
    }
    *out = T;
    return FKM_OK;
}

/* *best = min(*best, squared distances of x to the positions of leaf v
 * other than i). */
FKM_HOT static void leaf_nn(const fkm_kctree_t *T, fkm_index_t v, fkm_index_t i,
                            const double *x, double *best)
{
    double buf[FKM_KCTREE_LEAF];
    const fkm_index_t lo = T->start[v], m = T->end[v] - lo;
#define FKM_SEG(DD) seg_sqdist_d(buf, x, T->XT, T->n, lo, m, DD)
    FKM_WITH_CONST_D(T->d, FKM_SEG)
#undef FKM_SEG
    double b = *best;
    for (fkm_index_t j = 0; j < m; ++j)
        if (lo + j != i && buf[j] < b)
            b = buf[j];
    *best = b;
}

/* Nearest other point of position i: *best = min(*best, distances). */
static void tree_nn_node(const fkm_kctree_t *T, fkm_index_t v, fkm_index_t i,
                         double *best)
{
    const double *x = T->X + i * T->d;
    if (T->left[v] < 0) {
        leaf_nn(T, v, i, x, best);
        return;
    }
    fkm_index_t a = T->left[v], b = T->right[v];
    double da = box_min(T, a, x), db = box_min(T, b, x);
    if (db < da) {
        fkm_index_t t = a; a = b; b = t;
        double u = da; da = db; db = u;
    }
    if (!(da > *best))
        tree_nn_node(T, a, i, best);
    if (!(db > *best))
        tree_nn_node(T, b, i, best);
}

int fkm_kctree_nn(double *nn, const fkm_kctree_t *T)
{
    FKM_ASSERT(nn != NULL && T != NULL);
    for (fkm_index_t i = 0; i < T->n; ++i) {
        double best = HUGE_VAL;
        tree_nn_node(T, 0, i, &best);
        nn[T->perm[i]] = best;
    }
    return FKM_OK;
}

/* Per-call state of the aggregating procedure on a tree. */
typedef struct {
    const fkm_kctree_t *T;
    fkm_index_t *ucnt;  /* per node: points of U in the subtree */
    uint8_t *inU;       /* per position */
    fkm_index_t *rem;   /* removed positions of the current pick */
    fkm_index_t nrem;
} fkm_tagg_t;

/* |U cap ball(x, t)| within node v. */
static fkm_index_t tree_count(const fkm_tagg_t *A, fkm_index_t v,
                              const double *x, double t)
{
    const fkm_kctree_t *T = A->T;
    if (A->ucnt[v] == 0 || box_min(T, v, x) > t)
        return 0;
    if (box_max(T, v, x) <= t)
        return A->ucnt[v];
    if (T->left[v] >= 0)
        return tree_count(A, T->left[v], x, t) + tree_count(A, T->right[v], x, t);
    fkm_index_t c = 0;
    for (fkm_index_t j = T->start[v]; j < T->end[v]; ++j)
        c += A->inU[j] && tree_pair(x, T->X + j * T->d, T->d) <= t;
    return c;
}

/* Removes U cap ball(x, t) within node v (appending to rem); returns how
 * many were removed. */
static fkm_index_t tree_remove(fkm_tagg_t *A, fkm_index_t v, const double *x,
                               double t)
{
    const fkm_kctree_t *T = A->T;
    if (A->ucnt[v] == 0 || box_min(T, v, x) > t)
        return 0;
    fkm_index_t r = 0;
    if (T->left[v] >= 0) {
        r = tree_remove(A, T->left[v], x, t) + tree_remove(A, T->right[v], x, t);
    } else {
        const int all = box_max(T, v, x) <= t;
        for (fkm_index_t j = T->start[v]; j < T->end[v]; ++j)
            if (A->inU[j] && (all || tree_pair(x, T->X + j * T->d, T->d) <= t)) {
                A->inU[j] = 0;
                A->rem[A->nrem++] = j;
                ++r;
            }
    }
    A->ucnt[v] -= r;
    return r;
}

static fkm_index_t tree_fill_counts(fkm_tagg_t *A, fkm_index_t v)
{
    const fkm_kctree_t *T = A->T;
    if (T->left[v] < 0)
        return A->ucnt[v] = T->end[v] - T->start[v];
    return A->ucnt[v] = tree_fill_counts(A, T->left[v]) +
                        tree_fill_counts(A, T->right[v]);
}

/* Bounds on tree_pair(x, y) over x in the box of node a, y in that of b
 * (per coordinate, y_t - x_t lies in [lo_b - hi_a, hi_b - lo_a] and its
 * rounding in the rounded interval). */
static inline void box_pair(const fkm_kctree_t *T, fkm_index_t a, fkm_index_t b,
                            double *mn, double *mx)
{
    const fkm_index_t d = T->d;
    const double *la = T->lo + a * d, *ha = T->hi + a * d;
    const double *lb = T->lo + b * d, *hb = T->hi + b * d;
    double s = 0.0, S = 0.0;
    for (fkm_index_t t = 0; t < d; ++t) {
        double g1 = lb[t] - ha[t], g2 = la[t] - hb[t];
        double u = g1 > 0.0 ? g1 : (g2 > 0.0 ? g2 : 0.0);
        double p = fabs(hb[t] - la[t]), q = fabs(ha[t] - lb[t]);
        double v = p > q ? p : q;
        s += u * u;
        S += v * v;
    }
    *mn = s;
    *mx = S;
}

/* Leaf pair (a, b), a before b or a == b: for every pair (i in a, j in b),
 * i < j when a == b, within t: ++cnt[i] and ++cnt[j]; a == b also counts
 * each point itself. */
FKM_HOT static void leaf_pair_count(const fkm_kctree_t *T, fkm_index_t a,
                                    fkm_index_t b, double t, int64_t *cnt)
{
    const fkm_index_t d = T->d, n = T->n;
    double buf[FKM_KCTREE_LEAF];
    for (fkm_index_t i = T->start[a]; i < T->end[a]; ++i) {
        const double *x = T->X + i * d;
        const fkm_index_t lo = a == b ? i + 1 : T->start[b];
        const fkm_index_t m = T->end[b] - lo;
#define FKM_SEG(DD) seg_sqdist_d(buf, x, T->XT, n, lo, m, DD)
        FKM_WITH_CONST_D(d, FKM_SEG)
#undef FKM_SEG
        int64_t c = a == b;
        for (fkm_index_t j = 0; j < m; ++j) {
            const int64_t in = buf[j] <= t;
            c += in;
            cnt[lo + j] += in;
        }
        cnt[i] += c;
    }
}

/* Adds to cnt[i], for every position i in nodes a and b, the number of
 * points of the other node (of the node itself when a == b) within t;
 * whole-node additions go to acc.  a == b, or a and b disjoint. */
static void tree_dual_count(const fkm_kctree_t *T, fkm_index_t a, fkm_index_t b,
                            double t, int64_t *acc, int64_t *cnt)
{
    const int la = T->left[a] < 0, lb = T->left[b] < 0;
    if (a == b) {
        if (la) {
            leaf_pair_count(T, a, a, t, cnt);
        } else {
            tree_dual_count(T, T->left[a], T->left[a], t, acc, cnt);
            tree_dual_count(T, T->right[a], T->right[a], t, acc, cnt);
            tree_dual_count(T, T->left[a], T->right[a], t, acc, cnt);
        }
        return;
    }
    double mn, mx;
    box_pair(T, a, b, &mn, &mx);
    if (mn > t)
        return;
    if (mx <= t) {
        acc[a] += T->end[b] - T->start[b];
        acc[b] += T->end[a] - T->start[a];
        return;
    }
    if (la && lb) {
        leaf_pair_count(T, a, b, t, cnt);
        return;
    }
    if (lb || (!la && T->end[a] - T->start[a] >= T->end[b] - T->start[b])) {
        tree_dual_count(T, T->left[a], b, t, acc, cnt);
        tree_dual_count(T, T->right[a], b, t, acc, cnt);
    } else {
        tree_dual_count(T, a, T->left[b], t, acc, cnt);
        tree_dual_count(T, a, T->right[b], t, acc, cnt);
    }
}

/* Adds acc of every node to the positions below it. */
static void tree_push(const fkm_kctree_t *T, fkm_index_t v, int64_t add,
                      const int64_t *acc, int64_t *cnt)
{
    add += acc[v];
    if (T->left[v] >= 0) {
        tree_push(T, T->left[v], add, acc, cnt);
        tree_push(T, T->right[v], add, acc, cnt);
        return;
    }
    for (fkm_index_t i = T->start[v]; i < T->end[v]; ++i)
        cnt[i] += add;
}

/* Max-heap of (count, original index) pairs: larger count first, then the
 * lower original index. */
typedef struct {
    int64_t c;
    fkm_index_t orig, pos;
} fkm_hent_t;

static inline int hent_before(const fkm_hent_t *a, const fkm_hent_t *b)
{
    return a->c > b->c || (a->c == b->c && a->orig < b->orig);
}

static void heap_down(fkm_hent_t *H, fkm_index_t m, fkm_index_t i)
{
    fkm_hent_t e = H[i];
    for (;;) {
        fkm_index_t c = 2 * i + 1;
        if (c >= m)
            break;
        if (c + 1 < m && hent_before(&H[c + 1], &H[c]))
            ++c;
        if (!hent_before(&H[c], &e))
            break;
        H[i] = H[c];
        i = c;
    }
    H[i] = e;
}

int fkm_kctree_aggregate(fkm_index_t *reps, int64_t *weights,
                         fkm_index_t *n_reps, uint8_t *remaining,
                         const fkm_kctree_t *T, double t2, double t4,
                         double y, fkm_index_t max_reps)
{
    FKM_ASSERT(n_reps != NULL && T != NULL);
    FKM_ASSERT(max_reps <= 0 || (reps != NULL && weights != NULL));
    *n_reps = 0;
    /* t2, y >= 0: at most n picks (see fkm_kcenter_aggregate) */
    if (max_reps < 0 || !(t2 >= 0.0) || isnan(t4) || !(y >= 0.0) || t2 > t4)
        return FKM_EDOM;
    const fkm_index_t n = T->n, d = T->d;
    fkm_tagg_t A;
    A.T = T;
    A.ucnt = malloc((size_t)T->n_nodes * sizeof(fkm_index_t));
    A.inU = malloc((size_t)n);
    A.rem = malloc((size_t)n * sizeof(fkm_index_t));
    fkm_hent_t *H = malloc((size_t)n * sizeof(fkm_hent_t));
    if (!A.ucnt || !A.inU || !A.rem || !H) {
        free(A.ucnt);
        free(A.inU);
        free(A.rem);
        free(H);
        return FKM_ENOMEM;
    }
    memset(A.inU, 1, (size_t)n);
    tree_fill_counts(&A, 0);
    /* Lazy greedy: heap keys are upper bounds of the current counts (counts
     * only decrease as U shrinks).  A popped point whose recomputed count
     * equals its key beats every other point's current count, ties going
     * to the lower original index, exactly as a full scan would. */
    int64_t *acc = calloc((size_t)T->n_nodes, sizeof(int64_t));
    int64_t *cnt = calloc((size_t)n, sizeof(int64_t));
    if (!acc || !cnt) {
        free(acc);
        free(cnt);
        free(A.ucnt);
        free(A.inU);
        free(A.rem);
        free(H);
        return FKM_ENOMEM;
    }
    tree_dual_count(T, 0, 0, t2, acc, cnt);
    tree_push(T, 0, 0, acc, cnt);
    for (fkm_index_t i = 0; i < n; ++i) {
        H[i].pos = i;
        H[i].orig = T->perm[i];
        H[i].c = cnt[i];
    }
    free(acc);
    free(cnt);
    fkm_index_t m = n;
    for (fkm_index_t i = n / 2; i-- > 0;)
        heap_down(H, m, i);
    fkm_index_t nr = 0;
    while (m > 0) {
        fkm_hent_t top = H[0];
        if (!A.inU[top.pos]) {
            H[0] = H[--m];
            heap_down(H, m, 0);
            continue;
        }
        if (!((double)top.c > y))
            break; /* the largest upper bound is <= y: no pick is due */
        const double *x = T->X + top.pos * d;
        int64_t c = tree_count(&A, 0, x, t2);
        if (c != top.c) {
            H[0].c = c;
            heap_down(H, m, 0);
            continue;
        }
        if (nr == max_reps) {
            nr = max_reps + 1;
            break;
        }
        A.nrem = 0;
        tree_remove(&A, 0, x, t4);
        reps[nr] = top.orig;
        weights[nr] = (int64_t)A.nrem;
        ++nr;
    }
    *n_reps = nr;
    if (remaining)
        for (fkm_index_t i = 0; i < n; ++i)
            remaining[T->perm[i]] = A.inU[i];
    free(A.ucnt);
    free(A.inU);
    free(A.rem);
    free(H);
    return FKM_OK;
}
