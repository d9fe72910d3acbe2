"""`vaultd/services/` is one package per domain, in layers (docs/architecture.md, "Services by
domain"): a package imports only packages below it, so there is no import circle between them.

Read from the source with `ast`, imports under `TYPE_CHECKING` included: a type-only import
still ties one domain to another."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

from tests.import_graph import find_cycle

SERVICES = Path(__file__).resolve().parent.parent / "vaultd" / "services"

# Lowest first: each package may import the ones before it, never one after it.
LAYERS = ("common", "accounts", "members", "notifications", "webhooks", "files", "links", "gates",
          "pages", "rooms", "analytics", "tracing", "storage", "audit")
MAX_MODULE_LINES = 400

Graph = dict[str, dict[str, list[str]]]  # package -> package it imports -> the modules that do


def _imported_modules(tree: ast.Module, importer: str) -> Iterator[str]:
    """Dotted names of what `tree` imports, relative imports resolved from `importer`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = importer.split(".")  # a package's own module is its `__init__`
                parent = parts[: len(parts) - node.level]
                base = ".".join([*parent, base] if base else parent)
            # `from vaultd.services import files` names a package: each name may be one
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _services_package(dotted: str) -> str | None:
    parts = dotted.split(".")
    if parts[:2] != ["vaultd", "services"] or len(parts) < 3:
        return None
    return parts[2]


def package_graph(services: Path = SERVICES) -> Graph:
    graph: Graph = {}
    for path in sorted(services.rglob("*.py")):
        rel = path.relative_to(services)
        if len(rel.parts) < 2:
            continue  # vaultd/services/__init__.py (a loose module fails its own test)
        package = rel.parts[0]
        importer = "vaultd.services." + ".".join(rel.with_suffix("").parts)
        for dotted in _imported_modules(ast.parse(path.read_text()), importer):
            target = _services_package(dotted)
            if target is not None and target != package:
                graph.setdefault(package, {}).setdefault(target, []).append(str(rel))
    return graph


def describe_cycle(graph: Graph, cycle: list[str]) -> str:
    steps = [f"{a} -> {b} ({', '.join(sorted(set(graph[a][b])))})"
             for a, b in pairwise(cycle)]
    return "import circle between services packages: " + "; ".join(steps)


def upward_imports(graph: Graph) -> list[str]:
    """Imports of a package above the importer in LAYERS (or of one LAYERS does not name)."""
    wrong = []
    for package, targets in sorted(graph.items()):
        for target, modules in sorted(targets.items()):
            if package not in LAYERS or target not in LAYERS:
                wrong.append(f"{package} -> {target}: not in LAYERS ({', '.join(modules)})")
            elif LAYERS.index(target) > LAYERS.index(package):
                wrong.append(f"{package} imports {target}, a layer above it "
                             f"({', '.join(sorted(set(modules)))})")
    return wrong


def test_services_hold_only_the_layered_domain_packages() -> None:
    loose = sorted(p.name for p in SERVICES.glob("*.py") if p.name != "__init__.py")
    packages = sorted(p.name for p in SERVICES.iterdir() if (p / "__init__.py").exists())
    assert loose == [], f"modules outside a domain package: {loose}"
    assert packages == sorted(LAYERS), "LAYERS and docs/architecture.md name every package"


def test_services_packages_import_no_circle() -> None:
    graph = package_graph()
    cycle = find_cycle(graph)
    assert cycle is None, describe_cycle(graph, cycle)


def test_services_packages_import_only_layers_below_them() -> None:
    wrong = upward_imports(package_graph())
    assert wrong == [], "\n".join(wrong)


def test_a_circle_is_found_and_named_with_its_modules() -> None:
    graph: Graph = {"files": {"webhooks": ["files/files.py"]},
                    "webhooks": {"links": ["webhooks/webhook_events.py"]},
                    "links": {"files": ["links/links.py"]}}
    cycle = find_cycle(graph)
    assert cycle == ["files", "webhooks", "links", "files"]
    assert describe_cycle(graph, cycle) == (
        "import circle between services packages: files -> webhooks (files/files.py); "
        "webhooks -> links (webhooks/webhook_events.py); links -> files (links/links.py)")
    assert upward_imports(graph) == [
        "webhooks imports links, a layer above it (webhooks/webhook_events.py)"]


def test_relative_and_type_only_imports_count(tmp_path: Path) -> None:
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "links.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from vaultd.services.pages.page_path import PageRequest\n")
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "files.py").write_text("from ..links import links\n")
    assert package_graph(tmp_path) == {"links": {"pages": ["links/links.py"]},
                                       "files": {"links": ["files/files.py"]}}


def test_every_module_is_under_400_lines() -> None:
    """Services first, but every package of the code, the tests and the benches alike."""
    root = SERVICES.parents[1]
    long = {str(p.relative_to(root)): n
            for package in ("vaultd", "render", "backends", "admin_cli", "tests", "bench")
            for p in (root / package).rglob("*.py")
            if (n := len(p.read_text().splitlines())) >= MAX_MODULE_LINES}
    assert long == {}
