/* fkm_lattice.h -- uniform (cubic) lattice quantization with a phase.
 *
 * The lattice with step s > 0 and phase theta (one value per coordinate, in
 * units of the step) cuts every axis into half-open bins
 *
 *     bin b covers [(b + theta_j) * s, (b + 1 + theta_j) * s),
 *
 * so a point x falls into b_j = floor(x_j / s - theta_j).  MUFC (Pan et al.,
 * ICLR 2023) quantizes client centroids with theta = 0 and sends bin counts;
 * Q-k-means (Ginart et al., NeurIPS 2019) draws a fresh theta uniform in
 * [-1/2, 1/2]^d for every use.  Bins of a B^d grid are numbered in row-major
 * (mixed-radix) order for the secure aggregation vectors.
 *
 * Every kernel takes n x d row-major arrays, evaluates its formula in double
 * precision in the order written below (the build uses -ffp-contract=off, so
 * a numpy expression with the same operation order gives identical bits),
 * and accepts phase == NULL for theta = 0.  On an error status the outputs
 * are unspecified (partly written).
 */
#ifndef FKM_LATTICE_H
#define FKM_LATTICE_H

#include "fkm_common.h"
#include "fkm_rng.h"

/* Bin coordinates are kept below this magnitude (before flooring), which
 * leaves headroom in int64 for offsets and +1 neighbours. */
#define FKM_LATTICE_MAX_COORD 0x1p62

/* fkm_lattice_quantize_{f64,f32}
 *
 * bins   OUT, n x d: bins[i,j] = floor(t) with t = (double)X[i,j] / step
 *        - phase[j] (the subtraction is skipped when phase is NULL)
 * X      IN, n x d
 * phase  IN, length d, finite, or NULL
 * step   finite, > 0
 * Assumes without checking: phase (if given) holds d finite values.
 * Returns FKM_OK; FKM_EDOM if step is not finite and positive;
 * FKM_ENONFINITE if X holds a NaN or an infinity (checked over all of X, so
 * this status wins over the next one); FKM_EOVERFLOW if some |t| >= 2^62 or
 * t is NaN (e.g. a finite x / step that overflows).
 */
int fkm_lattice_quantize_f64(int64_t *bins, const double *X,
                             const double *phase, fkm_index_t n,
                             fkm_index_t d, double step);
int fkm_lattice_quantize_f32(int64_t *bins, const float *X,
                             const double *phase, fkm_index_t n,
                             fkm_index_t d, double step);

/* fkm_lattice_centers
 *
 * out    OUT, n x d: out[i,j] = (((double)bins[i,j] + 0.5) + phase[j]) * step
 *        (without the phase term when phase is NULL)
 * bins   IN, n x d, any int64 values (converted to double, rounding to
 *        nearest beyond 2^53)
 * phase  IN, length d, or NULL
 * step   finite, > 0
 * Assumes without checking: phase (if given) holds d finite values.
 * Returns FKM_OK; FKM_EDOM if step is not finite and positive;
 * FKM_ENONFINITE if some output overflows to infinity.
 */
int fkm_lattice_centers(double *out, const int64_t *bins, const double *phase,
                        fkm_index_t n, fkm_index_t d, double step);

/* fkm_lattice_sample
 *
 * rng    generator; drawn from exactly n * d times, in row-major order
 *        (u[i,j] is draw number i * d + j), and only when the status is
 *        FKM_OK.  numpy's Generator.random((n, d)) makes the same draws.
 * out    OUT, n x d: out[i,j] = (((double)bins[i,j] + u[i,j]) + phase[j])
 *        * step with u[i,j] = rng->next_double, uniform on [0, 1)
 *        (without the phase term when phase is NULL)
 * bins   IN, n x d, any int64 values
 * phase  IN, length d, or NULL
 * step   finite, > 0
 * Assumes without checking: phase (if given) holds d finite values.
 * Returns FKM_OK; FKM_EDOM if step is not finite and positive (no draw);
 * FKM_ENONFINITE if some output could overflow to infinity (checked from
 * both edges of every bin before drawing, so the generator is untouched).
 * Note: the point lies in the closed bin; rounding of b + u can reach the
 * upper edge, with probability about |b| * 2^-53 per coordinate.
 */
int fkm_lattice_sample(fkm_rng_t *rng, double *out, const int64_t *bins,
                       const double *phase, fkm_index_t n, fkm_index_t d,
                       double step);

/* fkm_lattice_grid_size
 *
 * size    OUT: n_bins^d (1 when d == 0)
 * Returns FKM_OK; FKM_EDOM if n_bins < 1 or d < 0; FKM_EOVERFLOW if
 * n_bins^d > INT64_MAX = 2^63 - 1 (*size is then left unchanged).  Exact:
 * computed with overflow-safe integer arithmetic, O(min(d, 63)) steps.
 */
int fkm_lattice_grid_size(int64_t *size, fkm_index_t d, int64_t n_bins);

/* fkm_lattice_flatten
 *
 * index  OUT, length n: index[i] = ((bins[i,0] * B + bins[i,1]) * B + ...)
 *        + bins[i,d-1], the row-major position of the bin in the B^d grid
 *        (0 when d == 0); B = n_bins
 * bins   IN, n x d, each in [0, n_bins)
 * Returns FKM_OK; FKM_EDOM if n_bins < 1 or some bin is outside
 * [0, n_bins); FKM_EOVERFLOW if n_bins^d does not fit in int64 (checked
 * first, exactly, whatever n is).
 */
int fkm_lattice_flatten(int64_t *index, const int64_t *bins, fkm_index_t n,
                        fkm_index_t d, int64_t n_bins);

/* fkm_lattice_unflatten -- inverse of fkm_lattice_flatten.
 *
 * bins   OUT, n x d: the base-n_bins digits of index[i], most significant
 *        first
 * index  IN, length n, each in [0, n_bins^d)
 * Returns FKM_OK; FKM_EDOM if n_bins < 1 or some index is outside
 * [0, n_bins^d); FKM_EOVERFLOW if n_bins^d does not fit in int64 (checked
 * first, as for flatten).
 */
int fkm_lattice_unflatten(int64_t *bins, const int64_t *index, fkm_index_t n,
                          fkm_index_t d, int64_t n_bins);

#endif /* FKM_LATTICE_H */
