"""The pages and the leaks for `bench.leakmark`: real corpus pages rendered the way vaultd
serves them (PDFium at the served size, visible watermark and strip, JPEG q80), and the
transformations a leaked page goes through, all with Pillow."""

from __future__ import annotations

import dataclasses
import io
import math
import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pypdfium2 as pdfium
from PIL import Image, ImageEnhance

from bench import corpus
from render.page import canvas
from render.page.sizing import fit_scale, scaled_size
from render.watermark import viewer_mark
from render.wire.model import PixelBudget, WatermarkSpec

SERVED_QUALITY = 80
MARK = WatermarkSpec("Ann Viewer", "ann.viewer@example.com", "203.0.113.7", "Acme Corp",
                     "2026-11-24 04:30:00 UTC")


@dataclass(frozen=True)
class Page:
    name: str
    image: Image.Image  # RGB, the whole served canvas (page + strip), unmarked
    page_height: int  # rows above the strip
    drawn: bytes  # the RGBX canvas as PDFium drew it, before the watermark
    overlay: viewer_mark.Overlay  # the viewer's watermark, without a render id


def _watermarked(drawn: bytes, size: tuple[int, int], overlay: viewer_mark.Overlay,
                 page_height: int) -> Image.Image:
    pixels = bytearray(drawn)
    image = Image.frombuffer("RGBX", size, pixels, "raw", "RGBX", 0, 1)
    image.readonly = False  # drawn on the buffer itself, as render/page/canvas.py does
    viewer_mark.apply(canvas.Canvas(image, pixels, size[0] * 4), overlay, page_height)
    return image.convert("RGB")


def marked(page: Page, mark_value: int, mark_layout: bytes | None = None,
           placement_seed: bytes | None = None) -> Image.Image:
    """The page as the worker serves it with `mark_value` embedded (the pattern's letters
    marked too, over the marked paper) in the layout of `mark_layout` (None: the published
    one), the pattern's words placed by `placement_seed` (None: in their places), without the
    printed trace code: the same strip as unmarked."""
    overlay = dataclasses.replace(page.overlay, mark_value=mark_value, mark_layout=mark_layout,
                                  placement_seed=placement_seed)
    return _watermarked(page.drawn, page.image.size, overlay, page.page_height)


def placed(page: Page, placement_seed: bytes) -> Image.Image:
    """The page with the pattern's words placed by `placement_seed`, without the invisible
    mark: what the placement mark alone changes."""
    overlay = dataclasses.replace(page.overlay, placement_seed=placement_seed)
    return _watermarked(page.drawn, page.image.size, overlay, page.page_height)


def render_page(document: pdfium.PdfDocument, index: int, budget: PixelBudget | None = None,
                ) -> Page:
    """The page as the worker draws it with the visible watermark, within `budget` (None: the
    default settings')."""
    page = document[index]
    try:
        width, height = page.get_size()
        budget = budget or PixelBudget()
        plan = canvas.layout(scaled_size(width, height, fit_scale(width, height, budget)),
                             MARK, budget)
        drawn = canvas.render_pdf(page, plan)
        overlay = viewer_mark.prepare(MARK, plan.width, plan.strip)
        before = bytes(drawn.pixels[: drawn.stride * drawn.image.height])
        assert drawn.stride == drawn.image.width * 4
        image = _watermarked(before, drawn.image.size, overlay, plan.page[1])
        return Page("", image, plan.page[1], before, overlay)
    finally:
        page.close()


def corpus_pages(limit: int) -> list[Page]:
    """Up to `limit` pages: the generated text cover and photo pages, then the machine's PDFs
    (a few pages of each), in a fixed order."""
    sources = [corpus.small_pdf(), corpus.image_heavy_pdf(pages=4, target=3_000_000),
               *corpus.system_pdfs(8)]
    pages: list[Page] = []
    for number in range(3):
        for source in sources:
            document = pdfium.PdfDocument(source.data)
            try:
                index = min(number * 3, len(document) - 1)
                if any(p.name == f"{source.name}#{index + 1}" for p in pages):
                    continue
                rendered = render_page(document, index)
            finally:
                document.close()
            pages.append(dataclasses.replace(rendered, name=f"{source.name}#{index + 1}"))
            if len(pages) >= limit:
                return pages
    return pages


def photo_page() -> Page:
    """The generated photograph document's page 4 (`corpus_pages`' own, mostly photograph): the
    page where a turned and raised-tone leak once showed the pattern's letters a false lattice."""
    document = pdfium.PdfDocument(corpus.image_heavy_pdf(pages=4, target=3_000_000).data)
    try:
        return dataclasses.replace(render_page(document, 3), name="generated-20-page-images.pdf#4")
    finally:
        document.close()


def psnr(reference: Image.Image, marked: Image.Image) -> float:
    a = np.asarray(reference, dtype=np.float64)
    b = np.asarray(marked, dtype=np.float64)
    mse = float(((a - b) ** 2).mean())
    return math.inf if mse == 0 else 10 * math.log10(255 ** 2 / mse)


