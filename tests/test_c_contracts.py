"""Contracts of the C layer (issue 20, "C hygiene").

* The source layout: one header per C file, every status code in
  ``csrc/fkm_common.h`` and mapped by ``check_status``, every ``cdef extern``
  block of ``_csrc.pxd`` naming the header that declares its functions.
  These read the sources, so they are skipped outside a source checkout.
* Berlekamp-Massey as an object that takes more terms
  (``pyfkm._core._field.BerlekampMassey``, csrc/fkm_bm.h): chunked feeding
  equals the one-shot kernel, both equal a plain Python Berlekamp-Massey
  written below (Massey 1969, the textbook iteration on Python ints), and
  the errors and edge cases of the contract.
* Debug builds (``DEBUG=1``): FKM_ASSERT is live and stops the process on a
  violated precondition.

Error tests come first.  Random cases use seeds 0..N-1 and pass for any seed.
"""
import math
import pathlib
import threading

import numpy as np
import pytest

from pyfkm._core import _field
from pyfkm._core._field import BerlekampMassey
from pyfkm.exceptions import FieldError, PyfkmError

ROOT = pathlib.Path(__file__).resolve().parents[1]
CSRC = ROOT / "csrc"
CORE = ROOT / "pyfkm" / "_core"
needs_sources = pytest.mark.skipif(
    not (CSRC / "fkm_common.h").exists() or not (CORE / "_csrc.pxd").exists(),
    reason="needs the C sources of a checkout")

P61 = 2 ** 61 - 1            # a 61-bit (Mersenne) prime
PRIMES = [2, 3, 101, P61, _field.prev_prime(2 ** 63)]


# --------------------------------------------------------------------------- oracle

def bm_oracle(s, p):
    """Massey's iteration on Python ints: the connection polynomial
    [1, c_1, ..., c_L] of a shortest recurrence generating s over F_p."""
    C, B = [1], [1]
    L, m, b = 0, 1, 1
    for n, sn in enumerate(s):
        d = (sn + sum(C[i] * s[n - i] for i in range(1, min(len(C), n + 1)))) % p
        if d == 0:
            m += 1
            continue
        coef = d * pow(b, p - 2, p) % p
        T = list(C)
        C = C + [0] * max(0, len(B) + m - len(C))
        for i, bi in enumerate(B):
            C[i + m] = (C[i + m] - coef * bi) % p
        if 2 * L <= n:
            L, B, b, m = n + 1 - L, T, d, 1
        else:
            m += 1
    assert not any(C[L + 1:]), "deg C <= L"
    return (C + [0] * (L + 1))[:L + 1]


def generates(C, s, p):
    """C = [1, c_1, ..., c_L] generates s: s_n + sum c_i s_{n-i} = 0 for n >= L."""
    L = len(C) - 1
    return all(sum(C[i] * s[n - i] for i in range(L + 1)) % p == 0 for n in range(L, len(s)))


def recurrent(rng, p, L, n):
    """n terms of a random linear recurrence of order L (random taps with
    c_L != 0, random initial terms)."""
    c = [int(v) for v in rng.integers(0, p, size=L, dtype=np.uint64)]
    if L:
        c[-1] = c[-1] or 1
    s = [int(v) for v in rng.integers(0, p, size=min(L, n), dtype=np.uint64)]
    while len(s) < n:
        s.append(-sum(c[i] * s[-1 - i] for i in range(L)) % p)
    return s


def chunked(s, p, rng):
    """BerlekampMassey fed s in chunks of random sizes (empty chunks included)."""
    bm = BerlekampMassey(p, capacity=int(rng.integers(0, 4)))
    i = 0
    while i < len(s):
        k = int(rng.integers(0, 9))
        bm.add(np.array(s[i:i + k], dtype=np.uint64))
        i += k
    return bm


def as_u64(s):
    return np.array(s, dtype=np.uint64)


# --------------------------------------------------------------------------- errors first

@pytest.mark.parametrize("p", [0, 1, 4, 100, 2 ** 63, 2 ** 63 + 29, 2 ** 64 - 59, -7])
def test_bm_rejects_a_bad_modulus(p):
    with pytest.raises(FieldError, match="prime below 2\\*\\*63"):
        BerlekampMassey(p)


@pytest.mark.parametrize("p, capacity", [(13.0, 0), ("13", 0), (13, -1), (13, 1.5)])
def test_bm_rejects_bad_argument_types(p, capacity):
    with pytest.raises(FieldError):
        BerlekampMassey(p, capacity)


@pytest.mark.parametrize("terms", [[13], [0, 1, 14], [-1], [2 ** 64], [1.0, 2.0],
                                   np.array([1, 2], dtype=np.float64), [[1, 2]],
                                   np.array([True])])
