"""Shared fixtures of the microbenchmarks (``benchmarks/bench_*.py``).

Benchmarks are not in ``testpaths``; run a file explicitly, e.g.
``python -m pytest benchmarks/bench_seeding.py --benchmark-only``.
"""
import pathlib
import sys

import numpy as np
import pytest

# pyproject's --import-mode=importlib puts no test folder on sys.path: add
# benchmarks/ (_timing, _labels) and tests/ (the numpy twins of the kernels
# are the tests' oracles, tests/oracles/).
_HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE), str(_HERE.parent / "tests")]

from _timing import single_thread  # noqa: E402 (benchmarks/ on sys.path)


@pytest.fixture(scope="module")
def one_thread():
    """Cap BLAS and OpenMP at one thread for a whole module.

    Both libraries of a comparison then run single-threaded in the same
    environment, as in ``compare_sklearn.py``.  Opt in with
    ``pytestmark = pytest.mark.usefixtures("one_thread")``.
    """
    with single_thread():
        yield


def pytest_benchmark_update_machine_info(config, machine_info):
    """Record the library versions in saved runs (``--benchmark-save``)."""
    import pyfkm

    versions = {"pyfkm": pyfkm.__version__, "numpy": np.__version__}
    try:
        import sklearn
        versions["scikit-learn"] = sklearn.__version__
    except ImportError:
        pass
    machine_info["versions"] = versions