def jpeg(image: Image.Image, quality: int) -> Image.Image:
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality)
    return Image.open(io.BytesIO(out.getvalue())).convert("RGB")


def png(image: Image.Image) -> Image.Image:
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=1)
    return Image.open(io.BytesIO(out.getvalue())).convert("RGB")


Attack = Callable[[Image.Image, int, random.Random], Image.Image]


def half_area_crop(image: Image.Image, page_height: int, rng: random.Random) -> Image.Image:
    """A random region of half the page's area, never touching the strip (footer removed)."""
    width_share = rng.uniform(0.5, 1.0)
    w, h = round(image.width * width_share), round(image.width * page_height * 0.5
                                                     / (image.width * width_share))
    h = min(h, page_height)
    left, top = rng.randint(0, image.width - w), rng.randint(0, page_height - h)
    return image.crop((left, top, left + w, top + h))


def screenshot(image: Image.Image, _: int, rng: random.Random) -> Image.Image:
    """The page at 0.6-1.5x inside a larger desktop canvas at an unknown offset, as PNG."""
    scale = rng.uniform(0.6, 1.5)
    shown = image.resize((round(image.width * scale), round(image.height * scale)),
                         Image.Resampling.BILINEAR)
    desk_size = (shown.width + rng.randint(80, 700), shown.height + rng.randint(80, 500))
    desk = Image.new("RGB", desk_size, (rng.randint(30, 230),) * 3)
    desk.paste(shown, (rng.randint(0, desk.width - shown.width),
                       rng.randint(0, desk.height - shown.height)))
    return png(desk)


def scaled(image: Image.Image, factor: float) -> Image.Image:
    return image.resize((round(image.width * factor), round(image.height * factor)),
                        Image.Resampling.LANCZOS)


def _rotate(image: Image.Image, _: int, rng: random.Random) -> Image.Image:
    return image.rotate(rng.choice((-2.0, 2.0)), Image.Resampling.BICUBIC, expand=True,
                        fillcolor=(255, 255, 255))


def _brighter(image: Image.Image) -> Image.Image:
    return ImageEnhance.Brightness(image).enhance(1.2)


def _contrastier(image: Image.Image) -> Image.Image:
    return ImageEnhance.Contrast(image).enhance(1.2)


def _tone(image: Image.Image, _: int, rng: random.Random) -> Image.Image:
    kind = rng.choice((ImageEnhance.Brightness, ImageEnhance.Contrast))
    return kind(image).enhance(rng.choice((0.8, 1.2)))


ATTACKS: dict[str, Attack] = {
    "none": lambda im, ph, rng: im,
    "jpeg q50": lambda im, ph, rng: jpeg(im, 50),
    "downscale 50%": lambda im, ph, rng: scaled(im, 0.5),
    "640 px wide": lambda im, ph, rng: scaled(im, 640 / im.width),
    "half-area crop": half_area_crop,
    "screenshot": screenshot,
    "brightness -20%": lambda im, ph, rng: ImageEnhance.Brightness(im).enhance(0.8),
    "brightness +20%": lambda im, ph, rng: ImageEnhance.Brightness(im).enhance(1.2),
    "contrast -20%": lambda im, ph, rng: ImageEnhance.Contrast(im).enhance(0.8),
    "contrast +20%": lambda im, ph, rng: ImageEnhance.Contrast(im).enhance(1.2),
    "greyscale": lambda im, ph, rng: im.convert("L"),
    "rotate 2 deg": _rotate,
    "crop + jpeg q50": lambda im, ph, rng: jpeg(half_area_crop(im, ph, rng), 50),
    "downscale 50% + jpeg q50": lambda im, ph, rng: jpeg(scaled(im, 0.5), 50),
    "screenshot + tone": lambda im, ph, rng: _tone(screenshot(im, ph, rng), ph, rng),
    "rotate 2 deg + crop": lambda im, ph, rng: _rotate(half_area_crop(im, ph, rng), ph, rng),
    "greyscale + 640 px": lambda im, ph, rng: scaled(im.convert("L"), 640 / im.width),
    "brightness +20% + jpeg q50": lambda im, ph, rng: jpeg(_brighter(im), 50),
    "contrast +20% + jpeg q50": lambda im, ph, rng: jpeg(_contrastier(im), 50),
    "brightness +20% + crop": lambda im, ph, rng: _brighter(half_area_crop(im, ph, rng)),
    "brightness +20% + greyscale": lambda im, ph, rng: _brighter(im).convert("L"),
    "screenshot + brightness +20%": lambda im, ph, rng: _brighter(screenshot(im, ph, rng)),
    "640 px + brightness +20%": lambda im, ph, rng: _brighter(scaled(im, 640 / im.width)),
    "rotate 2 deg + brightness +20%": lambda im, ph, rng: _brighter(_rotate(im, ph, rng)),
    "rotate 2 deg + contrast +20%": lambda im, ph, rng: _contrastier(_rotate(im, ph, rng)),
}
