/* Type-generic body of fkm_lloyd.c; included once per input type with
 * FKM_REAL and FKM_SFX defined (by fkm_typed.h). */

#define FKM_CAT_(a, b) a##_##b
#define FKM_CAT(a, b) FKM_CAT_(a, b)
#define FKM_NAME(name) FKM_CAT(name, FKM_SFX)

/* fkm_lloyd_pack_points_{f64,f32} (see fkm_lloyd.h). */
void FKM_NAME(fkm_lloyd_pack_points)(double *P, const FKM_REAL *X, fkm_index_t lo,
                                     fkm_index_t hi, fkm_index_t d)
{
    FKM_ASSERT(0 <= lo && lo % 4 == 0 && d >= 1);
    FKM_ASSERT(hi - lo < 4 || (P != NULL && X != NULL));
    for (fkm_index_t i = lo; i + 4 <= hi; i += 4)
        for (fkm_index_t j = 0; j < d; ++j)
            for (fkm_index_t l = 0; l < 4; ++l)
                P[i * d + 4 * j + l] = (double)X[(i + l) * d + j];
}

/* Nearest center of the 4 rows r0..r3 (each d values, converted to double on
 * load) by the score 0.5||c||^2 - <x, c>: best[r] gets the index. */
static inline __attribute__((always_inline)) void FKM_NAME(tile4)(
    fkm_index_t *best, const FKM_REAL *r0, const FKM_REAL *r1,
    const FKM_REAL *r2, const FKM_REAL *r3, fkm_index_t d,
    const double *restrict ct, const double *restrict hnorm, fkm_index_t k,
    fkm_v4d *restrict accbuf)
{
    const fkm_index_t np = (k + FKM_LLOYD_PANEL - 1) / FKM_LLOYD_PANEL;
    const fkm_v4d inf = {HUGE_VAL, HUGE_VAL, HUGE_VAL, HUGE_VAL};
    const fkm_v4d zero = {0, 0, 0, 0};
    for (fkm_index_t t = 0; t < 8 * np; ++t)
        accbuf[t] = zero;
    /* Coordinates in blocks of FKM_LLOYD_JBLOCK: the 4 rows' block and the
     * panels' block stay in L1 while every panel is processed. */
    for (fkm_index_t jb = 0; jb < d; jb += FKM_LLOYD_JBLOCK) {
        const fkm_index_t je = jb + FKM_LLOYD_JBLOCK < d ? jb + FKM_LLOYD_JBLOCK : d;
        for (fkm_index_t p = 0; p < np; ++p) {
            const double *pc = ct + p * d * FKM_LLOYD_PANEL;
            fkm_v4d *acc = accbuf + 8 * p;
            fkm_v4d a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
            fkm_v4d a20 = acc[4], a21 = acc[5], a30 = acc[6], a31 = acc[7];
            const fkm_index_t rest = k - p * FKM_LLOYD_PANEL; /* centers left */
            /* deliberate specialization: the 12-, 8- and 4-lane sweeps
             * below are register tiles for the centers left in this
             * panel; a generic width would spill registers or run idle
             * lanes in the hottest loop of Lloyd. */
            if (rest > 8 && rest <= 12) {
                /* A full panel and a last half panel together: 12 lanes in
                 * one sweep over the rows (12 independent FMA chains). */
                const double *pq = pc + d * FKM_LLOYD_PANEL;
                fkm_v4d *accq = acc + 8;
                fkm_v4d b00 = accq[0], b10 = accq[2], b20 = accq[4], b30 = accq[6];
                for (fkm_index_t j = jb; j < je; ++j) {
                    fkm_v4d c0 = LOAD4(pc + j * FKM_LLOYD_PANEL);
                    fkm_v4d c1 = LOAD4(pc + j * FKM_LLOYD_PANEL + 4);
                    fkm_v4d c2 = LOAD4(pq + j * FKM_LLOYD_PANEL);
                    double x0 = (double)r0[j], x1 = (double)r1[j];
                    double x2 = (double)r2[j], x3 = (double)r3[j];
                    a00 += x0 * c0;
                    a01 += x0 * c1;
                    b00 += x0 * c2;
                    a10 += x1 * c0;
                    a11 += x1 * c1;
                    b10 += x1 * c2;
                    a20 += x2 * c0;
                    a21 += x2 * c1;
                    b20 += x2 * c2;
                    a30 += x3 * c0;
                    a31 += x3 * c1;
                    b30 += x3 * c2;
                }
                accq[0] = b00, accq[2] = b10, accq[4] = b20, accq[6] = b30;
                acc[0] = a00, acc[1] = a01, acc[2] = a10, acc[3] = a11;
                acc[4] = a20, acc[5] = a21, acc[6] = a30, acc[7] = a31;
                ++p; /* the half panel is done */
                continue;
            }
            if (rest > 4) {
                /* deliberate specialization: the 8-lane tile (see above) */
                for (fkm_index_t j = jb; j < je; ++j) {
                    fkm_v4d c0 = LOAD4(pc + j * FKM_LLOYD_PANEL);
                    fkm_v4d c1 = LOAD4(pc + j * FKM_LLOYD_PANEL + 4);
                    double x0 = (double)r0[j], x1 = (double)r1[j];
                    double x2 = (double)r2[j], x3 = (double)r3[j];
                    a00 += x0 * c0;
                    a01 += x0 * c1;
                    a10 += x1 * c0;
                    a11 += x1 * c1;
                    a20 += x2 * c0;
                    a21 += x2 * c1;
                    a30 += x3 * c0;
                    a31 += x3 * c1;
                }
            } else {
                /* A last panel with at most 4 real centers: half the work
                 * (its upper lanes score +inf through hnorm). */
                for (fkm_index_t j = jb; j < je; ++j) {
                    fkm_v4d c0 = LOAD4(pc + j * FKM_LLOYD_PANEL);
                    a00 += (double)r0[j] * c0;
                    a10 += (double)r1[j] * c0;
                    a20 += (double)r2[j] * c0;
                    a30 += (double)r3[j] * c0;
                }
            }
            acc[0] = a00, acc[1] = a01, acc[2] = a10, acc[3] = a11;
            acc[4] = a20, acc[5] = a21, acc[6] = a30, acc[7] = a31;
        }
    }
    /* Per row and lane: best score so far and its panel (branch-free). */
    fkm_v4d bv[8] = {inf, inf, inf, inf, inf, inf, inf, inf};
    fkm_v4i bp[8] = {{0}};
    for (fkm_index_t p = 0; p < np; ++p) {
        const fkm_v4d *acc = accbuf + 8 * p;
        const double *hn = hnorm + p * FKM_LLOYD_PANEL;
        const fkm_v4d h0 = LOAD4(hn), h1 = LOAD4(hn + 4);
        const fkm_v4d s[8] = {h0 - acc[0], h1 - acc[1], h0 - acc[2], h1 - acc[3],
                              h0 - acc[4], h1 - acc[5], h0 - acc[6], h1 - acc[7]};
        const fkm_v4i pv = {p, p, p, p};
        for (int t = 0; t < 8; ++t) {
            fkm_v4i lt = s[t] < bv[t]; /* strict: earlier panel wins ties */
            bv[t] = (fkm_v4d)(((fkm_v4i)s[t] & lt) | ((fkm_v4i)bv[t] & ~lt));
            bp[t] = (pv & lt) | (bp[t] & ~lt);
        }
    }
    for (int r = 0; r < 4; ++r) {
        double b = bv[2 * r][0];
        fkm_index_t bi = bp[2 * r][0] * FKM_LLOYD_PANEL;
        for (int l = 1; l < FKM_LLOYD_PANEL; ++l) {
            double v = bv[2 * r + l / 4][l % 4];
            fkm_index_t id = bp[2 * r + l / 4][l % 4] * FKM_LLOYD_PANEL + l;
            int take = (v < b) | ((v == b) & (id < bi));
            b = take ? v : b;
            bi = take ? id : bi;
        }
        best[r] = bi < k ? bi : k - 1;
    }
}

