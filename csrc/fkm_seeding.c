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
/* A step goes through the groups of points (seeding_groups_t) when they
 * leave at most this share of the points to visit; else a full pass. */
#ifndef FKM_GROUP_SHARE
#define FKM_GROUP_SHARE 0.5
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

/* Cluster-level pruning (Raff, "Exact acceleration of k-means++ and
 * k-means||", IJCAI 2021, the idea; this code is ours).  The active points
 * are kept grouped by label: mem[j][0..cnt[j]) holds, in no particular order,
 * the ids of the points whose nearest center is center number j, and rad[j]
 * is at least the largest mind among them.  When a new center c satisfies
 * ||c - c_j||^2 >= FKM_PRUNE_FACTOR * rad[j], no point of group j can get
 * closer to c than to c_j (triangle inequality, as for one point), so the
 * whole group is skipped without reading it.  The groups only decide which
 * points are compared with the new center: mind, labels and the block sums
 * are computed exactly as by a full pass, so results do not change.
 *
 * The groups are built from the labels (seeding_groups_rebuild) and kept up
 * to date by the group steps; a full pass (update_pass) leaves them stale.
 * Rebuilding costs a pass over the labels and mind, so while full passes win
 * (no structure to exploit, e.g. noise) it is retried after 1, 2, 4, ...
 * steps only. */
typedef struct {
    fkm_index_t **mem;  /* k arrays of ids */
    fkm_index_t *cnt;   /* k: group sizes */
    fkm_index_t *cap;   /* k: allocated lengths of mem[j] */
    double *rad;        /* k: bound on the largest mind of each group */
    fkm_index_t *moved; /* n: ids that moved in the current step */
    uint8_t *dirty;     /* nb: blocks whose sum must be recomputed */
    fkm_index_t k;
    int valid;          /* the groups match the labels */
    fkm_index_t next_rebuild, gap;
} seeding_groups_t;

static void seeding_groups_free(seeding_groups_t *g)
{
    if (g->mem)
        for (fkm_index_t j = 0; j < g->k; ++j)
            free(g->mem[j]);
    free(g->mem);
    free(g->cnt);
    free(g->cap);
    free(g->rad);
    free(g->moved);
    free(g->dirty);
    memset(g, 0, sizeof *g);
}

static int seeding_groups_init(seeding_groups_t *g, fkm_index_t n,
                               fkm_index_t k, fkm_index_t first_step)
{
    fkm_index_t nb = (n + FKM_SEED_BLOCK - 1) / FKM_SEED_BLOCK;
    size_t kk = (size_t)(k > 0 ? k : 1);
    memset(g, 0, sizeof *g);
    g->k = k;
    g->mem = calloc(kk, sizeof *g->mem);
    g->cnt = calloc(kk, sizeof *g->cnt);
    g->cap = calloc(kk, sizeof *g->cap);
    g->rad = calloc(kk, sizeof *g->rad);
    g->moved = malloc((size_t)(n > 0 ? n : 1) * sizeof *g->moved);
    g->dirty = calloc((size_t)(nb > 0 ? nb : 1), 1);
    g->next_rebuild = first_step;
    g->gap = 1;
    if (!g->mem || !g->cnt || !g->cap || !g->rad || !g->moved || !g->dirty) {
        seeding_groups_free(g);
        return FKM_ENOMEM;
    }
    return FKM_OK;
}

/* Give mem[j] room for at least want ids, and no more than about twice. */
static int seeding_groups_fit(seeding_groups_t *g, fkm_index_t j,
                              fkm_index_t want)
{
    if (g->cap[j] >= want && g->cap[j] <= 2 * want + 64)
        return FKM_OK;
    fkm_index_t c = want > 0 ? want : 1;
    fkm_index_t *p = realloc(g->mem[j], (size_t)c * sizeof *p);
    if (!p) {
        if (g->cap[j] >= want)
            return FKM_OK; /* a failed shrink keeps the larger array */
        return FKM_ENOMEM;
    }
    g->mem[j] = p;
    g->cap[j] = c;
    return FKM_OK;
}

/* Groups of centers 0..m-1 from the labels (active points only; labels are
 * checked before use), with exact radii. */
static int seeding_groups_rebuild(seeding_groups_t *g, const double *mind,
                                  const int32_t *labels, fkm_index_t n,
                                  fkm_index_t m)
{
    for (fkm_index_t j = 0; j < m; ++j) {
        g->cnt[j] = 0;
        g->rad[j] = 0.0;
    }
    for (fkm_index_t i = 0; i < n; ++i) {
        int32_t l = labels[i];
        if (l >= 0 && l < m)
            g->cnt[l]++;
    }
    for (fkm_index_t j = 0; j < m; ++j) {
        int status = seeding_groups_fit(g, j, g->cnt[j]);
        if (status != FKM_OK) {
            g->valid = 0;
            return status;
        }
        g->cnt[j] = 0;
    }
    for (fkm_index_t i = 0; i < n; ++i) {
        int32_t l = labels[i];
        if (l >= 0 && l < m) {
            g->mem[l][g->cnt[l]++] = i;
            /* NaN never moves (dd < NaN is false): it needs no bound */
            if (mind[i] > g->rad[l])
                g->rad[l] = mind[i];
        }
    }
    g->valid = 1;
    return FKM_OK;
}

/* Number of points in the groups that a new center at squared distances
 * dcc[0..m) from centers 0..m-1 cannot skip. */
static fkm_index_t seeding_groups_visits(const seeding_groups_t *g,
                                         const double *dcc, fkm_index_t m)
{
    fkm_index_t v = 0;
    for (fkm_index_t j = 0; j < m; ++j)
        if (!(dcc[j] >= FKM_PRUNE_FACTOR * g->rad[j]))
            v += g->cnt[j];
    return v;
}

/* Recompute the sums of the blocks marked dirty (as a full pass would). */
static void seeding_groups_sums(seeding_groups_t *g, double *bsum,
                                const double *mind, const double *w,
                                fkm_index_t n)
{
    fkm_index_t nb = (n + FKM_SEED_BLOCK - 1) / FKM_SEED_BLOCK;
    for (fkm_index_t b = 0; b < nb; ++b) {
        if (!g->dirty[b])
            continue;
        g->dirty[b] = 0;
        fkm_index_t lo = b * FKM_SEED_BLOCK;
        fkm_index_t hi = lo + FKM_SEED_BLOCK < n ? lo + FKM_SEED_BLOCK : n;
        bsum[b] = seeding_block_mass(mind, w, lo, hi);
    }
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
    FKM_ASSERT(n == 0 || (mind != NULL && labels != NULL && X != NULL));
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
