/* fkm_rng.h -- the one generator interface of every randomized kernel
 * (seeding, lattice sampling, root finding, noise).
 *
 * A kernel never owns a generator and never knows which one it draws from:
 * the caller passes an fkm_rng_t whose function pointers draw from explicit
 * state.  Two providers fill it: the Cython layer from a numpy BitGenerator
 * (numpy's bitgen_t has the same entry points; statistical randomness, a
 * user seed), and fkm_chacha_rng from a ChaCha20 keystream (fkm_chacha.h;
 * cryptographic randomness: secure-mode DP noise).  Kernels take the
 * generator as their first argument when it is used.
 *
 * The interface has no failure report: a provider that can run out (ChaCha20
 * after 2^32 blocks) records it in its own state, and the caller that owns
 * that state checks it after the kernel returns.
 *
 * Header only: nothing here needs a .c file.
 */
#ifndef FKM_RNG_H
#define FKM_RNG_H

#include <stdint.h>

typedef struct fkm_rng {
    void *state;                          /* opaque generator state */
    uint64_t (*next_uint64)(void *state); /* uniform on [0, 2^64) */
    double (*next_double)(void *state);   /* uniform on [0, 1), 53 bits */
    /* Optional view of a provider's buffer of words not yet drawn (NULL
     * pos: none): while *pos < nwords, the next word is words[*pos], and
     * fkm_rng_u64 takes it inline (++*pos) instead of calling next_uint64,
     * which must return the same word.  ChaCha20 exposes its keystream
     * buffer so the hot samplers pay no call per word; numpy's generators
     * have none. */
    const uint64_t *words;
    int *pos;
    int nwords;
} fkm_rng_t;

/* A generator with no buffer view (the fields of numpy's bitgen_t). */
static inline void fkm_rng_set(fkm_rng_t *rng, void *state,
                               uint64_t (*next_uint64)(void *),
                               double (*next_double)(void *))
{
    rng->state = state;
    rng->next_uint64 = next_uint64;
    rng->next_double = next_double;
    rng->words = NULL;
    rng->pos = NULL;
    rng->nwords = 0;
}

/* The next 64 uniform bits: the same word as rng->next_uint64. */
static inline uint64_t fkm_rng_u64(fkm_rng_t *rng)
{
    if (rng->pos && *rng->pos < rng->nwords)
        return rng->words[(*rng->pos)++];
    return rng->next_uint64(rng->state);
}

/* The next double, uniform on [0, 1) (53 bits). */
static inline double fkm_rng_double(fkm_rng_t *rng)
{
    return rng->next_double(rng->state);
}

#endif /* FKM_RNG_H */