/* Nearest center for 4 points of a packed panel (coordinate-major: pp[4j + l]
 * is coordinate j of point l): vectorized over the points, so the argmin over
 * centers is vertical.  Scores are the same 0.5||c||^2 - <x, c>.
 * deliberate specialization: panel4 and panel8 are register tiles of two
 * widths (4 and 8 accumulator vectors); one generic width would spill or
 * leave FMA ports idle in the hottest loop of Lloyd. */
static inline __attribute__((always_inline)) void FKM_NAME(panel4)(
    fkm_index_t *best, const double *restrict pp, fkm_index_t d,
    const double *restrict ct, const double *restrict hnorm, fkm_index_t k)
{
    fkm_v4d bv = {HUGE_VAL, HUGE_VAL, HUGE_VAL, HUGE_VAL};
    fkm_v4i bi = {0, 0, 0, 0};
    fkm_index_t c = 0;
    /* Four centers at a time: four independent FMA chains hide latency.  A
     * last group of fewer than 4 uses the padding lanes of the packed
     * centers (score +inf through hnorm, never chosen). */
    for (; c < k; c += 4) {
        /* Centers c..c+3 are lanes l..l+3 of one packed panel. */
        const double *pc = ct + (c / FKM_LLOYD_PANEL) * d * FKM_LLOYD_PANEL +
                           c % FKM_LLOYD_PANEL;
        fkm_v4d a0 = {0, 0, 0, 0}, a1 = {0, 0, 0, 0};
        fkm_v4d a2 = {0, 0, 0, 0}, a3 = {0, 0, 0, 0};
        for (fkm_index_t j = 0; j < d; ++j) {
            const fkm_v4d x = LOAD4(pp + 4 * j);
            const double *cj = pc + j * FKM_LLOYD_PANEL;
            a0 += x * cj[0];
            a1 += x * cj[1];
            a2 += x * cj[2];
            a3 += x * cj[3];
        }
        const fkm_v4d sc[4] = {hnorm[c] - a0, hnorm[c + 1] - a1,
                               hnorm[c + 2] - a2, hnorm[c + 3] - a3};
        for (int t = 0; t < 4; ++t) {
            fkm_v4i lt = sc[t] < bv; /* strict: lowest index wins ties */
            bv = (fkm_v4d)(((fkm_v4i)sc[t] & lt) | ((fkm_v4i)bv & ~lt));
            const fkm_v4i cv = {c + t, c + t, c + t, c + t};
            bi = (cv & lt) | (bi & ~lt);
        }
    }
    for (int r = 0; r < 4; ++r)
        best[r] = bi[r];
}

/* Accumulate point x (coordinates x[j * stride]) into cluster c; with mind,
 * also its exact squared distance to center c.  Returns that distance (0
 * without mind). */
