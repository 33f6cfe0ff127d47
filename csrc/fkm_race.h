/* fkm_race.h -- k-means++ (D^2) seeding as an exponential race keyed by ids.
 *
 * Every point i draws, for every step j, a uniform u(key, id_i, j) that is a
 * pure function of (key, id, j) (splitmix64 hashing), and E_ij = -log u.
 * The first seed is argmin_i E_i0 (uniform); seed j is argmin_i E_ij / D_i^2
 * with D_i^2 the squared distance to the nearest earlier seed, which selects
 * i with probability D_i^2 / sum D^2 (the minimum of independent
 * exponentials with rates D_i^2).  Because the draws are keyed by ids, not
 * positions, seeding a subset of the rows with their ids replays the draws
 * of the full set: deletion-efficient k-means relies on it (Q-k-means
 * certifies a deletion when no seed is removed).
 */
#ifndef FKM_RACE_H
#define FKM_RACE_H

#include "fkm_common.h"

/* The uniform draw u(key, id, step) in (0, 1) (53-bit grid, never 0 or 1). */
double fkm_race_uniform(uint64_t key, int64_t id, uint64_t step);

/* Seed positions (rows of X) in order, written to seeds[0..k-1].
 *
 * X is n x d row-major (float64 or float32); ids[n] keys the draws;
 * excluded[n] (may be NULL) marks rows that take no part; d2[n] is caller
 * workspace (on return: squared distance of each row to its nearest seed,
 * 0 for excluded rows).  When every remaining point coincides with a seed,
 * the next seed is the unchosen eligible row with the smallest E_ij.
 * Ties are broken by the lowest position.
 *
 * n_trials > 1 is greedy k-means++ (as scikit-learn's): each step runs
 * n_trials independent races (trial 0 is the plain race's draw) and keeps
 * the candidate that minimises the potential sum_i min(D_i^2, |x_i - c|^2)
 * (ties to the lowest trial).  Removing any point can then change the seeds,
 * so only the plain race (n_trials = 1) suits certified deletion.
 * Returns FKM_EDOM when fewer than k rows are eligible or n_trials is
 * outside [1, FKM_RACE_MAX_TRIALS], FKM_ENONFINITE when a squared distance
 * is not finite.  Assumes n, d, k >= 1 (unchecked).
 */
#define FKM_RACE_MAX_TRIALS 16
int fkm_race_seeding_f64(fkm_index_t *seeds, double *d2, const double *X,
                         const int64_t *ids, const uint8_t *excluded,
                         fkm_index_t n, fkm_index_t d, fkm_index_t k, uint64_t key,
                         fkm_index_t n_trials);
int fkm_race_seeding_f32(fkm_index_t *seeds, double *d2, const float *X,
                         const int64_t *ids, const uint8_t *excluded,
                         fkm_index_t n, fkm_index_t d, fkm_index_t k, uint64_t key,
                         fkm_index_t n_trials);

/* fkm_race_seeding_f64 that also records its decisions (for certifying
 * that removing a point leaves the seeds unchanged):
 * cand  OUT, k x n_trials: cand[j*n_trials + l] is the winner of race l at
 *       step j (1 <= j < k), the row whose E_ijl / D_i^2 is smallest; -1 in
 *       row 0 and in every row where no point had D_i^2 > 0 (the fallback
 *       of the header comment picked the seed).
 * pot   OUT, k x n_trials: with n_trials > 1, pot[j*n_trials + l] is the
 *       potential sum_i min(D_i^2, |x_i - cand|^2) computed for candidate l
 *       (summed in row order, one term per eligible row), NaN where none was
 *       computed (row 0, a candidate equal to an earlier trial's, the
 *       fallback, n_trials = 1).  The seed of step j is the first candidate
 *       of smallest potential.
 * Same seeds, d2 and status as fkm_race_seeding_f64 otherwise.
 */
int fkm_race_seeding_trace_f64(fkm_index_t *seeds, double *d2, fkm_index_t *cand,
                               double *pot, const double *X, const int64_t *ids,
                               const uint8_t *excluded, fkm_index_t n,
                               fkm_index_t d, fkm_index_t k, uint64_t key,
                               fkm_index_t n_trials);

/* The plain race (n_trials = 1, no excluded rows) of fkm_race_seeding_f64
 * that also returns dist (OUT, n x k): dist[i*k + j] is the squared
 * distance of row i to seed j, computed as every squared distance of the
 * race (four partial sums over the coordinates c = 0, 1, 2, 3 mod 4, the
 * remainder added to the first, then (a0 + a1) + (a2 + a3)); d2[i] is the
 * minimum of row i.  Same seeds and status as fkm_race_seeding_f64. */
int fkm_race_seeding_dist_f64(fkm_index_t *seeds, double *d2, double *dist,
                              const double *X, const int64_t *ids,
                              fkm_index_t n, fkm_index_t d, fkm_index_t k,
                              uint64_t key);

#endif /* FKM_RACE_H */
