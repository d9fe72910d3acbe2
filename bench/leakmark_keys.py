"""How the reading of `tests/test_trace_api.py`'s leaks varies with the deployment's key.

    python -m bench.leakmark_keys [--keys 50] [--seed 16] [--leaks "contrast +20%,..."]

The test's two pages (a text heading over half a page of colour block, `tests.documents.pdf`),
rendered and marked as a vaultd worker serves them (the viewer's pattern, the sealed value
printed and marked in the deployment's keyed layout, the pattern's words moved by the
placement mark, JPEG q80), each under `--keys` random deployment keys; each leak of the test
made from each, sent as the test sends it (JPEG q90 or PNG) and decoded in the key's layout.
Prints the misses per leak (a miss: no id; a wrong id is counted apart, and must stay 0).
"""

from __future__ import annotations

import argparse
import collections
import io
import random
import time
from datetime import UTC, datetime, timedelta

import pypdfium2 as pdfium
from PIL import Image, ImageEnhance

from bench.leakmark_attacks import ATTACKS
from render.forensic import decode
from render.forensic.layout import keyed
from render.page import canvas
from render.page.sizing import fit_scale, scaled_size
from render.watermark import viewer_mark
from render.wire.model import PixelBudget, WatermarkSpec
from tests import documents
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.services.pages.page_path import JPEG_QUALITY
from vaultd.timefmt import paris_display

LEAKS = ("none", "jpeg q50", "downscale 50%", "640 px wide", "half-area crop", "screenshot",
         "greyscale", "rotate 2 deg", "crop + jpeg q50", "downscale 50% + jpeg q50",
         "rotate 2 deg + crop", "greyscale + 640 px", "brightness -20%", "contrast -20%",
         "brightness +20%", "contrast +20%", "rotate 2 deg + brightness +20%",
         "rotate 2 deg + contrast +20%", "brightness +20% + jpeg q50",
         "contrast +20% + jpeg q50", "640 px + brightness +20%")


def served_page(document: pdfium.PdfDocument, index: int, cipher: MarkCipher,
                render_id: int, moment: datetime) -> Image.Image:
    """Page `index` as a worker serves it to the test's viewer (`render.worker.tasks.render_page`)
    at `moment`: page 1 over the API with the viewer's IP, page 2 through the hosted viewer."""
    spec = WatermarkSpec("Dana Scully", "dana@example.com",
                         "203.0.113.9" if index == 0 else "127.0.0.1", "Acme Corp",
                         paris_display(moment), render_id, cipher.seal(render_id),
                         cipher.layout_key, cipher.placement_seed(render_id))
    budget = PixelBudget()
    page = document[index]
    try:
        width, height = page.get_size()
        plan = canvas.layout(scaled_size(width, height, fit_scale(width, height, budget)),
                             spec, budget)
        drawn = canvas.render_pdf(page, plan)
    finally:
        page.close()
    viewer_mark.apply(drawn, viewer_mark.prepare(spec, plan.width, plan.strip), plan.page[1])
    return Image.open(io.BytesIO(canvas.jpeg(drawn.image, JPEG_QUALITY))).convert("RGB")


def sent(leak: str, page: Image.Image, rng: random.Random) -> Image.Image:
    """The leak as the test makes and posts it."""
    if leak == "brightness -20%":
        image = ImageEnhance.Brightness(page).enhance(0.8)
    elif leak == "contrast -20%":
        image = ImageEnhance.Contrast(page).enhance(0.8)
    else:
        image = ATTACKS[leak](page, page.height * 9 // 10, rng)
    out = io.BytesIO()
    if "jpeg" in leak:
        image.save(out, "JPEG", quality=90)
    else:
        image.save(out, "PNG")
    return Image.open(io.BytesIO(out.getvalue()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=50)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--leaks", default=",".join(LEAKS))
    args = parser.parse_args()
    leaks = args.leaks.split(",")
    keys = random.Random(args.seed)
    document = pdfium.PdfDocument(documents.pdf(pages=2))
    misses: collections.Counter[str] = collections.Counter()
    wrong: collections.Counter[str] = collections.Counter()
    tries = 0
    start = time.process_time()
    for number in range(args.keys):
        cipher = MarkCipher.from_key(keys.randbytes(32))
        plan = keyed(cipher.layout_key)
        moment = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=keys.randrange(10**7))
        missed_here = []
        for index in range(2):
            render_id = keys.getrandbits(45) or 1
            page = served_page(document, index, cipher, render_id, moment)
            rng = random.Random(args.seed)
            for leak in leaks:
                found = decode(sent(leak, page, rng), plan)
                tries += 1
                if found is None:
                    misses[leak] += 1
                    missed_here.append(f"p{index + 1} {leak}")
                elif cipher.open(found) != render_id:
                    wrong[leak] += 1
                    missed_here.append(f"WRONG p{index + 1} {leak}")
        print(f"key {number}: {len(missed_here)} missed {missed_here}", flush=True)
    print(f"{tries} leaks, {sum(misses.values())} missed, {sum(wrong.values())} wrong; "
          f"CPU {time.process_time() - start:.0f} s")
    for leak, count in misses.most_common():
        print(f"  {leak}: {count} missed of {2 * args.keys}")
    for leak, count in wrong.most_common():
        print(f"  WRONG {leak}: {count}")


if __name__ == "__main__":
    main()
