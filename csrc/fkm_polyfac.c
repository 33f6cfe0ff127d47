/* fkm_polyfac.c -- root finding and factorization over F_p (see
 * fkm_polyfac.h).
 *
 * Factorization follows the classical three stages (von zur Gathen &
 * Gerhard, Modern Computer Algebra, ch. 14): square-free factorization
 * (with p-th roots in characteristic p), distinct-degree factorization
 * (gcd with x^(p^d) - x), equal-degree splitting (Cantor-Zassenhaus: gcd
 * with a^((p^d-1)/2) - 1 for odd p, with the trace map for p = 2).  Roots
 * are the degree-1 part of the distinct-degree stage, split with Rabin's
 * gcd((x + a)^((p-1)/2) - 1, f).  Random choices come from the caller's
 * generator, so results are reproducible for a seed.
 */
#include "fkm_polyfac.h"

#include <stdlib.h>
#include <string.h>

/* fields this small find roots by evaluating at every element */
#define EXHAUSTIVE_P 64
/* random splitting attempts before giving up (probability of a failed
 * attempt is at most about 1/2 when p > EXHAUSTIVE_P) */
#define SPLIT_ATTEMPTS 256

/* ------------------------------------------------------------------ */
/* small helpers                                                       */

typedef struct {
    fkm_poly_t *items;
    int64_t *exps;
    int64_t n, cap;
} plist_t;

static void plist_init(plist_t *L)
{
    memset(L, 0, sizeof *L);
}

static void plist_clear(plist_t *L)
{
    for (int64_t i = 0; i < L->n; i++)
        fkm_poly_clear(&L->items[i]);
    free(L->items);
    free(L->exps);
    plist_init(L);
}

static int plist_push(plist_t *L, const uint64_t *a, int64_t la, int64_t e)
{
    if (L->n == L->cap) {
        int64_t cap = L->cap ? 2 * L->cap : 8;
        fkm_poly_t *it = realloc(L->items, (size_t)cap * sizeof *it);
        if (!it)
            return FKM_ENOMEM;
        L->items = it;
        int64_t *ex = realloc(L->exps, (size_t)cap * sizeof *ex);
        if (!ex)
            return FKM_ENOMEM;
        L->exps = ex;
        L->cap = cap;
    }
    fkm_poly_init(&L->items[L->n]);
    int st = fkm_poly_set(&L->items[L->n], a, la);
    if (st)
        return st;
    L->exps[L->n++] = e;
    return FKM_OK;
}

static void monic(uint64_t *a, int64_t la, fkm_field_t F)
{
    if (la == 0 || a[la - 1] == 1)
        return;
    uint64_t il = fkm_invmod(a[la - 1], F);
    for (int64_t i = 0; i < la; i++)
        a[i] = fkm_mulmod(a[i], il, F);
}

/* Q = A / B (exact division assumed, B nonzero). */
static int divexact(fkm_pctx_t *C, const fkm_poly_t *A, const fkm_poly_t *B,
                    fkm_poly_t *Q)
{
    int64_t lq = A->len - B->len + 1;
    if (lq <= 0) {
        Q->len = 0;
        return FKM_OK;
    }
    fkm_poly_t T;
    fkm_poly_init(&T);
    int st = fkm_poly_fit(&T, lq);
    if (!st)
        st = fkm_poly_divrem(C, A->c, A->len, B->c, B->len, T.c, NULL);
    if (!st) {
        T.len = fkm_poly_normlen(T.c, lq);
        fkm_poly_swap(&T, Q);
    }
    fkm_poly_clear(&T);
    return st;
}

/* OUT = base^e mod G (e one limb or more), normalized. */
static int powmod_poly(fkm_pctx_t *C, const fkm_poly_t *base, const uint64_t *e,
                       int64_t ne, const fkm_poly_t *G, fkm_poly_t *OUT)
{
    int64_t n = G->len - 1;
    int st = fkm_poly_fit(OUT, n > 0 ? n : 1);
    if (st)
        return st;
    st = fkm_poly_powmod(C, base->c, base->len, e, ne, G->c, G->len, OUT->c);
    OUT->len = st ? 0 : fkm_poly_normlen(OUT->c, n);
    return st;
}

