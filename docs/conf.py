"""Sphinx configuration of pyfkm's documentation.

Build from the repository root (what ``.ci/docs`` runs)::

    python -m sphinx -W --keep-going -b html docs /tmp/pyfkm-docs/html

Warnings are errors.  Nothing is fetched at build time (no intersphinx).
The gallery (``examples/plot_*.py``) is executed at every build; the
generated folders ``docs/api/generated/`` and ``docs/auto_examples/`` are
build outputs and git-ignored.
"""
import inspect
import os
import time

import matplotlib

matplotlib.use("Agg")

import pyfkm  # noqa: E402  (the installed package, never a path hack)

project = "pyfkm"
author = "the pyfkm developers"
copyright = f"{time.strftime('%Y')}, {author}"
release = pyfkm.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store",
                    "auto_examples/*.ipynb", "auto_examples/*.py"]

# -- API reference ----------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"member-order": "groupwise"}
autodoc_typehints = "none"          # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False  # the class template lists members itself
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- Markdown pages (docs/*.md, CHANGELOG.md, CONTRIBUTING.md) --------------
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# -- Gallery ----------------------------------------------------------------
here = os.path.dirname(os.path.abspath(__file__))
sphinx_gallery_conf = {
    "examples_dirs": os.path.join(here, "..", "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": "/plot_",
    "download_all_examples": False,
    "backreferences_dir": None,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "show_memory": False,
    "within_subsection_order": "FileNameSortKey",
}

# -- HTML -------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"pyfkm {release}"
html_static_path = []
html_theme_options = {
    "description": "Federated k-means that is private and can forget",
    "fixed_sidebar": True,
}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}


# -- A class whose __new__ takes (*args, **kwargs) --------------------------
# (pyfkm.deletion's estimators: __new__ sets up their lock) would show that
# signature; show its constructor's parameters instead, without annotations
# (autodoc_typehints = "none").
def _constructor_signature(app, what, name, obj, options, signature, return_annotation):
    if what != "class" or signature != "(*args, **kwargs)":
        return None
    sig = inspect.signature(obj)
    empty = inspect.Parameter.empty
    sig = sig.replace(parameters=[q.replace(annotation=empty) for q in sig.parameters.values()],
                      return_annotation=empty)
    return str(sig), return_annotation


# -- References to re-exported names ---------------------------------------
# Each object is documented once, at its home (pyfkm.mufc.FederatedKMeans);
# a reference to another public path of the same object (pyfkm.FederatedKMeans,
# pyfkm.secagg.CapacityError) resolves to that documentation.
def _lookup(path):
    """The object at a dotted path under pyfkm, or None."""
    import importlib
    import warnings

    parts = path.split(".")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                return None
            return obj
    return None


def _resolve_reexport(app, env, node, contnode):
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or node.get("reftype") == "mod":
        return None
    domain = env.get_domain("py")
    last = "." + target.rpartition(".")[2]
    if target.startswith("pyfkm."):
        obj = _lookup(target)
        if obj is None:
            return None
        homes = [n for n in sorted(domain.objects)
                 if n != target and n.endswith(last) and _lookup(n) is obj]
    elif "." not in target:
        # a bare name in a docstring (``ProtocolError``): the one pyfkm
        # object of that name, if there is exactly one
        homes = [n for n in sorted(domain.objects)
                 if n.startswith("pyfkm.") and n.endswith(last)]
        if len({id(_lookup(n)) for n in homes}) != 1:
            return None
    else:
        return None
    if not homes:
        return None
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"],
                               homes[0], node, contnode)


def setup(app):
    app.connect("autodoc-process-signature", _constructor_signature)
    app.connect("missing-reference", _resolve_reexport)
