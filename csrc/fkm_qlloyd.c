/* fkm_qlloyd.c -- see fkm_qlloyd.h. */
#include "fkm_qlloyd.h"

#include <math.h>
#include <string.h>

/* Squared distance, four partial sums then (a0 + a1) + (a2 + a3). */
static inline double sqdist(const double *x, const double *y, fkm_index_t d)
{
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    fkm_index_t c;
    for (c = 0; c + 4 <= d; c += 4) {
        double t0 = x[c] - y[c], t1 = x[c + 1] - y[c + 1];
        double t2 = x[c + 2] - y[c + 2], t3 = x[c + 3] - y[c + 3];
        a0 += t0 * t0;
        a1 += t1 * t1;
        a2 += t2 * t2;
        a3 += t3 * t3;
    }
    for (; c < d; c++) {
        double t = x[c] - y[c];
        a0 += t * t;
    }
    return (a0 + a1) + (a2 + a3);
}

typedef double fkm_qv4d __attribute__((vector_size(32), aligned(8)));

/* sqdist(x, C_j) for every center j, bit for bit: lane l of a vector sum is
 * the partial sum a_l of sqdist (coordinates c = l mod 4), the tail goes to
 * lane 0, then (a0 + a1) + (a2 + a3).  Four centers at a time. */
static inline void sqdist_all(double *out, const double *x, const double *C,
                              fkm_index_t k, fkm_index_t d)
{
    fkm_index_t j0, c;
    int q;
    for (j0 = 0; j0 < k; j0 += 4) {
        const double *cq[4];
        fkm_qv4d acc[4] = {{0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0},
                           {0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0}};
        for (q = 0; q < 4; q++) /* short last block: repeat its last center */
            cq[q] = C + (size_t)(j0 + q < k ? j0 + q : k - 1) * (size_t)d;
        for (c = 0; c + 4 <= d; c += 4) {
            const fkm_qv4d xv = *(const fkm_qv4d *)(x + c);
            for (q = 0; q < 4; q++) {
                fkm_qv4d t = xv - *(const fkm_qv4d *)(cq[q] + c);
                acc[q] += t * t;
            }
        }
        for (q = 0; q < 4 && j0 + q < k; q++) {
            double a0 = acc[q][0];
            fkm_index_t cc;
            for (cc = c; cc < d; cc++) {
                double t = x[cc] - cq[q][cc];
                a0 += t * t;
            }
            out[j0 + q] = (a0 + acc[q][1]) + (acc[q][2] + acc[q][3]);
        }
    }
}

