"""Run the Examples sections of the public modules' docstrings as tests."""
import doctest
import importlib

import pytest

import pkgutil

import pyfkm

# Every module of the package but the deprecated aliases (issue 20) and the
# command line entry point; the extension modules have no docstring examples.
MODULES = sorted(
    m.name for m in pkgutil.walk_packages(pyfkm.__path__, "pyfkm.")
    if m.name not in ("pyfkm.__main__", "pyfkm.kmeans", "pyfkm.seeding", "pyfkm.lattice",
                      "pyfkm.privacy", "pyfkm.federated", "pyfkm.baselines")
    and not m.name.startswith("pyfkm._core"))
# Public modules: each documents its API with at least one example (a
# package's __init__ only re-exports its modules' names; the exception classes
# and the demo script have nothing to show).
PUBLIC = [m for m in MODULES if not any(part.startswith("_") for part in m.split("."))
          and not m.endswith((".exceptions", ".demo"))
          and not hasattr(importlib.import_module(m), "__path__")]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    if name in PUBLIC:
        assert result.attempted > 0, f"{name} has no examples"


def test_readme_quickstart_runs(tmp_path, monkeypatch):
    import pathlib
    import re

    monkeypatch.chdir(tmp_path)  # the example saves a model file
    readme = pathlib.Path(__file__).resolve().parents[1] / "README.md"
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    assert blocks, "README has no python example"
    namespace = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    assert namespace["km"].inertia_ > 0
    assert namespace["points"].shape == (10, 5)
    assert namespace["fkm"].cluster_centers_.shape == (8, 5)
    assert (tmp_path / "model.npz").exists()