static inline __attribute__((always_inline)) double FKM_NAME(accumulate)(
    double *restrict sums, double *restrict wsums, const double *restrict x,
    fkm_index_t stride, fkm_index_t d, fkm_index_t c, double wi, int weighted,
    const double *restrict centers, int want_dist)
{
    double *sc = sums + c * d;
    if (weighted) {
        for (fkm_index_t j = 0; j < d; ++j)
            sc[j] += wi * x[j * stride];
    } else {
        for (fkm_index_t j = 0; j < d; ++j)
            sc[j] += x[j * stride];
    }
    wsums[c] += wi;
    double dd = 0.0;
    if (want_dist) {
        const double *cc = centers + c * d;
        for (fkm_index_t j = 0; j < d; ++j) {
            double t = x[j * stride] - cc[j];
            dd += t * t;
        }
    }
    return dd;
}

/* Scores of the W centers c..c+W-1 for the 8 points of two 4-point panels
 * pa, pb (each broadcast center coordinate feeds two FMAs: 2 W independent
 * chains), merged into the running argmin (bva, bia for pa; bvb, bib for
 * pb).  Per point and center the score is hnorm[c] - <x, c'>, the inner
 * product one fused multiply-add chain in coordinate order from 0, as in
 * panel4 and tile4; strict < in increasing center order keeps the lowest
 * index on ties.  Centers at or above k must be padding lanes of ct.
 * deliberate specialization: W (4, 5 or 6) is a constant at every call, so
 * the accumulators stay in registers (12 of them at W = 6). */
static inline __attribute__((always_inline)) void FKM_NAME(chunk8)(
    fkm_v4d *bva, fkm_v4i *bia, fkm_v4d *bvb, fkm_v4i *bib,
    const double *restrict pa, const double *restrict pb, fkm_index_t d,
    const double *restrict ct, const double *restrict hnorm, fkm_index_t c, int W)
{
    const double *pc[6];
    fkm_v4d a[6], b[6];
    for (int t = 0; t < W; ++t) {
        pc[t] = ct + ((c + t) / FKM_LLOYD_PANEL) * d * FKM_LLOYD_PANEL +
                (c + t) % FKM_LLOYD_PANEL;
        a[t] = (fkm_v4d){0, 0, 0, 0};
        b[t] = a[t];
    }
    for (fkm_index_t j = 0; j < d; ++j) {
        const fkm_v4d xa = LOAD4(pa + 4 * j), xb = LOAD4(pb + 4 * j);
        for (int t = 0; t < W; ++t) {
            const double cv = pc[t][j * FKM_LLOYD_PANEL];
            a[t] += xa * cv;
            b[t] += xb * cv;
        }
    }
    for (int t = 0; t < W; ++t) {
        const fkm_v4d sa = hnorm[c + t] - a[t], sb = hnorm[c + t] - b[t];
        const fkm_v4i cv = {c + t, c + t, c + t, c + t};
        fkm_v4i lt = sa < *bva;
        *bva = (fkm_v4d)(((fkm_v4i)sa & lt) | ((fkm_v4i)*bva & ~lt));
        *bia = (cv & lt) | (*bia & ~lt);
        lt = sb < *bvb;
        *bvb = (fkm_v4d)(((fkm_v4i)sb & lt) | ((fkm_v4i)*bvb & ~lt));
        *bib = (cv & lt) | (*bib & ~lt);
    }
}

/* panel4 for two consecutive panels (8 points): each broadcast center
 * coordinate feeds two FMAs.  Same scores and tie rule as panel4.
 * deliberate specialization: the 8-wide register tile of panel4 (see there). */
static inline __attribute__((always_inline)) void FKM_NAME(panel8)(
    fkm_index_t *best, const double *restrict pa, const double *restrict pb,
    fkm_index_t d, const double *restrict ct, const double *restrict hnorm,
    fkm_index_t k)
{
    fkm_v4d bva = {HUGE_VAL, HUGE_VAL, HUGE_VAL, HUGE_VAL}, bvb = bva;
    fkm_v4i bia = {0, 0, 0, 0}, bib = bia;
    for (fkm_index_t c = 0; c < k; c += 4) {
        const double *pc = ct + (c / FKM_LLOYD_PANEL) * d * FKM_LLOYD_PANEL +
                           c % FKM_LLOYD_PANEL;
        fkm_v4d a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
        fkm_v4d b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        for (fkm_index_t j = 0; j < d; ++j) {
            const fkm_v4d xa = LOAD4(pa + 4 * j), xb = LOAD4(pb + 4 * j);
            const double *cj = pc + j * FKM_LLOYD_PANEL;
            const double c0 = cj[0], c1 = cj[1], c2 = cj[2], c3 = cj[3];
            a0 += xa * c0;
            b0 += xb * c0;
            a1 += xa * c1;
            b1 += xb * c1;
            a2 += xa * c2;
            b2 += xb * c2;
            a3 += xa * c3;
            b3 += xb * c3;
        }
        const fkm_v4d sa[4] = {hnorm[c] - a0, hnorm[c + 1] - a1,
                               hnorm[c + 2] - a2, hnorm[c + 3] - a3};
        const fkm_v4d sb[4] = {hnorm[c] - b0, hnorm[c + 1] - b1,
                               hnorm[c + 2] - b2, hnorm[c + 3] - b3};
        for (int t = 0; t < 4; ++t) {
            const fkm_v4i cv = {c + t, c + t, c + t, c + t};
            fkm_v4i lt = sa[t] < bva;
            bva = (fkm_v4d)(((fkm_v4i)sa[t] & lt) | ((fkm_v4i)bva & ~lt));
            bia = (cv & lt) | (bia & ~lt);
            lt = sb[t] < bvb;
            bvb = (fkm_v4d)(((fkm_v4i)sb[t] & lt) | ((fkm_v4i)bvb & ~lt));
            bib = (cv & lt) | (bib & ~lt);
        }
    }
    for (int r = 0; r < 4; ++r) {
        best[r] = bia[r];
        best[4 + r] = bib[r];
    }
}

