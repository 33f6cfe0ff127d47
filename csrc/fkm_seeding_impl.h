/* Type-generic body of fkm_seeding.c; included once per input type with
 * FKM_REAL (element type) and FKM_SFX (name suffix) defined (by
 * fkm_typed.h). */

#define FKM_CAT_(a, b) a##_##b
#define FKM_CAT(a, b) FKM_CAT_(a, b)
#define FKM_NAME(name) FKM_CAT(name, FKM_SFX)

/* Squared Euclidean distance in double precision, in a fixed summation
 * order (results do not depend on the instruction set):
 *  - d > FKM_PACK_MAX_D only: sixteen partial sums L_0..L_15 over the first
 *    16*floor(d/16) coordinates (coordinate j to L_{j mod 16}), folded into
 *    four, V_l = (L_l + L_{4+l}) + (L_{8+l} + L_{12+l});
 *  - then four partial sums V_0..V_3 (starting at 0 when d <= FKM_PACK_MAX_D)
 *    continue over the next coordinates up to a multiple of 4 (coordinate j
 *    to V_{j mod 4});
 *  - the result is ((V_0 + V_1) + (V_2 + V_3)) + tail, the tail summing the
 *    last d mod 4 coordinates in order.
 * The packed path (update_packed) follows the same order. */
static inline double FKM_NAME(dist2)(const FKM_REAL *restrict a,
                                     const FKM_REAL *restrict b,
                                     fkm_index_t d)
{
    fkm_v4d acc = {0.0, 0.0, 0.0, 0.0};
    fkm_index_t j = 0;
    if (d > FKM_PACK_MAX_D) {
        /* Independent chains hide the add latency on long rows. */
        fkm_v4d a0 = acc, a1 = acc, a2 = acc, a3 = acc;
        for (; j + 16 <= d; j += 16) {
            fkm_v4d t0 = FKM_NAME(load4)(a + j) - FKM_NAME(load4)(b + j);
            fkm_v4d t1 = FKM_NAME(load4)(a + j + 4) - FKM_NAME(load4)(b + j + 4);
            fkm_v4d t2 = FKM_NAME(load4)(a + j + 8) - FKM_NAME(load4)(b + j + 8);
            fkm_v4d t3 =
                FKM_NAME(load4)(a + j + 12) - FKM_NAME(load4)(b + j + 12);
            a0 += t0 * t0;
            a1 += t1 * t1;
            a2 += t2 * t2;
            a3 += t3 * t3;
        }
        acc = (a0 + a1) + (a2 + a3);
    }
    for (; j + 4 <= d; j += 4) {
        fkm_v4d t = FKM_NAME(load4)(a + j) - FKM_NAME(load4)(b + j);
        acc += t * t;
    }
    double r = 0.0;
    for (; j < d; ++j) {
        double t = (double)a[j] - (double)b[j];
        r += t * t;
    }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + r;
}

/* Point i against the new center xc (number p32): keep the smaller of its
 * squared distance and mind[i] (strict: the earlier center wins ties) and
 * relabel it when it moved (labels NULL: no labels kept).  Branch-free (which
 * points move is unpredictable); returns whether it moved.  Removed points
 * and chosen centers hold mind = 0, which no distance beats. */
static inline __attribute__((always_inline)) int FKM_NAME(update_point)(
    double *restrict mind, int32_t *restrict labels, const FKM_REAL *X,
    fkm_index_t i, fkm_index_t d, int32_t p32, const FKM_REAL *restrict xc)
{
    const double m = mind[i];
    const double dd = FKM_NAME(dist2)(X + i * d, xc, d);
    const int lt = dd < m;
    mind[i] = lt ? dd : m;
    if (labels)
        labels[i] = lt ? p32 : labels[i];
    return lt;
}

/* Update mind/labels of block [lo, hi) for center number `pos` (row xc);
 * returns whether any point moved.  labels may be NULL only without prune.
 * With prune, *sparse is set when the bound left few enough points that only
 * theirs were computed.  Always inlined so that callers passing a constant d
 * get a fully unrolled distance. */