FKM_HOT int fkm_qlloyd_assign_f64(int32_t *labels, double *lb, double *mind,
                                  double *sums, int64_t *counts, double *loss,
                                  const double *X, const double *C, const double *move,
                                  fkm_index_t n, fkm_index_t d, fkm_index_t k, int first,
                                  int lb_holds_dist)
{
    /* fkm_qlloyd.h: n, d, k >= 1, k < 2^31, previous labels valid */
    FKM_ASSERT(n >= 1 && d >= 1 && k >= 1 && k <= INT32_MAX);
    FKM_ASSERT(labels != NULL && lb != NULL && mind != NULL && sums != NULL);
    FKM_ASSERT(counts != NULL && loss != NULL && X != NULL && C != NULL);
    FKM_ASSERT(first || move != NULL);
    FKM_ASSERT_EACH(i_, first ? 0 : n, labels[i_] >= 0 && labels[i_] < k);
    /* A computed squared distance is within a relative (d + 2) u of the
     * exact one, its square root within (d + 4) u / 2 + u; the moved bounds
     * add a few u more.  e covers all of it with room. */
    const double e = 4.0 * ((double)d + 8.0) * 0x1p-53 + 0x1p-40;
    fkm_index_t i, j, c;
    double total = 0.0;
    memset(sums, 0, sizeof(double) * (size_t)(k * d));
    memset(counts, 0, sizeof(int64_t) * (size_t)k);
    for (i = 0; i < n; i++) {
        const double *x = X + (size_t)i * (size_t)d;
        double *li = lb + (size_t)i * (size_t)k;
        int32_t a;
        double dd, ub;
        if (first) { /* every center */
            if (!lb_holds_dist) sqdist_all(li, x, C, k, d);
            a = 0;
            dd = li[0];
            for (j = 0; j < k; j++) {
                double s = li[j];
                if (!(s < INFINITY)) return FKM_ENONFINITE;
                if (s < dd) { a = (int32_t)j; dd = s; }
                li[j] = sqrt(s) * (1.0 - e);
            }
        } else {
            const int32_t a0 = labels[i];
            a = a0;
            dd = sqdist(x, C + (size_t)a * (size_t)d, d);
            if (!(dd < INFINITY)) return FKM_ENONFINITE;
            ub = sqrt(dd) * (1.0 + e); /* >= the exact distance to center a */
            li[a] = sqrt(dd) * (1.0 - e);
            for (j = 0; j < k; j++) {
                double s;
                if (j == a0) continue;
                /* center j moved: its lower bound moves in */
                li[j] = (li[j] - move[j] * (1.0 + e)) * (1.0 - e);
                if (ub < li[j]) continue; /* strictly farther than a */
                s = sqdist(x, C + (size_t)j * (size_t)d, d);
                if (!(s < INFINITY)) return FKM_ENONFINITE;
                li[j] = sqrt(s) * (1.0 - e);
                /* the smallest computed distance, ties to the lowest index */
                if (s < dd || (s == dd && j < a)) {
                    a = (int32_t)j;
                    dd = s;
                    ub = sqrt(s) * (1.0 + e);
                }
            }
        }
        labels[i] = a;
        mind[i] = dd;
        total += dd;
        counts[a] += 1;
        {
            double *sa = sums + (size_t)a * (size_t)d;
            for (c = 0; c < d; c++) sa[c] += x[c];
        }
    }
    if (!(total < INFINITY)) return FKM_ENONFINITE;
    *loss = total;
    return FKM_OK;
}

/* rows ahead whose data fkm_qlloyd_relabel_f64 prefetches (a hint only) */
#define FKM_QLLOYD_AHEAD 8
#if defined(__GNUC__)
#define FKM_QLLOYD_PREFETCH(p) __builtin_prefetch(p)
#else
#define FKM_QLLOYD_PREFETCH(p) ((void)(p))
#endif

/* lower bounds on the distances between the centers C (k x d): cc[h k + j]
 * <= |C_h - C_j| (FKM_ENONFINITE when one is not finite) */
static int center_bounds(double *cc, const double *C, fkm_index_t d, fkm_index_t k, double e)
{
    fkm_index_t h, j;
    for (h = 0; h < k; h++) {
        cc[h * k + h] = 0.0;
        for (j = h + 1; j < k; j++) {
            double s = sqdist(C + (size_t)h * (size_t)d, C + (size_t)j * (size_t)d, d);
            if (!(s < INFINITY)) return FKM_ENONFINITE;
            cc[h * k + j] = cc[j * k + h] = sqrt(s) * (1.0 - e);
        }
    }
    return FKM_OK;
}

/* The full scan's label (*a) and squared distance (*dd) of the point x for
 * the centers C, from the hint's center (hint in [0, k)): the hint's center
 * is measured first; a center j with |C_hint - C_j| > (2 + e) ub, ub >= the
 * exact distance to the hint's center, is farther than ub (1 + e) in exact
 * arithmetic, so its computed distance exceeds dd (and the final smallest
 * one): the full scan would not pick it either. */
