"""Every public callable of pyfkm has a complete numpydoc docstring.

The public names are those of ``PUBLIC`` in ``test_public_api.py`` (the API
contract; imported, not restated).  Rules, one test per documented object:

* a public **class**: its docstring has an ``Examples`` section with at least
  one ``>>>`` line, and a ``Parameters`` section when its constructor takes
  arguments (dataclasses included: their fields are the constructor's
  arguments; a constructor annotated ``-> NoReturn``, which only raises and
  points at the alternative constructors, such as ``NoiseStream``'s, takes
  none);
* a public **method** (no leading underscore) defined in pyfkm, on a public
  class or on one of its pyfkm bases: ``Parameters`` when it takes arguments
  besides ``self``/``cls``, and ``Returns`` (or ``Yields``) unless it returns
  ``None``.  A method inherited from a pyfkm base (``predict`` from
  ``CenterModelMixin``, ``get_params`` from ``BaseEstimator``) is checked
  once, where it is defined: the function object is the same for every class
  that inherits it;
* a public **function**: ``Parameters`` (when it takes arguments),
  ``Returns`` (or ``Yields``) unless it returns ``None``, and ``Examples``.

Wherever there is a ``Parameters`` section, the names it documents are
exactly the signature's (numpydoc's PR01 "parameter not documented" and PR02
"documented parameter not in the signature", which catch stale docs):
``self``/``cls`` excepted, ``*args``/``**kwargs`` documented as such.

Exempt: exception classes (their docstring says when they are raised),
constants and modules (``pyfkm.dp``, the ``kernels`` modules), properties
(attributes, not callables: fitted ones such as ``cluster_centers_`` are
listed in their class's ``Attributes`` section), methods
inherited from ``object`` or the standard library (``__eq__``, dataclass
machinery), and dunder or private methods (``__sklearn_tags__``,
``_fitted_centers``).

"Returns ``None``" is read from a ``-> None`` annotation, or else from the
source: a function without a ``return <value>`` or ``yield`` (nested
functions and classes aside).  Sections are found with a small parser (a
title line, then a line of dashes): numpydoc is not a test dependency.
"""
import ast
import importlib
import inspect
import re
import textwrap
import types
import typing

import pytest

from _helpers.public_api import PUBLIC

SECTION_TITLES = ("Parameters", "Returns", "Yields", "Receives", "Other Parameters",
                  "Raises", "Warns", "Warnings", "See Also", "Notes", "References",
                  "Examples", "Attributes", "Methods")


# ---------------------------------------------------------------- parsing