/* panel8 by chunks of centers (chunk8), for the 8 rows of score_rows8.
 * Same scores and tie rule as panel4 and panel8.  For k >= 8 the chunks
 * cover the k centers exactly (fkm_lloyd_chunk_w); below, chunks of 4 with
 * the padding lanes of the packed centers (score +inf, never chosen).
 * deliberate specialization: panel8 keeps chunks of 4 with padding lanes on
 * the packed path, where it was measured faster (d <= 16, k = 62 and 256). */
static inline __attribute__((always_inline)) void FKM_NAME(panel8x)(
    fkm_index_t *best, const double *restrict pa, const double *restrict pb,
    fkm_index_t d, const double *restrict ct, const double *restrict hnorm,
    fkm_index_t k)
{
    fkm_v4d bva = {HUGE_VAL, HUGE_VAL, HUGE_VAL, HUGE_VAL}, bvb = bva;
    fkm_v4i bia = {0, 0, 0, 0}, bib = bia;
    if (k < 8) {
        for (fkm_index_t c = 0; c < k; c += 4)
            FKM_NAME(chunk8)(&bva, &bia, &bvb, &bib, pa, pb, d, ct, hnorm, c, 4);
    } else {
        for (fkm_index_t c = 0; c < k;) {
            const int W = fkm_lloyd_chunk_w(k - c);
            if (W == 4)
                FKM_NAME(chunk8)(&bva, &bia, &bvb, &bib, pa, pb, d, ct, hnorm, c, 4);
            else if (W == 5)
                FKM_NAME(chunk8)(&bva, &bia, &bvb, &bib, pa, pb, d, ct, hnorm, c, 5);
            else
                FKM_NAME(chunk8)(&bva, &bia, &bvb, &bib, pa, pb, d, ct, hnorm, c, 6);
            c += W;
        }
    }
    for (int r = 0; r < 4; ++r) {
        best[r] = bia[r];
        best[4 + r] = bib[r];
    }
}

/* Accumulation (and labels, distances) of the 4 packed points starting at
 * point i, whose nearest centers are best[0..4). */
static inline __attribute__((always_inline)) void FKM_NAME(accum_packed)(
    int32_t *labels, fkm_index_t *nchg, double *mind, double *sums,
    double *wsums, double *inert, const double *restrict pp, const double *w,
    fkm_index_t i, fkm_index_t d, const fkm_index_t *best,
    const double *centers)
{
#if FKM_HAVE_SHUFFLE
    if (!mind) {
        /* Transpose 4 x 4 blocks of the panel so that each point's 4
         * coordinates form one vector added to its cluster's sums; every
         * sum still receives the points in order r = 0..3. */
        double *s0 = sums + best[0] * d, *s1 = sums + best[1] * d;
        double *s2 = sums + best[2] * d, *s3 = sums + best[3] * d;
        double wr[4];
        for (int r = 0; r < 4; ++r) {
            const double wi = w ? w[i + r] : 1.0;
            wr[r] = wi;
            wsums[best[r]] += wi;
            *nchg += labels[i + r] != (int32_t)best[r];
        labels[i + r] = (int32_t)best[r];
        }
        fkm_index_t j = 0;
        for (; j + 4 <= d; j += 4) {
            const fkm_v4d a = LOAD4(pp + 4 * j), b = LOAD4(pp + 4 * j + 4);
            const fkm_v4d c = LOAD4(pp + 4 * j + 8), e = LOAD4(pp + 4 * j + 12);
            const fkm_v4d t0 = __builtin_shufflevector(a, b, 0, 4, 2, 6);
            const fkm_v4d t1 = __builtin_shufflevector(a, b, 1, 5, 3, 7);
            const fkm_v4d t2 = __builtin_shufflevector(c, e, 0, 4, 2, 6);
            const fkm_v4d t3 = __builtin_shufflevector(c, e, 1, 5, 3, 7);
            fkm_v4d x0 = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
            fkm_v4d x1 = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
            fkm_v4d x2 = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
            fkm_v4d x3 = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
            if (w) {
                x0 *= wr[0], x1 *= wr[1], x2 *= wr[2], x3 *= wr[3];
            }
            STORE4(s0 + j, LOAD4(s0 + j) + x0);
            STORE4(s1 + j, LOAD4(s1 + j) + x1);
            STORE4(s2 + j, LOAD4(s2 + j) + x2);
            STORE4(s3 + j, LOAD4(s3 + j) + x3);
        }
        for (; j < d; ++j) {
            for (int r = 0; r < 4; ++r)
                sums[best[r] * d + j] += wr[r] * pp[4 * j + r];
        }
        return;
    }
#endif
    for (int r = 0; r < 4; ++r) {
        const double wi = w ? w[i + r] : 1.0;
        double dd = FKM_NAME(accumulate)(sums, wsums, pp + r, 4, d, best[r], wi,
                                         w != NULL, centers, mind != NULL);
        *nchg += labels[i + r] != (int32_t)best[r];
        labels[i + r] = (int32_t)best[r];
        if (mind) {
            mind[i + r] = dd;
            *inert += wi * dd;
        }
    }
}

/* Rows i.. (at most 4, up to hi) of X into rows[4]; a tail of fewer than 4
 * repeats the last row of X (*pad, allocated once; extra results are
 * ignored).  Returns FKM_OK or FKM_ENOMEM. */
