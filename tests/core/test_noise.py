"""Tests of the noise samplers (csrc/fkm_chacha.c, csrc/fkm_noise.c) through
pyfkm.privacy.NoiseStream.

Oracles: the RFC 8439 test vector and the `cryptography` package's ChaCha20
for the keystream; a pure-Python polar method on that keystream for the
secure Gaussian; scipy distributions (Kolmogorov-Smirnov) and pmfs
normalised by direct summation (chi-square) for the samplers.  Every
statistical test uses a fixed seed/key and level alpha = 1e-3 (so a correct
sampler fails a given test with probability 1e-3 for a random seed; with the
fixed seeds the outcome is deterministic).
"""
import math

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from scipy import stats

from pyfkm._core import _noise
from pyfkm.exceptions import CapacityError, InvalidInputError
from pyfkm.core.noise import NoiseStream, discrete_gaussian_variance, new_noise_key

ALPHA = 1e-3
KEY = bytes(range(32))


def keystream_words(key, nonce12, counter, n):
    """n little-endian 64-bit words of the RFC 8439 keystream (cryptography)."""
    nonce16 = counter.to_bytes(4, "little") + nonce12
    enc = Cipher(algorithms.ChaCha20(key, nonce16), mode=None).encryptor()
    return np.frombuffer(enc.update(bytes(8 * n)), dtype="<u8")


def chi_square_pvalue(samples, pmf, lo, hi):
    """Chi-square GOF of integer samples against pmf on [lo, hi] (tails pooled
    into the end bins, bins with expected count < 5 merged)."""
    xs = np.arange(lo, hi + 1)
    p = pmf(xs)
    p[0] += pmf_tail(pmf, lo, -1)
    p[-1] += pmf_tail(pmf, hi, +1)
    counts = np.bincount(np.clip(samples, lo, hi) - lo, minlength=len(xs)).astype(float)
    exp = p * len(samples)
    # merge small bins greedily from both ends towards the middle
    obs_m, exp_m, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(counts, exp):
        acc_o += o
        acc_e += e
        if acc_e >= 5:
            obs_m.append(acc_o)
            exp_m.append(acc_e)
            acc_o = acc_e = 0.0
    obs_m[-1] += acc_o
    exp_m[-1] += acc_e
    return stats.chisquare(obs_m, exp_m).pvalue


def pmf_tail(pmf, edge, direction, width=2000):
    xs = edge + direction * np.arange(1, width + 1)
    return pmf(xs).sum()


def discrete_gaussian_pmf(sigma2):
    """pmf of N_Z(0, sigma2) normalised by summing over a wide range."""
    r = int(60 * math.sqrt(sigma2)) + 60
    z = np.exp(-np.arange(-r, r + 1, dtype=float) ** 2 / (2 * sigma2)).sum()
    return lambda x: np.exp(-np.asarray(x, dtype=float) ** 2 / (2 * sigma2)) / z


# ------------------------------------------------------------- bad input first
def test_secure_rejects_bad_key_iteration_tag():
    bad = [dict(key=b"x" * 31, iteration=0, tag=b"SUM"),
           dict(key="k" * 32, iteration=0, tag=b"SUM"),
           dict(key=KEY, iteration=-1, tag=b"SUM"),
           dict(key=KEY, iteration=1 << 64, tag=b"SUM"),
           dict(key=KEY, iteration=1.0, tag=b"SUM"),
           dict(key=KEY, iteration=0, tag=b""),
           dict(key=KEY, iteration=0, tag=b"TOOLONG"),
           dict(key=KEY, iteration=0, tag=b"S\0M"),
           dict(key=KEY, iteration=0, tag="SUM")]
    for kw in bad:
        with pytest.raises(InvalidInputError):
            NoiseStream.secure(**kw)
    with pytest.raises(TypeError):
        NoiseStream()


@pytest.mark.parametrize("call", [
    lambda s: s.gaussian(10, 0.0), lambda s: s.gaussian(10, -1.0),
    lambda s: s.gaussian(10, float("nan")), lambda s: s.gaussian(-1, 1.0),
    lambda s: s.gaussian(2.5, 1.0), lambda s: s.laplace(10, float("inf")),
    lambda s: s.discrete_gaussian(10, 2.0 ** 31), lambda s: s.discrete_gaussian(10, 1e-4),
    lambda s: s.discrete_gaussian(10, 0), lambda s: s.discrete_laplace(10, 0),
    lambda s: s.discrete_laplace(10, 1.5), lambda s: s.discrete_laplace(10, 2 ** 63)])
def test_samplers_reject_bad_parameters(call):
    for s in (NoiseStream.secure(KEY, 0, b"SUM"), NoiseStream.from_generator(0)):
        with pytest.raises(InvalidInputError):
            call(s)


