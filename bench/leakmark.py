"""Evaluation of the invisible leak-tracing mark (docs/leak-tracing.md).

    python -m bench.leakmark [--pages 12] [--unmarked 200] [--seed 7] [--placement]
    python -m bench.leakmark --family phone [--pages 12] [--photos 2] [--unmarked 24]
        [--point-sampled] [--placement]
    python -m bench.leakmark --family wash [--pages 12] [--candidates 2000]

Renders real corpus pages as vaultd serves them, marks each with a random render id, serves it
(JPEG q80), applies every leak transformation of `bench.leakmark_attacks` and reports the
exact-id recovery rate per transformation, PSNR against the same render unmarked, embed and
decode times, and false positives on unmarked images (the same pages served unmarked and
transformed, and photographs).
`--family phone`: phone photos of the page shown on a screen (`bench.leakmark_phone`), `--photos`
a page, and false matches over `--unmarked` photos of the same pages unmarked made the same way.
`--family wash`: each page marked in a random deployment's layout with the placement mark on,
served, then washed by each wash of `bench.leakmark_wash` (the source without the key; the
key, as a control): each mark still read (the placement mark among `--candidates` views), and
the washed page's PSNR against the page as served. `--placement`: the leak and phone families
with the pattern's words moved by the placement mark (`trace.placement_mark`), so that the
invisible mark's rows are measured on such pages.
Library comparisons: `python -m bench.leakmark_libs` (needs the libraries installed).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import statistics
import time

import numpy as np
from PIL import Image

from bench.leakmark_attacks import (
    ATTACKS,
    SERVED_QUALITY,
    Page,
    corpus_pages,
    jpeg,
    marked,
    placed,
    psnr,
)
from bench.leakmark_phone import photographed
from bench.leakmark_wash import WASHES, blended, moved_back
from render.forensic import decode, embed_into, placement, placement_read
from render.forensic.layout import keyed
from render.forensic_wire import trace_codes
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.services.tracing.placement import THRESHOLD

# The pages are marked and read in a deployment's keyed layout, as vaultd serves them (not the
# published one): a fixed key, so that runs compare.
LAYOUT_KEY = hashlib.sha256(b"bench.leakmark deployment").digest()
LAYOUT = keyed(LAYOUT_KEY)
READABLE_DB = 35.0
# `--placement`: the pattern's words moved as `trace.placement_mark` moves them, a seed per id.
PLACEMENT = MarkCipher.from_key(hashlib.sha256(b"bench.leakmark placement").digest())


def embed_ms(page: Page, render_id: int) -> tuple[float, float]:
    """(embed, JPEG encode) milliseconds on the page's RGBX buffer, medians of 15."""
    rgbx = page.image.convert("RGBX")
    buffer = bytearray(rgbx.tobytes())
    area = (page.image.width, page.page_height)
    marks, encodes = [], []
    for _ in range(15):
        start = time.perf_counter()
        embed_into(buffer, page.image.width * 4, area, render_id, LAYOUT)
        marks.append(time.perf_counter() - start)
        start = time.perf_counter()
        jpeg(rgbx, SERVED_QUALITY)
        encodes.append(time.perf_counter() - start)
    return statistics.median(marks) * 1e3, statistics.median(encodes) * 1e3


def mark_page(page: Page, render_id: int, placement: bool = False) -> Image.Image:
    """The page marked as the worker marks it (`bench.leakmark_attacks.marked`), in the
    bench's deployment layout; `placement`: its words moved by the placement mark too."""
    seed = PLACEMENT.placement_seed(render_id) if placement else None
    return marked(page, render_id, LAYOUT_KEY, seed)


