/* fkm_ring.c -- masked-aggregation words in the ring Z_2^64 (fkm_ring.h). */
#include "fkm_ring.h"

#include <math.h>

#include "fkm_chacha.h"
#include "fkm_noise.h"

int fkm_ring_encode(const double *x, fkm_index_t n, int scale_bits, uint64_t limit,
                    uint64_t *out)
{
    if (n < 0 || n > FKM_RING_MAX_WORDS || scale_bits < 0 || scale_bits > 62)
        return FKM_EDOM;
    FKM_ASSERT(n == 0 || (x != NULL && out != NULL));
    for (fkm_index_t i = 0; i < n; i++) {
        double xi = x[i];
        if (isnan(xi))
            return FKM_ENONFINITE;
        double v = rint(ldexp(xi, scale_bits));
        double a = fabs(v);
        /* a < 2^63 first: only then is the conversion defined; the
         * comparison with limit is then exact (integers) */
        if (!(a < 0x1p63) || (uint64_t)a > limit)
            return FKM_EOVERFLOW;
        /* |v| <= limit < 2^63: an int64, read modulo 2^64 */
        out[i] = (uint64_t)(int64_t)v;
    }
    return FKM_OK;
}

int fkm_ring_add_streams(uint64_t *acc, fkm_index_t n, const uint8_t *keys,
                         const uint8_t *nonces, const int8_t *signs, fkm_index_t m)
{
    if (n < 0 || n > FKM_RING_MAX_WORDS || m < 0)
        return FKM_EDOM;
    for (fkm_index_t j = 0; j < m; j++)
        if (signs[j] != 1 && signs[j] != -1)
            return FKM_EDOM;
    if (n == 0 || m == 0)
        return FKM_OK;
    FKM_ASSERT(acc != NULL && keys != NULL && nonces != NULL);
    fkm_chacha_t st;
    for (fkm_index_t j = 0; j < m; j++) {
        fkm_chacha_init(&st, keys + 32 * j, nonces + 12 * j, 0);
        /* n <= 2^32 words = 2^30 blocks: the stream never runs out */
        if (signs[j] > 0)
            for (fkm_index_t i = 0; i < n; i++)
                acc[i] += fkm_chacha_u64(&st);
        else
            for (fkm_index_t i = 0; i < n; i++)
                acc[i] -= fkm_chacha_u64(&st);
    }
    return FKM_OK;
}

int fkm_ring_add_dgauss(uint64_t *acc, int64_t *scratch, fkm_index_t n,
                        const uint8_t key[32], const uint8_t *nonces,
                        const fkm_index_t *lengths, const uint64_t *P,
                        const uint64_t *Q, fkm_index_t nseg, uint64_t limit)
{
    if (n < 0 || n > FKM_RING_MAX_WORDS || nseg < 0)
        return FKM_EDOM;
    fkm_index_t total = 0;
    fkm_dgauss_t G;
    for (fkm_index_t s = 0; s < nseg; s++) {
        if (lengths[s] < 0 || lengths[s] > n - total)
            return FKM_EDOM;
        total += lengths[s];
        if (P[s] != 0 && fkm_dgauss_init(&G, P[s], Q[s]) != FKM_OK)
            return FKM_EDOM;
    }
    if (total != n)
        return FKM_EDOM;
    if (n == 0)
        return FKM_OK;
    FKM_ASSERT(acc != NULL && scratch != NULL && key != NULL && nonces != NULL);
    /* draw and check every segment first: acc changes only on success */
    fkm_chacha_t st;
    fkm_rng_t rng;
    fkm_index_t off = 0;
    for (fkm_index_t s = 0; s < nseg; s++) {
        fkm_index_t len = lengths[s];
        int64_t *v = scratch + off;
        off += len;
        if (P[s] == 0) {
            for (fkm_index_t i = 0; i < len; i++)
                v[i] = 0;
            continue;
        }
        if (len == 0)
            continue;
        (void)fkm_dgauss_init(&G, P[s], Q[s]); /* checked above */
        fkm_chacha_init(&st, key, nonces + 12 * s, 0);
        fkm_chacha_rng(&rng, &st);
        int status = fkm_noise_discrete_gaussian(&rng, v, len, &G);
        if (status != FKM_OK)
            return status;
        if (st.failed)
            return FKM_EOVERFLOW;
        for (fkm_index_t i = 0; i < len; i++) {
            uint64_t mag = v[i] < 0 ? (uint64_t)0 - (uint64_t)v[i] : (uint64_t)v[i];
            if (mag >= limit)
                return FKM_RING_ELIMIT;
        }
    }
    for (fkm_index_t i = 0; i < n; i++)
        acc[i] += (uint64_t)scratch[i];
    return FKM_OK;
}
