/* fkm_lloyd_loop.c -- complete small Lloyd runs (see fkm_lloyd_loop.h). */
#include "fkm_lloyd_loop.h"
#include "fkm_lloyd.h"
#include "fkm_lloyd_acc.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Scratch for one run: packed centers and points (fkm_lloyd.h), the
 * accumulation scratch (fkm_lloyd_acc.h). */
typedef struct {
    double *ct, *hnorm, *shift, *P, *acc;
} loop_ws;

/* The mean of the centers rounded to 16 significant bits per coordinate
 * (as pyfkm.core.kmeans._short_shift): x - s stays exact for simple data, so
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

/* ---------------------------------------------------------------------------
 * Distance bounds (Hamerly 2010: one upper bound U_i on the distance of point
 * i to its assigned center a, one lower bound L_i on its distance to every
 * other center, moved by the centers' displacements each iteration).  A
 * point whose bounds prove that the tiled kernel would give it label a again
 * is not scored; fkm_lloyd_label then scores only the groups with a point
 * that is not proven, with the same code as the full scan, and the sums and
 * distances follow from the labels alone (fkm_lloyd_acc.h).  So labels, sums, centers, mind,
 * inertia and n_iter are bit for bit those of the full scan.
 *
 * Why a proven point keeps its label.  Let u = 2^-53, s the shift, c_j the
 * centers (doubles), v_j = fl(c_j - s) the packed values (ct) and
 * c^_j = s + v_j (real).  In exact arithmetic the kernel's score is
 *     hnorm_j - <x, v_j> = 1/2 ||x - c^_j||^2 - 1/2 ||x - s||^2      (1)
 * with hnorm_j = 1/2 ||v_j||^2 + <v_j, s>; the last term is the same for all
 * j.  The kernel computes hnorm_j by two recursive sums of d products and
 * one multiply-add, <x, v_j> by a recursive sum of d products (with or
 * without fused multiply-adds, in any order), then one subtraction; the
 * standard bounds for recursive summation (Higham, Accuracy and Stability of
 * Numerical Algorithms, 2nd ed., sec. 3.1: error <= gamma_m sum |terms|,
 * gamma_m = m u / (1 - m u)) give, with N_j = ||v_j||, S = ||s||, X = ||x||
 * and Cauchy-Schwarz on sum |x_c v_jc| and sum |v_jc s_c|,
 *     |score~_j - score_j| <= gamma_{d+2} N_j (N_j / 2 + S + X) + eta   (2)
 * where eta = 2^-900 covers products that underflow (each loses at most
 * 2^-1075; there are fewer than 2d + 4).  No overflow happens when N_j, S,
 * X <= 2^400 (points with larger norms are never skipped).
 * Each coordinate of v_j is one rounded subtraction, so
 *     ||c^_j - c_j|| <= u ||c_j - s|| <= 2 u M =: dl,  M >= max_j N_j.  (3)
 * If U >= ||x - c_a||, L <= ||x - c_j|| for all j != a, E >= the right side
 * of (2) for every j, and
 *     L > dl  and  (U + dl)^2 + 4 E < (L - dl)^2,                        (4)
 * then by (1)-(3) score~_a <= 1/2 (U + dl)^2 - K + E < 1/2 (L - dl)^2 - K
 * - E <= score~_j for every j != a (K = 1/2 ||x - s||^2): a is the unique
 * minimum of the computed scores, which the kernel returns (its padding
 * lanes score +inf; ties cannot arise).
 *
 * Rigour of the bound arithmetic.  rel = 16 (d + 16) u; up(v) = v + v rel
 * and down(v) = v - v rel give up(v) >= v (1 + rel/2), down(v) <= v (1 -
 * rel/2) for normal v >= 0 (one or two roundings each), which covers the
 * relative error of any computed norm or distance of d terms (at most
 * gamma_{d+2}) and of the few roundings around it.  Underflow in squared
 * differences moves a computed norm by less than 2^-520; tau = 2^-500 is
 * added to upper bounds and lower bounds below tau are set to 0.  Hence:
 * - norms M, S, X_i: up(fl(sqrt(sum of squares)) + tau);
 * - E_i = rel M (M/2 + S + X_i) + eta, rel >= 2 gamma_{d+2} with room for
 *   its own five roundings;
 * - distances: the kernel-style distance D~ = sqrt(sum (fl(x - s) - v_j)^2)
 *   is within relative gamma_{d+2} of ||x - c^_j|| +- u ||x - s||, and
 *   c^_j is within dl of c_j; with sig_i = 8u (X_i + S + M) + tau, at least
 *   twice u ||x - s|| + dl + underflow,
 *       U = up(fl(D~ + sig_i)) >= ||x - c_j||,
 *       L = down(fl(D~ - sig_i)) <= ||x - c_j||  (0 below tau);
 * - a center move m_j = up(fl(||fl(c'_j - c_j)|| + tau)) >= ||c'_j - c_j||;
 *   U <- up(fl(U + m_a)), L <- down(fl(L - max_{j != a} m_j)) (0 below tau);
 * - test (4) as up(fl(fl(U + dl)^2 + 4E)) < down(fl(fl(L - dl)^2)): its
 *   left side is >= 4 eta, so a passing right side is normal, and inf/NaN
 *   (overflow) never pass.
 * The margins are relative ~1e-14 and absolute tiny: they only cost a
 * rescoring of points within that distance of a tie.
 * ------------------------------------------------------------------------- */

#define BND_TAU 0x1p-500
#define BND_ETA 0x1p-900
#define BND_BIG 0x1p400

typedef struct {
    double rel;          /* 16 (d + 16) u */
    double *U, *L;       /* per point; U = inf, L = 0: no bounds */
    double *xn;          /* per point: upper bound of ||x_i|| (inf: too large) */
    double *old;         /* k x d: centers before the update */
    double *move;        /* k: upper bounds of the center moves */
    double *xs;          /* d: x - shift */
    double *acc;         /* 8 ceil(k/8): squared distances to packed centers */
    unsigned char *need; /* per point: not proven, must be scored */
} bnd_ws;

static inline double bnd_up(double v, double rel) { return v + v * rel; }

static inline double bnd_down(double v, double rel) { return v - v * rel; }

/* Upper bound of the norm whose computed sum of squares is ss. */
static inline double bnd_norm(double ss, double rel) { return bnd_up(sqrt(ss) + BND_TAU, rel); }

/* Lower bound from a computed distance D and its slack sig. */
static inline double bnd_lower(double D, double sig, double rel)
{
    double t = D - sig;
    return t >= BND_TAU ? bnd_down(t, rel) : 0.0;
}

/* Test (4): whether the bounds prove the point keeps its label. */
static inline int bnd_keeps(double U, double L, double E, double dl, double rel)
{
    double a = U + dl, b = L - dl;
    if (!(b > 0.0)) return 0;
    return bnd_up(a * a + 4.0 * E, rel) < bnd_down(b * b, rel);
}

typedef double bnd_v4d __attribute__((vector_size(32), aligned(8)));

/* Squared distances of xs (= x - shift) to the packed centers, all lanes of
 * the np panels into acc. */
static inline void bnd_dist_all(double *restrict acc, const double *restrict xs,
                                const double *restrict ct, fkm_index_t np, fkm_index_t d)
{
    fkm_index_t p, j;
    for (p = 0; p < np; p++) {
        const double *pc = ct + (size_t)p * (size_t)d * FKM_LLOYD_PANEL;
        bnd_v4d a0 = {0, 0, 0, 0}, a1 = {0, 0, 0, 0};
        for (j = 0; j < d; j++) {
            const double x = xs[j];
            const bnd_v4d t0 = x - *(const bnd_v4d *)(pc + (size_t)j * FKM_LLOYD_PANEL);
            const bnd_v4d t1 = x - *(const bnd_v4d *)(pc + (size_t)j * FKM_LLOYD_PANEL + 4);
            a0 += t0 * t0;
            a1 += t1 * t1;
        }
        *(bnd_v4d *)(acc + p * FKM_LLOYD_PANEL) = a0;
        *(bnd_v4d *)(acc + p * FKM_LLOYD_PANEL + 4) = a1;
    }
}

