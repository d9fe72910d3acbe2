"""The broker: the server's side of a render task's one document.

A render worker holds no key and no storage credential. When its task names a document, the
pool lets it ask for plaintext ranges of that document only (bounded, within its size: checked
in `render.pool.render_pool`); this object answers by reading the blob through the backend and
opening the chunks the range covers. The blob is verified (length, key commitment, final chunk) at
the first read, so a worker that finds a page in its own cache costs the server nothing.
"""

from __future__ import annotations

import asyncio

from render.wire.model import DocumentSource
from vaultd.crypto.blob_format import ChunkOpener, iter_plaintext_async
from vaultd.records import FileDoc
from vaultd.services.files.blobs import BlobStore


class BrokeredFile:
    """One file's plaintext, read on demand for one task."""

    def __init__(self, store: BlobStore, file_doc: FileDoc, data_key: bytes | None = None
                 ) -> None:
        self._store = store
        self._file = file_doc
        self._data_key = data_key  # an upload's own, before its record holds it wrapped
        self._opener: ChunkOpener | None = None
        self._opening: asyncio.Lock | None = None
        self.source = DocumentSource(
            content_type=file_doc["contentType"],
            plaintext_size=int(file_doc["size"]),
            cache_key=file_doc["_id"],
            version=file_doc["blob"]["name"],
        )
        self.account: str = file_doc["accountId"]

    @property
    def size(self) -> int:
        return self.source.plaintext_size

    async def read(self, offset: int, length: int) -> bytes:
        """Plaintext [offset, offset + length): FileNotFoundError, BlobCorrupt or the backend's
        error as they happen (the pool reports them to the task's caller)."""
        opener = await self._open()
        name = self._file["blob"]["name"]
        backend = self._store.backend
        pieces = [piece async for piece in iter_plaintext_async(
            lambda at, size: backend.read_range(name, at, size), opener, offset, length)]
        return b"".join(pieces)

    async def check(self) -> None:
        """FileNotFoundError if the blob is gone; the backend's error if it does not answer."""
        if not await self._store.backend.exists(self._file["blob"]["name"]):
            raise FileNotFoundError("file not found")

    async def _open(self) -> ChunkOpener:
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._opener is None:
                self._opener = await self._store.open_plaintext(self._file, self._data_key)
            return self._opener


def brokered(store: BlobStore, file_doc: FileDoc, data_key: bytes | None = None
             ) -> BrokeredFile:
    return BrokeredFile(store, file_doc, data_key)
