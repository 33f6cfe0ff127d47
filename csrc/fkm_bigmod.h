/* fkm_bigmod.h -- arithmetic modulo the 257-bit prime P = 2^256 + 297, the
 * field of the Shamir sharing of pyfkm.secagg (pyfkm/secagg/_shamir.py).
 *
 * Elements cross the interface as their 33-byte little-endian encodings
 * (the wire form of a share): a value is an element when it is below P.
 * Inside, a value is five 64-bit limbs, least significant first; products
 * are accumulated exactly in eleven limbs and reduced once, with
 * 2^256 = -297 (mod P) and 2^512 = 297^2 (mod P).  Portable C11 plus
 * unsigned __int128 (as fkm_field.h); no state, no allocation.
 *
 * Nothing here is constant-time.  The recovery's dot products run on the
 * server over values the threat model lets it see; the Horner evaluation
 * also runs in a client's share generation on its secret polynomial, where
 * the reduction's data-dependent branch may leak timing, as the Python
 * integers it replaced (also not constant-time) did: no regression, and a
 * local timing attacker is outside the threat model (docs/threat_model.md).
 */
#ifndef FKM_BIGMOD_H
#define FKM_BIGMOD_H

#include <stdint.h>

#include "fkm_common.h"

/* Bytes of an encoded element. */
#define FKM_P256_BYTES 33

/* Largest number of terms of one dot product (the accumulator's headroom
 * is far larger; this bounds the loops by a documented constant). */
#define FKM_P256_MAX_TERMS ((int64_t)1 << 32)

/* fkm_p256_dots: n dot products of t terms each, modulo P.
 * out    OUT, n x 33 bytes: out[33 g ..] encodes
 *        sum_{i < t} w[g][33 i ..] * s[g t + i][0 ..] mod P, in [0, P)
 * w      IN, n pointers, w[g] to t encoded elements (33 t bytes): the
 *        weights of product g (several g may share one pointer)
 * s      IN, n t pointers, each to one encoded element (33 bytes)
 * bad    OUT: -1, or the first g whose weights or terms hold a value >= P
 * Requires n >= 0 and 1 <= t <= FKM_P256_MAX_TERMS (else FKM_EDOM, nothing
 * written).  Every weight and term is checked below P before product g is
 * computed; at the first that is not, *bad = g and FKM_EDOM is returned
 * (the products before g are written, the others are not).
 * out does not overlap the inputs.
 */
int fkm_p256_dots(int64_t n, int64_t t, const uint8_t *const *w,
                  const uint8_t *const *s, uint8_t *out, int64_t *bad);

/* fkm_p256_eval: m polynomials of deg1 coefficients each at n points.
 * out    OUT, n x m x 33 bytes: out[33 (i m + j) ..] encodes
 *        f_j(x[i]) mod P, f_j(z) = sum_k c[33 (j deg1 + k) ..] z^(deg1-1-k)
 *        (coefficients highest degree first, as Horner's rule reads them)
 * c      IN, m x deg1 encoded elements
 * x      IN, n points in [0, 2^33)
 * bad    OUT: -1, or the first polynomial j with a coefficient >= P
 * Requires n, m >= 0, 1 <= deg1 <= FKM_P256_MAX_TERMS and every x below
 * 2^33 (else FKM_EDOM, nothing written); a coefficient >= P gives
 * FKM_EDOM with *bad = j and nothing written.  out does not overlap the
 * inputs.
 */
int fkm_p256_eval(int64_t m, int64_t deg1, const uint8_t *c, int64_t n,
                  const uint64_t *x, uint8_t *out, int64_t *bad);

#endif /* FKM_BIGMOD_H */
