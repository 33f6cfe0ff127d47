/* fkm_vdm.c -- subproduct tree, multipoint evaluation and the transposed
 * Vandermonde solve (see fkm_vdm.h).
 *
 * With F(y) = prod_j (y - x_j) and Q(z) = prod_j (1 - x_j z) = y^m F(1/y),
 * the generating function of s_i = sum_j c_j x_j^i is
 *     sum_i s_i z^i = sum_j c_j / (1 - x_j z),
 * so R = (S Q) mod z^m = sum_j c_j prod_{k != j} (1 - x_k z), and its
 * reversal Rt(y) = y^(m-1) R(1/y) = sum_j c_j prod_{k != j} (y - x_k) gives
 *     c_j = Rt(x_j) / F'(x_j).
 * One product and one multipoint evaluation per right-hand side; the tree,
 * Q and 1/F'(x_j) are shared.
 */
#include "fkm_vdm.h"

#include <stdlib.h>
#include <string.h>

/* nodes at most this big evaluate by Horner */
#define EVAL_LEAF 32

static int64_t node_count(int64_t m, int k)
{
    return (m + ((int64_t)1 << k) - 1) >> k;
}

/* number of points under node i of level k */
static int64_t node_points(int64_t m, int k, int64_t i)
{
    int64_t lo = i << k, hi = lo + ((int64_t)1 << k);
    return (hi < m ? hi : m) - lo;
}

void fkm_vdm_clear(fkm_vdm_t *V)
{
    FKM_ASSERT(V != NULL);
    if (V->tree)
        for (int k = 0; k < V->levels; k++)
            free(V->tree[k]);
    free(V->tree);
    free(V->node);
    free(V->rev_f);
    free(V->inv_df);
    memset(V, 0, sizeof *V);
}

static int build_tree(fkm_vdm_t *V, fkm_pctx_t *C)
{
    fkm_field_t F = C->F;
    int64_t m = V->m;
    int levels = 1;
    while (((int64_t)1 << (levels - 1)) < m)
        levels++;
    V->levels = levels;
    V->tree = calloc((size_t)levels, sizeof *V->tree);
    if (!V->tree)
        return FKM_ENOMEM;
    for (int k = 0; k < levels; k++) {
        int64_t nn = node_count(m, k), w = ((int64_t)1 << k) + 1;
        V->tree[k] = malloc((size_t)(nn * w) * sizeof(uint64_t));
        if (!V->tree[k])
            return FKM_ENOMEM;
    }
    for (int64_t j = 0; j < m; j++) {
        V->tree[0][2 * j] = fkm_negmod(V->node[j], F);
        V->tree[0][2 * j + 1] = 1;
    }
    for (int k = 1; k < levels; k++) {
        int64_t nn = node_count(m, k), w = ((int64_t)1 << k) + 1;
        int64_t wc = ((int64_t)1 << (k - 1)) + 1;
        for (int64_t i = 0; i < nn; i++) {
            uint64_t *out = V->tree[k] + i * w;
            const uint64_t *l = V->tree[k - 1] + (2 * i) * wc;
            int64_t nl = node_points(m, k - 1, 2 * i);
            if (2 * i + 1 < node_count(m, k - 1)) {
                const uint64_t *r = V->tree[k - 1] + (2 * i + 1) * wc;
                int64_t nr = node_points(m, k - 1, 2 * i + 1);
                int st = fkm_poly_mul(C, l, nl + 1, r, nr + 1, out);
                if (st)
                    return st;
            } else {
                memcpy(out, l, (size_t)(nl + 1) * sizeof *out);
            }
        }
    }
    return FKM_OK;
}

/* Evaluate r (length lr <= points + 1 ... any) at the points under node i of
 * level k, writing out[lo ..].  r is consumed (used as scratch). */
static int eval_down(const fkm_vdm_t *V, fkm_pctx_t *C, int k, int64_t i,
                     uint64_t *r, int64_t lr, uint64_t *out)
{
    fkm_field_t F = C->F;
    int64_t np = node_points(V->m, k, i), lo = i << k;
    if (np <= EVAL_LEAF || k == 0) {
        for (int64_t j = 0; j < np; j++)
            out[lo + j] = fkm_poly_eval(r, lr, V->node[lo + j], F);
        return FKM_OK;
    }
    int64_t wc = ((int64_t)1 << (k - 1)) + 1;
    int64_t nchild = node_count(V->m, k - 1);
    int st = FKM_OK;
    uint64_t *buf = malloc((size_t)(2 * np + 2) * sizeof *buf);
    if (!buf)
        return FKM_ENOMEM;
    for (int64_t c = 2 * i; c <= 2 * i + 1 && c < nchild; c++) {
        const uint64_t *g = V->tree[k - 1] + c * wc;
        int64_t ng = node_points(V->m, k - 1, c);
        uint64_t *rc = buf;
        int64_t lrc;
        if (lr > ng) {
            st = fkm_poly_divrem(C, r, lr, g, ng + 1, NULL, rc);
            lrc = ng;
        } else {
            memcpy(rc, r, (size_t)lr * sizeof *rc);
            lrc = lr;
        }
        if (!st)
            st = eval_down(V, C, k - 1, c, rc, lrc, out);
        if (st)
            break;
    }
    free(buf);
    return st;
}

