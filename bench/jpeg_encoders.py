"""Pillow's JPEG encoder against simplejpeg and PyTurboJPEG on the page path's own canvases.

Every candidate encodes the same watermarked RGBX canvas (vaultd's render + watermark of corpus
pages, as a worker produces it) at the same quality and 4:2:0 subsampling, no Huffman
optimisation; the candidates run back to back on each page in a rotating order, and each
page's time is divided by Pillow's on the same page in the same round (the p50 of those ratios
is reported, so background load on the shared machine cancels out). The page path's share is
the encode's share of a worker's render + watermark + encode, measured in the same run.

    .venv/bin/python -m bench.jpeg_encoders --rounds 5 --repeat 3

simplejpeg and PyTurboJPEG are not dependencies: `pip install simplejpeg 'PyTurboJPEG<2'` and
`apt-get install libturbojpeg0` first (PyTurboJPEG 2.x refuses Debian 12's libjpeg-turbo).
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pypdfium2 as pdfium
from PIL import Image

from bench import corpus
from bench.breakdown import _mark
from bench.latency import sample_pages
from render.page import canvas
from render.page.sizing import fit_scale, scaled_size
from render.watermark import viewer_mark
from render.wire.model import PixelBudget

QUALITY = 80
Encoder = Callable[[canvas.Canvas], bytes]


def pillow(page: canvas.Canvas) -> bytes:
    return canvas.jpeg(page.image, QUALITY)


def _simplejpeg() -> Encoder:
    import simplejpeg  # type: ignore[import-not-found,import-untyped,unused-ignore]

    def encode(page: canvas.Canvas) -> bytes:
        width, height = page.image.size
        pixels = np.frombuffer(page.pixels, np.uint8, height * page.stride).reshape(
            height, width, 4)
        data: bytes = simplejpeg.encode_jpeg(pixels, QUALITY, "RGBX", "420", fastdct=True)
        return data
    return encode


def _turbojpeg() -> Encoder:
    from turbojpeg import TJPF_RGBX, TJSAMP_420, TurboJPEG  # type: ignore[import-not-found,import-untyped,unused-ignore]

    jpeg = TurboJPEG()

    def encode(page: canvas.Canvas) -> bytes:
        width, height = page.image.size
        pixels = np.frombuffer(page.pixels, np.uint8, height * page.stride).reshape(
            height, width, 4)
        data: bytes = jpeg.encode(pixels, QUALITY, TJPF_RGBX, TJSAMP_420)
        return data
    return encode


@dataclass
class Samples:
    seconds: dict[str, list[float]] = field(default_factory=dict)
    ratios: dict[str, list[float]] = field(default_factory=dict)
    sizes: dict[str, list[int]] = field(default_factory=dict)
    page_work: list[float] = field(default_factory=list)  # render + watermark, no encode


def _canvas(document: pdfium.PdfDocument, number: int, turn: int, budget: PixelBudget
            ) -> tuple[canvas.Canvas, float]:
    started = time.perf_counter()
    page = document[number - 1]
    try:
        width, height = page.get_size()
        mark = _mark(turn)
        plan = canvas.layout(scaled_size(width, height, fit_scale(width, height, budget)),
                             mark, budget)
        drawn = canvas.render_pdf(page, plan)
    finally:
        page.close()
    viewer_mark.apply(drawn, viewer_mark.prepare(mark, plan.width, plan.strip), plan.page[1])
    return drawn, time.perf_counter() - started


def measure(encoders: dict[str, Encoder], docs: list[corpus.Document], rounds: int,
            wanted: int) -> Samples:
    samples = Samples()
    budget = PixelBudget()
    names = list(encoders)
    turn = 0
    for _ in range(rounds):
        for doc in docs:
            document = pdfium.PdfDocument(doc.data)
            try:
                for number in sample_pages(doc.pages, wanted):
                    turn += 1
                    drawn, work = _canvas(document, number, turn, budget)
                    samples.page_work.append(work)
                    own: dict[str, float] = {}
                    for name in names[turn % len(names):] + names[:turn % len(names)]:
                        started = time.perf_counter()
                        data = encoders[name](drawn)
                        own[name] = time.perf_counter() - started
                        samples.sizes.setdefault(name, []).append(len(data))
                        Image.open(io.BytesIO(data)).verify()
                    for name, spent in own.items():
                        samples.seconds.setdefault(name, []).append(spent)
                        samples.ratios.setdefault(name, []).append(spent / own["pillow"])
            finally:
                document.close()
    return samples


def report(samples: Samples) -> list[str]:
    pillow_ms = statistics.median(samples.seconds["pillow"]) * 1000
    page_ms = statistics.median(samples.page_work) * 1000 + pillow_ms
    lines = ["| encoder | p50 ms | x Pillow (p50 of same-page ratios) | mean kB | "
             "page path x Pillow's |", "| --- | --- | --- | --- | --- |"]
    for name, times in samples.seconds.items():
        ratio = statistics.median(samples.ratios[name])
        saved = pillow_ms * (1 - ratio)
        lines.append(f"| {name} | {statistics.median(times) * 1000:.2f} | {ratio:.3f} | "
                     f"{statistics.mean(samples.sizes[name]) / 1000:.0f} | "
                     f"{(page_ms - saved) / page_ms:.3f} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pages", type=int, default=4, help="pages per document")
    args = parser.parse_args(argv)
    encoders: dict[str, Encoder] = {"pillow": pillow, "simplejpeg": _simplejpeg(),
                                    "turbojpeg": _turbojpeg()}
    docs = [*corpus.system_pdfs(4), corpus.image_heavy_pdf(), corpus.small_pdf()]
    for run in range(args.repeat):
        print(f"run {run + 1}")
        print("\n".join(report(measure(encoders, docs, args.rounds, args.pages))))


if __name__ == "__main__":
    main()
