/* fkm_noise.c -- Gaussian, Laplace and exact discrete Gaussian samplers.
 *
 * The discrete samplers follow Canonne, Kamath & Steinke, "The Discrete
 * Gaussian for Differential Privacy" (NeurIPS 2020), Algorithms 1-3, with
 * every Bernoulli(p) for rational p decided by comparing uniform random bits
 * with the binary expansion of p (long division, exact, 2 bits expected).
 * Big rationals: sigma^2 = P/Q with 64-bit P, Q; the acceptance exponent
 * gamma = (|Y| - sigma^2/t)^2 / (2 sigma^2) = (|Y| Q t - P)^2 / (2 P Q t^2)
 * is handled as B^2 / D with B, D < 2^127 in unsigned __int128; when B^2
 * does not fit, exp(-B^2/D) is split into a product of exp(-c_i B / D) with
 * sum c_i = B, each factor an exact Bernoulli.
 */
#include "fkm_noise.h"

#include <math.h>

typedef unsigned __int128 u128;

/* ------------------------------------------------------------ bit reader */
typedef struct {
    fkm_rng_t *rng;
    uint64_t w; /* unused bits, low first */
    int n;      /* number of unused bits in w */
} bits_t;

static inline int bit1(bits_t *b)
{
    if (b->n == 0) {
        b->w = fkm_rng_u64(b->rng);
        b->n = 64;
    }
    int r = (int)(b->w & 1u);
    b->w >>= 1;
    b->n--;
    return r;
}

/* k uniform bits, 1 <= k <= 63 */
static inline uint64_t bitsk(bits_t *b, int k)
{
    uint64_t mask = (UINT64_C(1) << k) - 1;
    if (k <= b->n) {
        uint64_t r = b->w & mask;
        b->w >>= k; /* k <= 63 */
        b->n -= k;
        return r;
    }
    /* take the n bits left, then k - n bits of a fresh word */
    uint64_t r = b->w; /* n < k bits */
    int have = b->n;
    uint64_t w = fkm_rng_u64(b->rng);
    r |= w << have;
    int used = k - have;
    b->w = w >> used; /* used >= 1 */
    b->n = 64 - used;
    return r & mask;
}

/* uniform on {0, ..., t-1}, t >= 1, tbits = bit length of t - 1 */
static inline uint64_t uniform_below(bits_t *b, uint64_t t, int tbits)
{
    if (t == 1)
        return 0;
    for (;;) {
        uint64_t x = bitsk(b, tbits);
        if (x < t)
            return x;
    }
}

/* --------------------------------------------------- exact Bernoullis */
/* Bernoulli(r / D), 0 <= r, D > 0, D < 2^127: compare a uniform U in [0,1)
 * bit by bit with the binary expansion of r/D; return [U < r/D]. */
static int bern_frac(bits_t *b, u128 r, u128 D)
{
    if (r >= D)
        return 1;
    for (;;) {
        if (r == 0)
            return 0; /* the remaining bits of r/D are all 0: U >= r/D */
        r <<= 1;      /* r < D < 2^127 */
        int pb = r >= D;
        if (pb)
            r -= D;
        if (bit1(b) != pb)
            return pb; /* first differing bit: U < p iff p has the 1 */
    }
}

/* Bernoulli(exp(-r/D)) for 0 <= r <= D (CKS20 Alg. 1, gamma in [0, 1]):
 * K = 1; while Bernoulli(gamma/K): K++; return K odd.  Bernoulli(gamma/K)
 * is drawn as Bernoulli(gamma) * Bernoulli(1/K) (independent). */
static int bern_exp01(bits_t *b, u128 r, u128 D)
{
    uint64_t K = 1;
    for (;;) {
        if (!bern_frac(b, r, D))
            break;
        if (K > 1 && !bern_frac(b, 1, K))
            break;
        K++;
    }
    return (int)(K & 1u);
}

/* Bernoulli(exp(-n/D)) for n >= 0, 0 < D < 2^127 (CKS20 Alg. 1). */
static int bern_exp(bits_t *b, u128 n, u128 D)
{
    if (n <= D)
        return bern_exp01(b, n, D);
    u128 g = n / D, r = n % D;
    for (u128 i = 0; i < g; i++)
        if (!bern_exp01(b, 1, 1))
            return 0;
    return bern_exp01(b, r, D);
}

/* Bernoulli(exp(-B^2/D)) for B < 2^127, 0 < D < 2^127. */
static int bern_exp_sq(bits_t *b, u128 B, u128 D)
{
    if (B == 0)
        return 1;
    u128 cap = ~(u128)0 / B; /* c * B fits for c <= cap */
    if (B <= cap)
        return bern_exp(b, B * B, D);
    for (u128 rem = B; rem > 0;) { /* exp(-B^2/D) = prod exp(-c_i B / D) */
        u128 c = rem < cap ? rem : cap;
        if (!bern_exp(b, c * B, D))
            return 0;
        rem -= c;
    }
    return 1;
}

/* ------------------------------------------------- discrete Laplace */
#define FKM_DLAP_MAX (UINT64_C(1) << 62)

/* Discrete Laplace with scale t (CKS20 Alg. 2 with s = 1); *err = 1 on a
 * magnitude above 2^62. */
static int64_t dlaplace(bits_t *b, uint64_t t, int tbits, int *err)
{
    for (;;) {
        uint64_t U = uniform_below(b, t, tbits);
        if (!bern_exp01(b, U, t))
            continue;
        uint64_t V = 0;
        while (bern_exp01(b, 1, 1))
            V++;
        if (V > (FKM_DLAP_MAX - U) / t) {
            *err = 1;
            return 0;
        }
        uint64_t X = U + t * V;
        int B = bit1(b);
        if (B && X == 0)
            continue;
        return B ? -(int64_t)X : (int64_t)X;
    }
}