/* OUT = A B mod G. */
static int mulmod_poly(fkm_pctx_t *C, const fkm_poly_t *A, const fkm_poly_t *B,
                       const fkm_poly_t *G, fkm_poly_t *OUT)
{
    int64_t n = G->len - 1;
    if (A->len == 0 || B->len == 0) {
        OUT->len = 0;
        return FKM_OK;
    }
    int64_t lp = A->len + B->len - 1;
    fkm_poly_t T;
    fkm_poly_init(&T);
    int st = fkm_poly_fit(&T, lp);
    if (!st)
        st = fkm_poly_mul(C, A->c, A->len, B->c, B->len, T.c);
    if (!st)
        st = fkm_poly_fit(OUT, n > 0 ? n : 1);
    if (!st) {
        if (lp >= G->len) {
            st = fkm_poly_divrem(C, T.c, lp, G->c, G->len, NULL, OUT->c);
            OUT->len = fkm_poly_normlen(OUT->c, n);
        } else {
            memcpy(OUT->c, T.c, (size_t)lp * sizeof *T.c);
            OUT->len = fkm_poly_normlen(OUT->c, lp);
        }
    }
    fkm_poly_clear(&T);
    return st;
}

/* A = A + c x^k (A normalized afterwards). */
static int add_monomial(fkm_poly_t *A, uint64_t c, int64_t k, fkm_field_t F)
{
    if (A->len <= k) {
        int st = fkm_poly_fit(A, k + 1);
        if (st)
            return st;
        for (int64_t i = A->len; i <= k; i++)
            A->c[i] = 0;
        A->len = k + 1;
    }
    A->c[k] = fkm_addmod(A->c[k], c, F);
    A->len = fkm_poly_normlen(A->c, A->len);
    return FKM_OK;
}

static uint64_t rand_elem(fkm_rng_t *rng, fkm_field_t F)
{
    /* rejection sampling below the largest multiple of p */
    uint64_t lim = UINT64_MAX - UINT64_MAX % F.p;
    uint64_t u;
    do
        u = fkm_rng_u64(rng);
    while (u >= lim);
    return u % F.p;
}

/* The splitting step of Cantor-Zassenhaus: H = gcd(G, A^e - 1 mod G), W
 * scratch (it holds A^e - 1 mod G afterwards). */
static int split_gcd(fkm_pctx_t *C, const fkm_poly_t *G, const fkm_poly_t *A,
                     uint64_t e, fkm_poly_t *W, fkm_poly_t *H)
{
    int st = powmod_poly(C, A, &e, 1, G, W);
    if (!st)
        st = add_monomial(W, C->F.p - 1, 0, C->F);
    if (!st)
        st = fkm_poly_gcd(C, G->c, G->len, W->c, W->len, H);
    return st;
}

/* ------------------------------------------------------------------ */
/* roots                                                               */

/* Roots of a monic g that is a product of distinct linear factors. */
static int split_linear(fkm_pctx_t *C, const fkm_poly_t *G, fkm_rng_t *rng,
                        uint64_t *roots, int64_t *nr)
{
    fkm_field_t F = C->F;
    int64_t n = G->len - 1;
    if (n <= 0)
        return FKM_OK;
    if (n == 1) {
        roots[(*nr)++] = fkm_negmod(G->c[0], F);
        return FKM_OK;
    }
    uint64_t e = (F.p - 1) / 2;
    fkm_poly_t X, W, H, Q;
    fkm_poly_init(&X);
    fkm_poly_init(&W);
    fkm_poly_init(&H);
    fkm_poly_init(&Q);
    int st = fkm_poly_fit(&X, 2);
    int attempt = 0;
    while (!st) {
        if (++attempt > SPLIT_ATTEMPTS) {
            st = FKM_ENOSPLIT_RNG;
            break;
        }
        X.c[0] = rand_elem(rng, F);
        X.c[1] = 1;
        X.len = 2;
        if ((st = split_gcd(C, G, &X, e, &W, &H)))
            break;
        if (H.len <= 1 || H.len == G->len)
            continue;
        if ((st = divexact(C, G, &H, &Q)))
            break;
        if ((st = split_linear(C, &H, rng, roots, nr)))
            break;
        st = split_linear(C, &Q, rng, roots, nr);
        break;
    }
    fkm_poly_clear(&X);
    fkm_poly_clear(&W);
    fkm_poly_clear(&H);
    fkm_poly_clear(&Q);
    return st;
}