/* Tight bounds U, L of point i (label a) from its distances to all centers
 * (sqrt is monotone: the smallest computed square gives the smallest
 * computed distance). */
static inline void bnd_full(bnd_ws *b, fkm_index_t i, int32_t a, double sig,
                            const double *ct, fkm_index_t k, fkm_index_t d)
{
    const fkm_index_t np = (k + FKM_LLOYD_PANEL - 1) / FKM_LLOYD_PANEL;
    double lo = HUGE_VAL, t;
    int nan = 0;
    fkm_index_t j;
    bnd_dist_all(b->acc, b->xs, ct, np, d);
    t = b->acc[a];
    b->acc[a] = HUGE_VAL;
    for (j = 0; j < k; j++) {
        const double v = b->acc[j];
        nan |= v != v;
        lo = v < lo ? v : lo;
    }
    b->U[i] = bnd_up(sqrt(t) + sig, b->rel);
    b->L[i] = nan ? 0.0 : bnd_lower(sqrt(lo), sig, b->rel);
}

/* Per-iteration constants of the test: *dl, *A, *h (E_i = A (h + X_i) +
 * eta) and *Ms = S + M; returns 0 when the norms are too large to skip. */
static int bnd_consts(double *dl, double *A, double *h, double *Ms, const bnd_ws *b,
                      const double *ct, const double *shift, fkm_index_t k, fkm_index_t d)
{
    double M = 0.0, ss = 0.0, S;
    fkm_index_t j, c;
    for (c = 0; c < d; c++) ss += shift[c] * shift[c];
    S = bnd_norm(ss, b->rel);
    for (j = 0; j < k; j++) {
        const double *pc = ct + (size_t)(j / FKM_LLOYD_PANEL) * (size_t)d * FKM_LLOYD_PANEL +
                           j % FKM_LLOYD_PANEL;
        double nj;
        ss = 0.0;
        for (c = 0; c < d; c++) ss += pc[(size_t)c * FKM_LLOYD_PANEL] * pc[(size_t)c * FKM_LLOYD_PANEL];
        nj = bnd_norm(ss, b->rel);
        if (!(nj <= M)) M = nj;
    }
    if (!(M <= BND_BIG && S <= BND_BIG)) return 0;
    *dl = M * 0x1p-52;
    *A = b->rel * M;
    *h = 0.5 * M + S;
    *Ms = S + M;
    return 1;
}

/* Flag in need[] the points whose label the bounds cannot prove (tightening
 * the bounds of the others first); returns 0 when no point can be proven
 * (then need is not set). */
FKM_HOT static int bnd_mark(bnd_ws *b, const int32_t *labels, const double *X,
                            const double *ct, const double *shift, fkm_index_t n,
                            fkm_index_t d, fkm_index_t k)
{
    double dl, A, h, Ms;
    fkm_index_t i, c;
    if (!bnd_consts(&dl, &A, &h, &Ms, b, ct, shift, k, d)) return 0;
    for (i = 0; i < n; i++) {
        const int32_t a = labels[i];
        const double E = A * (h + b->xn[i]) + BND_ETA;
        const double *x = X + (size_t)i * (size_t)d;
        double sig;
        b->need[i] = 0;
        if (bnd_keeps(b->U[i], b->L[i], E, dl, b->rel)) continue;
        sig = 0x1p-50 * (b->xn[i] + Ms) + BND_TAU;
        for (c = 0; c < d; c++) b->xs[c] = x[c] - shift[c];
        if (b->L[i] > 0.0) {  /* tighten U alone first */
            const double *pc = ct + (size_t)(a / FKM_LLOYD_PANEL) * (size_t)d * FKM_LLOYD_PANEL +
                               a % FKM_LLOYD_PANEL;
            double ss = 0.0;
            for (c = 0; c < d; c++) {
                double t = b->xs[c] - pc[(size_t)c * FKM_LLOYD_PANEL];
                ss += t * t;
            }
            b->U[i] = bnd_up(sqrt(ss) + sig, b->rel);
            if (bnd_keeps(b->U[i], b->L[i], E, dl, b->rel)) continue;
        }
        bnd_full(b, i, a, sig, ct, k, d);
        if (bnd_keeps(b->U[i], b->L[i], E, dl, b->rel)) continue;
        b->need[i] = 1;
    }
    return 1;
}

/* Tight bounds for every point (need NULL) or the flagged ones, for their
 * current labels. */
FKM_HOT static void bnd_refresh(bnd_ws *b, const unsigned char *need, const int32_t *labels,
                                const double *X, const double *ct, const double *shift,
                                fkm_index_t n, fkm_index_t d, fkm_index_t k)
{
    double dl, A, h, Ms;
    fkm_index_t i, c;
    if (!bnd_consts(&dl, &A, &h, &Ms, b, ct, shift, k, d)) return;
    for (i = 0; i < n; i++) {
        const double *x = X + (size_t)i * (size_t)d;
        if (need && !need[i]) continue;
        for (c = 0; c < d; c++) b->xs[c] = x[c] - shift[c];
        bnd_full(b, i, labels[i], 0x1p-50 * (b->xn[i] + Ms) + BND_TAU, ct, k, d);
    }
}

/* Upper bounds b->move[j] of the distances from old[j] to centers[j] (inf
 * for NaN); *j1 gets the center of the largest, *m1 and *m2 the largest and
 * the second largest. */
static void bnd_moves(bnd_ws *b, const double *old, const double *centers, fkm_index_t k,
                      fkm_index_t d, fkm_index_t *j1, double *m1, double *m2)
{
    fkm_index_t j, c;
    *j1 = -1, *m1 = 0.0, *m2 = 0.0;
    for (j = 0; j < k; j++) {
        double ss = 0.0, m;
        for (c = 0; c < d; c++) {
            double t = centers[(size_t)j * (size_t)d + c] - old[(size_t)j * (size_t)d + c];
            ss += t * t;
        }
        m = bnd_norm(ss, b->rel);
        if (!(m <= HUGE_VAL)) m = HUGE_VAL;  /* NaN: no bound */
        b->move[j] = m;
        if (m > *m1) { *m2 = *m1; *m1 = m; *j1 = j; }
        else if (m > *m2) *m2 = m;
    }
}

/* Move the bounds by the center displacements old -> centers. */
static void bnd_move(bnd_ws *b, const int32_t *labels, const double *centers,
                     fkm_index_t n, fkm_index_t d, fkm_index_t k)
{
    double m1, m2;
    fkm_index_t i, j1;
    bnd_moves(b, b->old, centers, k, d, &j1, &m1, &m2);
    for (i = 0; i < n; i++) {
        const fkm_index_t a = labels[i];
        const double mo = a == j1 ? m2 : m1;
        double U = b->U[i], L = b->L[i];
        b->U[i] = bnd_up(U + b->move[a], b->rel);
        b->L[i] = L > 0.0 ? bnd_lower(L, mo, b->rel) : 0.0;
    }
}

static void bnd_forget(bnd_ws *b, fkm_index_t n)
{
    fkm_index_t i;
    for (i = 0; i < n; i++) {
        b->U[i] = HUGE_VAL;
        b->L[i] = 0.0;
    }
}
/* Pack the centers (shift, ct, hnorm) for the tiled kernel. */
static void pack(loop_ws *ws, const double *centers, fkm_index_t k, fkm_index_t d)
{
    short_shift(ws->shift, centers, k, d);
    fkm_lloyd_pack_centers(ws->ct, ws->hnorm, centers, ws->shift, k, d);
}

/* The assignment of all points to the packed centers: labels by the tiled
 * kernel, scoring only the groups with a point flagged in need (all when
 * need is NULL), then sums and weights by the rule of fkm_lloyd_acc.h; with
 * mind, the distances and *inertia too.  *changed counts the labels that
 * differ from their values on entry. */
