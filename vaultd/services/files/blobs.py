"""Encrypted blobs: a fresh data key per file, wrapped by the master keyring, one blob per file.

This is the only place that joins the blob format, the keyring and the backend. The blob of a
file is named after the file id, so a crash between blob and record is always recoverable.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from backends.base import BlobBackend, BlobWriter
from vaultd.crypto.blob_format import (
    BlobEncryptor,
    ChunkOpener,
    blob_context,
    iter_plaintext_async,
    new_data_key,
    open_verified_async,
)
from vaultd.crypto.keyring import MasterKeyring, WrappedKey
from vaultd.records import FileDoc


@dataclass
class BlobUpload:
    """An encrypted blob being written; plaintext only passes through memory. Its data key
    stays in memory until the record is written, wrapped then (`BlobStore.seal`): an upload
    never depends on the master key that was current when it began."""

    name: str
    account_id: str
    writer: BlobWriter
    encryptor: BlobEncryptor
    data_key: bytes = field(repr=False)

    async def write(self, plaintext: bytes) -> None:
        sealed = self.encryptor.update(plaintext)
        if sealed:
            await self.writer.write(sealed)

    async def close_stream(self) -> None:
        """Write the final (short) chunk; the blob is complete but not yet committed."""
        await self.writer.write(self.encryptor.finalize())

    @property
    def plaintext_size(self) -> int:
        return self.encryptor.plaintext_size


class BlobStore:
    def __init__(
        self,
        backend: BlobBackend,
        keyring: MasterKeyring,
        refresh_keyring: Callable[[], MasterKeyring] | None = None,
    ) -> None:
        self.backend = backend
        self.keyring = keyring
        # Returns the keyring as it is now (cheap when unchanged): `vault-admin master-key
        # rotate` may change the key file while vaultd runs, and new data keys must be wrapped
        # under the new current key from the next upload on.
        self._refresh_keyring = refresh_keyring

    def _current_keyring(self) -> MasterKeyring:
        if self._refresh_keyring is not None:
            self.keyring = self._refresh_keyring()
        return self.keyring

    async def begin(self, account_id: str, file_id: str) -> BlobUpload:
        key = new_data_key()
        encryptor = BlobEncryptor(key, blob_context(account_id, file_id))
        writer = await self.backend.open_writer(file_id)
        return BlobUpload(file_id, account_id, writer, encryptor, key)

    def seal(self, upload: BlobUpload) -> WrappedKey:
        """The upload's data key wrapped under the master key current now, for its record."""
        return self._current_keyring().wrap(
            upload.data_key, file_id=upload.name, account_id=upload.account_id)

    def in_ring(self, wrapped: WrappedKey) -> bool:
        """Whether the keyring (as it is now) still holds the key `wrapped` is under."""
        return wrapped.key_id in self._current_keyring()

    def _data_key(self, file_doc: FileDoc) -> bytes:
        wrapped = WrappedKey.from_doc(file_doc["blob"]["key"])
        ids = {"file_id": file_doc["_id"], "account_id": file_doc["accountId"]}
        return self._current_keyring().unwrap(wrapped, **ids)

    async def open_plaintext(self, file_doc: FileDoc, data_key: bytes | None = None
                             ) -> ChunkOpener:
        """Verify length, commitment and final chunk before a single byte is served. An upload
        in progress passes the data key it holds (its record may not exist yet)."""
        name = file_doc["blob"]["name"]
        return await open_verified_async(
            lambda offset, length: self.backend.read_range(name, offset, length),
            await self.backend.size(name),
            data_key if data_key is not None else self._data_key(file_doc),
            blob_context(file_doc["accountId"], file_doc["_id"]),
            int(file_doc["size"]),
        )

    def iter_plaintext(self, file_doc: FileDoc, opener: ChunkOpener) -> AsyncIterator[bytes]:
        name = file_doc["blob"]["name"]
        return iter_plaintext_async(
            lambda offset, length: self.backend.read_range(name, offset, length), opener
        )
