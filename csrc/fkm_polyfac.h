/* fkm_polyfac.h -- roots and factorization of polynomials over F_p.
 *
 * Factorization follows the classical three stages (von zur Gathen &
 * Gerhard, Modern Computer Algebra, ch. 14): square-free, distinct-degree,
 * equal-degree (Cantor-Zassenhaus).  Roots are the degree-1 part, split with
 * Rabin's gcd((x + a)^((p-1)/2) - 1, f); fields with p <= 64 evaluate at
 * every element instead.  Random choices draw from the caller's generator
 * (fkm_rng.h), so results are reproducible for a seed.
 *
 * Common contract: C from fkm_pctx_init with a prime p (primality
 * unchecked), f's coefficients in [0, p) (unchecked), outputs never overlap
 * inputs; f may carry trailing zero coefficients (they are ignored).
 */
#ifndef FKM_POLYFAC_H
#define FKM_POLYFAC_H

#include <stdint.h>

#include "fkm_common.h"
#include "fkm_poly.h"
#include "fkm_rng.h"

/* fkm_poly_roots
 *
 * rng     generator (drawn from only when p > 64); not used otherwise
 * roots   OUT, capacity lf - 1: the distinct roots of f in F_p, in no
 *         particular order (ascending when p <= 64)
 * mult    OUT, capacity lf - 1: the multiplicity of each root
 * nroots  OUT: the number of distinct roots (0 on error or for a constant)
 * f       IN, lf coefficients, f != 0
 * require_split  nonzero: f must be a product of distinct linear factors,
 *         else FKM_ENOTSPLIT (roots then unspecified); the test costs one
 *         x^p mod f and saves the square-free stage
 * Returns FKM_OK, FKM_EDOM (f == 0), FKM_ENOTSPLIT, FKM_ENOSPLIT_RNG (256
 * random splittings failed: a broken generator) or FKM_ENOMEM.
 */
int fkm_poly_roots(fkm_pctx_t *C, const uint64_t *f, int64_t lf,
                   int require_split, fkm_rng_t *rng, uint64_t *roots,
                   int64_t *mult, int64_t *nroots);

/* Factor lists: nf monic factors, factor i has coefficients
 * coef[off[i] .. off[i+1]) and exponent exps[i].  With n = deg f the
 * caller provides capacities coef 2 n, off n + 1, exps n. */
typedef struct {
    uint64_t *coef;
    int64_t *off;
    int64_t *exps;
    int64_t nf;
} fkm_faclist_t;

/* fkm_poly_sqf: square-free factorization f = prod_i g_i^{e_i}, the g_i
 * monic and square-free, in no particular order.
 * out    OUT, capacities as above
 * f      IN, monic, deg f >= 1
 * Returns FKM_OK, FKM_EDOM (deg f < 1 or f not monic) or FKM_ENOMEM. */
int fkm_poly_sqf(fkm_pctx_t *C, const uint64_t *f, int64_t lf,
                 fkm_faclist_t *out);

/* fkm_poly_factor: irreducible factorization f = prod_i g_i^{e_i}, the g_i
 * monic irreducible and distinct, in no particular order.
 * rng    generator for equal-degree splitting
 * out    OUT, capacities as above
 * f      IN, monic, deg f >= 1
 * Returns FKM_OK, FKM_EDOM (deg f < 1 or f not monic), FKM_ENOSPLIT_RNG or
 * FKM_ENOMEM. */
int fkm_poly_factor(fkm_pctx_t *C, const uint64_t *f, int64_t lf,
                    fkm_rng_t *rng, fkm_faclist_t *out);

#endif /* FKM_POLYFAC_H */
