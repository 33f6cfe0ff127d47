"""The package layout as a contract (issue 20): imports point downward only,
no private name crosses from one part of the package to another, and no
module grows past ~600 lines without saying why.

Parts and their layers (a part may import its own modules and any part of a
lower layer, nothing else):

0. the foundation, shared by every part: ``exceptions``, ``rng`` and the
   package-internal ``_validation``, ``_base``, ``_progress``, ``_deprecated``;
1. ``core`` (k-means, seeding, lattice, noise samplers), ``field`` and
   ``datasets``;
2. ``secagg`` (secure aggregation) and ``metrics``;
3. the families ``mufc``, ``dp``, ``deletion`` and ``outliers`` (they never
   import each other);
4. the application: ``pyfkm/__init__``, ``demo``, ``__main__`` and the
   deprecated aliases of the old flat modules.

Each compiled kernel module ``pyfkm._core._x`` belongs to one part (``OWNER``);
other parts reach a kernel through its owner's public ``kernels`` module.

``tests/`` mirrors the package: every subpackage has its tests folder, every
tests folder is a subpackage's, and its files are named after the modules
(``tests/README.md``).
"""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "pyfkm"

FOUNDATION = {"exceptions", "rng", "_validation", "_base", "_progress", "_deprecated"}
LAYER = {"core": 1, "field": 1, "datasets": 1, "secagg": 2, "metrics": 2,
         "mufc": 3, "dp": 3, "deletion": 3, "outliers": 3}
APP = {"__init__", "demo", "__main__", "cli", "_cli_files", "kmeans", "seeding", "lattice",
       "privacy", "federated", "baselines"}
OWNER = {"_field": "field", "_lattice": "core", "_lloyd": "core", "_seeding": "core",
         "_noise": "core", "_kcenter": "outliers"}
# Modules with more lines of code than this (docstrings, comments and blank
# lines aside) must say why in their docstring ("Why one module").
MAX_LINES = 600


def modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
            is_pkg = True
        else:
            is_pkg = False
        yield ".".join(parts), path, is_pkg


def part_of(name):
    """'pyfkm.secagg._roles' -> 'secagg'; 'pyfkm.rng' -> 'foundation'."""
    bits = name.split(".")
    top = "__init__" if len(bits) == 1 else bits[1]
    return "foundation" if top in FOUNDATION else "app" if top in APP else top


def layer(part):
    return {"foundation": 0, "_core": 0, "app": 4, **LAYER}[part]


