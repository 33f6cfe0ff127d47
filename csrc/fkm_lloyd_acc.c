/* fkm_lloyd_acc.c -- see fkm_lloyd_acc.h.  The rounding below is part of
 * the contract: this file must be compiled WITHOUT contraction of a * b + c
 * into fused multiply-adds (setup.py passes -ffp-contract=off; unlike
 * fkm_lloyd.c there is no pragma enabling it), so every product and every
 * sum is rounded separately, in the order written. */
#include "fkm_lloyd_acc.h"

#include <string.h>

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

typedef double acc_v4d __attribute__((vector_size(32), aligned(8)));

static inline fkm_index_t acc_stride(fkm_index_t d) { return (d + 4) & ~(fkm_index_t)3; }

/* s[0..d) = fl(s + fl(wi x)) per coordinate and s[d] = fl(s[d] + wi), four
 * lanes per vector operation (the padding after s[d] receives zeros). */
static inline __attribute__((always_inline)) void add_point(double *restrict s,
                                                            const double *restrict x,
                                                            double wi, fkm_index_t d)
{
    fkm_index_t j = 0, t;
    acc_v4d v = {0.0, 0.0, 0.0, 0.0};
    for (; j + 4 <= d; j += 4) {
        acc_v4d u;
        memcpy(&u, x + j, sizeof u);
        u = u * wi;
        *(acc_v4d *)(s + j) = *(const acc_v4d *)(s + j) + u;
    }
    for (t = 0; j + t < d; t++) v[t] = wi * x[j + t];
    v[d - j] = wi;
    *(acc_v4d *)(s + j) = *(const acc_v4d *)(s + j) + v;
}

static inline __attribute__((always_inline)) void acc_points(
    double *restrict s4, const double *restrict X, const double *restrict w,
    const int32_t *restrict labels, fkm_index_t n, fkm_index_t d, fkm_index_t k,
    const unsigned char *restrict dirty)
{
    const fkm_index_t ds = acc_stride(d), kd = k * ds;
    fkm_index_t i;
    for (i = 0; i < n; i++) {
        const int32_t c = labels[i];
        if (dirty && !dirty[c]) continue;
        add_point(s4 + (i & 3) * kd + c * ds, X + i * d, w ? w[i] : 1.0, d);
    }
}

FKM_HOT void fkm_lloyd_accumulate_f64(double *sums, double *wsums, double *scratch,
                                      const double *X, const double *w,
                                      const int32_t *labels, fkm_index_t n, fkm_index_t d,
                                      fkm_index_t k, const unsigned char *dirty)
{
    FKM_ASSERT(n >= 0 && d >= 1 && k >= 1);
    FKM_ASSERT(sums != NULL && wsums != NULL && scratch != NULL);
    FKM_ASSERT(n == 0 || (X != NULL && labels != NULL));
    FKM_ASSERT_EACH(i, n, labels[i] >= 0 && labels[i] < k);
    const fkm_index_t ds = acc_stride(d), kd = k * ds;
    fkm_index_t c, j;
    memset(scratch, 0, sizeof(double) * (size_t)(4 * kd));
#define FKM_ACC(D) acc_points(scratch, X, w, labels, n, D, k, dirty)
    FKM_WITH_CONST_D(d, FKM_ACC)
#undef FKM_ACC
    for (c = 0; c < k; c++) {
        const double *s = scratch + c * ds;
        if (dirty && !dirty[c]) continue;
        for (j = 0; j <= d; j++) {
            const double v = ((s[j] + s[kd + j]) + s[2 * kd + j]) + s[3 * kd + j];
            if (j < d)
                sums[c * d + j] = v;
            else
                wsums[c] = v;
        }
    }
}

/* Stream sums of one cluster from its member lists (see the header); the
 * four partial sums live in scratch (4 acc_stride(d) doubles). */
static inline __attribute__((always_inline)) void acc_members(
    double *restrict sums, double *restrict wsum, double *restrict scratch,
    const double *restrict X, const double *restrict w, const int32_t *restrict ids,
    const int32_t *restrict off, fkm_index_t d)
{
    const fkm_index_t ds = acc_stride(d);
    fkm_index_t j;
    int r;
    memset(scratch, 0, sizeof(double) * (size_t)(4 * ds));
    for (r = 0; r < 4; r++) {
        double *s = scratch + r * ds;
        int32_t q;
        for (q = off[r]; q < off[r + 1]; q++) {
            const fkm_index_t i = ids[q];
            add_point(s, X + i * d, w ? w[i] : 1.0, d);
        }
    }
    for (j = 0; j <= d; j++) {
        const double v = ((scratch[j] + scratch[ds + j]) + scratch[2 * ds + j]) + scratch[3 * ds + j];
        if (j < d)
            sums[j] = v;
        else
            *wsum = v;
    }
}

