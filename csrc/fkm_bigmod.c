/* fkm_bigmod.c -- arithmetic modulo P = 2^256 + 297 (see fkm_bigmod.h). */
#include "fkm_bigmod.h"

typedef unsigned __int128 u128;

#define NL 5            /* limbs of an element */
#define NACC 11         /* limbs of a dot product's accumulator */
#define P_LOW 297u      /* P = 2^256 + P_LOW */

/* v = the 33-byte little-endian encoding at b (byte order independent of
 * the host's). */
static inline void load33(uint64_t v[NL], const uint8_t *b)
{
    for (int k = 0; k < 4; k++) {
        uint64_t x = 0;
        for (int j = 7; j >= 0; j--)
            x = (x << 8) | b[8 * k + j];
        v[k] = x;
    }
    v[4] = b[32];
}

static inline void store33(uint8_t *b, const uint64_t v[NL])
{
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 8; j++)
            b[8 * k + j] = (uint8_t)(v[k] >> (8 * j));
    b[32] = (uint8_t)v[4];
}

/* Whether the encoding at b is below P (an element). */
static inline int below_p(const uint8_t *b)
{
    if (b[32] == 0)
        return 1;
    if (b[32] != 1)
        return 0;
    for (int j = 31; j >= 2; j--)
        if (b[j])
            return 0;
    return (unsigned)b[0] + 256u * b[1] < P_LOW;
}

/* r = (L - c) mod P for L < 2^256 (four limbs) and a word c; r in [0, P). */
static inline void sub_word_mod(uint64_t r[NL], const uint64_t L[4], uint64_t c)
{
    int ge = (L[3] | L[2] | L[1]) != 0 || L[0] >= c;
    if (ge) {                 /* L - c < 2^256 < P */
        uint64_t borrow = L[0] < c;
        r[0] = L[0] - c;
        for (int k = 1; k < 4; k++) {
            r[k] = L[k] - borrow;
            borrow = borrow && L[k] == 0;
        }
        r[4] = 0;
        return;
    }
    /* L < c < 2^64: r = P - d with d = c - L in [1, 2^64) */
    uint64_t d = c - L[0];
    if (d <= P_LOW) {         /* r = 2^256 + (297 - d) */
        r[0] = P_LOW - d;
        r[1] = r[2] = r[3] = 0;
        r[4] = 1;
    } else {                  /* r = 2^256 - (d - 297) */
        r[0] = (uint64_t)0 - (d - P_LOW);
        r[1] = r[2] = r[3] = UINT64_MAX;
        r[4] = 0;
    }
}

/* acc += a * b for elements a, b (five limbs each, top limb <= 1); acc has
 * NACC limbs and the caller guarantees the sum fits. */
static inline void mul_acc(uint64_t acc[NACC], const uint64_t a[NL], const uint64_t b[NL])
{
    for (int i = 0; i < NL; i++) {
        if (a[i] == 0)
            continue;
        uint64_t carry = 0;
        for (int j = 0; j < NL; j++) {
            u128 p = (u128)a[i] * b[j] + acc[i + j] + carry;
            acc[i + j] = (uint64_t)p;
            carry = (uint64_t)(p >> 64);
        }
        for (int k = i + NL; carry && k < NACC; k++) {
            u128 q = (u128)acc[k] + carry;
            acc[k] = (uint64_t)q;
            carry = (uint64_t)(q >> 64);
        }
    }
}

/* r = acc mod P, r in [0, P), for acc < 2^704 (eleven limbs).
 * acc = A0 + A1 2^256 + A2 2^512 (A0, A1: four limbs; A2: three) is
 * congruent to Y = A0 + 88209 A2 + 512 P - 297 A1, which is positive
 * (297 A1 < 2^265 < 512 P) and below 2^267; then Y = L + H 2^256 with
 * H < 2^11 is congruent to L - 297 H. */
