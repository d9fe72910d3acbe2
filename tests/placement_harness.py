"""Fixtures for tests of a placement trace through the services (`vaultd.services.tracing`): a
database server for the module, a `Db` on it with vaultd's indexes per test, and a pool of one
real worker. A module takes them by name: `server, db, pool = (placement_harness.server, ...)`.
With them, what those tests trace: a washed leak of the text cover (`washed_leak`) and a page's
year of views to find its view among (`seed_year_of_views`)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from bench.leakmark_attacks import SERVED_QUALITY, jpeg, marked
from bench.leakmark_wash import WASHES
from render.forensic.layout import keyed
from render.forensic.placement_page import page_print
from render.forensic_wire.page_print import bands
from render.pool.render_pool import RenderPool
from tests.embedded_database import running_database, vault_db
from tests.forensic_pages import text_cover
from vaultd import embedded_db
from vaultd.db import Db
from vaultd.services.pages.mark_key import MarkCipher


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded_db.EmbeddedServer]:
    with running_database(Path(tmp_path_factory.mktemp("placement")) / "db") as running:
        yield running


@pytest.fixture
async def db(server: embedded_db.EmbeddedServer) -> AsyncIterator[Db]:
    async with vault_db(server) as database:
        yield database


@pytest.fixture
async def pool() -> AsyncIterator[RenderPool]:
    single = RenderPool(workers=1, queue_size=4, timeout_seconds=120,
                        memory_limit_bytes=2 << 30)
    yield single
    await single.close()


def washed_leak(page: Image.Image, byte: int, mark: MarkCipher, leaked: int) -> Image.Image:
    """`page` as the view `leaked` was served (its invisible mark written with `byte`), then
    washed of that mark without the key: what a placement trace is left to read."""
    served = jpeg(marked(page, byte, mark.layout_key, mark.placement_seed(leaked)),
                  SERVED_QUALITY)
    return WASHES["observed chips, no key"](served, page.page_height, keyed(None))


@dataclass(frozen=True)
class YearOfViews:
    """A page's views over a year, for `seed_year_of_views`: the view `leaked` made
    `leaked_days_ago`, `newer` views of the page since (within `newer_within_days`), and as
    many views of another page of the account within `other_within_days`, their render ids
    drawn from `seed`. Its records are named after `name`: the page's file `<name>-file`, the
    other `<name>-other`, the views `<name>-<n>`."""

    name: str
    account: str
    leaked: int
    leaked_days_ago: float
    newer: int
    newer_within_days: float
    other_within_days: float
    seed: int

    @property
    def print_id(self) -> str:
        return f"{self.name}-file:1"


async def seed_year_of_views(db: Db, mark: MarkCipher, year: YearOfViews,
                             now: datetime) -> None:
    """The page's print (of another view of the text cover) and `year`'s views, once per
    database: a later call finds the print and adds nothing."""
    if await db.page_prints.find_one({"_id": year.print_id}) is not None:
        return
    made = page_print(jpeg(marked(text_cover(), 1, mark.layout_key, b"another view 000"),
                           SERVED_QUALITY), mark.page_print_key)
    assert made is not None
    rng = random.Random(year.seed)
    await db.page_prints.insert_one({"_id": year.print_id, "accountId": year.account,
                                     "fileId": f"{year.name}-file", "page": 1,
                                     "bits": made.hex(), "bands": bands(made), "at": now})

    def view(number: int, page: str, render_id: int, days_ago: float) -> dict[str, Any]:
        return {"_id": f"{year.name}-{number}", "accountId": year.account,
                "fileId": f"{year.name}-{page}", "action": "page", "page": 1,
                "at": now - timedelta(days=days_ago), "renderId": f"{render_id:012x}",
                "viewerEmail": "v@example.com"}

    def drawn() -> int:  # a render id no view of the test names
        return rng.getrandbits(44) + (1 << 44)

    views = [view(0, "file", year.leaked, year.leaked_days_ago)]
    views += [view(n, "file", drawn(), rng.uniform(0, year.newer_within_days))
              for n in range(1, year.newer + 1)]
    views += [view(year.newer + n, "other", drawn(), rng.uniform(0, year.other_within_days))
              for n in range(1, year.newer + 1)]
    await db.raw("access_log").insert_many(views)
