/* fkm_poly.h -- dense polynomials over F_p (2 <= p < 2^63).
 *
 * A polynomial is an array of uint64_t coefficients in [0, p), low degree
 * first, with an explicit length (number of coefficients).  Raw-array
 * primitives take (pointer, length) pairs and write into caller-provided
 * outputs that never alias the inputs unless stated.  Algorithms with
 * outputs of data-dependent size use fkm_poly_t, a growable array.
 *
 * Every kernel returns an FKM_* status; none aborts or prints, none keeps
 * global state.  Work that depends on the modulus only (NTT tables) lives in
 * an fkm_pctx_t owned by the caller.
 *
 * Multiplication: schoolbook with a lazily reduced 3-word accumulator for
 * short operands; a number-theoretic transform when p = c 2^k + 1 < 2^62
 * with 2^k at least the product length (Harvey's lazy butterflies, values
 * kept below 4p < 2^64); Karatsuba for other primes.
 */
#ifndef FKM_POLY_H
#define FKM_POLY_H

#include <stdint.h>

#include "fkm_common.h"
#include "fkm_field.h"
#include "fkm_rng.h"

typedef struct {
    fkm_field_t F;
    int two_adicity;    /* k with 2^k || p - 1 when p < 2^62, else 0 (no NTT) */
    uint64_t root;      /* a primitive 2^two_adicity-th root of unity */
    int ntt_log;        /* log2 of the twiddle tables' size, -1 when none */
    uint64_t *tw, *twpre;   /* forward twiddles, index len + j: w_{2len}^j */
    uint64_t *itw, *itwpre; /* inverse twiddles */
} fkm_pctx_t;

int fkm_pctx_init(fkm_pctx_t *C, uint64_t p);
void fkm_pctx_clear(fkm_pctx_t *C);
/* Make NTT tables for products of up to len coefficients (no-op when the
 * prime does not allow it or the tables are big enough). */
int fkm_pctx_reserve(fkm_pctx_t *C, int64_t len);

/* Growable polynomial. */
typedef struct {
    uint64_t *c;
    int64_t len;
    int64_t cap;
} fkm_poly_t;

void fkm_poly_init(fkm_poly_t *P);
void fkm_poly_clear(fkm_poly_t *P);
int fkm_poly_fit(fkm_poly_t *P, int64_t cap);
int fkm_poly_set(fkm_poly_t *P, const uint64_t *a, int64_t la);
void fkm_poly_swap(fkm_poly_t *A, fkm_poly_t *B);

/* Length without trailing zero coefficients. */
static inline int64_t fkm_poly_normlen(const uint64_t *a, int64_t la)
{
    while (la > 0 && a[la - 1] == 0)
        la--;
    return la;
}

/* out[0 .. la+lb-2] = a * b (la, lb >= 1). */
int fkm_poly_mul(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                 const uint64_t *b, int64_t lb, uint64_t *out);
/* out[0 .. n-1] = (a * b) mod x^n. */
int fkm_poly_mullow(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                    const uint64_t *b, int64_t lb, int64_t n, uint64_t *out);
/* out[0 .. n-1] = a^{-1} mod x^n; FKM_EDOM when a[0] == 0. */
int fkm_poly_inv_series(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                        int64_t n, uint64_t *out);
/* a = q b + r with b[lb-1] != 0 and la >= lb: q has la-lb+1 coefficients,
 * r has lb-1 (q or r may be NULL when not wanted). */
int fkm_poly_divrem(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                    const uint64_t *b, int64_t lb, uint64_t *q, uint64_t *r);

/* Monic gcd into G (G->len == 0 when a = b = 0). */
int fkm_poly_gcd(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                 const uint64_t *b, int64_t lb, fkm_poly_t *G);
/* Monic gcd G = S a + T b. */
int fkm_poly_xgcd(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                  const uint64_t *b, int64_t lb, fkm_poly_t *G,
                  fkm_poly_t *S, fkm_poly_t *T);

/* out[0 .. lf-2] = base^e mod f, e given as ne little-endian 64-bit limbs;
 * f has lf >= 2 coefficients with f[lf-1] != 0. */
int fkm_poly_powmod(fkm_pctx_t *C, const uint64_t *base, int64_t lbase,
                    const uint64_t *e, int64_t ne, const uint64_t *f,
                    int64_t lf, uint64_t *out);

/* out[0 .. la-2] = a' (la >= 1; nothing written when la == 1). */
void fkm_poly_derivative(const uint64_t *a, int64_t la, uint64_t *out,
                         fkm_field_t F);
uint64_t fkm_poly_eval(const uint64_t *a, int64_t la, uint64_t x,
                       fkm_field_t F);
/* out[i] = a(x[i]) for i < n (subproduct tree for large n). */
int fkm_poly_eval_multi(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                        const uint64_t *x, int64_t n, uint64_t *out);

