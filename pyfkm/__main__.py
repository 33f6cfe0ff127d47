"""``python -m pyfkm``: the command line of :mod:`pyfkm.cli`.

The ``pyfkm`` console script calls :func:`main` too (``pyproject.toml``).
"""
import sys

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main(prog="python -m pyfkm"))
