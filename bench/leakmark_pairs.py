"""Every pair of `bench.leakmark`'s single leaks, applied one after the other, on the bench's pages.

`python -m bench.leakmark_pairs [--pages 12] [--seed 5]`: each page is marked with a new random
id and served (JPEG q80) as in `bench.leakmark`; each pair of leaks is applied in the order a
leak goes through them (crop, rotation, rescale or screenshot, greyscale, tone, JPEG last) and
the decoder must give back the exact id. Pairs of the same kind (two rescales, a rescale and a
screenshot, two brightnesses, two contrasts) are left out. A wrong id is printed as such.
"""

from __future__ import annotations

import argparse
import itertools
import random
import time
from collections import defaultdict

from bench.leakmark import LAYOUT, mark_page
from bench.leakmark_attacks import ATTACKS, SERVED_QUALITY, corpus_pages, jpeg
from render.forensic import decode
from render.forensic_wire import trace_codes

# (leak, its place in the order, its kind)
SINGLE = [("half-area crop", 0, "crop"), ("rotate 2 deg", 1, "rotation"),
          ("downscale 50%", 2, "scale"), ("640 px wide", 2, "scale"),
          ("screenshot", 3, "screenshot"), ("greyscale", 4, "greyscale"),
          ("brightness +20%", 5, "brightness"), ("brightness -20%", 5, "brightness"),
          ("contrast +20%", 5, "contrast"), ("contrast -20%", 5, "contrast"),
          ("jpeg q50", 6, "jpeg")]
_SAME_KIND = [{"scale"}, {"screenshot"}, {"brightness"}, {"contrast"}, {"scale", "screenshot"}]


def pairs() -> list[tuple[str, str]]:
    chosen = []
    for (a, order_a, kind_a), (b, order_b, kind_b) in itertools.combinations(SINGLE, 2):
        if {kind_a, kind_b} in _SAME_KIND:
            continue
        chosen.append((a, b) if order_a <= order_b else (b, a))
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    pages = corpus_pages(args.pages)
    combinations = pairs()
    hits: dict[tuple[str, str], int] = defaultdict(int)
    misses: dict[tuple[str, str], list[str]] = defaultdict(list)
    start = time.perf_counter()
    for page in pages:
        render_id = trace_codes.new_render_id(rng.getrandbits)
        served = jpeg(mark_page(page, render_id), SERVED_QUALITY)
        for first, second in combinations:
            leaked = ATTACKS[second](ATTACKS[first](served, page.page_height, rng),
                                     page.page_height, rng)
            found = decode(leaked, LAYOUT)
            hits[(first, second)] += found == render_id
            if found != render_id:
                misses[(first, second)].append(page.name)
                if found is not None:
                    print(f"  WRONG ID: {page.name} {first} + {second}")
        print(f"  {page.name}: {time.perf_counter() - start:.0f} s", flush=True)
    print(f"\n{len(combinations)} pairs, {len(pages)} pages\n\n| Leaks | exact id recovered |"
          "\n|---|---|")
    for pair in combinations:
        missed = f" (missed: {', '.join(misses[pair])})" if misses[pair] else ""
        print(f"| {pair[0]} + {pair[1]} | {hits[pair]}/{len(pages)}{missed} |")
    total = sum(hits.values())
    print(f"\nall pairs: {total}/{len(combinations) * len(pages)}")


if __name__ == "__main__":
    main()