static int assign(fkm_index_t *changed, int32_t *labels, double *mind, double *inertia,
                  double *sums, double *wsums, const loop_ws *ws, const unsigned char *need,
                  const double *centers, const double *X, const double *w,
                  fkm_index_t n, fkm_index_t d, fkm_index_t k)
{
    int status = fkm_lloyd_label_f64(labels, changed, X, ws->P, 0, n, d, ws->ct, ws->hnorm,
                                     k, need);
    if (status != FKM_OK) return status;
    fkm_lloyd_accumulate_f64(sums, wsums, ws->acc, X, w, labels, n, d, k, NULL);
    if (mind) *inertia = fkm_lloyd_distances_f64(mind, X, ws->P, w, labels, centers, n, d);
    return FKM_OK;
}

/* Bounds step before an assignment: the mask to pass to assign (NULL: score
 * all).  Labels must hold the last assignment's. */
static const unsigned char *bnd_before(bnd_ws *b, const int32_t *labels, const loop_ws *ws,
                                       const double *X, fkm_index_t n, fkm_index_t d,
                                       fkm_index_t k)
{
    if (!b) return NULL;
    if (bnd_mark(b, labels, X, ws->ct, ws->shift, n, d, k)) return b->need;
    bnd_forget(b, n);  /* norms too large: no bounds (the labels may change) */
    return NULL;
}

/* ---------------------------------------------------------------------------
 * Traces (fkm_lloyd_loop.h).  A trace is the record of one run (the
 * "recording"), never modified by the reruns that use it.  Entry a holds,
 * for the recording's assignment a: the centers C_a it used, its labels,
 * its sums and weights S_a (rule of fkm_lloyd_acc.h, with the recording's
 * weights w_rec), and per point the distance bounds U, L for those centers
 * (as in bnd_full) with the points ordered by class of their gap g = L - U
 * (rounded down), class = binade of g relative to the largest U.
 *
 * Assignment a of a rerun with centers C'_a: the centers moved by at most
 * m_j <= M from C_a.  Bounds moved like a Hamerly step (U + m_a, L - max of
 * the others' moves) prove the recorded label by test (4) above.  Every
 * point whose gap g exceeds T = 2 (M + dl) + 2 sqrt(E_max) passes it
 * without being looked at: with U* = U + M, L* = L - M, G = L* - U* - 2 dl
 * >= g - 2M - 2dl > 2 sqrt(E_max), (L* - dl)^2 - (U* + dl)^2 = G (L* + U*)
 * >= G g > G^2 > 4 E_max >= 4 E, and L* > T - M > dl.  So only the points
 * of the classes up to T's are tested one by one (moved bounds, test (4)),
 * and only those that fail are scored (fkm_lloyd_label with a mask).
 * Labels are the recorded ones elsewhere.  A cluster whose points and
 * weights are the recording's has the recording's sums: only the clusters
 * of a point whose label or weight differs from the recording ("dirty")
 * are summed again (fkm_lloyd_accumulate_f64 with a mask, same rule).  The
 * results are those of an untraced run, bit for bit.
 * ------------------------------------------------------------------------- */

#define TR_NCLS 48  /* gap classes: binades below the largest U; class 0 takes the rest */

void fkm_lloyd_trace_free(fkm_lloyd_trace *tr)
{
    FKM_ASSERT(tr != NULL);
    free(tr->C);
    free(tr->S);
    free(tr->S2);
    free(tr->labels);
    free(tr->U);
    free(tr->L);
    free(tr->order);
    free(tr->cls);
    free(tr->start);
    free(tr->mem);
    free(tr->mstart);
    free(tr->ndiff);
    free(tr->w);
    free(tr->xn);
    free(tr->P);
    memset(tr, 0, sizeof *tr);
}

/* realloc *p to size bytes; FKM_ENOMEM leaves *p as it was. */
static int grow(void **p, size_t size)
{
    void *q = realloc(*p, size);
    if (!q) return FKM_ENOMEM;
    *p = q;
    return FKM_OK;
}

/* Room for m entries (keeps the ones recorded).  After a failure cap stays
 * a lower bound of every array's size. */
static int trace_reserve(fkm_lloyd_trace *tr, fkm_index_t m)
{
    const size_t n = (size_t)tr->n, kd = (size_t)tr->k * (size_t)tr->d;
    size_t cap;
    if (m <= tr->cap) return FKM_OK;
    cap = (size_t)(m > 2 * tr->cap ? m : 2 * tr->cap);
    if (cap < 8) cap = 8;
    if (grow((void **)&tr->C, sizeof(double) * cap * kd) ||
        grow((void **)&tr->S, sizeof(double) * cap * (kd + (size_t)tr->k)) ||
        grow((void **)&tr->S2, sizeof(double) * cap * (kd + (size_t)tr->k)) ||
        grow((void **)&tr->labels, sizeof(int32_t) * cap * n) ||
        grow((void **)&tr->U, sizeof(double) * cap * n) ||
        grow((void **)&tr->L, sizeof(double) * cap * n) ||
        grow((void **)&tr->order, sizeof(int32_t) * cap * n) ||
        grow((void **)&tr->cls, cap * n) ||
        grow((void **)&tr->start, sizeof(int32_t) * cap * (TR_NCLS + 2)) ||
        grow((void **)&tr->mem, sizeof(int32_t) * cap * n) ||
        grow((void **)&tr->mstart, sizeof(int32_t) * cap * (4 * (size_t)tr->k + 1)) ||
        grow((void **)&tr->ndiff, sizeof(fkm_index_t) * cap))
        return FKM_ENOMEM;
    tr->cap = (fkm_index_t)cap;
    return FKM_OK;
}

/* Make tr a trace of an n x d, k-center run on X (forgetting its entries if
 * its shape differs): the point norms and, with pack, the packed points are
 * computed once per trace. */
static int trace_open(fkm_lloyd_trace *tr, double rel, const double *X, fkm_index_t n,
                      fkm_index_t d, fkm_index_t k, int pack)
{
    fkm_index_t i, c;
    if (tr->n != n || tr->d != d || tr->k != k || !tr->xn || !tr->w || (pack && !tr->P)) {
        fkm_lloyd_trace_free(tr);
        tr->n = n, tr->d = d, tr->k = k;
        tr->xn = malloc(sizeof(double) * (size_t)n);
        tr->w = malloc(sizeof(double) * (size_t)n);
        tr->P = pack ? malloc(sizeof(double) * (size_t)(n * d)) : NULL;
        if (!tr->xn || !tr->w || (pack && !tr->P)) {
            fkm_lloyd_trace_free(tr);
            return FKM_ENOMEM;
        }
        if (pack) fkm_lloyd_pack_points_f64(tr->P, X, 0, n, d);
        for (i = 0; i < n; i++) {
            const double *x = X + (size_t)i * (size_t)d;
            double ss = 0.0, v;
            for (c = 0; c < d; c++) ss += x[c] * x[c];
            v = bnd_norm(ss, rel);
            tr->xn[i] = v <= BND_BIG ? v : HUGE_VAL;
            if (!(tr->xn[i] <= tr->xnmax)) tr->xnmax = tr->xn[i];
        }
    }
    return FKM_OK;
}

/* Class of gap g (>= 0) for the binade e0 of the largest U. */
static inline int trace_class(double g, int e0)
{
    int e, c;
    if (!(g > 0.0)) return 0;
    if (!(g <= DBL_MAX)) return TR_NCLS - 1;
    (void)frexp(g, &e);
    c = e - e0 + TR_NCLS - 1;
    return c < 0 ? 0 : (c > TR_NCLS - 1 ? TR_NCLS - 1 : c);
}

/* Class of a point with bounds U, L (gap L - U rounded down). */
static inline int trace_gap_class(double U, double L, int e0, double rel)
{
    const double gap = L - U;
    return trace_class(gap > 0.0 ? bnd_down(gap, rel) : 0.0, e0);
}

