"""Which modules a render worker imported after it was confined (there should be none).

A confined worker runs under a uid of its own (`render.sandbox.confine`). Where the checkout or
the virtualenv is private to its owner (a 0700 home), that uid cannot read them, so a module a
task imports for the first time fails there and only there: `np.quantile` loading `numpy.ma`
lazily did, as a 422 seen in a clean-clone CI run. The worker notes what it had loaded when it
was confined; `since_confinement` reports what came after, so a test can run every kind of task
and catch the next such import on any layout (`tests/test_worker_late_imports.py` asks a worker
through `tests/pool_helpers.py`).
"""

from __future__ import annotations

import sys
from pathlib import Path

_PROJECT = Path(__file__).resolve().parents[2]
_loaded_when_confined: set[str] = set()  # filled once, by the worker, when it is confined


def note_confinement() -> None:
    _loaded_when_confined.update(sys.modules)


def since_confinement() -> list[str]:
    """Modules loaded since `note_confinement`, from files a private layout would hide from the
    worker (the project and the virtualenv; not the base interpreter's standard library)."""
    if not _loaded_when_confined:
        return []  # not a confined worker
    hidden = [_PROJECT, Path(sys.prefix).resolve()]
    late = []
    for name, module in list(sys.modules.items()):
        if name in _loaded_when_confined:
            continue
        origin = getattr(module, "__file__", None)
        if origin and any(Path(origin).resolve().is_relative_to(root) for root in hidden):
            late.append(name)
    return sorted(late)
