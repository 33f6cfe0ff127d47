/* fkm_hgcd.c -- half-gcd over F_p and what it makes fast: the gcd and the
 * Pade form of Berlekamp-Massey (see fkm_poly.h, fkm_bm.h).
 *
 * hgcd(a, b), deg a = n > deg b, returns the 2x2 polynomial matrix M of the
 * Euclidean quotients that take (a, b) to the consecutive remainders
 * (a', b') = M (a, b) with deg a' >= m = ceil(n/2) > deg b' (the recursive
 * algorithm of von zur Gathen & Gerhard, Modern Computer Algebra, ch. 11,
 * in the form of Thull & Yap, "A unified approach to HGCD algorithms for
 * polynomials and integers": recurse on the top halves, one Euclidean step,
 * recurse on the top of what is left).  Below a cut-off the quotients come
 * from classical Euclid.  O(M(n) log n) with NTT multiplication.
 */
#include "fkm_poly.h"
#include "fkm_bm.h"

#include <string.h>

/* Measured crossovers (benchmarks/bench_field.py, DEFAULT_PRIME): below
 * these degrees classical Euclid / the quadratic Berlekamp-Massey win. */
/* Crossovers measured with DEFAULT_PRIME on random inputs (gcd of degrees
 * n, n - 1; the Pade form is in fkm_bm.c): below HGCD_BASE_CUT the half-gcd
 * takes its quotients from classical Euclid, below GCD_HGCD_CUT the gcd is
 * classical Euclid (0.55 ms against 1.6 ms at degree 512, 7.5 against 9.6
 * at 2048; the half-gcd wins from about 2500 on). */
#define HGCD_BASE_CUT 64
#define GCD_HGCD_CUT 2500

typedef struct {
    fkm_poly_t e[4]; /* e[0] e[1] / e[2] e[3] */
} mat_t;

static void mat_init(mat_t *M)
{
    for (int i = 0; i < 4; i++)
        fkm_poly_init(&M->e[i]);
}

static void mat_clear(mat_t *M)
{
    for (int i = 0; i < 4; i++)
        fkm_poly_clear(&M->e[i]);
}

static int mat_identity(mat_t *M)
{
    uint64_t one = 1;
    int st = fkm_poly_set(&M->e[0], &one, 1);
    if (!st) st = fkm_poly_set(&M->e[1], NULL, 0);
    if (!st) st = fkm_poly_set(&M->e[2], NULL, 0);
    if (!st) st = fkm_poly_set(&M->e[3], &one, 1);
    return st;
}

/* OUT = A B + C D (any of the products may be zero); OUT distinct from the
 * inputs.  T is scratch. */
static int lincomb(fkm_pctx_t *Cx, fkm_poly_t *OUT, const fkm_poly_t *A,
                   const fkm_poly_t *B, const fkm_poly_t *C, const fkm_poly_t *D,
                   fkm_poly_t *T)
{
    int64_t l1 = (A->len && B->len) ? A->len + B->len - 1 : 0;
    int64_t l2 = (C->len && D->len) ? C->len + D->len - 1 : 0;
    int64_t l = l1 > l2 ? l1 : l2;
    int st = fkm_poly_fit(OUT, l > 0 ? l : 1);
    if (!st)
        st = fkm_poly_fit(T, l2 > 0 ? l2 : 1);
    if (st)
        return st;
    if (l1 && (st = fkm_poly_mul(Cx, A->c, A->len, B->c, B->len, OUT->c)))
        return st;
    memset(OUT->c + l1, 0, (size_t)(l - l1) * sizeof *OUT->c);
    if (l2) {
        if ((st = fkm_poly_mul(Cx, C->c, C->len, D->c, D->len, T->c)))
            return st;
        for (int64_t i = 0; i < l2; i++)
            OUT->c[i] = fkm_addmod(OUT->c[i], T->c[i], Cx->F);
    }
    OUT->len = fkm_poly_normlen(OUT->c, l);
    return FKM_OK;
}

/* OUT = A div x^k (k >= 0). */
static int shift_down(fkm_poly_t *OUT, const fkm_poly_t *A, int64_t k)
{
    int64_t l = A->len > k ? A->len - k : 0;
    return fkm_poly_set(OUT, l ? A->c + k : NULL, l);
}

/* OUT = A mod x^k (k >= 0), normalized. */
static int low_part(fkm_poly_t *OUT, const fkm_poly_t *A, int64_t k)
{
    int64_t l = A->len < k ? A->len : k;
    int st = fkm_poly_set(OUT, A->c, l);
    OUT->len = fkm_poly_normlen(OUT->c, OUT->len);
    return st;
}

