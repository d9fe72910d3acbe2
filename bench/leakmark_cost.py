"""What the leak-tracing mark adds to a page in the worker (docs/leak-tracing.md).

    python -m bench.leakmark_cost [--rounds 40] [--warm]

The worker's page path without the blob layer (`render.page.rasterise.render_pdf_canvas`: PDFium
render with the watermark drawn on the helper thread meanwhile, `viewer_mark.apply`, JPEG q80),
timed in the same process, the variants interleaved round by round so that load elsewhere hits them
all:

- *cached*: the same viewer text each time, no render id: the overlay cache hits (pages asked for
  within the same second) - the old best case;
- *new second*: no render id, a new display time each time: the overlay is drawn anew;
- *marked*: a new render id each time (as served now): trace code drawn, invisible mark embedded.

With `--warm`, the page is rendered once and kept as the worker's page cache keeps it (grey rows
when it has no colour), and each sample is the warm path of `render.worker.tasks.render_page`: the
rows copied back (with the mark's darkening, for *marked*), the pattern and strip, the JPEG.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

import pypdfium2 as pdfium

from bench import corpus
from render.forensic_wire.trace_codes import new_render_id
from render.page import canvas
from render.page.rasterise import render_pdf_canvas
from render.watermark import viewer_mark
from render.wire.model import PixelBudget, WatermarkSpec


class _NoStream:
    """Stands in for the decrypting stream: the document is in memory here."""

    def raise_pending(self) -> None:
        return None


def _spec(displayed_at: str, render_id: int | None) -> WatermarkSpec:
    return WatermarkSpec("Ann Viewer", "ann.viewer@example.com", "203.0.113.7", "Acme Corp",
                         displayed_at, render_id)


def _page_ms(document: pdfium.PdfDocument, number: int, mark: WatermarkSpec) -> float:
    start = time.perf_counter()
    page, plan, overlay = render_pdf_canvas(document, _NoStream(), number,  # type: ignore[arg-type]
                                            mark, PixelBudget())
    viewer_mark.apply(page, overlay, plan.page[1])
    canvas.jpeg(page.image, 80)
    return (time.perf_counter() - start) * 1e3


@dataclass(frozen=True)
class _Kept:
    page: tuple[int, int]
    rows: bytes
    grey: bool


def _kept(document: pdfium.PdfDocument, number: int) -> _Kept:
    page, plan, _ = render_pdf_canvas(document, _NoStream(), number,  # type: ignore[arg-type]
                                      _spec("2026-11-24 04:30:00", None), PixelBudget())
    grey = canvas.grey_rows(page, plan)
    return _Kept(plan.page, grey if grey is not None else bytes(canvas.page_rows(page, plan)),
                 grey is not None)


def _warm_ms(kept: _Kept, mark: WatermarkSpec) -> float:
    """As `render.worker.tasks.render_page` serves a page from its cache."""
    start = time.perf_counter()
    budget = PixelBudget()
    plan = canvas.layout(kept.page, mark, budget)
    overlay = viewer_mark.prepare(mark, plan.width, plan.strip)
    paper = viewer_mark.paper_mark(overlay)
    page = canvas.from_rows(kept.rows, plan, kept.grey, paper)
    viewer_mark.apply(page, overlay, plan.page[1], paper is not None)
    canvas.jpeg(page.image, 80, grey=kept.grey)
    return (time.perf_counter() - start) * 1e3


def _sample(document: pdfium.PdfDocument, number: int, kept: _Kept | None,
            mark: WatermarkSpec) -> float:
    return _page_ms(document, number, mark) if kept is None else _warm_ms(kept, mark)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--warm", action="store_true", help="pages from kept rows")
    args = parser.parse_args()
    sources = [("text cover", corpus.small_pdf().data, 1),
               ("photo page", corpus.image_heavy_pdf(pages=3, target=2_000_000).data, 2)]
    print("| Page | cached, no id | new second, no id | marked (new id) | added vs new second "
          "| added vs cached |\n|---|---|---|---|---|---|")
    for name, data, number in sources:
        document = pdfium.PdfDocument(data)
        kept = _kept(document, number) if args.warm else None
        times: dict[str, list[float]] = {"cached": [], "second": [], "marked": []}
        for n in range(args.rounds + 3):
            samples = {
                "cached": _sample(document, number, kept, _spec("2026-11-24 04:30:00", None)),
                "second": _sample(document, number, kept,
                                  _spec(f"2026-11-24 04:{n:05d}", None)),
                "marked": _sample(document, number, kept,
                                  _spec("2026-11-24 04:30:00", new_render_id())),
            }
            if n >= 3:  # warm-up rounds dropped
                for key, value in samples.items():
                    times[key].append(value)
        document.close()
        cached, second, marked = (statistics.median(times[k]) for k in times)
        print(f"| {name} | {cached:.1f} ms | {second:.1f} ms | {marked:.1f} ms | "
              f"{100 * (marked / second - 1):+.0f} % | {100 * (marked / cached - 1):+.0f} % |")


if __name__ == "__main__":
    main()
