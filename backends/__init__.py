"""Blob backends, chosen by a short name in config (`storage.backend`).

`BACKENDS` is the one registry: the config's choices are its names, and a backend is built by
its module's `create(options)`. Adding a backend is a module with the `BackendModule` functions
(its class following `BlobBackend`) and a line here; its settings are `storage.<name>.*` in
`vaultd/config.py`, passed to `create` by name. Implementations are imported lazily, so a
deployment that never uses Azure or S3 needs neither SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, cast

from backends.base import BackendConfigError, BackendUnavailable, BlobBackend


class BackendModule(Protocol):
    """What every backend module exports."""

    def create(self, options: Mapping[str, str]) -> BlobBackend:
        """The backend from its options: its `storage.<name>.*` settings by their last part,
        and `data_dir`. BackendConfigError when they are wrong or an SDK is missing."""


@dataclass(frozen=True)
class BackendSpec:
    module: str
    install: str  # what to install when the module's import fails


BACKENDS: dict[str, BackendSpec] = {
    "local": BackendSpec("backends.local", ""),
    "azure": BackendSpec("backends.azure", "pip install azure-storage-blob aiohttp"),
    "s3": BackendSpec("backends.s3", "pip install 'aiobotocore>=2.19'"),
}


def backend_module(name: str) -> BackendModule:
    """The module implementing backend `name`, imported on first use."""
    if name not in BACKENDS:
        known = ", ".join(sorted(BACKENDS))
        raise BackendConfigError(f"storage.backend: unknown backend {name!r} (known: {known})")
    spec = BACKENDS[name]
    try:
        return cast(BackendModule, importlib.import_module(spec.module))
    except ImportError as exc:
        raise BackendConfigError(f"storage.backend {name!r} needs: {spec.install} ({exc})") from exc


def create_backend(name: str, options: Mapping[str, str]) -> BlobBackend:
    """The one way a backend is built, in vaultd and in vault-admin."""
    return backend_module(name).create(options)


__all__ = [
    "BACKENDS",
    "BackendConfigError",
    "BackendModule",
    "BackendUnavailable",
    "BlobBackend",
    "backend_module",
    "create_backend",
]
