"""Served pages scaled and recompressed (docs/leak-tracing.md, "Scaled and recompressed leaks").

    python -m bench.leakmark_rescaled [--seeds 5,6,7] [--pages 3] [--scale 0.6] [--quality 60]
        [--filters bicubic,lanczos]

Pages rendered as vaultd serves them, closer than `bench.leakmark`'s: the viewer's watermark
carries the render id (the strip prints its trace code), the value sealed under a deployment's
mark key, marked in that key's layout, the pattern's words placed by the view's seed; each
seed a new deployment. A page without colour is served as a greyscale JPEG q80, as
`render.page.canvas.jpeg` does. The first `--pages` pages of the generated text cover and of the
machine's PDFs, each scaled by `--scale` with each filter, saved at JPEG `--quality`, read by
`decode` in the deployment's layout: named, wrong and missed per seed and filter, and the
lowest sync score of a named leak.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import random

import pypdfium2 as pdfium
from PIL import Image, ImageChops

from bench import corpus
from bench.leakmark_attacks import MARK, SERVED_QUALITY, _watermarked
from render.forensic import detect
from render.forensic.layout import keyed
from render.forensic_wire import trace_codes
from render.page import canvas
from render.page.sizing import fit_scale, scaled_size
from render.watermark import viewer_mark
from render.wire.model import PixelBudget, WatermarkSpec
from vaultd.services.pages.mark_key import MarkCipher

FILTERS = {"bicubic": Image.Resampling.BICUBIC, "lanczos": Image.Resampling.LANCZOS,
           "bilinear": Image.Resampling.BILINEAR, "box": Image.Resampling.BOX}


def served(document: pdfium.PdfDocument, index: int, spec: WatermarkSpec) -> Image.Image:
    """Page `index` as the worker serves it for `spec`: greyscale when it has no colour."""
    page = document[index]
    try:
        width, height = page.get_size()
        budget = PixelBudget()
        plan = canvas.layout(scaled_size(width, height, fit_scale(width, height, budget)),
                             spec, budget)
        drawn = canvas.render_pdf(page, plan)
        pixels = bytes(drawn.pixels[: drawn.stride * drawn.image.height])
    finally:
        page.close()
    image = _watermarked(pixels, drawn.image.size, viewer_mark.prepare(spec, plan.width,
                                                                     plan.strip), plan.page[1])
    red, green, blue = image.split()
    grey = not (ImageChops.difference(red, green).getbbox()
                or ImageChops.difference(green, blue).getbbox())
    return _jpeg(image.getchannel("G") if grey else image, SERVED_QUALITY)


def _jpeg(image: Image.Image, quality: int) -> Image.Image:
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality)
    return Image.open(io.BytesIO(out.getvalue()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="5,6,7")
    parser.add_argument("--pages", type=int, default=3, help="pages of each document")
    parser.add_argument("--scale", type=float, default=0.6)
    parser.add_argument("--quality", type=int, default=60)
    parser.add_argument("--filters", default="bicubic,lanczos")
    args = parser.parse_args()
    filters = args.filters.split(",")
    sources = [corpus.small_pdf(), *corpus.system_pdfs(8)]
    print("| seed | filter | named | wrong | missed | lowest sync score named |\n"
          "|---|---|---|---|---|---|")
    for seed in (int(s) for s in args.seeds.split(",")):
        rng = random.Random(seed)
        cipher = MarkCipher.from_key(rng.randbytes(32))
        plan = keyed(cipher.layout_key)
        tallies = {name: [0, 0, 0] for name in filters}
        lowest = {name: float("inf") for name in filters}
        for source in sources:
            document = pdfium.PdfDocument(source.data)
            try:
                for index in range(min(args.pages, len(document))):
                    render_id = trace_codes.new_render_id(rng.getrandbits)
                    spec = dataclasses.replace(
                        MARK, render_id=render_id, mark_value=cipher.seal(render_id),
                        mark_layout=cipher.layout_key,
                        placement_seed=cipher.placement_seed(render_id))
                    page = served(document, index, spec)
                    for name in filters:
                        size = (round(page.width * args.scale), round(page.height * args.scale))
                        leak = _jpeg(page.resize(size, FILTERS[name]), args.quality)
                        found = detect(leak, plan)
                        tally = tallies[name]
                        if found is None:
                            tally[2] += 1
                            print(f"  missed: {source.name}#{index + 1} {name}", flush=True)
                        elif found.render_id == spec.mark_value:
                            tally[0] += 1
                            lowest[name] = min(lowest[name], found.sync_score)
                        else:
                            tally[1] += 1
                            print(f"  wrong: {source.name}#{index + 1} {name}", flush=True)
            finally:
                document.close()
        for name in filters:
            named, wrong, missed = tallies[name]
            print(f"| {seed} | {name} | {named}/{named + wrong + missed} | {wrong} | {missed} |"
                  f" {lowest[name]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
