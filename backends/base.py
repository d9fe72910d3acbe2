"""The blob backend interface.

A backend stores opaque encrypted blobs under names chosen by vaultd. Only the server process
uses it (`BlobBackend`, async): render workers never reach storage, they ask the server for the
byte ranges they need (`vaultd/broker.py`), which reads them with `read_range`.
"""

from __future__ import annotations

from typing import Protocol


class BackendUnavailable(Exception):
    """Storage could not be reached (after retries); the request should get a 503."""


class BackendConfigError(ValueError):
    """The backend's options are wrong or its optional SDK is missing; the message names the
    setting (never its value, which may be a secret) and says what to set or install."""


class StorageFull(BackendUnavailable):
    """The backend has no room left (ENOSPC, quota); the write was abandoned."""


class BlobWriter(Protocol):
    """A blob being written. Nothing is visible under the final name until `commit`."""

    async def write(self, data: bytes) -> None:
        """Append bytes."""

    async def commit(self) -> int:
        """Make the blob durable and visible under its name; returns its size in bytes."""

    async def abort(self) -> None:
        """Discard everything written; safe to call more than once and after a failure."""


class BlobBackend(Protocol):
    """Async blob storage used by the server process."""

    name: str

    async def start(self) -> None:
        """Prepare the store (create the directory or container when missing). Called once at
        start-up; BackendUnavailable during an outage, after which every call retries it."""

    async def open_writer(self, name: str) -> BlobWriter:
        """Start writing a new blob called `name`."""

    async def read_range(self, name: str, offset: int, length: int) -> bytes:
        """Bytes `offset` to `offset + length` (short at the end). FileNotFoundError if missing."""

    async def size(self, name: str) -> int:
        """Size of a committed blob. FileNotFoundError if missing."""

    async def delete(self, name: str) -> bool:
        """Remove a blob; returns whether it existed."""

    async def exists(self, name: str) -> bool: ...

    async def list_names(self) -> list[tuple[str, float]]:
        """Every committed blob as (name, modified time as a Unix timestamp)."""

    async def sweep_temporaries(self, older_than_seconds: float) -> int:
        """Remove what writers left behind when their process died, idle for at least
        `older_than_seconds`; returns how many. Backends that need no sweeping return 0."""

    async def close(self) -> None:
        """Release connections; the backend is not used afterwards."""
