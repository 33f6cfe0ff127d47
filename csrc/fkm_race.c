/* fkm_race.c -- exponential-race k-means++ seeding (see fkm_race.h). */
#include "fkm_race.h"

#include <math.h>

static inline uint64_t splitmix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

double fkm_race_uniform(uint64_t key, int64_t id, uint64_t step)
{
    uint64_t h = splitmix64((uint64_t)id * 0x100000001B3ULL + step);
    h = splitmix64(h ^ key);
    return ((double)(h >> 11) + 0.5) * 0x1p-53;
}

static inline double race_exp(uint64_t key, int64_t id, uint64_t step)
{
    return -log(fkm_race_uniform(key, id, step));
}

/* Squared distance of two rows (four partial sums: short dependency chains). */
#define FKM_RACE_SQDIST(T)                                                    \
    static inline double sqdist_##T(const T *x, const T *y, fkm_index_t d)    \
    {                                                                         \
        double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;                        \
        fkm_index_t c;                                                        \
        for (c = 0; c + 4 <= d; c += 4) {                                     \
            double t0 = (double)x[c] - (double)y[c];                          \
            double t1 = (double)x[c + 1] - (double)y[c + 1];                  \
            double t2 = (double)x[c + 2] - (double)y[c + 2];                  \
            double t3 = (double)x[c + 3] - (double)y[c + 3];                  \
            a0 += t0 * t0;                                                    \
            a1 += t1 * t1;                                                    \
            a2 += t2 * t2;                                                    \
            a3 += t3 * t3;                                                    \
        }                                                                     \
        for (; c < d; c++) {                                                  \
            double t = (double)x[c] - (double)y[c];                           \
            a0 += t * t;                                                      \
        }                                                                     \
        return (a0 + a1) + (a2 + a3);                                         \
    }
FKM_RACE_SQDIST(double)
FKM_RACE_SQDIST(float)

/* Draw index of trial l at step j: trial 0 uses step j itself, so one
 * trial is the plain race. */
static inline uint64_t trial_step(fkm_index_t j, fkm_index_t l)
{
    return (uint64_t)j + ((uint64_t)l << 32);
}

#define FKM_RACE_BODY(T)                                                      \
    {                                                                         \
        fkm_index_t i, j, l, best[FKM_RACE_MAX_TRIALS];                       \
        double bestv[FKM_RACE_MAX_TRIALS];                                    \
        if (n_trials < 1 || n_trials > FKM_RACE_MAX_TRIALS) return FKM_EDOM;  \
        best[0] = -1;                                                         \
        bestv[0] = INFINITY;                                                  \
        for (i = 0; i < n; i++) {                                             \
            double e;                                                         \
            if (excluded && excluded[i]) continue;                            \
            e = race_exp(key, ids[i], 0);                                     \
            if (best[0] < 0 || e < bestv[0]) { best[0] = i; bestv[0] = e; }   \
        }                                                                     \
        if (best[0] < 0) return FKM_EDOM;                                     \
        seeds[0] = best[0];                                                   \
        for (i = 0; i < n; i++) d2[i] = INFINITY;                             \
        for (j = 1; j <= k; j++) {                                            \
            const T *cj = X + (size_t)seeds[j - 1] * (size_t)d;               \
            int last = (j == k);                                              \
            fkm_index_t pick = -1;                                            \
            for (l = 0; l < n_trials; l++) { best[l] = -1; bestv[l] = INFINITY; } \
            for (i = 0; i < n; i++) {                                         \
                double s;                                                     \
                if (excluded && excluded[i]) { d2[i] = 0.0; continue; }       \
                s = sqdist_##T(X + (size_t)i * (size_t)d, cj, d);             \
                if (!(s < INFINITY)) return FKM_ENONFINITE;                   \
                if (s < d2[i]) d2[i] = s;                                     \
                if (last || !(d2[i] > 0.0)) continue;                         \
                for (l = 0; l < n_trials; l++) {                              \
                    /* -log u >= 1 - u: skip the log when even the lower  \
                     * bound cannot beat the best score (a margin covers  \
                     * rounding, so the winner is the same as with logs) */ \
                    double u = fkm_race_uniform(key, ids[i], trial_step(j, l)), sc; \
                    if ((1.0 - u) * (1.0 - 0x1p-40) >= bestv[l] * d2[i]) continue; \
                    sc = -log(u) / d2[i];                                     \
                    if (sc < bestv[l]) { best[l] = i; bestv[l] = sc; }        \
                }                                                             \
            }                                                                 \
            if (last) break;                                                  \
            if (best[0] >= 0 && n_trials == 1) {                              \
                pick = best[0];                                               \
            } else if (best[0] >= 0) { /* greedy: the lowest potential */     \
                double pbest = INFINITY;                                      \
                for (l = 0; l < n_trials; l++) {                              \
                    const T *cl = X + (size_t)best[l] * (size_t)d;            \
                    double pot = 0.0;                                         \
                    fkm_index_t q;                                            \
                    int seen = 0;                                             \
                    for (q = 0; q < l; q++) seen |= (best[q] == best[l]);     \
                    if (seen) continue;                                       \
                    for (i = 0; i < n; i++) {                                 \
                        double t;                                             \
                        if (excluded && excluded[i]) continue;                \
                        t = sqdist_##T(X + (size_t)i * (size_t)d, cl, d);     \
                        pot += t < d2[i] ? t : d2[i];                         \
                    }                                                         \
                    if (pot < pbest) { pbest = pot; pick = best[l]; }         \
                }                                                             \
                if (pick < 0) pick = best[0];                                 \
            } else { /* every remaining point is a seed's copy */             \
                double ev = INFINITY;                                         \
                for (i = 0; i < n; i++) {                                     \
                    fkm_index_t q;                                            \
                    double e;                                                 \
                    int taken = 0;                                            \
                    if (excluded && excluded[i]) continue;                    \
                    for (q = 0; q < j; q++) taken |= (seeds[q] == i);         \
                    if (taken) continue;                                      \
                    e = race_exp(key, ids[i], (uint64_t)j);                   \
                    if (pick < 0 || e < ev) { pick = i; ev = e; }             \
                }                                                             \
                if (pick < 0) return FKM_EDOM;                                \
            }                                                                 \
            seeds[j] = pick;                                                  \
        }                                                                     \
        return FKM_OK;                                                        \
    }

FKM_HOT int fkm_race_seeding_f64(fkm_index_t *seeds, double *d2, const double *X,
                         const int64_t *ids, const uint8_t *excluded,
                         fkm_index_t n, fkm_index_t d, fkm_index_t k, uint64_t key,
                         fkm_index_t n_trials)
FKM_RACE_BODY(double)

FKM_HOT int fkm_race_seeding_f32(fkm_index_t *seeds, double *d2, const float *X,
                         const int64_t *ids, const uint8_t *excluded,
                         fkm_index_t n, fkm_index_t d, fkm_index_t k, uint64_t key,
                         fkm_index_t n_trials)
FKM_RACE_BODY(float)