/* Order the points of entry a by class (counting sort of tr->cls). */
static void trace_sort(fkm_lloyd_trace *tr, fkm_index_t a)
{
    const size_t sn = (size_t)tr->n;
    const unsigned char *cls = tr->cls + (size_t)a * sn;
    int32_t *start = tr->start + (size_t)a * (TR_NCLS + 2);
    int32_t *order = tr->order + (size_t)a * sn, cnt[TR_NCLS + 1];
    fkm_index_t i;
    memset(cnt, 0, sizeof cnt);
    for (i = 0; i < tr->n; i++) cnt[cls[i] + 1]++;
    start[0] = 0;
    for (i = 0; i < TR_NCLS; i++) start[i + 1] = start[i] + cnt[i + 1];
    memcpy(cnt, start, sizeof(int32_t) * TR_NCLS);
    for (i = 0; i < tr->n; i++) order[cnt[cls[i]]++] = (int32_t)i;
}

/* The member lists of entry a from its labels (counting sort by label and
 * id mod 4, stable: ids increase within each list), for
 * fkm_lloyd_accumulate_members_f64. */
static void trace_members(fkm_lloyd_trace *tr, fkm_index_t a)
{
    const size_t sn = (size_t)tr->n, nk = 4 * (size_t)tr->k;
    const int32_t *rl = tr->labels + (size_t)a * sn;
    int32_t *ms = tr->mstart + (size_t)a * (nk + 1), *mem = tr->mem + (size_t)a * sn;
    fkm_index_t i;
    size_t b;
    memset(ms, 0, sizeof(int32_t) * (nk + 1));
    for (i = 0; i < tr->n; i++) ms[4 * (size_t)rl[i] + (size_t)(i & 3) + 1]++;
    for (b = 0; b < nk; b++) ms[b + 1] += ms[b];
    /* backwards: ms[key + 1] ends at the start of key */
    for (i = tr->n; i-- > 0;) mem[--ms[4 * (size_t)rl[i] + (size_t)(i & 3) + 1]] = (int32_t)i;
    memmove(ms, ms + 1, sizeof(int32_t) * nk);
    ms[nk] = (int32_t)tr->n;
}

/* Record entry a: centers, labels, sums of the assignment just made, and
 * tight bounds of every point ordered by gap class (start[0..TR_NCLS]:
 * class boundaries in order; start[TR_NCLS + 1]: the binade of the
 * largest U). */
static int trace_record(fkm_lloyd_trace *tr, bnd_ws *b, fkm_index_t a, const int32_t *labels,
                        const double *sums, const double *wsums, const loop_ws *ws,
                        const double *centers, const double *X, fkm_index_t n, fkm_index_t d,
                        fkm_index_t k)
{
    const size_t sn = (size_t)n, skd = (size_t)k * (size_t)d;
    fkm_index_t i;
    unsigned char *cls;
    double umax = 0.0;
    int e0 = 0, status = trace_reserve(tr, a + 1);
    if (status != FKM_OK) return status;
    bnd_forget(b, n);
    bnd_refresh(b, NULL, labels, X, ws->ct, ws->shift, n, d, k);
    memcpy(tr->C + (size_t)a * skd, centers, sizeof(double) * skd);
    memcpy(tr->S + (size_t)a * (skd + (size_t)k), sums, sizeof(double) * skd);
    memcpy(tr->S + (size_t)a * (skd + (size_t)k) + skd, wsums, sizeof(double) * (size_t)k);
    memcpy(tr->labels + (size_t)a * sn, labels, sizeof(int32_t) * sn);
    tr->ndiff[a] = n;
    if (a > 0) {
        const int32_t *lp = tr->labels + (size_t)(a - 1) * sn;
        fkm_index_t nd = 0;
        for (i = 0; i < n; i++) nd += labels[i] != lp[i];
        tr->ndiff[a] = nd;
    }
    memcpy(tr->U + (size_t)a * sn, b->U, sizeof(double) * sn);
    memcpy(tr->L + (size_t)a * sn, b->L, sizeof(double) * sn);
    for (i = 0; i < n; i++)
        if (b->U[i] > umax && b->U[i] <= DBL_MAX) umax = b->U[i];
    if (umax > 0.0) (void)frexp(umax, &e0);
    cls = tr->cls + (size_t)a * sn;
    for (i = 0; i < n; i++) cls[i] = (unsigned char)trace_gap_class(b->U[i], b->L[i], e0, b->rel);
    tr->start[(size_t)a * (TR_NCLS + 2) + TR_NCLS + 1] = e0;
    trace_sort(tr, a);
    trace_members(tr, a);
    return FKM_OK;
}

/* Entry a after a rerun scored the nf points flagged into the entry's
 * labels (old[q]: the label of flagged[q] before): their bounds become tight
 * ones for the current centers, moved back to the entry's centers (U + the
 * move of the new center, L - the largest move of the others: bounds for
 * the entry's centers by the triangle inequality), so that the entry keeps
 * proving them.  Their classes follow (the order is rebuilt when one
 * changed).  The entry's sums no longer match its labels: the caller
 * rebases them (or empties the trace). */
FKM_HOT static void trace_refit(fkm_lloyd_trace *tr, bnd_ws *b, fkm_index_t a,
                        const fkm_index_t *flagged, fkm_index_t nf, const int32_t *old,
                        const loop_ws *ws, const double *X, fkm_index_t d, fkm_index_t k,
                        fkm_index_t j1, double m1, double m2)
{
    const size_t sn = (size_t)tr->n;
    int32_t *rl = tr->labels + (size_t)a * sn;
    double *U = tr->U + (size_t)a * sn, *L = tr->L + (size_t)a * sn;
    unsigned char *cls = tr->cls + (size_t)a * sn;
    const int e0 = tr->start[(size_t)a * (TR_NCLS + 2) + TR_NCLS + 1];
    double dl, A, h, Ms;
    fkm_index_t q, c;
    int resort = 0, relabel = 0;
    for (q = 0; q < nf; q++) {  /* the label counts of the neighbouring entries */
        const fkm_index_t p = flagged[q];
        const int32_t o = old[q], v = rl[p];
        if (o == v) continue;
        relabel = 1;
        if (a > 0) {
            const int32_t u = tr->labels[(size_t)(a - 1) * sn + (size_t)p];
            tr->ndiff[a] += (fkm_index_t)(v != u) - (fkm_index_t)(o != u);
        }
        if (a + 1 < tr->len) {
            const int32_t u = tr->labels[(size_t)(a + 1) * sn + (size_t)p];
            tr->ndiff[a + 1] += (fkm_index_t)(v != u) - (fkm_index_t)(o != u);
        }
    }
    if (!bnd_consts(&dl, &A, &h, &Ms, b, ws->ct, ws->shift, k, d)) {
        /* no bounds for these centers: the flagged points prove nothing */
        for (q = 0; q < nf; q++) {
            const fkm_index_t p = flagged[q];
            U[p] = HUGE_VAL;
            L[p] = 0.0;
            resort |= cls[p] != 0;
            cls[p] = 0;
        }
    } else {
        for (q = 0; q < nf; q++) {
            const fkm_index_t p = flagged[q];
            const int32_t ap = rl[p];
            const double *x = X + (size_t)p * (size_t)d;
            const double mo = ap == j1 ? m2 : m1;
            unsigned char cp;
            for (c = 0; c < d; c++) b->xs[c] = x[c] - ws->shift[c];
            bnd_full(b, p, ap, 0x1p-50 * (b->xn[p] + Ms) + BND_TAU, ws->ct, k, d);
            U[p] = bnd_up(b->U[p] + b->move[ap], b->rel);
            L[p] = b->L[p] > 0.0 ? bnd_lower(b->L[p], mo, b->rel) : 0.0;
            cp = (unsigned char)trace_gap_class(U[p], L[p], e0, b->rel);
            resort |= cp != cls[p];
            cls[p] = cp;
        }
    }
    if (resort) trace_sort(tr, a);
    if (relabel) trace_members(tr, a);
}