static void reduce_acc(uint64_t r[NL], const uint64_t acc[NACC])
{
    uint64_t y[NL];
    u128 c = 0;
    /* y = A0 + 88209 A2 (A2 < 2^192, so 88209 A2 < 2^209: five limbs) */
    for (int k = 0; k < 4; k++) {
        uint64_t a2 = k < 3 ? acc[8 + k] : 0;
        c += (u128)a2 * 88209u + acc[k];
        y[k] = (uint64_t)c;
        c >>= 64;
    }
    y[4] = (uint64_t)c;
    /* y += 512 P = 2^265 + 152064 */
    c = (u128)y[0] + 152064u;
    y[0] = (uint64_t)c;
    c >>= 64;
    for (int k = 1; k < 4; k++) {
        c += y[k];
        y[k] = (uint64_t)c;
        c >>= 64;
    }
    y[4] += (uint64_t)c + ((uint64_t)1 << 9);
    /* y -= 297 A1 (below y: no borrow out of the top limb) */
    u128 t = 0;
    uint64_t borrow = 0;
    for (int k = 0; k < NL; k++) {
        uint64_t tk;
        if (k < 4) {
            t += (u128)acc[4 + k] * P_LOW;
            tk = (uint64_t)t;
            t >>= 64;
        } else {
            tk = (uint64_t)t;
        }
        uint64_t yk = y[k];
        uint64_t d = yk - tk - borrow;
        borrow = (yk < tk) || (yk - tk < borrow);
        y[k] = d;
    }
    sub_word_mod(r, y, y[4] * P_LOW);
}

int fkm_p256_dots(int64_t n, int64_t t, const uint8_t *const *w,
                  const uint8_t *const *s, uint8_t *out, int64_t *bad)
{
    *bad = -1;
    if (n < 0 || t < 1 || t > FKM_P256_MAX_TERMS)
        return FKM_EDOM;
    for (int64_t g = 0; g < n; g++) {
        const uint8_t *wg = w[g];
        const uint8_t *const *sg = s + g * t;
        for (int64_t i = 0; i < t; i++) {
            if (!below_p(wg + FKM_P256_BYTES * i) || !below_p(sg[i])) {
                *bad = g;
                return FKM_EDOM;
            }
        }
        uint64_t acc[NACC] = {0};
        uint64_t a[NL], b[NL], r[NL];
        for (int64_t i = 0; i < t; i++) {
            load33(a, wg + FKM_P256_BYTES * i);
            load33(b, sg[i]);
            mul_acc(acc, a, b);
        }
        reduce_acc(r, acc);
        store33(out + FKM_P256_BYTES * g, r);
    }
    return FKM_OK;
}

int fkm_p256_eval(int64_t m, int64_t deg1, const uint8_t *c, int64_t n,
                  const uint64_t *x, uint8_t *out, int64_t *bad)
{
    *bad = -1;
    if (m < 0 || n < 0 || deg1 < 1 || deg1 > FKM_P256_MAX_TERMS)
        return FKM_EDOM;
    for (int64_t i = 0; i < n; i++)
        if (x[i] >> 33)
            return FKM_EDOM;
    for (int64_t j = 0; j < m; j++)
        for (int64_t k = 0; k < deg1; k++)
            if (!below_p(c + FKM_P256_BYTES * (j * deg1 + k))) {
                *bad = j;
                return FKM_EDOM;
            }
    for (int64_t j = 0; j < m; j++) {
        const uint8_t *cj = c + FKM_P256_BYTES * (j * deg1);
        for (int64_t i = 0; i < n; i++) {
            uint64_t xi = x[i];
            uint64_t acc[NL], ck[NL];
            load33(acc, cj);
            for (int64_t k = 1; k < deg1; k++) {
                /* v = acc xi + c_k < P 2^33 + P < 2^291: six limbs, the top
                 * H = v >> 256 < 2^35, and v = L - 297 H (mod P) */
                load33(ck, cj + FKM_P256_BYTES * k);
                uint64_t v[NL + 1];
                u128 carry = 0;
                for (int l = 0; l < NL; l++) {
                    carry += (u128)acc[l] * xi + ck[l];
                    v[l] = (uint64_t)carry;
                    carry >>= 64;
                }
                v[NL] = (uint64_t)carry;     /* 0: v < 2^291 */
                sub_word_mod(acc, v, v[4] * P_LOW);
            }
            store33(out + FKM_P256_BYTES * (i * m + j), acc);
        }
    }
    return FKM_OK;
}