static int bit_length(uint64_t x)
{
    int k = 0;
    while (x) {
        k++;
        x >>= 1;
    }
    return k;
}

/* floor(sqrt(x)) exactly */
static uint64_t isqrt64(uint64_t x)
{
    uint64_t r = (uint64_t)sqrt((double)x);
    while ((u128)r * r > x)
        r--;
    while ((u128)(r + 1) * (r + 1) <= x)
        r++;
    return r;
}

int fkm_dgauss_init(fkm_dgauss_t *G, uint64_t P, uint64_t Q)
{
    FKM_ASSERT(G != NULL);
    if (P == 0 || Q == 0)
        return FKM_EDOM;
    uint64_t t = isqrt64(P / Q) + 1; /* floor(sqrt(P/Q)) = isqrt(floor(P/Q)) */
    u128 Qt = (u128)Q * t;
    if (Qt >> 64 || t > FKM_DLAP_MAX)
        return FKM_EDOM;
    u128 PQ = (u128)P * Q; /* < 2^128 */
    u128 lim = (u128)1 << 126;
    /* D = 2 P Q t^2 < 2^127  <=>  P Q t^2 < 2^126 */
    if (PQ >= lim || PQ > lim / ((u128)t * t))
        return FKM_EDOM;
    G->P = P;
    G->Q = Q;
    G->t = t;
    G->Qt = (uint64_t)Qt;
    G->tbits = bit_length(t - 1);
    return FKM_OK;
}

int fkm_noise_discrete_gaussian(fkm_rng_t *rng, int64_t *out, fkm_index_t n,
                                const fkm_dgauss_t *G)
{
    FKM_ASSERT(rng != NULL && G != NULL && G->t >= 1 && n >= 0 && (n == 0 || out != NULL));
    bits_t b = {rng, 0, 0};
    const u128 D = 2 * (u128)G->P * G->Q * ((u128)G->t * G->t);
    int err = 0;
    for (fkm_index_t i = 0; i < n && !err; i++) {
        for (;;) {
            int64_t Y = dlaplace(&b, G->t, G->tbits, &err);
            if (err)
                break;
            uint64_t a = Y < 0 ? (uint64_t)0 - (uint64_t)Y : (uint64_t)Y;
            u128 aQt = (u128)a * G->Qt; /* < 2^62 * 2^64 */
            u128 B = aQt >= G->P ? aQt - G->P : G->P - aQt;
            if (bern_exp_sq(&b, B, D)) {
                out[i] = Y;
                break;
            }
        }
    }
    if (err)
        return FKM_EOVERFLOW;
    return FKM_OK;
}

int fkm_noise_discrete_laplace(fkm_rng_t *rng, int64_t *out, fkm_index_t n,
                               uint64_t t)
{
    FKM_ASSERT(rng != NULL && n >= 0 && (n == 0 || out != NULL));
    if (t == 0 || t > FKM_DLAP_MAX)
        return FKM_EDOM;
    bits_t b = {rng, 0, 0};
    int err = 0, tbits = bit_length(t - 1);
    for (fkm_index_t i = 0; i < n && !err; i++)
        out[i] = dlaplace(&b, t, tbits, &err);
    if (err)
        return FKM_EOVERFLOW;
    return FKM_OK;
}

int fkm_noise_bernoulli_exp(fkm_rng_t *rng, uint8_t *out, fkm_index_t n,
                            uint64_t num, uint64_t den)
{
    FKM_ASSERT(rng != NULL && n >= 0 && (n == 0 || out != NULL));
    if (den == 0 || den >= (UINT64_C(1) << 63))
        return FKM_EDOM;
    bits_t b = {rng, 0, 0};
    for (fkm_index_t i = 0; i < n; i++)
        out[i] = (uint8_t)bern_exp(&b, num, den);
    return FKM_OK;
}

/* ------------------------------------------------ floating-point noise */
FKM_HOT
int fkm_noise_gaussian(fkm_rng_t *rng, double *out, fkm_index_t n,
                       double sigma)
{
    FKM_ASSERT(rng != NULL && n >= 0 && (n == 0 || out != NULL));
    if (!(sigma > 0) || !isfinite(sigma))
        return FKM_EDOM;
    fkm_index_t i = 0;
    while (i < n) {
        /* v uniform on the grid {k 2^-53 : -2^53 <= k < 2^53} in [-1, 1) */
        double v1 = (double)((int64_t)fkm_rng_u64(rng) >> 10) * 0x1.0p-53;
        double v2 = (double)((int64_t)fkm_rng_u64(rng) >> 10) * 0x1.0p-53;
        double s = v1 * v1 + v2 * v2;
        if (s >= 1.0 || s == 0.0)
            continue;
        double f = sigma * sqrt(-2.0 * log(s) / s);
        out[i++] = v1 * f;
        if (i < n)
            out[i++] = v2 * f;
    }
    return FKM_OK;
}

FKM_HOT
int fkm_noise_laplace(fkm_rng_t *rng, double *out, fkm_index_t n,
                      double scale)
{
    FKM_ASSERT(rng != NULL && n >= 0 && (n == 0 || out != NULL));
    if (!(scale > 0) || !isfinite(scale))
        return FKM_EDOM;
    for (fkm_index_t i = 0; i < n; i++) {
        uint64_t x = fkm_rng_u64(rng);
        double u = (double)((x >> 11) + 1) * 0x1.0p-53; /* (0, 1] */
        double e = -scale * log(u);                     /* Exp(1/scale) */
        out[i] = (x & 1u) ? -e : e;                     /* independent sign bit */
    }
    return FKM_OK;
}