FKM_HOT void fkm_lloyd_accumulate_members_f64(double *sums, double *wsum, double *scratch,
                                              const double *X, const double *w,
                                              const int32_t *ids, const int32_t *off,
                                              fkm_index_t d)
{
    FKM_ASSERT(d >= 1 && sums != NULL && wsum != NULL && scratch != NULL);
    FKM_ASSERT(X != NULL && ids != NULL && off != NULL && off[0] >= 0);
#ifdef FKM_DEBUG
    /* ids[off[r] .. off[r+1]): increasing point ids i with i mod 4 = r */
    for (int r = 0; r < 4; r++) {
        FKM_ASSERT(off[r] <= off[r + 1]);
        FKM_ASSERT_EACH(t, off[r + 1] - off[r],
                        ids[off[r] + t] >= 0 && ids[off[r] + t] % 4 == r &&
                        (t == 0 || ids[off[r] + t - 1] < ids[off[r] + t]));
    }
#endif
#define FKM_ACCM(D) acc_members(sums, wsum, scratch, X, w, ids, off, D)
    FKM_WITH_CONST_D(d, FKM_ACCM)
#undef FKM_ACCM
}

static inline __attribute__((always_inline)) double dist_rows(
    double *restrict mind, const double *restrict X, const double *restrict P,
    const double *restrict w, const int32_t *restrict labels,
    const double *restrict centers, fkm_index_t n, fkm_index_t d)
{
    fkm_index_t i = 0, j;
    double inert = 0.0;
    if (P) {
        /* four points per vector: lane r is point i + r's own recursive sum */
        for (; i + 4 <= n; i += 4) {
            const double *p = P + i * d;
            const double *m0 = centers + labels[i] * d, *m1 = centers + labels[i + 1] * d;
            const double *m2 = centers + labels[i + 2] * d, *m3 = centers + labels[i + 3] * d;
            acc_v4d a = {0.0, 0.0, 0.0, 0.0};
            for (j = 0; j < d; j++) {
                const acc_v4d m = {m0[j], m1[j], m2[j], m3[j]};
                const acc_v4d t = *(const acc_v4d *)(p + 4 * j) - m;
                const acc_v4d q = t * t;
                a = a + q;
            }
            for (int r = 0; r < 4; r++) {
                const double q = (w ? w[i + r] : 1.0) * a[r];
                mind[i + r] = a[r];
                inert = inert + q;
            }
        }
    }
    for (; i < n; i++) {
        const double *x = X + i * d, *m = centers + labels[i] * d;
        double a = 0.0, q;
        for (j = 0; j < d; j++) {
            const double t = x[j] - m[j];
            q = t * t;
            a = a + q;
        }
        mind[i] = a;
        q = (w ? w[i] : 1.0) * a;
        inert = inert + q;
    }
    return inert;
}

FKM_HOT double fkm_lloyd_distances_f64(double *mind, const double *X, const double *P,
                                       const double *w, const int32_t *labels,
                                       const double *centers, fkm_index_t n, fkm_index_t d)
{
    FKM_ASSERT(n >= 0 && d >= 1);
    FKM_ASSERT(n == 0 || (mind != NULL && X != NULL && labels != NULL && centers != NULL));
    FKM_ASSERT_EACH(i, n, labels[i] >= 0);
    double inert = 0.0;
#define FKM_DIST(D) inert = dist_rows(mind, X, P, w, labels, centers, n, D)
    FKM_WITH_CONST_D(d, FKM_DIST)
#undef FKM_DIST
    return inert;
}

/* Four rows' distance chains, interleaved (m < 4: the missing rows repeat
 * row 0 and are dropped). */
#define FKM_ROWDIST4(NAME, REAL)                                                        \
    FKM_HOT void NAME(double *dd, const REAL *const *rows, const double *const *cs, int m, \
                      fkm_index_t d)                                                    \
    {                                                                                   \
        FKM_ASSERT(d >= 1 && m >= 1 && m <= 4 && dd != NULL && rows != NULL && cs != NULL); \
        const REAL *restrict x0 = rows[0], *restrict x1 = m > 1 ? rows[1] : x0;          \
        const REAL *restrict x2 = m > 2 ? rows[2] : x0, *restrict x3 = m > 3 ? rows[3] : x0; \
        const double *restrict c0 = cs[0], *restrict c1 = m > 1 ? cs[1] : c0;            \
        const double *restrict c2 = m > 2 ? cs[2] : c0, *restrict c3 = m > 3 ? cs[3] : c0; \
        double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;                                  \
        for (fkm_index_t j = 0; j < d; j++) {                                           \
            const double t0 = (double)x0[j] - c0[j], t1 = (double)x1[j] - c1[j];        \
            const double t2 = (double)x2[j] - c2[j], t3 = (double)x3[j] - c3[j];        \
            const double q0 = t0 * t0, q1 = t1 * t1, q2 = t2 * t2, q3 = t3 * t3;        \
            a0 = a0 + q0;                                                               \
            a1 = a1 + q1;                                                               \
            a2 = a2 + q2;                                                               \
            a3 = a3 + q3;                                                               \
        }                                                                               \
        dd[0] = a0;                                                                     \
        dd[1] = m > 1 ? a1 : 0.0;                                                       \
        dd[2] = m > 2 ? a2 : 0.0;                                                       \
        dd[3] = m > 3 ? a3 : 0.0;                                                       \
    }

FKM_ROWDIST4(fkm_lloyd_rowdist4_f64, double)
/* deliberate specialization: the float32 twin (see the header). */
FKM_ROWDIST4(fkm_lloyd_rowdist4_f32, float)
#undef FKM_ROWDIST4
