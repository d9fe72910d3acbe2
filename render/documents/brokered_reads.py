"""A stored document's plaintext, as a worker sees it: ranges asked of the broker, kept in blocks.

The worker holds no key and no storage credential. It reads the one document its task names
through a `ReadAt` (offset, length -> bytes) that the process installs once: in a render worker
it asks the server over the channel (`render.worker.serve`), which reads and decrypts; in-process
tests install a reader over a local blob. Plaintext never touches disk. Parsers read through a
seekable stream that fetches only the 64 KiB blocks they touch, so a page costs the same in a
large file as in a small one.
"""

from __future__ import annotations

import io
from collections import OrderedDict
from collections.abc import Callable
from typing import BinaryIO

from render.wire.model import BrokerError, DocumentSource

ReadAt = Callable[[int, int], bytes]
Opener = Callable[[DocumentSource], ReadAt]
BLOCK = 64 << 10
MAX_FETCH = 512 << 10  # the broker's per-read cap (render.wire.channel.MAX_READ_BYTES)
_CACHED_BLOCKS = 128  # 8 MiB of plaintext per opened document


def _no_broker(source: DocumentSource) -> ReadAt:
    raise BrokerError("no document broker is installed in this process")


_opener: Opener = _no_broker


def install_opener(opener: Opener) -> None:
    """Where this process reads documents from (once, at worker start; tests: per test)."""
    global _opener  # noqa: PLW0603 - one opener per worker process, set once at its start
    _opener = opener


class BlockReader:
    """Plaintext of one document in aligned blocks, fetched in as few broker reads as possible."""

    def __init__(self, read_at: ReadAt, size: int) -> None:
        self._read_at = read_at
        self.size = size
        self._blocks: OrderedDict[int, bytes] = OrderedDict()
        self.bytes_fetched = 0  # lets tests see that a page reads only part of a large file
        self._next_block = -1  # the block after the last fetch: reading on from there is a scan

    @property
    def _blocks_in_file(self) -> int:
        return -(-self.size // BLOCK)

    def read(self, offset: int, length: int) -> bytes:
        end = min(offset + max(length, 0), self.size)
        if offset >= end:
            return b""
        first, last = offset // BLOCK, (end - 1) // BLOCK
        self._fetch_missing(first, last)
        data = b"".join(self._blocks[i] for i in range(first, last + 1))
        for i in range(first, last + 1):
            self._blocks.move_to_end(i)
        while len(self._blocks) > max(_CACHED_BLOCKS, last - first + 1):
            self._blocks.popitem(last=False)
        start = offset - first * BLOCK
        return data[start:start + end - offset]

    def _fetch_missing(self, first: int, last: int) -> None:
        index = first
        while index <= last:
            if index in self._blocks:
                index += 1
                continue
            # A sequential scan (a parser reading the whole file) reads ahead as far as one
            # broker read allows; a random access (a page's objects) fetches what it touches.
            stop = self._blocks_in_file - 1 if index == self._next_block else last
            run_end = index
            while (run_end + 1 <= stop and run_end + 1 not in self._blocks
                   and (run_end + 2 - index) * BLOCK <= MAX_FETCH):
                run_end += 1
            start = index * BLOCK
            length = min((run_end + 1) * BLOCK, self.size) - start
            data = self._read_at(start, length)
            self.bytes_fetched += len(data)
            if len(data) != length:
                raise BrokerError(f"the broker answered {len(data)} of {length} bytes")
            for i in range(index, run_end + 1):
                self._blocks[i] = data[(i - index) * BLOCK:(i - index + 1) * BLOCK]
            index = self._next_block = run_end + 1


class GuardedStream(io.RawIOBase):
    """A seekable stream over a BlockReader that remembers the first read error.

    PDFium reads through a ctypes callback: an exception raised there is printed and lost, and
    PDFium carries on with a failed read. With `swallow=True` a failed read returns 0 bytes and
    the error is kept; `raise_pending()` re-raises it once the C call returns, so a broker
    failure surfaces as itself rather than as a damaged page.
    """

    def __init__(self, reader: BlockReader, swallow: bool = False) -> None:
        super().__init__()
        self._reader = reader
        self._position = 0
        self._swallow = swallow
        self.error: BaseException | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._reader.size}
        position = base[whence] + offset
        if position < 0:
            raise ValueError("negative seek position")
        self._position = position
        return position

    def tell(self) -> int:
        return self._position

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        try:
            data = self._reader.read(self._position, len(buffer))
        except Exception as exc:
            self.error = self.error or exc
            if self._swallow:
                return 0
            raise
        memoryview(buffer).cast("B")[:len(data)] = data
        self._position += len(data)
        return len(data)

    def raise_pending(self) -> None:
        if self.error is not None:
            raise self.error


class OpenedBlob:
    """The plaintext view of one document."""

    def __init__(self, reader: BlockReader) -> None:
        self.plaintext = reader

    def stream(self, swallow: bool = False) -> GuardedStream:
        return GuardedStream(self.plaintext, swallow)

    def buffered(self) -> BinaryIO:
        """For Pillow, which makes many small reads."""
        return io.BufferedReader(self.stream(), buffer_size=BLOCK)

    def close(self) -> None:
        self.plaintext = BlockReader(_closed, 0)  # drop the cached plaintext now

    def __enter__(self) -> OpenedBlob:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _closed(offset: int, length: int) -> bytes:
    raise BrokerError("the document is closed")


def open_blob(source: DocumentSource) -> OpenedBlob:
    """The plaintext of `source` through this process's opener. The broker verified the blob
    (length, key commitment, final chunk) before answering; FileNotFoundError and BlobCorrupt
    are reported by the server, which saw them."""
    return OpenedBlob(BlockReader(_opener(source), source.plaintext_size))