def test_bm_rejects_bad_terms_and_consumes_nothing(terms):
    bm = BerlekampMassey(13).add([1, 1, 2])
    before = (bm.n_terms, bm.length, bm.connection().tolist())
    with pytest.raises(FieldError):
        bm.add(terms)
    assert (bm.n_terms, bm.length, bm.connection().tolist()) == before
    # the object still works, and FieldError is a PyfkmError and a ValueError
    assert bm.add([3, 5]).connection().tolist() == bm_oracle([1, 1, 2, 3, 5], 13)
    assert issubclass(FieldError, PyfkmError) and issubclass(FieldError, ValueError)


def test_one_shot_rejects_a_term_not_reduced():
    # the kernel checks what the Python layer (pyfkm.field) already validated
    with pytest.raises(FieldError):
        _field.berlekamp_massey(as_u64([1, 13, 2]), 13)


def test_bm_is_not_picklable():
    import pickle
    with pytest.raises(TypeError):
        pickle.dumps(BerlekampMassey(13))


# --------------------------------------------------------------------------- edge cases

@pytest.mark.parametrize("p", PRIMES)
def test_bm_edge_cases(p):
    bm = BerlekampMassey(p)
    assert (bm.n_terms, bm.length, bm.connection().tolist()) == (0, 0, [1])
    assert bm.add([]).n_terms == 0                        # empty chunk: nothing
    bm.add(np.zeros(7, dtype=np.uint64))                  # all zeros: C = 1
    assert (bm.n_terms, bm.length, bm.connection().tolist()) == (7, 0, [1])
    bm.add([1])                                           # first nonzero at n = 7
    assert bm.length == 8 and bm.connection().tolist() == bm_oracle([0] * 7 + [1], p)
    one = BerlekampMassey(p).add([p - 1])                 # one term a: C = 1 - a x
    assert one.length == 1 and one.connection().tolist() == [1, 1]
    assert _field.berlekamp_massey(as_u64([]), p).tolist() == [1]
    assert _field.berlekamp_massey(as_u64([0, 0, 0]), p).tolist() == [1]
    assert _field.berlekamp_massey(as_u64([p - 1]), p).tolist() == [1, 1]


def test_bm_hand_computed():
    # Fibonacci mod 13: s_n = s_{n-1} + s_{n-2}, C = 1 - x - x^2
    bm = BerlekampMassey(13).add([1, 1]).add([2, 3, 5, 8])
    assert (bm.length, bm.connection().tolist()) == (2, [1, 12, 12])
    # geometric 3^i mod 13: C = 1 - 3x
    assert BerlekampMassey(13).add([pow(3, i, 13) for i in range(8)]).connection().tolist() == [1, 10]
    # over F_2 the sequence 1, 1, 1, 1: C = 1 + x
    assert BerlekampMassey(2).add([1, 1, 1, 1]).connection().tolist() == [1, 1]


def test_bm_accepts_integer_arrays_and_lists_alike():
    s = [3, 1, 4, 1, 5, 9, 2, 6]
    want = BerlekampMassey(101).add(as_u64(s)).connection().tolist()
    for form in (s, np.array(s, dtype=np.int64), np.array(s, dtype=np.uint8),
                 np.array(s, dtype=object), tuple(s), np.array(s, dtype=np.int32)[::1]):
        assert BerlekampMassey(101).add(form).connection().tolist() == want


# --------------------------------------------------------------------------- against the oracle

@pytest.mark.parametrize("p", [2, 3, 101, P61])
@pytest.mark.parametrize("seed", range(12))
def test_bm_random_recurrences_match_the_oracle(p, seed):
    rng = np.random.default_rng(seed)
    L = int(rng.integers(0, 25))
    s = recurrent(rng, p, L, 2 * L + int(rng.integers(0, 10)))
    want = bm_oracle(s, p)
    assert len(want) - 1 <= L and generates(want, s, p)
    if p == P61:
        assert len(want) - 1 == L    # random initial terms: full order, w.h.p.
    assert _field.berlekamp_massey(as_u64(s), p).tolist() == want
    bm = chunked(s, p, rng)
    assert (bm.n_terms, bm.length) == (len(s), len(want) - 1)
    assert bm.connection().tolist() == want


