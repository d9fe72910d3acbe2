"""A test-only storage backend, the worked example of the backend recipe (docs/architecture.md):
blobs as files under `data_dir/twist`, every byte stored XOR 0x5A, so what is on disk is never
what vaultd wrote, and a read that skipped the backend's own `read_range` would decrypt nothing.
Registered by an entry point of a distribution that exists only in the test's directory
(`twist_distribution`), as a third-party backend would be."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from backends.base import BlobWriter
from backends.local import LocalBackend

NAME = "twist"
TWIST = bytes(byte ^ 0x5A for byte in range(256))


def twisted(data: bytes) -> bytes:
    """Stored form of `data`, and back again: XOR is its own inverse, position by position."""
    return data.translate(TWIST)


class TwistWriter:
    def __init__(self, inner: BlobWriter) -> None:
        self._inner = inner

    async def write(self, data: bytes) -> None:
        await self._inner.write(twisted(data))

    async def commit(self) -> int:
        return await self._inner.commit()

    async def abort(self) -> None:
        await self._inner.abort()


class TwistBackend(LocalBackend):
    name = NAME

    async def open_writer(self, name: str) -> TwistWriter:
        return TwistWriter(await super().open_writer(name))

    async def read_range(self, name: str, offset: int, length: int) -> bytes:
        return twisted(await super().read_range(name, offset, length))


def create(options: Mapping[str, str]) -> TwistBackend:
    """The backend factory (`backends.BackendModule`): a plug-in has no settings of its own
    here, only `data_dir`."""
    return TwistBackend(Path(options["data_dir"]) / NAME)


def distribution(directory: Path, name: str, backends: dict[str, str]) -> Path:
    """An installed distribution `name` in `directory` (its metadata only) whose entry points
    register `backends` (backend name to module): put `directory` on PYTHONPATH to have them
    found, as pip would have installed them."""
    info = directory / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{backend} = {module}\n" for backend, module in backends.items())
    (info / "entry_points.txt").write_text(f"[vaultd.storage_backends]\n{lines}")
    return directory


def twist_distribution(directory: Path) -> Path:
    """The distribution that registers this module as backend "twist"."""
    return distribution(directory, "vaultd-twist-example", {NAME: __name__})