def photos(count: int, rng: random.Random) -> list[Image.Image]:
    """Unmarked photograph-like images (gradients, shapes, grain) of varied sizes."""
    import io

    from bench.corpus import _photo_jpeg  # the corpus's own generator
    out = []
    for n in range(count):
        size = (rng.randint(500, 1600), rng.randint(400, 1400))
        data = _photo_jpeg(1000 + n, size, rng.randint(50, 95))
        out.append(Image.open(io.BytesIO(data)).convert("RGB"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--unmarked", type=int, default=200, help="false-positive trials")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--attacks", default="",
                        help="only these transformations (names, comma-separated)")
    parser.add_argument("--family", choices=("leaks", "phone", "wash"), default="leaks")
    parser.add_argument("--photos", type=int, default=2, help="phone photos a page")
    parser.add_argument("--candidates", type=int, default=2000,
                        help="wash: the views the placement mark is scored among")
    parser.add_argument("--placement", action="store_true",
                        help="leaks, phone: the pattern's words moved by the placement mark")
    parser.add_argument("--point-sampled", action="store_true",
                        help="phone photos: the screen's grid sampled at points, blurred after")
    args = parser.parse_args()
    if args.family == "phone":
        phone_family(corpus_pages(args.pages), args.photos, args.unmarked,
                     random.Random(args.seed), args.point_sampled, args.placement)
        return
    if args.family == "wash":
        wash_family(corpus_pages(args.pages), random.Random(args.seed), args.candidates)
        return
    leaks_family(args)


def leaks_family(args: argparse.Namespace) -> None:
    """Every transformation of `ATTACKS` on every page marked, then false positives over
    unmarked images."""
    attacks = {name: attack for name, attack in ATTACKS.items()
               if not args.attacks or name in args.attacks.split(",")}
    rng = random.Random(args.seed)
    pages = corpus_pages(args.pages)
    print(f"{len(pages)} pages: " + ", ".join(
        f"{p.name} {p.image.width}x{p.image.height}" for p in pages))
    hits = {name: 0 for name in attacks}
    decode_times: list[float] = []
    psnrs, served_psnrs, embeds, encodes = [], [], [], []
    served_pages: list[Image.Image] = []
    for page in pages:
        render_id = trace_codes.new_render_id(rng.getrandbits)
        marked = mark_page(page, render_id, args.placement)
        # Against the page as drawn without the invisible mark: with `--placement`, its words
        # moved as the mark moved them (where they are is the visible pattern's layout).
        plain = (placed(page, PLACEMENT.placement_seed(render_id)) if args.placement
                 else page.image)
        psnrs.append(psnr(plain, marked))
        served = jpeg(marked, SERVED_QUALITY)
        unmarked_served = jpeg(plain, SERVED_QUALITY)
        served_pages.append(unmarked_served)
        served_psnrs.append(psnr(unmarked_served, served))
        mark_ms, encode_ms = embed_ms(page, render_id)
        embeds.append(mark_ms)
        encodes.append(encode_ms)
        for name, attack in attacks.items():
            leaked = attack(served, page.page_height, rng)
            start = time.perf_counter()
            found = decode(leaked, LAYOUT)
            decode_times.append(time.perf_counter() - start)
            hits[name] += found == render_id
            if found != render_id:
                print(f"  miss: {page.name} {name} -> {found}")
    print("\n| Transformation | exact id recovered |\n|---|---|")
    for name, count in hits.items():
        print(f"| {name} | {count}/{len(pages)} ({100 * count / len(pages):.0f} %) |")
    print(f"\nPSNR vs unmarked render: min {min(psnrs):.1f} dB, median "
          f"{statistics.median(psnrs):.1f} dB; after the served JPEG q80: min "
          f"{min(served_psnrs):.1f} dB")
    print(f"embed: median {statistics.median(embeds):.2f} ms a page (JPEG q80 encode of the "
          f"same page: {statistics.median(encodes):.2f} ms, so the mark is "
          f"{100 * statistics.median(embeds) / statistics.median(encodes):.0f} % of the encode)")
    print(f"decode: median {statistics.median(decode_times) * 1e3:.0f} ms, "
          f"max {max(decode_times) * 1e3:.0f} ms")
    false_positives, trials = 0, 0
    unmarked = [ATTACKS[name](served_pages[i % len(served_pages)], pages[i % len(pages)]
                              .page_height, rng)
                for i, name in enumerate(list(ATTACKS) * math.ceil(args.unmarked / 2 /
                                                                   len(ATTACKS)))]
    for image in unmarked[: args.unmarked // 2] + photos(args.unmarked - args.unmarked // 2, rng):
        trials += 1
        false_positives += decode(image, LAYOUT) is not None
    print(f"false positives: {false_positives}/{trials} unmarked images "
          f"(served pages unmarked and transformed, and photographs)")


def phone_family(pages: list[Page], per_page: int, unmarked: int, rng: random.Random,
                 point_sampled: bool = False, placement: bool = False) -> None:
    """Phone photos of each page marked (`per_page` each, a new id each), then `unmarked`
    photos of the pages unmarked: traced right, wrong, missed; decode times."""
    right, wrong, times = 0, 0, []
    for page in pages:
        for _ in range(per_page):
            render_id = trace_codes.new_render_id(rng.getrandbits)
            photo, _ = photographed(jpeg(mark_page(page, render_id, placement),
                                         SERVED_QUALITY), rng,
                                    point_sampled)
            start = time.perf_counter()
            found = decode(photo, LAYOUT)
            times.append(time.perf_counter() - start)
            right += found == render_id
            wrong += found is not None and found != render_id
            print(f"  {page.name}: {'right' if found == render_id else found}"
                  f" ({times[-1]:.1f} s)", flush=True)
    total = len(pages) * per_page
    print(f"\nphone photo: {right}/{total} traced to the right view ({100 * right / total:.0f} %),"
          f" {wrong} wrong; decode median {statistics.median(times):.1f} s,"
          f" max {max(times):.1f} s")
    false_matches, miss_times = 0, []
    for n in range(unmarked):
        page = pages[n % len(pages)]
        photo, _ = photographed(jpeg(page.image, SERVED_QUALITY), rng, point_sampled)
        start = time.perf_counter()
        false_matches += decode(photo, LAYOUT) is not None
        miss_times.append(time.perf_counter() - start)
    if unmarked:
        print(f"false matches: {false_matches}/{unmarked} unmarked phone photos; decode median"
              f" {statistics.median(miss_times):.1f} s, max {max(miss_times):.1f} s")


def wash_family(pages: list[Page], rng: random.Random, candidates: int) -> None:
    """Every wash of `bench.leakmark_wash` on every page, marked in a random deployment's
    layout with the placement mark on: how often each mark still names the view (the
    invisible one decoded in that layout; the placement mark scored as vaultd scores it,
    among `candidates` views), and the washed page's PSNR against the page as served."""
    rows: dict[str, list[tuple[bool, float, float, float]]] = {}
    for page in pages:
        mark = MarkCipher.from_key(rng.randbytes(32))
        plan, value = keyed(mark.layout_key), trace_codes.new_render_id(rng.getrandbits)
        served = jpeg(marked(page, value, mark.layout_key, mark.placement_seed(value)),
                      SERVED_QUALITY)
        home = jpeg(marked(page, value, mark.layout_key), SERVED_QUALITY)
        views = [value, *(trace_codes.new_render_id(rng.getrandbits)
                          for _ in range(candidates - 1))]
        washes = {name: wash(served, page.page_height, plan) for name, wash in WASHES.items()}
        washes[f"observed chips + words moved back (to {READABLE_DB:.0f} dB)"] = moved_back(
            served, home, page.page_height, READABLE_DB)[0]
        washes["observed chips + every word home (control)"] = WASHES["observed chips, no key"](
            blended(served, home, 1.0), page.page_height, plan)
        for name, washed in washes.items():
            evidence = placement_read.read(washed)
            seeds = [mark.placement_seed(view) for view in views]
            standing = (np.zeros(len(views)) if evidence is None
                        else placement.standings(evidence, seeds))
            rows.setdefault(name, []).append((decode(washed, plan) == value, standing[0],
                                              float(standing[1:].max()), psnr(served, washed)))
            print(f"  {page.name} {name}: invisible {rows[name][-1][0]}, placement"
                  f" {standing[0]:.1f} (others {standing[1:].max():.1f}),"
                  f" {rows[name][-1][3]:.1f} dB", flush=True)
    print(f"\n| Wash | invisible mark read | placement mark names the view (z min, median;"
          f" largest of {candidates - 1} others') | either | PSNR against the page as served"
          " (min, median) |\n|---|---|---|---|---|")
    for name, found in rows.items():
        invisible = sum(row[0] for row in found)
        named = sum(row[1] >= THRESHOLD and row[1] == max(row[1], row[2]) for row in found)
        either = sum(row[0] or (row[1] >= THRESHOLD and row[1] >= row[2]) for row in found)
        zs, quality = [row[1] for row in found], [row[3] for row in found]
        print(f"| {name} | {invisible}/{len(found)} | {named}/{len(found)} ({min(zs):.1f},"
              f" {statistics.median(zs):.1f}; {max(row[2] for row in found):.1f}) |"
              f" {either}/{len(found)} | {min(quality):.1f} dB, {statistics.median(quality):.1f}"
              " dB |")

if __name__ == "__main__":
    main()
