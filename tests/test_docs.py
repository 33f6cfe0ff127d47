"""The documentation's sources as a contract, checked without building Sphinx.

* Every public name of ``tests/test_public_api.py``'s ``PUBLIC`` appears in
  the API reference page of its module (``docs/api/<module>.rst``): either in
  an ``autosummary`` list (documented there) or as a cross-reference to the
  home where it is documented, and that home documents it.
* Every name an ``autosummary`` list documents exists, and no object is
  documented twice (Sphinx would warn about duplicate descriptions).
* Every page the site is made of is reachable from a toctree, and every
  toctree entry exists; the gallery's examples use the public API only.
* The Python code blocks of the pages run (each page's blocks in order, in
  one namespace), so the guide cannot drift from the API.

``.ci/docs`` builds the site itself, with warnings as errors.
"""
import ast
import importlib
import pathlib
import re
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


from _helpers.public_api import PUBLIC  # noqa: E402
DOCS = ROOT / "docs"
API = DOCS / "api"
EXAMPLES = ROOT / "examples"

DIRECTIVE = re.compile(r"^(\s*)\.\. ([\w:-]+)::\s*(.*)$")
ROLE = re.compile(r":(?:py:)?(?:class|func|data|mod|obj|exc|meth|attr):`~?([\w.]+)`")


def directive_blocks(text, name):
    """(argument, option lines, content lines) of every ``.. name::`` block."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = DIRECTIVE.match(line)
        if not m or m.group(2) != name:
            continue
        indent = len(m.group(1))
        options, content = [], []
        for body in lines[i + 1:]:
            if body.strip() and len(body) - len(body.lstrip()) <= indent:
                break
            stripped = body.strip()
            if not stripped:
                continue
            (options if stripped.startswith(":") and not content else content).append(stripped)
        yield m.group(3).strip(), options, content


def page_names(text):
    """The names a page documents (autosummary entries, under its
    currentmodule) and the full names it refers to (roles)."""
    module = None
    documented = {}
    for line in text.splitlines():
        m = DIRECTIVE.match(line)
        if m and m.group(2) in ("currentmodule", "py:currentmodule"):
            module = m.group(3).strip()
    for _, _, content in directive_blocks(text, "autosummary"):
        for entry in content:
            entry = entry.lstrip("~")
            full = entry if entry.startswith("pyfkm") else f"{module}.{entry}"
            documented[full.rpartition(".")[2]] = full
    for directive in ("data", "py:data"):   # constants, written by hand
        for arg, _, _ in directive_blocks(text, directive):
            documented[arg.rpartition(".")[2]] = arg if arg.startswith("pyfkm") else f"{module}.{arg}"
    referenced = {full.rpartition(".")[2]: full for full in ROLE.findall(text)}
    return documented, referenced


def missing_from_page(module, names, text):
    """Names of ``module`` the page neither documents nor links to the home of."""
    documented, referenced = page_names(text)
    missing = []
    for n in names:
        if documented.get(n) == f"{module}.{n}":
            continue
        home = referenced.get(n)
        if home is None:
            missing.append(n)
    return missing


def all_documented():
    """full name -> page, over every API page (a name twice is reported)."""
    seen, twice = {}, []
    for page in sorted(API.glob("*.rst")):
        documented, _ = page_names(page.read_text())
        for full in documented.values():
            if full in seen:
                twice.append((full, seen[full], page.name))
            seen[full] = page.name
    return seen, twice


# --- the checker itself can fail -----------------------------------------------

def test_the_checker_reports_a_missing_name():
    page = """
.. currentmodule:: pyfkm.rng

.. autosummary::
   :toctree: generated/

   as_generator
