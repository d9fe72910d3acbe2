"""What a full page of the access log costs, beside the empty vault: `python -m bench.log_pages`.

Two vaultd on the embedded default, each with its own database: the empty vault's account and
the full-page vault's (`bench.scale_shape_seeds`: the busy file's log and the room's, 200
entries a page). Then:

1. the database's CPU for the find that reads a file's page (the 201 entries of one range of
   the file's numbers: a page and the one that tells what follows), `--finds` times on the
   full-page vault's database, from `/proc` for the database's process;
2. `GET /v1/files/:id/access-log` and `GET /v1/rooms/:id/access-log`, asked of the two
   vaults in turn `--samples` times each after two warm-up calls: p50 and p95 of each, and
   the full page's over the empty vault's.

An A/B of a change: run it from a clone of each commit (`PYTHONPATH=<clone>`), in turn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from bench.scale_shape_routes import Session, routes
from bench.scale_shape_seeds import Seeded, seed_base, seed_full_page
from bench.scale_shapes import _database, _percentiles, _seed, _started
from bench.server import cpu_seconds
from tests.vault_process import VaultProcess
from vaultd.embedded_db import ADDRESS_FILE


def database_cpu_per_find(vault: VaultProcess, seeded: Seeded, finds: int) -> tuple[float, float]:
    """(the database's CPU ms, the round trip ms) per find of the busy file's newest 201."""
    pid = int(json.loads((vault.data_dir / "db" / ADDRESS_FILE).read_text())["pid"])

    async def run() -> tuple[float, float]:
        db = _database(vault)
        try:
            log = db.raw("access_log")
            newest = await log.find({"fileId": seeded.busy_file}).sort("fileSeq", -1).limit(
                1).to_list()
            top = newest[0]["fileSeq"]
            query = {"fileId": seeded.busy_file, "fileSeq": {"$gt": top - 201, "$lte": top}}
            for _ in range(10):
                await log.find(query).to_list()
            cpu, started = cpu_seconds(pid), time.perf_counter()
            for _ in range(finds):
                await log.find(query).to_list()
            return ((cpu_seconds(pid) - cpu) / finds * 1000,
                    (time.perf_counter() - started) / finds * 1000)
        finally:
            await db.close()
    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--finds", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-log-pages-") as work:
        _measure(Path(work), args.samples, args.finds)


def _measure(work: Path, samples: int, finds: int) -> None:
    """Both vaults in `work`, stopped at the end (their data removed with it)."""
    empty, full = _started(work, "empty"), _started(work, "full-page")
    try:
        empty_side = Session(empty.port, _seed(empty, seed_base), "")
        full_seeded = _seed(full, seed_full_page)
        full_side = Session(full.port, full_seeded, "")
        cpu, wall = database_cpu_per_find(full, full_seeded, finds)
        print(f"the find of a file's page (201 entries): database CPU {cpu:.2f} ms, "
              f"round trip {wall:.2f} ms ({finds} finds)")
        print("| route | empty p50 / p95 ms | full page p50 / p95 ms | p50 ratio | p95 ratio |")
        print("|---|---|---|---|---|")
        for route in (route for route in routes() if route.path.endswith("/access-log")):
            sides = (empty_side, full_side)
            for side in sides * 2:
                side.ask(route)
            seconds: tuple[list[float], list[float]] = ([], [])
            for sample in range(samples):
                for place in range(2):
                    side = (sample + place) % 2
                    seconds[side].append(sides[side].ask(route).seconds)
            alone, page = (_percentiles(times) for times in seconds)
            print(f"| `{route.name}` | {alone.p50:.2f} / {alone.p95:.2f} | {page.p50:.2f} / "
                  f"{page.p95:.2f} | {page.p50 / alone.p50:.2f}x | {page.p95 / alone.p95:.2f}x |",
                  flush=True)
    finally:
        empty.stop()
        full.stop()


if __name__ == "__main__":
    main()
