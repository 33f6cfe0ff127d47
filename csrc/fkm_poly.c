/* fkm_poly.c -- polynomial arithmetic over F_p: NTT, multiplication,
 * Newton inversion and division, gcd, modular powering (see fkm_poly.h). */
#include "fkm_poly.h"

#include <stdlib.h>
#include <string.h>

/* Below these operand lengths the quadratic methods win. */
#define MUL_SCHOOL_CUT 40
#define KARA_CUT 32
#define INV_NEWTON_CUT 64
#define DIV_NEWTON_CUT 96
#define POWMOD_NTT_CUT 128

/* ------------------------------------------------------------------ */
/* growable polynomials                                                */

void fkm_poly_init(fkm_poly_t *P)
{
    FKM_ASSERT(P != NULL);
    P->c = NULL;
    P->len = 0;
    P->cap = 0;
}

void fkm_poly_clear(fkm_poly_t *P)
{
    FKM_ASSERT(P != NULL);
    free(P->c);
    fkm_poly_init(P);
}

int fkm_poly_fit(fkm_poly_t *P, int64_t cap)
{
    FKM_ASSERT(P != NULL && P->cap >= 0);
    if (cap <= P->cap)
        return FKM_OK;
    if (cap < 2 * P->cap)
        cap = 2 * P->cap;
    uint64_t *c = realloc(P->c, (size_t)cap * sizeof *c);
    if (!c)
        return FKM_ENOMEM;
    P->c = c;
    P->cap = cap;
    return FKM_OK;
}

int fkm_poly_set(fkm_poly_t *P, const uint64_t *a, int64_t la)
{
    FKM_ASSERT(P != NULL && la >= 0 && (la == 0 || a != NULL));
    if (fkm_poly_fit(P, la > 0 ? la : 1))
        return FKM_ENOMEM;
    if (la > 0 && P->c != a)
        memmove(P->c, a, (size_t)la * sizeof *a);
    P->len = la;
    return FKM_OK;
}

void fkm_poly_swap(fkm_poly_t *A, fkm_poly_t *B)
{
    FKM_ASSERT(A != NULL && B != NULL);
    fkm_poly_t t = *A;
    *A = *B;
    *B = t;
}

/* ------------------------------------------------------------------ */
/* context and NTT tables                                              */

int fkm_pctx_init(fkm_pctx_t *C, uint64_t p)
{
    FKM_ASSERT(C != NULL);
    memset(C, 0, sizeof *C);
    C->ntt_log = -1;
    int st = fkm_field_init(&C->F, p);
    if (st)
        return st;
    if (p > 2 && p < ((uint64_t)1 << 62)) {
        int k = __builtin_ctzll(p - 1);
        if (k >= 4) {
            /* a quadratic non-residue g gives a root of order 2^k */
            uint64_t g = 2;
            while (fkm_powmod(g, (p - 1) / 2, C->F) == 1)
                g++;
            C->two_adicity = k;
            C->root = fkm_powmod(g, (p - 1) >> k, C->F);
        }
    }
    return FKM_OK;
}

void fkm_pctx_clear(fkm_pctx_t *C)
{
    FKM_ASSERT(C != NULL);
    free(C->tw);
    free(C->twpre);
    free(C->itw);
    free(C->itwpre);
    C->tw = C->twpre = C->itw = C->itwpre = NULL;
    C->ntt_log = -1;
}

static int ceil_log2(int64_t n)
{
    int L = 0;
    while (((int64_t)1 << L) < n)
        L++;
    return L;
}

static int ntt_tables(fkm_pctx_t *C, int L)
{
    fkm_field_t F = C->F;
    size_t n = (size_t)1 << L;
    uint64_t *tw = malloc(n * sizeof *tw), *twpre = malloc(n * sizeof *tw);
    uint64_t *itw = malloc(n * sizeof *tw), *itwpre = malloc(n * sizeof *tw);
    if (!tw || !twpre || !itw || !itwpre) {
        free(tw);
        free(twpre);
        free(itw);
        free(itwpre);
        return FKM_ENOMEM;
    }
    tw[0] = itw[0] = 1; /* unused slot */
    twpre[0] = itwpre[0] = fkm_shoup_pre(1, F);
    for (size_t len = 1; len < n; len <<= 1) {
        /* w = primitive (2 len)-th root */
        int lg = __builtin_ctzll(2 * len);
        uint64_t w = C->root;
        for (int i = lg; i < C->two_adicity; i++)
            w = fkm_mulmod(w, w, F);
        uint64_t iw = fkm_invmod(w, F);
        uint64_t x = 1, ix = 1;
        for (size_t j = 0; j < len; j++) {
            tw[len + j] = x;
            twpre[len + j] = fkm_shoup_pre(x, F);
            itw[len + j] = ix;
            itwpre[len + j] = fkm_shoup_pre(ix, F);
            x = fkm_mulmod(x, w, F);
            ix = fkm_mulmod(ix, iw, F);
        }
    }
    fkm_pctx_clear(C);
    C->tw = tw;
    C->twpre = twpre;
    C->itw = itw;
    C->itwpre = itwpre;
    C->ntt_log = L;
    return FKM_OK;
}

int fkm_pctx_reserve(fkm_pctx_t *C, int64_t len)
{
    FKM_ASSERT(C != NULL);
    if (!C->two_adicity || len < 2)
        return FKM_OK;
    int L = ceil_log2(len);
    if (L > C->two_adicity || L <= C->ntt_log)
        return FKM_OK;
    return ntt_tables(C, L < 10 ? 10 : L);
}

