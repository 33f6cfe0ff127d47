# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython wrappers of csrc/fkm_chacha.c, csrc/fkm_noise.c and csrc/fkm_ring.c.

No input validation beyond memory safety: pyfkm.core.noise validates sigma,
key, nonce and sizes.  Every sampler writes into a caller-allocated array.
"""
import numpy as np

from libc.stdint cimport int8_t, int64_t, uint8_t, uint32_t, uint64_t
from numpy.random cimport bitgen_t
from pyfkm._core._csrc cimport (FKM_OK, FKM_EOVERFLOW, fkm_index_t, fkm_rng_t, fkm_chacha_t,
                                fkm_chacha_block, fkm_chacha_init, fkm_chacha_rng,
                                fkm_chacha_words, fkm_chacha_first_blocks, fkm_dgauss_t,
                                fkm_dgauss_init, fkm_noise_gaussian,
                                fkm_noise_laplace, fkm_noise_discrete_gaussian,
                                fkm_noise_discrete_laplace,
                                fkm_noise_bernoulli_exp)
from pyfkm._core._common cimport check_status, bitgen_of, rng_from_bitgen

cdef extern from "fkm_ring.h" nogil:
    int FKM_RING_ELIMIT
    int fkm_ring_encode(const double *x, fkm_index_t n, int scale_bits, uint64_t limit,
                        uint64_t *out)
    int fkm_ring_add_streams(uint64_t *acc, fkm_index_t n, const uint8_t *keys,
                             const uint8_t *nonces, const int8_t *signs, fkm_index_t m)
    int fkm_ring_add_dgauss(uint64_t *acc, int64_t *scratch, fkm_index_t n,
                            const uint8_t *key, const uint8_t *nonces,
                            const fkm_index_t *lengths, const uint64_t *P,
                            const uint64_t *Q, fkm_index_t nseg, uint64_t limit)

RING_ELIMIT = FKM_RING_ELIMIT

cdef enum:
    K_GAUSS = 0
    K_LAPLACE = 1
    K_DGAUSS = 2
    K_DLAPLACE = 3
    K_BEXP = 4


def chacha_block(const uint32_t[::1] state):
    """The RFC 8439 block function on a 16-word input state."""
    if state.shape[0] != 16:
        raise ValueError("state must have 16 words")
    out = np.empty(16, dtype=np.uint32)
    cdef uint32_t[::1] ov = out
    fkm_chacha_block(&ov[0], &state[0])
    return out



def chacha_first_blocks(const uint8_t[:, ::1] keys, const uint8_t[::1] nonce, uint32_t nb):
    """Blocks 0 .. nb-1 of the keystreams of ``keys`` (k, 32) with one 12-byte
    ``nonce``: row j holds the 8 * nb little-endian 64-bit words of key j
    (fkm_chacha_first_blocks; for tests)."""
    if keys.shape[1] != 32 or nonce.shape[0] != 12 or nb < 1:
        raise ValueError("keys must be (k, 32), nonce 12 bytes, nb >= 1")
    cdef fkm_index_t nk = keys.shape[0]
    out = np.zeros((nk, 8 * nb), dtype=np.uint64)
    cdef uint64_t[:, ::1] ov = out
    if nk > 0:
        with nogil:
            fkm_chacha_first_blocks(&keys[0, 0], nk, &nonce[0], nb, &ov[0, 0])
    return out

cdef int _run(fkm_rng_t *rng, const fkm_chacha_t *chacha, int kind, object out,
              double x, uint64_t a, uint64_t b) except -1:
    """Run sampler `kind` into `out` (float64, int64 or uint8 by kind),
    drawing from `rng`; `chacha` is the stream behind it, or NULL."""
    cdef double[::1] fv
    cdef int64_t[::1] iv
    cdef uint8_t[::1] bv
    cdef fkm_index_t n = out.shape[0]
    cdef fkm_dgauss_t G
    cdef int status = 0
    if n == 0:
        return 0
    if kind == K_GAUSS or kind == K_LAPLACE:
        fv = out
        with nogil:
            if kind == K_GAUSS:
                status = fkm_noise_gaussian(rng, &fv[0], n, x)
            else:
                status = fkm_noise_laplace(rng, &fv[0], n, x)
    elif kind == K_DGAUSS:
        check_status(fkm_dgauss_init(&G, a, b), "discrete Gaussian parameters")
        iv = out
        with nogil:
            status = fkm_noise_discrete_gaussian(rng, &iv[0], n, &G)
    elif kind == K_DLAPLACE:
        iv = out
        with nogil:
            status = fkm_noise_discrete_laplace(rng, &iv[0], n, a)
    else:
        bv = out
        with nogil:
            status = fkm_noise_bernoulli_exp(rng, &bv[0], n, a, b)
    if status == FKM_OK and chacha != NULL and chacha.failed:
        status = FKM_EOVERFLOW  # the stream ran out under the sampler
    if status == FKM_EOVERFLOW:
        from pyfkm.exceptions import CapacityError
        raise CapacityError("noise stream exhausted: a ChaCha20 stream gives at most "
                            "2^32 blocks (256 GiB); use a new (iteration, tag)")
    check_status(status, "noise sampler")
    return 0


cdef class ChaChaStream:
    """A ChaCha20 keystream (RFC 8439) feeding the samplers; successive
    calls continue the stream.  Not thread-safe (one stream per thread)."""
    cdef fkm_chacha_t st
    cdef fkm_rng_t rng

    def __cinit__(self, const uint8_t[::1] key, const uint8_t[::1] nonce,
                  uint32_t counter=0):
        if key.shape[0] != 32 or nonce.shape[0] != 12:
            raise ValueError("key must have 32 bytes and nonce 12")
        fkm_chacha_init(&self.st, &key[0], &nonce[0], counter)
        fkm_chacha_rng(&self.rng, &self.st)

    def words(self, fkm_index_t n):
        """The next n keystream words (little-endian 8-byte chunks)."""
        out = np.empty(n, dtype=np.uint64)
        cdef uint64_t[::1] ov = out
        cdef int status = 0
        if n > 0:
            with nogil:
                status = fkm_chacha_words(&self.st, &ov[0], n)
        if status == FKM_EOVERFLOW:
            from pyfkm.exceptions import CapacityError
            raise CapacityError("ChaCha20 stream exhausted (2^32 blocks)")
        return out

    def sample(self, int kind, out, double x=0.0, uint64_t a=0, uint64_t b=0):
        """Fill `out` with sampler `kind` (0 gaussian, 1 laplace, 2 discrete
        Gaussian P/Q = a/b, 3 discrete Laplace t = a, 4 Bernoulli(exp(-a/b)))."""
        _run(&self.rng, &self.st, kind, out, x, a, b)
        return out


def sample_generator(generator, int kind, out, double x=0.0, uint64_t a=0,
                     uint64_t b=0):
    """As ChaChaStream.sample, drawing from a numpy Generator (holds its lock)."""
    cdef bitgen_t *bg = bitgen_of(generator)
    cdef fkm_rng_t rng
    rng_from_bitgen(&rng, bg)
    with generator.bit_generator.lock:
        _run(&rng, NULL, kind, out, x, a, b)
    return out


# ------------------------------------------------------------------ ring words

def ring_encode(const double[::1] x, int scale_bits, uint64_t limit):
    """``(status, words)``: fkm_ring_encode of ``x`` (status 0: ``words``, a
    new uint64 array; else the fkm status, the caller raises)."""
    cdef fkm_index_t n = x.shape[0]
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] ov = out
    cdef int status = 0
    with nogil:
        status = fkm_ring_encode(&x[0] if n else NULL, n, scale_bits, limit,
                                 &ov[0] if n else NULL)
    return status, out


def ring_add_streams(uint64_t[::1] acc, const uint8_t[::1] keys, const uint8_t[::1] nonces,
                     const int8_t[::1] signs):
    """acc += sum_j signs[j] * keystream(key j, nonce j) modulo 2^64, in place
    (keys: 32 bytes per stream, nonces 12; fkm_ring_add_streams)."""
    cdef fkm_index_t m = signs.shape[0]
    cdef fkm_index_t n = acc.shape[0]
    if keys.shape[0] != 32 * m or nonces.shape[0] != 12 * m:
        raise ValueError("keys must hold 32 bytes and nonces 12 per sign")
    cdef int status = 0
    if m == 0 or n == 0:
        return
    with nogil:
        status = fkm_ring_add_streams(&acc[0], n, &keys[0], &nonces[0], &signs[0], m)
    check_status(status, "ring streams")


def ring_add_dgauss(uint64_t[::1] acc, const uint8_t[::1] key, const uint8_t[::1] nonces,
                    const fkm_index_t[::1] lengths, const uint64_t[::1] P,
                    const uint64_t[::1] Q, uint64_t limit):
    """acc += the discrete Gaussian segments (fkm_ring_add_dgauss), in place;
    returns the fkm status (0, or the code the caller raises for; acc is then
    unchanged)."""
    cdef fkm_index_t nseg = lengths.shape[0]
    cdef fkm_index_t n = acc.shape[0]
    if key.shape[0] != 32 or nonces.shape[0] != 12 * nseg or P.shape[0] != nseg \
            or Q.shape[0] != nseg:
        raise ValueError("key must be 32 bytes, nonces 12 per segment, P and Q one each")
    scratch = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] sv = scratch
    cdef int status = 0
    if nseg == 0:
        return 0 if n == 0 else 2
    with nogil:
        status = fkm_ring_add_dgauss(&acc[0] if n else NULL, &sv[0] if n else NULL, n,
                                     &key[0], &nonces[0], &lengths[0], &P[0], &Q[0], nseg,
                                     limit)
    return status
