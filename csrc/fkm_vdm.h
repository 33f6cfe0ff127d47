/* fkm_vdm.h -- subproduct trees over F_p: the transposed Vandermonde solve
 * and multipoint evaluation.
 *
 * The secure-aggregation decoder (DESIGN.md) knows the support x_1..x_m of
 * a sparse vector (the roots of the Berlekamp-Massey polynomial) and its
 * power sums s_i = sum_j c_j x_j^i, i < m; fkm_vdm_solve recovers the c_j.
 * With F(y) = prod_j (y - x_j) and Q(z) = prod_j (1 - x_j z), the product
 * (S Q) mod z^m reversed, evaluated at x_j and divided by F'(x_j), gives
 * c_j: one product and one multipoint evaluation per right-hand side, the
 * tree, Q and 1 / F'(x_j) shared (fkm_vdm.c).
 *
 * Common contract: C from fkm_pctx_init with a prime p (unchecked); all
 * values in [0, p) (unchecked); outputs never overlap inputs.
 */
#ifndef FKM_VDM_H
#define FKM_VDM_H

#include <stdint.h>

#include "fkm_common.h"
#include "fkm_poly.h"

/* Shared precomputation for m distinct nodes; fields private to fkm_vdm.c
 * except m. */
typedef struct {
    int64_t m;
    int levels;          /* tree levels 0 .. levels-1 */
    uint64_t **tree;     /* tree[k]: node i at offset i (2^k + 1) */
    uint64_t *node;      /* copy of the nodes */
    uint64_t *rev_f;     /* prod_j (1 - x_j z), m + 1 coefficients */
    uint64_t *inv_df;    /* 1 / F'(x_j) */
} fkm_vdm_t;

/* fkm_vdm_init
 * V      OUT: the precomputation (release with fkm_vdm_clear, which is
 *        also allowed after a failed init)
 * C      INOUT: its NTT tables grow to what fkm_vdm_solve needs
 * nodes  IN, m distinct elements (copied)
 * Returns FKM_OK, FKM_EDOM (m < 1), FKM_EREPEATED (two nodes are equal)
 * or FKM_ENOMEM. */
int fkm_vdm_init(fkm_vdm_t *V, fkm_pctx_t *C, const uint64_t *nodes,
                 int64_t m);
void fkm_vdm_clear(fkm_vdm_t *V);

/* fkm_vdm_solve
 * c      OUT, m values: the c_j with sum_j c_j x_j^i = s_i for i < m
 * V      IN, from fkm_vdm_init on C
 * C      the context V was built with; only read (its tables were sized
 *        by fkm_vdm_init), so solves on one V and C may run concurrently
 * s      IN, m values
 * Returns FKM_OK or FKM_ENOMEM. */
int fkm_vdm_solve(const fkm_vdm_t *V, fkm_pctx_t *C, const uint64_t *s,
                  uint64_t *c);

/* fkm_vdm_eval
 * out    OUT, m values: a(x_j) at V's nodes
 * a      IN, la >= 0 coefficients (any degree; trailing zeros allowed)
 * Returns FKM_OK or FKM_ENOMEM. */
int fkm_vdm_eval(const fkm_vdm_t *V, fkm_pctx_t *C, const uint64_t *a,
                 int64_t la, uint64_t *out);

/* fkm_poly_eval_multi: multipoint evaluation with its own trees.
 * out    OUT, n values: a(x[i]) (nothing written when n <= 0)
 * a      IN, la >= 0 coefficients; x IN, n points (repeats allowed)
 * C      INOUT: its NTT tables may grow
 * Horner for small n or la, else subproduct trees over blocks of la
 * points.  Returns FKM_OK or FKM_ENOMEM. */
int fkm_poly_eval_multi(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                        const uint64_t *x, int64_t n, uint64_t *out);

#endif /* FKM_VDM_H */
