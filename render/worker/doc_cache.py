"""Per-worker cache of opened PDF documents, so the pages of one document don't reopen it.

Opening costs a blob verification (header and final chunk) plus PDFium's parse of the xref and
page tree; a viewer paging through a document hits the same worker again and again. The cache is
small (a handful of documents, all of one account: a worker serves one account in its life)
and entries idle for longer than the TTL are closed by a reaper thread, so decrypted state does
not linger in an idle worker. A deleted file gets no more tasks: the server checks the file
record before it submits one, and its broker serves a blob only while it exists.

PDFium is not thread-safe, so one lock covers every use of a cached document and the reaper.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pypdfium2 as pdfium

from render.documents.brokered_reads import GuardedStream, OpenedBlob, open_blob
from render.page.rasterise import open_pdf
from render.wire.model import DocumentSource, PageOutOfRange, Unreadable


@dataclass
class CachedDocument:
    identity: tuple[object, ...]
    blob: OpenedBlob
    document: pdfium.PdfDocument
    stream: GuardedStream
    last_used: float = field(default=0.0)

    def close(self) -> None:
        self.document.close()
        self.stream.close()
        self.blob.close()


def _identity(source: DocumentSource) -> tuple[object, ...]:
    # A cache key is a file id, but compare the rest too: a replaced blob is a new document.
    return (source.cache_key, source.version, source.plaintext_size, source.content_type)


class DocumentCache:
    def __init__(
        self, capacity: int = 4, ttl_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.capacity = capacity
        self.ttl = ttl_seconds
        self._clock = clock
        self._entries: OrderedDict[str, CachedDocument] = OrderedDict()
        self._lock = threading.Lock()
        self._reaper: threading.Thread | None = None
        self.opens = 0  # documents opened so far; lets tests see a hit

    @contextmanager
    def lease(self, source: DocumentSource) -> Iterator[CachedDocument]:
        """The opened document for `source`, held under the cache lock while in use."""
        with self._lock:
            entry = self._checkout(source)
            self._entries[source.cache_key] = entry  # most recently used last
            self._evict_over_capacity()
            try:
                yield entry
            except (PageOutOfRange, Unreadable):
                raise  # about the request or one page: the document itself is fine
            except BaseException:
                # A failed read leaves the stream's error pending: never reuse that document.
                self._entries.pop(source.cache_key, None)
                entry.close()
                raise
            finally:
                entry.last_used = self._clock()
        self._start_reaper()

    def _checkout(self, source: DocumentSource) -> CachedDocument:
        self._evict_idle()
        entry = self._entries.pop(source.cache_key, None)
        if entry is None:
            return self._open(source)
        if entry.identity == _identity(source):
            return entry
        entry.close()
        return self._open(source)

    def _open(self, source: DocumentSource) -> CachedDocument:
        blob = open_blob(source)
        try:
            document, stream = open_pdf(blob)
        except BaseException:
            blob.close()
            raise
        self.opens += 1
        return CachedDocument(_identity(source), blob, document, stream, self._clock())

    def _evict_idle(self) -> None:
        cutoff = self._clock() - self.ttl
        for key in [k for k, e in self._entries.items() if e.last_used < cutoff]:
            self._entries.pop(key).close()

    def _evict_over_capacity(self) -> None:
        while len(self._entries) > self.capacity:
            _, oldest = self._entries.popitem(last=False)
            oldest.close()

    def drop(self, cache_key: str) -> None:
        with self._lock:
            entry = self._entries.pop(cache_key, None)
            if entry is not None:
                entry.close()

    def clear(self) -> None:
        with self._lock:
            while self._entries:
                self._entries.popitem()[1].close()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, cache_key: str) -> bool:
        return cache_key in self._entries

    def _start_reaper(self) -> None:
        if self._reaper is None or not self._reaper.is_alive():
            self._reaper = threading.Thread(target=self._reap, name="doc-cache-reaper", daemon=True)
            self._reaper.start()

    def _reap(self) -> None:
        # Runs while anything is cached; exits when the cache is empty and restarts on demand.
        while True:
            time.sleep(max(self.ttl / 2, 0.5))
            with self._lock:
                self._evict_idle()
                if not self._entries:
                    return


CACHE = DocumentCache()
