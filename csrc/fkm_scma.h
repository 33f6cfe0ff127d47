/* fkm_scma.h -- the client side of SCMA (sparse secure aggregation of
 * MUFC, Pan et al. ICLR 2023) over F_p: the encoding of a sparse count
 * vector as weighted power sums, and affine rows (hashes of bin
 * coordinates to field elements, random linear combinations).
 *
 * A client holding counts q_j at nodes x_j sends S_i = sum_j q_j x_j^i for
 * i < 2M (plus masks, fkm_stream.h); the server decodes with
 * Berlekamp-Massey (fkm_bm.h), roots (fkm_polyfac.h) and a transposed
 * Vandermonde solve (fkm_vdm.h).
 *
 * Common contract: F from fkm_field_init (p < 2^63); outputs never overlap
 * inputs.
 */
#ifndef FKM_SCMA_H
#define FKM_SCMA_H

#include <stdint.h>

#include "fkm_common.h"
#include "fkm_field.h"

/* fkm_scma_power_sums: the forward Vandermonde map for r weight rows.
 * out    OUT, r x n: out[t n + i] = sum_{j < k} w[t k + j] x_j^i mod p
 *        (nothing written when r or n is 0)
 * x      IN, k nodes in [0, p) (unchecked)
 * w      IN, r x k weights, any uint64 (reduced mod p on the way)
 * x and w may be NULL when k == 0 (out is then zero).
 * Returns FKM_OK, FKM_EDOM (k, r or n < 0) or FKM_ENOMEM.
 */
int fkm_scma_power_sums(fkm_field_t F, const uint64_t *x, int64_t k,
                        const uint64_t *w, int64_t r, int64_t n, uint64_t *out);

/* fkm_scma_affine_rows
 * out    OUT, n: out[i] = c0 + sum_{j < d} a[i d + j] coef[j] mod p
 * a      IN, n x d, any uint64 (entries need not be reduced; NULL allowed
 *        when d == 0)
 * coef   IN, d values, any uint64; c0 any uint64
 * Assumes n >= 0, d >= 0.
 */
void fkm_scma_affine_rows(fkm_field_t F, const uint64_t *a, int64_t n, int64_t d,
                          const uint64_t *coef, uint64_t c0, uint64_t *out);

#endif /* FKM_SCMA_H */