/* Assignment a (< tr->len) of a rerun, from entry a (see above): its labels
 * become entry a's labels (written in place: the caller reads them there),
 * its sums and weights go to sums, wsums (and S2, entry a).  The nw points
 * jw have weights other than the recording's.  The number of points scored
 * is added to *n_scored; the scored points are refitted in entry a
 * (trace_refit).  old (n) is scratch; dirty (k) and b->need are zero on
 * entry and on exit. */
FKM_HOT static int trace_replay(fkm_lloyd_trace *tr, bnd_ws *b, fkm_index_t a,
                        fkm_index_t *n_scored, double *sums, double *wsums, const loop_ws *ws,
                        unsigned char *dirty, fkm_index_t *flagged, int32_t *old,
                        const fkm_index_t *jw, fkm_index_t nw, const double *centers,
                        const double *X, const double *w, fkm_index_t n, fkm_index_t d,
                        fkm_index_t k)
{
    const size_t sn = (size_t)n, skd = (size_t)k * (size_t)d;
    int32_t *rl = tr->labels + (size_t)a * sn;
    const int32_t *order = tr->order + (size_t)a * sn;
    const int32_t *start = tr->start + (size_t)a * (TR_NCLS + 2);
    const double *U = tr->U + (size_t)a * sn, *L = tr->L + (size_t)a * sn;
    const double *Ca = tr->C + (size_t)a * skd, *Sa = tr->S + (size_t)a * (skd + (size_t)k);
    double dl, A, h, Ms, m1 = 0.0, m2 = 0.0;
    fkm_index_t i, j, q, j1 = -1, nflag = 0, ignored;
    int status = FKM_OK, any_dirty = 0;
    bnd_moves(b, Ca, centers, k, d, &j1, &m1, &m2);  /* since the recording */
    if (bnd_consts(&dl, &A, &h, &Ms, b, ws->ct, ws->shift, k, d) && m1 <= DBL_MAX) {
        const double Emax = A * (h + tr->xnmax) + BND_ETA;
        const double T = bnd_up(2.0 * (m1 + dl) + 2.0 * sqrt(Emax), b->rel) * (1.0 + 0x1p-20);
        const int cT = T <= DBL_MAX ? trace_class(T, start[TR_NCLS + 1]) : TR_NCLS - 1;
        for (q = 0; q < start[cT + 1]; q++) {
            const fkm_index_t p = order[q];
            const int32_t ap = rl[p];
            const double mo = ap == j1 ? m2 : m1;
            const double Up = bnd_up(U[p] + b->move[ap], b->rel);
            const double Lp = L[p] > 0.0 ? bnd_lower(L[p], mo, b->rel) : 0.0;
            const double E = A * (h + b->xn[p]) + BND_ETA;
            if (bnd_keeps(Up, Lp, E, dl, b->rel)) continue;
            b->need[p] = 1;
            flagged[nflag++] = p;
        }
    } else {  /* nothing can be proven: score every point */
        for (i = 0; i < n; i++) {
            b->need[i] = 1;
            flagged[nflag++] = i;
        }
    }
    if (nflag) {
        /* the kernel rewrites whole groups of points: the unflagged ones of
         * a group get their recorded labels again (proven) */
        for (q = 0; q < nflag; q++) old[q] = rl[flagged[q]];
        status = fkm_lloyd_label_f64(rl, &ignored, X, ws->P, 0, n, d, ws->ct, ws->hnorm, k,
                                     b->need);
        for (q = 0; q < nflag; q++) {
            const fkm_index_t p = flagged[q];
            b->need[p] = 0;
            if (rl[p] != old[q]) {
                dirty[rl[p]] = dirty[old[q]] = 1;
                any_dirty = 1;
            }
        }
        if (status != FKM_OK) goto out;
        trace_refit(tr, b, a, flagged, nflag, old, ws, X, d, k, j1, m1, m2);
    }
    for (q = 0; q < nw; q++) {
        dirty[rl[jw[q]]] = 1;
        any_dirty = 1;
    }
    memcpy(sums, Sa, sizeof(double) * skd);
    memcpy(wsums, Sa + skd, sizeof(double) * (size_t)k);
    if (any_dirty) {  /* from entry a's member lists (trace_refit updated them) */
        const int32_t *mem = tr->mem + (size_t)a * sn;
        const int32_t *ms = tr->mstart + (size_t)a * (4 * (size_t)k + 1);
        for (j = 0; j < k; j++) {
            if (!dirty[j]) continue;
            fkm_lloyd_accumulate_members_f64(sums + (size_t)j * (size_t)d, wsums + j, ws->acc, X,
                                             w, mem, ms + 4 * (size_t)j, d);
            tr->last_summed++;
        }
    }
    memcpy(tr->S2 + (size_t)a * (skd + (size_t)k), sums, sizeof(double) * skd);
    memcpy(tr->S2 + (size_t)a * (skd + (size_t)k) + skd, wsums, sizeof(double) * (size_t)k);
    *n_scored += nflag;
out:
    memset(dirty, 0, (size_t)k);
    return status;
}

/* State of one run shared by its assignments. */
typedef struct {
    fkm_lloyd_trace *tr;     /* NULL: untraced */
    bnd_ws *b;               /* bounds workspace (traces, use_bounds), or NULL */
    loop_ws *ws;
    int replay;              /* tr holds a recording this run reruns */
    fkm_index_t len0;        /* its entries */
    fkm_index_t nw;          /* points whose weight is not the recording's ... */
    fkm_index_t *jw;         /* ... listed here */
    fkm_index_t *flagged;    /* scratch of trace_replay (n) */
    unsigned char *dirty;    /* scratch of trace_replay (k, zero) */
    int32_t *old;            /* scratch of trace_replay (n) */
    /* the entries of the trace whose labels are the run's labels and the
     * previous ones (reruns keep them there); -1: in the labels, prev buffers */
    fkm_index_t src, psrc;
    fkm_index_t n_scored;    /* points scored by trace_replay in this run */
    double *sums, *wsums;
    const double *X, *w;
    fkm_index_t n, d, k;
} run_ctx;

/* The labels of entry *e into buf, then *e = -1 (nothing when *e < 0). */
static void run_labels(const run_ctx *r, int32_t *buf, fkm_index_t *e)
{
    if (*e < 0) return;
    memcpy(buf, r->tr->labels + (size_t)*e * (size_t)r->n, sizeof(int32_t) * (size_t)r->n);
    *e = -1;
}

/* Assignment number a (iteration it; the final one has it = the number of
 * iterations run) to centers: labels (prev: the previous ones; r->src and
 * r->psrc say where they are), sums and weights; with mind, the distances
 * and *inert too.  *changed counts the labels that differ from prev.  A
 * replayed assignment leaves its labels in its entry (r->src = a). */
static int run_assign(run_ctx *r, fkm_index_t a, fkm_index_t it, fkm_index_t *changed,
                      int32_t *labels, int32_t *prev, double *mind, double *inert,
                      const double *centers)
{
    const fkm_index_t n = r->n, d = r->d, k = r->k;
    const unsigned char *need = NULL;
    int status;
    pack(r->ws, centers, k, d);
    if (r->replay && a < r->len0) {
        const int32_t *rl = r->tr->labels + (size_t)a * (size_t)n;
        status = trace_replay(r->tr, r->b, a, &r->n_scored, r->sums, r->wsums, r->ws, r->dirty,
                              r->flagged, r->old, r->jw, r->nw, centers, r->X, r->w, n, d, k);
        if (status != FKM_OK) return status;
        if (a > 0 && r->psrc == a - 1) {
            *changed = r->tr->ndiff[a];  /* entries a - 1 and a */
        } else {
            fkm_index_t i, count = 0;
            run_labels(r, prev, &r->psrc);
            for (i = 0; i < n; i++) count += rl[i] != prev[i];
            *changed = count;
        }
        r->src = a;
        if (mind) *inert = fkm_lloyd_distances_f64(mind, r->X, r->ws->P, r->w, rl, centers, n, d);
        return FKM_OK;
    }
    run_labels(r, prev, &r->psrc);
    run_labels(r, labels, &r->src);
    if (!r->tr && it > 0) need = bnd_before(r->b, labels, r->ws, r->X, n, d, k);
    status = assign(changed, labels, mind, inert, r->sums, r->wsums, r->ws, need, centers,
                    r->X, r->w, n, d, k);
    if (status != FKM_OK) return status;
    if (!r->tr && r->b && it > 0)  /* tight bounds of the scored points */
        bnd_refresh(r->b, need, labels, r->X, r->ws->ct, r->ws->shift, n, d, k);
    if (r->tr && !r->replay)
        status = trace_record(r->tr, r->b, a, labels, r->sums, r->wsums, r->ws, centers, r->X,
                              n, d, k);
    return status;
}