static inline int FKM_NAME(row_group)(const FKM_REAL **rows, FKM_REAL **pad,
                                      const FKM_REAL *X, fkm_index_t i, fkm_index_t hi,
                                      fkm_index_t d)
{
    const fkm_index_t m = hi - i < 4 ? hi - i : 4;
    if (m < 4 && !*pad) {
        *pad = malloc((size_t)(d > 0 ? d : 1) * sizeof(FKM_REAL));
        if (!*pad)
            return FKM_ENOMEM;
        memcpy(*pad, X + (hi - 1) * d, (size_t)d * sizeof(FKM_REAL));
    }
    for (int r = 0; r < 4; ++r)
        rows[r] = r < m ? X + (i + r) * d : *pad;
    return FKM_OK;
}

/* Whether any of need[0..m) is nonzero. */
static inline __attribute__((always_inline)) int FKM_NAME(any_need)(
    const unsigned char *need, int m)
{
    int any = 0;
    for (int r = 0; r < m; ++r)
        any |= need[r];
    return any;
}

/* The 4 rows r[0..3] (d values each, converted to double) as one panel of
 * 4 points, coordinate major: T[4 j + l] = r[l][j] (the layout of
 * fkm_lloyd_pack_points). */
static inline __attribute__((always_inline)) void FKM_NAME(pack_rows4)(
    double *restrict T, const FKM_REAL *const *r, fkm_index_t d)
{
    fkm_index_t j = 0;
#if FKM_HAVE_SHUFFLE
    if (sizeof(FKM_REAL) == sizeof(double)) {
        /* 4 x 4 blocks transposed in registers */
        const double *r0 = (const double *)r[0], *r1 = (const double *)r[1];
        const double *r2 = (const double *)r[2], *r3 = (const double *)r[3];
        for (; j + 4 <= d; j += 4) {
            const fkm_v4d a = LOAD4(r0 + j), b = LOAD4(r1 + j);
            const fkm_v4d c = LOAD4(r2 + j), e = LOAD4(r3 + j);
            const fkm_v4d t0 = __builtin_shufflevector(a, b, 0, 4, 2, 6);
            const fkm_v4d t1 = __builtin_shufflevector(a, b, 1, 5, 3, 7);
            const fkm_v4d t2 = __builtin_shufflevector(c, e, 0, 4, 2, 6);
            const fkm_v4d t3 = __builtin_shufflevector(c, e, 1, 5, 3, 7);
            STORE4(T + 4 * j, __builtin_shufflevector(t0, t2, 0, 1, 4, 5));
            STORE4(T + 4 * j + 4, __builtin_shufflevector(t1, t3, 0, 1, 4, 5));
            STORE4(T + 4 * j + 8, __builtin_shufflevector(t0, t2, 2, 3, 6, 7));
            STORE4(T + 4 * j + 12, __builtin_shufflevector(t1, t3, 2, 3, 6, 7));
        }
    }
#endif
    for (; j < d; ++j)
        for (int l = 0; l < 4; ++l)
            T[4 * j + l] = (double)r[l][j];
}

/* Labels best[0..8) of the 8 rows r[0..8) (points i..i+7): both halves
 * scored at once through the panels T (8 d doubles of scratch) and panel8x,
 * the same scores and labels as tile4 on each half; with need, a half of 4
 * with no flagged point keeps its labels, and a group with one flagged half
 * scores that half alone (tile4), so the groups of the mask stay the rows'
 * fours. */
static inline __attribute__((always_inline)) void FKM_NAME(score_rows8)(
    fkm_index_t *best, const FKM_REAL *const *r, double *restrict T,
    const int32_t *labels, fkm_index_t i, fkm_index_t d, const double *ct,
    const double *hnorm, fkm_index_t k, fkm_v4d *accbuf, const unsigned char *need,
    const char *pf, size_t pq)
{
    const int fa = !need || FKM_NAME(any_need)(need + i, 4);
    const int fb = !need || FKM_NAME(any_need)(need + i + 4, 4);
    if (fa && fb) {
        /* the prefetches of a later group spread over the work (pf NULL: none) */
        if (pf)
            fkm_lloyd_prefetch_l2(pf, pq);
        FKM_NAME(pack_rows4)(T, r, d);
        if (pf)
            fkm_lloyd_prefetch_l2(pf + pq, pq);
        FKM_NAME(pack_rows4)(T + 4 * d, r + 4, d);
        FKM_NAME(panel8x)(best, T, T + 4 * d, d, ct, hnorm, k);
        if (pf)
            fkm_lloyd_prefetch_l2(pf + 2 * pq, pq);
        return;
    }
    for (int h = 0; h < 8; h += 4) {
        if (h == 0 ? fa : fb) {
            FKM_NAME(tile4)(best + h, r[h], r[h + 1], r[h + 2], r[h + 3], d, ct, hnorm, k,
                            accbuf);
        } else {
            for (int t = 0; t < 4; ++t)
                best[h + t] = labels[i + h + t];
        }
    }
}

/* Accumulation of the m <= 4 rows r[0..m) (points i..), labels best[0..m):
 * sums, weights, labels and changes; with mind, their distances (rule of
 * fkm_lloyd_acc.h, fkm_lloyd_rowdist4) and inertia.  *xr: a row converted
 * to double (float32 input; allocated on first use).  Returns FKM_OK or
 * FKM_ENOMEM (nothing accumulated). */
