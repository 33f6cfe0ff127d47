/* fkm_rng.h -- the generator interface used by every randomized kernel.
 *
 * A kernel never owns a generator: the caller passes an fkm_rng_t whose
 * function pointers draw from explicit state.  The Cython layer fills it from
 * a numpy BitGenerator (numpy's bitgen_t has the same two entry points), so a
 * user seed flows into C without hidden global state.  Kernels take the
 * generator as their first argument when it is used.
 */
#ifndef FKM_RNG_H
#define FKM_RNG_H

#include <stdint.h>

typedef struct fkm_rng {
    void *state;                          /* opaque generator state */
    uint64_t (*next_uint64)(void *state); /* uniform on [0, 2^64) */
    double (*next_double)(void *state);   /* uniform on [0, 1), 53 bits */
} fkm_rng_t;

static inline double fkm_rng_double(fkm_rng_t *rng)
{
    return rng->next_double(rng->state);
}

#endif /* FKM_RNG_H */