/* X = x^k Y + Z (X distinct from Y and Z). */
static int shift_add(fkm_pctx_t *Cx, fkm_poly_t *X, const fkm_poly_t *Y,
                     int64_t k, const fkm_poly_t *Z)
{
    int64_t ly = Y->len ? Y->len + k : 0;
    int64_t l = ly > Z->len ? ly : Z->len;
    int st = fkm_poly_fit(X, l > 0 ? l : 1);
    if (st)
        return st;
    memset(X->c, 0, (size_t)l * sizeof *X->c);
    for (int64_t i = 0; i < Y->len; i++)
        X->c[k + i] = Y->c[i];
    for (int64_t i = 0; i < Z->len; i++)
        X->c[i] = fkm_addmod(X->c[i], Z->c[i], Cx->F);
    X->len = fkm_poly_normlen(X->c, l);
    return FKM_OK;
}

/* Workspace shared down the recursion (one per level would also do; the
 * temporaries below are used between recursive calls only). */
typedef struct {
    fkm_poly_t q, r, t;
} ws_t;

/* One Euclidean step: (A, B) <- (B, A mod B), M <- [[0, 1], [1, -q]] M.
 * B nonzero. */
static int euclid_step(fkm_pctx_t *Cx, fkm_poly_t *A, fkm_poly_t *B, mat_t *M,
                       ws_t *W)
{
    int64_t lq = A->len - B->len + 1;
    int st = fkm_poly_fit(&W->q, lq > 0 ? lq : 1);
    if (!st)
        st = fkm_poly_fit(&W->r, B->len);
    if (st)
        return st;
    if (lq > 0) {
        if ((st = fkm_poly_divrem(Cx, A->c, A->len, B->c, B->len, W->q.c, W->r.c)))
            return st;
        W->q.len = fkm_poly_normlen(W->q.c, lq);
        W->r.len = fkm_poly_normlen(W->r.c, B->len - 1);
    } else {
        W->q.len = 0;
        if ((st = fkm_poly_set(&W->r, A->c, A->len)))
            return st;
    }
    fkm_poly_swap(A, B);
    fkm_poly_swap(B, &W->r);
    if (!M)
        return FKM_OK;
    /* new row 1 = row 0 - q row 1; new row 0 = row 1 */
    for (int j = 0; j < 2; j++) {
        fkm_poly_t *r0 = &M->e[j], *r1 = &M->e[2 + j];
        if (W->q.len && r1->len) {
            int64_t lp = W->q.len + r1->len - 1;
            int64_t l = lp > r0->len ? lp : r0->len;
            if ((st = fkm_poly_fit(&W->t, lp)) || (st = fkm_poly_fit(r0, l)))
                return st;
            if ((st = fkm_poly_mul(Cx, W->q.c, W->q.len, r1->c, r1->len, W->t.c)))
                return st;
            for (int64_t i = r0->len; i < l; i++)
                r0->c[i] = 0;
            for (int64_t i = 0; i < lp; i++)
                r0->c[i] = fkm_submod(r0->c[i], W->t.c[i], Cx->F);
            r0->len = fkm_poly_normlen(r0->c, l);
        }
        fkm_poly_swap(r0, r1);
    }
    return FKM_OK;
}

/* The half-gcd: A, B normalized with A->len > B->len, A->len >= 2.
 * M OUT: the quotient matrix; RA, RB OUT: M (A, B), deg RA >= ceil(n/2) >
 * deg RB for n = deg A.  All outputs distinct from the inputs. */
