/* fkm_lattice.c -- lattice quantization, bin centers, uniform sampling inside
 * bins and row-major bin numbering (see fkm_lattice.h for the contracts). */
#include "fkm_lattice.h"

#include <float.h>
#include <math.h>
#include <string.h>

static int step_ok(double step)
{
    return step > 0.0 && isfinite(step);
}

/* Element k of X, a float or a double array; `f32` is a constant at every
 * call site, so each caller compiles to a single-type loop. */
static inline __attribute__((always_inline)) double
load_elem(const void *X, fkm_index_t k, int f32)
{
    return f32 ? (double)((const float *)X)[k] : ((const double *)X)[k];
}

/* floor(t) as int64 for |t| < 2^62 (else 0); *ok is cleared when t is out of
 * range or NaN.  Truncation plus a correction is branch-free and needs no
 * libm call: trunc(t) is exactly representable, so the comparison is exact. */
static inline __attribute__((always_inline)) int64_t
floor_to_int64(double t, int *ok)
{
    int in = fabs(t) < FKM_LATTICE_MAX_COORD;
    *ok &= in;
    t = in ? t : 0.0;
    int64_t k = (int64_t)t;
    return k - ((double)k > t);
}

/* The same for |t| < 2^50 only, with operations that vectorize on every
 * x86-64 level (no double -> int64 conversion instruction before AVX-512):
 * adding 1.5 * 2^52 rounds t to the nearest integer r, held in the low
 * mantissa bits of y, whose bit pattern minus that of 1.5 * 2^52 is r
 * (assumes the default round-to-nearest mode).  *bad becomes nonzero when t
 * is out of range or NaN (the result is then meaningless, but computing it
 * is harmless: no conversion is involved). */
#define FKM_FAST_MAX 0x1p50
#define FKM_ROUND_MAGIC 0x1.8p52
#define FKM_ROUND_MAGIC_BITS UINT64_C(0x4338000000000000)

static inline __attribute__((always_inline)) int64_t
floor_to_int64_fast(double t, int64_t *bad)
{
    *bad |= (int64_t)!(fabs(t) < FKM_FAST_MAX);
    double y = t + FKM_ROUND_MAGIC;
    double r = y - FKM_ROUND_MAGIC;
    uint64_t ybits;
    memcpy(&ybits, &y, sizeof ybits);
    /* Unsigned: out of range (then *bad is set) the difference wraps, which
     * in int64_t would be undefined behaviour; in range it is exact. */
    return (int64_t)(ybits - FKM_ROUND_MAGIC_BITS - (uint64_t)(r > t));
}

/* The common preconditions (fkm_lattice.h): n, d >= 0, the n x d arrays
 * present when nonempty, phase NULL or d finite values. */
#define LATTICE_ASSERT_ARGS(out, in)                                          \
    do {                                                                      \
        FKM_ASSERT(n >= 0 && d >= 0);                                         \
        FKM_ASSERT(n == 0 || d == 0 || ((out) != NULL && (in) != NULL));      \
        FKM_ASSERT_EACH(j_, phase ? d : 0, isfinite(phase[j_]));              \
    } while (0)

/* Error path of quantize: decide which status to report. */
static int quantize_failure(const void *X, int f32, fkm_index_t nd)
{
    for (fkm_index_t k = 0; k < nd; ++k)
        if (!isfinite(load_elem(X, k, f32)))
            return FKM_ENONFINITE;
    return FKM_EOVERFLOW;
}

/* t = x / step - phase_j for one row: bins[j] = floor(t).  The fast loop
 * covers |t| < 2^50; a row with a larger coordinate is redone exactly.
 * `f32` and `has_phase` are constants at every call site. */
#define FKM_T(j) (load_elem(x, (j), f32) / step - (has_phase ? phase[j] : 0.0))

