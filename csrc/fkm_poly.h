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

/* Modulus context: the field and, for NTT primes, twiddle tables that grow
 * on demand.  Owned by the caller; kernels that multiply may enlarge the
 * tables (fkm_pctx_reserve), so a context is not shared between threads
 * unless its tables are already large enough (see fkm_vdm_solve). */
typedef struct {
    fkm_field_t F;
    int two_adicity;    /* k with 2^k || p - 1 when p < 2^62, else 0 (no NTT) */
    uint64_t root;      /* a primitive 2^two_adicity-th root of unity */
    int ntt_log;        /* log2 of the twiddle tables' size, -1 when none */
    uint64_t *tw, *twpre;   /* forward twiddles, index len + j: w_{2len}^j */
    uint64_t *itw, *itwpre; /* inverse twiddles */
} fkm_pctx_t;

/* fkm_pctx_init
 * C      OUT: a context for F_p, no tables yet
 * p      the modulus, 2 <= p < 2^63, prime (primality unchecked; the NTT
 *        set-up searches a quadratic non-residue, which ends for a prime)
 * Returns FKM_OK or FKM_EDOM (p out of range).  fkm_pctx_clear is allowed
 * after either. */
int fkm_pctx_init(fkm_pctx_t *C, uint64_t p);
/* fkm_pctx_clear: release C's tables (C stays a valid context without). */
void fkm_pctx_clear(fkm_pctx_t *C);
/* fkm_pctx_reserve: make NTT tables for products of up to len
 * coefficients (no-op when the prime does not allow it or the tables are
 * big enough).  Returns FKM_OK or FKM_ENOMEM. */
int fkm_pctx_reserve(fkm_pctx_t *C, int64_t len);

/* Growable polynomial: c[0 .. len) are the coefficients, cap the room.
 * fkm_poly_init makes it empty without memory; fkm_poly_clear releases it;
 * fkm_poly_fit ensures cap >= cap_wanted (contents kept; FKM_ENOMEM on
 * failure, P unchanged); fkm_poly_set copies la coefficients (a may be
 * NULL when la == 0; FKM_ENOMEM); fkm_poly_swap exchanges two. */
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

/* Length without trailing zero coefficients (la >= 0). */
static inline int64_t fkm_poly_normlen(const uint64_t *a, int64_t la)
{
    while (la > 0 && a[la - 1] == 0)
        la--;
    return la;
}

/* Common contract of the kernels below: C from fkm_pctx_init; input
 * coefficients in [0, p) (unchecked); an input of length 0 may be NULL;
 * outputs never overlap inputs. */

/* fkm_poly_mul
 * out    OUT, la + lb - 1 coefficients: a * b
 * a, b   IN, la and lb coefficients (trailing zeros allowed)
 * Returns FKM_OK, FKM_EDOM (la < 1 or lb < 1) or FKM_ENOMEM. */
int fkm_poly_mul(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                 const uint64_t *b, int64_t lb, uint64_t *out);

/* fkm_poly_mullow
 * out    OUT, n coefficients: (a * b) mod x^n (zeros when la or lb is 0;
 *        nothing written when n <= 0)
 * Returns FKM_OK or FKM_ENOMEM. */
int fkm_poly_mullow(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                    const uint64_t *b, int64_t lb, int64_t n, uint64_t *out);

/* fkm_poly_inv_series
 * out    OUT, n coefficients: a^{-1} mod x^n (nothing written when n <= 0)
 * a      IN, la coefficients
 * Returns FKM_OK, FKM_EDOM (la < 1 or a[0] == 0) or FKM_ENOMEM. */
int fkm_poly_inv_series(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                        int64_t n, uint64_t *out);

/* fkm_poly_divrem: a = q b + r, deg r < deg b.
 * q      OUT, la - lb + 1 coefficients, or NULL (not wanted)
 * r      OUT, lb - 1 coefficients, or NULL (not wanted)
 * a      IN, la coefficients; b IN, lb coefficients with b[lb-1] != 0
 * Returns FKM_OK, FKM_EDOM (lb < 1, la < lb or b[lb-1] == 0) or
 * FKM_ENOMEM. */
int fkm_poly_divrem(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                    const uint64_t *b, int64_t lb, uint64_t *q, uint64_t *r);

/* fkm_poly_gcd
 * G      OUT: the monic gcd of a and b, normalized (G->len == 0 when
 *        a = b = 0)
 * a, b   IN, la, lb >= 0 coefficients (trailing zeros allowed)
 * Returns FKM_OK or FKM_ENOMEM. */
int fkm_poly_gcd(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                 const uint64_t *b, int64_t lb, fkm_poly_t *G);

