/* fkm_stream.c -- mask streams: keystream words mapped to F_p by rejection
 * and accumulated (see fkm_stream.h). */
#include "fkm_stream.h"

void fkm_streams_accumulate(fkm_field_t F, const uint64_t *words, int64_t nk, int64_t nw,
                            uint64_t lim, const uint8_t *negate, uint64_t *acc, int64_t n,
                            int64_t *filled)
{
    FKM_ASSERT(nk >= 0 && nw >= 0 && n >= 0 && n <= FKM_STREAMS_MAX_N);
    FKM_ASSERT(nk == 0 || (negate != NULL && filled != NULL && (nw == 0 || words != NULL)));
    FKM_ASSERT(n == 0 || acc != NULL);
    /* the kept words (each < 2^64) of the added and of the subtracted
     * streams summed without reduction (fewer than 2^64 streams: no
     * overflow), then one reduction per position */
    fkm_u128 pos[FKM_STREAMS_MAX_N], neg[FKM_STREAMS_MAX_N];
    const uint64_t top = lim - 1; /* the largest word kept (lim = 0: 2^64 - 1) */
    for (int64_t i = 0; i < n; i++)
        pos[i] = neg[i] = 0;
    for (int64_t j = 0; j < nk; j++) {
        const uint64_t *w = words + j * nw;
        fkm_u128 *sum = negate[j] ? neg : pos;
        int64_t f = 0;
        for (int64_t i = 0; i < nw && f < n; i++) {
            if (w[i] > top)
                continue;
            sum[f++] += w[i];
        }
        filled[j] = f;
    }
    for (int64_t i = 0; i < n; i++) {
        uint64_t a = fkm_addmod(acc[i], fkm_reduce128(pos[i], F), F);
        acc[i] = fkm_submod(a, fkm_reduce128(neg[i], F), F);
    }
}

int64_t fkm_stream_accumulate(fkm_field_t F, const uint64_t *words, int64_t nw,
                              uint64_t lim, int negate, uint64_t *acc,
                              int64_t n, int64_t filled)
{
    FKM_ASSERT(nw >= 0 && (nw == 0 || words != NULL));
    FKM_ASSERT(filled >= 0 && filled <= n && (n == 0 || acc != NULL));
    const uint64_t top = lim - 1; /* the largest word kept (lim = 0: 2^64 - 1) */
    for (int64_t i = 0; i < nw && filled < n; i++) {
        uint64_t w = words[i];
        if (w > top)
            continue;
        uint64_t v = fkm_reduce2(0, w, F);
        acc[filled] = negate ? fkm_submod(acc[filled], v, F)
                             : fkm_addmod(acc[filled], v, F);
        filled++;
    }
    return filled;
}
