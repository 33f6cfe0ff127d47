/* fkm_race_impl.h -- body of fkm_race_seeding_{f64,f32}, included by
 * fkm_race.c once per element type FKM_RACE_T (double, float). */
#define FKM_RACE_CAT_(a, b) a##b
#define FKM_RACE_CAT(a, b) FKM_RACE_CAT_(a, b)
#define FKM_RACE_SQ FKM_RACE_CAT(sqdist_, FKM_RACE_T)
#define FKM_RACE_FN FKM_RACE_CAT(race_impl_, FKM_RACE_CAT(FKM_RACE_SFX_, FKM_RACE_T))
#define FKM_RACE_SFX_double f64
#define FKM_RACE_SFX_float f32

/* Lower bound used to skip logarithms: -log u >= 1 - u, with a margin that
 * covers the rounding of both sides, so a skipped draw never wins. */
#define FKM_RACE_LB(u) ((1.0 - (u)) * (1.0 - 0x1p-40))

/* See fkm_race_seeding_trace_f64 and fkm_race_seeding_dist_f64; cand, pot
 * and dist may be NULL. */
static FKM_HOT int FKM_RACE_FN(fkm_index_t *seeds, double *d2, const FKM_RACE_T *X,
                               const int64_t *ids, const uint8_t *excluded,
                               fkm_index_t n, fkm_index_t d, fkm_index_t k, uint64_t key,
                               fkm_index_t n_trials, fkm_index_t *cand_out,
                               double *pot_out, double *dist_out)
{
    fkm_index_t i, j, l, best[FKM_RACE_MAX_TRIALS];
    double bestv[FKM_RACE_MAX_TRIALS];
    /* greedy: the distances to each candidate, kept for the pick */
    double *cand = NULL;
    const double *known = NULL; /* distances to the last seed, or NULL */
    int status = FKM_OK;
    /* fkm_race.h: n, d, k >= 1 (unchecked in release builds) */
    FKM_ASSERT(n >= 1 && d >= 1 && k >= 1);
    FKM_ASSERT(seeds != NULL && d2 != NULL && X != NULL && ids != NULL);
    FKM_ASSERT(cand_out == NULL || pot_out != NULL);
    if (n_trials < 1 || n_trials > FKM_RACE_MAX_TRIALS) return FKM_EDOM;
    if (cand_out)
        for (i = 0; i < k * n_trials; i++) { cand_out[i] = -1; pot_out[i] = NAN; }
    /* first seed: argmin_i E_i0 (the log only when the bound can win) */
    best[0] = -1;
    bestv[0] = INFINITY;
    for (i = 0; i < n; i++) {
        double u, e;
        if (excluded && excluded[i]) continue;
        u = race_uniform(key, ids[i], 0);
        if (best[0] >= 0 && FKM_RACE_LB(u) >= bestv[0]) continue;
        e = -log(u);
        if (best[0] < 0 || e < bestv[0]) { best[0] = i; bestv[0] = e; }
    }
    if (best[0] < 0) return FKM_EDOM;
    if (n_trials > 1 && k > 1) {
        cand = malloc(sizeof(double) * (size_t)n * (size_t)n_trials);
        if (!cand) return FKM_ENOMEM;
    }
    seeds[0] = best[0];
    for (i = 0; i < n; i++) d2[i] = INFINITY;
    for (j = 1; j <= k; j++) {
        const FKM_RACE_T *cj = X + (size_t)seeds[j - 1] * (size_t)d;
        fkm_index_t pick = -1;
        /* distances to the last seed (kept from the greedy step if known) */
        for (i = 0; i < n; i++) {
            double s;
            if (excluded && excluded[i]) {
                d2[i] = 0.0;
                if (dist_out) dist_out[(size_t)i * (size_t)k + (size_t)(j - 1)] = 0.0;
                continue;
            }
            s = known ? known[i] : FKM_RACE_SQ(X + (size_t)i * (size_t)d, cj, d);
            if (!(s < INFINITY)) { status = FKM_ENONFINITE; goto out; }
            if (dist_out) dist_out[(size_t)i * (size_t)k + (size_t)(j - 1)] = s;
            if (s < d2[i]) d2[i] = s;
        }
        if (j == k) break;
        known = NULL;
        /* one race per trial: argmin_i E_ijl / D_i^2 over D_i^2 > 0, in
         * position order (ties to the lowest position) */
        for (l = 0; l < n_trials; l++) {
            const uint64_t step = trial_step(j, l);
            fkm_index_t b = -1;
            double bv = INFINITY;
            for (i = 0; i < n; i++) {
                double u, sc;
                if (!(d2[i] > 0.0)) continue; /* excluded rows have d2 = 0 */
                u = race_uniform(key, ids[i], step);
                if (FKM_RACE_LB(u) >= bv * d2[i]) continue;
                sc = -log(u) / d2[i];
                if (sc < bv) { b = i; bv = sc; }
            }
            best[l] = b;
            bestv[l] = bv;
        }
        if (cand_out && best[0] >= 0)
            for (l = 0; l < n_trials; l++) cand_out[j * n_trials + l] = best[l];
        if (best[0] >= 0 && n_trials == 1) {
            pick = best[0];
        } else if (best[0] >= 0) { /* greedy: the lowest potential */
            double pbest = INFINITY;
            for (l = 0; l < n_trials; l++) {
                const FKM_RACE_T *cl = X + (size_t)best[l] * (size_t)d;
                double pot = 0.0, *tl = cand + (size_t)l * (size_t)n;
                fkm_index_t q;
                int seen = 0;
                for (q = 0; q < l; q++) seen |= (best[q] == best[l]);
                if (seen) continue;
                for (i = 0; i < n; i++) {
                    double t;
                    if (excluded && excluded[i]) continue;
                    t = FKM_RACE_SQ(X + (size_t)i * (size_t)d, cl, d);
                    tl[i] = t;
                    pot += t < d2[i] ? t : d2[i];
                }
                if (pot_out) pot_out[j * n_trials + l] = pot;
                if (pot < pbest) { pbest = pot; pick = best[l]; known = tl; }
            }
            if (pick < 0) { pick = best[0]; known = NULL; }
        } else { /* every remaining point is a seed's copy */
            double ev = INFINITY;
            for (i = 0; i < n; i++) {
                fkm_index_t q;
                double e;
                int taken = 0;
                if (excluded && excluded[i]) continue;
                for (q = 0; q < j; q++) taken |= (seeds[q] == i);
                if (taken) continue;
                e = race_exp(key, ids[i], (uint64_t)j);
                if (pick < 0 || e < ev) { pick = i; ev = e; }
            }
            if (pick < 0) { status = FKM_EDOM; goto out; }
        }
        seeds[j] = pick;
    }
out:
    free(cand);
    return status;
}

#undef FKM_RACE_LB
#undef FKM_RACE_SFX_double
#undef FKM_RACE_SFX_float
#undef FKM_RACE_FN
#undef FKM_RACE_SQ
#undef FKM_RACE_CAT
#undef FKM_RACE_CAT_