static inline __attribute__((always_inline)) int
quantize_row(int64_t *restrict b, const void *restrict x, int f32,
             int has_phase, const double *restrict phase, fkm_index_t d,
             double step)
{
    int64_t bad = 0;
    for (fkm_index_t j = 0; j < d; ++j) {
        double t = FKM_T(j);
        b[j] = floor_to_int64_fast(t, &bad);
    }
    if (!bad)
        return 1;
    int ok = 1;
    for (fkm_index_t j = 0; j < d; ++j) {
        double t = FKM_T(j);
        b[j] = floor_to_int64(t, &ok);
    }
    return ok;
}

static inline __attribute__((always_inline)) int
quantize_rows(int64_t *restrict bins, const void *restrict X, int f32,
              const double *restrict phase, fkm_index_t n, fkm_index_t d,
              double step)
{
    if (!step_ok(step))
        return FKM_EDOM;
    const size_t esize = f32 ? sizeof(float) : sizeof(double);
    for (fkm_index_t i = 0; i < n; ++i) {
        const char *x = (const char *)X + (size_t)(i * d) * esize;
        int ok = phase ? quantize_row(bins + i * d, x, f32, 1, phase, d, step)
                       : quantize_row(bins + i * d, x, f32, 0, NULL, d, step);
        if (!ok)
            return quantize_failure(X, f32, n * d);
    }
    return FKM_OK;
}

/* deliberate specialization: typed float64 / float32 entry points of one
 * body (quantize_rows, inlined with f32 constant in each). */
FKM_HOT
int fkm_lattice_quantize_f64(int64_t *bins, const double *X,
                             const double *phase, fkm_index_t n,
                             fkm_index_t d, double step)
{
    LATTICE_ASSERT_ARGS(bins, X);
    return quantize_rows(bins, X, 0, phase, n, d, step);
}

/* deliberate specialization: the float32 twin of fkm_lattice_quantize_f64. */
FKM_HOT
int fkm_lattice_quantize_f32(int64_t *bins, const float *X,
                             const double *phase, fkm_index_t n,
                             fkm_index_t d, double step)
{
    LATTICE_ASSERT_ARGS(bins, X);
    return quantize_rows(bins, X, 1, phase, n, d, step);
}

FKM_HOT
int fkm_lattice_centers(double *out, const int64_t *bins, const double *phase,
                        fkm_index_t n, fkm_index_t d, double step)
{
    LATTICE_ASSERT_ARGS(out, bins);
    if (!step_ok(step))
        return FKM_EDOM;
    for (fkm_index_t i = 0; i < n; ++i) {
        const fkm_index_t row = i * d;
        int ok = 1;
        for (fkm_index_t j = 0; j < d; ++j) {
            double c = (double)bins[row + j] + 0.5;
            if (phase)
                c += phase[j];
            c *= step;
            ok &= fabs(c) <= DBL_MAX;
            out[row + j] = c;
        }
        if (!ok)
            return FKM_ENONFINITE;
    }
    return FKM_OK;
}

/* Whether ((b + u) + phase_j) * step is finite for every u in [0, 1).  Each
 * rounded operation is monotone in u, so checking u = 0 and u = 1 (both
 * edges of the bin) bounds every draw. */
static int sample_in_range(const int64_t *bins, const double *phase,
                           fkm_index_t n, fkm_index_t d, double step)
{
    /* Fast accept: |b + u| <= 2^63 after rounding, so the outputs stay below
     * (2^64 + max|phase|) * step with room for rounding. */
    double pmax = 0.0;
    for (fkm_index_t j = 0; phase && j < d; ++j)
        pmax = fabs(phase[j]) > pmax ? fabs(phase[j]) : pmax;
    if ((0x1p64 + pmax) * step < 0x1p1023)
        return 1;
    for (fkm_index_t i = 0; i < n; ++i) {
        for (fkm_index_t j = 0; j < d; ++j) {
            double b = (double)bins[i * d + j];
            double p = phase ? phase[j] : 0.0;
            double lo = (b + p) * step, hi = ((b + 1.0) + p) * step;
            if (!(fabs(lo) <= DBL_MAX && fabs(hi) <= DBL_MAX))
                return 0;
        }
    }
    return 1;
}

