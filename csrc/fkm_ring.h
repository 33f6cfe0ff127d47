/* fkm_ring.h -- masked-aggregation words in the ring Z_2^64, one call each.
 *
 * The client side of a masked secure-aggregation round (pyfkm.secagg.msa)
 * turns a real vector into 64-bit words: fixed-point encoding, its share of
 * the distributed discrete Gaussian noise, and the sum of signed ChaCha20
 * mask streams; the server removes streams the same way.  Each step was a
 * handful of numpy calls per stream; here each is one loop, with the same
 * arithmetic (bit for bit):
 *
 *  - fkm_ring_encode: out[i] = rint(x[i] * 2^scale_bits) as two's
 *    complement words (numpy's rint(ldexp(x, s)).astype(int64)).
 *  - fkm_ring_add_streams: acc += sign_j * keystream(key_j, nonce_j) for
 *    each stream j, the keystream read as little-endian 64-bit words from
 *    block counter 0 (RFC 8439), modulo 2^64.
 *  - fkm_ring_add_dgauss: acc += exact discrete Gaussian samples, segment
 *    by segment, each segment from its own ChaCha20 stream (one key, one
 *    nonce per segment, counter 0) and one call of
 *    fkm_noise_discrete_gaussian: the words pyfkm.core.NoiseStream.secure
 *    (key, iteration, tag).discrete_gaussian(length, sigma) draws.
 *
 * A failed call leaves acc unchanged (out of fkm_ring_encode is then
 * unspecified).  No global state; reentrant.
 */
#ifndef FKM_RING_H
#define FKM_RING_H

#include <stdint.h>

#include "fkm_common.h"

/* Longest vector of the ring kernels (words): every stream stays far
 * below ChaCha20's 2^32 blocks. */
#define FKM_RING_MAX_WORDS ((fkm_index_t)1 << 32)

/* out[0..n) = (uint64)(int64)rint(ldexp(x[i], scale_bits)) (round half to
 * even under the default rounding mode).  Returns FKM_EDOM unless
 * 0 <= n <= FKM_RING_MAX_WORDS and 0 <= scale_bits <= 62,
 * FKM_ENONFINITE for a NaN entry, FKM_EOVERFLOW when an entry's magnitude
 * after rounding exceeds `limit` (compared exactly, as integers); out is then
 * unspecified.  Assumes x and out hold n values. */
int fkm_ring_encode(const double *x, fkm_index_t n, int scale_bits, uint64_t limit,
                    uint64_t *out);

/* acc[0..n) += signs[j] * (the first n words of the keystream of key j,
 * nonce j), j < m, modulo 2^64.  keys: 32 * m bytes, nonces: 12 * m bytes.
 * Returns FKM_EDOM (acc unchanged) unless 0 <= n <= FKM_RING_MAX_WORDS,
 * m >= 0 and every sign is +1 or -1. */
int fkm_ring_add_streams(uint64_t *acc, fkm_index_t n, const uint8_t *keys,
                         const uint8_t *nonces, const int8_t *signs, fkm_index_t m);

/* acc[off_s .. off_s + lengths[s]) += the lengths[s] discrete Gaussian
 * samples N_Z(0, P[s] / Q[s]) of the stream (key, nonces[s]) (P[s] == 0: no
 * noise on that segment, nothing drawn), s < nseg, segments laid end to end
 * from offset 0.  scratch: room for n int64 values (overwritten).
 * Returns FKM_EDOM unless 0 <= n <= FKM_RING_MAX_WORDS, nseg >= 0, every
 * length >= 0 with sum n, and every P[s] > 0 makes valid sampler
 * parameters with Q[s] (fkm_dgauss_init); FKM_EOVERFLOW if the sampler
 * overflowed or its stream ran out; FKM_RING_ELIMIT if a sample's
 * magnitude reaches `limit`.  On any failure acc is unchanged. */
#define FKM_RING_ELIMIT 64
int fkm_ring_add_dgauss(uint64_t *acc, int64_t *scratch, fkm_index_t n,
                        const uint8_t key[32], const uint8_t *nonces,
                        const fkm_index_t *lengths, const uint64_t *P,
                        const uint64_t *Q, fkm_index_t nseg, uint64_t limit);

#endif /* FKM_RING_H */