def sections(doc):
    """Split a docstring into its numpydoc sections.

    Parameters
    ----------
    doc : str or None
        A raw ``__doc__``.

    Returns
    -------
    dict
        Section title -> body lines (dedented as the whole docstring);
        the summary and extended summary are under ``""``.

    Examples
    --------
    >>> s = sections('''Sum.
    ...
    ...     Parameters
    ...     ----------
    ...     a : int
    ...     ''')
    >>> sorted(s), s["Parameters"]
    (['', 'Parameters'], ['a : int'])
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    out = {"": []}
    current = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        title = line.strip()
        if (title in SECTION_TITLES and re.fullmatch(r"-{3,}", nxt.strip())
                and len(nxt.strip()) >= len(title)):
            current = title
            out[current] = []
            i += 2
            continue
        out[current].append(line)
        i += 1
    for body in out.values():
        while body and not body[-1].strip():
            body.pop()
    return out


def documented_names(body):
    """Parameter names of a ``Parameters`` section body.

    A name line is a line at the section's base indentation: ``name : type``,
    ``name``, or several names ``x1, x2 : type``; the indented lines below
    it describe it.

    Parameters
    ----------
    body : list of str
        The section's lines.

    Returns
    -------
    list of str
        The names, in order, ``*args``/``**kwargs`` kept as written.

    Examples
    --------
    >>> documented_names(["X : array", "    the data", "a, b : int", "**kwargs"])
    ['X', 'a', 'b', '**kwargs']
    """
    text = [line for line in body if line.strip()]
    if not text:
        return []
    base = min(len(line) - len(line.lstrip()) for line in text)
    names = []
    for line in text:
        if len(line) - len(line.lstrip()) != base:
            continue
        head = line.strip().split(" : ", 1)[0].rstrip(":").strip()
        names += [n.strip() for n in head.split(",") if n.strip()]
    return names


def signature_names(func, drop_first):
    """The parameter names a ``Parameters`` section must document.

    Parameters
    ----------
    func : callable
        A function, or a class (its constructor's signature).
    drop_first : bool
        Drop the first parameter (``self`` or ``cls`` of a method).

    Returns
    -------
    list of str
        The names, ``*args`` and ``**kwargs`` with their stars.

    Examples
    --------
    >>> signature_names(lambda self, a, *b, c=1, **d: None, True)
    ['a', '*b', 'c', '**d']
    """
    params = list(inspect.signature(func).parameters.values())
    if drop_first and params:
        params = params[1:]
    stars = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return [stars.get(p.kind, "") + p.name for p in params]


def returns_none(func):
    """Whether a function returns nothing (``None``) on every path.

    Parameters
    ----------
    func : function
        A Python function (decorators unwrapped by the caller).

    Returns
    -------
    bool
        True for a ``-> None`` annotation, or, without an annotation, for a
        body with no ``return <value>`` and no ``yield`` (nested functions and
        classes not counted); False when the source cannot be read.

    Examples
    --------
    >>> returns_none(test_the_walk_sees_the_api), returns_none(sections)
    (True, False)
    """
    ann = getattr(func, "__annotations__", {}).get("return", inspect.Signature.empty)
    if ann is None or ann == "None":
        return True
    if ann is not inspect.Signature.empty:
        return False
    try:
        source = textwrap.dedent(inspect.getsource(func))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return False
    top = tree.body[0]
    if isinstance(top, ast.Expr) and isinstance(top.value, ast.Lambda):
        return False
    if isinstance(top, ast.Assign) and isinstance(top.value, ast.Lambda):
        return False
    stack = list(getattr(top, "body", []))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            return False
        stack.extend(ast.iter_child_nodes(node))
    return True


# ---------------------------------------------------------------- the walk

def _never_returns(func):
    ann = getattr(func, "__annotations__", {}).get("return")
    return ann is typing.NoReturn or ann in ("NoReturn", "typing.NoReturn")


def _is_pyfkm(obj):
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "pyfkm"


def public_objects():
    """Every documented public object, once.

    Returns
    -------
    list of tuple
        ``(id, kind, obj, owner)``: ``kind`` is ``"class"``, ``"function"``
        or ``"method"``; ``owner`` is the class that defines a
        method (None otherwise); ``id`` names the object for the test ids.

    Examples
    --------
    >>> kinds = {kind for _, kind, _, _ in public_objects()}
    >>> sorted(kinds)
    ['class', 'function', 'method']
    """
    seen = set()
    out = []

    def add(key, kind, obj, owner, attr_name=None):
        if key not in seen:
            seen.add(key)
            out.append((kind, obj, owner, attr_name))

    for module in PUBLIC:
        mod = importlib.import_module(module)
        for name in PUBLIC[module]:
            obj = getattr(mod, name)
            if isinstance(obj, types.ModuleType) or not callable(obj):
                continue  # modules and constants
            if inspect.isclass(obj):
                if issubclass(obj, BaseException):
                    continue
                add(id(obj), "class", obj, None)
                for klass in obj.__mro__:
                    if not _is_pyfkm(klass):
                        continue
                    for attr, raw in vars(klass).items():
                        if attr.startswith("_"):
                            continue
                        if isinstance(raw, property):
                            continue
                        if isinstance(raw, (classmethod, staticmethod)):
                            func = raw.__func__
                        elif inspect.isfunction(raw) or hasattr(raw, "__wrapped__"):
                            func = raw
                        else:
                            continue  # data attributes
                        if not _is_pyfkm(inspect.unwrap(func)):
                            continue  # e.g. dataclass-generated methods
                        add(id(inspect.unwrap(func)), "method", raw, klass, attr)
            else:
                add(id(inspect.unwrap(obj)), "function", obj, None)
    result = []
    for kind, obj, owner, attr_name in out:
        if owner is not None:
            name = f"{owner.__module__}.{owner.__qualname__}.{attr_name}"
        else:
            name = f"{obj.__module__}.{obj.__qualname__}"
        result.append((name, kind, obj, owner))
    return result


OBJECTS = public_objects()


def problems(kind, obj):
    """What the docstring of one public object lacks.

    Parameters
    ----------
    kind : {"class", "function", "method"}
        What ``obj`` is.
    obj : object
        The class, function or method (as found in its class's ``__dict__``:
        a plain function, classmethod or staticmethod).

    Returns
    -------
    list of str
        One line per problem; empty when the docstring is complete.

    Examples
    --------
    >>> def f(a):
    ...     '''Twice.'''
    ...     return 2 * a
    >>> problems("function", f)
    ['no Parameters section', 'no Returns section', 'no Examples section']
    """
    drop_first = False
    if kind == "method":
        drop_first = not isinstance(obj, staticmethod)
        func = inspect.unwrap(getattr(obj, "__func__", obj))
    else:
        func = obj if kind == "class" else inspect.unwrap(obj)
    doc = obj.__doc__ if kind == "class" else func.__doc__
    if not (doc or "").strip():
        return ["no docstring"]
    found = sections(doc)
    errs = []
    try:
        expected = signature_names(func, drop_first)
    except (TypeError, ValueError):  # no signature (a builtin __init__)
        expected = []
    if kind == "class" and _never_returns(getattr(obj, "__init__", None)):
        expected = []
    if expected:
        if "Parameters" not in found:
            errs.append("no Parameters section")
        else:
            documented = documented_names(found["Parameters"])
            undocumented = [n for n in expected if n not in documented]
            stale = [n for n in documented if n not in expected]
            if undocumented:
                errs.append(f"parameters not documented: {undocumented}")
            if stale:
                errs.append(f"documented parameters not in the signature: {stale}")
    if kind in ("function", "method") and not returns_none(func):
        if "Returns" not in found and "Yields" not in found:
            errs.append("no Returns section")
    if kind in ("class", "function"):
        if "Examples" not in found:
            errs.append("no Examples section")
        elif not any(line.lstrip().startswith(">>>") for line in found["Examples"]):
            errs.append("Examples section without a >>> line")
    return errs


# ---------------------------------------------------------------- the tests

def test_the_walk_sees_the_api():
    names = {name for name, _, _, _ in OBJECTS}
    # estimators, their own methods, the inherited ones (where defined) and functions
    for must in ("pyfkm.mufc.estimator.FederatedKMeans",
                 "pyfkm.mufc.estimator.FederatedKMeans.fit",
                 "pyfkm.mufc.estimator.FederatedKMeans.remove_clients",
                 "pyfkm.core.base.CenterModelMixin.predict",
                 "pyfkm._base.BaseEstimator.get_params",
                 "pyfkm.field.poly.poly_mul"):
        assert must in names, must
    # exception classes, modules and constants are not walked
    assert not any(name.endswith(("Error", ".kernels", "DEFAULT_PRIME")) for name in names)
    assert len(OBJECTS) > 150


def test_the_helpers_examples():
    import doctest
    import sys
    result = doctest.testmod(sys.modules[__name__], optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 6 and result.failed == 0


def test_the_checker_finds_what_is_missing():
    def stale(a, b=1):
        """Do.

        Parameters
        ----------
        a : int
        c : int

        Returns
        -------
        int

        Examples
        --------
        >>> 1
        1
        """
        return a

    def gen(x):
        """Items.

        Parameters
        ----------
        x : list

        Yields
        ------
        object

        Examples
        --------
        >>> list(gen([1]))
        [1]
        """
        yield from x

    assert problems("function", stale) == [
        "parameters not documented: ['b']",
        "documented parameters not in the signature: ['c']"]
    assert problems("function", gen) == []

    class A:
        """An A.

        Examples
        --------
        No doctest here.
        """

        def __init__(self, n):
            self.n = n

        def fit(self, X):
            """Fit."""
            return self

        def reset(self):
            """Reset."""
            self.n = 0

    assert problems("class", A) == ["no Parameters section",
                                    "Examples section without a >>> line"]
    assert problems("method", vars(A)["fit"]) == ["no Parameters section",
                                                 "no Returns section"]
    assert problems("method", vars(A)["reset"]) == []


@pytest.mark.parametrize("name, kind, obj, owner", OBJECTS, ids=[o[0] for o in OBJECTS])
def test_public_docstring_is_complete(name, kind, obj, owner):
    errs = problems(kind, obj)
    assert not errs, f"{name}: " + "; ".join(errs)