static inline __attribute__((always_inline)) int FKM_NAME(update_block)(
    double *restrict mind, int32_t *restrict labels, const FKM_REAL *X,
    const uint8_t *removed, fkm_index_t lo, fkm_index_t hi, fkm_index_t d,
    fkm_index_t pos, const FKM_REAL *restrict xc, const double *restrict dcc,
    int prune, int *restrict sparse)
{
    (void)removed; /* removed points hold mind = 0 and can never change */
    const int32_t p32 = (int32_t)pos;
    int changed = 0;
    if (prune) {
        /* Compact the ids the triangle inequality cannot rule out (no
         * unpredictable branch), then compute only their distances. */
        int32_t idx[FKM_SEED_BLOCK];
        fkm_index_t cnt = 0;
        for (fkm_index_t i = lo; i < hi; ++i) {
            idx[cnt] = (int32_t)(i - lo);
            /* Removed points and centers (mind = 0) never pass. */
            cnt += !(dcc[labels[i] < 0 ? 0 : labels[i]] >= FKM_PRUNE_FACTOR * mind[i]);
        }
        /* Scattered rows cost more than streaming all of them (the
         * hardware prefetcher does not see them coming): unless few are
         * left, compute every distance of the block (a distance the bound
         * rules out never moves a point, so results are the same). */
        if (cnt * FKM_PRUNE_SPARSE > hi - lo) {
            for (fkm_index_t i = lo; i < hi; ++i)
                changed |= FKM_NAME(update_point)(mind, labels, X, i, d, p32,
                                                  xc);
            return changed;
        }
        *sparse = 1;
        /* The rows left are scattered: the hardware prefetcher does not
         * see them coming, so ask for the row FKM_PREFETCH_AHEAD ahead. */
        const size_t row_bytes = (size_t)d * sizeof(FKM_REAL);
        for (fkm_index_t t = 0; t < cnt; ++t) {
            const fkm_index_t i = lo + idx[t];
            if (t + FKM_PREFETCH_AHEAD < cnt) {
                const char *pr =
                    (const char *)(X + (lo + idx[t + FKM_PREFETCH_AHEAD]) * d);
                for (size_t off = 0; off < row_bytes; off += 64)
                    __builtin_prefetch(pr + off);
                __builtin_prefetch(pr + row_bytes - 1);
            }
            changed |= FKM_NAME(update_point)(mind, labels, X, i, d, p32, xc);
        }
        return changed;
    }
    for (fkm_index_t i = lo; i < hi; ++i)
        changed |= FKM_NAME(update_point)(mind, labels, X, i, d, p32, xc);
    return changed;
}

/* Points i..i+3 with squared distances *dd to the new center (number *pv
 * in every lane): the four-point form of update_point, branch-free.  ORs
 * the lanes that moved into *any.  (Vectors by pointer: no vector ABI.) */
static inline __attribute__((always_inline)) void FKM_NAME(store4)(
    double *restrict mind, int32_t *restrict labels, fkm_index_t i,
    const fkm_v4d *dd, const fkm_v4s *pv, fkm_v4i *any)
{
    const fkm_v4d m = load4_f64(mind + i);
    const fkm_v4i lt = *dd < m;
    const fkm_v4d nm = (fkm_v4d)(((fkm_v4i)*dd & lt) | ((fkm_v4i)m & ~lt));
    memcpy(mind + i, &nm, sizeof nm);
    if (labels) {
        fkm_v4s lab, m32 = __builtin_convertvector(lt, fkm_v4s);
        memcpy(&lab, labels + i, sizeof lab);
        lab = (*pv & m32) | (lab & ~m32);
        memcpy(labels + i, &lab, sizeof lab);
    }
    *any |= lt;
}