static inline __attribute__((always_inline)) int FKM_NAME(accum_rows)(
    int32_t *labels, fkm_index_t *nchg, double *mind, double *sums, double *wsums,
    double *inert, const FKM_REAL *const *rows, fkm_index_t m, const fkm_index_t *best,
    const double *w, fkm_index_t i, fkm_index_t d, const double *centers, double **xr)
{
    if (sizeof(FKM_REAL) != sizeof(double) && !*xr) {
        *xr = malloc((size_t)(d > 0 ? d : 1) * sizeof(double));
        if (!*xr)
            return FKM_ENOMEM;
    }
    double dd4[4] = {0.0, 0.0, 0.0, 0.0};
    if (mind) {
        /* the rows' distances, four chains at once (fkm_lloyd_acc.h) */
        const double *cs[4];
        for (int r = 0; r < 4; ++r)
            cs[r] = centers + best[r < m ? r : 0] * d;
        FKM_NAME(fkm_lloyd_rowdist4)(dd4, rows, cs, (int)m, d);
    }
    for (fkm_index_t r = 0; r < m; ++r) {
        const double *x;
        if (sizeof(FKM_REAL) == sizeof(double)) {
            x = (const double *)rows[r];
        } else {
            for (fkm_index_t j = 0; j < d; ++j)
                (*xr)[j] = (double)rows[r][j];
            x = *xr;
        }
        const double wi = w ? w[i + r] : 1.0;
        (void)FKM_NAME(accumulate)(sums, wsums, x, 1, d, best[r], wi, w != NULL,
                                   centers, 0);
        *nchg += labels[i + r] != (int32_t)best[r];
        labels[i + r] = (int32_t)best[r];
        if (mind) {
            const double dd = dd4[r];
            mind[i + r] = dd;
            *inert += wi * dd;
        }
    }
    return FKM_OK;
}

/* Scores and accumulation for the 4 packed points starting at point i; with
 * need, a group none of whose points is flagged keeps its labels (no scores).
 * deliberate specialization: group_packed and group_packed8 drive the 4- and
 * 8-wide tiles (panel4, panel8), each inlined whole into the hot loop. */
static inline __attribute__((always_inline)) void FKM_NAME(group_packed)(
    int32_t *labels, fkm_index_t *nchg, double *mind, double *sums,
    double *wsums, double *inert, const double *restrict pp, const double *w,
    fkm_index_t i, fkm_index_t d, const double *ct, const double *hnorm,
    const double *centers, fkm_index_t k,
    const unsigned char *need)
{
    fkm_index_t best[4];
    if (!need || FKM_NAME(any_need)(need + i, 4)) {
        FKM_NAME(panel4)(best, pp, d, ct, hnorm, k);
    } else {
        for (int r = 0; r < 4; ++r)
            best[r] = labels[i + r];
    }
    FKM_NAME(accum_packed)(labels, nchg, mind, sums, wsums, inert, pp, w, i, d,
                           best, centers);
}

/* The same for the 8 packed points starting at point i (two panels).
 * deliberate specialization: the 8-wide twin of group_packed (see there). */
static inline __attribute__((always_inline)) void FKM_NAME(group_packed8)(
    int32_t *labels, fkm_index_t *nchg, double *mind, double *sums,
    double *wsums, double *inert, const double *restrict pp, const double *w,
    fkm_index_t i, fkm_index_t d, const double *ct, const double *hnorm,
    const double *centers, fkm_index_t k,
    const unsigned char *need)
{
    fkm_index_t best[8];
    if (!need || FKM_NAME(any_need)(need + i, 8)) {
        FKM_NAME(panel8)(best, pp, pp + 4 * d, d, ct, hnorm, k);
    } else {
        for (int r = 0; r < 8; ++r)
            best[r] = labels[i + r];
    }
    FKM_NAME(accum_packed)(labels, nchg, mind, sums, wsums, inert, pp, w, i, d,
                           best, centers);
    FKM_NAME(accum_packed)(labels, nchg, mind, sums, wsums, inert, pp + 4 * d,
                           w, i + 4, d, best + 4, centers);
}

