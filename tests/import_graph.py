"""Import circles in a graph of packages or modules, for the tests that hold `vaultd/services/`
and `render/` in layers (`tests/test_services_layers.py`, `tests/test_render_layers.py`)."""

from __future__ import annotations

from collections.abc import Mapping


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
