/* fkm_lloyd.c -- see fkm_lloyd.h. */

/* Contract a*b + c into fused multiply-adds here (the build disables it
 * elsewhere): the score tiles are bound by arithmetic. */
#if defined(__clang__)
#pragma clang fp contract(fast)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=fast")
#endif
#include "fkm_lloyd.h"
#include "fkm_lloyd_acc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef double fkm_v4d __attribute__((vector_size(32), aligned(8)));
typedef int64_t fkm_v4i __attribute__((vector_size(32), aligned(8)));

#define LOAD4(p) (*(const fkm_v4d *)(p))
#define STORE4(p, v) (*(fkm_v4d *)(p) = (v))

/* __builtin_shufflevector: clang, GCC >= 12. */
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
#define FKM_HAVE_SHUFFLE 1
#else
#define FKM_HAVE_SHUFFLE 0
#endif

/* Coordinates per block in the register tiles (4 rows x 128 doubles plus two
 * panels of 128 x 8 doubles: 20 KiB, within L1). */
#define FKM_LLOYD_JBLOCK 128

/* Groups ahead whose points the unmasked assignment prefetches: the scores
 * of one group take long enough to hide the memory latency of the next
 * ones, which the hardware prefetchers leave partly exposed when four rows
 * (or a packed panel) are read in lockstep.  Only for d <= FKM_LLOYD_JBLOCK
 * on the row path: longer rows are streamed well by the hardware, and two
 * groups of them ahead would push the current ones out of L1 (measured 7%
 * slower at d = 784, k = 10; 25-30% faster at d = 50, k = 10..64). */
#define FKM_LLOYD_PREFETCH 2

/* Largest d for which the row path (unpacked points, whatever d: above 16
 * always, at d <= 16 when the points are not packed) scores groups of 8 rows
 * through two panels built on the fly (score_rows8): lanes over points, so
 * the argmin is vertical and the center chunks exact (issue 22: 0.75-0.9x
 * the time per iteration at d = 50, k = 10 and 64; 0.7x at d = 24, k = 9).  Up to
 * here the two panels (8 d doubles) stay in L1; longer rows keep the tiles
 * over centers (tile4): at d = 784, k = 10 the two were level within the
 * noise of the measurement (48-66 ms both), so nothing was changed there. */
#define FKM_LLOYD_ROWS8_MAX_D FKM_LLOYD_JBLOCK

/* Prefetch the bytes [p, p + size) into the caches (a hint: no effect on
 * results; p..p + size lies inside one array).  fkm_lloyd_prefetch_l2:
 * the same into L2 only (prefetcht1), for the groups of 8 rows of the row
 * path (score_rows8), spread in quarters over a group's work. */
static inline __attribute__((always_inline)) void fkm_lloyd_prefetch(const void *p, size_t size)
{
    const char *c = (const char *)p;
    for (size_t o = 0; o < size; o += 64)
        __builtin_prefetch(c + o);
}

static inline __attribute__((always_inline)) void fkm_lloyd_prefetch_l2(const void *p, size_t size)
{
    const char *c = (const char *)p;
    for (size_t o = 0; o < size; o += 64)
        __builtin_prefetch(c + o, 0, 2);
}

/* Width of the next chunk of centers in panel8x when R >= 4 centers are left
 * and k >= 8: chunks of 4, 5 and 6 add up to every R >= 8 exactly, so no
 * padding lane is scored (k = 10: 6 + 4; k = 62: 9 x 6 + 2 x 4; k = 64:
 * 10 x 6 + 4).  Chunks of 6 first: 12 accumulators hide the FMA latency (4
 * cycles on 2 pipes: the 8 chains of a chunk of 4 leave no slack; issue 22,
 * sixth round).  The sums that chunks of 4, 5 and 6 can make are 4, 5, 6
 * and every R >= 8, so 6 is taken whenever what it leaves is one of those
 * or nothing; the widths never change a score or a label. */
static inline int fkm_lloyd_chunk_w(fkm_index_t R)
{
    if (R <= 6)
        return (int)R;
    if (R == 10 || R == 11 || R == 12 || R >= 14)
        return 6; /* R - 6 in {4, 5, 6} or >= 8 */
    return 4;     /* R in {8, 9, 13}: R - 4 in {4, 5, 9} */
}

void fkm_lloyd_pack_centers(double *ct, double *hnorm, const double *centers,
                            const double *shift, fkm_index_t k, fkm_index_t d)
{
    FKM_ASSERT(k >= 0 && d >= 1);
    FKM_ASSERT(k == 0 || (ct != NULL && hnorm != NULL && centers != NULL && shift != NULL));
    FKM_ASSERT_EACH(t, k * d, isfinite(centers[t]));
    const fkm_index_t np = (k + FKM_LLOYD_PANEL - 1) / FKM_LLOYD_PANEL;
    for (fkm_index_t p = 0; p < np; ++p) {
        for (fkm_index_t l = 0; l < FKM_LLOYD_PANEL; ++l) {
            fkm_index_t c = p * FKM_LLOYD_PANEL + l;
            double s = 0.0, t = 0.0;
            for (fkm_index_t j = 0; j < d; ++j) {
                double v = c < k ? centers[c * d + j] - shift[j] : 0.0;
                ct[(p * d + j) * FKM_LLOYD_PANEL + l] = v;
                s += v * v;
                t += v * shift[j];
            }
            hnorm[c] = c < k ? 0.5 * s + t : HUGE_VAL;
        }
    }
}

void fkm_lloyd_merge(double *sums, double *wsums, double *inertia,
                     const double *part_sums, const double *part_wsums,
                     const double *part_inertia, fkm_index_t n_parts,
                     fkm_index_t k, fkm_index_t d)
{
    FKM_ASSERT(n_parts >= 0 && k >= 0 && d >= 0);
    FKM_ASSERT(sums != NULL && wsums != NULL && inertia != NULL);
    FKM_ASSERT(n_parts == 0 || (part_sums != NULL && part_wsums != NULL && part_inertia != NULL));
    const fkm_index_t kd = k * d;
    memset(sums, 0, (size_t)kd * sizeof(double));
    memset(wsums, 0, (size_t)k * sizeof(double));
    double s = 0.0;
    for (fkm_index_t p = 0; p < n_parts; ++p) {
        for (fkm_index_t t = 0; t < kd; ++t)
            sums[t] += part_sums[p * kd + t];
        for (fkm_index_t c = 0; c < k; ++c)
            wsums[c] += part_wsums[p * k + c];
        s += part_inertia[p];
    }
    *inertia = s;
}

/* The bodies for float64 and float32 input. */
#define FKM_TYPED_BODY "fkm_lloyd_impl.h"
#include "fkm_typed.h"
