"""The blob backend interface, and the buffered writer the object-store backends share.

A backend stores opaque encrypted blobs under names chosen by vaultd. Only the server process
uses it (`BlobBackend`, async): render workers never reach storage, they ask the server for the
byte ranges they need (`vaultd/broker.py`), which reads them with `read_range`.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import ClassVar, Protocol

log = logging.getLogger("vaultd.backends")


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


class _Deletes(Protocol):
    async def delete(self, name: str) -> bool: ...


class PartWriter(ABC):
    """A `BlobWriter` for stores that take a blob as parts (S3 multipart, Azure staged blocks):
    it buffers what is written and sends a part of exactly `part_size` bytes whenever that much
    has accumulated (at most one part held). `commit` sends the tail as the last part and
    completes, in one request; with `puts_small_blobs_whole`, a blob smaller than one part goes
    in a single request instead. Nothing is visible under the name before. A backend supplies
    only its calls: send a part, connect, complete, discard."""

    puts_small_blobs_whole: ClassVar[bool] = False

    def __init__(self, store: _Deletes, name: str, part_size: int) -> None:
        self._store = store
        self._name = name
        self._part_size = part_size
        self._parts_sent = 0
        self._buffer = bytearray()
        self._size = 0
        self._state = "open"  # open -> committed | aborted; "uncertain" if commit may have landed

    @abstractmethod
    async def _send_part(self, data: bytes) -> None:
        """Store one part (never visible by itself); parts arrive in order."""

    @abstractmethod
    async def _connect(self) -> None:
        """What the completing request needs first (a client, the container): a failure here
        is not taken for a commit that may have landed."""

    @abstractmethod
    async def _complete(self, whole: bytes) -> None:
        """Make the blob visible: the parts sent, or `whole` in one request when none was (only
        with `puts_small_blobs_whole`; `whole` is empty otherwise)."""

    @abstractmethod
    async def _discard_parts(self) -> None:
        """Drop what was sent when the writer is aborted before completing (even a part that
        failed half-way)."""

    def _check_open(self) -> None:
        if self._state != "open":
            raise ValueError(f"blob writer for {self._name} is {self._state}")

    async def write(self, data: bytes) -> None:
        self._check_open()
        self._buffer += data
        self._size += len(data)
        while len(self._buffer) >= self._part_size:  # parts of exactly part_size, but the last
            await self._flush(self._part_size)

    async def _flush(self, length: int) -> None:
        await self._send_part(bytes(self._buffer[:length]))
        self._parts_sent += 1
        del self._buffer[:length]

    async def commit(self) -> int:
        self._check_open()
        try:
            if self._buffer and (self._parts_sent or not self.puts_small_blobs_whole):
                await self._flush(len(self._buffer))  # the last part: may be under part_size
            await self._connect()
            self._state = "uncertain"
            await self._complete(bytes(self._buffer))
        except BaseException:
            if self._state == "open":
                await self.abort()
            raise
        self._state = "committed"
        self._buffer = bytearray()
        return self._size

    async def abort(self) -> None:
        state, self._buffer = self._state, bytearray()
        if state in ("committed", "aborted"):
            return
        self._state = "aborted"
        try:
            if state == "uncertain":
                # The completing request failed without an answer: it may have landed. Best
                # effort; a blob left behind is an orphan that `vault-admin storage gc` removes.
                await self._store.delete(self._name)
            else:
                await self._discard_parts()
        except (BackendUnavailable, OSError):
            # Parts left behind are removed by the store or the recovery sweep.
            log.warning("could not clean up after the upload of blob %s", self._name)