static int hgcd(fkm_pctx_t *Cx, const fkm_poly_t *A, const fkm_poly_t *B,
                mat_t *M, fkm_poly_t *RA, fkm_poly_t *RB, int64_t cut)
{
    int64_t n = A->len - 1, m = (n + 1) / 2;
    int st;
    if ((st = mat_identity(M)) || (st = fkm_poly_set(RA, A->c, A->len)) ||
        (st = fkm_poly_set(RB, B->c, B->len)))
        return st;
    if (B->len - 1 < m)
        return FKM_OK;
    ws_t W;
    fkm_poly_init(&W.q);
    fkm_poly_init(&W.r);
    fkm_poly_init(&W.t);
    if (n < cut) {
        while (!st && RB->len - 1 >= m)
            st = euclid_step(Cx, RA, RB, M, &W);
        fkm_poly_clear(&W.q);
        fkm_poly_clear(&W.r);
        fkm_poly_clear(&W.t);
        return st;
    }
    mat_t R, S;
    mat_init(&R);
    mat_init(&S);
    fkm_poly_t A0, B0, A1, B1, X, Y, T;
    fkm_poly_t *tmp[] = {&A0, &B0, &A1, &B1, &X, &Y, &T};
    for (int i = 0; i < 7; i++)
        fkm_poly_init(tmp[i]);
    /* first half: the top n - m + 1 coefficients */
    if ((st = shift_down(&A0, A, m)) || (st = shift_down(&B0, B, m)))
        goto done;
    if ((st = hgcd(Cx, &A0, &B0, &R, &X, &Y, cut)))
        goto done;
    /* (RA, RB) = x^m (X, Y) + R (A mod x^m, B mod x^m) */
    if ((st = low_part(&A1, A, m)) || (st = low_part(&B1, B, m)))
        goto done;
    if ((st = lincomb(Cx, &A0, &R.e[0], &A1, &R.e[1], &B1, &T)) ||
        (st = lincomb(Cx, &B0, &R.e[2], &A1, &R.e[3], &B1, &T)) ||
        (st = shift_add(Cx, RA, &X, m, &A0)) ||
        (st = shift_add(Cx, RB, &Y, m, &B0)))
        goto done;
    for (int i = 0; i < 4; i++)
        fkm_poly_swap(&M->e[i], &R.e[i]);
    if (RB->len - 1 < m)
        goto done;
    if ((st = euclid_step(Cx, RA, RB, M, &W)))
        goto done;
    if (RB->len - 1 < m)
        goto done;
    /* second half: the top of what is left */
    int64_t l = RA->len - 1, k = 2 * m - l;
    if ((st = shift_down(&A0, RA, k)) || (st = shift_down(&B0, RB, k)))
        goto done;
    if ((st = hgcd(Cx, &A0, &B0, &S, &X, &Y, cut)))
        goto done;
    if ((st = low_part(&A1, RA, k)) || (st = low_part(&B1, RB, k)))
        goto done;
    if ((st = lincomb(Cx, &A0, &S.e[0], &A1, &S.e[1], &B1, &T)) ||
        (st = lincomb(Cx, &B0, &S.e[2], &A1, &S.e[3], &B1, &T)) ||
        (st = shift_add(Cx, RA, &X, k, &A0)) ||
        (st = shift_add(Cx, RB, &Y, k, &B0)))
        goto done;
    /* M <- S M */
    for (int j = 0; j < 2; j++) {
        if ((st = lincomb(Cx, &R.e[j], &S.e[0], &M->e[j], &S.e[1], &M->e[2 + j], &T)) ||
            (st = lincomb(Cx, &R.e[2 + j], &S.e[2], &M->e[j], &S.e[3], &M->e[2 + j], &T)))
            goto done;
    }
    for (int i = 0; i < 4; i++)
        fkm_poly_swap(&M->e[i], &R.e[i]);
done:
    for (int i = 0; i < 7; i++)
        fkm_poly_clear(tmp[i]);
    mat_clear(&R);
    mat_clear(&S);
    fkm_poly_clear(&W.q);
    fkm_poly_clear(&W.r);
    fkm_poly_clear(&W.t);
    return st;
}

static int64_t clamp_cut(int64_t cut)
{
    return cut < 4 ? 4 : cut;
}

/* The half-gcd's base case for a caller's crossover: a crossover below the
 * default base case (tests) lowers it too. */
static int64_t base_cut(int64_t cut)
{
    return cut > 0 && cut < HGCD_BASE_CUT ? clamp_cut(cut) : HGCD_BASE_CUT;
}

