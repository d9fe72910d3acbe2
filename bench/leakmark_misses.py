"""What a trace of an unmarked page-like image costs (issue 30: <= 0.5 s of worker time, p95).

    python -m bench.leakmark_misses [--pages 6] [--photos 0] [--seed 7]

The pages of `bench.leakmark`, served unmarked, through the leaks that reach every reading
(none, a raised tone, a screenshot, a rescale and JPEG), each decoded in this process: the
process CPU time of each decode (what a worker spends; the wall time is shown too, it counts
other jobs on a shared machine), p50, p95 and max. `--photos N`: N unmarked phone photos too.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from bench.leakmark_attacks import ATTACKS, SERVED_QUALITY, corpus_pages, jpeg
from bench.leakmark_phone import photographed
from render.forensic import decode

LEAKS = ("none", "brightness +20%", "contrast +20%", "screenshot",
         "screenshot + brightness +20%", "640 px + brightness +20%",
         "brightness +20% + jpeg q50", "downscale 50% + jpeg q50")


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _report(name: str, cpu: list[float], wall: list[float]) -> None:
    print(f"{name}: {len(cpu)} images; CPU p50 {statistics.median(cpu):.2f} s, p95 "
          f"{_quantile(cpu, 0.95):.2f} s, max {max(cpu):.2f} s; wall p50 "
          f"{statistics.median(wall):.2f} s, p95 {_quantile(wall, 0.95):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=6)
    parser.add_argument("--photos", type=int, default=0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    pages = corpus_pages(args.pages)
    cpu, wall, found = [], [], 0
    for page in pages:
        served = jpeg(page.image, SERVED_QUALITY)
        for leak in LEAKS:
            image = ATTACKS[leak](served, page.page_height, rng)
            start, start_cpu = time.perf_counter(), time.process_time()
            found += decode(image) is not None
            cpu.append(time.process_time() - start_cpu)
            wall.append(time.perf_counter() - start)
    _report("unmarked served pages", cpu, wall)
    photo_cpu, photo_wall = [], []
    for n in range(args.photos):
        page = pages[n % len(pages)]
        photo, _ = photographed(jpeg(page.image, SERVED_QUALITY), rng)
        start, start_cpu = time.perf_counter(), time.process_time()
        found += decode(photo) is not None
        photo_cpu.append(time.process_time() - start_cpu)
        photo_wall.append(time.perf_counter() - start)
    if photo_cpu:
        _report("unmarked phone photos", photo_cpu, photo_wall)
    print(f"found (false matches): {found}")


if __name__ == "__main__":
    main()
