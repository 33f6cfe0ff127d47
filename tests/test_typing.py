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

import numpy as np
import pytest
from numpy.typing import NDArray

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


def conforms(value, hint):
    """Whether ``value`` is of the annotated type ``hint`` (the subset of
    typing the public API uses: classes, unions, tuples, lists, dicts,
    ``NDArray[dtype]``); ``float`` accepts an int (PEP 484)."""
    import types
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is typing.Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, a) for a in args)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(map(conforms, value, args))
    if origin is list:
        return isinstance(value, list) and all(conforms(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if origin is np.ndarray:
        scalar = typing.get_args(args[1])[0]
        return isinstance(value, np.ndarray) and issubclass(value.dtype.type, scalar)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, typing.get_origin(hint) or hint)


def test_conforms_can_fail():
    assert conforms(np.zeros(2, np.int64), NDArray[np.integer])
    assert not conforms(np.zeros(2, np.int32), NDArray[np.int64])
    assert not conforms((1, 2.5), tuple[int, int])
    assert conforms([None, np.zeros(1, bool)], list[typing.Optional[NDArray[np.bool_]]])
    assert not conforms(np.int64(3), int)


def _calls():
    """(qualified name, function, result) of calls of the public API."""
    from pyfkm.core import Lattice, NoiseStream, kmeans_plusplus, lloyd
    from pyfkm.datasets import make_blobs, split_iid, split_non_iid
    from pyfkm.dp import (PrivacyAccountant, fastlloyd_iterations, fastlloyd_noise_scales,
                          fold_into_bounds, sphere_packing_init)
    from pyfkm.field import Field, berlekamp_massey, factor, poly_divmod, roots
    from pyfkm.mufc import MufcClient, merge_sparse, scale_to_box
    from pyfkm.outliers import count_outliers, kzcenter_radius, make_noisy_blobs
    from pyfkm.secagg import secure_sum_sparse

    X, y, _ = make_blobs(120, 2, 3, random_state=0)
    Xb = scale_to_box(X, X.min(), X.max())
    Xo, _, Co = make_noisy_blobs(200, 2, 2, 10, random_state=0)
    lat = Lattice.random(0.5, 2, random_state=0)
    bins = lat.quantize(X)
    km = pyfkm.KMeans(3, random_state=0).fit(X)
    q = pyfkm.QKMeans(3, random_state=0).fit(X)
    dc = pyfkm.DCKMeans(3, random_state=0).fit(X)
    kz = pyfkm.KZCenter(3, 10).fit(Xo)
    fkm = pyfkm.FederatedKMeans(3, secure=False, random_state=0).fit([Xb[:60], Xb[60:]])
    seeding = pyfkm.RemovableSeeding(X, 3, random_state=0)
    client = MufcClient(Xb, 3, gamma=0.1, random_state=0)
    ns = NoiseStream.from_generator(0)
    acc = PrivacyAccountant(1.0, 1e-5)
    calls = [
        (make_blobs, (60, 2, 3), {}), (split_iid, (X, 3), {}), (split_non_iid, (X, y, 3, 2), {}),
        (kmeans_plusplus, (X, 3), {}), (lloyd, (X, X[:3]), {}),
        (lat.quantize, (X,), {}), (lat.centers, (bins,), {}), (lat.sample, (bins, 0), {}),
        (km.predict, (X,), {}), (km.transform, (X,), {}), (km.score, (X,), {}),
        (km.fit_predict, (X,), {}), (q.predict, (X,), {}), (q.remove, ([0],), {}),
        (type(dc).inertia_.fget, (dc,), {}), (type(dc).cluster_centers_.fget, (dc,), {}),
        (kz.predict, (Xo,), {}), (kz.is_outlier, (Xo,), {}),
        (count_outliers, (Xo, Co, 1.0), {}), (kzcenter_radius, (Xo, Co, 3), {}),
        (type(fkm).removed_.fget, (fkm,), {}), (type(fkm).participants_.fget, (fkm,), {}),
        (type(fkm).client_center_rows_.fget, (fkm,), {}), (fkm.remove, (0, [1]), {}),
        (seeding.remove, (0,), {}), (type(seeding).labels_.fget, (seeding,), {}),
        (type(seeding).cluster_sizes_.fget, (seeding,), {}), (seeding.export_state, (), {}),
        (client.sparse_counts, (), {}), (type(client).center_rows_.fget, (client,), {}),
        (merge_sparse, ([([[1, 2]], [3])], 2), {}),
        (ns.gaussian, (3, 1.0), {}), (ns.discrete_gaussian, (3, 1.0), {}),
        (ns.discrete_laplace, (3, 2), {}), (acc.spent, (), {}), (acc.summary, (), {}),
        (fastlloyd_iterations, (1000, 3, 2, 0.5, 1.0), {}),
        (fastlloyd_noise_scales, (1.0, 2), {}), (sphere_packing_init, (3, 2), {}),
        (fold_into_bounds, (np.array([[2.0]]),), {}),
        (Field(7).add, (1, 2), {}), (Field(7).mul, ([1], [2]), {}),
        (poly_divmod, ([1, 2, 1], [1, 1], 7), {}), (roots, ([1, 0, 1], 5), {}),
        (factor, ([1, 0, 1], 5), {}), (berlekamp_massey, ([1, 2, 3, 4], 7), {}),
        (secure_sum_sparse, ([([[0, 1]], [2]), ([[1, 1]], [3])], 4), {}),
        (pyfkm.rng.spawn, (0, 2), {}),
    ]
    out = []
    for func, args, kwargs in calls:
        name = f"{func.__module__}.{func.__qualname__}"
        out.append((name, func, func(*args, **kwargs)))
    return out


@pytest.mark.skipif(sys.version_info < (3, 10), reason="X | Y annotations evaluate from 3.10")
def test_public_calls_return_their_annotated_types():
    # the annotations tell the truth: what a call returns is of its
    # annotated return type (dtypes of arrays included)
    wrong = []
    for name, func, result in _calls():
        module = sys.modules[func.__module__]
        hint = typing.get_type_hints(func, localns=_type_checking_names(module))["return"]
        if not conforms(result, hint):
            wrong.append(f"{name} returned {_describe(result)}, annotated {hint}")
    assert not wrong, "\n".join(wrong)


def _describe(value):
    if isinstance(value, np.ndarray):
        return f"ndarray[{value.dtype}]"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}({', '.join(map(_describe, value))})"
    return type(value).__name__
