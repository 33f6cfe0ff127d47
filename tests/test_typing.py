"""The public API is typed (issue 21): pyfkm ships ``py.typed`` (PEP 561), and
every public function, constructor and public method of the names that
``test_public_api.PUBLIC`` lists (and of the pyfkm base classes they inherit
from) annotates every parameter and its return.  The type checker itself runs
as the CI stage ``.ci/typecheck`` (mypy, configured in pyproject.toml); this
file checks what users' checkers and IDEs rely on, without needing mypy.
"""
import ast
import functools
import importlib
import inspect
import pathlib
import sys
import typing
import warnings

import pytest

import pyfkm
from _helpers.public_api import PUBLIC

PACKAGE = pathlib.Path(pyfkm.__file__).resolve().parent
# Methods whose signature comes from Python's data model or dataclasses.
DUNDER_CHECKED = {"__init__", "__call__"}


def missing_annotations(func):
    """Names of ``func``'s parameters (and ``"return"``) without an annotation."""
    sig = inspect.signature(func)
    missing = [p.name for p in sig.parameters.values()
               if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
    if sig.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def _functions_of(cls):
    """(qualified name, function) of the public methods, properties, class and
    static methods that ``cls`` and its pyfkm bases define, and of their
    constructors."""
    out = {}
    for klass in cls.__mro__:
        if not klass.__module__.startswith("pyfkm"):
            continue
        for name, attr in vars(klass).items():
            if name.startswith("_") and name not in DUNDER_CHECKED:
                continue
            if isinstance(attr, (staticmethod, classmethod)):
                attr = attr.__func__
            elif isinstance(attr, property):
                attr = attr.fget
            if inspect.isfunction(attr):
                if getattr(attr, "__module__", "").startswith("pyfkm"):
                    out.setdefault(f"{klass.__module__}.{klass.__qualname__}.{name}", attr)
    return out


def public_callables():
    """Every function to check, by qualified name, without repeats."""
    found = {}
    for module, names in PUBLIC.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            mod = importlib.import_module(module)
        for name in names:
            obj = getattr(mod, name)
            if inspect.ismodule(obj):
                continue
            if inspect.isclass(obj):
                if issubclass(obj, BaseException):
                    continue  # exceptions take a message, as Python's do
                found.update(_functions_of(obj))
            elif inspect.isfunction(obj):
                found.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    return found


CALLABLES = public_callables()


def test_py_typed_marks_the_package():
    # PEP 561: the marker sits in the package folder (and the wheel keeps it).
    assert (PACKAGE / "py.typed").is_file()


def test_the_helper_sees_missing_annotations():
    # the check below can fail: an unannotated function is reported
    def bare(x, y: int = 0):
        return x

    def full(x: int, *args: int, **kw: str) -> int:
        return x

    assert missing_annotations(bare) == ["x", "return"]
    assert missing_annotations(full) == []
    assert len(CALLABLES) > 200  # the public surface was found, not skipped


@pytest.mark.parametrize("qualname", sorted(CALLABLES))
def test_public_callable_is_fully_annotated(qualname):
    missing = missing_annotations(CALLABLES[qualname])
    assert not missing, f"{qualname} lacks annotations for {missing}"


@functools.lru_cache(maxsize=None)
def _type_checking_names(module):
    """The names ``module`` imports under ``if TYPE_CHECKING:`` (to break an
    import cycle), imported now: annotations may name them."""
    tree = ast.parse(inspect.getsource(module))
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            code = compile(ast.Module(body=node.body, type_ignores=[]), module.__file__, "exec")
            exec(code, {"__name__": module.__name__, "__package__": module.__package__}, names)
    return names


@pytest.mark.skipif(sys.version_info < (3, 10),
                    reason="X | Y in annotations evaluates from Python 3.10 on (3.9 reads "
                           "them through the type checker only; no union is built at run time)")
@pytest.mark.parametrize("qualname", sorted(CALLABLES))
def test_annotations_resolve(qualname):
    # every annotation (a string, PEP 563) names something that exists, as
    # users' tools (and typing.get_type_hints) evaluate them
    func = CALLABLES[qualname]
    module = sys.modules[func.__module__]
    hints = typing.get_type_hints(func, localns=_type_checking_names(module))
    assert "return" in hints


def _runtime_annotations(tree):
    """The annotations Python evaluates when the module runs (a module
    without ``from __future__ import annotations``): of defs and of
    variables at module and class level."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if a is not None and a.annotation is not None:
                    out.append(a.annotation)
            if node.returns is not None:
                out.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            out.append(node.annotation)
    return out


def test_annotations_run_on_python_3_9():
    # requires-python is >=3.9: ``X | Y`` (PEP 604) may only appear in
    # annotations that are not evaluated, i.e. in modules that start with
    # ``from __future__ import annotations`` (PEP 563); elsewhere
    # typing.Union/Optional.
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        future = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                     and any(a.name == "annotations" for a in n.names) for n in tree.body)
        if future:
            continue
        for ann in _runtime_annotations(tree):
            if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr)
                   for n in ast.walk(ann)):
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{ann.lineno}")
    assert not bad, f"X | Y evaluated at run time (Python 3.9 fails): {bad}"


def test_the_3_9_check_sees_a_runtime_union():
    tree = ast.parse("def f(x: int | None) -> None: ...\ny: 'ok' = 1\n")
    assert any(isinstance(a, ast.BinOp) for a in _runtime_annotations(tree))


# What a user's checker sees: a script over the public API, checked with
# mypy --strict against pyfkm's annotations (assert_type fails when a call
# returns another type, Any included).
USAGE = """
from typing_extensions import assert_type

import numpy as np
from numpy.typing import NDArray

import pyfkm
from pyfkm.core import NoiseStream
from pyfkm.datasets import make_blobs, split_iid
from pyfkm.deletion import DeletionReport
from pyfkm.dp import PrivacyAccountant, new_noise_key
from pyfkm.field import Field, roots
from pyfkm.mufc import FederatedRemovalReport
from pyfkm.secagg import ScmaClient, ScmaParams, secure_sum_sparse, setup_in_process

X, y, centers = make_blobs(200, 2, 3, random_state=0)
assert_type(X, NDArray[np.float64])
km = pyfkm.KMeans(3, random_state=np.random.default_rng(0)).fit(X)
assert_type(km, pyfkm.KMeans)
labels = km.fit_predict(X)
score: float = km.score(X)
q = pyfkm.QKMeans(3, random_state=0).fit(X)
assert_type(q, pyfkm.QKMeans)
assert_type(q.remove([0, 1]), DeletionReport)
assert_type(pyfkm.DCKMeans(3).fit(X).set_params(n_clusters=2), pyfkm.DCKMeans)
parts = split_iid(X, 4, random_state=0)
clients = [X[p] for p in parts]
fkm = pyfkm.FederatedKMeans(3, random_state=0).fit(clients)
assert_type(fkm, pyfkm.FederatedKMeans)
assert_type(fkm.remove(0, [1]), FederatedRemovalReport)
assert_type(pyfkm.DPFederatedKMeans(3, epsilon=1.0).fit(clients), pyfkm.DPFederatedKMeans)
assert_type(pyfkm.KZCenter(3, 5).fit(X), pyfkm.KZCenter)
assert_type(pyfkm.DistributedKZCenter(3, 5).fit(clients), pyfkm.DistributedKZCenter)
s = pyfkm.RemovableSeeding(X, 3, random_state=0)
assert_type(s.remove(0), pyfkm.RemovalReport)
c, ids = pyfkm.kmeans_plusplus(X, 3, random_state=np.random.SeedSequence(0))
ns = NoiseStream.secure(new_noise_key(), 0, b"SUM")
assert_type(ns.gaussian(3, 1.0), NDArray[np.float64])
ok: bool = PrivacyAccountant(1.0, 1e-6).can_spend("gaussian", 2.0)
r, m = roots([1, 0, 1], 5)
F = Field(7)
server, roles = setup_in_process(ScmaParams.create(2, 4, 8), 3)
assert_type(roles, list[ScmaClient])
bins, counts, report = secure_sum_sparse([([[0, 1]], [2]), ([[1, 1]], [3])], 4)
"""


@pytest.mark.slow
def test_users_type_checker_sees_the_public_types(tmp_path, monkeypatch):
    api = pytest.importorskip("mypy.api")
    script = tmp_path / "usage.py"
    script.write_text(USAGE)
    config = tmp_path / "mypy.ini"  # not the checkout's settings: a user's
    config.write_text("[mypy]\n")
    if "site-packages" not in str(PACKAGE.parent):
        # a source checkout (an editable install's import hook is invisible
        # to mypy); an installed pyfkm is found through its py.typed
        monkeypatch.setenv("MYPYPATH", str(PACKAGE.parent))
    out, err, status = api.run(["--strict", "--follow-imports=silent", "--no-incremental",
                                "--cache-dir", str(tmp_path / "cache"),
                                "--config-file", str(config), str(script)])
    assert status == 0, out + err