static inline int relabel_one(int32_t *a_out, double *dd_out, const double *x, int32_t hint,
                              const double *C, const double *cc, fkm_index_t d, fkm_index_t k,
                              double e)
{
    const double *cch = cc + (size_t)hint * (size_t)k;
    int32_t a = hint;
    double dd = sqdist(x, C + (size_t)hint * (size_t)d, d), lim;
    fkm_index_t j;
    if (!(dd < INFINITY)) return FKM_ENONFINITE;
    lim = sqrt(dd) * (1.0 + e) * (2.0 + 2.0 * e);
    for (j = 0; j < k; j++) {
        double s;
        if (j == hint || cch[j] > lim) continue;
        s = sqdist(x, C + (size_t)j * (size_t)d, d);
        if (!(s < INFINITY)) return FKM_ENONFINITE;
        /* the smallest computed distance, ties to the lowest index */
        if (s < dd || (s == dd && j < a)) {
            a = (int32_t)j;
            dd = s;
        }
    }
    *a_out = a;
    *dd_out = dd;
    return FKM_OK;
}

/* fetch the row X[r] (d doubles) ahead of its use (a hint only) */
static inline void prefetch_row(const double *X, int64_t r, fkm_index_t d)
{
    const char *p = (const char *)(X + (size_t)r * (size_t)d);
    size_t b;
    for (b = 0; b < (size_t)d * sizeof(double); b += 64) FKM_QLLOYD_PREFETCH(p + b);
    (void)p;
}

FKM_HOT int fkm_qlloyd_relabel_f64(int32_t *labels, double *mind, double *cc,
                                   const double *X, const int64_t *rows, const double *C,
                                   fkm_index_t m, fkm_index_t n, fkm_index_t d, fkm_index_t k)
{
    /* e as in fkm_qlloyd_assign_f64: covers the rounding of every computed
     * distance and square root here with room */
    const double e = 4.0 * ((double)d + 8.0) * 0x1p-53 + 0x1p-40;
    fkm_index_t i;
    int status;
    FKM_ASSERT(labels != NULL && mind != NULL && cc != NULL && X != NULL && C != NULL);
    FKM_ASSERT(m == 0 || rows != NULL);
    if (n < 1 || d < 1 || k < 1 || k > INT32_MAX || m < 0) return FKM_EDOM;
    for (i = 0; i < m; i++) /* every index before any work */
        if (rows[i] < 0 || rows[i] >= n || labels[i] < 0 || labels[i] >= k) return FKM_EDOM;
    status = center_bounds(cc, C, d, k, e);
    if (status != FKM_OK) return status;
    for (i = 0; i < m; i++) {
        if (i + FKM_QLLOYD_AHEAD < m) /* scattered rows: fetch a later one now */
            prefetch_row(X, rows[i + FKM_QLLOYD_AHEAD], d);
        status = relabel_one(&labels[i], &mind[i], X + (size_t)rows[i] * (size_t)d, labels[i],
                             C, cc, d, k, e);
        if (status != FKM_OK) return status;
    }
    return FKM_OK;
}

