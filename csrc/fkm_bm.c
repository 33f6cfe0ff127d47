/* fkm_bm.c -- Berlekamp-Massey over F_p, fed term by term (see fkm_bm.h).
 *
 * Massey's iteration: for each new term s_n the discrepancy
 * d = sum_{i <= L} c_i s_{n-i}; if d != 0, C <- C - (d / bb) x^gap B, and
 * when 2 L <= n the complexity grows to n + 1 - L and B takes the old C.
 * The discrepancy is a 3-word accumulation reduced once (fkm_acc_t), the
 * update a Shoup multiplication by the fixed factor -d / bb.
 */
#include "fkm_bm.h"

#include <stdlib.h>
#include <string.h>

/* Arrays hold at most this many terms (sizes in bytes stay below 2^62). */
#define FKM_BM_MAX_CAP (INT64_C(1) << 58)

void fkm_bm_clear(fkm_bm_t *bm)
{
    FKM_ASSERT(bm != NULL);
    free(bm->s);
    free(bm->c);
    free(bm->b);
    free(bm->t);
    bm->s = bm->c = bm->b = bm->t = NULL;
    bm->n = bm->cap = 0;
    bm->L = 0;
    bm->lenc = bm->lenb = bm->gap = 1;
    bm->bb = 1;
}

int fkm_bm_init(fkm_bm_t *bm, fkm_field_t F, int64_t cap)
{
    FKM_ASSERT(bm != NULL);
    FKM_ASSERT(F.p >= 2 && F.p < (UINT64_C(1) << 63));
    bm->F = F;
    bm->s = bm->c = bm->b = bm->t = NULL;
    fkm_bm_clear(bm);
    if (cap < 0)
        return FKM_EDOM;
    if (cap > FKM_BM_MAX_CAP)
        return FKM_ENOMEM;
    size_t m = (size_t)cap + 1;
    bm->s = malloc(m * sizeof *bm->s); /* room for cap >= 0 terms (m >= 1) */
    bm->c = calloc(m, sizeof *bm->c);
    bm->b = calloc(m, sizeof *bm->b);
    bm->t = malloc(m * sizeof *bm->t);
    if (!bm->s || !bm->c || !bm->b || !bm->t) {
        fkm_bm_clear(bm);
        return FKM_ENOMEM;
    }
    bm->cap = cap;
    bm->c[0] = 1;
    bm->b[0] = 1;
    return FKM_OK;
}

/* Room for `need` terms (need > bm->cap); bm is unchanged on failure (a
 * buffer that did grow keeps its contents and is simply larger). */
static int bm_grow(fkm_bm_t *bm, int64_t need)
{
    if (need > FKM_BM_MAX_CAP)
        return FKM_ENOMEM;
    int64_t cap = bm->cap <= FKM_BM_MAX_CAP / 2 ? 2 * bm->cap : FKM_BM_MAX_CAP;
    if (cap < need)
        cap = need;
    size_t m = (size_t)cap + 1;
    uint64_t **arr[4] = {&bm->s, &bm->c, &bm->b, &bm->t};
    for (int i = 0; i < 4; i++) {
        uint64_t *q = realloc(*arr[i], m * sizeof *q);
        if (!q)
            return FKM_ENOMEM;
        *arr[i] = q;
    }
    /* C is zero beyond its written coefficients */
    memset(bm->c + bm->cap + 1, 0, (size_t)(cap - bm->cap) * sizeof *bm->c);
    bm->cap = cap;
    return FKM_OK;
}

