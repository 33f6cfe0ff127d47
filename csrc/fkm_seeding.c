/* fkm_seeding.c -- weighted D^2 seeding resumable from a prefix (see
 * fkm_seeding.h for the contract). */
#include "fkm_seeding.h"
#include "fkm_alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Points per block of the two-level cumulative weight structure. */
#define FKM_SEED_BLOCK 512
/* 4 * (1 + 1e-9): pruning only when the triangle inequality holds with room
 * to spare for rounding, so pruning never changes a result. */
#define FKM_PRUNE_FACTOR 4.000000004
/* Up to this dimension the data are packed 4 points to a vector and every
 * distance is computed branch-free; above it, pruning by the triangle
 * inequality pays for its unpredictable branch. */
#ifndef FKM_PACK_MAX_D
#define FKM_PACK_MAX_D 16
#endif
#define FKM_PRUNE_MIN_D (FKM_PACK_MAX_D + 1)
/* Up to FKM_PACK_MAX_D, X is read in place unless its packed copy fits in
 * FKM_PACK_MAX_BYTES (cache-resident: packing pays) and FKM_PACK_MIN_PASSES
 * passes or more remain: the copy (and its fresh pages) costs a few passes
 * of the branch-free in-place kernel (at n = 1e5, d = 10, k = 10 without
 * labels: 3.3 ms packed, 1.7 ms in place; level around k = 40). */
#ifndef FKM_PACK_MAX_BYTES
#define FKM_PACK_MAX_BYTES (16u << 20)
#endif
#ifndef FKM_PACK_MIN_PASSES
#define FKM_PACK_MIN_PASSES 32
#endif
/* The pruned path computes only the rows left when they are at most one in
 * FKM_PRUNE_SPARSE of a block, else all of them in order. */
#ifndef FKM_PRUNE_SPARSE
#define FKM_PRUNE_SPARSE 8
#endif
/* Most passes in a row run without the bound after passes where it left
 * no block sparse (see seeding_body). */
#ifndef FKM_PRUNE_MAX_SKIP
#define FKM_PRUNE_MAX_SKIP 4
#endif
/* Rows prefetched ahead of the pruned (scattered) distance loop. */
#ifndef FKM_PREFETCH_AHEAD
#define FKM_PREFETCH_AHEAD 8
#endif

/* Four doubles; GCC/clang vector extensions lower this to AVX2, SSE2 pairs or
 * scalars depending on the clone being compiled. */
typedef double fkm_v4d __attribute__((vector_size(32), aligned(8)));
typedef int64_t fkm_v4i __attribute__((vector_size(32), aligned(8)));
typedef int32_t fkm_v4s __attribute__((vector_size(16), aligned(4)));
typedef float fkm_v4f __attribute__((vector_size(16), aligned(4)));

#define load4_f64(p) (*(const fkm_v4d *)(p))
#define load4_f32(p) __builtin_convertvector(*(const fkm_v4f *)(p), fkm_v4d)

static inline double point_mass(const double *mind, const double *w,
                                const uint8_t *removed, fkm_index_t i)
{
    if (removed && removed[i])
        return 0.0;
    return w ? w[i] * mind[i] : mind[i];
}

/* Sum of w_i * mind_i over [lo, hi) (removed points hold mind = 0) in eight
 * lanes: a fixed order without a long chain of dependent additions. */
FKM_HOT static double seeding_block_mass(const double *mind, const double *w,
                                         fkm_index_t lo, fkm_index_t hi)
{
    fkm_v4d a0 = {0.0, 0.0, 0.0, 0.0}, a1 = a0;
    fkm_index_t i = lo;
    if (w) {
        for (; i + 8 <= hi; i += 8) {
            a0 += load4_f64(mind + i) * load4_f64(w + i);
            a1 += load4_f64(mind + i + 4) * load4_f64(w + i + 4);
        }
    } else {
        for (; i + 8 <= hi; i += 8) {
            a0 += load4_f64(mind + i);
            a1 += load4_f64(mind + i + 4);
        }
    }
    a0 += a1;
    double s = (a0[0] + a0[1]) + (a0[2] + a0[3]);
    for (; i < hi; ++i)
        s += w ? w[i] * mind[i] : mind[i];
    return s;
}

/* Block sums of w_i * mind_i over active points. */
static void seeding_block_sums(double *bsum, const double *mind,
                               const double *w, const uint8_t *removed,
                               fkm_index_t n)
{
    fkm_index_t nb = (n + FKM_SEED_BLOCK - 1) / FKM_SEED_BLOCK;
    for (fkm_index_t b = 0; b < nb; ++b) {
        fkm_index_t lo = b * FKM_SEED_BLOCK;
        fkm_index_t hi = lo + FKM_SEED_BLOCK < n ? lo + FKM_SEED_BLOCK : n;
        double s = 0.0;
        for (fkm_index_t i = lo; i < hi; ++i)
            s += point_mass(mind, w, removed, i);
        bsum[b] = s;
    }
}

static int cmp_index(const void *a, const void *b)
{
    fkm_index_t x = *(const fkm_index_t *)a, y = *(const fkm_index_t *)b;
    return (x > y) - (x < y);
}

