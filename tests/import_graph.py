"""Imports read from source, import circles and upward imports in a graph of packages or modules,
for the tests that hold `vaultd/services/` and `render/` in layers
(`tests/test_services_layers.py`, `tests/test_render_layers.py`)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

Graph = dict[str, dict[str, list[str]]]  # node -> node it imports -> the modules that do


def imports_of(path: Path, importer: str) -> Iterator[str]:
    """Dotted names `path` imports, anywhere in it, under `TYPE_CHECKING` and inside functions
    included (`from a import b` yields `a.b`: b may be a module, else `a.b` stands for `a`);
    relative imports resolved from `importer`, the module's dotted name (a package's is its
    own, for its `__init__.py`)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = importer.split(".")
                if path.name != "__init__.py":
                    package = package[:-1]
                parent = package[: len(package) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            yield from (f"{base}.{alias.name}" for alias in node.names)


def upward_imports(graph: Graph, layers: Sequence[str]) -> list[str]:
    """Imports of a package above the importer in `layers` (lowest first), or of one `layers`
    does not name."""
    wrong = []
    for package, targets in sorted(graph.items()):
        for target, modules in sorted(targets.items()):
            if package not in layers or target not in layers:
                wrong.append(f"{package} -> {target}: not in LAYERS ({', '.join(modules)})")
            elif layers.index(target) > layers.index(package):
                wrong.append(f"{package} imports {target}, a layer above it "
                             f"({', '.join(sorted(set(modules)))})")
    return wrong


def find_cycle(graph: Mapping[str, Mapping[str, list[str]]]) -> list[str] | None:
    """One import circle as [a, b, ..., a], or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node):], node]
        if node in done:
            return None
        for target in sorted(graph.get(node, {})):
            cycle = visit(target, [*path, node])
            if cycle is not None:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle is not None:
            return cycle
    return None
