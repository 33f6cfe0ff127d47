/* fkm_field.c -- field set-up and primality (see fkm_field.h). */
#include "fkm_field.h"

int fkm_field_init(fkm_field_t *F, uint64_t p)
{
    FKM_ASSERT(F != NULL);
    if (p < 2 || p >= ((uint64_t)1 << 63))
        return FKM_EDOM;
    F->p = p;
    F->norm = __builtin_clzll(p);
    F->d = p << F->norm;
    /* v = floor((2^128 - 1) / d) - 2^64 = floor((2^128 - 1 - d 2^64) / d) */
    fkm_u128 num = ~(fkm_u128)0 - ((fkm_u128)F->d << 64);
    F->v = (uint64_t)(num / F->d);
    return FKM_OK;
}

/* a * b mod n for any 64-bit n > 0 (division instruction: only used by the
 * primality test, which is not hot). */
static uint64_t mulmod_any(uint64_t a, uint64_t b, uint64_t n)
{
    return (uint64_t)(((fkm_u128)a * b) % n);
}

/* a^e mod n for any 64-bit n > 0.
 * deliberate specialization: fkm_powmod (fkm_field.h) for a modulus without
 * a field context; the primality test takes any 64-bit n, beyond the
 * p < 2^63 that fkm_field_init accepts, and needs no precomputation. */
static uint64_t powmod_any(uint64_t a, uint64_t e, uint64_t n)
{
    uint64_t r = 1 % n;
    a %= n;
    while (e) {
        if (e & 1)
            r = mulmod_any(r, a, n);
        a = mulmod_any(a, a, n);
        e >>= 1;
    }
    return r;
}

/* One strong-probable-prime round to base a for odd n = 2^s t + 1. */
static int sprp(uint64_t n, uint64_t a, uint64_t t, int s)
{
    a %= n;
    if (a == 0)
        return 1;
    uint64_t x = powmod_any(a, t, n);
    if (x == 1 || x == n - 1)
        return 1;
    for (int i = 1; i < s; i++) {
        x = mulmod_any(x, x, n);
        if (x == n - 1)
            return 1;
        if (x == 1)
            return 0;
    }
    return 0;
}

int fkm_is_prime(uint64_t n)
{
    static const uint64_t small[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
    if (n < 2)
        return 0;
    for (int i = 0; i < 12; i++) {
        if (n == small[i])
            return 1;
        if (n % small[i] == 0)
            return 0;
    }
    if (n < 41 * 41)
        return 1;
    uint64_t t = n - 1;
    int s = __builtin_ctzll(t);
    t >>= s;
    /* The first twelve primes as bases decide every n < 3.3e24 (Sorenson &
     * Webster 2015), so every 64-bit n. */
    for (int i = 0; i < 12; i++)
        if (!sprp(n, small[i], t, s))
            return 0;
    return 1;
}

uint64_t fkm_prev_prime(uint64_t n)
{
    /* n == 0 stands for 2^64 */
    if (n != 0 && n <= 2)
        return 0;
    if (n == 3)
        return 2;
    uint64_t c = n - 1; /* wraps to 2^64 - 1 for n == 0 */
    if ((c & 1) == 0)
        c--;
    for (; c >= 3; c -= 2)
        if (fkm_is_prime(c))
            return c;
    return 2;
}