/* fkm_poly_gcd_classical: fkm_poly_gcd by Euclid's remainder sequence,
 * O(deg a deg b) (the reference and the small-degree path). */
int fkm_poly_gcd_classical(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                           const uint64_t *b, int64_t lb, fkm_poly_t *G);

/* fkm_poly_gcd_hgcd: fkm_poly_gcd through the half-gcd (fkm_hgcd.c),
 * O(M(n) log n), classical Euclid below degree cut.  cut <= 0 takes the
 * measured default (fkm_poly_gcd is this call with cut = 0); a positive cut
 * below the half-gcd's own base case (64) lowers that too (raised to 4 at
 * least), so tests can force every path at small degrees.  Same contract
 * as fkm_poly_gcd. */
int fkm_poly_gcd_hgcd(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                      const uint64_t *b, int64_t lb, fkm_poly_t *G,
                      int64_t cut);

/* fkm_poly_xgcd: G = S a + T b.
 * G, S, T OUT, distinct: the monic gcd (normalized, empty when a = b = 0)
 *        and Bezout cofactors
 * a, b   IN as for fkm_poly_gcd
 * Returns FKM_OK or FKM_ENOMEM. */
int fkm_poly_xgcd(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                  const uint64_t *b, int64_t lb, fkm_poly_t *G,
                  fkm_poly_t *S, fkm_poly_t *T);

/* fkm_poly_powmod
 * out    OUT, n = deg f coefficients: base^e mod f
 * base   IN, lbase >= 0 coefficients (any degree)
 * e      IN, the exponent as ne >= 0 little-endian 64-bit limbs (e = 0 when
 *        ne == 0 or all limbs are 0: out = 1 mod f)
 * f      IN, lf coefficients, trailing zeros allowed, deg f >= 1 (need
 *        not be monic)
 * Returns FKM_OK, FKM_EDOM (deg f < 1) or FKM_ENOMEM. */
int fkm_poly_powmod(fkm_pctx_t *C, const uint64_t *base, int64_t lbase,
                    const uint64_t *e, int64_t ne, const uint64_t *f,
                    int64_t lf, uint64_t *out);

/* fkm_poly_powmod_chain: base^e mod f and nsq >= 0 successive squares.
 * out    OUT, (nsq + 1) n coefficients, n = deg f: block i is
 *        base^(e 2^i) mod f
 * Other arguments and returns as for fkm_poly_powmod (fkm_poly_powmod is
 * this call with nsq = 0). */
int fkm_poly_powmod_chain(fkm_pctx_t *C, const uint64_t *base, int64_t lbase,
                          const uint64_t *e, int64_t ne, const uint64_t *f,
                          int64_t lf, int64_t nsq, uint64_t *out);

/* Reduction modulo a fixed monic f of degree n >= 1, for many
 * remainders: rev(f)^-1 and, for large n with an NTT prime, the transforms
 * of it and of f are computed once (fields private to fkm_poly.c).
 * fkm_polymod_init: M OUT; f IN, lf >= 2 coefficients, f[lf-1] == 1 (f is
 * kept by pointer: it must outlive M).  Returns FKM_OK or FKM_ENOMEM (M
 * then holds nothing).  fkm_polymod_clear releases M.
 * fkm_polymod_rem: out OUT, n coefficients: a mod f; a INOUT, la >= 0
 * coefficients, used as scratch (its contents are unspecified after);
 * out may be a.  Returns FKM_OK or FKM_ENOMEM. */
typedef struct {
    int64_t n;
    const uint64_t *f;
    uint64_t *finv;      /* rev(f)^-1 mod x^(n-1) */
    int ntt;
    int Lq, Lr;
    uint64_t *finv_hat, *f_hat;
    uint64_t *buf;       /* scratch 2^Lq + 2^Lr words */
    uint64_t sq, sqpre, sr, srpre;
} fkm_polymod_t;

int fkm_polymod_init(fkm_polymod_t *M, fkm_pctx_t *C, const uint64_t *f,
                     int64_t lf);
void fkm_polymod_clear(fkm_polymod_t *M);
int fkm_polymod_rem(fkm_polymod_t *M, fkm_pctx_t *C, uint64_t *a, int64_t la,
                    uint64_t *out);

/* fkm_poly_derivative
 * out    OUT, la - 1 coefficients: a' (nothing written when la <= 1)
 * a      IN, la >= 0 coefficients */
void fkm_poly_derivative(const uint64_t *a, int64_t la, uint64_t *out,
                         fkm_field_t F);

/* fkm_poly_eval: a(x) for a of la >= 0 coefficients and x in [0, p). */
uint64_t fkm_poly_eval(const uint64_t *a, int64_t la, uint64_t x,
                       fkm_field_t F);

#endif /* FKM_POLY_H */
