/* fkm_scma.c -- the client side of SCMA over F_p: weighted power sums and
 * affine rows (see fkm_scma.h). */
#include "fkm_scma.h"

#include <stdlib.h>

int fkm_scma_power_sums(fkm_field_t F, const uint64_t *x, int64_t k,
                        const uint64_t *w, int64_t r, int64_t n, uint64_t *out)
{
    FKM_ASSERT(k <= 0 || (x != NULL && (r <= 0 || w != NULL)));
    FKM_ASSERT(r <= 0 || n <= 0 || out != NULL);
    FKM_ASSERT_EACH(j, k, x[j] < F.p);
    if (k < 0 || r < 0 || n < 0)
        return FKM_EDOM;
    if (n == 0 || r == 0)
        return FKM_OK;
    uint64_t *pw = malloc((size_t)(2 * (k > 0 ? k : 1)) * sizeof *pw);
    if (!pw)
        return FKM_ENOMEM;
    uint64_t *xpre = pw + k;
    for (int64_t j = 0; j < k; j++) {
        pw[j] = 1 % F.p;
        xpre[j] = fkm_shoup_pre(x[j], F);
    }
    for (int64_t i = 0; i < n; i++) {
        for (int64_t t = 0; t < r; t++) {
            const uint64_t *wt = w + t * k;
            fkm_acc_t A = {0, 0};
            for (int64_t j = 0; j < k; j++)
                fkm_acc_addmul(&A, wt[j], pw[j]);
            out[t * n + i] = fkm_acc_reduce(&A, F);
        }
        for (int64_t j = 0; j < k; j++)
            pw[j] = fkm_mul_shoup(pw[j], x[j], xpre[j], F.p);
    }
    free(pw);
    return FKM_OK;
}

void fkm_scma_affine_rows(fkm_field_t F, const uint64_t *a, int64_t n, int64_t d,
                          const uint64_t *coef, uint64_t c0, uint64_t *out)
{
    FKM_ASSERT(n >= 0 && d >= 0 && (n == 0 || out != NULL));
    FKM_ASSERT(d == 0 || n == 0 || (a != NULL && coef != NULL));
    for (int64_t i = 0; i < n; i++) {
        fkm_acc_t A = {c0, 0};
        const uint64_t *ai = a + i * d;
        for (int64_t j = 0; j < d; j++)
            fkm_acc_addmul(&A, ai[j], coef[j]);
        out[i] = fkm_acc_reduce(&A, F);
    }
}