/* Same as update_block (branch-free path, d <= FKM_PACK_MAX_D) on points
 * [lo, hi), hi - lo a multiple of 4, read in place from the row-major X.
 * Four points at a time: each point's partial sums V_0..V_3 (coordinate j to
 * V_{j mod 4}) accumulate in one vector, a 4 x 4 transpose-and-add gives
 * (V_0 + V_1) + (V_2 + V_3) for the four points in one vector, and the tail
 * coordinates are summed four points per vector: the per-point summation
 * order is that of dist2, so both paths give bit-identical distances.
 * mind (and labels unless NULL) are blended and stored for every group: a
 * test of whether one of four points moved mispredicts too often. */
static inline __attribute__((always_inline)) int FKM_NAME(update_rows)(
    double *restrict mind, int32_t *restrict labels, const FKM_REAL *restrict X,
    fkm_index_t lo, fkm_index_t hi, fkm_index_t d, fkm_index_t pos,
    const FKM_REAL *restrict xc)
{
    const int32_t p32 = (int32_t)pos;
    const fkm_v4s pv = {p32, p32, p32, p32};
    fkm_v4i any = {0, 0, 0, 0};
    const fkm_index_t q = d / 4; /* full groups of 4 coordinates (<= 4) */
    FKM_ASSERT(d <= FKM_PACK_MAX_D); /* cv holds FKM_PACK_MAX_D / 4 groups */
    fkm_v4d cv[FKM_PACK_MAX_D / 4];
    for (fkm_index_t b = 0; b < q; ++b)
        cv[b] = FKM_NAME(load4)(xc + 4 * b);
    for (fkm_index_t i = lo; i < hi; i += 4) {
        const FKM_REAL *x = X + i * d;
        fkm_v4d dd = {0.0, 0.0, 0.0, 0.0};
        if (q > 0) {
            fkm_v4d v[4];
            for (int p = 0; p < 4; ++p) {
                /* 0 + t*t is t*t: the first group needs no addition */
                fkm_v4d t = FKM_NAME(load4)(x + p * d) - cv[0];
                fkm_v4d a = t * t;
                for (fkm_index_t b = 1; b < q; ++b) {
                    t = FKM_NAME(load4)(x + p * d + 4 * b) - cv[b];
                    a += t * t;
                }
                v[p] = a;
            }
            fkm_v4d s01 = __builtin_shufflevector(v[0], v[1], 0, 4, 2, 6) +
                          __builtin_shufflevector(v[0], v[1], 1, 5, 3, 7);
            fkm_v4d s23 = __builtin_shufflevector(v[2], v[3], 0, 4, 2, 6) +
                          __builtin_shufflevector(v[2], v[3], 1, 5, 3, 7);
            dd = __builtin_shufflevector(s01, s23, 0, 1, 4, 5) +
                 __builtin_shufflevector(s01, s23, 2, 3, 6, 7);
        }
        const fkm_index_t j = 4 * q;
        if (d - j >= 2) {
            /* Coordinates j, j+1 of points (0, 1) and (2, 3) in two vectors;
             * r = (0 + t_j^2) + t_{j+1}^2 = t_j^2 + t_{j+1}^2. */
            const fkm_v4d c2 = {(double)xc[j], (double)xc[j + 1],
                                (double)xc[j], (double)xc[j + 1]};
            const fkm_v4d x01 = {(double)x[j], (double)x[j + 1],
                                 (double)x[d + j], (double)x[d + j + 1]};
            const fkm_v4d x23 = {(double)x[2 * d + j], (double)x[2 * d + j + 1],
                                 (double)x[3 * d + j], (double)x[3 * d + j + 1]};
            fkm_v4d t01 = x01 - c2, t23 = x23 - c2;
            t01 *= t01;
            t23 *= t23;
            fkm_v4d r = __builtin_shufflevector(t01, t23, 0, 2, 4, 6) +
                        __builtin_shufflevector(t01, t23, 1, 3, 5, 7);
            if (d - j == 3) {
                const fkm_v4d xv = {(double)x[j + 2], (double)x[d + j + 2],
                                    (double)x[2 * d + j + 2],
                                    (double)x[3 * d + j + 2]};
                fkm_v4d t = xv - (double)xc[j + 2];
                r += t * t;
            }
            dd = q > 0 ? dd + r : r;
        } else if (d - j == 1) {
            const fkm_v4d xv = {(double)x[j], (double)x[d + j],
                                (double)x[2 * d + j], (double)x[3 * d + j]};
            fkm_v4d t = xv - (double)xc[j];
            dd = q > 0 ? dd + t * t : t * t;
        }
        FKM_NAME(store4)(mind, labels, i, &dd, &pv, &any);
    }
    return (any[0] | any[1] | any[2] | any[3]) != 0;
}

