"""Per-worker cache of rendered pages, before any watermark: a page seen again costs only the
watermark, the invisible mark and the JPEG encode.

What is kept is the page part of the output canvas (every row above the strip, margins
included, RGBX), which depends only on the document and the output size, never on the viewer.
The key holds everything that changes those pixels: the file id, the blob's name (a replaced
file is a new blob, so a new key), its size and type, the page number and the pixel budget.
A worker serves one account for its whole life (`render.pool.dispatch`), so the cache never holds
two accounts' pages. A deleted file is never served from here: the server checks that the blob
still exists during every task (`RenderPool.submit`, `BrokeredFile.check`) and refuses the page
otherwise, as it does for a page rendered from `render.worker.doc_cache`.

Bounded by bytes (`render.page_cache_mb`), least recently used out first; memory only. A page
is kept from its second render on this worker (`PageCache.admit`), so a page viewed once costs
exactly what it did before the cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from render.wire.model import DocumentSource, PixelBudget

DEFAULT_BYTES = 128 << 20
SEEN_KEYS = 4096  # pages rendered once, remembered (keys only) so a second render keeps them


@dataclass(frozen=True)
class PageKey:
    file_id: str
    version: str
    plaintext_size: int
    content_type: str
    page: int
    long_side: int
    max_pixels: int


def key_for(source: DocumentSource, page: int, budget: PixelBudget) -> PageKey:
    return PageKey(source.cache_key, source.version, source.plaintext_size, source.content_type,
                   page, budget.long_side, budget.max_pixels)


@dataclass(frozen=True)
class CachedPage:
    """Rows 0..page[1] of a canvas `width` pixels wide: 4 bytes a pixel (RGBX), or 1 when the
    page has no colour (`grey`: kept as L, four times as many pages in the same memory)."""

    page: tuple[int, int]
    width: int
    pixels: bytearray
    grey: bool = False

    @property
    def nbytes(self) -> int:
        return len(self.pixels)


class PageCache:
    def __init__(self, capacity_bytes: int = DEFAULT_BYTES) -> None:
        self.capacity = capacity_bytes
        self._entries: OrderedDict[PageKey, CachedPage] = OrderedDict()
        self._lock = threading.Lock()
        self._seen: OrderedDict[PageKey, None] = OrderedDict()
        self.nbytes = 0
        self.hits = 0  # let tests and the bench see what was served from here
        self.misses = 0

    def resize(self, capacity_bytes: int) -> None:
        with self._lock:
            self.capacity = max(0, capacity_bytes)
            self._evict()

    def get(self, key: PageKey) -> CachedPage | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry

    def admit(self, key: PageKey) -> bool:
        """Whether a page just rendered is worth keeping: only on its second render here.

        Keeping costs a copy of the page (0.4 ms quiet, 1-3 ms with memory bandwidth shared,
        about 5 ms while the cache's buffers are first allocated); a page viewed once costs
        nothing more than before, and one-off pages do not push out re-viewed ones."""
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)  # an evicted page rendered again returns at once
                return True
            self._seen[key] = None
            while len(self._seen) > SEEN_KEYS:
                self._seen.popitem(last=False)
            return False

    def put(self, key: PageKey, page: tuple[int, int], width: int, rows: bytes | memoryview,
            grey: bool = False) -> None:
        """Keep a copy of `rows` (RGBX, or L when `grey`). An evicted page's buffer of the same
        size is reused: a fresh 8 MB buffer per page, faulted in and freed again, cost about
        2.5 ms a page here."""
        size = len(rows) if isinstance(rows, bytes) else rows.nbytes
        if size > self.capacity:
            return  # larger than the whole cache: keeping it would only flush the rest
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.nbytes -= old.nbytes
            spare = self._evict(room=size)
            buffer = spare if spare is not None else bytearray(size)
            buffer[:] = rows
            self._entries[key] = CachedPage(page, width, buffer, grey)
            self.nbytes += size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._seen.clear()
            self.nbytes = 0

    def kept(self) -> list[PageKey]:
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def _evict(self, room: int = 0) -> bytearray | None:
        """Drop the oldest pages until `room` more bytes fit; one dropped buffer of exactly
        `room` bytes, if any, for reuse."""
        spare = None
        while self.nbytes + room > self.capacity and self._entries:
            _, oldest = self._entries.popitem(last=False)
            self.nbytes -= oldest.nbytes
            if room and spare is None and oldest.nbytes == room:
                spare = oldest.pixels
        return spare


CACHE = PageCache()
