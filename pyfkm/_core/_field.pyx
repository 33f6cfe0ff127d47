# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython wrappers of csrc/fkm_field.c, fkm_poly.c, fkm_bm.c, fkm_polyfac.c,
fkm_vdm.c, fkm_scma.c, fkm_stream.c and fkm_bigmod.c.

Callers (pyfkm.field) validate: the modulus is a prime below 2**63, arrays
are C-contiguous uint64 with entries reduced mod p, polynomials normalized
where stated.  These wrappers only protect memory and map status codes.
"""
import operator
import threading

import numpy as np

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.pyport cimport PY_SSIZE_T_MAX
from numpy.random cimport bitgen_t
from pyfkm._core._csrc cimport (
    fkm_rng_t, FKM_OK, FKM_EDOM, fkm_debug_build, fkm_field_t, fkm_field_init, fkm_is_prime,
    fkm_prev_prime, fkm_addmod, fkm_submod, fkm_negmod, fkm_mulmod,
    fkm_powmod, fkm_invmod, fkm_pctx_t, fkm_pctx_init, fkm_pctx_clear,
    fkm_poly_t, fkm_poly_init, fkm_poly_clear, fkm_faclist_t, fkm_vdm_t,
    fkm_poly_mul, fkm_poly_divrem, fkm_poly_gcd, fkm_poly_xgcd,
    fkm_poly_gcd_classical, fkm_poly_gcd_hgcd, fkm_berlekamp_massey_cut,
    fkm_poly_powmod, fkm_poly_derivative, fkm_poly_eval, fkm_poly_eval_multi,
    fkm_berlekamp_massey, fkm_bm_t, fkm_bm_init, fkm_bm_clear, fkm_bm_add,
    fkm_bm_result, fkm_bm_length, fkm_bm_nterms, fkm_poly_roots, fkm_poly_sqf, fkm_poly_factor,
    fkm_vdm_init, fkm_vdm_clear, fkm_vdm_solve, fkm_scma_power_sums,
    fkm_scma_affine_rows,
    fkm_stream_accumulate, fkm_streams_accumulate, FKM_STREAMS_MAX_N, fkm_chacha_t,
    fkm_chacha_init, fkm_chacha_words, fkm_chacha_block, fkm_chacha_first_blocks,
    FKM_P256_BYTES, FKM_P256_MAX_TERMS, fkm_p256_dots, fkm_p256_eval)
from pyfkm._core._common cimport check_status, bitgen_of, rng_from_bitgen

from pyfkm.exceptions import FieldError


cdef int _check(int status, str where) except -1:
    """check_status, with FKM_EDOM as a FieldError (a field argument)."""
    if status == FKM_EDOM:
        raise FieldError(f"{where}: argument outside the kernel's domain")
    return check_status(status, where)


cdef fkm_field_t _field(uint64_t p) except *:
    cdef fkm_field_t F
    if fkm_field_init(&F, p) != FKM_OK:
        raise FieldError(f"modulus {p} outside [2, 2**63)")
    return F


cdef class _Ctx:
    """Owns an fkm_pctx_t (NTT tables grow on demand)."""
    cdef fkm_pctx_t c

    def __cinit__(self, uint64_t p):
        _check(fkm_pctx_init(&self.c, p), "field")

    def __dealloc__(self):
        fkm_pctx_clear(&self.c)


cdef object _poly_out(fkm_poly_t *P):
    out = np.empty(P.len, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef int64_t i
    for i in range(P.len):
        o[i] = P.c[i]
    return out


cdef inline const uint64_t *_ptr(const uint64_t[::1] a) noexcept nogil:
    if a.shape[0] == 0:
        return NULL
    return &a[0]


def debug_build():
    """True when the C library was built with DEBUG=1 (FKM_DEBUG): its
    FKM_ASSERT preconditions are live and abort the process when violated."""
    return bool(fkm_debug_build())


def is_prime(uint64_t n):
    return bool(fkm_is_prime(n))


def prev_prime(uint64_t n):
    """Largest prime below n; n = 0 stands for 2**64."""
    return int(fkm_prev_prime(n))


def elementwise(str op, const uint64_t[::1] a, const uint64_t[::1] b, uint64_t p):
    """op in {add, sub, mul, pow, neg, inv} on equal-length arrays (b unused
    for neg/inv; for pow b holds exponents)."""
    cdef fkm_field_t F = _field(p)
    cdef int64_t n = a.shape[0], i
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef int code = {"add": 0, "sub": 1, "mul": 2, "pow": 3, "neg": 4, "inv": 5}[op]
    with nogil:
        for i in range(n):
            if code == 0:
                o[i] = fkm_addmod(a[i], b[i], F)
            elif code == 1:
                o[i] = fkm_submod(a[i], b[i], F)
            elif code == 2:
                o[i] = fkm_mulmod(a[i], b[i], F)
            elif code == 3:
                o[i] = fkm_powmod(a[i], b[i], F)
            elif code == 4:
                o[i] = fkm_negmod(a[i], F)
            else:
                o[i] = fkm_invmod(a[i], F)
    return out


def mul(const uint64_t[::1] a, const uint64_t[::1] b, uint64_t p):
    """a * b for nonempty normalized a, b."""
    cdef _Ctx C = _Ctx(p)
    out = np.empty(a.shape[0] + b.shape[0] - 1, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef int st
    with nogil:
        st = fkm_poly_mul(&C.c, &a[0], a.shape[0], &b[0], b.shape[0], &o[0])
    _check(st, "poly_mul")
    return out


def divrem(const uint64_t[::1] a, const uint64_t[::1] b, uint64_t p):
    """(q, r) for normalized a, b with len(a) >= len(b) >= 1."""
    cdef _Ctx C = _Ctx(p)
    cdef int64_t la = a.shape[0], lb = b.shape[0]
    q = np.empty(la - lb + 1, dtype=np.uint64)
    r = np.empty(lb - 1, dtype=np.uint64)
    cdef uint64_t[::1] qv = q
    cdef uint64_t[::1] rv = r
    cdef uint64_t *rp = NULL
    if lb > 1:
        rp = &rv[0]
    cdef int st
    with nogil:
        st = fkm_poly_divrem(&C.c, &a[0], la, &b[0], lb, &qv[0], rp)
    _check(st, "poly_divmod")
    return q, r


def gcd(const uint64_t[::1] a, const uint64_t[::1] b, uint64_t p):
    cdef _Ctx C = _Ctx(p)
    cdef fkm_poly_t G
    fkm_poly_init(&G)
    cdef int st
    try:
        with nogil:
            st = fkm_poly_gcd(&C.c, _ptr(a), a.shape[0], _ptr(b), b.shape[0], &G)
        _check(st, "poly_gcd")
        return _poly_out(&G)
    finally:
        fkm_poly_clear(&G)


def gcd_path(const uint64_t[::1] a, const uint64_t[::1] b, uint64_t p, int64_t cut):
    """gcd by one path: cut < 0 classical Euclid, else the half-gcd with that
    crossover (0: the default).  For tests and benchmarks."""
    cdef _Ctx C = _Ctx(p)
    cdef fkm_poly_t G
    fkm_poly_init(&G)
    cdef int st
    try:
        with nogil:
            if cut < 0:
                st = fkm_poly_gcd_classical(&C.c, _ptr(a), a.shape[0], _ptr(b),
                                            b.shape[0], &G)
            else:
                st = fkm_poly_gcd_hgcd(&C.c, _ptr(a), a.shape[0], _ptr(b), b.shape[0],
                                       &G, cut)
        _check(st, "poly_gcd")
        return _poly_out(&G)
    finally:
        fkm_poly_clear(&G)


def xgcd(const uint64_t[::1] a, const uint64_t[::1] b, uint64_t p):
    cdef _Ctx C = _Ctx(p)
    cdef fkm_poly_t G, S, T
    fkm_poly_init(&G)
    fkm_poly_init(&S)
    fkm_poly_init(&T)
    cdef int st
    try:
        with nogil:
            st = fkm_poly_xgcd(&C.c, _ptr(a), a.shape[0], _ptr(b), b.shape[0],
                               &G, &S, &T)
        _check(st, "poly_xgcd")
        return _poly_out(&G), _poly_out(&S), _poly_out(&T)
    finally:
        fkm_poly_clear(&G)
        fkm_poly_clear(&S)
        fkm_poly_clear(&T)


def powmod(const uint64_t[::1] base, const uint64_t[::1] e,
           const uint64_t[::1] f, uint64_t p):
    """base**e mod f (e as little-endian limbs, f normalized, len(f) >= 2)."""
    cdef _Ctx C = _Ctx(p)
    out = np.empty(f.shape[0] - 1, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef int st
    with nogil:
        st = fkm_poly_powmod(&C.c, _ptr(base), base.shape[0], _ptr(e), e.shape[0],
                             &f[0], f.shape[0], &o[0])
    _check(st, "poly_powmod")
    return out


def derivative(const uint64_t[::1] a, uint64_t p):
    cdef fkm_field_t F = _field(p)
    cdef int64_t n = a.shape[0]
    out = np.empty(n - 1 if n > 1 else 0, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    if n > 1:
        with nogil:
            fkm_poly_derivative(&a[0], n, &o[0], F)
    return out


def evaluate(const uint64_t[::1] a, uint64_t x, uint64_t p):
    cdef fkm_field_t F = _field(p)
    return int(fkm_poly_eval(_ptr(a), a.shape[0], x, F))


def evaluate_many(const uint64_t[::1] a, const uint64_t[::1] x, uint64_t p):
    cdef _Ctx C = _Ctx(p)
    out = np.empty(x.shape[0], dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef int st = FKM_OK
    if x.shape[0] == 0:
        return out
    with nogil:
        st = fkm_poly_eval_multi(&C.c, _ptr(a), a.shape[0], &x[0], x.shape[0], &o[0])
    _check(st, "poly_eval")
    return out


def berlekamp_massey(const uint64_t[::1] s, uint64_t p):
    cdef fkm_field_t F = _field(p)
    cdef int64_t N = s.shape[0], lc = 0
    out = np.empty(N + 1, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef int st
    with nogil:
        st = fkm_berlekamp_massey(F, _ptr(s), N, &o[0], &lc)
    _check(st, "berlekamp_massey")
    return out[:lc].copy()


def berlekamp_massey_path(const uint64_t[::1] s, uint64_t p, int64_t cut):
    """berlekamp_massey with the half-gcd crossover given (cut < 0: Massey's
    iteration only; 0: the default; else the Pade form from N >= cut, with
    the half-gcd's base case at cut).  For tests and benchmarks."""
    cdef fkm_field_t F = _field(p)
    cdef int64_t N = s.shape[0], lc = 0
    out = np.empty(N + 1, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef int st
    with nogil:
        if cut < 0:
            st = fkm_berlekamp_massey_cut(F, _ptr(s), N, &o[0], &lc, N + 1)
        else:
            st = fkm_berlekamp_massey_cut(F, _ptr(s), N, &o[0], &lc, cut)
    _check(st, "berlekamp_massey")
    return out[:lc].copy()


cdef class BerlekampMassey:
    """Berlekamp-Massey over F_p that takes more terms (csrc/fkm_bm.h).

    ``add(terms)`` feeds the next terms of a sequence; ``connection()`` is
    the connection polynomial C (low degree first, C[0] = 1) of a shortest
    linear recurrence generating every term fed so far, ``length`` its
    linear complexity L (len(connection()) == length + 1), ``n_terms`` the
    number of terms fed.  Feeding a sequence in chunks gives exactly the
    result of :func:`berlekamp_massey` on the whole of it.

    ``p`` must be a prime below 2**63 and every term an integer in [0, p),
    else :class:`~pyfkm.exceptions.FieldError`; a failed ``add`` consumes
    nothing.  ``add`` releases the GIL; calls on one object are serialized
    by a lock.
    """
    cdef fkm_bm_t bm
    cdef bint ready
    cdef readonly uint64_t p
    cdef object _lock

    def __cinit__(self, p, capacity=0):
        self.ready = False
        try:
            p = operator.index(p)
            capacity = operator.index(capacity)
        except TypeError:
            raise FieldError(f"p and capacity must be integers, got {p!r}, {capacity!r}")
        if not 2 <= p < 2 ** 63 or not fkm_is_prime(p):
            raise FieldError(f"p must be a prime below 2**63, got {p!r}")
        if capacity < 0:
            raise FieldError(f"capacity must be >= 0, got {capacity!r}")
        cdef fkm_field_t F = _field(p)
        cdef int64_t cap = min(capacity, 2 ** 40)
        _check(fkm_bm_init(&self.bm, F, cap), "BerlekampMassey")
        self.ready = True
        self.p = p
        self._lock = threading.Lock()

    def __dealloc__(self):
        if self.ready:
            fkm_bm_clear(&self.bm)

    def add(self, terms):
        """Feed the next terms (a 1-D sequence of integers in [0, p));
        returns self."""
        a = np.asarray(terms)
        if a.ndim != 1:
            raise FieldError(f"terms must be one-dimensional, got shape {a.shape}")
        if a.size == 0:
            return self
        if a.dtype == object:
            if not all(isinstance(v, (int, np.integer)) and 0 <= v < self.p for v in a):
                raise FieldError(f"terms must be integers in [0, {self.p})")
            a = a.astype(np.uint64)
        elif a.dtype.kind == "i":
            if a.min() < 0:
                raise FieldError(f"terms must be integers in [0, {self.p})")
            a = a.astype(np.uint64)
        elif a.dtype.kind != "u":
            raise FieldError(f"terms must be integers, got dtype {a.dtype}")
        cdef const uint64_t[::1] t = np.ascontiguousarray(a, dtype=np.uint64)
        cdef int st
        with self._lock, nogil:
            st = fkm_bm_add(&self.bm, &t[0], t.shape[0])
        if st == FKM_EDOM:
            raise FieldError(f"terms must be integers in [0, {self.p})")
        _check(st, "BerlekampMassey.add")
        return self

    def connection(self):
        """The connection polynomial (uint64, length + 1 coefficients)."""
        cdef uint64_t[::1] o
        with self._lock:
            out = np.empty(fkm_bm_length(&self.bm) + 1, dtype=np.uint64)
            o = out
            fkm_bm_result(&self.bm, &o[0])
        return out

    @property
    def length(self):
        """The linear complexity L of the terms fed so far."""
        return int(fkm_bm_length(&self.bm))

    @property
    def n_terms(self):
        """The number of terms fed so far."""
        return int(fkm_bm_nterms(&self.bm))

    def __repr__(self):
        return f"BerlekampMassey(p={self.p}, n_terms={self.n_terms}, length={self.length})"


def roots(const uint64_t[::1] f, uint64_t p, bint require_split, object generator):
    """Unsorted distinct roots and multiplicities of a normalized nonzero f."""
    cdef _Ctx C = _Ctx(p)
    cdef int64_t n = f.shape[0] - 1, nr = 0
    r = np.empty(max(n, 1), dtype=np.uint64)
    mu = np.empty(max(n, 1), dtype=np.int64)
    cdef uint64_t[::1] rv = r
    cdef int64_t[::1] mv = mu
    cdef fkm_rng_t rng
    cdef bitgen_t *bg = bitgen_of(generator)
    cdef int st
    with generator.bit_generator.lock, nogil:
        rng_from_bitgen(&rng, bg)
        st = fkm_poly_roots(&C.c, &f[0], f.shape[0], require_split, &rng,
                            &rv[0], &mv[0], &nr)
    _check(st, "roots")
    return r[:nr].copy(), mu[:nr].copy()


cdef object _faclist(const uint64_t[::1] f, uint64_t p, object generator, bint full):
    cdef _Ctx C = _Ctx(p)
    cdef int64_t n = f.shape[0] - 1
    coef = np.empty(2 * n + 2, dtype=np.uint64)
    off = np.empty(n + 2, dtype=np.int64)
    exps = np.empty(n + 1, dtype=np.int64)
    cdef uint64_t[::1] cv = coef
    cdef int64_t[::1] ov = off
    cdef int64_t[::1] ev = exps
    cdef fkm_faclist_t L
    L.coef = &cv[0]
    L.off = &ov[0]
    L.exps = &ev[0]
    L.nf = 0
    cdef fkm_rng_t rng
    cdef bitgen_t *bg
    cdef int st
    if full:
        bg = bitgen_of(generator)
        with generator.bit_generator.lock, nogil:
            rng_from_bitgen(&rng, bg)
            st = fkm_poly_factor(&C.c, &f[0], f.shape[0], &rng, &L)
        _check(st, "factor")
    else:
        with nogil:
            st = fkm_poly_sqf(&C.c, &f[0], f.shape[0], &L)
        _check(st, "squarefree_factorization")
    return [(coef[off[i]:off[i + 1]].copy(), int(exps[i])) for i in range(L.nf)]


def factor(const uint64_t[::1] f, uint64_t p, object generator):
    """Unsorted (monic irreducible factor, exponent) list of a monic f, deg >= 1."""
    return _faclist(f, p, generator, True)


def squarefree(const uint64_t[::1] f, uint64_t p):
    """(monic squarefree factor, multiplicity) list of a monic f, deg >= 1."""
    return _faclist(f, p, None, False)


cdef class Vandermonde:
    """Shared precomputation of the transposed Vandermonde solve."""
    cdef fkm_pctx_t c
    cdef fkm_vdm_t V
    cdef bint ready
    cdef readonly int64_t m

    def __cinit__(self, const uint64_t[::1] nodes, uint64_t p):
        self.ready = False
        _check(fkm_pctx_init(&self.c, p), "vandermonde")
        self.m = nodes.shape[0]
        cdef int st
        with nogil:
            st = fkm_vdm_init(&self.V, &self.c, &nodes[0], self.m)
        _check(st, "vandermonde_solve")
        self.ready = True

    def __dealloc__(self):
        if self.ready:
            fkm_vdm_clear(&self.V)
        fkm_pctx_clear(&self.c)

    def solve(self, const uint64_t[:, ::1] rhs):
        """rhs of shape (r, m) (one system per row) -> c of shape (r, m)."""
        cdef int64_t r = rhs.shape[0], i
        out = np.empty((r, self.m), dtype=np.uint64)
        cdef uint64_t[:, ::1] o = out
        cdef int st = FKM_OK
        with nogil:
            for i in range(r):
                st = fkm_vdm_solve(&self.V, &self.c, &rhs[i, 0], &o[i, 0])
                if st != FKM_OK:
                    break
        _check(st, "vandermonde_solve")
        return out


def power_sums(const uint64_t[::1] x, const uint64_t[:, ::1] w, int64_t n, uint64_t p):
    """out[t, i] = sum_j w[t, j] x[j]**i for i < n (x, w reduced; w shape (r, k))."""
    cdef fkm_field_t F = _field(p)
    cdef int64_t k = x.shape[0], r = w.shape[0]
    if w.shape[1] != k:
        raise ValueError("w must have shape (r, len(x))")
    out = np.zeros((r, n), dtype=np.uint64)
    cdef uint64_t[:, ::1] o = out
    cdef int st = FKM_OK
    if r == 0 or n == 0:
        return out
    with nogil:
        st = fkm_scma_power_sums(F, _ptr(x), k, &w[0, 0] if k > 0 else NULL, r, n, &o[0, 0])
    _check(st, "power_sums")
    return out


def affine_rows(const uint64_t[:, ::1] a, const uint64_t[::1] coef, uint64_t c0, uint64_t p):
    """c0 + a @ coef mod p, row by row (a any uint64, coef and c0 reduced)."""
    cdef fkm_field_t F = _field(p)
    cdef int64_t n = a.shape[0], d = a.shape[1]
    if coef.shape[0] != d:
        raise ValueError("coef must have length a.shape[1]")
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    if n == 0:
        return out
    with nogil:
        fkm_scma_affine_rows(F, &a[0, 0] if d > 0 else NULL, n, d, _ptr(coef), c0, &o[0])
    return out


def stream_accumulate(const unsigned char[::1] stream, uint64_t lim, bint negate,
                      uint64_t[::1] acc, int64_t filled, uint64_t p):
    """Rejection-map little-endian 64-bit words of ``stream`` to F_p and add
    (subtract) them into acc[filled:]; returns the new fill count."""
    cdef fkm_field_t F = _field(p)
    cdef int64_t nw = stream.shape[0] // 8
    cdef int64_t n = acc.shape[0]
    if nw == 0 or n == 0:
        return filled
    with nogil:
        filled = fkm_stream_accumulate(F, <const uint64_t *> &stream[0], nw, lim, negate,
                                       &acc[0], n, filled)
    return filled


def add_inplace(uint64_t[::1] acc, const uint64_t[::1] x, uint64_t p):
    """acc <- (acc + x) mod p elementwise (entries reduced, equal lengths)."""
    cdef int64_t n = acc.shape[0], i
    cdef uint64_t s, t
    if x.shape[0] != n:
        raise ValueError("length mismatch")
    with nogil:
        for i in range(n):
            # branch-free: s - p wraps above s exactly when s < p
            s = acc[i] + x[i]
            t = s - p
            acc[i] = t if t < s else s


cdef int _add_streams(fkm_field_t F, uint64_t *acc, int64_t n, const uint8_t *keys,
                      int64_t nk, const uint8_t *negate, const uint8_t *nonce, uint64_t lim,
                      uint64_t *first, int64_t *nfilled, uint32_t nb) noexcept nogil:
    """The body of add_streams for one accumulator and nonce; ``first`` holds
    room for nk * nb blocks and ``nfilled`` for nk counts when nb > 0 (short
    streams: n <= FKM_STREAMS_MAX_N)."""
    cdef int64_t j, filled, c
    cdef fkm_chacha_t st
    cdef uint64_t buf[512]
    cdef uint32_t blk[16]
    cdef int status = FKM_OK
    if nb > 0:
        # the first blocks of every stream, all keys' words summed at once
        fkm_chacha_first_blocks(keys, nk, nonce, nb, first)
        fkm_streams_accumulate(F, first, nk, nb * 8, lim, negate, acc, n, nfilled)
    for j in range(nk):
        filled = 0
        if nb > 0:
            filled = nfilled[j]
            # rejections took more than the first blocks gave (rare):
            # the next blocks of the same stream, one at a time
            if filled < n:
                fkm_chacha_init(&st, keys + 32 * j, nonce, nb)
            while filled < n:
                fkm_chacha_block(blk, st.input)
                st.input[12] += 1
                for c in range(8):
                    buf[c] = (<uint64_t> blk[2 * c]) | ((<uint64_t> blk[2 * c + 1]) << 32)
                filled = fkm_stream_accumulate(F, buf, 8, lim, negate[j], acc, n, filled)
            continue
        fkm_chacha_init(&st, keys + 32 * j, nonce, 0)
        while filled < n and status == FKM_OK:
            # a few spare words cover rejections; any shortfall loops
            c = n - filled + (n - filled) // 32 + 8
            if c > 512:
                c = 512
            status = fkm_chacha_words(&st, buf, c)
            filled = fkm_stream_accumulate(F, buf, c, lim, negate[j], acc, n, filled)
        if status != FKM_OK:
            break
    return status


def add_streams(uint64_t[::1] acc, const uint8_t[:, ::1] keys, const uint8_t[::1] negate,
                const uint8_t[::1] nonce, uint64_t lim, uint64_t p):
    """acc <- acc + sum_j (-1)**negate[j] * stream_j mod p, in place, where
    stream_j is the ChaCha20 keystream of key ``keys[j]`` (32 bytes) and the
    12-byte ``nonce`` from block 0, read as 64-bit words and rejection-mapped
    to F_p exactly as :func:`stream_accumulate` does (keep w < lim, 0 meaning
    2**64).  One call for all of a client's pair streams; short streams
    (<= 64 words) start with their first blocks computed for 8 keys at a
    time."""
    if nonce.shape[0] != 12:
        raise ValueError("nonce must be 12 bytes")
    add_streams_rounds(np.asarray(acc).reshape(1, acc.shape[0]), keys, negate,
                       np.asarray(nonce).reshape(1, 12), lim, p)
    return acc.base


def add_streams_rounds(uint64_t[:, ::1] acc, const uint8_t[:, ::1] keys,
                       const uint8_t[::1] negate, const uint8_t[:, ::1] nonces, uint64_t lim,
                       uint64_t p):
    """:func:`add_streams` for several nonces at once: row r of ``acc``
    (R, n) gets the streams of nonce ``nonces[r]`` (R, 12) -- the masks of
    R rounds in one call."""
    cdef fkm_field_t F = _field(p)
    cdef int64_t R = acc.shape[0], n = acc.shape[1], nk = keys.shape[0], r
    cdef uint64_t *first = NULL
    cdef int64_t *nfilled = NULL
    cdef uint32_t nb = 0
    cdef int status = FKM_OK
    if keys.shape[1] != 32 or nonces.shape[1] != 12 or nonces.shape[0] != R \
            or negate.shape[0] != nk:
        raise ValueError("keys must be (k, 32), nonces (R, 12), one negate flag per key")
    if n == 0 or nk == 0 or R == 0:
        return acc.base
    if n <= FKM_STREAMS_MAX_N:
        nb = <uint32_t> ((n + 7) // 8)
        first = <uint64_t *> malloc(nk * nb * 8 * sizeof(uint64_t))
        nfilled = <int64_t *> malloc(nk * sizeof(int64_t))
        if first == NULL or nfilled == NULL:
            free(first)
            free(nfilled)
            raise MemoryError()
    with nogil:
        for r in range(R):
            status = _add_streams(F, &acc[r, 0], n, &keys[0, 0], nk, &negate[0],
                                  &nonces[r, 0], lim, first, nfilled, nb)
            if status != FKM_OK:
                break
    free(first)
    free(nfilled)
    check_status(status, "add_streams")
    return acc.base


# --------------------------------------------------------------------------------------
# the 257-bit field of the Shamir sharing (csrc/fkm_bigmod.h): P = 2**256 + 297,
# elements as 33-byte little-endian encodings


def p256_dots(weights, shares, Py_ssize_t t):
    """Dot products modulo ``P = 2**256 + 297`` of encoded elements.

    ``weights``: ``n`` ``bytes`` of ``33 t`` bytes each (``t`` encoded
    elements); ``shares``: ``n t`` ``bytes`` of 33 bytes each.  Returns
    ``bytes`` of ``33 n``: product ``g`` at ``[33 g, 33 g + 33)`` encodes
    ``sum_i weights[g][i] * shares[g t + i] mod P``.  Raises TypeError
    (not sequences of ``bytes``), ValueError (lengths, ``t`` out of
    ``[1, 2**32]``) or FieldError (an element ``>= P``, naming the first
    product that holds one)."""
    cdef tuple W = tuple(weights), S = tuple(shares)   # owned for the nogil part
    cdef Py_ssize_t n = len(W), g, k
    cdef int64_t bad = -1
    cdef int status = FKM_OK
    cdef const uint8_t **wp = NULL
    cdef const uint8_t **sp = NULL
    cdef uint8_t *op
    cdef object item
    if t < 1 or t > FKM_P256_MAX_TERMS:
        raise ValueError(f"t={t} must lie in [1, 2**32]")
    if len(S) != n * t:
        raise ValueError(f"{len(S)} shares for {n} products of {t} terms")
    out = PyBytes_FromStringAndSize(NULL, n * FKM_P256_BYTES)
    if n == 0:
        return out
    wp = <const uint8_t **> malloc(n * sizeof(uint8_t *))
    sp = <const uint8_t **> malloc(n * t * sizeof(uint8_t *))
    try:
        if wp == NULL or sp == NULL:
            raise MemoryError()
        for g in range(n):
            item = W[g]
            if type(item) is not bytes:
                raise TypeError(f"weights[{g}] must be bytes, got {type(item).__name__}")
            if len(<bytes> item) != FKM_P256_BYTES * t:
                raise ValueError(f"weights[{g}] must be {FKM_P256_BYTES * t} bytes")
            wp[g] = <const uint8_t *> PyBytes_AS_STRING(item)
        for k in range(n * t):
            item = S[k]
            if type(item) is not bytes:
                raise TypeError(f"shares[{k}] must be bytes, got {type(item).__name__}")
            if len(<bytes> item) != FKM_P256_BYTES:
                raise ValueError(f"shares[{k}] must be {FKM_P256_BYTES} bytes")
            sp[k] = <const uint8_t *> PyBytes_AS_STRING(item)
        op = <uint8_t *> PyBytes_AS_STRING(out)
        with nogil:
            status = fkm_p256_dots(n, t, wp, sp, op, &bad)
    finally:
        free(wp)
        free(sp)
    if status == FKM_EDOM and bad >= 0:
        raise FieldError(f"p256_dots: product {bad} holds an element >= P")
    _check(status, "p256_dots")
    return out


def p256_eval(const uint8_t[::1] coefs, Py_ssize_t m, const uint64_t[::1] xs):
    """Polynomials modulo ``P = 2**256 + 297`` at points.

    ``coefs``: ``m`` polynomials of ``deg1`` coefficients each (``33 m
    deg1`` bytes, encoded elements, highest degree first); ``xs``: points
    below ``2**33``.  Returns ``bytes`` of ``33 n m`` (``n = len(xs)``):
    ``[33 (i m + j), +33)`` encodes ``f_j(xs[i]) mod P``.  Raises
    ValueError (lengths, ``deg1`` out of ``[1, 2**32]``, a point
    ``>= 2**33``) or FieldError (a coefficient ``>= P``)."""
    cdef Py_ssize_t n = xs.shape[0], nb = coefs.shape[0], deg1
    cdef int64_t bad = -1
    cdef int status = FKM_OK
    # m <= nb / 33 first: then 33 m cannot overflow (a huge m whose 33 m
    # wraps to a divisor of nb would pass the test of the remainder)
    if m < 1 or m > nb // FKM_P256_BYTES or nb % (FKM_P256_BYTES * m):
        raise ValueError(f"{nb} coefficient bytes for {m} polynomials")
    deg1 = nb // (FKM_P256_BYTES * m)
    if deg1 > FKM_P256_MAX_TERMS:
        raise ValueError(f"{deg1} coefficients per polynomial, at most 2**32")
    if n and m > PY_SSIZE_T_MAX // FKM_P256_BYTES // n:
        raise MemoryError(f"{n} points x {m} polynomials: the output is too large")
    out = PyBytes_FromStringAndSize(NULL, n * m * FKM_P256_BYTES)
    cdef uint8_t *op = <uint8_t *> PyBytes_AS_STRING(out)
    cdef const uint64_t *xp = &xs[0] if n else NULL
    with nogil:
        status = fkm_p256_eval(m, deg1, &coefs[0], n, xp, op, &bad)
    if status == FKM_EDOM and bad >= 0:
        raise FieldError(f"p256_eval: polynomial {bad} has a coefficient >= P")
    if status == FKM_EDOM:
        raise ValueError("p256_eval: a point >= 2**33")
    _check(status, "p256_eval")
    return out
