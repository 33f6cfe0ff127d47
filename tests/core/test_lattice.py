"""Tests of pyfkm.lattice (csrc/fkm_lattice.c through pyfkm/_core/_lattice.pyx).

Expected values come from (a) hand computation, written out next to each
case, (b) tests/oracles/lattice.py, a plain numpy / Python-int twin written
from the formulas, (c) numpy itself (ravel_multi_index, Generator.random),
and (d) exact Python integer arithmetic for the int64 grid limits.
"""
import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyfkm._core import _lattice
from oracles import lattice as ref
from pyfkm.exceptions import CapacityError, InvalidInputError, NumericalError
from pyfkm.core.lattice import Lattice

INT64_MAX = 2**63 - 1


def max_fitting_d(B):
    """Largest d with B**d <= 2**63 - 1, by exact Python integer arithmetic."""
    d = 0
    while B ** (d + 1) <= INT64_MAX:
        d += 1
    return d


def gen_state(g):
    return g.bit_generator.state


# --------------------------------------------------------------------------
# Errors (first)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("step", [0, 0.0, -1.0, float("nan"), float("inf"), "1", None, True])
def test_bad_step(step):
    with pytest.raises(InvalidInputError, match="step"):
        Lattice(step)
    with pytest.raises(InvalidInputError, match="step"):
        Lattice.random(step, 2, random_state=0)


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        Lattice(-1.0)
    with pytest.raises(OverflowError):  # CapacityError is also an OverflowError
        Lattice(1.0).flatten(np.zeros((1, 64), dtype=np.int64), 2)


def test_phase_string_points_to_random():
    with pytest.raises(InvalidInputError, match=r"Lattice\.random"):
        Lattice(0.5, phase="random")


@pytest.mark.parametrize("phase", [[0.0, np.nan], [np.inf], [[0.1, 0.2]], [], ["a", "b"]])
def test_bad_phase(phase):
    with pytest.raises(InvalidInputError, match="phase"):
        Lattice(0.5, phase=phase)


@pytest.mark.parametrize("n_features", [0, -1, 2.0, "3", None, True])
def test_random_bad_n_features(n_features):
    with pytest.raises(InvalidInputError, match="n_features"):
        Lattice.random(0.5, n_features, random_state=0)


def test_random_bad_random_state():
    with pytest.raises(InvalidInputError, match="random_state"):
        Lattice.random(0.5, 2, random_state="seed")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_quantize_nonfinite(bad):
    X = np.zeros((3, 2))
    X[1, 1] = bad
    with pytest.raises(InvalidInputError, match="NaN or infinity"):
        Lattice(0.5).quantize(X)
    with pytest.raises(InvalidInputError, match="NaN or infinity"):
        Lattice(0.5).quantize(X.astype(np.float32))


@pytest.mark.parametrize("X", [np.zeros(3), np.zeros((2, 2, 2)), np.zeros((2, 2), complex),
                               [["a", "b"]], [[1.0, 2.0], [3.0]]])
def test_quantize_bad_X(X):
    with pytest.raises(InvalidInputError, match="X"):
        Lattice(0.5).quantize(X)


def test_width_mismatch():
    lat = Lattice(0.5, phase=[0.0, 0.1, 0.2])
    with pytest.raises(InvalidInputError, match=r"X has 2 columns .*n_features=3"):
        lat.quantize(np.zeros((4, 2)))
    for method in (lat.centers, lat.sample):
        with pytest.raises(InvalidInputError, match=r"bins has 4 columns .*n_features=3"):
            method(np.zeros((1, 4), dtype=np.int64))
    with pytest.raises(InvalidInputError, match=r"bins has 2 columns"):
        lat.flatten(np.zeros((1, 2), dtype=np.int64), 4)
    with pytest.raises(InvalidInputError, match=r"n_features=2 differs"):
        lat.unflatten([0], 4, n_features=2)


