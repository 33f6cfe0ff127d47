"""The steps of FastLloyd (pyfkm.dp.steps): the step radius, folding into the
bounds and the sphere-packing start, against hand values and numpy oracles."""
import math

import numpy as np
import pytest

from pyfkm.dp.steps import fold_into_bounds, sphere_packing_init, step_radius


# ------------------------------------------------------------ pieces

def test_step_radius_by_hand():
    # d = 4, k = 3, domain [-1, 1]^4: diag = 4
    assert step_radius(0, 3, 4) == pytest.approx(2.0)
    assert step_radius(5, 3, 4, alpha=0.8) == pytest.approx(0.8 * 4 / (2 * 3 ** 0.25))
    # capped at the diagonal: k = 1, d = 1, alpha = 5 -> 5 * 2 / 2 = 5 > diag = 2
    assert step_radius(1, 1, 1, alpha=5.0) == pytest.approx(2.0)
    assert step_radius(0, 2, 2, bounds=(0, 10)) == pytest.approx(10 * math.sqrt(2) / 2)


def _reflect_oracle(v, lo, hi):
    while v < lo or v > hi:
        v = 2 * lo - v if v < lo else 2 * hi - v
    return v


def test_fold_matches_repeated_reflection():
    rng = np.random.default_rng(1)
    v = rng.uniform(-9, 9, 500)
    got = fold_into_bounds(v, (-1, 2))
    assert np.allclose(got, [_reflect_oracle(x, -1, 2) for x in v], atol=1e-12)


def _fold_twin(C, lo, hi):
    """The fold's formula in plain numpy, out of place: lo + (v > w ? 2w - v : v)
    for v = (C - lo) mod 2w."""
    w = hi - lo
    v = np.mod(np.asarray(C, dtype=np.float64) - lo, 2 * w)
    return lo + np.where(v > w, 2 * w - v, v)


@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 1, 5)])
def test_fold_equals_its_formula_bit_for_bit_and_keeps_its_input(shape):
    rng = np.random.default_rng(len(shape))
    for lo, hi in ((-1.0, 1.0), (-0.3, 2.7), (5.0, 5.5)):
        C = rng.normal(0, 10, shape) * 10.0 ** rng.integers(-3, 3, shape)
        keep = np.copy(C)
        got = fold_into_bounds(C, (lo, hi))
        want = _fold_twin(C, lo, hi)
        assert np.shape(got) == shape and type(got) is type(want)
        assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
        assert np.array_equal(C, keep)
    edges = np.array([-1.0, 1.0, 3.0, -3.0, np.nextafter(1.0, 2), -0.0, 1e300])
    assert np.array_equal(fold_into_bounds(edges), _fold_twin(edges, -1.0, 1.0))
    assert fold_into_bounds([1.25, -1.5, 0.5, 3.5]).tolist() == [0.75, -0.5, 0.5, -0.5]


@pytest.mark.parametrize("k,d", [(1, 1), (3, 2), (10, 5), (7, 13)])
def test_sphere_packing_is_a_packing_and_seeded(k, d):
    C = sphere_packing_init(k, d, random_state=3)
    assert np.array_equal(C, sphere_packing_init(k, d, random_state=3))
    assert not np.array_equal(C, sphere_packing_init(k, d, random_state=4)) or k == 1 and d == 1
    # some margin a = 2**-m: every center at least a from the boundary and
    # pairwise at least 2a apart
    dist = np.sqrt(((C[:, None] - C[None]) ** 2).sum(-1)) + np.eye(k) * 1e9
    edge = np.minimum(C + 1, 1 - C).min()
    ok = [m for m in range(60) if edge >= 2.0 ** -m - 1e-12 and dist.min() >= 2 * 2.0 ** -m - 1e-12]
    assert ok
