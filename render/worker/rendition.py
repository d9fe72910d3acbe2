"""An image's rendition: the picture at the served size, made once at upload.

A 100-megapixel PNG costs about a second to decode, on every view. At upload the worker that
validates an image keeps the picture it decoded at the served budget (upright, on white: what
a page shows), and `image_rendition` returns it as a PNG the server stores as a second
encrypted blob. Pages then decode that (a few megapixels) instead of the original. Lossless, so
a page from the rendition has the same pixels as a page from the original.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image

from render.documents.brokered_reads import OpenedBlob, open_blob
from render.page.rasterise import decode_image
from render.wire.model import JPEG, PNG, DocumentSource, PixelBudget, Unreadable

# zlib level 1: about as small as 6 on photographs, several times faster to write.
_PNG_LEVEL = 1
# A rendition pays off when the original has more pixels than this many pages' worth: a
# smaller picture decodes about as fast as its rendition would (and is enlarged for the page).
WORTH_PAGES = 2


@dataclass(frozen=True)
class _Decoded:
    source: DocumentSource
    budget: PixelBudget
    image: Image.Image


class _LastDecoded:
    """The picture validation decoded last in this worker (one: uploads are one at a time)."""

    def __init__(self) -> None:
        self.kept: _Decoded | None = None

    def keep(self, source: DocumentSource, budget: PixelBudget, image: Image.Image) -> None:
        self.kept = _Decoded(source, budget, image)

    def take(self, source: DocumentSource, budget: PixelBudget) -> Image.Image | None:
        kept, self.kept = self.kept, None
        if kept is None or kept.source != source or kept.budget != budget:
            return None
        return kept.image


LAST = _LastDecoded()


def image_rendition(source: DocumentSource, budget: PixelBudget) -> bytes:
    """The picture of `source` at `budget`, upright and flattened on white, as a PNG; empty
    when the original is small enough to be decoded for every page (no rendition needed)."""
    if source.content_type not in (JPEG, PNG):
        raise Unreadable("only images have a rendition")
    image = LAST.take(source, budget)
    with open_blob(source) as blob:
        if _source_pixels(blob) <= WORTH_PAGES * budget.max_pixels:
            return b""
        if image is None:
            image = decode_image(blob, source.content_type, budget)
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=_PNG_LEVEL)
    return out.getvalue()


def _source_pixels(blob: OpenedBlob) -> int:
    # The header only: Pillow reads the size without decoding (validation already passed).
    stream = blob.buffered()
    try:
        with Image.open(stream) as image:
            return int(image.size[0] * image.size[1])
    finally:
        stream.close()