"""
    assert missing_from_page("pyfkm.rng", ["as_generator", "spawn"], page) == ["spawn"]
    page += "\n* ``pyfkm.rng.spawn``: :func:`pyfkm.rng.spawn`\n"
    assert missing_from_page("pyfkm.rng", ["as_generator", "spawn"], page) == []


def test_the_checker_reads_autosummary_options_and_entries():
    page = ".. currentmodule:: pyfkm.core\n\n.. autosummary::\n   :toctree: generated/\n" \
           "   :nosignatures:\n\n   KMeans\n   ~pyfkm.core.lloyd\n\nText after.\n"
    documented, _ = page_names(page)
    assert documented == {"KMeans": "pyfkm.core.KMeans", "lloyd": "pyfkm.core.lloyd"}


# --- the API reference -----------------------------------------------------------

@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_is_in_the_api_reference(module):
    page = API / f"{module}.rst"
    assert page.exists(), f"docs/api/{module}.rst is missing (add it to docs/api/index.rst too)"
    missing = missing_from_page(module, PUBLIC[module], page.read_text())
    assert not missing, f"docs/api/{module}.rst lacks {missing}"


def test_every_cross_referenced_public_name_is_documented_at_its_home():
    documented, _ = all_documented()
    bad = []
    for module, names in PUBLIC.items():
        _, referenced = page_names((API / f"{module}.rst").read_text())
        for n in names:
            home = referenced.get(n)
            if home is None or f"{module}.{n}" in documented or home in documented:
                continue
            if home.startswith("pyfkm.") and (API / f"{home}.rst").exists():
                continue        # a subpackage, documented by its own page
            bad.append(f"{module}.{n} -> {home}")
    assert not bad, f"links to names no API page documents: {bad}"


def test_documented_names_exist_and_are_documented_once():
    documented, twice = all_documented()
    assert not twice, f"documented on two pages (or twice on one): {twice}"
    for full in documented:
        module, _, name = full.rpartition(".")
        obj = getattr(importlib.import_module(module), name, None)
        assert obj is not None, f"the API reference documents {full}, which does not exist"
        # the documented alias is the very object of the public name
        for pub_module, names in PUBLIC.items():
            if name in names and (pub_module == module or full.startswith(pub_module + ".")):
                assert getattr(importlib.import_module(pub_module), name) is obj


def test_hand_written_constants_state_their_current_value():
    # a constant's value is written in its page (autodoc cannot read the doc
    # of a re-exported int); it must not drift from the code
    checked = 0
    for page in sorted(API.glob("*.rst")):
        text = page.read_text()
        module = page.stem
        for directive in ("data", "py:data"):
            for arg, options, content in directive_blocks(text, directive):
                value = [o.split(":value:", 1)[1].strip() for o in options
                         if o.startswith(":value:")]
                assert value, f"{page.name}: {arg} has no :value:"
                assert content, f"{page.name}: {arg} is not described"
                actual = getattr(importlib.import_module(module), arg)
                assert value[0] == repr(actual), f"{page.name}: {arg} is {actual!r}, not {value[0]}"
                checked += 1
    assert checked >= 2


def test_the_api_index_lists_every_module_page():
    listed = {c for _, _, content in directive_blocks((API / "index.rst").read_text(), "toctree")
              for c in content}
    assert listed == set(PUBLIC), f"docs/api/index.rst toctree: {sorted(listed ^ set(PUBLIC))}"


# --- the site's pages ------------------------------------------------------------

def toctree_entries():
    """(page that holds the toctree, entry as a docname relative to docs/)."""
    for page in sorted(DOCS.rglob("*")):
        if page.suffix not in (".rst", ".md") or "generated" in page.parts \
                or "auto_examples" in page.parts or "_build" in page.parts \
                or "_templates" in page.parts:
            continue
        for _, _, content in directive_blocks(page.read_text(), "toctree"):
            for entry in content:
                if entry.startswith("/"):
                    yield page, entry[1:]
                else:
                    base = page.parent.relative_to(DOCS)
                    yield page, str(base / entry) if str(base) != "." else entry


def test_every_page_is_in_a_toctree_and_every_entry_exists():
    entries = set()
    for page, entry in toctree_entries():
        if entry == "auto_examples/index":      # generated from examples/
            assert (EXAMPLES / "GALLERY_HEADER.rst").exists()
            continue
        assert any((DOCS / (entry + s)).exists() for s in (".rst", ".md")), \
            f"{page.relative_to(ROOT)}: toctree entry {entry!r} has no page"
        entries.add(entry)
    pages = {str(p.relative_to(DOCS).with_suffix("")) for p in DOCS.rglob("*")
             if p.suffix in (".rst", ".md") and not {"generated", "auto_examples", "_build",
                                                     "_templates"} & set(p.parts)
             and p.name != "sg_execution_times.rst"}
    orphans = pages - entries - {"index"}
    assert not orphans, f"pages in no toctree: {sorted(orphans)}"


@pytest.mark.parametrize("page", ["forgetting.md", "threat_model.md"])
def test_the_markdown_pages_stay_where_readme_and_code_point(page):
    # README.md and the docstrings link to docs/<page>: the site renders the
    # same file (myst-parser), it is not copied
    assert (DOCS / page).exists()
    assert any(entry == page[:-3] for _, entry in toctree_entries())


@pytest.mark.parametrize("name, target", [("changelog.md", "../CHANGELOG.md"),
                                          ("contributing.md", "../CONTRIBUTING.md")])
def test_changelog_and_contributing_are_included_not_copied(name, target):
    text = (DOCS / name).read_text()
    assert f"{{include}} {target}" in text
    assert (DOCS / target).resolve().exists()


# --- the gallery -----------------------------------------------------------------

EXAMPLE_FILES = sorted(EXAMPLES.glob("plot_*.py"))


def test_the_gallery_has_examples():
    assert len(EXAMPLE_FILES) >= 4


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.name for p in EXAMPLE_FILES])
def test_examples_use_the_public_api_and_plot(path):
    tree = ast.parse(path.read_text())
    doc = ast.get_docstring(tree)
    assert doc and doc.splitlines()[1].startswith("="), \
        f"{path.name}: sphinx-gallery needs a docstring with a title"
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pyfkm"):
            assert node.module in PUBLIC, f"{path.name} imports from {node.module}"
            for a in node.names:
                assert a.name in PUBLIC[node.module], f"{path.name}: {node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("pyfkm"):
                    assert a.name in PUBLIC, f"{path.name} imports {a.name}"
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "pyfkm":
            used.add(node.attr)
    assert used <= set(PUBLIC["pyfkm"]), f"{path.name} uses pyfkm.{sorted(used - set(PUBLIC['pyfkm']))}"
    assert "matplotlib" in path.read_text()


# --- the code shown in the pages runs ------------------------------------------------

def code_blocks(page):
    """The ``.. code-block:: python`` blocks of a page, dedented."""
    blocks = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = DIRECTIVE.match(lines[i])
        if m and m.group(2) == "code-block" and m.group(3).strip() == "python":
            indent = len(m.group(1))
            body = []
            i += 1
            while i < len(lines) and (not lines[i].strip()
                                      or len(lines[i]) - len(lines[i].lstrip()) > indent):
                body.append(lines[i])
                i += 1
            blocks.append(textwrap.dedent("\n".join(body)).strip("\n"))
        else:
            i += 1
    return blocks


PAGES_WITH_CODE = sorted(p for p in DOCS.rglob("*.rst")
                         if not {"generated", "auto_examples", "_build", "_templates"}
                         & set(p.parts) and code_blocks(p))


def test_the_code_block_reader_finds_the_blocks():
    assert len(PAGES_WITH_CODE) >= 6
    assert "fit(clients)" in "\n".join(code_blocks(DOCS / "index.rst"))


@pytest.mark.parametrize("page", PAGES_WITH_CODE,
                         ids=[str(p.relative_to(DOCS)) for p in PAGES_WITH_CODE])
def test_the_code_in_the_pages_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)          # a snippet that saves a file writes here
    namespace = {}
    for block in code_blocks(page):
        exec(compile(block, str(page), "exec"), namespace)