/* Same as update_rows on points [lo, hi), lo and hi multiples of 4, read
 * from the packed copy P (panels of 4 points, coordinate
 * major).  Four points per vector; the per-point summation order is that of
 * dist2, so both paths give bit-identical distances. */
static inline __attribute__((always_inline)) int FKM_NAME(update_packed)(
    double *restrict mind, int32_t *restrict labels, const double *restrict P,
    fkm_index_t lo, fkm_index_t hi, fkm_index_t d, fkm_index_t pos,
    const FKM_REAL *restrict xc)
{
    const int32_t p32 = (int32_t)pos;
    const fkm_v4s pv = {p32, p32, p32, p32};
    fkm_v4i any = {0, 0, 0, 0};
    for (fkm_index_t i = lo; i < hi; i += 4) {
        const double *pp = P + i * d; /* panel i/4 starts at (i/4)*4*d */
        fkm_v4d s[4] = {{0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0},
                        {0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0}};
        fkm_v4d r = {0.0, 0.0, 0.0, 0.0};
        fkm_index_t j = 0;
        for (; j + 4 <= d; j += 4) {
            for (int l = 0; l < 4; ++l) {
                fkm_v4d t = load4_f64(pp + 4 * (j + l)) - (double)xc[j + l];
                s[l] += t * t;
            }
        }
        for (; j < d; ++j) {
            fkm_v4d t = load4_f64(pp + 4 * j) - (double)xc[j];
            r += t * t;
        }
        fkm_v4d dd = ((s[0] + s[1]) + (s[2] + s[3])) + r;
        FKM_NAME(store4)(mind, labels, i, &dd, &pv, &any);
    }
    return (any[0] | any[1] | any[2] | any[3]) != 0;
}


/* One pass for center number `pos` (row id c): update mind/labels of active
 * points and the block sums of w_i * mind_i.  Low-dimensional data take a
 * branch-free path with the distance unrolled for the exact d (distances are
 * cheap there, mispredicted branches are not); higher-dimensional data skip
 * the points the triangle inequality rules out (||c - c_l||^2 >= 4 D_i^2
 * implies d(x, c) >= D_i, c_l the point's nearest center), with a margin so
 * rounding can never change a result, when `prune` (d >= FKM_PRUNE_MIN_D
 * only) asks for the bound.  Returns whether some block was sparse enough
 * for the bound to pay (with prune; else 0). */
