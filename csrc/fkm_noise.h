/* fkm_noise.h -- noise samplers for differential privacy.
 *
 * Every sampler draws 64-bit words (next_uint64 only) from the generator
 * interface fkm_rng_t (fkm_rng.h): a ChaCha20 stream in secure mode
 * (fkm_chacha_rng), a numpy bit generator in simulations.  Samplers never
 * keep state between calls: words left over in a call's bit buffer are
 * discarded, so the i-th call on a stream always consumes a deterministic
 * stretch of it.
 *
 *  - fkm_noise_gaussian: continuous N(0, sigma^2) in double precision
 *    (Marsaglia's polar method on 54-bit-grid uniforms).  Floating-point
 *    noise; no formal DP guarantee (Mironov 2012).
 *  - fkm_noise_laplace: Laplace(0, b) in double precision (inverse CDF of
 *    a 53-bit uniform, random sign); same caveat.
 *  - fkm_noise_discrete_gaussian: exact samples of the discrete Gaussian
 *    N_Z(0, sigma^2), P[x] proportional to exp(-x^2 / (2 sigma^2)) on the
 *    integers, with sigma^2 = P/Q rational (Canonne, Kamath & Steinke 2020,
 *    Algorithms 1-3).  Every accept/reject decision is an exact comparison
 *    of integers with uniform bits: no floating point.
 */
#ifndef FKM_NOISE_H
#define FKM_NOISE_H

#include <stdint.h>

#include "fkm_common.h"
#include "fkm_rng.h"

/* Exact parameters of a discrete Gaussian: sigma^2 = P / Q. */
typedef struct fkm_dgauss {
    uint64_t P, Q; /* sigma^2 = P / Q, both > 0 */
    uint64_t t;    /* floor(sigma) + 1: scale of the discrete Laplace proposal */
    uint64_t Qt;   /* Q * t */
    int tbits;     /* bit length of t - 1 */
} fkm_dgauss_t;

/* Fill G for sigma^2 = P / Q.  Returns FKM_EDOM unless P > 0, Q > 0,
 * Q * t < 2^64 and 2 P Q t^2 < 2^127 (t = floor(sqrt(P/Q)) + 1), which
 * holds e.g. for P < 2^61 and sigma >= 1, or for sigma < 1 when
 * 2 P Q < 2^127. */
int fkm_dgauss_init(fkm_dgauss_t *G, uint64_t P, uint64_t Q);

/* Common contract of the samplers below: `rng` is a valid generator (drawn
 * from with next_uint64 only), `out` has room for n entries, n >= 0; the
 * samplers are reentrant for distinct generators.  A generator that ran out
 * (a ChaCha20 stream, fkm_chacha_rng) is the caller's to check afterwards.
 *
 * out[0..n) = n continuous N(0, sigma^2) samples.  FKM_EDOM unless sigma
 * is finite and > 0 (nothing drawn). */
int fkm_noise_gaussian(fkm_rng_t *rng, double *out, fkm_index_t n,
                       double sigma);

/* out[0..n) = n Laplace(0, scale) samples (density exp(-|x|/b) / (2b)).
 * FKM_EDOM unless scale is finite and > 0 (nothing drawn). */
int fkm_noise_laplace(fkm_rng_t *rng, double *out, fkm_index_t n,
                      double scale);

/* out[0..n) = n exact N_Z(0, P/Q) samples, G from fkm_dgauss_init.
 * FKM_EOVERFLOW if a proposal's magnitude exceeded 2^62 (probability below
 * exp(-2^30) per proposal for t <= 2^32); outputs then unspecified. */
int fkm_noise_discrete_gaussian(fkm_rng_t *rng, int64_t *out, fkm_index_t n,
                                const fkm_dgauss_t *G);

/* out[0..n) = n exact discrete Laplace samples with scale t >= 1:
 * P[x] proportional to exp(-|x| / t) (CKS20 Algorithm 2).  FKM_EDOM if
 * t == 0 or t > 2^62 (nothing drawn); FKM_EOVERFLOW as above. */
int fkm_noise_discrete_laplace(fkm_rng_t *rng, int64_t *out, fkm_index_t n,
                               uint64_t t);

/* out[0..n) = n exact Bernoulli(exp(-num/den)) bits (CKS20 Algorithm 1),
 * num >= 0, den > 0 (exposed for tests).  FKM_EDOM if den == 0 or
 * den >= 2^63 (nothing drawn). */
int fkm_noise_bernoulli_exp(fkm_rng_t *rng, uint8_t *out, fkm_index_t n,
                            uint64_t num, uint64_t den);

#endif /* FKM_NOISE_H */
