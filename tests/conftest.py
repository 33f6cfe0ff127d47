"""Make tests/ importable: the oracles (``oracles``) and shared helpers (``_helpers``).

The suite runs with ``--import-mode=importlib`` (pyproject.toml), so pytest
puts no test folder on ``sys.path``; this file does it once for every run,
``python -m pytest`` at the root as well as a single file.
"""
import pathlib
import sys

_TESTS = str(pathlib.Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
