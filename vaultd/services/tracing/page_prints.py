"""The pages' prints (docs/leak-tracing.md, "A year of views"): which document page a leak
shows, so that a placement trace scores that page's views of the year, not the account's.

`PagePrints` is a page hook: the first time a process sends a page of a file (by file and
page), a worker of the account makes the page's print from the JPEG sent
(`render.forensic.placement_page`, under the deployment's print key), and it is kept once per
file and page in `page_prints`, with its bands indexed. It runs beside the page, never in its
way: the page has left; the print costs the account's worker one decode of a page it served
(about 30 ms), once per page and process, and only on an idle worker: it waits for one (up to
PATIENCE_SECONDS, PENDING prints at most; past either, the page is printed when next sent), and
a page that comes while it runs waits for it rather than being refused (`RenderPool.submit`'s
`background`). A page whose print is kept is not printed again (one read by `_id`, once per
page and process). Pages served before the prints, and never since, have none: a trace of them
falls back on the account's newest views (`services.tracing.placement`).

`pages_shown` is the trace's lookup: the prints sharing a band with the leak's (an index
range per band), of which those within SAME_PAGE bits are the leak's page, nearest first.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

from render.forensic_wire.page_print import SAME_PAGE, BadPrint, bands, distance, parsed
from render.pool.render_pool import RenderPool
from render.worker.entry_points import page_print
from vaultd.db import Db
from vaultd.services.common.pool_calls import run_task
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.services.pages.page_path import SentPage
from vaultd.timefmt import utcnow

log = logging.getLogger("vaultd.trace")

KEPT_IN_PROCESS = 100_000  # (file, page) pairs a process remembers having printed
MAX_PAGES = 8  # pages a trace scores the views of: the nearest prints
PENDING = 32  # prints waiting for an idle worker, each holding its page's JPEG
PATIENCE_SECONDS = 30.0  # how long one waits
_IDLE_POLL_SECONDS = 0.25
_LOOKED_AT = 2000  # prints sharing a band read at most (unrelated pages share one 1 in 4,000)


def print_id(file_id: str, page: int) -> str:
    return f"{file_id}:{page}"


class PagePrints:
    """The hook that keeps each page's print the first time it is sent."""

    def __init__(self, db: Db, pool: RenderPool, mark: MarkCipher) -> None:
        self.db, self.pool, self.mark = db, pool, mark
        self._printed: OrderedDict[str, None] = OrderedDict()
        self._running: set[asyncio.Task[None]] = set()

    async def page_sent(self, sent: SentPage) -> None:
        opened = sent.page.link
        key = print_id(opened.file["_id"], sent.page.number)
        if not sent.jpeg or key in self._printed or len(self._running) >= PENDING:
            return
        self._printed[key] = None
        while len(self._printed) > KEPT_IN_PROCESS:
            self._printed.popitem(last=False)
        task = asyncio.ensure_future(self._keep(opened.account.id, opened.file["_id"],
                                                sent.page.number, sent.jpeg))
        self._running.add(task)
        task.add_done_callback(self._finished)

    async def flush(self, account_id: str | None = None) -> None:
        """Wait for the prints being made (tests read them; the stop lets them end)."""
        while self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("no page print: %s", type(task.exception()).__name__)

    async def _keep(self, account_id: str, file_id: str, page: int, jpeg: bytes) -> None:
        try:
            await self._print(account_id, file_id, page, jpeg)
        except BaseException:
            self._printed.pop(print_id(file_id, page), None)  # tried again when next sent
            raise

    async def _print(self, account_id: str, file_id: str, page: int, jpeg: bytes) -> None:
        key = print_id(file_id, page)
        if await self.db.page_prints.find_one({"_id": key}, {"_id": 1}) is not None:
            return
        waited = 0.0
        while not self.pool.idle_for_background():  # the viewers' pages come first
            if waited >= PATIENCE_SECONDS:
                self._printed.pop(key, None)  # printed when next sent
                return
            await asyncio.sleep(_IDLE_POLL_SECONDS)
            waited += _IDLE_POLL_SECONDS
        raw = await run_task(self.pool, page_print, jpeg, self.mark.page_print_key,
                             account=account_id, background=True)
        try:
            made = parsed(raw)
        except BadPrint as exc:
            log.warning("page print refused: %s", exc)
            return
        if made is None:  # a blank page: nothing tells it from another
            return
        await self.db.page_prints.update_one({"_id": key}, {"$setOnInsert": {
            "accountId": account_id, "fileId": file_id, "page": page, "bits": made.hex(),
            "bands": bands(made), "at": utcnow()}}, upsert=True)


async def pages_shown(db: Db, account_id: str, leak_print: bytes) -> list[tuple[str, int]]:
    """The account's pages (file id, page) whose prints are within SAME_PAGE bits of the
    leak's, nearest first, MAX_PAGES at most."""
    query: dict[str, Any] = {"accountId": account_id, "bands": {"$in": bands(leak_print)}}
    docs = await db.page_prints.find(query, {"bits": 1, "fileId": 1, "page": 1}).limit(
        _LOOKED_AT).to_list()
    near = sorted((distance(bytes.fromhex(doc["bits"]), leak_print), doc["fileId"], doc["page"])
                  for doc in docs)
    return [(file_id, page) for bits, file_id, page in near if bits <= SAME_PAGE][:MAX_PAGES]