@pytest.mark.parametrize("p", [2, 3, 101, P61])
@pytest.mark.parametrize("seed", range(12))
def test_bm_random_sequences_match_the_oracle(p, seed):
    rng = np.random.default_rng(100 + seed)
    s = [int(v) for v in rng.integers(0, p, size=int(rng.integers(0, 60)), dtype=np.uint64)]
    if seed % 3 == 0 and s:
        s[:len(s) // 2] = [0] * (len(s) // 2)   # a run of zeros first
    want = bm_oracle(s, p)
    assert generates(want, s, p)
    assert _field.berlekamp_massey(as_u64(s), p).tolist() == want
    # chunked, and the result after every prefix
    bm = BerlekampMassey(p)
    for n in range(len(s)):
        bm.add(s[n:n + 1])
        assert bm.connection().tolist() == bm_oracle(s[:n + 1], p)
    assert chunked(s, p, rng).connection().tolist() == want


@pytest.mark.parametrize("seed", range(4))
def test_bm_long_chunked_equals_one_shot(seed):
    """Syndromes of a sparse vector (the decoder's input), fed in uneven
    chunks, against the one-shot kernel (large enough for the NTT prime)."""
    p = _field.prev_prime(2 ** 62)
    rng = np.random.default_rng(seed)
    m = 300
    x = rng.integers(1, p, size=m, dtype=np.uint64)
    q = rng.integers(1, 50, size=(1, m), dtype=np.uint64)
    S = _field.power_sums(x, q, 2 * m, p)[0]
    one = _field.berlekamp_massey(S, p)
    assert one.size == m + 1
    bm = BerlekampMassey(p)
    cuts = np.sort(rng.integers(0, 2 * m, size=20))
    for a, b in zip(np.r_[0, cuts], np.r_[cuts, 2 * m]):
        bm.add(S[a:b])
    assert bm.length == m
    np.testing.assert_array_equal(bm.connection(), one)
    # more terms of the same sequence do not change a settled result
    bm.add(_field.power_sums(x, q, 2 * m + 10, p)[0][2 * m:])
    np.testing.assert_array_equal(bm.connection(), one)


def test_bm_objects_run_in_threads():
    p = P61
    rng = np.random.default_rng(7)
    seqs = [recurrent(rng, p, 40, 200) for _ in range(4)]
    want = [bm_oracle(s, p) for s in seqs]
    got = [None] * 4

    def work(i):
        bm = BerlekampMassey(p)
        for k in range(0, 200, 13):
            bm.add(seqs[i][k:k + 13])
        got[i] = bm.connection().tolist()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want


# --------------------------------------------------------------------------- one generator interface

def _laplace_from_words(words, scale):
    """fkm_noise_laplace on given 64-bit words (u = ((w >> 11) + 1) 2^-53,
    e = -scale log u, sign bit w & 1), with the C library's log (math.log;
    numpy's vectorized log may differ in the last bit)."""
    out = []
    for w in (int(v) for v in words):
        e = -scale * math.log(((w >> 11) + 1) * 2.0 ** -53)
        out.append(-e if w & 1 else e)
    return np.array(out)


@pytest.mark.parametrize("counter, n", [(0, 1), (0, 64), (3, 65), (9, 1000)])
def test_chacha_generator_draws_the_keystream_in_order(counter, n):
    """The ChaCha20 stream behind the samplers (fkm_chacha_rng) gives its
    keystream words in order, across refills: Laplace samples are the
    formula applied to ChaChaStream.words of a twin stream."""
    from pyfkm._core import _noise
    key = np.arange(32, dtype=np.uint8)
    nonce = np.arange(12, dtype=np.uint8)
    a = _noise.ChaChaStream(key, nonce, counter)
    b = _noise.ChaChaStream(key, nonce, counter)
    for m in (n, 5):          # a second call continues the stream
        got = a.sample(1, np.empty(m), 0.75)
        np.testing.assert_array_equal(got, _laplace_from_words(b.words(m), 0.75))


@pytest.mark.parametrize("seed", range(3))
def test_numpy_generator_draws_its_raw_words(seed):
    from pyfkm._core import _noise
    got = _noise.sample_generator(np.random.Generator(np.random.PCG64(seed)), 1,
                                  np.empty(300), 2.0)
    raw = np.random.PCG64(seed).random_raw(300)
    np.testing.assert_array_equal(got, _laplace_from_words(raw, 2.0))


def test_chacha_running_out_inside_a_sampler_raises():
    from pyfkm._core import _noise
    from pyfkm.exceptions import CapacityError
    # 8 blocks (64 words) left before the counter would wrap
    st = _noise.ChaChaStream(np.zeros(32, np.uint8), np.zeros(12, np.uint8), 2 ** 32 - 8)
    st.sample(1, np.empty(64), 1.0)            # exactly the last words: fine
    with pytest.raises(CapacityError):
        st.sample(1, np.empty(1), 1.0)
    st = _noise.ChaChaStream(np.zeros(32, np.uint8), np.zeros(12, np.uint8), 2 ** 32 - 8)
    with pytest.raises(CapacityError):
        st.sample(0, np.empty(100), 1.0)       # runs out in the middle of the call
