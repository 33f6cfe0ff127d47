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
#include "fkm_alloc.h"

#include <stdlib.h>
#include <string.h>

/* fields this small find roots by evaluating at every element */
#define EXHAUSTIVE_P 64
/* random splitting attempts before giving up (probability of a failed
 * attempt is at most about 1/2 when p > EXHAUSTIVE_P) */
#define SPLIT_ATTEMPTS 256
/* from this degree on, split by the 2-adic descent when p is an NTT prime */
#define DESCENT_MIN_DEG 2

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

/* 2-adic descent (NTT primes p = c 2^k + 1, c odd, k >= 4).
 *
 * For a shift a with g(-a) != 0 put V = (x + a)^c mod g and
 * U_j = V^(2^j) mod g.  At a root r, U_k(r) = (r + a)^(p-1) = 1, so the
 * values U_j(r) are 2^(k-j)-th roots of unity; U_(j-1)(r) is one of the
 * two square roots of U_j(r).  A node of the splitting tree is a factor G
 * of g whose roots share U_(j+1)(r) = lambda = w^E (w the context's
 * primitive 2^k-th root of unity); gcd(G, U_j - w^(E/2)) separates the
 * roots where U_j(r) = w^(E/2) from those where it is -w^(E/2) =
 * w^(E/2 + 2^(k-1)).  One chain of squarings mod g (the one the split test
 * computes anyway) thus serves every level of the tree, which only
 * reduces the U_j it still needs modulo its factors; in Rabin's splitting
 * every node pays a full powering (x + a)^((p-1)/2) mod G.  A node whose
 * roots agree on all the U_j it kept starts again with a fresh shift. */

/* U_j kept per node beyond ceil(log2 deg G): a pair of roots agrees on
 * each further level with probability 1/2. */
#define DESCENT_SLACK 5

typedef struct {
    fkm_poly_t *u;  /* u[0] = U_j mod G (used at this node), u[1] = U_(j-1) ... */
    int64_t nu;
} ulist_t;

static void ulist_clear(ulist_t *L)
{
    for (int64_t i = 0; i < L->nu; i++)
        fkm_poly_clear(&L->u[i]);
    free(L->u);
    L->u = NULL;
    L->nu = 0;
}

static int ulist_alloc(ulist_t *L, int64_t nu)
{
    L->nu = 0;
    L->u = NULL;
    if (nu <= 0)
        return FKM_OK;
    L->u = malloc((size_t)nu * sizeof *L->u);
    if (!L->u)
        return FKM_ENOMEM;
    for (int64_t i = 0; i < nu; i++)
        fkm_poly_init(&L->u[i]);
    L->nu = nu;
    return FKM_OK;
}

static int64_t descent_keep(int64_t deg)
{
    int64_t l = 0;
    while (((int64_t)1 << l) < deg)
        l++;
    return l + DESCENT_SLACK;
}

static int descent_start(fkm_pctx_t *C, const fkm_poly_t *G, int check,
                         fkm_rng_t *rng, uint64_t *roots, int64_t *nr,
                         int depth);

/* OUT <- nu entries of IN from index from, reduced mod G (monic). */
static int ulist_reduce(fkm_pctx_t *C, const ulist_t *IN, int64_t from,
                        int64_t nu, const fkm_poly_t *G, ulist_t *OUT)
{
    int st = ulist_alloc(OUT, nu);
    int64_t n = G->len - 1;
    fkm_polymod_t M;
    memset(&M, 0, sizeof M);
    if (!st && nu > 0)
        st = fkm_polymod_init(&M, C, G->c, G->len);
    for (int64_t i = 0; i < nu && !st; i++) {
        const fkm_poly_t *A = &IN->u[from + i];
        fkm_poly_t *B = &OUT->u[i];
        int64_t l = A->len > n ? A->len : n;
        if ((st = fkm_poly_set(B, A->c, A->len)) || (st = fkm_poly_fit(B, l > 0 ? l : 1)))
            break;
        if ((st = fkm_polymod_rem(&M, C, B->c, A->len, B->c)))
            break;
        B->len = fkm_poly_normlen(B->c, n);
    }
    if (nu > 0)
        fkm_polymod_clear(&M);
    return st;
}

/* Roots of the node G (monic, distinct linear factors) with its list L
 * (consumed: cleared on return) and exponent E of lambda. */