FKM_HOT static int FKM_NAME(update_pass)(
    double *restrict mind, int32_t *restrict labels, double *restrict bsum,
    const FKM_REAL *X, const double *P, const double *w,
    const uint8_t *removed, fkm_index_t n, fkm_index_t d, fkm_index_t pos,
    fkm_index_t c, const double *dcc, int first, int prune)
{
    const fkm_index_t n4 = d <= FKM_PACK_MAX_D ? n - n % 4 : 0;
    const FKM_REAL *xc = X + c * d;
    int sparse = 0;
    FKM_ASSERT(!prune || (pos > 0 && d >= FKM_PRUNE_MIN_D && labels));
    fkm_index_t nb = (n + FKM_SEED_BLOCK - 1) / FKM_SEED_BLOCK;
    for (fkm_index_t b = 0; b < nb; ++b) {
        fkm_index_t lo = b * FKM_SEED_BLOCK;
        fkm_index_t hi = lo + FKM_SEED_BLOCK < n ? lo + FKM_SEED_BLOCK : n;
        int changed = 0;
        fkm_index_t mid = lo;
        if (lo < n4) {
            mid = hi < n4 ? hi : n4;
            if (P && first) /* pack while the block is read the first time */
                for (fkm_index_t i = lo; i < mid; i += 4)
                    for (fkm_index_t j = 0; j < d; ++j)
                        for (fkm_index_t l = 0; l < 4; ++l)
                            ((double *)P)[i * d + 4 * j + l] =
                                (double)X[(i + l) * d + j];
            /* Without labels (NULL), a copy of each kernel that never
             * touches them. */
#define FKM_PCASE(D)                                                          \
    changed = P ? (labels ? FKM_NAME(update_packed)(mind, labels, P, lo, mid, \
                                                    D, pos, xc)               \
                          : FKM_NAME(update_packed)(mind, NULL, P, lo, mid,   \
                                                    D, pos, xc))              \
                : (labels ? FKM_NAME(update_rows)(mind, labels, X, lo, mid,   \
                                                  D, pos, xc)                 \
                          : FKM_NAME(update_rows)(mind, NULL, X, lo, mid, D,  \
                                                  pos, xc))
            FKM_WITH_CONST_D(d, FKM_PCASE)
#undef FKM_PCASE
        }
#define FKM_CASE(D)                                                           \
    changed |= FKM_NAME(update_block)(mind, labels, X, removed, mid, hi, D,   \
                                      pos, xc, dcc, prune, &sparse)
        if (mid < hi) FKM_WITH_CONST_D(d, FKM_CASE)
#undef FKM_CASE
        /* On the first pass every mind was just reset to HUGE_VAL, so a
         * block whose points all failed "dd < HUGE_VAL" (an infinite or NaN
         * distance) must still get its (now infinite) mass: the caller's
         * finiteness check reads the block sums. */
        if (changed || first)
            bsum[b] = seeding_block_mass(mind, w, lo, hi);
    }
    return sparse;
}

/* Restore the state after the first n_prefix centers from the state of a
 * full seeding that shares them: points whose nearest center is in the
 * prefix keep it (and its distance); the others look for their nearest
 * prefix center again, in prefix order, so ties and distances are exactly
 * those of the sequential passes.  Removed points get mind 0, label -1. */
FKM_HOT static void FKM_NAME(restore_prefix)(
    double *restrict mind, int32_t *restrict labels, const FKM_REAL *X,
    const uint8_t *removed, fkm_index_t n, fkm_index_t d,
    const fkm_index_t *centers, fkm_index_t n_prefix)
{
    for (fkm_index_t i = 0; i < n; ++i) {
        if (removed && removed[i]) {
            mind[i] = 0.0;
            labels[i] = -1;
            continue;
        }
        if (labels[i] >= 0 && labels[i] < n_prefix)
            continue;
        double m = HUGE_VAL;
        int32_t l = -1;
        for (fkm_index_t a = 0; a < n_prefix; ++a) {
            double dd = FKM_NAME(dist2)(X + i * d, X + centers[a] * d, d);
            if (dd < m) {
                m = dd;
                l = (int32_t)a;
            }
        }
        mind[i] = m;
        labels[i] = l;
    }
}

