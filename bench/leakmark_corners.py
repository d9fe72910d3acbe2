"""What rectifying from the page's own pattern would give (docs/leak-tracing.md, "Families the
reader was not tuned on"): the `filled` leaks of `bench.leakmark_untuned`, each read by the
photo reading (`render.forensic.photo.read_photo`) given the page's true corners, which lie
outside the frame, as the generator's camera puts them.

    python -m bench.leakmark_corners [--pages 6] [--leaks 2] [--seed 43]

An upper bound for a reader that estimates the page's perspective from its pattern instead of
its edges: if the corners it extrapolates are right, the rest of the reading is there.
"""

from __future__ import annotations

import argparse
import random

import numpy as np

from bench import leakmark_untuned as untuned
from bench.leakmark import LAYOUT, mark_page
from bench.leakmark_attacks import SERVED_QUALITY, corpus_pages, jpeg
from render.forensic import photo
from render.forensic_wire import trace_codes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=6)
    parser.add_argument("--leaks", type=int, default=2)
    parser.add_argument("--seed", type=int, default=43)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    named = total = 0
    for page in corpus_pages(args.pages):
        for _ in range(args.leaks):
            render_id = trace_codes.new_render_id(rng.getrandbits)
            served = jpeg(mark_page(page, render_id), SERVED_QUALITY)
            # The steps of `untuned.filled`, keeping the camera.
            camera = untuned._camera(served, rng, rng.uniform(0.55, 0.9), filled=True)
            leak = untuned.saved(untuned.sensed(untuned.lit(
                untuned.photographed(served, camera, rng), rng), rng), rng)
            factor = leak.width / camera.frame[0]  # the saves' resizes keep the aspect
            corners = camera.project(np.array(
                [[0, 0], [served.width, 0], [served.width, served.height],
                 [0, served.height]], float)) * factor
            found = photo.read_photo(leak, leak.convert("L"),
                                     [(float(x), float(y)) for x, y in corners], LAYOUT)
            total += 1
            named += found is not None and found[0] == render_id
            print(f"  {page.name} {leak.width}x{leak.height}: "
                  f"{'named' if found and found[0] == render_id else found}", flush=True)
    print(f"filled, the true corners given: {named}/{total} named")


if __name__ == "__main__":
    main()