FKM_HOT int FKM_NAME(fkm_lloyd_assign_masked)(
    int32_t *labels, fkm_index_t *n_changed, double *mind, double *sums,
    double *wsums, double *inertia, const FKM_REAL *X, const double *P,
    const double *w,
    fkm_index_t lo, fkm_index_t hi, fkm_index_t d, const double *ct,
    const double *hnorm, const double *centers, fkm_index_t k,
    const unsigned char *need)
{
    FKM_ASSERT(0 <= lo && lo <= hi && d >= 1 && k >= 1 && k <= INT32_MAX);
    FKM_ASSERT(labels != NULL && n_changed != NULL && sums != NULL && wsums != NULL);
    FKM_ASSERT(inertia != NULL && ct != NULL && hnorm != NULL && centers != NULL);
    FKM_ASSERT(lo == hi || X != NULL);
    /* unflagged points keep their labels: valid ones (fkm_lloyd.h) */
    FKM_ASSERT_EACH(t, need ? hi - lo : 0,
                    need[lo + t] || (labels[lo + t] >= 0 && labels[lo + t] < k));
    const fkm_index_t n4 = P ? hi - hi % 4 : lo;
    if (P && lo % 4 != 0)
        return FKM_EDOM;
    memset(sums, 0, (size_t)(k * d) * sizeof(double));
    memset(wsums, 0, (size_t)k * sizeof(double));
    double inert = 0.0;
    fkm_index_t nchg = 0;
    FKM_REAL *pad = NULL;
    fkm_index_t i = lo;
    if (P) {
        /* Whole packed panels: scores and sums read the panel only.
         * deliberate specialization: groups of 8, then of 4, each with its
         * own tile (group_packed8, group_packed) and a constant d. */
        for (; i + 8 <= n4; i += 8) {
            if (!need && i + 8 * (FKM_LLOYD_PREFETCH + 1) <= n4)
                fkm_lloyd_prefetch(P + (i + 8 * FKM_LLOYD_PREFETCH) * d,
                                   (size_t)(8 * d) * sizeof(double));
#define FKM_PCASE(D)                                                          \
    FKM_NAME(group_packed8)(labels, &nchg, mind, sums, wsums, &inert,         \
                            P + i * (D), w, i, D, ct, hnorm, centers, k, need)
            FKM_WITH_CONST_D(d, FKM_PCASE)
#undef FKM_PCASE
        }
        for (; i + 4 <= n4; i += 4) {
#define FKM_PCASE(D)                                                          \
    FKM_NAME(group_packed)(labels, &nchg, mind, sums, wsums, &inert,          \
                           P + i * (D), w, i, D, ct, hnorm, centers, k, need)
            FKM_WITH_CONST_D(d, FKM_PCASE)
#undef FKM_PCASE
        }
    }
    double *xr = NULL; /* one row converted to double */
    fkm_v4d *accbuf = NULL;
    double *T = NULL; /* two panels of 4 rows (score_rows8) */
    if (i < hi) {
        accbuf = malloc((size_t)(8 * ((k + FKM_LLOYD_PANEL - 1) / FKM_LLOYD_PANEL)) *
                        sizeof(fkm_v4d));
        if (hi - i >= 8 && d <= FKM_LLOYD_ROWS8_MAX_D)
            T = malloc((size_t)(8 * d) * sizeof(double));
        if (!accbuf || (hi - i >= 8 && d <= FKM_LLOYD_ROWS8_MAX_D && !T)) {
            free(T);
            free(accbuf);
            free(pad);
            return FKM_ENOMEM;
        }
    }
    while (i < hi) {
        const FKM_REAL *rows[8];
        fkm_index_t best[8];
        fkm_index_t g; /* rows in this group */
        int status = FKM_OK;
        if (T && i + 8 <= hi) {
            /* Groups of 8 rows scored through panels (exact center chunks,
             * vertical argmin), accumulated in halves of 4 as below. */
            g = 8;
            for (int r = 0; r < 8; ++r)
                rows[r] = X + (i + r) * d;
            /* The group FKM_LLOYD_PREFETCH ahead, into L2 in quarters
             * spread over this group's work: one burst of 50 prefetches at
             * d = 50 stalled on the miss buffers (a quarter to a third of
             * the time in perf at (1e5, 50, 10)). */
            const char *pf = NULL;
            const size_t pq = (size_t)(2 * d) * sizeof(FKM_REAL);
            if (!need && i + 8 * (FKM_LLOYD_PREFETCH + 1) <= hi)
                pf = (const char *)(X + (i + 8 * FKM_LLOYD_PREFETCH) * d);
            FKM_NAME(score_rows8)(best, rows, T, labels, i, d, ct, hnorm, k, accbuf, need,
                                  pf, pq);
            status = FKM_NAME(accum_rows)(labels, &nchg, mind, sums, wsums, &inert, rows, 4,
                                          best, w, i, d, centers, &xr);
            if (pf)
                fkm_lloyd_prefetch_l2(pf + 3 * pq, pq);
            if (status == FKM_OK)
                status = FKM_NAME(accum_rows)(labels, &nchg, mind, sums, wsums, &inert,
                                              rows + 4, 4, best + 4, w, i + 4, d, centers,
                                              &xr);
        } else {
            g = hi - i < 4 ? hi - i : 4;
            status = FKM_NAME(row_group)(rows, &pad, X, i, hi, d);
            if (status == FKM_OK) {
                if (!need && d <= FKM_LLOYD_JBLOCK && i + 4 * (FKM_LLOYD_PREFETCH + 1) <= hi)
                    fkm_lloyd_prefetch(X + (i + 4 * FKM_LLOYD_PREFETCH) * d,
                                       (size_t)(4 * d) * sizeof(FKM_REAL));
                if (!need || FKM_NAME(any_need)(need + i, (int)g)) {
                    FKM_NAME(tile4)(best, rows[0], rows[1], rows[2], rows[3], d, ct, hnorm,
                                    k, accbuf);
                } else {
                    for (fkm_index_t r = 0; r < g; ++r)
                        best[r] = labels[i + r];
                }
                status = FKM_NAME(accum_rows)(labels, &nchg, mind, sums, wsums, &inert, rows,
                                              g, best, w, i, d, centers, &xr);
            }
        }
        if (status != FKM_OK) {
            free(T);
            free(xr);
            free(accbuf);
            free(pad);
            return status;
        }
        i += g;
    }
    free(T);
    free(xr);
    free(accbuf);
    free(pad);
    *inertia = inert;
    *n_changed = nchg;
    return FKM_OK;
}

/* Store the labels best[0..m) of points i.. and count the changes. */
static inline __attribute__((always_inline)) void FKM_NAME(set_labels)(
    int32_t *labels, fkm_index_t *nchg, fkm_index_t i, const fkm_index_t *best, int m)
{
    for (int r = 0; r < m; ++r) {
        *nchg += labels[i + r] != (int32_t)best[r];
        labels[i + r] = (int32_t)best[r];
    }
}

