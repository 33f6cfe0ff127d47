"""Deprecated alias of :mod:`pyfkm.mufc` (moved in issue 20; removed in pyfkm 0.3)."""
from ._deprecated import alias_module

__all__, __getattr__, __dir__ = alias_module(__name__, "pyfkm.mufc", [
    "KFed", "FederatedDCKMeans", "BaselineRemovalReport"],
    {"kfed_server": "pyfkm.mufc.kfed", "dc_root": "pyfkm.mufc.dckmeans"})
