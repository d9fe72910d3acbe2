"""What a trace of an unmarked page-like image costs (the budget: <= 0.5 s of worker time, p95).

    python -m bench.leakmark_misses [--pages 6] [--photos 0] [--seed 7] [--placement]

The pages of `bench.leakmark`, served unmarked, through the leaks that reach every reading
(none, a raised tone, a screenshot, a rescale and JPEG), each decoded in this process: the
process CPU time of each decode (what a worker spends; the wall time is shown too, it counts
other jobs on a shared machine), p50, p95 and max, after one decode that is not counted (a
worker's first pays for imports and FFT plans once). `--photos N`: N unmarked phone photos too.
`--placement`: each miss also read for the placement mark, as a worker does after the
invisible mark found nothing when `trace.placement_mark` is on (the pages unmoved: what an
image the deployment did not serve costs).

The target is in seconds, and the machines these run on differ by a third from day to day: a
yardstick, the same fixed work of the decoder's kinds (FFTs, box blurs, a bincount) timed
before and after in this process, is printed with every figure in its units too, so that runs
on different machines compare.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import numpy as np
from PIL import Image, ImageFilter

from bench.leakmark_attacks import ATTACKS, SERVED_QUALITY, corpus_pages, jpeg
from bench.leakmark_phone import photographed
from render.forensic import decode, placement_read

LEAKS = ("none", "brightness +20%", "contrast +20%", "screenshot",
         "screenshot + brightness +20%", "640 px + brightness +20%",
         "brightness +20% + jpeg q50", "downscale 50% + jpeg q50")


def cpu_seconds(work: Callable[[], object]) -> float:
    """The CPU seconds of this process that `work` took (`time.process_time`)."""
    start = time.process_time()
    work()
    return time.process_time() - start


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def yardstick() -> float:
    """CPU seconds of a fixed workload of the decoder's kinds (the best of five, after one
    run that warms the caches up)."""
    rng = np.random.default_rng(1)
    plane = rng.random((1024, 1024), dtype=np.float32)
    image = Image.fromarray((plane * 255).astype(np.uint8))
    indexes, weights = rng.integers(0, 9216, 1_000_000), rng.random(1_000_000)
    times = []
    for _ in range(6):
        start = time.process_time()
        for _ in range(5):
            np.fft.irfft2(np.fft.rfft2(plane) * 0.5, s=plane.shape)
            image.filter(ImageFilter.BoxBlur(3))
            np.bincount(indexes, weights, 9216)
        times.append(time.process_time() - start)
    return min(times[1:])


def _report(name: str, cpu: list[float], wall: list[float], unit: float) -> None:
    p50, p95 = statistics.median(cpu), _quantile(cpu, 0.95)
    print(f"{name}: {len(cpu)} images; CPU p50 {p50:.2f} s, p95 {p95:.2f} s, max "
          f"{max(cpu):.2f} s; wall p50 {statistics.median(wall):.2f} s, p95 "
          f"{_quantile(wall, 0.95):.2f} s; in yardsticks: p50 {p50 / unit:.1f}, p95 "
          f"{p95 / unit:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=6)
    parser.add_argument("--photos", type=int, default=0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--placement", action="store_true")
    args = parser.parse_args()

    def found_by(image: Image.Image) -> bool:
        """Whether the invisible mark was read (a false match: nothing marked these); with
        `--placement`, a miss read for the placement mark too (its offsets are scored by the
        service, `tests/test_forensic_placement.py` for unmarked pages)."""
        if decode(image) is not None:
            return True
        if args.placement:
            placement_read.read(image)
        return False
    rng = random.Random(args.seed)
    pages = corpus_pages(args.pages)
    # A worker decodes many images: its first (imports, FFT plans, the allocator's first
    # large blocks) is paid once, here, and not counted; the yardstick then runs as warm.
    found_by(jpeg(pages[0].image, SERVED_QUALITY))
    before = yardstick()
    cpu, wall, found = [], [], 0
    for page in pages:
        served = jpeg(page.image, SERVED_QUALITY)
        for leak in LEAKS:
            image = ATTACKS[leak](served, page.page_height, rng)
            start, start_cpu = time.perf_counter(), time.process_time()
            found += found_by(image)
            cpu.append(time.process_time() - start_cpu)
            wall.append(time.perf_counter() - start)
    after = yardstick()
    unit = (before + after) / 2
    print(f"yardstick: {before:.3f} s before, {after:.3f} s after")
    _report("unmarked served pages", cpu, wall, unit)
    photo_cpu, photo_wall = [], []
    for n in range(args.photos):
        page = pages[n % len(pages)]
        photo, _ = photographed(jpeg(page.image, SERVED_QUALITY), rng)
        start, start_cpu = time.perf_counter(), time.process_time()
        found += found_by(photo)
        photo_cpu.append(time.process_time() - start_cpu)
        photo_wall.append(time.perf_counter() - start)
    if photo_cpu:
        _report("unmarked phone photos", photo_cpu, photo_wall, unit)
    print(f"found (false matches): {found}")


if __name__ == "__main__":
    main()
