/* fkm_field.h -- arithmetic in the prime field F_p for word-size primes
 * 2 <= p < 2^63.
 *
 * A field is described by an fkm_field_t passed by value: the modulus and
 * the constants of the Moller-Granlund division by an invariant integer
 * ("Improved division by invariant integers", IEEE TC 2011, Alg. 4), so a
 * general product a*b mod p costs two wide multiplications and no division
 * instruction.  Elements are uint64_t in [0, p).
 *
 * For a multiplier w used many times (NTT twiddles, scalar-vector products)
 * the Shoup form w' = floor(w 2^64 / p) gives a*w mod p with one high and two
 * low multiplications (fkm_mul_shoup).
 */
#ifndef FKM_FIELD_H
#define FKM_FIELD_H

#include <stdint.h>

#include "fkm_common.h"

typedef unsigned __int128 fkm_u128;

typedef struct {
    uint64_t p;    /* the prime modulus */
    uint64_t d;    /* p << norm: normalized divisor (top bit set) */
    uint64_t v;    /* floor((2^128 - 1) / d) - 2^64 */
    int norm;      /* number of leading zero bits of p */
} fkm_field_t;

/* Fill *F for the modulus p (2 <= p < 2^63; primality is the caller's
 * business, see fkm_is_prime).  Returns FKM_EDOM when p is out of range. */
int fkm_field_init(fkm_field_t *F, uint64_t p);

/* Deterministic primality test for every 64-bit integer. */
int fkm_is_prime(uint64_t n);

/* Largest prime < n, for 3 <= n (n = 2^64 is passed as 0).  Returns 0 when
 * there is none (n <= 2). */
uint64_t fkm_prev_prime(uint64_t n);

/* (u1 2^64 + u0) mod p for u1 < p. */
static inline uint64_t fkm_reduce2(uint64_t u1, uint64_t u0, fkm_field_t F)
{
    if (F.norm) {
        u1 = (u1 << F.norm) | (u0 >> (64 - F.norm));
        u0 <<= F.norm;
    }
    fkm_u128 q = (fkm_u128)F.v * u1 + (((fkm_u128)u1 << 64) | u0);
    uint64_t q1 = (uint64_t)(q >> 64) + 1;
    uint64_t q0 = (uint64_t)q;
    uint64_t r = u0 - q1 * F.d;
    if (r > q0)
        r += F.d;
    if (r >= F.d)
        r -= F.d;
    return r >> F.norm;
}

/* x mod p for any 64-bit x. */
static inline uint64_t fkm_reduce1(uint64_t x, fkm_field_t F)
{
    return x < F.p ? x : fkm_reduce2(0, x, F);
}

/* An unsigned 128-bit value mod p (any value). */
static inline uint64_t fkm_reduce128(fkm_u128 x, fkm_field_t F)
{
    uint64_t hi = (uint64_t)(x >> 64);
    if (hi >= F.p)
        hi = fkm_reduce2(0, hi, F);
    return fkm_reduce2(hi, (uint64_t)x, F);
}

static inline uint64_t fkm_addmod(uint64_t a, uint64_t b, fkm_field_t F)
{
    uint64_t s = a + b; /* no wrap: a, b < p < 2^63 */
    return s >= F.p ? s - F.p : s;
}

static inline uint64_t fkm_submod(uint64_t a, uint64_t b, fkm_field_t F)
{
    return a >= b ? a - b : a + (F.p - b);
}

static inline uint64_t fkm_negmod(uint64_t a, fkm_field_t F)
{
    return a ? F.p - a : 0;
}

static inline uint64_t fkm_mulmod(uint64_t a, uint64_t b, fkm_field_t F)
{
    fkm_u128 t = (fkm_u128)a * b;
    return fkm_reduce2((uint64_t)(t >> 64), (uint64_t)t, F);
}

/* Shoup precomputation floor(w 2^64 / p) for w < p. */
static inline uint64_t fkm_shoup_pre(uint64_t w, fkm_field_t F)
{
    return (uint64_t)((((fkm_u128)w) << 64) / F.p);
}

/* a * w mod p in [0, 2p) for any 64-bit a (Harvey's lazy Shoup product). */
static inline uint64_t fkm_mul_shoup_lazy(uint64_t a, uint64_t w, uint64_t wpre,
                                          uint64_t p)
{
    uint64_t q = (uint64_t)(((fkm_u128)a * wpre) >> 64);
    return a * w - q * p;
}

/* a * w mod p in [0, p) for any 64-bit a. */
static inline uint64_t fkm_mul_shoup(uint64_t a, uint64_t w, uint64_t wpre,
                                     uint64_t p)
{
    uint64_t r = fkm_mul_shoup_lazy(a, w, wpre, p);
    return r >= p ? r - p : r;
}

/* a^e mod p (square and multiply).
 * deliberate specialization: powmod_any (fkm_field.c) is the same loop for
 * any 64-bit modulus, by division; this one multiplies in the field's
 * precomputed reduction (fkm_mulmod). */
static inline uint64_t fkm_powmod(uint64_t a, uint64_t e, fkm_field_t F)
{
    uint64_t r = 1 % F.p;
    while (e) {
        if (e & 1)
            r = fkm_mulmod(r, a, F);
        a = fkm_mulmod(a, a, F);
        e >>= 1;
    }
    return r;
}

/* Inverse of a nonzero a < p (extended Euclid); 0 for a == 0. */
static inline uint64_t fkm_invmod(uint64_t a, fkm_field_t F)
{
    if (a == 0)
        return 0;
    int64_t t0 = 0, t1 = 1;
    uint64_t r0 = F.p, r1 = a;
    while (r1) {
        uint64_t q = r0 / r1;
        uint64_t r2 = r0 - q * r1;
        int64_t t2 = t0 - (int64_t)q * t1;
        r0 = r1;
        r1 = r2;
        t0 = t1;
        t1 = t2;
    }
    /* |t0| < p < 2^63 */
    return t0 < 0 ? (uint64_t)(t0 + (int64_t)F.p) : (uint64_t)t0;
}

/* Accumulator of sums of products of field elements: a 3-word integer
 * (hi:lo 128 bits plus a carry count), reduced once at the end. */
typedef struct {
    fkm_u128 acc;
    uint64_t carry;
} fkm_acc_t;

static inline void fkm_acc_addmul(fkm_acc_t *A, uint64_t a, uint64_t b)
{
    fkm_u128 t = (fkm_u128)a * b;
    A->acc += t;
    A->carry += (A->acc < t);
}

static inline uint64_t fkm_acc_reduce(const fkm_acc_t *A, fkm_field_t F)
{
    uint64_t c = fkm_reduce1(A->carry, F);
    uint64_t r = fkm_reduce2(c, (uint64_t)(A->acc >> 64), F);
    return fkm_reduce2(r, (uint64_t)A->acc, F);
}

#endif /* FKM_FIELD_H */