static int loop_run(double *centers, int32_t *labels, double *mind,
                    fkm_index_t *n_iter, double *inertia,
                    const double *X, const double *w, fkm_index_t n,
                    fkm_index_t d, fkm_index_t k, fkm_index_t max_iter,
                    double tol_abs, int use_bounds, fkm_lloyd_trace *tr,
                    const double *Pext)
{
    /* fkm_lloyd_loop.h: n, d, k >= 1, max_iter >= 0, finite X and centers,
     * nonnegative weights (unchecked in release builds) */
    FKM_ASSERT(n >= 1 && d >= 1 && k >= 1 && k <= INT32_MAX && max_iter >= 0);
    FKM_ASSERT(centers != NULL && labels != NULL && mind != NULL && n_iter != NULL);
    FKM_ASSERT(inertia != NULL && X != NULL);
    FKM_ASSERT_EACH(t, n * d, isfinite(X[t]));
    FKM_ASSERT_EACH(t, k * d, isfinite(centers[t]));
    FKM_ASSERT_EACH(t, w ? n : 0, w[t] >= 0.0);
    fkm_index_t it, i, j, c, q, a = 0, changed;
    double *sums = malloc(sizeof(double) * (size_t)(k * d + k));
    fkm_index_t *taken = malloc(sizeof(fkm_index_t) * (size_t)k);
    int32_t *prev = malloc(sizeof(int32_t) * (size_t)n);
    unsigned char *empty = malloc((size_t)k), *lost = calloc((size_t)k, 1);
    double total = 0.0;
    int status = FKM_OK;
    int pack_pts = d <= FKM_LLOYD_PACK_MAX_D && n >= 4;
    const fkm_index_t np = (k + FKM_LLOYD_PANEL - 1) / FKM_LLOYD_PANEL;
    loop_ws ws;
    bnd_ws bw;
    run_ctx r;
    memset(&bw, 0, sizeof bw);
    memset(&r, 0, sizeof r);
    r.src = r.psrc = -1;
    if (tr && k < 2) {  /* k = 1: every label is 0, nothing to prove or record */
        tr->len = 0;
        tr->last_scored = tr->last_summed = -1;
        tr = NULL;
    }
    r.ws = &ws, r.sums = sums, r.X = X, r.w = w, r.n = n, r.d = d, r.k = k;
    ws.ct = malloc(sizeof(double) * (size_t)fkm_lloyd_packed_size(k, d));
    ws.hnorm = malloc(sizeof(double) * (size_t)(np * FKM_LLOYD_PANEL));
    ws.shift = malloc(sizeof(double) * (size_t)d);
    ws.P = pack_pts && !tr ? malloc(sizeof(double) * (size_t)(n * d)) : NULL;
    ws.acc = malloc(sizeof(double) * (size_t)fkm_lloyd_acc_scratch(k, d));
    if (!sums || !taken || !prev || !empty || !lost || !ws.ct || !ws.hnorm || !ws.shift ||
        (pack_pts && !tr && !ws.P) || !ws.acc) {
        status = FKM_ENOMEM;
        goto done;
    }
    r.wsums = sums + (size_t)(k * d);
    if ((use_bounds || tr) && k >= 2) {
        bw.rel = (double)(d + 16) * 0x1p-49;
        bw.U = malloc(sizeof(double) * (size_t)n);
        bw.L = malloc(sizeof(double) * (size_t)n);
        bw.xn = tr ? NULL : malloc(sizeof(double) * (size_t)n);
        bw.old = malloc(sizeof(double) * (size_t)(k * d));
        bw.move = malloc(sizeof(double) * (size_t)k);
        bw.xs = malloc(sizeof(double) * (size_t)d);
        bw.acc = malloc(sizeof(double) * (size_t)(np * FKM_LLOYD_PANEL));
        bw.need = calloc((size_t)n, 1);
        if (!bw.U || !bw.L || !(tr || bw.xn) || !bw.old || !bw.move || !bw.xs || !bw.acc ||
            !bw.need) {
            status = FKM_ENOMEM;
            goto done;
        }
        if (tr) {
            status = trace_open(tr, bw.rel, X, n, d, k, pack_pts && !Pext);
            if (status != FKM_OK) goto done;
            ws.P = pack_pts ? (Pext ? (double *)Pext : tr->P) : NULL;  /* not ours */
            bw.xn = tr->xn;
        } else {
            for (i = 0; i < n; i++) {
                const double *x = X + (size_t)i * (size_t)d;
                double ss = 0.0, v;
                for (c = 0; c < d; c++) ss += x[c] * x[c];
                v = bnd_norm(ss, bw.rel);
                bw.xn[i] = v <= BND_BIG ? v : HUGE_VAL;
            }
        }
        bnd_forget(&bw, n);
        r.b = &bw;
    }
    if (tr) {
        r.tr = tr;
        r.dirty = calloc((size_t)k, 1);
        r.jw = malloc(sizeof(fkm_index_t) * (size_t)n);
        r.flagged = malloc(sizeof(fkm_index_t) * (size_t)n);
        r.old = malloc(sizeof(int32_t) * (size_t)n);
        if (!r.dirty || !r.jw || !r.flagged || !r.old) {
            status = FKM_ENOMEM;
            goto done;
        }
        r.len0 = tr->len;
        /* the points whose weight is not the recording's (bit for bit) */
        for (i = 0; r.len0 > 0 && i < n; i++) {
            const double wi = w ? w[i] : 1.0;
            if (memcmp(&wi, tr->w + i, sizeof wi) != 0) r.jw[r.nw++] = i;
        }
        r.replay = r.len0 > 0;
        tr->last_scored = tr->last_summed = r.replay ? 0 : -1;
        if (!r.replay) {  /* this run records (its entries are valid only at the end) */
            r.len0 = tr->len = 0;
            for (i = 0; i < n; i++) tr->w[i] = w ? w[i] : 1.0;
        }
    }
    if (pack_pts && !tr) fkm_lloyd_pack_points_f64(ws.P, X, 0, n, d);
    for (i = 0; i < n; i++) labels[i] = -1;
    *n_iter = 0;
    for (it = 0; it < max_iter; it++) {
        fkm_index_t n_taken = 0;
        double shift = 0.0, unused;
        if (r.src < 0) memcpy(prev, labels, sizeof(int32_t) * (size_t)n);
        r.psrc = r.src;
        status = run_assign(&r, a++, it, &changed, labels, prev, NULL, &unused, centers);
        if (status != FKM_OK) goto done;
        for (j = 0; j < k && r.wsums[j] > 0.0; j++) {}
        if (j < k) {  /* an empty cluster: the distances, to relocate */
            run_labels(&r, prev, &r.psrc);
            run_labels(&r, labels, &r.src);
            (void)fkm_lloyd_distances_f64(mind, X, ws.P, w, labels, centers, n, d);
        }
        if (r.b && !tr) memcpy(bw.old, centers, sizeof(double) * (size_t)(k * d));
        /* the clusters empty after the assignment (decided before any
         * relocation) take the farthest points, in index order */
        for (j = 0; j < k; j++) empty[j] = !(r.wsums[j] > 0.0);
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
            r.wsums[j] = 0.0;
            for (i = 0; i < n; i++) {
                double wi = w ? w[i] : 1.0;
                const double *xi = X + (size_t)i * (size_t)d;
                if (labels[i] != (int32_t)j) continue;
                for (c = 0; c < d; c++) sj[c] += wi * xi[c];
                r.wsums[j] += wi;
            }
            lost[j] = 0;
        }
        for (j = 0; j < k; j++) {
            double *m = centers + (size_t)j * (size_t)d;
            int skip = 0;
            for (q = 0; q < n_taken; q++) skip |= (labels[taken[q]] == (int32_t)j);
            /* no weight left (all its points taken): keeps its center */
            if (skip || !(r.wsums[j] > 0.0)) continue;
            for (c = 0; c < d; c++) {
                double v = sums[(size_t)j * (size_t)d + c] / r.wsums[j];
                shift += (v - m[c]) * (v - m[c]);
                m[c] = v;
            }
        }
        if (r.b && !tr) {  /* a relocated point changed label outside the bounds: start over */
            if (n_taken) bnd_forget(r.b, n);
            else bnd_move(r.b, labels, centers, n, d, k);
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
    if (r.src < 0) memcpy(prev, labels, sizeof(int32_t) * (size_t)n);
    r.psrc = r.src;
    status = run_assign(&r, a++, *n_iter, &changed, labels, prev, mind, &total, centers);
    if (status != FKM_OK) goto done;
    run_labels(&r, labels, &r.src);
    *inertia = total;
    for (j = 0; j < k * d; j++)
        if (!isfinite(centers[j])) status = FKM_ENONFINITE;
    if (!isfinite(total)) status = FKM_ENONFINITE;
    if (tr && status == FKM_OK) {
        if (r.replay) tr->last_scored = r.n_scored;
        if (!r.replay)
            tr->len = a;  /* the recording is complete */
        else if (a > r.len0 || r.n_scored > a * (n / 8))
            tr->len = 0;  /* longer than the recording, or too far from it: record again */
        else {
            /* the entries now hold this run's labels (trace_refit): their sums
             * for this run's weights are this run's (rebase the recording on
             * them; its entries past this run's are dropped) */
            const size_t row = (size_t)k * (size_t)d + (size_t)k;
            memcpy(tr->S, tr->S2, sizeof(double) * row * (size_t)a);
            for (i = 0; i < n; i++) tr->w[i] = w ? w[i] : 1.0;
            tr->len = a;
        }
    }
done:
    if (tr && status != FKM_OK) tr->len = 0;
    free(ws.ct);
    free(ws.hnorm);
    free(ws.shift);
    if (!tr) free(ws.P);
    free(ws.acc);
    free(r.dirty);
    free(r.jw);
    free(r.flagged);
    free(r.old);
    free(sums);
    free(taken);
    free(prev);
    free(empty);
    free(lost);
    free(bw.U);
    free(bw.L);
    if (!tr) free(bw.xn);
    free(bw.old);
    free(bw.move);
    free(bw.xs);
    free(bw.acc);
    free(bw.need);
    return status;
}

int fkm_lloyd_loop_f64(double *centers, int32_t *labels, double *mind,
                       fkm_index_t *n_iter, double *inertia,
                       const double *X, const double *w, fkm_index_t n,
                       fkm_index_t d, fkm_index_t k, fkm_index_t max_iter,
                       double tol_abs, int use_bounds)
{
    return loop_run(centers, labels, mind, n_iter, inertia, X, w, n, d, k, max_iter,
                    tol_abs, use_bounds, NULL, NULL);
}

int fkm_lloyd_loop_traced_f64(double *centers, int32_t *labels, double *mind,
                              fkm_index_t *n_iter, double *inertia,
                              const double *X, const double *w, fkm_index_t n,
                              fkm_index_t d, fkm_index_t k, fkm_index_t max_iter,
                              double tol_abs, fkm_lloyd_trace *trace)
{
    return loop_run(centers, labels, mind, n_iter, inertia, X, w, n, d, k, max_iter,
                    tol_abs, 0, trace, NULL);
}

int fkm_lloyd_loop_traced_packed_f64(double *centers, int32_t *labels, double *mind,
                                     fkm_index_t *n_iter, double *inertia,
                                     const double *X, const double *P, const double *w,
                                     fkm_index_t n, fkm_index_t d, fkm_index_t k,
                                     fkm_index_t max_iter, double tol_abs,
                                     fkm_lloyd_trace *trace)
{
    return loop_run(centers, labels, mind, n_iter, inertia, X, w, n, d, k, max_iter,
                    tol_abs, 0, trace, P);
}

/* ---------------------------------------------------------------------------
 * Hamerly bounds for the blocked assignment of fkm_lloyd.h (fkm_lloyd_loop.h,
 * fkm_lloyd_assign_bounded_f64).  The proof above (test (4)) holds for any
 * range of points scored by fkm_lloyd_assign_masked_f64: it shows that the
 * kernel's computed scores have their unique minimum at the proven label,
 * whichever tile computes them.  Unflagged points are accumulated by
 * fkm_lloyd_assign_masked_f64 exactly as if scored, so the results are bit
 * for bit those of fkm_lloyd_assign_f64.
 * ------------------------------------------------------------------------- */

static double bnd_rel(fkm_index_t d) { return (double)(d + 16) * 0x1p-49; }

/* The kernel's score hnorm_j - <x, v_j> of x for every lane of the np
 * packed panels, into acc (one multiply-add per coordinate and center: half
 * the work of bnd_dist_all). */
static inline void bnd_scores(double *restrict acc, const double *restrict x,
                              const double *restrict ct, const double *restrict hnorm,
                              fkm_index_t np, fkm_index_t d)
{
    const size_t stride = (size_t)d * FKM_LLOYD_PANEL; /* doubles per panel */
    fkm_index_t p = 0, j, t;
    /* Four panels at a time: eight independent multiply-add chains keep
     * the FMA units busy (two chains would wait on their latency). */
    for (; p + 4 <= np; p += 4) {
        const double *pc = ct + (size_t)p * stride;
        bnd_v4d a[8] = {{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0},
                        {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}};
        for (j = 0; j < d; j++) {
            const double xj = x[j];
            const double *cj = pc + (size_t)j * FKM_LLOYD_PANEL;
            for (t = 0; t < 4; t++) {
                a[2 * t] += xj * *(const bnd_v4d *)(cj + (size_t)t * stride);
                a[2 * t + 1] += xj * *(const bnd_v4d *)(cj + (size_t)t * stride + 4);
            }
        }
        for (t = 0; t < 8; t++)
            *(bnd_v4d *)(acc + p * FKM_LLOYD_PANEL + 4 * t) =
                *(const bnd_v4d *)(hnorm + p * FKM_LLOYD_PANEL + 4 * t) - a[t];
    }
    for (; p < np; p++) {
        const double *pc = ct + (size_t)p * stride;
        bnd_v4d a0 = {0, 0, 0, 0}, a1 = {0, 0, 0, 0};
        for (j = 0; j < d; j++) {
            const double xj = x[j];
            a0 += xj * *(const bnd_v4d *)(pc + (size_t)j * FKM_LLOYD_PANEL);
            a1 += xj * *(const bnd_v4d *)(pc + (size_t)j * FKM_LLOYD_PANEL + 4);
        }
        *(bnd_v4d *)(acc + p * FKM_LLOYD_PANEL) = *(const bnd_v4d *)(hnorm + p * FKM_LLOYD_PANEL) - a0;
        *(bnd_v4d *)(acc + p * FKM_LLOYD_PANEL + 4) =
            *(const bnd_v4d *)(hnorm + p * FKM_LLOYD_PANEL + 4) - a1;
    }
}

/* Tight bounds U, L of point x (id i, label a) from scores (the score form
 * of bnd_full).  With K = 1/2 ||x - s||^2 (exact), the exact score of
 * center j is 1/2 ||x - c^_j||^2 - K by (1), and a computed score is within
 * E of it by (2), whatever the order of its sums; so
 *     ||x - c^_j||^2 <= 2 (score~_j + E + K),  >= 2 (score~_j - E + K),
 * and ||x - c_j|| is within dl of ||x - c^_j|| by (3).  K is bracketed by
 * the computed 1/2 sum fl(x - s)^2 moved by rel (each fl(x - s) is within
 * relative u of x - s; the sum of d squares within gamma_d) and eta
 * (underflow).  The sum T of the three terms is rounded twice: its error is
 * at most 2u (1 + 2u) B, B the sum of their absolute values; the slack
 * rel B (rel >= 272 u) covers it and the rounding of T +- rel B.  sqrt and
 * the final additions are covered by up/down as in bnd_full. */
static inline void bnd_tight(bnd_ws *b, fkm_index_t i, int32_t a, const double *x,
                             const double *ct, const double *hnorm, const double *shift,
                             fkm_index_t k, fkm_index_t d, double E, double dl)
{
    const fkm_index_t np = (k + FKM_LLOYD_PANEL - 1) / FKM_LLOYD_PANEL;
    const double rel = b->rel;
    double ss = 0.0, m = HUGE_VAL, sa, Kup, Kdn, T, B, t, U;
    fkm_index_t j, c;
    int nan = 0;
    bnd_scores(b->acc, x, ct, hnorm, np, d);
    for (c = 0; c < d; c++) {
        const double y = x[c] - shift[c];
        ss += y * y;
    }
    Kup = bnd_up(0.5 * ss, rel) + BND_ETA;
    Kdn = bnd_down(0.5 * ss, rel) - BND_ETA;
    sa = b->acc[a];
    b->acc[a] = HUGE_VAL;
    for (j = 0; j < k; j++) {
        const double v = b->acc[j];
        nan |= v != v;
        m = v < m ? v : m;
    }
    T = (sa + E) + Kup;
    B = bnd_up(fabs(sa) + E + Kup, rel);
    t = T + rel * B;
    U = bnd_up(sqrt(2.0 * (t > 0.0 ? t : 0.0)) + dl + BND_TAU, rel);
    b->U[i] = U <= DBL_MAX ? U : HUGE_VAL; /* NaN: no bound */
    b->L[i] = 0.0;
    if (nan || !(m <= DBL_MAX)) return;
    T = (m - E) + Kdn;
    B = bnd_up(fabs(m) + E + fabs(Kdn), rel);
    t = T - rel * B;
    if (t > 0.0) b->L[i] = bnd_lower(sqrt(2.0 * t), dl, rel);
}

void fkm_lloyd_bounds_norms_f64(double *xn, const double *X, fkm_index_t lo, fkm_index_t hi,
                                fkm_index_t d)
{
    const double rel = bnd_rel(d);
    fkm_index_t i, c;
    FKM_ASSERT(0 <= lo && lo <= hi && d >= 1);
    for (i = lo; i < hi; i++) {
        const double *x = X + (size_t)i * (size_t)d;
        double ss = 0.0, v;
        for (c = 0; c < d; c++) ss += x[c] * x[c];
        v = bnd_norm(ss, rel);
        xn[i] = v <= BND_BIG ? v : HUGE_VAL;
    }
}

void fkm_lloyd_bounds_moves_f64(double *move, fkm_index_t *j1, double *m1, double *m2,
                                const double *old, const double *centers, fkm_index_t k,
                                fkm_index_t d)
{
    bnd_ws b;
    FKM_ASSERT(k >= 1 && d >= 1);
    memset(&b, 0, sizeof b);
    b.rel = bnd_rel(d);
    b.move = move;
    bnd_moves(&b, old, centers, k, d, j1, m1, m2);
}

FKM_HOT int fkm_lloyd_assign_bounded_f64(
    int32_t *labels, fkm_index_t *n_changed, fkm_index_t *n_scored, double *mind,
    double *sums, double *wsums, double *inertia, double *U, double *L,
    unsigned char *need, const double *X, const double *P, const double *w,
    const double *xn, fkm_index_t lo, fkm_index_t hi, fkm_index_t d, const double *ct,
    const double *hnorm, const double *shift, const double *centers, fkm_index_t k,
    const double *move, fkm_index_t j1, double m1, double m2)
{
    FKM_ASSERT(0 <= lo && lo <= hi && d >= 1 && k >= 1 && k <= INT32_MAX);
    const fkm_index_t np = (k + FKM_LLOYD_PANEL - 1) / FKM_LLOYD_PANEL;
    double dl = 0.0, A = 0.0, h = 0.0, Ms = 0.0;
    fkm_index_t i, c, scored = 0;
    int status, have;
    bnd_ws b;
    if (P && lo % 4 != 0) return FKM_EDOM;
    memset(&b, 0, sizeof b);
    b.rel = bnd_rel(d);
    b.U = U, b.L = L, b.xn = (double *)xn, b.need = need;
    b.xs = malloc(sizeof(double) * (size_t)d);
    b.acc = malloc(sizeof(double) * (size_t)(np * FKM_LLOYD_PANEL));
    if (!b.xs || !b.acc) {
        free(b.xs);
        free(b.acc);
        return FKM_ENOMEM;
    }
    have = bnd_consts(&dl, &A, &h, &Ms, &b, ct, shift, k, d);
    /* Flag the points whose (moved) bounds do not prove their label; every
     * point without valid bounds (move NULL, norms too large, a label out of
     * range) is flagged. */
    for (i = lo; i < hi; i++) {
        const int32_t a = labels[i];
        double Ui, Li, E;
        need[i] = 1;
        if (!move || !have || a < 0 || a >= k) {
            scored++;
            continue;
        }
        Ui = bnd_up(U[i] + move[a], b.rel);
        Li = L[i] > 0.0 ? bnd_lower(L[i], a == j1 ? m2 : m1, b.rel) : 0.0;
        U[i] = Ui, L[i] = Li;
        E = A * (h + xn[i]) + BND_ETA;
        if (bnd_keeps(Ui, Li, E, dl, b.rel)) {
            need[i] = 0;
            continue;
        }
        if (Li > 0.0) { /* tighten U alone (the distance to center a) */
            const double *x = X + (size_t)i * (size_t)d;
            const double *pc = ct + (size_t)(a / FKM_LLOYD_PANEL) * (size_t)d * FKM_LLOYD_PANEL +
                               a % FKM_LLOYD_PANEL;
            const double sig = 0x1p-50 * (xn[i] + Ms) + BND_TAU;
            double ss = 0.0;
            for (c = 0; c < d; c++) {
                double t = (x[c] - shift[c]) - pc[(size_t)c * FKM_LLOYD_PANEL];
                ss += t * t;
            }
            U[i] = bnd_up(sqrt(ss) + sig, b.rel);
            if (bnd_keeps(U[i], Li, E, dl, b.rel)) {
                need[i] = 0;
                continue;
            }
        }
        /* tight bounds for label a (cheaper than scoring the point's group
         * and refreshing its bounds after) */
        scored++;
        bnd_tight(&b, i, a, X + (size_t)i * (size_t)d, ct, hnorm, shift, k, d, E, dl);
        if (bnd_keeps(U[i], L[i], E, dl, b.rel)) need[i] = 0;
    }
    status = fkm_lloyd_assign_masked_f64(labels, n_changed, mind, sums, wsums, inertia, X, P, w,
                                         lo, hi, d, ct, hnorm, centers, k,
                                         move && have ? need : NULL);
    if (status == FKM_OK) {
        /* tight bounds of the flagged points for their new labels */
        for (i = lo; i < hi; i++) {
            const double *x = X + (size_t)i * (size_t)d;
            if (!need[i]) continue;
            if (!have) {
                U[i] = HUGE_VAL, L[i] = 0.0;
                continue;
            }
            bnd_tight(&b, i, labels[i], x, ct, hnorm, shift, k, d,
                      A * (h + xn[i]) + BND_ETA, dl);
        }
    }
    *n_scored = scored;
    free(b.xs);
    free(b.acc);
    return status;
}
