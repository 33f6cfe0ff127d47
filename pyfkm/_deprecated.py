"""Deprecated import paths: modules that moved into subpackages (issue 20).

An old module such as ``pyfkm.kmeans`` stays importable for one release: its
public names resolve lazily to their new home, with a ``DeprecationWarning``
that points at the user's line (PEP 562 module ``__getattr__``, the way SciPy
retires its private modules).
"""
import importlib
import warnings

__all__ = ["alias_module"]


def alias_module(old, new, names):
    """``(__getattr__, __dir__)`` for the deprecated module ``old`` whose
    public ``names`` now live in ``new``."""
    names = frozenset(names)

    def __getattr__(name):
        if name not in names:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(f"{old} is deprecated and will be removed in pyfkm 0.3; "
                      f"import {name} from {new} instead", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(new), name)

    def __dir__():
        return sorted(names)

    return __getattr__, __dir__