FKM_HOT int fkm_qlloyd_rescan_f64(int64_t *rows, int32_t *labels, double *mind, int32_t *prev,
                                  double *prev_mind, fkm_index_t *m_out, double *max_mind,
                                  double *cc, const double *X, const int32_t *ref_labels,
                                  const double *ref_mind, const uint8_t *keep,
                                  const double *far, const double *C, fkm_index_t n,
                                  fkm_index_t d, fkm_index_t k)
{
    const double e = 4.0 * ((double)d + 8.0) * 0x1p-53 + 0x1p-40; /* as above */
    fkm_index_t i, m = 0;
    double mx = 0.0;
    int status;
    FKM_ASSERT(rows != NULL && labels != NULL && mind != NULL && prev != NULL);
    FKM_ASSERT(prev_mind != NULL && m_out != NULL && max_mind != NULL && cc != NULL);
    FKM_ASSERT(X != NULL && ref_labels != NULL && ref_mind != NULL && keep != NULL);
    FKM_ASSERT(far != NULL && C != NULL);
    if (n < 1 || d < 1 || k < 1 || k > INT32_MAX) return FKM_EDOM;
    for (i = 0; i < n; i++) /* every label before any work */
        if (ref_labels[i] < -1 || ref_labels[i] >= k) return FKM_EDOM;
    status = center_bounds(cc, C, d, k, e);
    if (status != FKM_OK) return status;
    /* the rows to assign again; the largest distance of the others */
    for (i = 0; i < n; i++) {
        const int32_t a = ref_labels[i];
        if (!keep[i] || a < 0) continue;
        if (!(ref_mind[i] < far[a])) { /* a NaN distance or threshold: again */
            rows[m] = (int64_t)i;
            prev[m] = a;
            prev_mind[m] = ref_mind[i];
            m++;
        } else if (ref_mind[i] > mx) {
            mx = ref_mind[i];
        }
    }
    for (i = 0; i < m; i++) {
        if (i + FKM_QLLOYD_AHEAD < m) prefetch_row(X, rows[i + FKM_QLLOYD_AHEAD], d);
        status = relabel_one(&labels[i], &mind[i], X + (size_t)rows[i] * (size_t)d, prev[i],
                             C, cc, d, k, e);
        if (status != FKM_OK) return status;
        if (mind[i] > mx) mx = mind[i];
    }
    *m_out = m;
    *max_mind = mx;
    return FKM_OK;
}

int fkm_qlloyd_cells_f64(double *lo, uint8_t *sure, fkm_index_t *n_moved,
                         const double *sums, const int64_t *counts, const double *prev,
                         const double *phases, const int64_t *cells, double g, double eps,
                         const double *quantum, const double *maxabs, fkm_index_t T,
                         fkm_index_t k, fkm_index_t d)
{
    /* the operations of pyfkm.deletion._qlloyd._balanced_centroids and
     * _q_cells, one element at a time, in their order */
    const double u16 = 16.0 * 0x1p-53, u101 = 1.01 * 0x1p-53, inv2 = 2.0 / eps;
    fkm_index_t t, j, c, bad = 0;
    FKM_ASSERT(sums != NULL && counts != NULL && prev != NULL && phases != NULL);
    FKM_ASSERT(quantum != NULL && maxabs != NULL && n_moved != NULL);
    if (T < 0 || k < 1 || d < 1) return FKM_EDOM;
    for (t = 0; t < T; t++) {
        const double *ph = phases + (size_t)t * (size_t)d;
        for (j = 0; j < k; j++) {
            const size_t r = (size_t)t * (size_t)k + (size_t)j, o = r * (size_t)d;
            const int64_t cnt = counts[r];
            const double m = (double)cnt;
            const int small = m < g; /* numpy compares int64 and float64 as float64 */
            const double den = small ? g : (cnt > 0 ? m : INFINITY);
            for (c = 0; c < d; c++) {
                const double p = prev[o + c];
                double cen, dS, dc, tv, margin, a, b;
                if (small)
                    cen = (sums[o + c] + (g - m) * p) / g;
                else if (cnt > 0)
                    cen = sums[o + c] / m;
                else
                    cen = p; /* an empty cluster keeps its center */
                dS = m * (0.5 * quantum[c]) + (m * m + 1.0) * (u101 * maxabs[c]);
                dc = dS / den + u16 * (maxabs[c] + fabs(p));
                tv = cen / eps - ph[c];
                margin = inv2 * dc + u16 * (fabs(tv) + 1.0) + 1e-300;
                a = floor(tv - margin);
                b = floor(tv + margin);
                if (lo != NULL) lo[o + c] = a;
                if (sure != NULL) sure[o + c] = (uint8_t)(a == b);
                if (cells != NULL && !(a == b && a == (double)cells[o + c])) bad++;
            }
        }
    }
    *n_moved = bad;
    return FKM_OK;
}
