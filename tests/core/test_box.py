"""pyfkm.core.box: the data-box convention's helper, scale_to_box (issue 21).

Expected values are computed by hand from the affine map
``box[0] + (x - lower) * (box[1] - box[0]) / (upper - lower)``.
"""
import numpy as np
import pytest

import pyfkm
from pyfkm import InvalidInputError
from pyfkm.core.box import scale_to_box


@pytest.mark.parametrize("kwargs, match", [
    (dict(X=[[1.0]], lower=2.0, upper=1.0), "upper > lower"),
    (dict(X=[[1.0]], lower=0.0, upper=np.inf), "finite"),
    (dict(X=[[5.0]], lower=0.0, upper=4.0), r"outside \[lower, upper\] in features \[0\]"),
    (dict(X=[[0.0, 9.0]], lower=[0.0, 0.0], upper=[1.0, 5.0]), r"features \[1\]"),
    (dict(X=[[0.0, 1.0]], lower=[0.0, 0.0, 0.0], upper=1.0), "one per feature"),
    (dict(X=[[0.0]], lower=0.0, upper=1.0, box=(1.0, 0.0)), "box="),
    (dict(X=[[0.0]], lower=0.0, upper=1.0, box=(0.0, 1.0, 2.0)), "pair"),
    (dict(X=[1.0, 2.0], lower=0.0, upper=3.0), "Reshape your data"),
])
def test_bad_input_raises(kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        scale_to_box(**kwargs)


def test_maps_public_ranges_into_the_box():
    X = np.array([[0.0, 100.0], [10.0, 300.0], [2.5, 200.0]])
    got = scale_to_box(X, lower=[0.0, 100.0], upper=[10.0, 300.0], box=(-1.0, 1.0))
    np.testing.assert_allclose(got, [[-1.0, -1.0], [1.0, 1.0], [-0.5, 0.0]])
    # the default box is FederatedKMeans's default bounds
    assert pyfkm.FederatedKMeans().bounds == (-0.5, 0.5)
    np.testing.assert_allclose(scale_to_box([[4.0]], 2.0, 6.0), [[0.0]])
    assert scale_to_box(np.zeros((0, 2)), 0.0, 1.0).shape == (0, 2)


def test_scaled_data_is_accepted_by_both_federated_estimators():
    rng = np.random.default_rng(0)
    raw = [rng.uniform(20.0, 80.0, size=(40, 2)) for _ in range(3)]  # degrees, say
    for est in (pyfkm.FederatedKMeans(2, server_points="centers", random_state=0),
                pyfkm.DPFederatedKMeans(2, epsilon=5.0, random_state=0)):
        clients = [scale_to_box(X, 0.0, 100.0, box=est.bounds) for X in raw]
        est.fit(clients)
        lo, hi = est.bounds
        assert ((est.cluster_centers_ >= lo) & (est.cluster_centers_ <= hi)).all()
        with pytest.raises(InvalidInputError, match="outside bounds"):
            type(est)(**est.get_params()).fit(raw)


def test_top_level_and_mufc_names_are_the_same_function():
    assert pyfkm.scale_to_box is scale_to_box is pyfkm.mufc.scale_to_box