static int ntt_ok(const fkm_pctx_t *C, int64_t len)
{
    return C->two_adicity && ceil_log2(len) <= C->two_adicity;
}

/* Forward transform of a[0 .. 2^L) in place: natural order in ([0, p)),
 * bit-reversed order out ([0, p)).  Decimation in frequency. */
static void ntt_fwd(const fkm_pctx_t *C, uint64_t *a, int L)
{
    const uint64_t p = C->F.p, p2 = 2 * p;
    const size_t n = (size_t)1 << L;
    for (size_t len = n >> 1; len >= 1; len >>= 1) {
        const uint64_t *w = C->tw + len, *wp = C->twpre + len;
        for (size_t s = 0; s < n; s += 2 * len) {
            uint64_t *x = a + s, *y = a + s + len;
            for (size_t j = 0; j < len; j++) {
                uint64_t u = x[j], v = y[j];
                uint64_t t = u + v;
                x[j] = t >= p2 ? t - p2 : t;
                y[j] = fkm_mul_shoup_lazy(u - v + p2, w[j], wp[j], p);
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t t = a[i];
        t = t >= p2 ? t - p2 : t;
        a[i] = t >= p ? t - p : t;
    }
}

/* Inverse transform: bit-reversed in ([0, 2p)), natural order out, each
 * value multiplied by scale (Shoup pair) and reduced to [0, p).  Pass
 * scale = 2^-L to get the true inverse. */
static void ntt_inv(const fkm_pctx_t *C, uint64_t *a, int L, uint64_t scale,
                    uint64_t scale_pre)
{
    const uint64_t p = C->F.p, p2 = 2 * p;
    const size_t n = (size_t)1 << L;
    for (size_t len = 1; len < n; len <<= 1) {
        const uint64_t *w = C->itw + len, *wp = C->itwpre + len;
        for (size_t s = 0; s < n; s += 2 * len) {
            uint64_t *x = a + s, *y = a + s + len;
            for (size_t j = 0; j < len; j++) {
                uint64_t u = x[j];
                uint64_t t = fkm_mul_shoup_lazy(y[j], w[j], wp[j], p);
                uint64_t r = u + t;
                x[j] = r >= p2 ? r - p2 : r;
                r = u - t + p2;
                y[j] = r >= p2 ? r - p2 : r;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        a[i] = fkm_mul_shoup(a[i], scale, scale_pre, p);
}

static void inv_scale(const fkm_pctx_t *C, int L, uint64_t *s, uint64_t *spre)
{
    /* 2^-L = (p+1)/2 to the L-th power */
    uint64_t h = (C->F.p + 1) / 2;
    *s = fkm_powmod(h, (uint64_t)L, C->F);
    *spre = fkm_shoup_pre(*s, C->F);
}

static void pointwise(uint64_t *a, const uint64_t *b, size_t n, fkm_field_t F)
{
    for (size_t i = 0; i < n; i++)
        a[i] = fkm_mulmod(a[i], b[i], F);
}

/* Product through one NTT of size 2^L >= la + lb - 1, tables present. */
static int mul_ntt(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                   const uint64_t *b, int64_t lb, int64_t nout, uint64_t *out)
{
    int L = ceil_log2(la + lb - 1);
    int st = fkm_pctx_reserve(C, (int64_t)1 << L);
    if (st)
        return st;
    size_t n = (size_t)1 << L;
    uint64_t *fa = malloc(n * sizeof *fa);
    uint64_t *fb = (a == b && la == lb) ? fa : malloc(n * sizeof *fb);
    if (!fa || !fb) {
        free(fa);
        if (fb != fa)
            free(fb);
        return FKM_ENOMEM;
    }
    memcpy(fa, a, (size_t)la * sizeof *a);
    memset(fa + la, 0, (n - (size_t)la) * sizeof *a);
    ntt_fwd(C, fa, L);
    if (fb != fa) {
        memcpy(fb, b, (size_t)lb * sizeof *b);
        memset(fb + lb, 0, (n - (size_t)lb) * sizeof *b);
        ntt_fwd(C, fb, L);
    }
    pointwise(fa, fb, n, C->F);
    uint64_t s, spre;
    inv_scale(C, L, &s, &spre);
    ntt_inv(C, fa, L, s, spre);
    memcpy(out, fa, (size_t)nout * sizeof *out);
    free(fa);
    if (fb != fa)
        free(fb);
    return FKM_OK;
}

/* ------------------------------------------------------------------ */
/* schoolbook and Karatsuba                                            */

/* out[k] for k < nout of a * b, lazily reduced (la, lb >= 1). */
static void mul_school(const uint64_t *a, int64_t la, const uint64_t *b,
                       int64_t lb, int64_t nout, uint64_t *out, fkm_field_t F)
{
    for (int64_t k = 0; k < nout; k++) {
        int64_t i0 = k - (lb - 1) > 0 ? k - (lb - 1) : 0;
        int64_t i1 = k < la - 1 ? k : la - 1;
        fkm_acc_t A = {0, 0};
        for (int64_t i = i0; i <= i1; i++)
            fkm_acc_addmul(&A, a[i], b[k - i]);
        out[k] = fkm_acc_reduce(&A, F);
    }
}

/* out[0 .. 2n-2] = a * b for two length-n operands; scratch of 6n words. */
static void kara(const uint64_t *a, const uint64_t *b, int64_t n,
                 uint64_t *out, uint64_t *scratch, fkm_field_t F)
{
    if (n <= KARA_CUT) {
        mul_school(a, n, b, n, 2 * n - 1, out, F);
        return;
    }
    int64_t h = n / 2, h2 = n - h; /* h2 >= h */
    uint64_t *sa = scratch, *sb = scratch + h2, *mid = scratch + 2 * h2;
    uint64_t *rest = scratch + 2 * h2 + (2 * h2 - 1);
    /* z0 = a0 b0 -> out[0 .. 2h-2], z2 = a1 b1 -> out[2h .. 2n-2] */
    kara(a, b, h, out, rest, F);
    out[2 * h - 1] = 0;
    kara(a + h, b + h, h2, out + 2 * h, rest, F);
    for (int64_t i = 0; i < h2; i++) {
        sa[i] = i < h ? fkm_addmod(a[i], a[h + i], F) : a[h + i];
        sb[i] = i < h ? fkm_addmod(b[i], b[h + i], F) : b[h + i];
    }
    kara(sa, sb, h2, mid, rest, F);
    for (int64_t i = 0; i < 2 * h - 1; i++)
        mid[i] = fkm_submod(mid[i], out[i], F);
    for (int64_t i = 0; i < 2 * h2 - 1; i++)
        mid[i] = fkm_submod(mid[i], out[2 * h + i], F);
    for (int64_t i = 0; i < 2 * h2 - 1; i++)
        out[h + i] = fkm_addmod(out[h + i], mid[i], F);
}

static int mul_kara(const uint64_t *a, int64_t la, const uint64_t *b,
                    int64_t lb, int64_t nout, uint64_t *out, fkm_field_t F)
{
    /* split the longer operand into chunks of the shorter one's length */
    if (la < lb) {
        const uint64_t *t = a;
        a = b;
        b = t;
        int64_t tl = la;
        la = lb;
        lb = tl;
    }
    int64_t n = lb;
    uint64_t *buf = malloc((size_t)(2 * n + 2 * n + 8 * n + 64) * sizeof *buf);
    uint64_t *full = calloc((size_t)(la + lb - 1), sizeof *full);
    if (!buf || !full) {
        free(buf);
        free(full);
        return FKM_ENOMEM;
    }
    uint64_t *pa = buf, *prod = buf + n, *scratch = buf + 3 * n;
    for (int64_t off = 0; off < la; off += n) {
        int64_t c = la - off < n ? la - off : n;
        memcpy(pa, a + off, (size_t)c * sizeof *pa);
        memset(pa + c, 0, (size_t)(n - c) * sizeof *pa);
        kara(pa, b, n, prod, scratch, F);
        int64_t lim = c + lb - 1;
        for (int64_t i = 0; i < lim; i++)
            full[off + i] = fkm_addmod(full[off + i], prod[i], F);
    }
    memcpy(out, full, (size_t)nout * sizeof *out);
    free(buf);
    free(full);
    return FKM_OK;
}

/* First nout coefficients of a * b (nout <= la + lb - 1). */
static int mul_trunc(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                     const uint64_t *b, int64_t lb, int64_t nout, uint64_t *out)
{
    if (la > nout)
        la = nout;
    if (lb > nout)
        lb = nout;
    int64_t lmin = la < lb ? la : lb;
    if (lmin < MUL_SCHOOL_CUT) {
        mul_school(a, la, b, lb, nout, out, C->F);
        return FKM_OK;
    }
    if (ntt_ok(C, la + lb - 1))
        return mul_ntt(C, a, la, b, lb, nout, out);
    return mul_kara(a, la, b, lb, nout, out, C->F);
}

int fkm_poly_mul(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                 const uint64_t *b, int64_t lb, uint64_t *out)
{
    FKM_ASSERT(C != NULL);
    FKM_ASSERT(la < 1 || lb < 1 || (a != NULL && b != NULL && out != NULL));
    if (la < 1 || lb < 1)
        return FKM_EDOM;
    return mul_trunc(C, a, la, b, lb, la + lb - 1, out);
}

int fkm_poly_mullow(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                    const uint64_t *b, int64_t lb, int64_t n, uint64_t *out)
{
    FKM_ASSERT(C != NULL && la >= 0 && lb >= 0);
    FKM_ASSERT(n <= 0 || out != NULL);
    FKM_ASSERT((la == 0 || a != NULL) && (lb == 0 || b != NULL));
    if (n <= 0)
        return FKM_OK;
    if (la < 1 || lb < 1) {
        memset(out, 0, (size_t)n * sizeof *out);
        return FKM_OK;
    }
    int64_t full = la + lb - 1;
    int64_t k = full < n ? full : n;
    int st = mul_trunc(C, a, la, b, lb, k, out);
    if (k < n)
        memset(out + k, 0, (size_t)(n - k) * sizeof *out);
    return st;
}

/* ------------------------------------------------------------------ */
/* inversion and division                                              */

int fkm_poly_inv_series(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                        int64_t n, uint64_t *out)
{
    FKM_ASSERT(C != NULL && (la < 1 || a != NULL) && (n <= 0 || out != NULL));
    fkm_field_t F = C->F;
    if (la < 1 || a[0] == 0)
        return FKM_EDOM;
    if (n <= 0)
        return FKM_OK;
    uint64_t i0 = fkm_invmod(a[0], F);
    uint64_t ni0 = fkm_negmod(i0, F), ni0pre = fkm_shoup_pre(ni0, F);
    int64_t base = n < INV_NEWTON_CUT ? n : INV_NEWTON_CUT;
    /* direct recurrence for the first coefficients */
    out[0] = i0;
    for (int64_t i = 1; i < base; i++) {
        fkm_acc_t A = {0, 0};
        int64_t jmax = i < la - 1 ? i : la - 1;
        for (int64_t j = 1; j <= jmax; j++)
            fkm_acc_addmul(&A, a[j], out[i - j]);
        out[i] = fkm_mul_shoup(fkm_acc_reduce(&A, F), ni0, ni0pre, F.p);
    }
    if (base == n)
        return FKM_OK;
    uint64_t *e = malloc((size_t)(2 * n) * sizeof *e);
    if (!e)
        return FKM_ENOMEM;
    uint64_t *t = e + n;
    int64_t k = base;
    int st = FKM_OK;
    while (k < n) {
        int64_t k2 = 2 * k < n ? 2 * k : n;
        /* e = a g mod x^k2, whose first k coefficients are 1, 0, ..., 0 */
        st = fkm_poly_mullow(C, a, la < k2 ? la : k2, out, k, k2, e);
        if (st)
            break;
        /* g[k .. k2) = -(g * e[k .. k2)) mod x^(k2-k) */
        st = fkm_poly_mullow(C, out, k, e + k, k2 - k, k2 - k, t);
        if (st)
            break;
        for (int64_t i = 0; i < k2 - k; i++)
            out[k + i] = fkm_negmod(t[i], F);
        k = k2;
    }
    free(e);
    return st;
}

/* Schoolbook division in place: w (la words) becomes the remainder in
 * w[0 .. lb-2] (higher words zeroed); the quotient goes to q if not NULL. */
static void reduce_school(uint64_t *w, int64_t la, const uint64_t *b, int64_t lb,
                          uint64_t *q, fkm_field_t F)
{
    uint64_t ilc = fkm_invmod(b[lb - 1], F);
    for (int64_t i = la - 1; i >= lb - 1; i--) {
        uint64_t c = fkm_mulmod(w[i], ilc, F);
        if (q)
            q[i - lb + 1] = c;
        if (c == 0)
            continue;
        uint64_t nc = F.p - c, ncpre = fkm_shoup_pre(nc, F);
        uint64_t *wi = w + i - lb + 1;
        for (int64_t j = 0; j < lb - 1; j++)
            wi[j] = fkm_addmod(wi[j], fkm_mul_shoup(b[j], nc, ncpre, F.p), F);
        w[i] = 0;
    }
}

static void divrem_school(const uint64_t *a, int64_t la, const uint64_t *b,
                          int64_t lb, uint64_t *q, uint64_t *r, uint64_t *w,
                          fkm_field_t F)
{
    /* w: working copy of a (la words) */
    memcpy(w, a, (size_t)la * sizeof *w);
    reduce_school(w, la, b, lb, q, F);
    if (r)
        memcpy(r, w, (size_t)(lb - 1) * sizeof *r);
}

/* q from the reversed-inverse of b (binv = rev(b)^-1 mod x^lq). */
static int quotient_preinv(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                           int64_t lb, const uint64_t *binv, uint64_t *q)
{
    int64_t lq = la - lb + 1;
    if (lq <= 0)
        return FKM_OK;
    uint64_t *ra = calloc((size_t)(2 * lq), sizeof *ra);
    if (!ra)
        return FKM_ENOMEM;
    uint64_t *rq = ra + lq;
    for (int64_t i = 0; i < lq; i++)
        ra[i] = a[la - 1 - i];
    int st = fkm_poly_mullow(C, ra, lq, binv, lq, lq, rq);
    for (int64_t i = 0; i < lq && !st; i++)
        q[i] = rq[lq - 1 - i];
    free(ra);
    return st;
}

/* r = (a - q b) mod x^(lb-1). */
static int remainder_from_q(fkm_pctx_t *C, const uint64_t *a, const uint64_t *b,
                            int64_t lb, const uint64_t *q, int64_t lq,
                            uint64_t *r)
{
    int64_t n = lb - 1;
    if (n == 0)
        return FKM_OK;
    uint64_t *t = malloc((size_t)n * sizeof *t);
    if (!t)
        return FKM_ENOMEM;
    int st = fkm_poly_mullow(C, q, lq, b, lb, n, t);
    for (int64_t i = 0; i < n && !st; i++)
        r[i] = fkm_submod(a[i], t[i], C->F);
    free(t);
    return st;
}

int fkm_poly_divrem(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                    const uint64_t *b, int64_t lb, uint64_t *q, uint64_t *r)
{
    FKM_ASSERT(C != NULL && (la < 1 || a != NULL) && (lb < 1 || b != NULL));
    if (lb < 1 || la < lb || b[lb - 1] == 0)
        return FKM_EDOM;
    int64_t lq = la - lb + 1;
    int st;
    if (lq < DIV_NEWTON_CUT || lb < DIV_NEWTON_CUT) {
        uint64_t *w = malloc((size_t)la * sizeof *w);
        if (!w)
            return FKM_ENOMEM;
        divrem_school(a, la, b, lb, q, r, w, C->F);
        free(w);
        return FKM_OK;
    }
    uint64_t *buf = malloc((size_t)(2 * lq) * sizeof *buf);
    if (!buf)
        return FKM_ENOMEM;
    uint64_t *binv = buf, *qq = q ? q : buf + lq;
    uint64_t *rb = malloc((size_t)lq * sizeof *rb);
    if (!rb) {
        free(buf);
        return FKM_ENOMEM;
    }
    int64_t m = lb < lq ? lb : lq;
    for (int64_t i = 0; i < m; i++)
        rb[i] = b[lb - 1 - i];
    st = fkm_poly_inv_series(C, rb, m, lq, binv);
    free(rb);
    if (!st)
        st = quotient_preinv(C, a, la, lb, binv, qq);
    if (!st && r)
        st = remainder_from_q(C, a, b, lb, qq, lq, r);
    free(buf);
    return st;
}

/* ------------------------------------------------------------------ */
/* gcd                                                                 */

static void make_monic(uint64_t *a, int64_t la, fkm_field_t F)
{
    if (la == 0 || a[la - 1] == 1)
        return;
    uint64_t il = fkm_invmod(a[la - 1], F), ilpre = fkm_shoup_pre(il, F);
    for (int64_t i = 0; i < la; i++)
        a[i] = fkm_mul_shoup(a[i], il, ilpre, F.p);
}

/* In place a <- a mod b (b monic-or-not, lb >= 1, normalized); a->len
 * normalized afterwards.  Uses a scratch polynomial for the fast path. */
static int rem_inplace(fkm_pctx_t *C, fkm_poly_t *A, const uint64_t *b,
                       int64_t lb, fkm_poly_t *tmp)
{
    if (A->len < lb)
        return FKM_OK;
    int64_t lq = A->len - lb + 1;
    int st;
    if (lq < DIV_NEWTON_CUT || lb < DIV_NEWTON_CUT) {
        reduce_school(A->c, A->len, b, lb, NULL, C->F);
    } else {
        if ((st = fkm_poly_fit(tmp, lb)))
            return st;
        if ((st = fkm_poly_divrem(C, A->c, A->len, b, lb, NULL, tmp->c)))
            return st;
        memcpy(A->c, tmp->c, (size_t)(lb - 1) * sizeof *tmp->c);
    }
    A->len = fkm_poly_normlen(A->c, lb - 1);
    return FKM_OK;
}

int fkm_poly_gcd_classical(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                           const uint64_t *b, int64_t lb, fkm_poly_t *G)
{
    FKM_ASSERT(C != NULL && G != NULL && la >= 0 && lb >= 0);
    FKM_ASSERT((la == 0 || a != NULL) && (lb == 0 || b != NULL));
    fkm_poly_t R0, R1, T;
    fkm_poly_init(&R0);
    fkm_poly_init(&R1);
    fkm_poly_init(&T);
    la = fkm_poly_normlen(a, la);
    lb = fkm_poly_normlen(b, lb);
    int st = fkm_poly_set(&R0, a, la);
    if (!st)
        st = fkm_poly_set(&R1, b, lb);
    while (!st && R1.len > 0) {
        st = rem_inplace(C, &R0, R1.c, R1.len, &T);
        fkm_poly_swap(&R0, &R1);
    }
    if (!st) {
        make_monic(R0.c, R0.len, C->F);
        st = fkm_poly_set(G, R0.c, R0.len);
    }
    fkm_poly_clear(&R0);
    fkm_poly_clear(&R1);
    fkm_poly_clear(&T);
    return st;
}

/* D = D - Q * E (all polynomials; D grows as needed). */
static int sub_mul(fkm_pctx_t *C, fkm_poly_t *D, const fkm_poly_t *Q,
                   const fkm_poly_t *E, fkm_poly_t *tmp)
{
    if (Q->len == 0 || E->len == 0)
        return FKM_OK;
    int64_t lp = Q->len + E->len - 1;
    int st = fkm_poly_fit(tmp, lp);
    if (!st)
        st = fkm_poly_mul(C, Q->c, Q->len, E->c, E->len, tmp->c);
    if (!st)
        st = fkm_poly_fit(D, lp);
    if (st)
        return st;
    for (int64_t i = D->len; i < lp; i++)
        D->c[i] = 0;
    if (D->len < lp)
        D->len = lp;
    for (int64_t i = 0; i < lp; i++)
        D->c[i] = fkm_submod(D->c[i], tmp->c[i], C->F);
    D->len = fkm_poly_normlen(D->c, D->len);
    return FKM_OK;
}

int fkm_poly_xgcd(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                  const uint64_t *b, int64_t lb, fkm_poly_t *G,
                  fkm_poly_t *S, fkm_poly_t *T)
{
    FKM_ASSERT(C != NULL && G != NULL && S != NULL && T != NULL);
    FKM_ASSERT(G != S && G != T && S != T);
    FKM_ASSERT(la >= 0 && lb >= 0 && (la == 0 || a != NULL) && (lb == 0 || b != NULL));
    fkm_field_t F = C->F;
    fkm_poly_t R0, R1, S0, S1, T0, T1, Q, R, tmp;
    fkm_poly_t *all[] = {&R0, &R1, &S0, &S1, &T0, &T1, &Q, &R, &tmp};
    for (int i = 0; i < 9; i++)
        fkm_poly_init(all[i]);
    la = fkm_poly_normlen(a, la);
    lb = fkm_poly_normlen(b, lb);
    uint64_t one = 1;
    int st = fkm_poly_set(&R0, a, la);
    if (!st) st = fkm_poly_set(&R1, b, lb);
    if (!st) st = fkm_poly_set(&S0, &one, 1);
    if (!st) st = fkm_poly_set(&S1, NULL, 0);
    if (!st) st = fkm_poly_set(&T0, NULL, 0);
    if (!st) st = fkm_poly_set(&T1, &one, 1);
    while (!st && R1.len > 0) {
        /* R0 = Q R1 + R */
        int64_t lq = R0.len >= R1.len ? R0.len - R1.len + 1 : 0;
        if (lq > 0) {
            st = fkm_poly_fit(&Q, lq);
            if (!st) st = fkm_poly_fit(&R, R1.len);
            if (!st) st = fkm_poly_divrem(C, R0.c, R0.len, R1.c, R1.len, Q.c, R.c);
            if (st)
                break;
            Q.len = fkm_poly_normlen(Q.c, lq);
            R.len = fkm_poly_normlen(R.c, R1.len - 1);
        } else {
            Q.len = 0;
            if ((st = fkm_poly_set(&R, R0.c, R0.len)))
                break;
        }
        /* S0 - Q S1 -> new S1, same for T */
        if ((st = sub_mul(C, &S0, &Q, &S1, &tmp)))
            break;
        if ((st = sub_mul(C, &T0, &Q, &T1, &tmp)))
            break;
        fkm_poly_swap(&S0, &S1);
        fkm_poly_swap(&T0, &T1);
        fkm_poly_swap(&R0, &R1);
        fkm_poly_swap(&R1, &R);
    }
    if (!st && R0.len > 0) {
        uint64_t il = fkm_invmod(R0.c[R0.len - 1], F);
        for (int64_t i = 0; i < R0.len; i++)
            R0.c[i] = fkm_mulmod(R0.c[i], il, F);
        for (int64_t i = 0; i < S0.len; i++)
            S0.c[i] = fkm_mulmod(S0.c[i], il, F);
        for (int64_t i = 0; i < T0.len; i++)
            T0.c[i] = fkm_mulmod(T0.c[i], il, F);
    }
    if (!st) st = fkm_poly_set(G, R0.c, R0.len);
    if (!st) st = fkm_poly_set(S, S0.c, S0.len);
    if (!st) st = fkm_poly_set(T, T0.c, T0.len);
    for (int i = 0; i < 9; i++)
        fkm_poly_clear(all[i]);
    return st;
}

/* ------------------------------------------------------------------ */
/* modular powering                                                    */

/* Reduction modulo a fixed monic f of degree n: a of length <= 2n-1 to
 * length n.  Large n with an NTT prime: precomputed transforms of
 * rev(f)^-1 (size 2^Lq) and of f mod x^Nr - 1 (size 2^Lr >= n + 1). */
typedef fkm_polymod_t polymod_t;

static void polymod_clear(polymod_t *M)
{
    free(M->finv);
    free(M->finv_hat);
    free(M->f_hat);
    free(M->buf);
}

static int polymod_init(polymod_t *M, fkm_pctx_t *C, const uint64_t *f,
                        int64_t lf)
{
    memset(M, 0, sizeof *M);
    M->n = lf - 1;
    M->f = f;
    int64_t n = M->n;
    if (n < 2)
        return FKM_OK;
    int64_t lq = n - 1;
    M->finv = malloc((size_t)lq * sizeof *M->finv);
    uint64_t *rf = malloc((size_t)lq * sizeof *rf);
    if (!M->finv || !rf) {
        free(rf);
        return FKM_ENOMEM;
    }
    for (int64_t i = 0; i < lq; i++)
        rf[i] = f[n - i];
    int st = fkm_poly_inv_series(C, rf, lq, lq, M->finv);
    free(rf);
    if (st)
        return st;
    if (n >= POWMOD_NTT_CUT && ntt_ok(C, 2 * n)) {
        M->ntt = 1;
        M->Lq = ceil_log2(2 * lq - 1);
        M->Lr = ceil_log2(n + 1);
        if ((st = fkm_pctx_reserve(C, (int64_t)1 << M->Lq)))
            return st;
        size_t nq = (size_t)1 << M->Lq, nr = (size_t)1 << M->Lr;
        M->finv_hat = calloc(nq, sizeof *M->finv_hat);
        M->f_hat = calloc(nr, sizeof *M->f_hat);
        M->buf = malloc((nq + nr) * sizeof *M->buf);
        if (!M->finv_hat || !M->f_hat || !M->buf)
            return FKM_ENOMEM;
        memcpy(M->finv_hat, M->finv, (size_t)lq * sizeof *M->finv);
        ntt_fwd(C, M->finv_hat, M->Lq);
        for (int64_t i = 0; i <= n; i++) /* f folded mod x^nr - 1 */
            M->f_hat[(size_t)i & (nr - 1)] =
                fkm_addmod(M->f_hat[(size_t)i & (nr - 1)], f[i], C->F);
        ntt_fwd(C, M->f_hat, M->Lr);
        inv_scale(C, M->Lq, &M->sq, &M->sqpre);
        inv_scale(C, M->Lr, &M->sr, &M->srpre);
    }
    return FKM_OK;
}

/* out[0 .. n) = a mod f for la <= 2n - 1 (out may alias a). */
static int polymod_reduce(polymod_t *M, fkm_pctx_t *C, uint64_t *a,
                          int64_t la, uint64_t *out)
{
    int64_t n = M->n;
    fkm_field_t F = C->F;
    if (la <= n) {
        if (out != a)
            memcpy(out, a, (size_t)la * sizeof *a);
        for (int64_t i = la; i < n; i++)
            out[i] = 0;
        return FKM_OK;
    }
    if (n < 2 || !M->ntt) {
        int st;
        if (n < 2 || la - n < DIV_NEWTON_CUT) {
            /* schoolbook reduction in place (f monic) */
            for (int64_t i = la - 1; i >= n; i--) {
                uint64_t c = a[i];
                if (c == 0)
                    continue;
                uint64_t nc = F.p - c, ncpre = fkm_shoup_pre(nc, F);
                uint64_t *ai = a + i - n;
                for (int64_t j = 0; j < n; j++)
                    ai[j] = fkm_addmod(ai[j], fkm_mul_shoup(M->f[j], nc, ncpre, F.p), F);
                a[i] = 0;
            }
            if (out != a)
                memcpy(out, a, (size_t)n * sizeof *a);
            return FKM_OK;
        }
        int64_t lq = la - n;
        uint64_t *q = malloc((size_t)lq * sizeof *q);
        if (!q)
            return FKM_ENOMEM;
        st = quotient_preinv(C, a, la, n + 1, M->finv, q);
        if (!st)
            st = remainder_from_q(C, a, M->f, n + 1, q, lq, out);
        free(q);
        return st;
    }
    /* NTT path: rev quotient = rev(a)[0 .. lq) * finv mod x^lq */
    int64_t lq = la - n;
    size_t nq = (size_t)1 << M->Lq, nr = (size_t)1 << M->Lr;
    uint64_t *t = M->buf, *u = M->buf + nq;
    for (int64_t i = 0; i < lq; i++)
        t[i] = a[la - 1 - i];
    memset(t + lq, 0, (nq - (size_t)lq) * sizeof *t);
    ntt_fwd(C, t, M->Lq);
    pointwise(t, M->finv_hat, nq, F);
    ntt_inv(C, t, M->Lq, M->sq, M->sqpre);
    /* q (natural order) folded mod x^nr - 1 into u */
    memset(u, 0, nr * sizeof *u);
    for (int64_t i = 0; i < lq; i++) {
        size_t k = (size_t)(lq - 1 - i) & (nr - 1);
        u[k] = fkm_addmod(u[k], t[i], F);
    }
    ntt_fwd(C, u, M->Lr);
    pointwise(u, M->f_hat, nr, F);
    ntt_inv(C, u, M->Lr, M->sr, M->srpre);
    /* r = (a - q f) mod (x^nr - 1), which is r itself since deg r < n < nr */
    for (int64_t i = 0; i < n; i++) {
        uint64_t ai = 0;
        for (int64_t k = i; k < la; k += (int64_t)nr)
            ai = fkm_addmod(ai, a[k], F);
        out[i] = fkm_submod(ai, u[i], F);
    }
    return FKM_OK;
}

int fkm_polymod_init(fkm_polymod_t *M, fkm_pctx_t *C, const uint64_t *f,
                     int64_t lf)
{
    FKM_ASSERT(M != NULL && C != NULL && f != NULL && lf >= 2 && f[lf - 1] == 1);
    int st = polymod_init(M, C, f, lf);
    if (st) {
        polymod_clear(M);
        memset(M, 0, sizeof *M);
    }
    return st;
}

void fkm_polymod_clear(fkm_polymod_t *M)
{
    FKM_ASSERT(M != NULL);
    polymod_clear(M);
    memset(M, 0, sizeof *M);
}

int fkm_polymod_rem(fkm_polymod_t *M, fkm_pctx_t *C, uint64_t *a, int64_t la,
                    uint64_t *out)
{
    FKM_ASSERT(M != NULL && C != NULL && la >= 0 && (la == 0 || a != NULL));
    int64_t n = M->n;
    int st = FKM_OK;
    /* fold the top 2n - 1 coefficients down to n until la <= 2n - 1 */
    while (n >= 2 && la > 2 * n - 1) {
        int64_t off = la - (2 * n - 1);
        if ((st = polymod_reduce(M, C, a + off, 2 * n - 1, a + off)))
            return st;
        la = off + n;
    }
    return polymod_reduce(M, C, a, la, out);
}

/* out = a * b mod f (a, b of length n; scratch t of 2n words). */
static int polymod_mul(polymod_t *M, fkm_pctx_t *C, const uint64_t *a,
                       const uint64_t *b, uint64_t *t, uint64_t *out)
{
    int64_t n = M->n;
    int64_t la = fkm_poly_normlen(a, n), lb = fkm_poly_normlen(b, n);
    if (la == 0 || lb == 0) {
        memset(out, 0, (size_t)n * sizeof *out);
        return FKM_OK;
    }
    int st = fkm_poly_mul(C, a, la, b, lb, t);
    if (st)
        return st;
    return polymod_reduce(M, C, t, la + lb - 1, out);
}

int fkm_poly_powmod(fkm_pctx_t *C, const uint64_t *base, int64_t lbase,
                    const uint64_t *e, int64_t ne, const uint64_t *f,
                    int64_t lf, uint64_t *out)
{
    return fkm_poly_powmod_chain(C, base, lbase, e, ne, f, lf, 0, out);
}

int fkm_poly_powmod_chain(fkm_pctx_t *C, const uint64_t *base, int64_t lbase,
                          const uint64_t *e, int64_t ne, const uint64_t *f,
                          int64_t lf, int64_t nsq, uint64_t *out)
{
    FKM_ASSERT(C != NULL && lbase >= 0 && ne >= 0 && lf >= 0);
    FKM_ASSERT((lbase == 0 || base != NULL) && (ne == 0 || e != NULL));
    FKM_ASSERT((lf == 0 || f != NULL) && out != NULL);
    fkm_field_t F = C->F;
    lf = fkm_poly_normlen(f, lf);
    if (lf < 2)
        return FKM_EDOM;
    int64_t n = lf - 1;
    int st = FKM_OK;
    /* monic copy of f */
    uint64_t *fm = malloc((size_t)lf * sizeof *fm);
    uint64_t *b = malloc((size_t)(n + 2 * n + 2 * n) * sizeof *b);
    polymod_t M;
    memset(&M, 0, sizeof M);
    if (!fm || !b) {
        st = FKM_ENOMEM;
        goto done;
    }
    memcpy(fm, f, (size_t)lf * sizeof *fm);
    make_monic(fm, lf, F);
    uint64_t *r = b + n, *t = b + 3 * n;
    /* base mod f into b */
    lbase = fkm_poly_normlen(base, lbase);
    if (lbase > n) {
        if ((st = fkm_poly_divrem(C, base, lbase, fm, lf, NULL, b)))
            goto done;
    } else {
        /* base may be NULL when lbase == 0 (memcpy forbids it even then) */
        if (lbase > 0)
            memcpy(b, base, (size_t)lbase * sizeof *b);
        memset(b + lbase, 0, (size_t)(n - lbase) * sizeof *b);
    }
    if ((st = polymod_init(&M, C, fm, lf)))
        goto done;
    /* linear base (the root finders' x + a): cheap multiplications */
    int linear = fkm_poly_normlen(b, n) <= 2 && n >= 2;
    int64_t top = ne - 1;
    while (top >= 0 && e[top] == 0)
        top--;
    memset(r, 0, (size_t)n * sizeof *r);
    r[0] = 1 % F.p;
    if (n == 1)
        r[0] = top < 0 ? 1 % F.p : 0;
    if (top < 0 || n == 1) {
        if (n == 1 && top >= 0) {
            /* everything mod a linear f is a constant: evaluate */
            uint64_t root = fkm_negmod(fm[0], F);
            uint64_t v = fkm_poly_eval(base, lbase, root, F);
            uint64_t acc = 1;
            for (int64_t w = top; w >= 0; w--)
                for (int bit = 63; bit >= 0; bit--) {
                    acc = fkm_mulmod(acc, acc, F);
                    if ((e[w] >> bit) & 1)
                        acc = fkm_mulmod(acc, v, F);
                }
            r[0] = acc;
        }
        memcpy(out, r, (size_t)n * sizeof *out);
        goto squarings;
    }
    int started = 0;
    for (int64_t w = top; w >= 0; w--) {
        for (int bit = 63; bit >= 0; bit--) {
            int set = (e[w] >> bit) & 1;
            if (!started) {
                if (!set)
                    continue;
                memcpy(r, b, (size_t)n * sizeof *r);
                started = 1;
                continue;
            }
            if ((st = polymod_mul(&M, C, r, r, t, r)))
                goto done;
            if (!set)
                continue;
            if (linear) {
                /* r <- r (b1 x + b0) mod f */
                uint64_t b0 = b[0], b1 = b[1];
                uint64_t hi = r[n - 1];
                for (int64_t i = n - 1; i >= 1; i--)
                    r[i] = fkm_addmod(fkm_mulmod(r[i], b0, F),
                                      fkm_mulmod(r[i - 1], b1, F), F);
                r[0] = fkm_mulmod(r[0], b0, F);
                /* + b1 hi x^n = - b1 hi (f - x^n) */
                uint64_t c = fkm_mulmod(hi, b1, F);
                if (c) {
                    uint64_t nc = F.p - c;
                    for (int64_t i = 0; i < n; i++)
                        r[i] = fkm_addmod(r[i], fkm_mulmod(fm[i], nc, F), F);
                }
            } else if ((st = polymod_mul(&M, C, r, b, t, r))) {
                goto done;
            }
        }
    }
    memcpy(out, r, (size_t)n * sizeof *out);
squarings:
    /* out[i n .. (i+1) n) = out[(i-1) n ..]^2 mod f */
    for (int64_t i = 1; i <= nsq; i++) {
        uint64_t *prev = out + (i - 1) * n, *cur = out + i * n;
        if (n == 1) {
            cur[0] = fkm_mulmod(prev[0], prev[0], F);
            continue;
        }
        if ((st = polymod_mul(&M, C, prev, prev, t, cur)))
            goto done;
    }
done:
    polymod_clear(&M);
    free(fm);
    free(b);
    return st;
}

/* ------------------------------------------------------------------ */
/* derivative and evaluation                                           */

void fkm_poly_derivative(const uint64_t *a, int64_t la, uint64_t *out,
                         fkm_field_t F)
{
    FKM_ASSERT(la >= 0 && (la <= 1 || (a != NULL && out != NULL)));
    for (int64_t i = 1; i < la; i++)
        out[i - 1] = fkm_mulmod(a[i], fkm_reduce1((uint64_t)i, F), F);
}

uint64_t fkm_poly_eval(const uint64_t *a, int64_t la, uint64_t x,
                       fkm_field_t F)
{
    FKM_ASSERT(la >= 0 && (la == 0 || a != NULL) && x < F.p);
    uint64_t r = 0;
    uint64_t xpre = fkm_shoup_pre(x, F);
    for (int64_t i = la - 1; i >= 0; i--)
        r = fkm_addmod(fkm_mul_shoup(r, x, xpre, F.p), a[i], F);
    return r;
}
