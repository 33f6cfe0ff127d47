"""Deprecated alias of :mod:`pyfkm.core` (moved in issue 20; removed in pyfkm 0.3)."""
from ._deprecated import alias_module

__all__, __getattr__, __dir__ = alias_module(__name__, "pyfkm.core", ["KMeans", "lloyd"],
                                             {"nearest_center": "pyfkm.core.kmeans"})
