"""`vaultd/services/` is one package per domain, in layers (docs/architecture.md, "Services by
domain"): a package imports only packages below it, so there is no import circle between them.

Read from the source with `ast`, imports under `TYPE_CHECKING` included: a type-only import
still ties one domain to another."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from tests.import_graph import Graph, find_cycle, imports_of, upward_imports

SERVICES = Path(__file__).resolve().parent.parent / "vaultd" / "services"

# Lowest first: each package may import the ones before it, never one after it.
LAYERS = ("common", "accounts", "members", "notifications", "webhooks", "files", "links", "gates",
          "pages", "rooms", "analytics", "tracing", "storage", "audit")
MAX_MODULE_LINES = 400

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
        parts = rel.with_suffix("").parts
        importer = ".".join(["vaultd", "services",
                             *(parts[:-1] if parts[-1] == "__init__" else parts)])
        for dotted in imports_of(path, importer):
            target = _services_package(dotted)
            if target is not None and target != package:
                graph.setdefault(package, {}).setdefault(target, []).append(str(rel))
    return graph


def describe_cycle(graph: Graph, cycle: list[str]) -> str:
    steps = [f"{a} -> {b} ({', '.join(sorted(set(graph[a][b])))})"
             for a, b in pairwise(cycle)]
    return "import circle between services packages: " + "; ".join(steps)


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
    wrong = upward_imports(package_graph(), LAYERS)
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
    assert upward_imports(graph, LAYERS) == [
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