/* Is x^p == x mod g (g monic, deg >= 1)?  i.e. g | x^p - x. */
static int divides_frobenius(fkm_pctx_t *C, const fkm_poly_t *G, int *yes)
{
    fkm_field_t F = C->F;
    fkm_poly_t X, W;
    fkm_poly_init(&X);
    fkm_poly_init(&W);
    int st = fkm_poly_fit(&X, 2);
    if (!st) {
        X.c[0] = 0;
        X.c[1] = 1;
        X.len = 2;
        uint64_t e = F.p;
        st = powmod_poly(C, &X, &e, 1, G, &W);
    }
    if (!st) {
        /* x mod g */
        int64_t n = G->len - 1;
        if (n == 1) {
            *yes = (W.len == 0 ? 0 : W.c[0]) == fkm_negmod(G->c[0], F);
        } else {
            *yes = W.len == 2 && W.c[0] == 0 && W.c[1] == 1;
        }
    }
    fkm_poly_clear(&X);
    fkm_poly_clear(&W);
    return st;
}

/* Roots with multiplicities by evaluation at every element (tiny p). */
static int roots_exhaustive(fkm_pctx_t *C, const fkm_poly_t *G,
                            uint64_t *roots, int64_t *mult, int64_t *nr)
{
    fkm_field_t F = C->F;
    uint64_t *w = malloc((size_t)G->len * sizeof *w);
    if (!w)
        return FKM_ENOMEM;
    for (uint64_t a = 0; a < F.p; a++) {
        memcpy(w, G->c, (size_t)G->len * sizeof *w);
        int64_t lw = G->len, k = 0;
        /* divide by (x - a) while the remainder is zero */
        while (lw > 1) {
            /* synthetic division: w = (x - a) q + rem */
            uint64_t carry = 0;
            for (int64_t i = lw - 1; i >= 0; i--) {
                uint64_t t = fkm_addmod(w[i], fkm_mulmod(carry, a, F), F);
                w[i] = carry;
                carry = t;
            }
            /* carry is the remainder; w[0 .. lw-2] hold the quotient */
            if (carry != 0)
                break;
            lw--;
            k++;
        }
        if (k > 0) {
            roots[*nr] = a;
            mult[(*nr)++] = k;
        }
    }
    free(w);
    return FKM_OK;
}

static int is_exhaustive(const fkm_pctx_t *C)
{
    return C->F.p <= EXHAUSTIVE_P;
}

/* ------------------------------------------------------------------ */
/* square-free factorization                                           */

static int sqf_rec(fkm_pctx_t *C, const fkm_poly_t *Fp, int64_t scale,
                   plist_t *out)
{
    fkm_field_t F = C->F;
    int64_t p = (int64_t)F.p;
    fkm_poly_t D, Cc, W, Y, Z, R;
    fkm_poly_t *all[] = {&D, &Cc, &W, &Y, &Z, &R};
    for (int i = 0; i < 6; i++)
        fkm_poly_init(all[i]);
    int st = fkm_poly_fit(&D, Fp->len > 1 ? Fp->len - 1 : 1);
    if (st)
        goto done;
    fkm_poly_derivative(Fp->c, Fp->len, D.c, F);
    D.len = fkm_poly_normlen(D.c, Fp->len - 1);
    if (D.len == 0) {
        /* f = g(x^p) = g(x)^p: take the p-th root */
        if (Fp->len <= 1)
            goto done;
        int64_t lr = (Fp->len - 1) / p + 1;
        if ((st = fkm_poly_fit(&R, lr)))
            goto done;
        for (int64_t i = 0; i < lr; i++)
            R.c[i] = Fp->c[i * p];
        R.len = lr;
        st = sqf_rec(C, &R, scale * p, out);
        goto done;
    }
    if ((st = fkm_poly_gcd(C, Fp->c, Fp->len, D.c, D.len, &Cc)))
        goto done;
    if ((st = divexact(C, Fp, &Cc, &W)))
        goto done;
    for (int64_t i = 1; W.len > 1; i++) {
        if ((st = fkm_poly_gcd(C, W.c, W.len, Cc.c, Cc.len, &Y)))
            goto done;
        if ((st = divexact(C, &W, &Y, &Z)))
            goto done;
        if (Z.len > 1) {
            monic(Z.c, Z.len, F);
            if ((st = plist_push(out, Z.c, Z.len, i * scale)))
                goto done;
        }
        fkm_poly_swap(&W, &Y);
        if ((st = divexact(C, &Cc, &W, &Y)))
            goto done;
        fkm_poly_swap(&Cc, &Y);
    }
    if (Cc.len > 1) {
        int64_t lr = (Cc.len - 1) / p + 1;
        if ((st = fkm_poly_fit(&R, lr)))
            goto done;
        for (int64_t i = 0; i < lr; i++)
            R.c[i] = Cc.c[i * p];
        R.len = lr;
        st = sqf_rec(C, &R, scale * p, out);
    }
done:
    for (int i = 0; i < 6; i++)
        fkm_poly_clear(all[i]);
    return st;
}

