"""Tests of federated DC-k-means's root (pyfkm.mufc.dckmeans.dc_root), by hand."""
import numpy as np

from pyfkm.mufc.dckmeans import dc_root


def test_dc_root_hand_example_weighted_and_unweighted():
    # leaf centroids 0 (size 1), 10 (size 5), 1 (size 3) on a line, k = 2:
    # weighted, {0, 1} merge at (0*1 + 1*3)/4 = 0.75, inertia
    # 1*0.75^2 + 3*0.25^2 = 0.75; unweighted, at 0.5 with inertia 0.5.
    centers = [np.array([[0.], [10.]]), np.array([[1.]])]
    sizes = [np.array([1, 5]), np.array([3])]
    C, inertia, _ = dc_root(centers, sizes, 2, random_state=0)
    assert sorted(C.ravel().tolist()) == [0.75, 10.0] and inertia == 0.75
    C, inertia, _ = dc_root(centers, sizes, 2, weighted=False, random_state=0)
    assert sorted(C.ravel().tolist()) == [0.5, 10.0] and inertia == 0.5
