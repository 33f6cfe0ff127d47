"""The public API contract, ``PUBLIC`` of tests/test_public_api.py, read as
data for the other tests that walk it (test_docstrings, test_typing,
test_docs): test files never import each other (tests/README.md)."""
import ast
import pathlib

_FILE = pathlib.Path(__file__).resolve().parents[1] / "test_public_api.py"


def read_public():
    """The literal ``PUBLIC`` dict of tests/test_public_api.py."""
    tree = ast.parse(_FILE.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None)
                                             for t in node.targets] == ["PUBLIC"]:
            return ast.literal_eval(node.value)
    raise AssertionError("tests/test_public_api.py has no literal PUBLIC")


PUBLIC = read_public()