def test_stream_exhaustion_raises_instead_of_reusing_counters():
    nonce = bytes(12)
    st = _noise.ChaChaStream(np.frombuffer(KEY, np.uint8), np.frombuffer(nonce, np.uint8),
                             2 ** 32 - 16)
    w = st.words(16 * 8)  # the last 16 blocks of the counter space
    assert (w == keystream_words(KEY, nonce, 2 ** 32 - 16, 16 * 8)).all()
    with pytest.raises(CapacityError):
        st.words(1)
    with pytest.raises(CapacityError):
        st.sample(0, np.empty(4), 1.0)


# ----------------------------------------------------------------- ChaCha20
def test_rfc8439_block_function_vector():
    # RFC 8439 section 2.3.2: key 00..1f, nonce 00:00:00:09:00:00:00:4a:00:00:00:00,
    # block count 1 -> serialized block below
    key = bytes(range(32))
    nonce = bytes.fromhex("000000090000004a00000000")
    state = np.array([0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]
                     + list(np.frombuffer(key, "<u4")) + [1]
                     + list(np.frombuffer(nonce, "<u4")), dtype=np.uint32)
    expected = bytes.fromhex(
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")
    assert _noise.chacha_block(state).astype("<u4").tobytes() == expected


@pytest.mark.parametrize("seed, counter, n", [(0, 0, 1), (1, 0, 64), (2, 1, 65), (3, 7, 1000),
                                              (4, 2 ** 31, 513)])
def test_keystream_matches_cryptography(seed, counter, n):
    rng = np.random.default_rng(seed)
    key, nonce = rng.bytes(32), rng.bytes(12)
    st = _noise.ChaChaStream(np.frombuffer(key, np.uint8), np.frombuffer(nonce, np.uint8), counter)
    got = np.concatenate([st.words(n // 3), st.words(n - n // 3)])  # across calls and refills
    assert (got == keystream_words(key, nonce, counter, n)).all()


@pytest.mark.parametrize("nk", [1, 7, 8, 9, 99])
def test_first_blocks_match_cryptography(nk):
    # fkm_chacha_first_blocks runs 8 (key, block) lanes at a time: key counts
    # around a multiple of 8 lanes, nb blocks per key from 1 to 9 (groups
    # straddle keys), every word compared with the `cryptography` keystream.
    rng = np.random.default_rng(900 + nk)
    for nb in (1, 2, 5, 8, 9):
        keys = np.frombuffer(rng.bytes(32 * nk), np.uint8).reshape(nk, 32)
        nonce = rng.bytes(12)
        got = _noise.chacha_first_blocks(keys, np.frombuffer(nonce, np.uint8), nb)
        assert got.shape == (nk, 8 * nb)
        for j in range(nk):
            want = keystream_words(bytes(keys[j]), nonce, 0, 8 * nb)
            assert np.array_equal(got[j], want), (nk, nb, j)


def masked_sum_reference(acc, keys, negate, nonce, lim, p):
    """acc + sum_j (-1)**negate[j] * stream_j mod p in pure Python: stream j
    is the `cryptography` keystream of keys[j] from block 0, read as 64-bit
    words, keeping w < lim and mapping w -> w mod p."""
    out = [int(a) for a in acc]
    n = len(out)
    for key, neg in zip(keys, negate):
        words = keystream_words(bytes(key), bytes(nonce), 0, 2 * n + 16)
        kept = [int(w) % p for w in words if int(w) < lim][:n]
        assert len(kept) == n  # the oracle drew enough words
        for i, v in enumerate(kept):
            out[i] = (out[i] - v) % p if neg else (out[i] + v) % p
    return np.array(out, dtype=np.uint64)


@pytest.mark.parametrize("nk", [1, 7, 8, 9, 99])
def test_add_streams_rounds_matches_cryptography_keystream(nk):
    # add_streams_rounds computes streams of <= 64 words with
    # fkm_chacha_first_blocks (8 (key, block) lanes at a time, n -> nb =
    # ceil(n / 8) blocks per key), longer ones with the buffered stream.
    # Key counts around the 8 lanes, nb from 1 to 8 (n = 64) and past (65),
    # both signs, two nonces per call.  With their limits (the largest
    # multiples of p below 2**64), p1 keeps every word but with probability
    # ~2**-58 (each word is checked mod p1, i.e. but for its top bit), p0
    # rejects ~2**-16 of the words and q ~25%, so some streams need blocks
    # past the first nb.
    from pyfkm._core import _field

    rng = np.random.default_rng(1000 + nk)
    p0, q = 4611615649683210241, 4611686018428387861  # primes below / just above 2**62
    p1 = (1 << 63) - 25  # lim = 2 p1 = 2**64 - 50 keeps nearly every word
    cases = [(p1, 2 * p1), (p0, 4 * p0), (q, 3 * q)]
    for n in (1, 5, 8, 9, 40, 64, 65):
        for p, lim in cases:
            keys = np.frombuffer(rng.bytes(32 * nk), np.uint8).reshape(nk, 32)
            negate = rng.integers(0, 2, size=nk).astype(np.uint8)
            negate[0], negate[-1] = 0, 1  # both signs (one key: the sign alternates by n)
            if nk == 1:
                negate[0] = n % 2
            nonces = np.frombuffer(rng.bytes(24), np.uint8).reshape(2, 12)
            acc0 = rng.integers(0, p, size=(2, n), dtype=np.uint64)
            got = _field.add_streams_rounds(acc0.copy(), keys, negate, nonces, lim, p)
            for r in range(2):
                want = masked_sum_reference(acc0[r], keys, negate, nonces[r], lim, p)
                assert np.array_equal(got[r], want), (nk, n, p, r)


def polar_reference(words, n, sigma):
    """Marsaglia's polar method on 54-bit-grid uniforms, in pure Python."""
    out, i = [], 0
    while len(out) < n:
        v1 = (int(words[i]) - (1 << 64 if words[i] >> 63 else 0)) >> 10
        v2 = (int(words[i + 1]) - (1 << 64 if words[i + 1] >> 63 else 0)) >> 10
        i += 2
        v1, v2 = v1 * 2.0 ** -53, v2 * 2.0 ** -53
        s = v1 * v1 + v2 * v2
        if s >= 1.0 or s == 0.0:
            continue
        f = sigma * math.sqrt(-2.0 * math.log(s) / s)
        out += [v1 * f, v2 * f]
    return np.array(out[:n])


def test_secure_gaussian_is_polar_method_on_the_documented_nonce():
    # nonce = tag zero-padded to 4 bytes + iteration as 8 little-endian bytes
    nonce = b"CNT\0" + (5).to_bytes(8, "little")
    words = keystream_words(KEY, nonce, 0, 1200)
    expected = polar_reference(words, 501, 3.5)
    got = NoiseStream.secure(KEY, 5, b"CNT").gaussian(501, 3.5)
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0)


# -------------------------------------------------------- continuous samplers
@pytest.mark.statistical
@pytest.mark.parametrize("mode", ["secure", "generator"])
def test_gaussian_and_laplace_distributions(mode):
    s = NoiseStream.secure(KEY, 1, b"T") if mode == "secure" else NoiseStream.from_generator(1)
    x = s.gaussian(200_001, 2.5)  # odd n: the last pair is cut
    assert x.shape == (200_001,) and x.dtype == np.float64
    assert stats.kstest(x, stats.norm(scale=2.5).cdf).pvalue > ALPHA
    y = s.laplace(200_000, 0.7)
    assert stats.kstest(y, stats.laplace(scale=0.7).cdf).pvalue > ALPHA
    assert s.gaussian(0, 1.0).shape == (0,)


# --------------------------------------------------------- discrete samplers
@pytest.mark.statistical
@pytest.mark.parametrize("sigma, mode", [(0.5, "secure"), (1.0, "generator"), (3.0, "secure"),
                                         (10.0, "generator"), (10.0, "secure"),
                                         (math.pi, "secure")])
def test_discrete_gaussian_chi_square(sigma, mode):
    s = NoiseStream.secure(KEY, 2, b"DG") if mode == "secure" else NoiseStream.from_generator(2)
    n = 200_000
    x = s.discrete_gaussian(n, sigma)
    assert x.dtype == np.int64
    pmf = discrete_gaussian_pmf(float(discrete_gaussian_variance(sigma)))
    r = int(6 * sigma) + 2
    assert chi_square_pvalue(x, pmf, -r, r) > ALPHA


@pytest.mark.statistical
def test_discrete_gaussian_power_against_wrong_sigma():
    # the same test rejects a sampler off by 3 % in sigma (shows the test can fail)
    x = NoiseStream.secure(KEY, 3, b"DG").discrete_gaussian(200_000, 3.0)
    wrong = discrete_gaussian_pmf(3.09 ** 2)
    assert chi_square_pvalue(x, wrong, -20, 20) < ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("sigma", [1e7, 37.3 * 2 ** 16, 2.0 ** 30])
def test_discrete_gaussian_large_sigma_moments_and_tails(sigma):
    n = 100_000
    x = NoiseStream.secure(KEY, 4, b"BIG").discrete_gaussian(n, sigma).astype(float)
    z = stats.norm.ppf(1 - ALPHA / 2)
    assert abs(x.mean()) < z * sigma / math.sqrt(n)
    # var of the sample variance of a normal: 2 sigma^4 / n
    assert abs(x.var() / sigma ** 2 - 1) < z * math.sqrt(2 / n)
    p2 = 2 * stats.norm.sf(2)  # P(|X| > 2 sigma); discrete = continuous up to 1e-(big)
    k = int((np.abs(x) > 2 * sigma).sum())
    assert stats.binomtest(k, n, p2).pvalue > ALPHA
    # the low bits are uniform (no lattice artefact of the proposal t * V + U)
    low = (x.astype(np.int64) % 16)
    assert stats.chisquare(np.bincount(low, minlength=16)).pvalue > ALPHA


def test_discrete_gaussian_tiny_sigma_is_zero():
    # sigma = 2^-10: P[x != 0] < 2 exp(-2^19); exercises the split exp(-B^2/D) path
    x = NoiseStream.from_generator(5).discrete_gaussian(20_000, 2.0 ** -10)
    assert (x == 0).all()


def test_discrete_gaussian_variance_rounds_up():
    for sigma in (0.5, 1.0, 1.7, 3.14159, 1e7, 2.0 ** 30):
        v = discrete_gaussian_variance(sigma)
        from fractions import Fraction
        exact = Fraction(sigma) ** 2
        assert exact <= v <= exact * (1 + Fraction(1, 2 ** 56))


@pytest.mark.statistical
@pytest.mark.parametrize("t", [1, 3, 50])
def test_discrete_laplace_chi_square(t):
    x = NoiseStream.from_generator(6).discrete_laplace(200_000, t)
    r = 8 * t
    z = 1 + 2 * sum(math.exp(-k / t) for k in range(1, 60 * t))
    pmf = lambda v: np.exp(-np.abs(np.asarray(v, dtype=float)) / t) / z  # noqa: E731
    assert chi_square_pvalue(x, pmf, -r, r) > ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("num, den", [(0, 1), (1, 3), (1, 1), (5, 2), (7, 3), (40, 10)])
def test_bernoulli_exp_exact_rates(num, den):
    n = 100_000
    b = NoiseStream.secure(KEY, 7, b"B")._bernoulli_exp(n, num, den)
    p = math.exp(-num / den)
    if num == 0:
        assert b.all()
    else:
        assert stats.binomtest(int(b.sum()), n, p).pvalue > ALPHA


# --------------------------------------------------------------- independence
@pytest.mark.statistical
def test_sum_and_count_streams_uncorrelated():
    n = 100_000
    z = stats.norm.ppf(1 - ALPHA / 2)
    for it in (0, 1, 9):
        a = NoiseStream.secure(KEY, it, b"SUM").gaussian(n, 1.0)
        c = NoiseStream.secure(KEY, it, b"CNT").gaussian(n, 1.0)
        # under independence sqrt(n) r is ~ N(0, 1)
        assert abs(np.corrcoef(a, c)[0, 1]) * math.sqrt(n) < z
        assert not np.isin(a, c).any()
        ai = NoiseStream.secure(KEY, it, b"SUM").discrete_gaussian(n, 1e5)
        ci = NoiseStream.secure(KEY, it, b"CNT").discrete_gaussian(n, 1e5)
        assert abs(np.corrcoef(ai, ci)[0, 1]) * math.sqrt(n) < z


def test_streams_differ_across_iterations_keys_and_seeds():
    n = 2000
    base = NoiseStream.secure(KEY, 0, b"SUM").gaussian(n, 1.0)
    others = [NoiseStream.secure(KEY, 1, b"SUM").gaussian(n, 1.0),
              NoiseStream.secure(KEY, 1 << 40, b"SUM").gaussian(n, 1.0),
              NoiseStream.secure(new_noise_key(1), 0, b"SUM").gaussian(n, 1.0),
              NoiseStream.from_generator(0).gaussian(n, 1.0)]
    for o in others:
        assert not np.isin(base, o).any()
    g0, g1 = NoiseStream.from_generator(0), NoiseStream.from_generator(1)
    assert not np.isin(g0.discrete_gaussian(n, 1e6), g1.discrete_gaussian(n, 1e6)).all()
    # successive calls continue the stream instead of repeating it
    s = NoiseStream.secure(KEY, 0, b"SUM")
    assert not np.isin(s.gaussian(n, 1.0), s.gaussian(n, 1.0)).any()


def test_identical_inputs_identical_samples():
    for make in (lambda: NoiseStream.secure(KEY, 3, b"CNT"),
                 lambda: NoiseStream.from_generator(np.random.SeedSequence(11))):
        a, b = make(), make()
        for name, arg in (("gaussian", 2.0), ("discrete_gaussian", 123456.7), ("laplace", 1.0)):
            assert np.array_equal(getattr(a, name)(1001, arg), getattr(b, name)(1001, arg))
