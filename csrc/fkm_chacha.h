/* fkm_chacha.h -- ChaCha20 keystream (RFC 8439) as a buffered random source.
 *
 * The state holds the 16-word ChaCha20 input (constants, 256-bit key,
 * 32-bit block counter, 96-bit nonce) and a buffer of FKM_CHACHA_NBLK
 * keystream blocks, refilled FKM_CHACHA_NBLK blocks at a time.  The
 * keystream is the RFC 8439 one: block i of a stream started at counter c
 * is ChaCha20(key, c + i, nonce), serialized little-endian; 64-bit words are
 * consecutive 8-byte little-endian chunks of it.  No global state: the
 * caller owns an fkm_chacha_t per stream (not thread-safe to share).
 */
#ifndef FKM_CHACHA_H
#define FKM_CHACHA_H

#include <stdint.h>

#include "fkm_common.h"
#include "fkm_rng.h"

#define FKM_CHACHA_NBLK 8                        /* blocks per refill */
#define FKM_CHACHA_NWORDS (FKM_CHACHA_NBLK * 8)  /* uint64 words per refill */

typedef struct fkm_chacha {
    uint32_t input[16];                  /* ChaCha20 input of the next refill */
    uint64_t buf[FKM_CHACHA_NWORDS];     /* keystream words not yet used */
    int pos;                             /* next unused word of buf */
    int last;                            /* 1 once the final counter values are used */
    int failed;                          /* 1 once a refill was refused */
    uint64_t filler;                     /* state of the filler after failure */
} fkm_chacha_t;

/* The RFC 8439 block function: out = serialized-as-words ChaCha20 block of
 * `input` (20 rounds, then the input added word-wise).  Words are host
 * integers; serialize little-endian to get the keystream bytes. */
void fkm_chacha_block(uint32_t out[16], const uint32_t input[16]);

/* Start a stream: key 32 bytes, nonce 12 bytes, first block counter.
 * Assumes valid pointers; never fails. */
void fkm_chacha_init(fkm_chacha_t *st, const uint8_t key[32],
                     const uint8_t nonce[12], uint32_t counter);

/* Refill the buffer with the next FKM_CHACHA_NBLK blocks and set pos = 0.
 * When fewer than FKM_CHACHA_NBLK unused values of the 32-bit block counter
 * remain (after 256 GiB of keystream from counter 0), nothing is reused:
 * sets `failed` and fills the buffer with a non-cryptographic filler
 * sequence instead (not constant, so that rejection loops still end).
 * Callers check `failed` after their loop and report FKM_EOVERFLOW. */
void fkm_chacha_refill(fkm_chacha_t *st);

/* Next 64-bit keystream word. */
static inline uint64_t fkm_chacha_u64(fkm_chacha_t *st)
{
    if (st->pos >= FKM_CHACHA_NWORDS)
        fkm_chacha_refill(st);
    return st->buf[st->pos++];
}

/* fkm_chacha_rng: make `rng` draw from the stream `st` (fkm_rng.h).
 * rng    OUT: next_uint64 is the next keystream word (fkm_chacha_u64),
 *        next_double its top 53 bits times 2^-53, uniform on [0, 1); the
 *        buffer view is st's keystream buffer (fkm_rng_u64 reads it inline)
 * st     the stream, from fkm_chacha_init; must outlive every use of rng
 * A draw past the end of the stream sets st->failed (see
 * fkm_chacha_refill): the owner of st checks it after the kernels that
 * drew and reports FKM_EOVERFLOW. */
void fkm_chacha_rng(fkm_rng_t *rng, fkm_chacha_t *st);

/* Block `nb` first blocks (counters 0 .. nb-1) of the streams of `nk` keys
 * with one nonce, computed FKM_CHACHA_NBLK (key, counter) lanes at a time:
 * out[(j * nb + b) * 8 + w] is 64-bit word w of block b of key j (the words
 * fkm_chacha_words would return for a stream started at counter 0).  For
 * many short streams (SCMA pair masks of a few words).  Assumes keys holds
 * 32 * nk bytes, out 8 * nk * nb words, 1 <= nb; never fails. */
void fkm_chacha_first_blocks(const uint8_t *keys, fkm_index_t nk, const uint8_t nonce[12],
                             uint32_t nb, uint64_t *out);

/* out[0..n) = the next n keystream words.  Returns FKM_OK, or FKM_EOVERFLOW
 * if the stream ran out (outputs then unspecified).  Assumes n >= 0. */
int fkm_chacha_words(fkm_chacha_t *st, uint64_t *out, fkm_index_t n);

#endif /* FKM_CHACHA_H */
