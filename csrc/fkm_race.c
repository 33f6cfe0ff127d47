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

#define FKM_RACE_BODY(T)                                                      \
    {                                                                         \
        fkm_index_t i, j, best = -1, c;                                       \
        double bestv = INFINITY;                                              \
        for (i = 0; i < n; i++) {                                             \
            double e;                                                         \
            if (excluded && excluded[i]) continue;                            \
            e = race_exp(key, ids[i], 0);                                     \
            if (best < 0 || e < bestv) { best = i; bestv = e; }               \
        }                                                                     \
        if (best < 0) return FKM_EDOM;                                        \
        seeds[0] = best;                                                      \
        for (i = 0; i < n; i++) d2[i] = INFINITY;                             \
        for (j = 1; j <= k; j++) {                                            \
            const T *cj = X + (size_t)seeds[j - 1] * (size_t)d;               \
            int last = (j == k);                                              \
            best = -1;                                                        \
            bestv = INFINITY;                                                 \
            for (i = 0; i < n; i++) {                                         \
                const T *xi = X + (size_t)i * (size_t)d;                      \
                double s, sc, a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;        \
                if (excluded && excluded[i]) { d2[i] = 0.0; continue; }       \
                /* four partial sums: short dependency chains */              \
                for (c = 0; c + 4 <= d; c += 4) {                             \
                    double t0 = (double)xi[c] - (double)cj[c];                \
                    double t1 = (double)xi[c + 1] - (double)cj[c + 1];        \
                    double t2 = (double)xi[c + 2] - (double)cj[c + 2];        \
                    double t3 = (double)xi[c + 3] - (double)cj[c + 3];        \
                    a0 += t0 * t0;                                            \
                    a1 += t1 * t1;                                            \
                    a2 += t2 * t2;                                            \
                    a3 += t3 * t3;                                            \
                }                                                             \
                for (; c < d; c++) {                                          \
                    double t = (double)xi[c] - (double)cj[c];                 \
                    a0 += t * t;                                              \
                }                                                             \
                s = (a0 + a1) + (a2 + a3);                                    \
                if (!(s < INFINITY)) return FKM_ENONFINITE;                   \
                if (s < d2[i]) d2[i] = s;                                     \
                if (last || !(d2[i] > 0.0)) continue;                         \
                {   /* -log u >= 1 - u: skip the log when even the lower  \
                     * bound cannot beat the best score (a margin covers  \
                     * rounding, so the winner is the same as with logs) */ \
                    double u = fkm_race_uniform(key, ids[i], (uint64_t)j);    \
                    if ((1.0 - u) * (1.0 - 0x1p-40) >= bestv * d2[i]) continue; \
                    sc = -log(u) / d2[i];                                     \
                }                                                             \
                if (sc < bestv) { best = i; bestv = sc; }                     \
            }                                                                 \
            if (last) break;                                                  \
            if (best < 0) { /* every remaining point is a seed's copy */      \
                for (i = 0; i < n; i++) {                                     \
                    fkm_index_t q;                                            \
                    double e;                                                 \
                    int taken = 0;                                            \
                    if (excluded && excluded[i]) continue;                    \
                    for (q = 0; q < j; q++) taken |= (seeds[q] == i);         \
                    if (taken) continue;                                      \
                    e = race_exp(key, ids[i], (uint64_t)j);                   \
                    if (best < 0 || e < bestv) { best = i; bestv = e; }       \
                }                                                             \
                if (best < 0) return FKM_EDOM;                                \
            }                                                                 \
            seeds[j] = best;                                                  \
        }                                                                     \
        return FKM_OK;                                                        \
    }

FKM_HOT int fkm_race_seeding_f64(fkm_index_t *seeds, double *d2, const double *X,
                         const int64_t *ids, const uint8_t *excluded,
                         fkm_index_t n, fkm_index_t d, fkm_index_t k, uint64_t key)
FKM_RACE_BODY(double)

FKM_HOT int fkm_race_seeding_f32(fkm_index_t *seeds, double *d2, const float *X,
                         const int64_t *ids, const uint8_t *excluded,
                         fkm_index_t n, fkm_index_t d, fkm_index_t k, uint64_t key)
FKM_RACE_BODY(float)