def imports(name, path, is_pkg):
    """(module imported, names imported from it, line) for every import."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if is_pkg else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("pyfkm"):
                    yield a.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("pyfkm"):
                continue
            names = [a.name for a in node.names]
            if node.module is None or node.level and not node.module:
                # "from . import x" / "from .. import x": x may be a module
                for n in names:
                    yield f"{mod}.{n}", [], node.lineno
            else:
                yield mod, names, node.lineno


ALL = list(modules())
EDGES = [(name, target, names, line, path)
         for name, path, is_pkg in ALL for target, names, line in imports(name, path, is_pkg)]


def test_the_scan_sees_the_package():
    parts = {part_of(n) for n, _, _ in ALL}
    assert {"core", "field", "secagg", "mufc", "dp", "deletion", "outliers"} <= parts
    assert len(EDGES) > 100


def test_every_part_has_a_layer():
    unknown = {part_of(n) for n, _, _ in ALL} - set(LAYER) - {"foundation", "app", "_core"}
    assert not unknown, f"place {sorted(unknown)} in LAYER"


def test_imports_point_downward():
    bad = []
    for src, dst, _, line, path in EDGES:
        a, b = part_of(src), part_of(dst)
        if a != b and not layer(b) < layer(a):
            bad.append(f"{path.relative_to(ROOT.parent)}:{line}: {src} -> {dst}")
    assert not bad, "upward or sideways imports:\n" + "\n".join(bad)


def test_no_private_name_crosses_parts():
    bad = []
    for src, dst, names, line, path in EDGES:
        a, b = part_of(src), part_of(dst)
        if a == b or b == "foundation":
            continue  # inside one part, or the shared foundation
        where = f"{path.relative_to(ROOT.parent)}:{line}"
        if b == "_core":
            kernels = [dst.split(".")[2]] if dst.count(".") >= 2 else names
            bad += [f"{where}: {src} uses kernel {k} owned by {OWNER.get(k)}"
                    for k in kernels if OWNER.get(k) != a]
            continue
        private_mod = [bit for bit in dst.split(".")[1:] if bit.startswith("_")]
        private_names = [n for n in names if n.startswith("_")]
        if private_mod or private_names:
            bad.append(f"{where}: {src} imports {dst} {private_names or ''}")
    assert not bad, "private names across parts:\n" + "\n".join(bad)


@pytest.mark.parametrize("name, path", [(n, p) for n, p, _ in ALL], ids=[n for n, _, _ in ALL])
def test_long_modules_say_why(name, path):
    text = path.read_text()
    n_lines = code_lines(text)
    if n_lines > MAX_LINES:
        doc = ast.get_docstring(ast.parse(text)) or ""
        assert "Why one module" in doc, (
            f"{name} has {n_lines} lines of code: split it, or say in its docstring under "
            "'Why one module' why it stays whole")


def code_lines(text):
    """Lines of code: not blank, not a comment, not inside a docstring (the
    documentation a module carries does not make it too long)."""
    doc = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(
                    getattr(body[0], "value", None), ast.Constant) and isinstance(
                    body[0].value.value, str):
                doc.update(range(body[0].lineno, body[0].end_lineno + 1))
    return sum(1 for i, line in enumerate(text.splitlines(), 1)
               if i not in doc and line.strip() and not line.strip().startswith("#"))


def test_code_lines_leave_out_docstrings_comments_and_blanks():
    text = '"""Doc\n\nmore."""\nimport os\n\n# note\ndef f():\n    """Doc."""\n    return 1\n'
    assert code_lines(text) == 3


# --- tests/ mirrors pyfkm/ (tests/README.md) --------------------------------------

TESTS = pathlib.Path(__file__).resolve().parent
# tests/ folders that are not the tests of a subpackage
NOT_MIRRORS = {"oracles", "_helpers", "c", "__pycache__"}
SUBPACKAGES = sorted(p.parent.relative_to(ROOT) for p in ROOT.rglob("__init__.py")
                     if p.parent != ROOT and not p.parent.name.startswith("_"))


def test_the_mirror_scan_sees_the_subpackages():
    assert {pathlib.Path("secagg/scma"), pathlib.Path("deletion")} <= set(SUBPACKAGES)


@pytest.mark.parametrize("sub", SUBPACKAGES, ids=[str(s) for s in SUBPACKAGES])
def test_every_subpackage_has_its_tests_folder(sub):
    folder = TESTS / sub
    assert sorted(folder.glob("test_*.py")), f"pyfkm/{sub} has no tests in tests/{sub}/"


def test_every_tests_folder_mirrors_a_subpackage():
    # hidden folders are tools' caches (.hypothesis, .benchmarks, .pytest_cache)
    folders = {p.relative_to(TESTS) for p in TESTS.rglob("*") if p.is_dir()
               and not NOT_MIRRORS & set(p.relative_to(TESTS).parts)
               and not any(part.startswith(".") for part in p.relative_to(TESTS).parts)}
    assert not folders - set(SUBPACKAGES), f"no pyfkm subpackage for {folders - set(SUBPACKAGES)}"


@pytest.mark.parametrize("sub", SUBPACKAGES, ids=[str(s) for s in SUBPACKAGES])
def test_test_files_are_named_after_a_module(sub):
    """tests/<sub>/test_<module>[_<topic>].py tests pyfkm/<sub>/<module>.py (or _<module>)."""
    modules = {p.stem.lstrip("_") for p in (ROOT / sub).glob("*.py") if p.stem != "__init__"}
    bad = [p.name for p in (TESTS / sub).glob("test_*.py")
           if not any(p.stem[5:] == m or p.stem[5:].startswith(m + "_") for m in modules)]
    assert not bad, f"tests/{sub}: {bad} name no module of pyfkm/{sub} ({sorted(modules)})"


def test_no_private_name_read_by_string():
    # getattr/hasattr/setattr with a literal private name on another object
    # would hide from the import checks above a private name read across
    # parts (as metrics once read FederatedKMeans' _clients); parts use
    # public names.
    bad = []
    for name, path, _ in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr", "setattr", "delattr")
                    and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                    # an object's own private state (self, cls) is its business
                    and not (isinstance(node.args[0], ast.Name)
                             and node.args[0].id in ("self", "cls"))
                    and isinstance(node.args[1].value, str)
                    and node.args[1].value.startswith("_")
                    and not node.args[1].value.startswith("__")):
                bad.append(f"{name}:{node.lineno} {node.func.id}(..., {node.args[1].value!r})")
    assert not bad, bad
