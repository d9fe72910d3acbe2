"""Where a worker's time goes for one page, measured in-process with vaultd's own render code.

The same steps `render.worker.tasks.render_page` runs, timed one by one on a plain (unencrypted)
copy of the document: PDFium's render into the canvas (page load included), the watermark, the JPEG
encode. The document stays open, as in a worker's cache.

The watermark is measured twice, because a worker draws most of it on a helper thread while
PDFium renders: what it adds to the page (the strip's layout before the render, any wait for the
helper after it, the pattern blended over the rendered page) and its CPU (all of that plus the
helper's own drawing).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pypdfium2 as pdfium

from bench.corpus import Document
from bench.latency import sample_pages
from render.page import canvas
from render.page.sizing import fit_scale, scaled_size
from render.watermark import viewer_mark
from render.wire.model import PixelBudget, WatermarkSpec

MARK = WatermarkSpec(viewer_name="Ann Lee", viewer_email="ann.lee@client.example",
                     ip="203.0.113.7", brand="Bench Corp", displayed_at="")


@dataclass
class Steps:
    name: str
    render: list[float] = field(default_factory=list)
    watermark: list[float] = field(default_factory=list)  # what it adds to the page
    watermark_cpu: list[float] = field(default_factory=list)
    jpeg: list[float] = field(default_factory=list)


def _mark(turn: int) -> WatermarkSpec:
    # A new second on every page, as in real use: the timestamp's words are drawn afresh.
    seconds = turn % 60
    return WatermarkSpec(MARK.viewer_name, MARK.viewer_email, MARK.ip, MARK.brand,
                         f"2026-11-22 14:{turn // 60 % 60:02d}:{seconds:02d} CET (UTC+01:00)")


def measure(doc: Document, budget: PixelBudget, wanted: int, rounds: int) -> Steps:
    steps = Steps(doc.name)
    document = pdfium.PdfDocument(doc.data)
    turn = 0
    try:
        for _ in range(rounds):
            for number in sample_pages(doc.pages, wanted):
                turn += 1
                _one_page(document, number, budget, _mark(turn), steps)
    finally:
        document.close()
    return steps


def _one_page(document: pdfium.PdfDocument, number: int, budget: PixelBudget,
              mark: WatermarkSpec, steps: Steps) -> None:
    started = time.perf_counter()
    page = document[number - 1]
    width, height = page.get_size()
    size = scaled_size(width, height, fit_scale(width, height, budget))
    before_layout = time.perf_counter()
    plan = canvas.layout(size, mark, budget)  # the strip's wrapping: watermark work
    after_layout = time.perf_counter()
    helper = _HELPER.submit(_timed_prepare, mark, plan)  # as render.page.rasterise does
    drawn = canvas.render_pdf(page, plan)
    page.close()
    rendered = time.perf_counter()
    overlay, prepare_seconds = helper.result()
    waited = time.perf_counter()
    viewer_mark.apply(drawn, overlay, plan.page[1])
    marked = time.perf_counter()
    canvas.jpeg(drawn.image, 80)
    done = time.perf_counter()
    layout = after_layout - before_layout
    steps.render.append(rendered - started - layout)
    steps.watermark.append(layout + marked - rendered)
    steps.watermark_cpu.append(layout + prepare_seconds + marked - waited)
    steps.jpeg.append(done - marked)


_HELPER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-watermark")


def _timed_prepare(mark: WatermarkSpec, plan: canvas.Layout) -> tuple[viewer_mark.Overlay, float]:
    started = time.perf_counter()
    overlay = viewer_mark.prepare(mark, plan.width, plan.strip)
    return overlay, time.perf_counter() - started
