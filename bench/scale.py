"""How every route's latency grows with one account's data: `python -m bench.scale`.

For each size N (default 0, 10^4, 10^5; 10^6 is `--sizes 0 10000 100000 1000000`), a fresh
vaultd on the embedded default gets one big account with N access-log entries on its busiest
file, N/10 files and N/10 links (half expired), beside 10 small accounts (`tests.scale_seed`:
the records the services write, in bulk, the log numbered as vaultd's rounds number its own:
`tests.seeded_log`), then a real PDF and a link for the page route. Each
route is timed over HTTP, `--samples` times after two warm-up calls; the table (p50 / p95 in
ms per size) is printed as Markdown for docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.server import Client
from tests import documents
from tests.scale_seed import Seeded, seed_account
from tests.vault_process import VaultProcess

SMALL_ACCOUNTS = 10


def _routes(seeded: Seeded, page_token: str) -> dict[str, str]:
    busy, token = seeded.busy_file, seeded.live_token
    return {
        "GET /files (page 1, 25)": "/files?page=1&perPage=25",
        "GET /files (page 40, 25)": "/files?page=40&perPage=25",
        "GET /files/:id/access-log": f"/files/{busy}/access-log",
        "GET /files/:id/access-log?before": f"/files/{busy}/access-log?before="
                                            "2026-06-01T00:00:00Z",
        "GET /files/:id/access-log?action": f"/files/{busy}/access-log?action=download",
        "GET /account": "/account",
        "GET /files/:id/analytics": f"/files/{busy}/analytics",
        "GET /views/:token": f"/views/{token}",
        "GET /views/:token/pages/1": f"/views/{page_token}/pages/1",
    }


def _seed(vault: VaultProcess, size: int) -> Seeded:
    async def seed(db: Any) -> Seeded:
        for number in range(SMALL_ACCOUNTS):
            await seed_account(db, f"Small {number}", files=10, entries=100, links=10,
                               numbered=True)
        return await seed_account(db, "Big Co", files=size // 10, entries=size,
                                  links=size // 10, numbered=True)

    seeded: Seeded = vault.run_service(seed)
    return seeded


def _page_link(vault: VaultProcess, key: str) -> str:
    client = Client(vault.port, key)
    try:
        reply = client.upload(documents.pdf(pages=2), "bench.pdf", "source")
        assert reply.status == 201, reply.body[:200]
        file_id = json.loads(reply.body)["id"]
        body = {"fileId": file_id, "viewerEmail": "ann@client.example", "ttlSeconds": 86400}
        return str(client.json("POST", "/views", body)["token"])
    finally:
        client.close()


def _time(call: Callable[[], int], samples: int) -> tuple[float, float]:
    for _ in range(2):
        call()
    seconds = []
    for _ in range(samples):
        started = time.perf_counter()
        status = call()
        seconds.append(time.perf_counter() - started)
        if status != 200:
            raise RuntimeError(f"answered {status}")
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(seconds) * 1000, p95 * 1000


def measure(size: int, samples: int, work: Path) -> tuple[dict[str, tuple[float, float]], float]:
    """p50/p95 (ms) of each route at `size`, and the seconds the seeding took."""
    vault = VaultProcess(work / f"data-{size}")
    vault.start(timeout=120)
    try:
        started = time.perf_counter()
        seeded = _seed(vault, size)
        seeding = time.perf_counter() - started
        routes = _routes(seeded, _page_link(vault, seeded.key))
        client = Client(vault.port, seeded.key)
        try:
            return {name: _time(lambda p=path: client.request("GET", p).status, samples)
                    for name, path in routes.items()}, seeding
        finally:
            client.close()
    finally:
        vault.stop()


def table(sizes: list[int], results: dict[int, dict[str, tuple[float, float]]]) -> str:
    head = "| route | " + " | ".join(f"{size:,}: p50 / p95 ms" for size in sizes) + " |"
    rule = "|---|" + "---|" * len(sizes)
    rows = [f"| `{route}` | " + " | ".join(
        f"{results[size][route][0]:.1f} / {results[size][route][1]:.1f}" for size in sizes) + " |"
        for route in results[sizes[0]]]
    return "\n".join([head, rule, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 10_000, 100_000])
    parser.add_argument("--samples", type=int, default=40)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as work:
        for size in args.sizes:
            results[size], seeding = measure(size, args.samples, Path(work))
            print(f"size {size:,}: seeded in {seeding:.0f} s", flush=True)
    print(table(args.sizes, results))


if __name__ == "__main__":
    main()
