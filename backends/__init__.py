"""Blob backends, chosen by a short name in config (`storage.backend`).

Implementations are imported lazily, so a deployment that never uses Azure needs no Azure SDK.
"""

from __future__ import annotations

import importlib
from typing import Any

from backends.base import BackendUnavailable, BlobBackend, BlobRef, SyncBlobReader

# name -> (module, what to install when the import fails)
KNOWN_IMPLEMENTATIONS: dict[str, tuple[str, str]] = {
    "local": ("backends.local", ""),
    "azure": ("backends.azure", "pip install azure-storage-blob aiohttp"),
}


def backend_module(name: str) -> Any:
    """The module implementing backend `name`, imported on first use."""
    if name not in KNOWN_IMPLEMENTATIONS:
        known = ", ".join(sorted(KNOWN_IMPLEMENTATIONS))
        raise ValueError(f"storage.backend: unknown backend {name!r} (known: {known})")
    module, install = KNOWN_IMPLEMENTATIONS[name]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"storage.backend {name!r} needs: {install} ({exc})") from exc


def open_reader(ref: BlobRef) -> SyncBlobReader:
    """Open a blob for synchronous random access; used in worker processes."""
    reader: SyncBlobReader = backend_module(ref.backend).open_reader(ref)
    return reader


__all__ = [
    "BackendUnavailable",
    "BlobBackend",
    "BlobRef",
    "SyncBlobReader",
    "backend_module",
    "open_reader",
]
