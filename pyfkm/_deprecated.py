"""Deprecated names kept for one release (issue 20): modules that moved
into subpackages, and methods renamed to the library's one verb.

An old module such as ``pyfkm.kmeans`` stays importable for one release: its
public names resolve lazily to their new home, with a ``DeprecationWarning``
that points at the user's line (PEP 562 module ``__getattr__``, the way SciPy
retires its private modules).  A renamed method (``QKMeans.delete``, now
``remove``) stays as an alias that warns the same way and calls the new one.
"""
from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable, Iterable

__all__ = ["alias_module", "renamed_method"]


def alias_module(old: str, new: str, names: Iterable[str], more: dict[str, str] | None = None
                 ) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``(__all__, __getattr__, __dir__)`` for the deprecated module ``old``
    whose public ``names`` (its ``__all__``) now live in ``new``; ``more``
    maps the public names it had outside ``__all__`` to their new modules
    (``__all__`` assigned from a call: pyflakes does not look for the names,
    which only ``__getattr__`` resolves)."""
    listed = list(names)
    homes = {name: new for name in listed}
    homes.update(more or {})

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(f"{old} is deprecated and will be removed in pyfkm 0.3; "
                      f"import {name} from {homes[name]} instead", DeprecationWarning,
                      stacklevel=2)
        return getattr(importlib.import_module(homes[name]), name)

    def __dir__() -> list[str]:
        return sorted(homes)

    return listed, __getattr__, __dir__


def renamed_method(old: str, new: str) -> Callable[..., Any]:
    """A method ``old`` that warns (``DeprecationWarning`` pointing at the
    caller's line) and calls the method ``new`` with the same arguments.

    Examples
    --------
    >>> import warnings
    >>> class Model:
    ...     def remove(self, ids):
    ...         return ids
    ...     delete = renamed_method("delete", "remove")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     Model().delete([3])
    [3]
    >>> str(caught[0].message)
    'Model.delete is deprecated and will be removed in pyfkm 0.3; use Model.remove instead'
    """

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        cls = type(self).__name__
        warnings.warn(f"{cls}.{old} is deprecated and will be removed in pyfkm 0.3; "
                      f"use {cls}.{new} instead", DeprecationWarning, stacklevel=2)
        return getattr(self, new)(*args, **kwargs)

    method.__name__ = method.__qualname__ = old
    method.__doc__ = (f"Deprecated alias of :meth:`{new}` (removed in pyfkm 0.3): warns "
                      f"and calls ``{new}``.\n\n"
                      f"Parameters\n----------\n*args, **kwargs\n"
                      f"    The arguments of :meth:`{new}`.\n\n"
                      f"Returns\n-------\nresult : object\n    What :meth:`{new}` returns.\n")
    return method