static int FKM_NAME(seeding_body)(fkm_rng_t *rng, fkm_index_t *centers,
                                  double *mind, int32_t *labels,
                                  const FKM_REAL *X, const double *w,
                                  const uint8_t *removed, fkm_index_t n,
                                  fkm_index_t d, fkm_index_t k,
                                  fkm_index_t n_prefix, int warm, int pack)
{
    fkm_index_t nb = (n + FKM_SEED_BLOCK - 1) / FKM_SEED_BLOCK;
    double *bsum = calloc((size_t)(nb > 0 ? nb : 1), sizeof(double));
    double *dcc = malloc((size_t)(k > 0 ? k : 1) * sizeof(double));
    fkm_index_t *sorted = malloc((size_t)(k > 0 ? k : 1) * sizeof(fkm_index_t));
    double *P = NULL;
    int32_t *own_labels = NULL;
    int status = FKM_OK;
    if (!bsum || !dcc || !sorted) {
        status = FKM_ENOMEM;
        goto done;
    }
    /* Labels not wanted (cold runs only): the pruned path still reads them,
     * the others never need them. */
    if (!labels && d >= FKM_PRUNE_MIN_D && n > 0) {
        labels = own_labels = malloc((size_t)n * sizeof(int32_t));
        if (!labels) {
            status = FKM_ENOMEM;
            goto done;
        }
    }
    /* Packing X (panels of 4 points, coordinate major: P[4*(p*d + j) + l]
     * holds X[4p + l, j]) saves the transposes of update_rows on every pass,
     * but costs a copy and its page faults: it pays only when the copy stays
     * in cache and the passes are several (from a warm prefix only
     * k - n_prefix remain). */
    if (pack < 0)
        pack = (size_t)n * (size_t)d * sizeof(double) <= FKM_PACK_MAX_BYTES &&
               k - (warm ? n_prefix : 0) >= FKM_PACK_MIN_PASSES;
    if (pack && d <= FKM_PACK_MAX_D && n >= 4) {
        P = fkm_alloc_large((size_t)(n - n % 4) * (size_t)d * sizeof(double));
        if (!P) {
            status = FKM_ENOMEM;
            goto done;
        }
    }
    fkm_index_t first_pass = 0;
    /* The bound costs a check per point every pass but pays only in blocks
     * it leaves sparse: after a pass where it paid nowhere, the next
     * `skip` passes compute every distance without it (1, 2, 4, ... up to
     * FKM_PRUNE_MAX_SKIP after each further such pass; reset when it pays).
     * Which distances are computed never changes a result. */
    fkm_index_t skip = 0, backoff = 0;
    if (warm && n_prefix > 0) {
        FKM_NAME(restore_prefix)(mind, labels, X, removed, n, d, centers,
                                 n_prefix);
        seeding_block_sums(bsum, mind, w, removed, n);
        first_pass = n_prefix;
        goto passes;
    }
    for (fkm_index_t i = 0; i < n; ++i)
        mind[i] = (removed && removed[i]) ? 0.0 : 1.0;
    if (labels)
        for (fkm_index_t i = 0; i < n; ++i)
            labels[i] = -1;
    if (n_prefix == 0 && k > 0) {
        /* First center: probability proportional to weight. */
        seeding_block_sums(bsum, mind, w, removed, n);
        status = seeding_sample(rng, &centers[0], bsum, mind, w, removed, n);
        if (status != FKM_OK)
            goto done;
    }
    for (fkm_index_t i = 0; i < n; ++i)
        if (!(removed && removed[i]))
            mind[i] = HUGE_VAL;
passes:
    for (fkm_index_t pos = first_pass; pos < k; ++pos) {
        if (pos >= n_prefix && pos > 0) {
            double total = 0.0;
            for (fkm_index_t b = 0; b < nb; ++b)
                total += bsum[b];
            if (!(total < HUGE_VAL)) {
                status = FKM_ENONFINITE;
                goto done;
            }
            if (total > 0.0)
                status = seeding_sample(rng, &centers[pos], bsum, mind, w,
                                        removed, n);
            else
                status = seeding_fallback(rng, &centers[pos], sorted, centers,
                                          pos, w, removed, n);
            if (status != FKM_OK)
                goto done;
        }
        int prune = 0;
        if (pos > 0 && d >= FKM_PRUNE_MIN_D) {
            prune = skip == 0;
            skip -= !prune;
        }
        const FKM_REAL *xc = X + centers[pos] * d;
        for (fkm_index_t a = 0; prune && a < pos; ++a)
            dcc[a] = FKM_NAME(dist2)(X + centers[a] * d, xc, d);
        int paid = FKM_NAME(update_pass)(mind, labels, bsum, X, P, w, removed,
                                         n, d, pos, centers[pos], dcc,
                                         pos == first_pass, prune);
        if (prune) {
            backoff = paid ? 0
                           : (backoff == 0 ? 1
                              : backoff * 2 < FKM_PRUNE_MAX_SKIP
                                  ? backoff * 2
                                  : FKM_PRUNE_MAX_SKIP);
            skip = backoff;
        }
    }
    {
        /* Squared distances that overflowed make the final state unusable
         * too (k = 1 never samples from them). */
        double total = 0.0;
        for (fkm_index_t b = 0; b < nb; ++b)
            total += bsum[b];
        if (!(total < HUGE_VAL))
            status = FKM_ENONFINITE;
    }
done:
    free(bsum);
    free(dcc);
    free(sorted);
    free(own_labels);
    fkm_free_large(P);
    return status;
}