int fkm_poly_gcd_hgcd(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                      const uint64_t *b, int64_t lb, fkm_poly_t *G,
                      int64_t cut)
{
    FKM_ASSERT(C != NULL && G != NULL && la >= 0 && lb >= 0);
    FKM_ASSERT((la == 0 || a != NULL) && (lb == 0 || b != NULL));
    int64_t gcut = cut > 0 ? clamp_cut(cut) : GCD_HGCD_CUT;
    int64_t hcut = base_cut(cut);
    fkm_poly_t A, B, RA, RB;
    fkm_poly_init(&A);
    fkm_poly_init(&B);
    fkm_poly_init(&RA);
    fkm_poly_init(&RB);
    ws_t W;
    fkm_poly_init(&W.q);
    fkm_poly_init(&W.r);
    fkm_poly_init(&W.t);
    mat_t M;
    mat_init(&M);
    la = fkm_poly_normlen(a, la);
    lb = fkm_poly_normlen(b, lb);
    int st = la >= lb ? fkm_poly_set(&A, a, la) : fkm_poly_set(&A, b, lb);
    if (!st)
        st = la >= lb ? fkm_poly_set(&B, b, lb) : fkm_poly_set(&B, a, la);
    /* equal degrees: one step first, so that deg A > deg B */
    if (!st && B.len > 0 && A.len == B.len)
        st = euclid_step(C, &A, &B, NULL, &W);
    while (!st && B.len > 0 && A.len - 1 >= gcut) {
        if ((st = hgcd(C, &A, &B, &M, &RA, &RB, hcut)))
            break;
        fkm_poly_swap(&A, &RA);
        fkm_poly_swap(&B, &RB);
        if (B.len > 0)
            st = euclid_step(C, &A, &B, NULL, &W);
    }
    if (!st)
        st = fkm_poly_gcd_classical(C, A.c, A.len, B.c, B.len, G);
    fkm_poly_clear(&A);
    fkm_poly_clear(&B);
    fkm_poly_clear(&RA);
    fkm_poly_clear(&RB);
    fkm_poly_clear(&W.q);
    fkm_poly_clear(&W.r);
    fkm_poly_clear(&W.t);
    mat_clear(&M);
    return st;
}

int fkm_bm_pade(fkm_pctx_t *C, const uint64_t *s, int64_t N, uint64_t *c,
                int64_t *lc, int *found, int64_t cut)
{
    FKM_ASSERT(C != NULL && N >= 0 && (N == 0 || s != NULL));
    FKM_ASSERT(c != NULL && lc != NULL && found != NULL);
    *found = 0;
    int64_t hcut = base_cut(cut);
    fkm_poly_t A, B, RA, RB;
    fkm_poly_init(&A);
    fkm_poly_init(&B);
    fkm_poly_init(&RA);
    fkm_poly_init(&RB);
    mat_t M;
    mat_init(&M);
    /* h = sum_i s_i x^(N-1-i); f h mod x^N of degree < deg f = L is the
     * recurrence s_n + c_1 s_{n-1} + ... + c_L s_{n-L} = 0 (L <= n < N)
     * for f = x^L C(1/x) monic */
    int st = fkm_poly_fit(&B, N > 0 ? N : 1);
    if (st)
        goto done;
    for (int64_t i = 0; i < N; i++)
        B.c[i] = s[N - 1 - i];
    B.len = fkm_poly_normlen(B.c, N);
    if (B.len == 0) {
        /* all-zero terms: C = 1, L = 0 */
        memset(c, 0, (size_t)(N + 1) * sizeof *c);
        c[0] = 1 % C->F.p;
        *lc = 1;
        *found = 1;
        goto done;
    }
    if ((st = fkm_poly_fit(&A, N + 1)))
        goto done;
    memset(A.c, 0, (size_t)N * sizeof *A.c);
    A.c[N] = 1;
    A.len = N + 1;
    if ((st = hgcd(C, &A, &B, &M, &RA, &RB, hcut)))
        goto done;
    /* RA = r_j, RB = r_(j+1), deg r_j >= ceil(N/2) > deg r_(j+1): the
     * cofactor t_(j+1) = M[1][1] has degree N - deg r_j <= N/2; it is the
     * unique shortest recurrence iff deg r_(j+1) < that degree; else the
     * shortest is longer than N/2, not unique, and left to Massey's
     * iteration (whose choice among them is the reference). */
    int64_t L = N - (RA.len - 1);
    const fkm_poly_t *T = &M.e[3];
    if (RB.len - 1 >= L || T->len != L + 1)
        goto done;
    uint64_t il = fkm_invmod(T->c[L], C->F);
    for (int64_t i = 0; i <= L; i++)
        c[i] = fkm_mulmod(T->c[L - i], il, C->F);
    memset(c + L + 1, 0, (size_t)(N - L) * sizeof *c);
    *lc = L + 1;
    *found = 1;
done:
    fkm_poly_clear(&A);
    fkm_poly_clear(&B);
    fkm_poly_clear(&RA);
    fkm_poly_clear(&RB);
    mat_clear(&M);
    return st;
}

int fkm_poly_gcd(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                 const uint64_t *b, int64_t lb, fkm_poly_t *G)
{
    return fkm_poly_gcd_hgcd(C, a, la, b, lb, G, 0);
}
