/* fkm_race.c -- exponential-race k-means++ seeding (see fkm_race.h). */
#include "fkm_race.h"

#include <math.h>
#include <stdlib.h>

static inline uint64_t splitmix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* The draw itself, inlined in the loops below (the exported function is a
 * call through the PLT). */
static inline double race_uniform(uint64_t key, int64_t id, uint64_t step)
{
    uint64_t h = splitmix64((uint64_t)id * 0x100000001B3ULL + step);
    h = splitmix64(h ^ key);
    return ((double)(int64_t)(h >> 11) + 0.5) * 0x1p-53;
}

double fkm_race_uniform(uint64_t key, int64_t id, uint64_t step)
{
    return race_uniform(key, id, step);
}

static inline double race_exp(uint64_t key, int64_t id, uint64_t step)
{
    return -log(race_uniform(key, id, step));
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

/* The body, once per input type (T the element type of X). */
#define FKM_RACE_T double
#include "fkm_race_impl.h"
#undef FKM_RACE_T
#define FKM_RACE_T float
#include "fkm_race_impl.h"
#undef FKM_RACE_T

FKM_HOT int fkm_race_seeding_f64(fkm_index_t *seeds, double *d2, const double *X,
                                 const int64_t *ids, const uint8_t *excluded,
                                 fkm_index_t n, fkm_index_t d, fkm_index_t k, uint64_t key,
                                 fkm_index_t n_trials)
{
    return race_impl_f64(seeds, d2, X, ids, excluded, n, d, k, key, n_trials, NULL, NULL, NULL);
}

FKM_HOT int fkm_race_seeding_f32(fkm_index_t *seeds, double *d2, const float *X,
                                 const int64_t *ids, const uint8_t *excluded,
                                 fkm_index_t n, fkm_index_t d, fkm_index_t k, uint64_t key,
                                 fkm_index_t n_trials)
{
    return race_impl_f32(seeds, d2, X, ids, excluded, n, d, k, key, n_trials, NULL, NULL, NULL);
}

FKM_HOT int fkm_race_seeding_trace_f64(fkm_index_t *seeds, double *d2, fkm_index_t *cand,
                                       double *pot, const double *X, const int64_t *ids,
                                       const uint8_t *excluded, fkm_index_t n,
                                       fkm_index_t d, fkm_index_t k, uint64_t key,
                                       fkm_index_t n_trials)
{
    return race_impl_f64(seeds, d2, X, ids, excluded, n, d, k, key, n_trials, cand, pot, NULL);
}

FKM_HOT int fkm_race_seeding_dist_f64(fkm_index_t *seeds, double *d2, double *dist,
                                      const double *X, const int64_t *ids,
                                      fkm_index_t n, fkm_index_t d, fkm_index_t k,
                                      uint64_t key)
{
    return race_impl_f64(seeds, d2, X, ids, NULL, n, d, k, key, 1, NULL, NULL, dist);
}
