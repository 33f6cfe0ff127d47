"""Federated k-means with exact unlearning (MUFC, Pan et al., ICLR 2023).

* :mod:`pyfkm.mufc.estimator`: :class:`FederatedKMeans`, the estimator (an
  in-process driver of the protocol);
* :mod:`pyfkm.mufc.client`: :class:`MufcClient`, the client role (local
  seeding with exact removal, quantized counts), and :func:`scale_to_box`;
* :mod:`pyfkm.mufc.server`: :class:`MufcServer`, the server role;
* :mod:`pyfkm.mufc.aggregation`: :func:`merge_sparse` and the rounds in the
  clear or with secure aggregation;
* :mod:`pyfkm.mufc.persistence`: the model file format;
* :mod:`pyfkm.mufc.baselines`: what the baselines that retrain to unlearn
  (the paper's comparisons) share; :mod:`pyfkm.mufc.kfed` (K-FED) and
  :mod:`pyfkm.mufc.dckmeans` (federated DC-k-means).
"""
from .aggregation import merge_sparse
from .baselines import BaselineRemovalReport
from .client import MufcClient, scale_to_box
from .dckmeans import FederatedDCKMeans
from .estimator import FederatedKMeans, FederatedRemovalReport
from .kfed import KFed
from .server import MufcServer

__all__ = ["FederatedKMeans", "MufcClient", "MufcServer", "FederatedRemovalReport",
           "scale_to_box", "merge_sparse", "KFed", "FederatedDCKMeans",
           "BaselineRemovalReport"]