/* ------------------------------------------------------------------ */
/* distinct- and equal-degree factorization                            */

/* Irreducible factors of degree d of a monic squarefree G whose factors
 * all have degree d. */
static int edf(fkm_pctx_t *C, const fkm_poly_t *G, int64_t d, fkm_rng_t *rng,
               int64_t exp, plist_t *out)
{
    fkm_field_t F = C->F;
    int64_t n = G->len - 1;
    if (n == d)
        return plist_push(out, G->c, G->len, exp);
    fkm_poly_t A, T, Acc, Bp, H, Q;
    fkm_poly_t *all[] = {&A, &T, &Acc, &Bp, &H, &Q};
    for (int i = 0; i < 6; i++)
        fkm_poly_init(all[i]);
    int st = fkm_poly_fit(&A, n);
    int attempt = 0;
    while (!st) {
        if (++attempt > SPLIT_ATTEMPTS) {
            st = FKM_ENOSPLIT_RNG;
            break;
        }
        for (int64_t i = 0; i < n; i++)
            A.c[i] = rand_elem(rng, F);
        A.len = fkm_poly_normlen(A.c, n);
        if (A.len <= 1)
            continue;
        uint64_t ep = F.p;
        if ((st = fkm_poly_set(&T, A.c, A.len)) || (st = fkm_poly_set(&Acc, A.c, A.len)))
            break;
        if (F.p == 2) {
            /* trace: a + a^2 + ... + a^(2^(d-1)) */
            for (int64_t i = 1; i < d && !st; i++) {
                st = powmod_poly(C, &T, &ep, 1, G, &Bp);
                if (!st) {
                    fkm_poly_swap(&T, &Bp);
                    st = fkm_poly_fit(&Acc, n);
                    for (int64_t k = Acc.len; k < n; k++)
                        Acc.c[k] = 0;
                    for (int64_t k = 0; k < T.len; k++)
                        Acc.c[k] ^= T.c[k];
                    Acc.len = fkm_poly_normlen(Acc.c, n > Acc.len ? n : Acc.len);
                }
            }
            if (st)
                break;
            if ((st = fkm_poly_gcd(C, G->c, G->len, Acc.c, Acc.len, &H)))
                break;
        } else {
            /* norm a^(1 + p + ... + p^(d-1)), then ^((p-1)/2) */
            for (int64_t i = 1; i < d && !st; i++) {
                st = powmod_poly(C, &T, &ep, 1, G, &Bp);
                if (!st) {
                    fkm_poly_swap(&T, &Bp);
                    st = mulmod_poly(C, &Acc, &T, G, &Bp);
                    fkm_poly_swap(&Acc, &Bp);
                }
            }
            if (st)
                break;
            if ((st = split_gcd(C, G, &Acc, (F.p - 1) / 2, &Bp, &H)))
                break;
        }
        if (H.len <= 1 || H.len == G->len)
            continue;
        if ((st = divexact(C, G, &H, &Q)))
            break;
        if ((st = edf(C, &H, d, rng, exp, out)))
            break;
        st = edf(C, &Q, d, rng, exp, out);
        break;
    }
    for (int i = 0; i < 6; i++)
        fkm_poly_clear(all[i]);
    return st;
}

