"""Federated k-means with exact unlearning (MUFC, Pan et al., ICLR 2023).

* :mod:`pyfkm.mufc.estimator`: :class:`FederatedKMeans`, the estimator;
* :mod:`pyfkm.mufc.baselines`: K-FED and federated DC-k-means, which
  retrain to unlearn (the paper's comparisons).
"""
from .baselines import BaselineRemovalReport, FederatedDCKMeans, KFed
from .estimator import (FederatedKMeans, FederatedRemovalReport, MufcClient, MufcServer,
                        merge_sparse, scale_to_box)

__all__ = ["FederatedKMeans", "MufcClient", "MufcServer", "FederatedRemovalReport",
           "scale_to_box", "merge_sparse", "KFed", "FederatedDCKMeans",
           "BaselineRemovalReport"]