def test_quantize_overflow_exact_bound():
    # t = x / step exactly; |t| < 2**62 is accepted, 2**62 is not.
    below = np.nextafter(2.0**62, 0.0)  # 2**62 - 512
    lat = Lattice(1.0)
    assert lat.quantize([[below, -below]]).tolist() == [[2**62 - 512, -(2**62) + 512]]
    for x in (2.0**62, -(2.0**62), 1e300):
        with pytest.raises(CapacityError, match=r"X\[1, 0\] / step - phase"):
            lat.quantize([[0.0], [x]])
    # x / step overflows to infinity: still a capacity problem, not a NaN.
    with pytest.raises(CapacityError, match="larger step"):
        Lattice(1e-300).quantize([[1e300]])
    # The phase counts: 2**62 - 512 - (-512) = 2**62.
    with pytest.raises(CapacityError):
        Lattice(1.0, phase=[-512.0]).quantize([[below]])


def test_kernel_nonfinite_wins_over_overflow():
    # Kernel contract: ENONFINITE is reported over EOVERFLOW wherever they are.
    X = np.array([[1e300], [np.nan]])
    with pytest.raises(InvalidInputError, match="NaN") as info:
        _lattice.quantize(X, None, 1.0)
    assert not isinstance(info.value, CapacityError)
    X = np.array([[3e38], [np.inf]], dtype=np.float32)
    with pytest.raises(InvalidInputError, match="NaN"):
        _lattice.quantize(X, None, 1e-30)


@pytest.mark.parametrize("step", [0.0, -1.0, np.nan, np.inf])
def test_kernel_rejects_bad_step(step):
    one = np.zeros((1, 1), dtype=np.int64)
    with pytest.raises(InvalidInputError):
        _lattice.quantize(np.zeros((1, 1)), None, step)
    with pytest.raises(InvalidInputError):
        _lattice.centers(one, None, step)
    g = np.random.default_rng(0)
    before = gen_state(g)
    with pytest.raises(InvalidInputError):
        _lattice.sample(one, None, step, g)
    assert gen_state(g) == before


@pytest.mark.parametrize("bins", [np.zeros((2, 2)), [[0.5, 1.0]], [[True, False]],
                                  np.zeros(3, dtype=np.int64), [["a"]],
                                  np.array([[2**63]], dtype=np.uint64)])
def test_bad_bins(bins):
    lat = Lattice(0.5)
    for call in (lat.centers, lat.sample, lambda b: lat.flatten(b, 4)):
        with pytest.raises(InvalidInputError, match="bins"):
            call(bins)


def test_centers_and_sample_overflow():
    lat = Lattice(1e300)
    with pytest.raises(NumericalError, match="overflow"):
        lat.centers([[0], [2**62]])
    g = np.random.default_rng(1)
    before = gen_state(g)
    with pytest.raises(NumericalError, match="overflow"):
        lat.sample([[0], [2**62]], random_state=g)
    assert gen_state(g) == before  # nothing was drawn
    # Near DBL_MAX = 1.797e308 the check is exact per bin: bins -17 and 16
    # span [-1.7e308, -1.6e308] and [1.6e308, 1.7e308] (finite); bin 17
    # reaches 1.8e308 at its upper edge, so some draws would overflow.
    lat = Lattice(1e307)
    assert np.isfinite(lat.sample([[-17], [16]], random_state=0)).all()
    np.testing.assert_array_equal(lat.centers([[-17], [16]]), ref.centers([[-17], [16]], 1e307))
    with pytest.raises(NumericalError):
        lat.sample([[17]], random_state=0)


@pytest.mark.parametrize("n_bins", [0, -3, 2.0, "4", None, True, 2**63])
def test_bad_n_bins(n_bins):
    lat = Lattice(0.5)
    with pytest.raises(InvalidInputError, match="n_bins"):
        lat.flatten([[0, 0]], n_bins)
    with pytest.raises(InvalidInputError, match="n_bins"):
        lat.unflatten([0], n_bins, 2)


@pytest.mark.parametrize("value, where", [(-1, "bins[1, 2] = -1"), (4, "bins[1, 2] = 4"),
                                          (-(2**63), "bins[1, 2] = -9223372036854775808")])
