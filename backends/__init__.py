"""Blob backends, chosen by a short name in config (`storage.backend`).

`BACKENDS` is the one registry, by name: the backends shipped here (`BUILT_IN`), then those
other installed distributions declare in the entry point group `vaultd.storage_backends`
(`name = "their.module"`). The settings' choices, `vault-admin storage backends` and `migrate
--to`, the container image's extras and the container test all read it. A backend is a module
with the `BackendModule` functions (its class following `BlobBackend`), built by its
`create(options)`; `options` are its `storage.<name>.*` settings (declared in
`vaultd/settings/storage.py`) by their last part, and `data_dir`. Implementations are imported
lazily, so a deployment that never uses Azure or S3 needs neither SDK. The recipe for a new
backend is in docs/architecture.md.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, cast

from backends.base import BackendConfigError, BackendUnavailable, BlobBackend

ENTRY_POINT_GROUP = "vaultd.storage_backends"


class BackendModule(Protocol):
    """What every backend module exports."""

    def create(self, options: Mapping[str, str]) -> BlobBackend:
        """The backend from its options: its `storage.<name>.*` settings by their last part,
        and `data_dir`. BackendConfigError when they are wrong or an SDK is missing."""


@dataclass(frozen=True)
class BackendSpec:
    module: str
    install: str = ""  # what to install when the module's import fails
    extra: str = ""  # the optional-dependency group of pyproject.toml holding its SDK
    source: str = "built-in"  # or the distribution whose entry point registered it


BUILT_IN: dict[str, BackendSpec] = {
    "local": BackendSpec("backends.local"),
    "azure": BackendSpec("backends.azure", "pip install azure-storage-blob aiohttp", "azure"),
    "s3": BackendSpec("backends.s3", "pip install 'aiobotocore>=2.19'", "s3"),
}


def _entry_point_backends() -> dict[str, BackendSpec]:
    # A plug-in names a module, not an object: the module is the backend (`create`). A plug-in
    # cannot take a built-in's name: a deployment's "local" is always this package's.
    found: dict[str, BackendSpec] = {}
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in BUILT_IN or entry.name in found:
            continue
        distribution = entry.dist.name if entry.dist is not None else "an entry point"
        found[entry.name] = BackendSpec(entry.module, f"the distribution {distribution}",
                                        source=distribution)
    return found


BACKENDS: dict[str, BackendSpec] = {**BUILT_IN, **_entry_point_backends()}


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
    "BUILT_IN",
    "ENTRY_POINT_GROUP",
    "BackendConfigError",
    "BackendModule",
    "BackendSpec",
    "BackendUnavailable",
    "BlobBackend",
    "backend_module",
    "create_backend",
]