FKM_HOT int FKM_NAME(fkm_lloyd_label)(
    int32_t *labels, fkm_index_t *n_changed, const FKM_REAL *X, const double *P,
    fkm_index_t lo, fkm_index_t hi, fkm_index_t d, const double *ct,
    const double *hnorm, fkm_index_t k, const unsigned char *need)
{
    FKM_ASSERT(0 <= lo && lo <= hi && d >= 1 && k >= 1 && k <= INT32_MAX);
    FKM_ASSERT(labels != NULL && n_changed != NULL && ct != NULL && hnorm != NULL);
    FKM_ASSERT(lo == hi || X != NULL);
    const fkm_index_t n4 = P ? hi - hi % 4 : lo;
    if (P && lo % 4 != 0)
        return FKM_EDOM;
    fkm_index_t nchg = 0;
    fkm_index_t i = lo;
    fkm_index_t best[8];
    if (P) {
        /* Whole packed panels, in the groups of fkm_lloyd_assign_masked.
         * deliberate specialization: groups of 8, then of 4, as there. */
        for (; i + 8 <= n4; i += 8) {
            if (need && !FKM_NAME(any_need)(need + i, 8))
                continue;
            if (!need && i + 8 * (FKM_LLOYD_PREFETCH + 1) <= n4)
                fkm_lloyd_prefetch(P + (i + 8 * FKM_LLOYD_PREFETCH) * d,
                                   (size_t)(8 * d) * sizeof(double));
#define FKM_PCASE(D) FKM_NAME(panel8)(best, P + i * (D), P + i * (D) + 4 * (D), D, ct, hnorm, k)
            FKM_WITH_CONST_D(d, FKM_PCASE)
#undef FKM_PCASE
            FKM_NAME(set_labels)(labels, &nchg, i, best, 8);
        }
        for (; i + 4 <= n4; i += 4) {
            if (need && !FKM_NAME(any_need)(need + i, 4))
                continue;
#define FKM_PCASE(D) FKM_NAME(panel4)(best, P + i * (D), D, ct, hnorm, k)
            FKM_WITH_CONST_D(d, FKM_PCASE)
#undef FKM_PCASE
            FKM_NAME(set_labels)(labels, &nchg, i, best, 4);
        }
    }
    fkm_v4d *accbuf = NULL;
    FKM_REAL *pad = NULL;
    double *T = NULL; /* two panels of 4 rows (score_rows8) */
    if (i < hi) {
        accbuf = malloc((size_t)(8 * ((k + FKM_LLOYD_PANEL - 1) / FKM_LLOYD_PANEL)) *
                        sizeof(fkm_v4d));
        if (hi - i >= 8 && d <= FKM_LLOYD_ROWS8_MAX_D)
            T = malloc((size_t)(8 * d) * sizeof(double));
        if (!accbuf || (hi - i >= 8 && d <= FKM_LLOYD_ROWS8_MAX_D && !T)) {
            free(T);
            free(accbuf);
            return FKM_ENOMEM;
        }
    }
    /* Groups of 8 rows through panels, then fours (as fkm_lloyd_assign_masked). */
    for (; T && i + 8 <= hi; i += 8) {
        const FKM_REAL *rows[8];
        if (need && !FKM_NAME(any_need)(need + i, 8))
            continue;
        for (int r = 0; r < 8; ++r)
            rows[r] = X + (i + r) * d;
        const char *pf = NULL; /* as in fkm_lloyd_assign_masked */
        const size_t pq = (size_t)(2 * d) * sizeof(FKM_REAL);
        if (!need && i + 8 * (FKM_LLOYD_PREFETCH + 1) <= hi)
            pf = (const char *)(X + (i + 8 * FKM_LLOYD_PREFETCH) * d);
        FKM_NAME(score_rows8)(best, rows, T, labels, i, d, ct, hnorm, k, accbuf, need, pf,
                              pq);
        FKM_NAME(set_labels)(labels, &nchg, i, best, 8);
        if (pf)
            fkm_lloyd_prefetch_l2(pf + 3 * pq, pq);
    }
    for (; i < hi; i += 4) {
        const FKM_REAL *rows[4];
        fkm_index_t m = hi - i < 4 ? hi - i : 4;
        if (need && !FKM_NAME(any_need)(need + i, (int)m))
            continue;
        if (!need && d <= FKM_LLOYD_JBLOCK && i + 4 * (FKM_LLOYD_PREFETCH + 1) <= hi)
            fkm_lloyd_prefetch(X + (i + 4 * FKM_LLOYD_PREFETCH) * d,
                               (size_t)(4 * d) * sizeof(FKM_REAL));
        if (FKM_NAME(row_group)(rows, &pad, X, i, hi, d) != FKM_OK) {
            free(T);
            free(accbuf);
            return FKM_ENOMEM;
        }
        FKM_NAME(tile4)(best, rows[0], rows[1], rows[2], rows[3], d, ct, hnorm, k, accbuf);
        FKM_NAME(set_labels)(labels, &nchg, i, best, (int)m);
    }
    free(T);
    free(accbuf);
    free(pad);
    *n_changed = nchg;
    return FKM_OK;
}

int FKM_NAME(fkm_lloyd_assign)(
    int32_t *labels, fkm_index_t *n_changed, double *mind, double *sums,
    double *wsums, double *inertia, const FKM_REAL *X, const double *P,
    const double *w,
    fkm_index_t lo, fkm_index_t hi, fkm_index_t d, const double *ct,
    const double *hnorm, const double *centers, fkm_index_t k)
{
    return FKM_NAME(fkm_lloyd_assign_masked)(labels, n_changed, mind, sums, wsums,
                                             inertia, X, P, w, lo, hi, d, ct, hnorm,
                                             centers, k, NULL);
}

#undef FKM_NAME
#undef FKM_CAT
#undef FKM_CAT_