static int descent_node(fkm_pctx_t *C, fkm_poly_t *G, ulist_t *L, uint64_t E,
                        fkm_rng_t *rng, uint64_t *roots, int64_t *nr, int depth)
{
    fkm_field_t F = C->F;
    const int k = C->two_adicity;
    const uint64_t half = (uint64_t)1 << (k - 1);
    fkm_poly_t H, G1, G2;
    fkm_poly_init(&H);
    fkm_poly_init(&G1);
    fkm_poly_init(&G2);
    ulist_t L1 = {NULL, 0}, L2 = {NULL, 0};
    int st = FKM_OK;
    int64_t used = 0; /* entries of L consumed at this node */
    for (;;) {
        int64_t n = G->len - 1;
        if (n <= 0)
            break;
        if (n == 1) {
            roots[(*nr)++] = fkm_negmod(G->c[0], F);
            break;
        }
        if (used >= L->nu) {
            st = descent_start(C, G, 0, rng, roots, nr, depth + 1);
            break;
        }
        /* H = U_j - w^(E/2) mod G */
        const fkm_poly_t *U = &L->u[used];
        uint64_t mu = fkm_powmod(C->root, E / 2, F);
        if ((st = fkm_poly_set(&H, U->c, U->len)) ||
            (st = add_monomial(&H, fkm_negmod(mu, F), 0, F)))
            break;
        if ((st = fkm_poly_gcd(C, G->c, G->len, H.c, H.len, &G1)))
            break;
        used++;
        if (G1.len <= 1 || G1.len == G->len) {
            /* every root on one side: the next level, same node */
            E = G1.len == G->len ? E / 2 : E / 2 + half;
            continue;
        }
        if ((st = divexact(C, G, &G1, &G2)))
            break;
        int64_t rest = L->nu - used;
        int64_t k1 = descent_keep(G1.len - 1), k2 = descent_keep(G2.len - 1);
        if ((st = ulist_reduce(C, L, used, k1 < rest ? k1 : rest, &G1, &L1)) ||
            (st = ulist_reduce(C, L, used, k2 < rest ? k2 : rest, &G2, &L2)))
            break;
        ulist_clear(L);
        if ((st = descent_node(C, &G1, &L1, E / 2, rng, roots, nr, depth)))
            break;
        st = descent_node(C, &G2, &L2, E / 2 + half, rng, roots, nr, depth);
        break;
    }
    ulist_clear(L);
    ulist_clear(&L1);
    ulist_clear(&L2);
    fkm_poly_clear(&H);
    fkm_poly_clear(&G1);
    fkm_poly_clear(&G2);
    return st;
}

/* D <- D / (x - r) for a root r of the monic D (synthetic division). */
static void deflate(fkm_poly_t *D, uint64_t r, fkm_field_t F)
{
    int64_t n = D->len - 1;
    uint64_t carry = D->c[n];
    for (int64_t i = n - 1; i >= 0; i--) {
        uint64_t t = fkm_addmod(D->c[i], fkm_mulmod(carry, r, F), F);
        D->c[i] = carry;
        carry = t;
    }
    D->len = n;
}

/* Roots of a monic G of degree >= 1 by the descent from a fresh shift.
 * check: G is not known to split; FKM_ENOTSPLIT unless it is a product of
 * distinct linear factors (the test is U_k == 1, free with the chain).
 * A shift that is minus a root gives that root: it is divided out (with
 * check, a second time means a repeated root). */
static int descent_start(fkm_pctx_t *C, const fkm_poly_t *G, int check,
                         fkm_rng_t *rng, uint64_t *roots, int64_t *nr,
                         int depth)
{
    fkm_field_t F = C->F;
    const int k = C->two_adicity;
    if (depth > SPLIT_ATTEMPTS)
        return FKM_ENOSPLIT_RNG;
    fkm_poly_t D;
    fkm_poly_init(&D);
    ulist_t L = {NULL, 0};
    uint64_t *chain = NULL;
    int st = fkm_poly_set(&D, G->c, G->len);
    uint64_t a = 0;
    int attempt = 0;
    while (!st && D.len > 2) {
        if (++attempt > SPLIT_ATTEMPTS) {
            st = FKM_ENOSPLIT_RNG;
            break;
        }
        a = rand_elem(rng, F);
        uint64_t r = fkm_negmod(a, F);
        if (fkm_poly_eval(D.c, D.len, r, F) != 0)
            break;
        roots[(*nr)++] = r;
        deflate(&D, r, F);
        if (check && fkm_poly_eval(D.c, D.len, r, F) == 0)
            st = FKM_ENOTSPLIT;
    }
    if (st || D.len <= 2) {
        if (!st && D.len == 2)
            roots[(*nr)++] = fkm_negmod(D.c[0], F);
        goto done;
    }
    int64_t n = D.len - 1;
    int64_t keep = descent_keep(n);
    if (keep > k)
        keep = k;
    /* chain U_(k-keep), ..., U_k (U_k only to check) */
    int64_t nsq = check ? keep : keep - 1;
    uint64_t e = (F.p - 1) >> keep;
    uint64_t lin[2] = {a, 1};
    chain = fkm_alloc_large((size_t)((nsq + 1) * n) * sizeof *chain);
    if (!chain) {
        st = FKM_ENOMEM;
        goto done;
    }
    st = fkm_poly_powmod_chain(C, lin, 2, &e, 1, D.c, D.len, nsq, chain);
    if (!st && check) {
        const uint64_t *uk = chain + nsq * n;
        int one = uk[0] == 1;
        for (int64_t i = 1; i < n && one; i++)
            one = uk[i] == 0;
        if (!one)
            st = FKM_ENOTSPLIT;
    }
    if (!st)
        st = ulist_alloc(&L, keep);
    /* L.u[i] = U_(k-1-i) = chain block keep - 1 - i */
    for (int64_t i = 0; i < keep && !st; i++) {
        const uint64_t *blk = chain + (keep - 1 - i) * n;
        st = fkm_poly_set(&L.u[i], blk, fkm_poly_normlen(blk, n));
    }
    fkm_free_large(chain);
    chain = NULL;
    if (!st)
        st = descent_node(C, &D, &L, 0, rng, roots, nr, depth);
done:
    ulist_clear(&L);
    fkm_poly_clear(&D);
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
    if (require_split && C->two_adicity >= 4 && lf - 1 >= DESCENT_MIN_DEG) {
        st = descent_start(C, &G, 1, rng, roots, nroots, 0);
        for (int64_t i = 0; i < *nroots; i++)
            mult[i] = 1;
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
        if (H.len > 1 && C->two_adicity >= 4 && H.len - 1 >= DESCENT_MIN_DEG)
            st = descent_start(C, &H, 0, rng, roots, nroots, 0);
        else if (H.len > 1)
            st = split_linear(C, &H, rng, roots, nroots);
        if (st)
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