int fkm_lattice_sample(fkm_rng_t *rng, double *out, const int64_t *bins,
                       const double *phase, fkm_index_t n, fkm_index_t d,
                       double step)
{
    FKM_ASSERT(rng != NULL);
    LATTICE_ASSERT_ARGS(out, bins);
    if (!step_ok(step))
        return FKM_EDOM;
    if (!sample_in_range(bins, phase, n, d, step))
        return FKM_ENONFINITE;
    const fkm_index_t nd = n * d;
    if (phase) {
        for (fkm_index_t i = 0; i < n; ++i) {
            const fkm_index_t row = i * d;
            for (fkm_index_t j = 0; j < d; ++j) {
                double u = fkm_rng_double(rng);
                out[row + j] = (((double)bins[row + j] + u) + phase[j]) * step;
            }
        }
    } else {
        for (fkm_index_t k = 0; k < nd; ++k) {
            double u = fkm_rng_double(rng);
            out[k] = ((double)bins[k] + u) * step;
        }
    }
    return FKM_OK;
}

int fkm_lattice_grid_size(int64_t *size, fkm_index_t d, int64_t n_bins)
{
    FKM_ASSERT(size != NULL);
    if (n_bins < 1 || d < 0)
        return FKM_EDOM;
    int64_t g = 1;
    if (n_bins > 1) {
        /* g * n_bins <= INT64_MAX  <=>  g <= floor(INT64_MAX / n_bins);
         * n_bins >= 2 ends the loop after at most 63 steps. */
        const int64_t limit = INT64_MAX / n_bins;
        for (fkm_index_t j = 0; j < d; ++j) {
            if (g > limit)
                return FKM_EOVERFLOW;
            g *= n_bins;
        }
    }
    *size = g;
    return FKM_OK;
}

/* The preconditions shared by fkm_lattice_flatten and
 * fkm_lattice_unflatten (FKM_ASSERT: debug builds only), then the grid size
 * n_bins^d into *grid (FKM_EOVERFLOW past INT64_MAX). */
static int flat_grid(int64_t *grid, const int64_t *index, const int64_t *bins,
                     fkm_index_t n, fkm_index_t d, int64_t n_bins)
{
    FKM_ASSERT(n >= 0 && (n == 0 || index != NULL) && (n == 0 || d <= 0 || bins != NULL));
    (void)index, (void)bins, (void)n;
    return fkm_lattice_grid_size(grid, d, n_bins);
}

int fkm_lattice_flatten(int64_t *index, const int64_t *bins, fkm_index_t n,
                        fkm_index_t d, int64_t n_bins)
{
    int64_t grid;
    int status = flat_grid(&grid, index, bins, n, d, n_bins);
    if (status != FKM_OK)
        return status;
    const uint64_t B = (uint64_t)n_bins;
    for (fkm_index_t i = 0; i < n; ++i) {
        const int64_t *b = bins + i * d;
        /* Unsigned, so that a bad row wraps instead of overflowing; a good
         * row stays below grid <= INT64_MAX. */
        uint64_t idx = 0;
        int bad = 0;
        for (fkm_index_t j = 0; j < d; ++j) {
            bad |= (uint64_t)b[j] >= B; /* negatives wrap to >= 2^63 */
            idx = idx * B + (uint64_t)b[j];
        }
        if (bad)
            return FKM_EDOM;
        index[i] = (int64_t)idx;
    }
    return FKM_OK;
}

int fkm_lattice_unflatten(int64_t *bins, const int64_t *index, fkm_index_t n,
                          fkm_index_t d, int64_t n_bins)
{
    int64_t grid;
    int status = flat_grid(&grid, index, bins, n, d, n_bins);
    if (status != FKM_OK)
        return status;
    for (fkm_index_t i = 0; i < n; ++i) {
        int64_t v = index[i];
        if (v < 0 || v >= grid)
            return FKM_EDOM;
        int64_t *b = bins + i * d;
        for (fkm_index_t j = d - 1; j >= 0; --j) {
            b[j] = v % n_bins;
            v /= n_bins;
        }
    }
    return FKM_OK;
}