int fkm_vdm_eval(const fkm_vdm_t *V, fkm_pctx_t *C, const uint64_t *a,
                 int64_t la, uint64_t *out)
{
    FKM_ASSERT(V != NULL && V->m >= 1 && V->tree != NULL && C != NULL && out != NULL);
    FKM_ASSERT(la >= 0 && (la == 0 || a != NULL));
    int64_t m = V->m;
    int top = V->levels - 1;
    int64_t w = ((int64_t)1 << top) + 1;
    (void)w;
    la = fkm_poly_normlen(a, la);
    uint64_t *r = malloc((size_t)(m + 1) * sizeof *r);
    if (!r)
        return FKM_ENOMEM;
    int64_t lr;
    int st = FKM_OK;
    if (la > m) {
        st = fkm_poly_divrem(C, a, la, V->tree[top], m + 1, NULL, r);
        lr = m;
    } else {
        memcpy(r, a, (size_t)la * sizeof *r);
        lr = la;
    }
    if (!st)
        st = eval_down(V, C, top, 0, r, lr, out);
    free(r);
    return st;
}

int fkm_vdm_init(fkm_vdm_t *V, fkm_pctx_t *C, const uint64_t *nodes,
                 int64_t m)
{
    FKM_ASSERT(V != NULL && C != NULL && (m < 1 || nodes != NULL));
    FKM_ASSERT_EACH(j, m, nodes[j] < C->F.p);
    fkm_field_t F = C->F;
    memset(V, 0, sizeof *V);
    if (m < 1)
        return FKM_EDOM;
    V->m = m;
    int st = fkm_pctx_reserve(C, 2 * m + 2);
    if (st)
        return st;
    V->node = malloc((size_t)m * sizeof *V->node);
    V->rev_f = malloc((size_t)(m + 1) * sizeof *V->rev_f);
    V->inv_df = malloc((size_t)m * sizeof *V->inv_df);
    uint64_t *df = malloc((size_t)(m > 1 ? m : 1) * sizeof *df);
    if (!V->node || !V->rev_f || !V->inv_df || !df) {
        free(df);
        fkm_vdm_clear(V);
        return FKM_ENOMEM;
    }
    memcpy(V->node, nodes, (size_t)m * sizeof *nodes);
    if ((st = build_tree(V, C)))
        goto fail;
    const uint64_t *f = V->tree[V->levels - 1];
    for (int64_t i = 0; i <= m; i++)
        V->rev_f[i] = f[m - i];
    /* F'(x_j), then batch inversion (a zero means a repeated node) */
    fkm_poly_derivative(f, m + 1, df, F);
    if ((st = fkm_vdm_eval(V, C, df, m, V->inv_df)))
        goto fail;
    uint64_t *pre = df; /* prefix products */
    uint64_t acc = 1;
    for (int64_t j = 0; j < m; j++) {
        if (V->inv_df[j] == 0) {
            st = FKM_EREPEATED;
            goto fail;
        }
        pre[j] = acc;
        acc = fkm_mulmod(acc, V->inv_df[j], F);
    }
    uint64_t inv = fkm_invmod(acc, F);
    for (int64_t j = m - 1; j >= 0; j--) {
        uint64_t v = V->inv_df[j];
        V->inv_df[j] = fkm_mulmod(inv, pre[j], F);
        inv = fkm_mulmod(inv, v, F);
    }
    free(df);
    return FKM_OK;
fail:
    free(df);
    fkm_vdm_clear(V);
    return st;
}

int fkm_vdm_solve(const fkm_vdm_t *V, fkm_pctx_t *C, const uint64_t *s,
                  uint64_t *c)
{
    FKM_ASSERT(V != NULL && V->m >= 1 && V->inv_df != NULL && C != NULL);
    FKM_ASSERT(s != NULL && c != NULL);
    int64_t m = V->m;
    uint64_t *r = malloc((size_t)(2 * m) * sizeof *r);
    if (!r)
        return FKM_ENOMEM;
    uint64_t *rt = r + m;
    int st = fkm_poly_mullow(C, s, m, V->rev_f, m + 1, m, r);
    if (!st) {
        for (int64_t i = 0; i < m; i++)
            rt[i] = r[m - 1 - i];
        st = fkm_vdm_eval(V, C, rt, m, c);
    }
    if (!st)
        for (int64_t j = 0; j < m; j++)
            c[j] = fkm_mulmod(c[j], V->inv_df[j], C->F);
    free(r);
    return st;
}

int fkm_poly_eval_multi(fkm_pctx_t *C, const uint64_t *a, int64_t la,
                        const uint64_t *x, int64_t n, uint64_t *out)
{
    FKM_ASSERT(C != NULL && la >= 0 && (la == 0 || a != NULL));
    FKM_ASSERT(n <= 0 || (x != NULL && out != NULL));
    if (n <= 0)
        return FKM_OK;
    if (n <= EVAL_LEAF || la <= EVAL_LEAF) {
        for (int64_t j = 0; j < n; j++)
            out[j] = fkm_poly_eval(a, la, x[j], C->F);
        return FKM_OK;
    }
    /* evaluate in blocks of up to la points, each with its own tree */
    int64_t block = la > n ? n : la;
    int st = FKM_OK;
    for (int64_t off = 0; off < n && !st; off += block) {
        int64_t b = n - off < block ? n - off : block;
        fkm_vdm_t V;
        memset(&V, 0, sizeof V);
        V.m = b;
        if ((st = fkm_pctx_reserve(C, 2 * b + 2)))
            break;
        V.node = malloc((size_t)b * sizeof *V.node);
        if (!V.node) {
            st = FKM_ENOMEM;
            break;
        }
        memcpy(V.node, x + off, (size_t)b * sizeof *x);
        st = build_tree(&V, C);
        if (!st)
            st = fkm_vdm_eval(&V, C, a, la, out + off);
        fkm_vdm_clear(&V);
    }
    return st;
}
