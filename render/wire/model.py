"""Values that cross the process boundary between the server and the render workers.

They live apart from `render.worker.tasks` so that the helper modules (pages, sizing, watermark) can
use them without importing the task entry points. The server sends the dataclasses to a worker
(pickled); a worker's results and errors come back as data (`render.wire.channel`), never pickled.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DocumentSource:
    """What a worker knows of the one document its task names: no key, no storage location.

    The worker reads the document's plaintext through the broker
    (`render.documents.brokered_reads`), which serves only the document of the task in progress.
    """

    content_type: str  # "application/pdf" | "image/jpeg" | "image/png", from magic bytes
    plaintext_size: int
    cache_key: str  # the file id; keys the per-worker document cache
    version: str = ""  # the blob's name: a replaced blob is a new document


@dataclass(frozen=True)
class WatermarkSpec:
    """Who is looking, drawn into every page. `displayed_at` is pre-formatted by the server."""

    viewer_name: str
    viewer_email: str
    ip: str | None
    brand: str
    displayed_at: str
    # The served page's render id (render.forensic): printed as a trace code in the strip and
    # marked invisibly in the pixels. None draws neither (thumbnails, tools).
    render_id: int | None = None
    # What the pixels carry instead of the id: vaultd seals it with the deployment's key
    # (vaultd.services.pages.mark_key), so a mark names a view only through that key. None: the id.
    mark_value: int | None = None
    # The deployment's layout subkey (vaultd.services.pages.mark_key): where the mark's bits sit in
    # its tile. It lets a worker find the mark, never forge one (the value stays sealed).
    # None: the published layout.
    mark_layout: bytes | None = field(default=None, repr=False)
    # The page view's seed for the placement mark (render.forensic.placement: every word of the
    # pattern up to a pixel off its place), from vaultd's key. None: every word in its place.
    placement_seed: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True)
class PixelBudget:
    """Output page size: the long side is scaled to `long_side`, never above `max_pixels`."""

    long_side: int = 1600
    max_pixels: int = 4_000_000


@dataclass(frozen=True)
class WorkerConfig:
    """What a worker is started with (its process target's argument)."""

    memory_limit: int  # bytes of address space, set as its RLIMIT_AS when it confines itself


@dataclass(frozen=True)
class ValidationResult:
    content_type: str
    page_count: int


class Unreadable(Exception):
    """A recognised type that cannot be read: corrupt, password-protected, a decompression bomb.

    The message is shown to the client (422), so it never carries a path, a key or parser output.
    """

    def __init__(self, message: str = "the document could not be read") -> None:
        super().__init__(message)

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return (type(self), (str(self),))


class BrokerError(OSError):
    """The broker refused or failed a worker's read; the server reports the real cause itself."""


class PageOutOfRange(Exception):
    """The requested page number is not between 1 and the page count."""

    def __init__(self, message: str = "page number out of range") -> None:
        super().__init__(message)

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return (type(self), (str(self),))


PDF = "application/pdf"
JPEG = "image/jpeg"
PNG = "image/png"
CONTENT_TYPES = (PDF, JPEG, PNG)
