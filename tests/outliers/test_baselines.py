"""The (k,z)-center baselines (pyfkm.outliers.baselines) meet their proven
bounds (2z for the Guha-type baseline)."""
import numpy as np
import pytest

from pyfkm.outliers import GuhaKZCenter, MalkomesKZCenter, UniformSamplingKZCenter
from _helpers.outliers import brute_opt


# ------------------------------------------------------------ baselines, data

@pytest.mark.parametrize("seed", range(6))
def test_baselines_guarantees(seed):
    rng = np.random.default_rng(400 + seed)
    n, k, z = 9, 2, 2
    X = rng.normal(size=(n, 2))
    machines = [X[:4], X[4:]]
    opt = brute_opt(X, k, z)
    g = GuhaKZCenter(k, z, epsilon=0.5, random_state=0).fit(machines)
    assert g.n_declared_outliers_ <= 2 * z
    assert g.radius_ <= 24 * 1.5 * opt + 1e-12
    mk = MalkomesKZCenter(k, z).fit(machines)
    # every point is sent (k + z >= n_i): the coordinator solves it exactly
    assert mk.radius_ <= 3 * opt + 1e-12 and mk.n_declared_outliers_ <= z
    us = UniformSamplingKZCenter(k, z, sample_fraction=1.0, random_state=0).fit(machines)
    assert len(us.cluster_centers_) <= k