int FKM_NAME(fkm_seeding_run)(fkm_rng_t *rng, fkm_index_t *centers,
                              double *mind, int32_t *labels, const FKM_REAL *X,
                              const double *w, const uint8_t *removed,
                              fkm_index_t n, fkm_index_t d, fkm_index_t k,
                              fkm_index_t n_prefix)
{
    seeding_assert_args(rng, centers, mind, labels, X, w, removed, n, d, k,
                        n_prefix, 0);
    return FKM_NAME(seeding_body)(rng, centers, mind, labels, X, w, removed, n,
                                  d, k, n_prefix, 0, -1);
}

int FKM_NAME(fkm_seeding_resume)(fkm_rng_t *rng, fkm_index_t *centers,
                                 double *mind, int32_t *labels,
                                 const FKM_REAL *X, const double *w,
                                 const uint8_t *removed, fkm_index_t n,
                                 fkm_index_t d, fkm_index_t k,
                                 fkm_index_t n_prefix)
{
    if (n_prefix < 1 || n_prefix > k || (!labels && n > 0))
        return FKM_EDOM;
    seeding_assert_args(rng, centers, mind, labels, X, w, removed, n, d, k,
                        n_prefix, 1);
    return FKM_NAME(seeding_body)(rng, centers, mind, labels, X, w, removed, n,
                                  d, k, n_prefix, 1, -1);
}

int FKM_NAME(fkm_seeding_run_ex)(fkm_rng_t *rng, fkm_index_t *centers,
                                 double *mind, int32_t *labels,
                                 const FKM_REAL *X, const double *w,
                                 const uint8_t *removed, fkm_index_t n,
                                 fkm_index_t d, fkm_index_t k,
                                 fkm_index_t n_prefix, int warm, int pack)
{
    if (warm && (n_prefix < 1 || n_prefix > k || (!labels && n > 0)))
        return FKM_EDOM;
    seeding_assert_args(rng, centers, mind, labels, X, w, removed, n, d, k,
                        n_prefix, warm != 0);
    return FKM_NAME(seeding_body)(rng, centers, mind, labels, X, w, removed, n,
                                  d, k, n_prefix, warm != 0,
                                  pack < 0 ? -1 : pack != 0);
}

int FKM_NAME(fkm_seeding_check_mind)(fkm_index_t *bad, const double *mind,
                                     const int32_t *labels,
                                     const fkm_index_t *centers,
                                     const FKM_REAL *X, const uint8_t *removed,
                                     fkm_index_t n, fkm_index_t d,
                                     fkm_index_t k, double rtol, double atol)
{
    if (!bad || n < 0 || d < 1 || k < 1 ||
        (n > 0 && (!mind || !labels || !centers || !X || !removed)))
        return FKM_EDOM;
    *bad = -1;
    for (fkm_index_t i = 0; i < n; ++i) {
        if (removed[i])
            continue;
        int32_t l = labels[i];
        fkm_index_t c = (l >= 0 && (fkm_index_t)l < k) ? centers[l] : -1;
        if (c < 0 || c >= n) {
            *bad = i;
            return FKM_OK;
        }
        double ref = FKM_NAME(dist2)(X + i * d, X + c * d, d);
        double m = mind[i];
        /* written so that NaN in mind or ref fails the check */
        if (!(fabs(m - ref) <= rtol * ref + atol)) {
            *bad = i;
            return FKM_OK;
        }
    }
    return FKM_OK;
}

#undef FKM_NAME
#undef FKM_CAT
#undef FKM_CAT_