/* Distinct-degree factorization of a monic squarefree G, each part split
 * by edf into out with exponent exp. */
static int ddf(fkm_pctx_t *C, const fkm_poly_t *G, fkm_rng_t *rng,
               int64_t exp, plist_t *out)
{
    fkm_field_t F = C->F;
    fkm_poly_t Rm, H, X, D, Gd, Q;
    fkm_poly_t *all[] = {&Rm, &H, &X, &D, &Gd, &Q};
    for (int i = 0; i < 6; i++)
        fkm_poly_init(all[i]);
    int st = fkm_poly_set(&Rm, G->c, G->len);
    if (!st)
        st = fkm_poly_fit(&X, 2);
    if (st)
        goto done;
    X.c[0] = 0;
    X.c[1] = 1;
    X.len = 2;
    /* H = x mod Rm */
    if ((st = fkm_poly_set(&H, X.c, 2)))
        goto done;
    uint64_t ep = F.p;
    for (int64_t d = 1; 2 * d <= Rm.len - 1; d++) {
        if ((st = powmod_poly(C, &H, &ep, 1, &Rm, &D)))
            goto done;
        fkm_poly_swap(&H, &D);
        /* D = H - x */
        if ((st = fkm_poly_set(&D, H.c, H.len)))
            goto done;
        if ((st = add_monomial(&D, F.p - 1, 1, F)))
            goto done;
        if ((st = fkm_poly_gcd(C, Rm.c, Rm.len, D.c, D.len, &Gd)))
            goto done;
        if (Gd.len > 1) {
            if ((st = edf(C, &Gd, d, rng, exp, out)))
                goto done;
            if ((st = divexact(C, &Rm, &Gd, &Q)))
                goto done;
            fkm_poly_swap(&Rm, &Q);
            if (H.len >= Rm.len && Rm.len > 1) {
                if ((st = fkm_poly_fit(&Q, Rm.len)))
                    goto done;
                if ((st = fkm_poly_divrem(C, H.c, H.len, Rm.c, Rm.len, NULL, Q.c)))
                    goto done;
                Q.len = fkm_poly_normlen(Q.c, Rm.len - 1);
                fkm_poly_swap(&H, &Q);
            }
        }
    }
    if (Rm.len > 1)
        st = plist_push(out, Rm.c, Rm.len, exp);
done:
    for (int i = 0; i < 6; i++)
        fkm_poly_clear(all[i]);
    return st;
}

static int export_list(const plist_t *L, fkm_faclist_t *out)
{
    int64_t off = 0;
    out->off[0] = 0;
    for (int64_t i = 0; i < L->n; i++) {
        memcpy(out->coef + off, L->items[i].c,
               (size_t)L->items[i].len * sizeof *out->coef);
        off += L->items[i].len;
        out->off[i + 1] = off;
        out->exps[i] = L->exps[i];
    }
    out->nf = L->n;
    return FKM_OK;
}

/* The squarefree factorization of f (lf coefficients, normalized first)
 * appended to L; FKM_EDOM, L untouched, unless f is monic of degree >= 1. */
static int sqf_of(fkm_pctx_t *C, const uint64_t *f, int64_t lf, plist_t *L)
{
    lf = fkm_poly_normlen(f, lf);
    if (lf < 2 || f[lf - 1] != 1)
        return FKM_EDOM;
    fkm_poly_t Fp;
    fkm_poly_init(&Fp);
    int st = fkm_poly_set(&Fp, f, lf);
    if (!st)
        st = sqf_rec(C, &Fp, 1, L);
    fkm_poly_clear(&Fp);
    return st;
}