def test_flatten_bin_outside_grid(value, where):
    bins = np.array([[0, 1, 2], [3, 3, value]])
    with pytest.raises(InvalidInputError, match=r"\[0, n_bins=4\).*" + re_escape(where)):
        Lattice(0.5).flatten(bins, 4)


def re_escape(s):
    import re
    return re.escape(s)


@pytest.mark.parametrize("index", [-1, 64, INT64_MAX])
def test_unflatten_index_outside_grid(index):
    with pytest.raises(InvalidInputError, match=r"indices\[1\] = "):
        Lattice(0.5).unflatten([0, index], 4, 3)


def test_unflatten_needs_n_features():
    with pytest.raises(InvalidInputError, match="n_features is required"):
        Lattice(0.5).unflatten([0], 4)
    with pytest.raises(InvalidInputError, match="indices"):
        Lattice(0.5).unflatten([[0]], 4, 1)
    with pytest.raises(InvalidInputError, match="indices must be integers"):
        Lattice(0.5).unflatten([0.0], 4, 1)


# --------------------------------------------------------------------------
# B**d capacity: the exact int64 boundary
# --------------------------------------------------------------------------

def test_grid_boundary_powers_of_two():
    lat = Lattice(1.0)
    # 2**62 <= 2**63 - 1 < 2**63: d = 62 fits, d = 63 does not.
    top = np.ones((1, 62), dtype=np.int64)
    assert lat.flatten(top, 2).tolist() == [2**62 - 1]
    assert lat.unflatten([2**62 - 1], 2, 62).tolist() == top.tolist()
    with pytest.raises(CapacityError, match=r"2\*\*63 exceeds 2\*\*63 - 1"):
        lat.flatten(np.ones((1, 63), dtype=np.int64), 2)
    with pytest.raises(CapacityError, match=r"2\*\*64"):
        lat.flatten(np.ones((1, 64), dtype=np.int64), 2)
    with pytest.raises(CapacityError, match=r"2\*\*63"):
        lat.unflatten([0], 2, 63)


@pytest.mark.parametrize("B, d_fit", [
    (3, 39),                    # 3**39 = 4.05e18 <= 9.22e18 < 3**40
    (10, 18),                   # 10**18 fits, 10**19 does not
    (3037000499, 2),            # floor(sqrt(2**63 - 1)): B**2 = 9223372030926249001
    (3037000500, 1),            # (B)**2 = 9223372037000250000 > 2**63 - 1
    (2097151, 3),               # 2**21 - 1: (2**21 - 1)**3 < 2**63 - 1
    (2097152, 2),               # 2**21: 2**63 does not fit
    (INT64_MAX, 1),
])
def test_grid_boundary_exact(B, d_fit):
    assert max_fitting_d(B) == d_fit  # the hand-derived table agrees with Python ints
    lat = Lattice(1.0)
    top = np.full((1, d_fit), B - 1, dtype=np.int64)
    assert lat.flatten(top, B).tolist() == [B**d_fit - 1]
    assert lat.unflatten([B**d_fit - 1], B, d_fit).tolist() == top.tolist()
    with pytest.raises(CapacityError, match=rf"{B}\*\*{d_fit + 1}"):
        lat.flatten(np.zeros((3, d_fit + 1), dtype=np.int64), B)
    with pytest.raises(CapacityError):
        lat.unflatten([0], B, d_fit + 1)


def test_grid_capacity_checked_without_rows():
    with pytest.raises(CapacityError):
        Lattice(1.0).flatten(np.zeros((0, 40), dtype=np.int64), 3)
    with pytest.raises(CapacityError):
        Lattice(1.0).unflatten(np.zeros(0, dtype=np.int64), 3, 40)


def test_one_bin_per_axis_never_overflows():
    assert Lattice(1.0).flatten(np.zeros((2, 1000), dtype=np.int64), 1).tolist() == [0, 0]
    assert Lattice(1.0).unflatten([0], 1, 1000).shape == (1, 1000)


