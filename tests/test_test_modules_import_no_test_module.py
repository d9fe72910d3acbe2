"""No module of the test suite imports a test module (`test_*.py`): what two modules share lives
in a helper module, whose name does not start with `test_` (`tests/http_helpers.py`,
`tests/webhook_subscriptions.py`, ...). Importing a test module runs its module-level code,
brings its fixtures and tests into the importer's namespace (pytest collects them twice), and
ties what is shared to tests that may be moved or removed.

Read from the source with `ast`, imports inside functions included."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(tree: ast.Module) -> Iterator[str]:
    """Dotted names `tree` imports; `from a import b` yields `a.b` too (b may be a module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom):  # `from . import test_x`
            yield from (alias.name for alias in node.names)


def python_files(root: Path) -> Iterator[Path]:
    """Every `.py` under `root`, the browser tools' `node_modules` left out (not walked)."""
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name != "node_modules"]
        yield from (Path(folder) / name for name in names if name.endswith(".py"))


def imports_of_test_modules(tests: Path = TESTS) -> list[str]:
    """`path: module` for each import of a test module by any module under `tests`."""
    found = []
    for path in sorted(python_files(tests)):
        for dotted in sorted(set(imported_modules(ast.parse(path.read_text())))):
            if dotted.split(".")[-1].startswith("test_") and dotted.split(".")[0] in (
                    "tests", dotted.split(".")[-1]):
                found.append(f"{path.relative_to(tests)}: {dotted}")
    return found


def test_no_module_of_the_suite_imports_a_test_module() -> None:
    assert imports_of_test_modules() == []


def test_an_import_of_a_test_module_is_found_wherever_it_is(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text("from tests.test_b import helper\n")
    (tmp_path / "test_c.py").write_text("def f():\n    import test_b\n")
    (tmp_path / "helpers.py").write_text("from tests import test_b, waiting\n")
    (tmp_path / "test_d.py").write_text("from tests.test_helpers_x import y\n"
                                        "from tests.http_helpers import upload\n"
                                        "from vaultd.test_mode import z\n")
    assert imports_of_test_modules(tmp_path) == [
        "helpers.py: tests.test_b", "test_a.py: tests.test_b", "test_c.py: test_b",
        "test_d.py: tests.test_helpers_x"]