int fkm_poly_sqf(fkm_pctx_t *C, const uint64_t *f, int64_t lf,
                 fkm_faclist_t *out)
{
    FKM_ASSERT(C != NULL && lf >= 0 && (lf == 0 || f != NULL));
    FKM_ASSERT(out != NULL && out->coef != NULL && out->off != NULL && out->exps != NULL);
    plist_t L;
    plist_init(&L);
    int st = sqf_of(C, f, lf, &L);
    if (!st)
        st = export_list(&L, out);
    plist_clear(&L);
    return st;
}

int fkm_poly_factor(fkm_pctx_t *C, const uint64_t *f, int64_t lf,
                    fkm_rng_t *rng, fkm_faclist_t *out)
{
    FKM_ASSERT(C != NULL && rng != NULL && lf >= 0 && (lf == 0 || f != NULL));
    FKM_ASSERT(out != NULL && out->coef != NULL && out->off != NULL && out->exps != NULL);
    plist_t S, L;
    plist_init(&S);
    plist_init(&L);
    int st = sqf_of(C, f, lf, &S);
    for (int64_t i = 0; i < S.n && !st; i++)
        st = ddf(C, &S.items[i], rng, S.exps[i], &L);
    if (!st)
        st = export_list(&L, out);
    plist_clear(&S);
    plist_clear(&L);
    return st;
}

int fkm_poly_roots(fkm_pctx_t *C, const uint64_t *f, int64_t lf,
                   int require_split, fkm_rng_t *rng, uint64_t *roots,
                   int64_t *mult, int64_t *nroots)
{
    FKM_ASSERT(C != NULL && lf >= 0 && (lf == 0 || f != NULL) && nroots != NULL);
    FKM_ASSERT(lf <= 1 || (roots != NULL && mult != NULL));
    FKM_ASSERT(C->F.p <= EXHAUSTIVE_P || rng != NULL);
    fkm_field_t F = C->F;
    lf = fkm_poly_normlen(f, lf);
    *nroots = 0;
    if (lf < 1)
        return FKM_EDOM;
    if (lf == 1)
        return FKM_OK;
    fkm_poly_t G, X, W, H;
    fkm_poly_init(&G);
    fkm_poly_init(&X);
    fkm_poly_init(&W);
    fkm_poly_init(&H);
    plist_t S;
    plist_init(&S);
    int st = fkm_poly_set(&G, f, lf);
    if (st)
        goto done;
    monic(G.c, G.len, F);
    if (is_exhaustive(C)) {
        if ((st = roots_exhaustive(C, &G, roots, mult, nroots)))
            goto done;
        if (require_split) {
            int64_t total = 0;
            for (int64_t i = 0; i < *nroots; i++)
                total += mult[i];
            if (total != lf - 1 || total != *nroots)
                st = FKM_ENOTSPLIT;
        }
        goto done;
    }
    if (require_split) {
        int yes = 0;
        if ((st = divides_frobenius(C, &G, &yes)))
            goto done;
        if (!yes) {
            st = FKM_ENOTSPLIT;
            goto done;
        }
        st = split_linear(C, &G, rng, roots, nroots);
        for (int64_t i = 0; i < *nroots; i++)
            mult[i] = 1;
        goto done;
    }
    if ((st = sqf_rec(C, &G, 1, &S)))
        goto done;
    if ((st = fkm_poly_fit(&X, 2)))
        goto done;
    for (int64_t k = 0; k < S.n; k++) {
        const fkm_poly_t *P = &S.items[k];
        /* H = gcd(P, x^p - x): the product of P's linear factors */
        X.c[0] = 0;
        X.c[1] = 1;
        X.len = 2;
        uint64_t e = F.p;
        if ((st = powmod_poly(C, &X, &e, 1, P, &W)))
            goto done;
        if ((st = add_monomial(&W, F.p - 1, 1, F)))
            goto done;
        if ((st = fkm_poly_gcd(C, P->c, P->len, W.c, W.len, &H)))
            goto done;
        int64_t before = *nroots;
        if (H.len > 1 && (st = split_linear(C, &H, rng, roots, nroots)))
            goto done;
        for (int64_t i = before; i < *nroots; i++)
            mult[i] = S.exps[k];
    }
done:
    fkm_poly_clear(&G);
    fkm_poly_clear(&X);
    fkm_poly_clear(&W);
    fkm_poly_clear(&H);
    plist_clear(&S);
    return st;
}
