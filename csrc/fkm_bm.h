/* fkm_bm.h -- Berlekamp-Massey over F_p (2 <= p < 2^63, p prime), as an
 * object that takes more terms.
 *
 * For a sequence s_0, s_1, ... the algorithm keeps the connection
 * polynomial C(x) = 1 + c_1 x + ... + c_L x^L of a shortest linear
 * recurrence s_n + c_1 s_{n-1} + ... + c_L s_{n-L} = 0 (L <= n < N) that
 * generates the N terms seen so far; L is the linear complexity (Massey,
 * "Shift-register synthesis and BCH decoding", IEEE Trans. IT 1969).  Each
 * new term costs O(L) field operations, so feeding terms in chunks gives
 * exactly the result of one call on the whole sequence, and a decoder can
 * stop feeding once the complexity settles.  In the secure aggregation
 * decoder (DESIGN.md) the terms are the syndromes of a sparse vector and C
 * is prod_j (1 - x_j x) over its support.
 *
 * Life cycle (FLINT's nmod_berlekamp_massey): fkm_bm_init, any number of
 * fkm_bm_add, fkm_bm_result whenever wanted (the state is unchanged), then
 * fkm_bm_clear.  The state owns its memory; it is not safe to share
 * between threads without a lock.
 */
#ifndef FKM_BM_H
#define FKM_BM_H

#include <stdint.h>

#include "fkm_common.h"
#include "fkm_field.h"
#include "fkm_poly.h"

/* Fields are private to fkm_bm.c except those read by fkm_bm_length and
 * fkm_bm_nterms. */
typedef struct {
    fkm_field_t F;
    uint64_t *s;        /* the n terms fed so far (capacity cap) */
    uint64_t *c;        /* C, capacity cap + 1; zero beyond lenc */
    uint64_t *b;        /* B: C before the last change of L (capacity cap + 1) */
    uint64_t *t;        /* scratch, capacity cap + 1 */
    int64_t n, cap;     /* terms fed, terms the arrays have room for */
    int64_t L;          /* linear complexity of the n terms */
    int64_t lenc, lenb; /* coefficients of C and B written so far */
    int64_t gap;        /* terms since B was C: x^gap B is the update */
    uint64_t bb;        /* the discrepancy when B was C */
} fkm_bm_t;

/* fkm_bm_init
 *
 * bm     OUT: an empty state (n = 0, C = 1, L = 0)
 * F      the field, from fkm_field_init with a prime p (primality
 *        unchecked: the algorithm divides by discrepancies)
 * cap    room to reserve, in terms (>= 0; the state grows past it as
 *        needed: a hint, not a limit)
 * Returns FKM_OK, FKM_EDOM (cap < 0) or FKM_ENOMEM; on error bm holds
 * nothing to free (fkm_bm_clear is still allowed).
 */
int fkm_bm_init(fkm_bm_t *bm, fkm_field_t F, int64_t cap);

/* fkm_bm_clear: release bm's memory (bm then holds an empty state of no
 * capacity; a second clear is allowed). */
void fkm_bm_clear(fkm_bm_t *bm);

/* fkm_bm_add: feed the next n terms.
 *
 * bm     INOUT, from fkm_bm_init
 * terms  IN, n field elements in [0, p) (NULL allowed when n == 0)
 * Returns FKM_OK; FKM_EDOM (n < 0 or some term >= p) or FKM_ENOMEM (the
 * state could not grow), in which case bm is unchanged: no term of this
 * call was consumed.
 */
int fkm_bm_add(fkm_bm_t *bm, const uint64_t *terms, int64_t n);

/* fkm_bm_result: the connection polynomial of the terms fed so far.
 *
 * c      OUT, fkm_bm_length(bm) + 1 coefficients, low degree first, c[0] = 1
 *        (the polynomial 1 for no term or all-zero terms)
 * bm     IN, unchanged
 */
void fkm_bm_result(const fkm_bm_t *bm, uint64_t *c);

/* The linear complexity L of the terms fed so far (deg C <= L). */
static inline int64_t fkm_bm_length(const fkm_bm_t *bm)
{
    return bm->L;
}

/* The number of terms fed so far. */
static inline int64_t fkm_bm_nterms(const fkm_bm_t *bm)
{
    return bm->n;
}

/* fkm_berlekamp_massey: the one-shot form (init, add, result, clear).
 *
 * c      OUT, capacity N + 1: the connection polynomial of s[0 .. N-1],
 *        c[0] = 1, zero beyond degree L
 * lc     OUT: L + 1, the number of coefficients that matter
 * F      the field, as for fkm_bm_init
 * s      IN, N field elements in [0, p) (NULL allowed when N == 0)
 * Returns FKM_OK, FKM_EDOM (N < 0 or some term >= p) or FKM_ENOMEM.
 */
int fkm_berlekamp_massey(fkm_field_t F, const uint64_t *s, int64_t N,
                         uint64_t *c, int64_t *lc);

/* fkm_berlekamp_massey_cut: fkm_berlekamp_massey with the crossover
 * given: N >= cut (cut >= 1) tries the Pade form first (fkm_bm_pade; a
 * cut below the half-gcd's base case lowers it too); cut <= 0 takes the measured
 * default (fkm_berlekamp_massey is this call with cut = 0).  The output is
 * the same for every cut. */
int fkm_berlekamp_massey_cut(fkm_field_t F, const uint64_t *s, int64_t N,
                             uint64_t *c, int64_t *lc, int64_t cut);

/* fkm_bm_pade: the connection polynomial from the extended Euclidean
 * algorithm on x^N and the reversed sequence, stopped by a half-gcd
 * (fkm_hgcd.c; von zur Gathen & Gerhard, Modern Computer Algebra, 12.3),
 * O(M(N) log N).  It answers only when the shortest recurrence is unique
 * (2 L <= N, Massey's uniqueness condition), and then its answer is the
 * one of Massey's iteration.
 *
 * c      OUT, capacity N + 1, written only when *found: as for
 *        fkm_berlekamp_massey
 * lc     OUT: L + 1 when *found
 * found  OUT: 1 when the answer is written, 0 when 2 L > N (the caller
 *        runs Massey's iteration)
 * C      a context for the field, with its NTT tables growing as needed
 * s      IN, N >= 0 field elements in [0, p) (unchecked)
 * cut    the half-gcd's base case (<= 0: the default)
 * Returns FKM_OK or FKM_ENOMEM. */
int fkm_bm_pade(fkm_pctx_t *C, const uint64_t *s, int64_t N, uint64_t *c,
                int64_t *lc, int *found, int64_t cut);

#endif /* FKM_BM_H */