int fkm_bm_add(fkm_bm_t *bm, const uint64_t *terms, int64_t n)
{
    FKM_ASSERT(bm != NULL && bm->c != NULL);
    FKM_ASSERT(n <= 0 || terms != NULL);
    if (n < 0)
        return FKM_EDOM;
    const fkm_field_t F = bm->F;
    for (int64_t i = 0; i < n; i++)
        if (terms[i] >= F.p)
            return FKM_EDOM;
    if (n == 0)
        return FKM_OK;
    if (n > FKM_BM_MAX_CAP - bm->n)
        return FKM_ENOMEM;
    const int64_t N = bm->n + n;
    if (N > bm->cap) {
        int st = bm_grow(bm, N);
        if (st)
            return st;
    }
    memcpy(bm->s + bm->n, terms, (size_t)n * sizeof *terms);

    /* the state in locals: the loop below is the whole cost */
    const uint64_t *s = bm->s;
    uint64_t *c = bm->c, *B = bm->b, *T = bm->t;
    const int64_t top = bm->cap + 1; /* coefficients C has room for */
    int64_t L = bm->L, lenC = bm->lenc, lenB = bm->lenb, gap = bm->gap;
    uint64_t bb = bm->bb;
    for (int64_t k = bm->n; k < N; k++) {
        fkm_acc_t A = {0, 0};
        const uint64_t *sk = s + k;
        int64_t kmax = lenC < k + 1 ? lenC : k + 1;
        for (int64_t i = 0; i < kmax; i++)
            fkm_acc_addmul(&A, c[i], sk[-i]);
        uint64_t d = fkm_acc_reduce(&A, F);
        if (d == 0) {
            gap++;
            continue;
        }
        uint64_t coef = fkm_mulmod(d, fkm_invmod(bb, F), F);
        uint64_t nc = F.p - coef, ncpre = fkm_shoup_pre(nc, F);
        int lengthen = 2 * L <= k;
        int64_t oldlenC = lenC;
        if (lengthen)
            memcpy(T, c, (size_t)lenC * sizeof *c);
        uint64_t *cg = c + gap;
        /* deg(x^gap B) <= L after the update <= k + 1 < top: the bound
         * only keeps the writes inside the array (what it cuts is 0) */
        int64_t lenU = lenB < top - gap ? lenB : top - gap;
        for (int64_t i = 0; i < lenU; i++)
            cg[i] = fkm_addmod(cg[i], fkm_mul_shoup(B[i], nc, ncpre, F.p), F);
        if (lenU + gap > lenC)
            lenC = lenU + gap;
        if (lengthen) {
            L = k + 1 - L;
            uint64_t *t = B;
            B = T;
            T = t;
            lenB = oldlenC;
            bb = d;
            gap = 1;
        } else {
            gap++;
        }
    }
    bm->b = B;
    bm->t = T;
    bm->n = N;
    bm->L = L;
    bm->lenc = lenC;
    bm->lenb = lenB;
    bm->gap = gap;
    bm->bb = bb;
    return FKM_OK;
}

void fkm_bm_result(const fkm_bm_t *bm, uint64_t *c)
{
    FKM_ASSERT(bm != NULL && bm->c != NULL && c != NULL);
    /* C is zero beyond lenc, and L + 1 <= n + 1 <= cap + 1 */
    memcpy(c, bm->c, (size_t)(bm->L + 1) * sizeof *c);
}

/* Below this many terms Massey's iteration beats the Pade form (measured
 * on random sequences with DEFAULT_PRIME: 28 ms against 36 ms at 6000
 * terms, 48 against 39 at 8000; 4.4 s against 0.76 s at 80000). */
#define BM_PADE_CUT 7000

int fkm_berlekamp_massey_cut(fkm_field_t F, const uint64_t *s, int64_t N,
                             uint64_t *c, int64_t *lc, int64_t cut)
{
    FKM_ASSERT(N <= 0 || s != NULL);
    FKM_ASSERT(c != NULL && lc != NULL);
    if (N < 0)
        return FKM_EDOM;
    for (int64_t i = 0; i < N; i++)
        if (s[i] >= F.p)
            return FKM_EDOM;
    if (N >= (cut > 0 ? cut : BM_PADE_CUT)) {
        fkm_pctx_t C;
        int found = 0;
        int st = fkm_pctx_init(&C, F.p);
        if (!st)
            st = fkm_bm_pade(&C, s, N, c, lc, &found, cut);
        fkm_pctx_clear(&C);
        if (st || found)
            return st;
    }
    fkm_bm_t bm;
    int st = fkm_bm_init(&bm, F, N);
    if (!st)
        st = fkm_bm_add(&bm, s, N);
    if (!st) {
        int64_t len = fkm_bm_length(&bm) + 1;
        fkm_bm_result(&bm, c);
        memset(c + len, 0, (size_t)(N + 1 - len) * sizeof *c);
        *lc = len;
    }
    fkm_bm_clear(&bm);
    return st;
}

int fkm_berlekamp_massey(fkm_field_t F, const uint64_t *s, int64_t N,
                         uint64_t *c, int64_t *lc)
{
    return fkm_berlekamp_massey_cut(F, s, N, c, lc, 0);
}