static int is_chosen(const fkm_index_t *sorted, fkm_index_t m, fkm_index_t i)
{
    fkm_index_t lo = 0, hi = m;
    while (lo < hi) {
        fkm_index_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m && sorted[lo] == i;
}

/* The mass of point i in the fallback draw (seeding_fallback): its weight
 * (1 without w) if it is active and not a center yet (not in the sorted
 * sorted[0..m)), else 0. */
static double fallback_mass(const double *w, const uint8_t *removed,
                            const fkm_index_t *sorted, fkm_index_t m,
                            fkm_index_t i)
{
    if ((removed && removed[i]) || is_chosen(sorted, m, i))
        return 0.0;
    return w ? w[i] : 1.0;
}

/* The end of a cumulative draw over points [lo, hi): the first point at
 * which acc plus the positive masses up to it passes target.  Rounding can
 * leave target beyond the sum: the last point of positive mass is taken
 * then; FKM_EDOM when none has positive mass.  The masses are point_mass
 * (fallback 0; sorted, m unused) or fallback_mass (fallback 1; mind
 * unused). */
static inline int draw_walk(fkm_index_t *out, double acc, double target,
                            fkm_index_t lo, fkm_index_t hi, const double *mind,
                            const double *w, const uint8_t *removed,
                            const fkm_index_t *sorted, fkm_index_t m,
                            int fallback)
{
    fkm_index_t last = -1;
    for (fkm_index_t i = lo; i < hi; ++i) {
        double p = fallback ? fallback_mass(w, removed, sorted, m, i)
                            : point_mass(mind, w, removed, i);
        if (p > 0.0) {
            last = i;
            acc += p;
            if (acc > target)
                break;
        }
    }
    if (last < 0)
        return FKM_EDOM;
    *out = last;
    return FKM_OK;
}

/* Draw i with probability w_i * mind_i / total, total the sum of bsum in
 * block order.  Rounding can leave the target at the very end of the range:
 * the last point of positive mass is taken then. */
static int seeding_sample(fkm_rng_t *rng, fkm_index_t *out, const double *bsum,
                          const double *mind, const double *w,
                          const uint8_t *removed, fkm_index_t n)
{
    fkm_index_t nb = (n + FKM_SEED_BLOCK - 1) / FKM_SEED_BLOCK;
    double total = 0.0;
    for (fkm_index_t b = 0; b < nb; ++b)
        total += bsum[b];
    if (!(total > 0.0))
        return FKM_EDOM;
    if (!(total < HUGE_VAL))
        return FKM_ENONFINITE;
    double target = fkm_rng_double(rng) * total;
    double acc = 0.0;
    fkm_index_t last_block = -1;
    for (fkm_index_t b = 0; b < nb; ++b) {
        if (bsum[b] > 0.0)
            last_block = b;
        if (bsum[b] > 0.0 && acc + bsum[b] > target) {
            last_block = b;
            break;
        }
        acc += bsum[b];
    }
    if (last_block < 0)
        return FKM_EDOM;
    fkm_index_t lo = last_block * FKM_SEED_BLOCK;
    fkm_index_t hi = lo + FKM_SEED_BLOCK < n ? lo + FKM_SEED_BLOCK : n;
    return draw_walk(out, acc, target, lo, hi, mind, w, removed, NULL, 0, 0);
}

/* All remaining D^2 mass is zero: draw proportionally to weight among active
 * points that are not centers yet. */
static int seeding_fallback(fkm_rng_t *rng, fkm_index_t *out,
                            fkm_index_t *sorted, const fkm_index_t *centers,
                            fkm_index_t m, const double *w,
                            const uint8_t *removed, fkm_index_t n)
{
    memcpy(sorted, centers, (size_t)m * sizeof(fkm_index_t));
    qsort(sorted, (size_t)m, sizeof(fkm_index_t), cmp_index);
    double total = 0.0;
    for (fkm_index_t i = 0; i < n; ++i)
        total += fallback_mass(w, removed, sorted, m, i);
    if (!(total > 0.0))
        return FKM_EDOM;
    double target = fkm_rng_double(rng) * total;
    return draw_walk(out, 0.0, target, 0, n, NULL, w, removed, sorted, m, 1);
}

/* The preconditions fkm_seeding.h states (FKM_ASSERT: debug builds only).
 * Non-finite X is not one: it is reported (FKM_ENONFINITE), see the header. */
static void seeding_assert_args(const fkm_rng_t *rng, const fkm_index_t *centers,
                                const double *mind, const int32_t *labels,
                                const void *X, const double *w,
                                const uint8_t *removed, fkm_index_t n,
                                fkm_index_t d, fkm_index_t k,
                                fkm_index_t n_prefix, int warm)
{
    FKM_ASSERT(n >= 0 && d >= 1 && k >= 0);
    FKM_ASSERT(0 <= n_prefix && n_prefix <= k);
    FKM_ASSERT(rng != NULL && (k == 0 || centers != NULL));
    FKM_ASSERT(n == 0 || (mind != NULL && X != NULL));
    FKM_ASSERT(n == 0 || !warm || labels != NULL);
    FKM_ASSERT_EACH(i, w ? n : 0, w[i] >= 0.0);
    /* the prefix: active, distinct row ids */
    FKM_ASSERT_EACH(a, n_prefix, centers[a] >= 0 && centers[a] < n);
    FKM_ASSERT_EACH(a, removed ? n_prefix : 0, !removed[centers[a]]);
    FKM_ASSERT_EACH(a, n_prefix, fkm_first_index(centers, a, centers[a]) == a);
    /* a warm state: labels of a previous run */
    FKM_ASSERT_EACH(i, warm ? n : 0, labels[i] >= -1 && labels[i] < k);
    (void)rng, (void)centers, (void)mind, (void)labels, (void)X, (void)w;
    (void)removed, (void)n, (void)d, (void)k, (void)n_prefix, (void)warm;
}

/* The bodies for float64 and float32 input. */
#define FKM_TYPED_BODY "fkm_seeding_impl.h"
#include "fkm_typed.h"
