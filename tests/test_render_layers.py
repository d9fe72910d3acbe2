"""`render/` is one package per place its code runs (docs/architecture.md, "Packages"), in
layers: a package imports only packages below it, no module takes part in an import circle, and
the server loads no drawing module (it names a task by its entry point in
`render.worker.entry_points`, which imports the implementation only inside a worker).

The import graph is read from the source with `ast`, imports inside functions and under
`TYPE_CHECKING` included; what the server loads is observed in a fresh interpreter."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

from render.kernels import blend
from render.pool.blend_kernel import EXTENSIONS, blend_implementation
from tests.import_graph import Graph, find_cycle, imports_of, upward_imports

ROOT = Path(__file__).resolve().parent.parent
RENDER = ROOT / "render"

# Lowest first: each package may import the ones before it, never one after it.
LAYERS = ("wire", "forensic_wire", "kernels", "sandbox", "documents", "forensic", "watermark",
          "page", "office", "worker", "pool")
# What the server (vaultd) and the admin CLI may load of `render`: the packages that run in the
# server, the values and protocols it shares with workers, the task list, and of `office/` the
# type table and the converter's runner (the conversion itself runs in a process of its own).
# Everything else reads or draws untrusted files and stays in workers: the drawing, the leak
# reading, the kernels, the worker's insides, a task's document reads (`documents/`) and the
# Office archive's parsers.
SERVER_MAY_LOAD = ("render", "render.wire", "render.forensic_wire", "render.pool",
                   "render.sandbox", "render.worker", "render.worker.entry_points",
                   "render.office", "render.office.office_types", "render.office.runner",
                   "render.office.launcher_protocol", "render.office.probe")


def not_for_the_server(loaded: list[str]) -> list[str]:
    """The render modules among `loaded` that SERVER_MAY_LOAD does not name (a name ending in a
    package the table names whole, `render.pool.*`, is allowed with it)."""
    whole = ("render.wire", "render.forensic_wire", "render.pool", "render.sandbox")
    return [name for name in loaded if name.split(".")[0] == "render"
            and name not in SERVER_MAY_LOAD and not name.startswith(tuple(f"{p}." for p in whole))]

def render_modules(root: Path = RENDER) -> dict[str, Path]:
    """Dotted name -> file of every module under `root` (a package is its `__init__`)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def module_graph(root: Path = RENDER) -> Graph:
    """Module -> the render modules it names (the longest module a dotted name starts with)."""
    modules = render_modules(root)
    graph: Graph = {}
    for name, path in modules.items():
        for dotted in imports_of(path, name):
            target = _module_of(dotted, modules)
            if target is not None and target != name:
                graph.setdefault(name, {}).setdefault(target, []).append(name)
    return graph


def _module_of(dotted: str, modules: dict[str, Path]) -> str | None:
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def package_graph(root: Path = RENDER) -> Graph:
    graph: Graph = {}
    for module, targets in module_graph(root).items():
        for target in targets:
            if package_of(target) not in ("", package_of(module)):
                graph.setdefault(package_of(module), {}).setdefault(
                    package_of(target), []).append(module)
    return graph


def loaded_by(*modules: str) -> list[str]:
    """The modules a fresh interpreter holds after importing `modules`."""
    code = ("import importlib, json, sys\n"
            f"for name in {list(modules)!r}:\n    importlib.import_module(name)\n"
            "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True)
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_render_holds_only_the_layered_packages() -> None:
    loose = sorted(p.name for p in RENDER.glob("*.py") if p.name != "__init__.py")
    packages = sorted(p.name for p in RENDER.iterdir() if (p / "__init__.py").exists())
    assert loose == [], f"modules outside a package: {loose}"
    assert packages == sorted(LAYERS), "LAYERS and docs/architecture.md name every package"


def test_render_packages_import_only_layers_below_them() -> None:
    wrong = upward_imports(package_graph(), LAYERS)
    assert wrong == [], "\n".join(wrong)


def test_no_render_module_takes_part_in_an_import_circle() -> None:
    graph = module_graph()
    assert find_cycle(graph) is None


def test_the_pool_reaches_the_worker_only_through_its_entry_points() -> None:
    graph = module_graph()
    named = sorted({target for module, targets in graph.items() if package_of(module) == "pool"
                    for target in targets if package_of(target) == "worker"})
    assert named == ["render.worker.entry_points"]


def test_the_server_and_the_admin_cli_load_no_drawing_module() -> None:
    loaded = loaded_by("vaultd.main", "admin_cli.main")
    assert "render.pool.render_pool" in loaded and "render.worker.entry_points" in loaded
    assert not_for_the_server(loaded) == []
    assert "render.forensic_wire.trace_codes" in loaded  # what the server shares, from its place
    assert "render.office.office_types" in loaded  # an upload's first bytes, told in the server
    assert "pypdfium2" not in loaded  # PDFium parses untrusted documents: workers only


def test_a_worker_module_loaded_by_the_server_is_named() -> None:
    loaded = ["render.pool.zygote", "render.sandbox.confine", "render.worker.entry_points",
              "render.documents.brokered_reads", "render.office.formats", "render.pooled",
              "render.worker.tasks", "render.office.runner", "renderer", "vaultd.main"]
    assert not_for_the_server(loaded) == ["render.documents.brokered_reads",
                                          "render.office.formats", "render.pooled",
                                          "render.worker.tasks"]


def test_the_server_names_the_blend_a_worker_loads_without_loading_it(tmp_path: Path) -> None:
    assert blend_implementation() == blend.IMPLEMENTATION == "C"  # setup.sh builds it
    for built in ([], ["_blend"], ["_paper"]):
        kernels = tmp_path / "-".join(built or ["none"])
        kernels.mkdir()
        for name in built:
            shutil.copy(next((RENDER / "kernels").glob(f"{name}.*.so")), kernels)
        assert blend_implementation(kernels) == "Pillow"
    for name in EXTENSIONS:
        shutil.copy(next((RENDER / "kernels").glob(f"{name}.*.so")), tmp_path)
    assert blend_implementation(tmp_path) == "C"


def test_a_worker_has_loaded_every_entry_points_implementation_before_it_forks() -> None:
    """What an entry point imports when called is already loaded by `render.worker.serve`,
    which the zygote preloads: a confined worker imports nothing new (it may not be able to)."""
    path = RENDER / "worker" / "entry_points.py"
    lazy = sorted({node.module for function in ast.parse(path.read_text()).body
                   if isinstance(function, ast.FunctionDef)
                   for node in ast.walk(function)
                   if isinstance(node, ast.ImportFrom) and node.module})
    assert "render.worker.tasks" in lazy and "render.office.formats" in lazy
    loaded = set(loaded_by("render.worker.serve"))
    assert [name for name in lazy if name not in loaded] == []


def test_a_circle_through_modules_and_an_upward_import_are_found(tmp_path: Path) -> None:
    root = tmp_path / "render"
    for package in ("page", "watermark"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "page" / "canvas.py").write_text("from render.watermark.strip import Strip\n")
    (root / "watermark" / "strip.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..page import canvas\n")
    graph = module_graph(root)
    assert find_cycle(graph) == ["render.page.canvas", "render.watermark.strip",
                                 "render.page.canvas"]
    assert upward_imports(package_graph(root), LAYERS) == [
        "watermark imports page, a layer above it (render.watermark.strip)"]
