"""Deletion-efficient centralized k-means (Ginart et al., NeurIPS 2019):
Q-k-means and DC-k-means, whose deletions equal retraining bit for bit."""
from ._impl import DCKMeans, DeletionReport, QKMeans, auto_epsilon, auto_n_leaves

__all__ = ["QKMeans", "DCKMeans", "DeletionReport", "auto_epsilon", "auto_n_leaves"]
