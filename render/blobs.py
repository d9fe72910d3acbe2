"""Opening a stored document inside a worker: backend reader -> verified RangeReader -> stream.

Plaintext never touches disk and never crosses back to the server: parsers read it through a
seekable stream that decrypts only the chunks they ask for.
"""

from __future__ import annotations

import io
from typing import BinaryIO

import backends
from backends.base import SyncBlobReader
from render.model import DocumentSource
from vaultd.crypto.blob_format import RangeFile, RangeReader


class GuardedStream(io.RawIOBase):
    """A RangeFile that remembers the first read error instead of (optionally) raising it.

    PDFium reads through a ctypes callback: an exception raised there is printed and lost, and
    PDFium carries on with a failed read. With `swallow=True` a failed read returns 0 bytes and
    the error is kept; `raise_pending()` re-raises it once the C call returns, so a corrupt chunk
    or a backend outage surfaces as itself rather than as a damaged page.
    """

    def __init__(self, reader: RangeReader, swallow: bool = False) -> None:
        super().__init__()
        self._file = RangeFile(reader)
        self._swallow = swallow
        self.error: BaseException | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        try:
            return self._file.readinto(buffer)
        except Exception as exc:
            self.error = self.error or exc
            if self._swallow:
                return 0
            raise

    def raise_pending(self) -> None:
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self._file.close()
        super().close()


class OpenedBlob:
    """A backend reader and the verified plaintext view over it."""

    def __init__(self, reader: SyncBlobReader, plaintext: RangeReader) -> None:
        self.reader = reader
        self.plaintext = plaintext

    def stream(self, swallow: bool = False) -> GuardedStream:
        return GuardedStream(self.plaintext, swallow)

    def buffered(self) -> BinaryIO:
        """For Pillow, which makes many small reads."""
        return io.BufferedReader(self.stream(), buffer_size=64 * 1024)

    def close(self) -> None:
        self.reader.close()

    def __enter__(self) -> OpenedBlob:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def open_blob(source: DocumentSource) -> OpenedBlob:
    """Open and verify (length, key commitment, final chunk) the blob behind `source`.

    FileNotFoundError if the blob is gone; BlobCorrupt if it fails verification (storage damage
    or tampering, not a bad upload, so it is deliberately not turned into Unreadable).
    """
    reader = backends.open_reader(source.ref)
    try:
        return OpenedBlob(reader, _verify(reader, source))
    except BaseException:
        reader.close()
        raise


def _verify(reader: SyncBlobReader, source: DocumentSource) -> RangeReader:
    return RangeReader(
        reader.read_at, reader.size, source.data_key, source.context, source.plaintext_size
    )