@settings(max_examples=80, deadline=None)
@given(st.integers(2, INT64_MAX))
def test_grid_boundary_property(B):
    d = max_fitting_d(B)
    assert _lattice.grid_size(d, B) == B**d
    with pytest.raises(CapacityError):
        _lattice.grid_size(d + 1, B)


# --------------------------------------------------------------------------
# Hand-computed cases
# --------------------------------------------------------------------------

def test_quantize_hand():
    # step 0.5: 0.1/0.5 = 0.2 -> 0; -0.1/0.5 = -0.2 -> -1; 1.2/0.5 = 2.4 -> 2;
    # 0.75/0.5 = 1.5 -> 1; bins are half-open: 0.5 -> 1 and -0.5 -> -1.
    X = [[0.1, -0.1], [1.2, 0.75], [0.5, -0.5]]
    assert Lattice(0.5).quantize(X).tolist() == [[0, -1], [2, 1], [1, -1]]
    # step 2, phase (0.25, -0.5): floor(0/2 - 0.25) = -1, floor(0/2 + 0.5) = 0,
    # floor(0.5/2 - 0.25) = 0, floor(-1/2 + 0.5) = 0, floor(-3/2 + 0.5) = -1.
    lat = Lattice(2.0, phase=[0.25, -0.5])
    assert lat.quantize([[0.0, 0.0], [0.5, -1.0], [0.49, -3.0]]).tolist() == \
        [[-1, 0], [0, 0], [-1, -1]]