/* Berlekamp-Massey: the connection polynomial of s[0 .. N-1] into c
 * (capacity N + 1, c[0] = 1) and its length L + 1 in *lc, L being the
 * linear complexity. */
int fkm_berlekamp_massey(fkm_field_t F, const uint64_t *s, int64_t N,
                         uint64_t *c, int64_t *lc);

/* Distinct roots of a nonzero f (lf >= 1, f[lf-1] != 0), ascending, with
 * multiplicities; roots and mult need capacity lf - 1.  With require_split
 * f must be a product of distinct linear factors, else FKM_ENOTSPLIT. */
int fkm_poly_roots(fkm_pctx_t *C, const uint64_t *f, int64_t lf,
                   int require_split, fkm_rng_t *rng, uint64_t *roots,
                   int64_t *mult, int64_t *nroots);

/* Factor lists: nf monic factors, factor i has coefficients
 * coef[off[i] .. off[i+1]-1] and exponent exps[i]; capacities: coef
 * 2 (lf - 1), off lf, exps lf - 1. */
typedef struct {
    uint64_t *coef;
    int64_t *off;
    int64_t *exps;
    int64_t nf;
} fkm_faclist_t;

/* Square-free factorization of a nonzero nonconstant monic f. */
int fkm_poly_sqf(fkm_pctx_t *C, const uint64_t *f, int64_t lf,
                 fkm_faclist_t *out);
/* Irreducible factorization of a nonzero nonconstant monic f, sorted by
 * degree then coefficients (high first). */
int fkm_poly_factor(fkm_pctx_t *C, const uint64_t *f, int64_t lf,
                    fkm_rng_t *rng, fkm_faclist_t *out);

/* Transposed Vandermonde solver for m distinct nodes: shared precomputation
 * (subproduct tree, 1/F'(x_j)) and one solve per right-hand side. */
typedef struct {
    int64_t m;
    int levels;          /* tree levels 0 .. levels-1 */
    uint64_t **tree;     /* tree[k]: node i at offset i (2^k + 1) */
    uint64_t *node;      /* copy of the nodes */
    uint64_t *rev_f;     /* prod_j (1 - x_j z), m + 1 coefficients */
    uint64_t *inv_df;    /* 1 / F'(x_j) */
} fkm_vdm_t;

int fkm_vdm_init(fkm_vdm_t *V, fkm_pctx_t *C, const uint64_t *nodes,
                 int64_t m);
void fkm_vdm_clear(fkm_vdm_t *V);
/* c[j] with sum_j c_j x_j^i = s_i for i < m.  C is only read (its tables
 * were sized by fkm_vdm_init), so solves may run concurrently. */
int fkm_vdm_solve(const fkm_vdm_t *V, fkm_pctx_t *C, const uint64_t *s,
                  uint64_t *c);
/* Evaluate a (la <= m + 1... any length) at the tree's nodes. */
int fkm_vdm_eval(const fkm_vdm_t *V, fkm_pctx_t *C, const uint64_t *a,
                 int64_t la, uint64_t *out);

/* Weighted power sums (the forward Vandermonde map): for t < r and i < n,
 * out[t n + i] = sum_{j < k} w[t k + j] x_j^i. */
int fkm_power_sums(fkm_field_t F, const uint64_t *x, int64_t k,
                   const uint64_t *w, int64_t r, int64_t n, uint64_t *out);

/* out[i] = c0 + sum_j a[i d + j] coef[j] mod p for rows of any uint64 a
 * (entries need not be reduced). */
void fkm_affine_rows(fkm_field_t F, const uint64_t *a, int64_t n, int64_t d,
                     const uint64_t *coef, uint64_t c0, uint64_t *out);

/* Mask streams: map 64-bit words to F_p by rejection (keep w < lim, where
 * lim is the largest multiple of p not above 2^64, or 0 meaning 2^64) and
 * add (or subtract) them into acc[filled ..], stopping at n.  Returns the
 * new fill count. */
int64_t fkm_stream_accumulate(fkm_field_t F, const uint64_t *words, int64_t nw,
                              uint64_t lim, int negate, uint64_t *acc,
                              int64_t n, int64_t filled);

/* fkm_stream_accumulate for the first nw words of nk streams at once
 * (words: nk x nw, stream j's words at words + j nw; n <=
 * FKM_STREAMS_MAX_N): acc[0 .. n) gets the kept words of every stream,
 * added or subtracted by negate[j], and filled[j] is the number of words
 * stream j gave (< n when its nw words held too few: the caller continues
 * that stream with fkm_stream_accumulate from filled[j]).  The same values
 * as nk calls of fkm_stream_accumulate. */
#define FKM_STREAMS_MAX_N 64
void fkm_streams_accumulate(fkm_field_t F, const uint64_t *words, int64_t nk, int64_t nw,
                            uint64_t lim, const uint8_t *negate, uint64_t *acc, int64_t n,
                            int64_t *filled);

#endif /* FKM_POLY_H */
