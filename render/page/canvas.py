"""The output image of one page: one buffer that PDFium renders into and the watermark is drawn on.

The canvas is laid out before anything is drawn (page, margins for a very narrow page, strip
below), so PDFium renders straight into it: no bitmap copied into a PIL image, no page copied
into a taller canvas for the strip. It is RGBX for every kind of document, and the watermark
pattern is blended into its buffer directly (`render.kernels._blend`). The buffer is reused from one
request to the next in a worker, which also saves faulting in 8 MB of fresh memory per page; it
only ever holds the request being served (a task returns JPEG bytes, never an image over this
buffer).
"""

from __future__ import annotations

import ctypes
import io
import threading
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image, ImageChops

from render.forensic.embed import PaperMark
from render.kernels import blend
from render.page.sizing import canvas_width
from render.watermark.viewer_mark import STRIP_BACKGROUND, Strip, layout_strip
from render.wire.model import PixelBudget, WatermarkSpec

WHITE = 0xFFFFFFFF
_RENDER_FLAGS = pdfium_c.FPDF_ANNOT | pdfium_c.FPDF_REVERSE_BYTE_ORDER  # RGBx in memory


@dataclass(frozen=True)
class Layout:
    """Where everything goes: the page at (left, 0), the strip under it, all `width` wide."""

    page: tuple[int, int]
    width: int
    strip: Strip

    @property
    def left(self) -> int:
        return (self.width - self.page[0]) // 2

    @property
    def size(self) -> tuple[int, int]:
        return self.width, self.page[1] + self.strip.height


def layout(page: tuple[int, int], mark: WatermarkSpec, budget: PixelBudget) -> Layout:
    width = canvas_width(page[0], budget)
    return Layout(page, width, layout_strip(mark, width))


@dataclass(frozen=True)
class Canvas:
    """The output image and the buffer under it (`stride` bytes a row), which both Pillow and
    the pattern's blend draw on."""

    image: Image.Image  # RGBX over `pixels`
    pixels: bytearray
    stride: int


class _Scratch(threading.local):
    """One growable buffer per thread (a worker runs its tasks one at a time on one thread)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def get(self, size: int) -> bytearray:
        """A buffer of at least `size` bytes, with whatever the last request left in it."""
        if len(self._buffer) < size:
            # A new buffer rather than a resize: an image of the last request may still hold
            # a view of the old one until it is collected.
            self._buffer = bytearray(size)
        return self._buffer


_SCRATCH = _Scratch()


def render_pdf(page: pdfium.PdfPage, plan: Layout) -> Canvas:
    """The whole canvas with the page rendered, margins white, strip background filled."""
    width, height = plan.size
    stride = width * 4
    buffer = _SCRATCH.get(stride * height)
    pixels = (ctypes.c_ubyte * (stride * height)).from_buffer(buffer)
    bitmap = pdfium_c.FPDFBitmap_CreateEx(width, height, pdfium_c.FPDFBitmap_BGRx, pixels, stride)
    if not bitmap:
        raise MemoryError("PDFium could not create the page bitmap")
    try:
        page_w, page_h = plan.page
        pdfium_c.FPDFBitmap_FillRect(bitmap, 0, 0, width, page_h, WHITE)
        pdfium_c.FPDFBitmap_FillRect(bitmap, 0, page_h, width, height - page_h,
                                     0xFF000000 | STRIP_BACKGROUND * 0x010101)
        pdfium_c.FPDF_RenderPageBitmap(bitmap, page, plan.left, 0, page_w, page_h, 0,
                                       _RENDER_FLAGS)
    finally:
        pdfium_c.FPDFBitmap_Destroy(bitmap)
    del pixels  # PDFium is done with the buffer; the image below keeps it alive
    return _over(buffer, plan)


def from_image(page: Image.Image, plan: Layout) -> Canvas:
    """The canvas for a decoded JPEG or PNG (RGB): the picture centred, strip background below."""
    width, height = plan.size
    canvas = _over(_SCRATCH.get(width * 4 * height), plan)
    canvas.image.paste((255, 255, 255, 255), (0, 0, width, plan.page[1]))
    canvas.image.paste(page, (plan.left, 0))
    canvas.image.paste((STRIP_BACKGROUND,) * 3 + (255,), (0, plan.page[1], width, height))
    return canvas


def page_rows(drawn: Canvas, plan: Layout) -> memoryview:
    """The rows above the strip (page and margins), before any watermark: a view, valid until
    the next request draws on the buffer."""
    return memoryview(drawn.pixels)[:drawn.stride * plan.page[1]]


def from_rows(rows: bytes | bytearray, plan: Layout, grey: bool = False,
              mark: PaperMark | None = None) -> Canvas:
    """The canvas with a kept page's rows copied back in (RGBX, or L expanded to it when
    `grey`), its paper darkened by the invisible `mark` on the way (the copy writes every
    pixel anyway: no second pass); the watermark pastes the strip."""
    width, height = plan.size
    buffer = _SCRATCH.get(width * 4 * height)
    if grey and mark is not None:
        blend.expand_grey(buffer, width * 4, rows, width, plan.page[1], *mark)
    elif grey:
        blend.expand_grey(buffer, width * 4, rows, width, plan.page[1])
    elif mark is not None:
        blend.darken(buffer, width * 4, (width, plan.page[1]), *mark, rows)
    else:
        memoryview(buffer)[:len(rows)] = rows
    return _over(buffer, plan)


def grey_rows(drawn: Canvas, plan: Layout) -> bytes | None:
    """The rows above the strip as L, if the page has no colour (R = G = B everywhere), else
    None. About 1.5 ms for 2 MP: paid once, when a page is kept (`render.worker.page_cache`)."""
    rows = Image.frombuffer("RGBX", (plan.width, plan.page[1]), drawn.pixels, "raw", "RGBX",
                            drawn.stride, 1)  # the buffer's first rows: no copy
    red, green, blue, _ = rows.split()
    if ImageChops.difference(red, green).getbbox() or ImageChops.difference(green, blue).getbbox():
        return None
    return green.tobytes()


def _over(buffer: bytearray, plan: Layout) -> Canvas:
    stride = plan.width * 4
    image = Image.frombuffer("RGBX", plan.size, buffer, "raw", "RGBX", stride, 1)
    image.readonly = False  # draw on the buffer itself (the watermark), never on a copy
    return Canvas(image, buffer, stride)


def jpeg(image: Image.Image, quality: int, grey: bool = False) -> bytes:
    """The canvas as a JPEG; a greyscale one when `grey` (the page has no colour, and the
    watermark never has any): one channel to encode, about 20 % less time and 10 % fewer bytes."""
    out = io.BytesIO()
    # No metadata is written: the output carries only pixels. 4:2:0 chroma and no Huffman
    # optimisation (Pillow's defaults) are the fast settings; optimising costs ~40% for ~10%.
    encoded = image.getchannel("G") if grey else image
    encoded.save(out, "JPEG", quality=max(1, min(quality, 95)), optimize=False)
    return out.getvalue()