def test_quantize_exact_floor_across_magnitudes():
    # Oracle: math.floor on each float64 value (step 1, no phase, so t = x).
    # Covers halves (round-half-even must not leak into floor), signed zero,
    # tiny negatives, and both sides of the 2**50 switch between the kernel's
    # vectorized path and its exact fallback, up to the 2**62 limit.
    import math
    vals = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5, 1e-300, -1e-300,
            0.9999999999999999, -0.9999999999999999, 7.0, -7.0]
    for e in (20, 40, 49, 50, 51, 52, 53, 61):
        for base in (2.0**e, -(2.0**e)):
            vals += [base, np.nextafter(base, 0.0), np.nextafter(base, 2 * base),
                     base + 0.5 * np.sign(base) if e < 52 else base,
                     base - 2.5 * np.sign(base) if e < 51 else base,
                     base + 3.0, base - 3.0]
    vals.append(np.nextafter(2.0**62, 0.0))
    X = np.array(vals).reshape(-1, 1)
    expected = [[math.floor(v)] for v in vals]
    assert Lattice(1.0).quantize(X).tolist() == expected
    # the same values spread over rows of width 5, mixing both paths in a row
    X5 = np.resize(np.array(vals), (len(vals) // 5) * 5).reshape(-1, 5)
    assert Lattice(1.0).quantize(X5).tolist() == [[math.floor(v) for v in r] for r in X5.tolist()]


def test_quantize_float32_uses_the_float32_value():
    # In float64, 0.3 / 0.1 = 2.9999999999999996 -> bin 2; float32(0.3) is
    # 0.30000001192..., and 0.30000001192 / 0.1 = 3.0000001... -> bin 3.
    assert Lattice(0.1).quantize(np.array([[0.3]])).tolist() == [[2]]
    assert Lattice(0.1).quantize(np.array([[0.3]], dtype=np.float32)).tolist() == [[3]]


def test_centers_hand():
    # ((b + 0.5) + phase) * step: (0.5 + 0.25) * 2 = 1.5; (-0.5 + 0.25) * 2 = -0.5.
    out = Lattice(2.0, phase=[0.25]).centers([[0], [-1]])
    assert out.dtype == np.float64
    assert out.tolist() == [[1.5], [-0.5]]
    assert Lattice(0.5).centers([[3, -4]]).tolist() == [[1.75, -1.75]]


def test_flatten_hand():
    # B = 4: [1, 2, 3] -> 1*16 + 2*4 + 3 = 27; [3, 3, 3] -> 63; [0, 0, 1] -> 1.
    lat = Lattice(1.0)
    assert lat.flatten([[1, 2, 3], [3, 3, 3], [0, 0, 1], [0, 0, 0]], 4).tolist() == [27, 63, 1, 0]
    assert lat.unflatten([27, 63, 1, 0], 4, 3).tolist() == \
        [[1, 2, 3], [3, 3, 3], [0, 0, 1], [0, 0, 0]]
    # mixed radix with B = 10 reads as a decimal number
    assert lat.flatten([[9, 0, 7, 5]], 10).tolist() == [9075]


def test_flatten_enumerates_grid_in_row_major_order():
    # itertools.product yields the bins of a B^d grid in row-major order.
    for B, d in [(3, 4), (1, 3), (5, 1), (2, 6)]:
        bins = np.array(list(itertools.product(range(B), repeat=d)), dtype=np.int64)
        idx = Lattice(1.0).flatten(bins, B)
        assert idx.tolist() == list(range(B**d))
        assert Lattice(1.0).unflatten(idx, B, d).tolist() == bins.tolist()


def test_zero_features_and_zero_rows():
    lat = Lattice(0.5)
    assert lat.quantize(np.zeros((0, 3))).shape == (0, 3)
    assert lat.quantize(np.zeros((2, 0))).shape == (2, 0)
    assert lat.centers(np.zeros((0, 2), dtype=np.int64)).shape == (0, 2)
    assert lat.flatten(np.zeros((2, 0), dtype=np.int64), 5).tolist() == [0, 0]
    assert lat.flatten(np.zeros((0, 3), dtype=np.int64), 5).shape == (0,)
    assert lat.unflatten([0], 5, 0).shape == (1, 0)
    assert lat.unflatten([], 5, 3).shape == (0, 3)
    with pytest.raises(InvalidInputError):
        lat.unflatten([1], 5, 0)  # the grid of dimension 0 has one bin
    g = np.random.default_rng(0)
    before = gen_state(g)
    assert lat.sample(np.zeros((0, 4), dtype=np.int64), random_state=g).shape == (0, 4)
    assert gen_state(g) == before


# --------------------------------------------------------------------------
# C kernels against the numpy reference
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("with_phase", [False, True])
def test_quantize_matches_reference(dtype, seed, with_phase):
    rng = np.random.default_rng(seed)
    n, d = 500, 7
    step = float(np.exp(rng.uniform(-5, 5)))
    phase = rng.uniform(-0.5, 0.5, d) if with_phase else None
    X = (rng.normal(size=(n, d)) * step * 100).astype(dtype)
    # also exact bin edges (b + phase) * step, where rounding decides
    edges = ((rng.integers(-50, 50, size=(n, d)) + (0 if phase is None else phase)) * step)
    for data in (X, edges.astype(dtype)):
        got = Lattice(step, phase).quantize(data)
        assert got.dtype == np.int64 and got.flags.c_contiguous
        np.testing.assert_array_equal(got, ref.quantize(data, step, phase))


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("with_phase", [False, True])
def test_centers_and_sample_match_reference(seed, with_phase):
    rng = np.random.default_rng(seed)
    n, d = 400, 5
    step = float(np.exp(rng.uniform(-5, 5)))
    phase = rng.uniform(-0.5, 0.5, d) if with_phase else None
    bins = rng.integers(-(2**40), 2**40, size=(n, d))
    lat = Lattice(step, phase)
    np.testing.assert_array_equal(lat.centers(bins), ref.centers(bins, step, phase))
    g_ours, g_ref = np.random.default_rng(seed + 100), np.random.default_rng(seed + 100)
    np.testing.assert_array_equal(lat.sample(bins, random_state=g_ours),
                                  ref.sample(bins, step, phase, g_ref))
    # both consumed exactly n * d draws
    assert gen_state(g_ours) == gen_state(g_ref)


def test_sample_reproducible_from_seed():
    lat = Lattice.random(0.3, 4, random_state=5)
    bins = np.random.default_rng(0).integers(-10, 10, size=(100, 4))
    a = lat.sample(bins, random_state=42)
    b = lat.sample(bins, random_state=42)
    c = lat.sample(bins, random_state=43)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # seeds go through default_rng, like every pyfkm random_state
    np.testing.assert_array_equal(a, ref.sample(bins, 0.3, lat.phase, np.random.default_rng(42)))


def test_sample_advances_a_shared_generator():
    g = np.random.default_rng(3)
    lat = Lattice(1.0)
    a = lat.sample([[0, 0]], random_state=g)
    b = lat.sample([[0, 0]], random_state=g)
    assert not np.array_equal(a, b)
    expected = np.random.default_rng(3).random((2, 2))  # bins 0, step 1: the draws
    np.testing.assert_array_equal(np.vstack([a, b]), expected)


@pytest.mark.statistical
def test_sample_is_uniform_inside_bins():
    # Position inside the bin, in bin units, should be U(0, 1): check the
    # decile counts of 200k draws (expected 20000 each, sd ~ 134).
    lat = Lattice(0.25, phase=[0.3, -0.2])
    bins = np.tile([[3, -7]], (100_000, 1))
    pts = lat.sample(bins, random_state=11)
    u = np.clip((pts / 0.25 - lat.phase - bins).ravel(), 0.0, 1.0 - 1e-12)
    counts = np.histogram(u, bins=10, range=(0, 1))[0]
    assert counts.sum() == u.size
    assert np.abs(counts - 20_000).max() < 800


# --------------------------------------------------------------------------
# Round trips and properties
# --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(3))
def test_round_trips(seed):
    rng = np.random.default_rng(seed)
    lat = Lattice.random(float(rng.uniform(1e-3, 10)), 6, random_state=seed)
    bins = rng.integers(-(2**30), 2**30, size=(2000, 6))
    np.testing.assert_array_equal(lat.quantize(lat.centers(bins)), bins)
    np.testing.assert_array_equal(lat.quantize(lat.sample(bins, random_state=seed)), bins)
    B = 1000  # 1000**6 = 1e18 fits
    grid_bins = rng.integers(0, B, size=(2000, 6))
    idx = lat.flatten(grid_bins, B)
    np.testing.assert_array_equal(lat.unflatten(idx, B), grid_bins)
    assert idx.tolist() == ref.flatten(grid_bins, B)
    some = rng.integers(0, B**6, size=500)
    np.testing.assert_array_equal(lat.flatten(lat.unflatten(some, B), B), some)


def test_flatten_matches_numpy_ravel_multi_index():
    rng = np.random.default_rng(0)
    for B, d in [(7, 3), (2, 10), (100, 4), (1, 5)]:
        bins = rng.integers(0, B, size=(300, d))
        expected = np.ravel_multi_index(tuple(bins.T), (B,) * d)
        np.testing.assert_array_equal(Lattice(1.0).flatten(bins, B), expected)
        expected_bins = np.stack(np.unravel_index(expected, (B,) * d), axis=1)
        np.testing.assert_array_equal(Lattice(1.0).unflatten(expected, B, d), expected_bins)


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    n=st.integers(1, 20),
    d=st.integers(1, 6),
    step=st.floats(1e-3, 1e3),
    with_phase=st.booleans(),
)
def test_quantize_centers_sample_property(data, n, d, step, with_phase):
    phase = None
    if with_phase:
        phase = np.array(data.draw(st.lists(st.floats(-0.5, 0.5), min_size=d, max_size=d)))
    lat = Lattice(step, phase)
    X = np.array(data.draw(st.lists(st.floats(-1e6, 1e6), min_size=n * d, max_size=n * d)))
    X = X.reshape(n, d)
    for arr in (X, X.astype(np.float32)):
        np.testing.assert_array_equal(lat.quantize(arr), ref.quantize(arr, step, phase))
    bins = np.array(data.draw(st.lists(st.integers(-(2**40), 2**40),
                                       min_size=n * d, max_size=n * d))).reshape(n, d)
    np.testing.assert_array_equal(lat.quantize(lat.centers(bins)), bins)
    seed = data.draw(st.integers(0, 2**32 - 1))
    small = bins % 2**20 - 2**19  # keep b + u exact enough to stay in its bin
    pts = lat.sample(small, random_state=seed)
    np.testing.assert_array_equal(pts, ref.sample(small, step, phase, np.random.default_rng(seed)))
    np.testing.assert_array_equal(lat.quantize(pts), small)


@settings(max_examples=80, deadline=None)
@given(data=st.data(), B=st.integers(1, 2**31), n=st.integers(0, 10))
def test_flatten_unflatten_property(data, B, n):
    d = data.draw(st.integers(0, min(max_fitting_d(B), 12) if B > 1 else 12))
    rows = data.draw(st.lists(st.lists(st.integers(0, B - 1), min_size=d, max_size=d),
                              min_size=n, max_size=n))
    bins = np.array(rows, dtype=np.int64).reshape(n, d)
    idx = Lattice(1.0).flatten(bins, B)
    assert idx.tolist() == ref.flatten(bins, B)
    assert Lattice(1.0).unflatten(idx, B, d).tolist() == ref.unflatten(idx, B, d)
    np.testing.assert_array_equal(Lattice(1.0).unflatten(idx, B, d), bins)


# --------------------------------------------------------------------------
# Random phase
# --------------------------------------------------------------------------

def test_random_phase_reproducible():
    a = Lattice.random(0.2, 5, random_state=9)
    b = Lattice.random(0.2, 5, random_state=9)
    c = Lattice.random(0.2, 5, random_state=10)
    np.testing.assert_array_equal(a.phase, b.phase)
    assert not np.array_equal(a.phase, c.phase)
    # documented draw: generator.random(n_features) - 0.5
    np.testing.assert_array_equal(a.phase, np.random.default_rng(9).random(5) - 0.5)
    assert a.n_features == 5 and a.step == 0.2


def test_random_phase_fresh_per_use_from_one_generator():
    g = np.random.default_rng(0)
    phases = np.array([Lattice.random(1.0, 3, random_state=g).phase for _ in range(2000)])
    assert len({tuple(p) for p in phases}) == 2000
    assert phases.min() >= -0.5 and phases.max() < 0.5
    assert abs(phases.mean()) < 0.02  # mean 0, sd of the mean 0.29/sqrt(6000) ~ 0.004
    seq = np.random.SeedSequence(4)
    np.testing.assert_array_equal(Lattice.random(1.0, 3, seq).phase,
                                  np.random.default_rng(np.random.SeedSequence(4)).random(3) - 0.5)


# --------------------------------------------------------------------------
# Input conversion and object behaviour
# --------------------------------------------------------------------------

def test_noncontiguous_and_integer_inputs_are_converted():
    rng = np.random.default_rng(0)
    big = rng.normal(size=(40, 12))
    lat = Lattice(0.3, phase=rng.uniform(-0.5, 0.5, 6))
    for X in (big[:, ::2], np.asfortranarray(big[:, :6]), big[::3, 3:9]):
        assert not X.flags.c_contiguous
        np.testing.assert_array_equal(lat.quantize(X), ref.quantize(X, 0.3, lat.phase))
    Xi = rng.integers(-5, 5, size=(10, 6)).astype(np.int32)
    np.testing.assert_array_equal(lat.quantize(Xi), ref.quantize(Xi.astype(float), 0.3, lat.phase))
    np.testing.assert_array_equal(lat.quantize(Xi.tolist()), lat.quantize(Xi))
    bins = rng.integers(-9, 9, size=(10, 12))
    for b in (bins[:, ::2], bins[:, :6].astype(np.int32), bins[:, :6].astype(np.uint8) % 3,
              np.asfortranarray(bins[:, :6])):
        np.testing.assert_array_equal(lat.centers(b), ref.centers(b, 0.3, lat.phase))
    grid = (bins % 4)[:, ::2].astype(np.uint16)
    assert lat.flatten(grid, 4).tolist() == ref.flatten(grid, 4)
    assert lat.unflatten(np.array([27], dtype=np.int32), 4, 6).tolist() == [[0, 0, 0, 1, 2, 3]]
    assert lat.unflatten(27, 4, 6).tolist() == [[0, 0, 0, 1, 2, 3]]


def test_no_phase_accepts_any_dimension():
    lat = Lattice(0.5)
    assert lat.phase is None and lat.n_features is None
    for d in (1, 3, 17):
        X = np.full((2, d), 0.6)
        assert lat.quantize(X).tolist() == [[1] * d] * 2


def test_phase_is_a_private_read_only_copy():
    p = np.array([0.1, -0.2])
    lat = Lattice(1.0, phase=p)
    p[0] = 0.4
    assert lat.phase.tolist() == [0.1, -0.2]
    with pytest.raises(ValueError):
        lat.phase[0] = 0.0
    # any finite phase is accepted (shifting by whole steps relabels bins)
    assert Lattice(1.0, phase=[3.0]).quantize([[0.5]]).tolist() == [[-3]]
    assert Lattice(1.0, phase=[0.0]).quantize([[0.5]]).tolist() == [[0]]
    assert Lattice(1.0, phase=np.array([1], dtype=np.int32)).phase.dtype == np.float64


def test_repr():
    assert repr(Lattice(0.5)) == "Lattice(step=0.5)"
    assert repr(Lattice(2, phase=[0.25])) == "Lattice(step=2.0, phase=[0.25])"


def test_threads_give_the_same_result():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 8))
    lat = Lattice.random(0.01, 8, random_state=0)
    serial = [lat.quantize(X[i::4]) for i in range(4)]
    with ThreadPoolExecutor(4) as ex:
        threaded = list(ex.map(lambda i: lat.quantize(X[i::4]), range(4)))
    for a, b in zip(serial, threaded):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------
