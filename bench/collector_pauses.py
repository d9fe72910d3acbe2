"""What a full pass of Python's collector costs in vaultd's processes:
`python -m bench.collector_pauses` (about 10 s).

1. vaultd's process: `vaultd.main` imported as `python -m vaultd.main` imports it, then a full
   pass (`gc.collect()`) timed `--passes` times, first as the process was before it settled
   its collector, then after `vaultd.collector.settle` (what `vaultd.main.main` runs before it
   serves).
2. A render worker, forked by the zygote as vaultd's are (`RenderPool`, one worker), after
   `--pages` page renders: its frozen objects, then one full pass run in it, timed as the
   server sees it (the task's round trip), and what that pass made the worker's own
   (`Private_Dirty` and `Pss` of /proc/PID/smaps_rollup, before and after: a pass writes the
   header of every object it walks, so the pages the zygote shares with its workers are copied).

An A/B: run it from a clone of each commit (`PYTHONPATH=<clone>`): the worker's half measures
the commit's own worker.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench.memory import rollup
from render.pool.render_pool import RenderPool
from render.wire.model import PixelBudget
from render.worker.entry_points import render_page
from tests import render_fixtures as fx
from tests.processes import render_workers
from vaultd import collector


def full_pass_ms(passes: int) -> list[float]:
    times = []
    for _ in range(passes):
        started = time.perf_counter()
        gc.collect()
        times.append((time.perf_counter() - started) * 1000)
    return times


def server_process(passes: int) -> None:
    import vaultd.main  # noqa: F401  (the server's imports, as it starts)

    unsettled = full_pass_ms(passes)
    objects = len(gc.get_objects())
    collector.settle()
    settled = full_pass_ms(passes)
    print(f"vaultd's process: a full pass over {objects:,} objects "
          f"p50 {statistics.median(unsettled):.1f} ms (max {max(unsettled):.1f}); settled "
          f"({gc.get_freeze_count():,} frozen): p50 {statistics.median(settled):.2f} ms "
          f"(max {max(settled):.2f})")
    gc.unfreeze()


async def render_worker(pages: int) -> None:
    pool = RenderPool(workers=1, queue_size=2, timeout_seconds=20, memory_limit_bytes=1 << 30)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-collector-") as work:
            source = fx.encrypt_to_local(Path(work), fx.text_pdf(3), fx.PDF)
            document = fx.brokered(source)
            for page in range(pages):
                await pool.run(render_page, source, 1 + page % 3, fx.mark(), PixelBudget(),
                               document=document)
            (worker,) = render_workers(os.getpid())
            frozen = await pool.run(gc.get_freeze_count)
            before = rollup(worker)
            started = time.perf_counter()
            await pool.run(gc.collect)
            took = (time.perf_counter() - started) * 1000
            after = rollup(worker)
    finally:
        await pool.close()
    print(f"a render worker after {pages} pages ({frozen:,} objects frozen): a full pass "
          f"{took:.1f} ms (the task's round trip); its own memory (Private_Dirty) "
          f"{before['Private_Dirty'] / 1024:.1f} -> {after['Private_Dirty'] / 1024:.1f} MiB, "
          f"Pss {before['Pss'] / 1024:.1f} -> {after['Pss'] / 1024:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--pages", type=int, default=30)
    args = parser.parse_args()
    server_process(args.passes)
    asyncio.run(render_worker(args.pages))


if __name__ == "__main__":
    main()
