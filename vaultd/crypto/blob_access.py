"""Random access to a blob's plaintext: synchronous (`RangeReader`, `RangeFile`, used by render
workers) and asynchronous (`open_verified_async`, `iter_plaintext_async`, the server process).
Every entry point authenticates the blob's length and final chunk before serving plaintext."""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator

from vaultd.crypto.blob_chunks import (
    HEADER_SIZE,
    BlobCorrupt,
    ChunkOpener,
    ReadAt,
    ReadRange,
    _check_blob_size,
    _require_key,
    _segments,
    _trim,
)

# --- random access: synchronous ---------------------------------------------------------------


class RangeReader:
    """Synchronous random access to a blob's plaintext (used by render workers).

    The constructor checks the length, the header commitment and the final chunk before any
    plaintext is served. Reads decrypt only the chunks they need and keep a small LRU cache.
    One reader is safe to share between threads (reads are serialised).
    """

    MAX_SEGMENT_CHUNKS = 64  # at most ~1 MiB of ciphertext per backend read

    def __init__(self, read_at: ReadAt, blob_size: int, key: bytes, context: bytes,
                 plaintext_size: int, cache_chunks: int = 64) -> None:
        _require_key(key)
        _check_blob_size(blob_size, plaintext_size)
        self._read_at = read_at
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._cache_chunks = max(0, cache_chunks)
        self._lock = threading.Lock()
        self.size = plaintext_size
        self.stats = {"reads": 0, "bytes_read": 0, "chunks_decrypted": 0, "cache_hits": 0}
        self._opener = ChunkOpener(key, context, self._fetch(0, HEADER_SIZE), plaintext_size)
        # A range read cannot see truncation or trailing chunks: authenticate the final chunk
        # (at the index the stored size implies) now, so the length is trusted from here on.
        self._load(range(self._opener.final_index, self._opener.n_chunks))

    def __repr__(self) -> str:
        return f"RangeReader(size={self.size}, stats={self.stats})"

    def _fetch(self, offset: int, length: int) -> bytes:
        data = self._read_at(offset, length)
        self.stats["reads"] += 1
        self.stats["bytes_read"] += len(data)
        if len(data) != length:
            raise BlobCorrupt(f"blob read at offset {offset} returned {len(data)} of {length} "
                              "bytes (blob shorter than recorded)")
        return data

    def _remember(self, index: int, plaintext: bytes) -> None:
        if self._cache_chunks:
            self._cache[index] = plaintext
            while len(self._cache) > self._cache_chunks:
                self._cache.popitem(last=False)

    def _load(self, chunks: range) -> dict[int, bytes]:
        """Plaintext of `chunks`: cache hits, plus one backend read per run of misses."""
        found: dict[int, bytes] = {}
        missing: list[int] = []
        for index in chunks:
            if index in self._cache:
                self._cache.move_to_end(index)
                found[index] = self._cache[index]
                self.stats["cache_hits"] += 1
            else:
                missing.append(index)
        for run in _runs(missing, self.MAX_SEGMENT_CHUNKS):
            wire = self._fetch(*self._opener.wire_span(run))
            for index, plaintext in zip(run, self._opener.open_chunks(run, wire), strict=True):
                self.stats["chunks_decrypted"] += 1
                found[index] = plaintext
                self._remember(index, plaintext)
        return found

    def read(self, offset: int, length: int) -> bytes:
        """Plaintext bytes [offset, offset+length), short (or empty) at EOF."""
        chunks = self._opener.chunks_for_range(offset, length)
        if not chunks:
            return b""
        with self._lock:
            found = self._load(chunks)
        joined = b"".join(found[i] for i in chunks)
        return _trim(joined, chunks, offset, min(offset + length, self.size))


def _runs(indices: list[int], max_len: int) -> list[range]:
    """Group sorted indices into runs of consecutive values, each at most `max_len` long."""
    runs: list[range] = []
    for index in indices:
        last = runs[-1] if runs else None
        if last is not None and last.stop == index and len(last) < max_len:
            runs[-1] = range(last.start, index + 1)
        else:
            runs.append(range(index, index + 1))
    return runs


class RangeFile(io.RawIOBase):
    """Seekable, read-only file object over a RangeReader (for pikepdf, pypdfium2, Pillow).

    Wrap in io.BufferedReader for many small reads; the reader's chunk cache already
    absorbs most of them.
    """

    def __init__(self, reader: RangeReader) -> None:
        super().__init__()
        self._reader = reader
        self._pos = 0

    @property
    def size(self) -> int:
        return self._reader.size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def tell(self) -> int:
        self._check_open()
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_open()
        bases = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._reader.size}
        if whence not in bases:
            raise ValueError(f"invalid whence {whence}")
        position = bases[whence] + offset
        if position < 0:
            raise OSError(22, "negative seek position")
        self._pos = position
        return position

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        self._check_open()
        target = memoryview(buffer).cast("B")
        data = self._reader.read(self._pos, len(target))
        target[:len(data)] = data
        self._pos += len(data)
        return len(data)

    def readall(self) -> bytes:
        # One call for the rest of the file, so runs of chunks are fetched in big reads.
        self._check_open()
        data = self._reader.read(self._pos, max(self._reader.size - self._pos, 0))
        self._pos += len(data)
        return data


# --- random access: asynchronous (server process) --------------------------------------------


async def _fetch_async(read_range: ReadRange, offset: int, length: int) -> bytes:
    data = await read_range(offset, length)
    if len(data) != length:
        raise BlobCorrupt(f"blob read at offset {offset} returned {len(data)} of {length} "
                          "bytes (blob shorter than recorded)")
    return data


async def _verify_final_async(read_range: ReadRange, opener: ChunkOpener) -> None:
    index = opener.final_index
    opener.open_chunk(index, await _fetch_async(read_range, *opener.chunk_span(index)))


async def open_verified_async(read_range: ReadRange, blob_size: int, key: bytes,
                              context: bytes, plaintext_size: int) -> ChunkOpener:
    """Same checks as RangeReader's constructor (size, commitment, final chunk), async reads."""
    _require_key(key)
    _check_blob_size(blob_size, plaintext_size)
    opener = ChunkOpener(key, context, await _fetch_async(read_range, 0, HEADER_SIZE),
                         plaintext_size)
    await _verify_final_async(read_range, opener)
    return opener


async def iter_plaintext_async(read_range: ReadRange, opener: ChunkOpener, offset: int = 0,
                               length: int | None = None,
                               segment_chunks: int = 64) -> AsyncIterator[bytes]:
    """Plaintext of [offset, offset+length) (to EOF if None), one segment per ciphertext read.

    Each yielded piece is fully authenticated; raises BlobCorrupt at the first bad chunk.
    """
    if not opener.final_verified:
        # Never stream from an opener whose length has not been authenticated.
        await _verify_final_async(read_range, opener)
    size = opener.plaintext_size
    if length is None:
        length = max(size - offset, 0)
    chunks = opener.chunks_for_range(offset, length)  # validates offset/length, clips at EOF
    end = min(offset + length, size)
    for segment in _segments(chunks, segment_chunks):
        wire = await _fetch_async(read_range, *opener.wire_span(segment))
        yield _trim(b"".join(opener.open_chunks(segment, wire)), segment, offset, end)