# Regressions found by the sanitizer build (SANITIZE=1 in .ci/run)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_quantize_below_minus_1p5_times_2_52_no_signed_overflow(dtype):
    # The vectorized floor reads floor(t) from the bits of t + 1.5 * 2**52.
    # For t < -1.5 * 2**52 that sum is negative, and its bits (as int64) minus
    # those of 1.5 * 2**52 overflowed int64 (undefined; UBSan stops) before the
    # row was redone exactly.  Oracle: math.floor of each value as a Python
    # float (step 1, no phase: t = x), every value representable in float32.
    import math
    edge = [-1.5 * 2.0**52 - 2.0**30, -(2.0**53), -(2.0**60), -(2.0**61), -(2.0**62) + 2.0**40]
    vals = edge + [-0.5, 0.5, 1.5 * 2.0**52 + 2.0**30, 2.0**61, -7.25, 3.0]
    assert [float(dtype(v)) for v in vals] == vals
    X = np.array(vals, dtype=dtype)
    expected = [math.floor(v) for v in vals]
    assert Lattice(1.0).quantize(X.reshape(-1, 1)).ravel().tolist() == expected
    # a whole row of small values with one edge value: the row goes exact
    for v in edge:
        row = np.array([0.5, -2.5, v, 7.0], dtype=dtype)
        assert Lattice(1.0).quantize(row[None, :]).tolist() == [[0, -3, math.floor(v), 7]]


def test_kernels_refuse_a_phase_of_the_wrong_length():
    """Issue 18: a phase shorter than the number of features (e.g. from a
    tampered pickle) made the kernels read past its end; the wrappers now
    check it against the number of columns themselves."""
    X = np.zeros((2, 3))
    bins = np.zeros((2, 3), dtype=np.int64)
    gen = np.random.default_rng(0)
    for phase in (np.zeros(1), np.zeros(2), np.zeros(4), np.zeros(0)):
        with pytest.raises(ValueError, match="phase has"):
            _lattice.quantize(X, phase, 0.5)
        with pytest.raises(ValueError, match="phase has"):
            _lattice.centers(bins, phase, 0.5)
        with pytest.raises(ValueError, match="phase has"):
            _lattice.sample(bins, phase, 0.5, gen)
    assert _lattice.quantize(X + 0.75, np.full(3, 0.25), 0.5).tolist() == [[1, 1, 1]] * 2
    assert _lattice.quantize(X + 0.75, None, 0.5).tolist() == [[1, 1, 1]] * 2
