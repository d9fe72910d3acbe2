"""What the page path calls when a link is opened or a page served: the analytics aggregates,
and the `view.opened` / `view.completed` events they reveal (each exactly once per link)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, OrderedDict
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vaultd.db import Db
from vaultd.services.analytics import analytics
from vaultd.services.links.links import OpenLink
from vaultd.services.notifications import opens
from vaultd.services.webhooks import webhook_events
from vaultd.timefmt import utcnow

if TYPE_CHECKING:  # the page path imports nothing of this module; only the type is needed
    from vaultd.services.pages.page_path import SentPage

log = logging.getLogger("vaultd.analytics")

KNOWN_LINKS = 10_000  # links whose record this process has written (a few hundred kB)


async def link_opened(db: Db, opened: OpenLink, ip: str | None) -> None:
    if await analytics.note_open(db, opened, ip):
        await opens.first_opened(db, opened.link, opened.file, utcnow())
        await webhook_events.view_opened(db, opened.link, opened.file, ip)


async def page_served(db: Db, opened: OpenLink, views: Mapping[int, int], ip: str | None
                      ) -> None:
    """Called once pages are on their way; a failure here must not withhold a page."""
    try:
        note = await analytics.note_pages(db, opened, views, ip)
        if opened.room_id is not None:  # a room's reads announce room.opened instead
            await _owe_nothing(db, opened.link["_id"], note)
            return
        if note.first_open:
            await opens.first_opened(db, opened.link, opened.file, utcnow())
            await webhook_events.view_opened(db, opened.link, opened.file, ip)
        if note.completed:
            await webhook_events.view_completed(db, opened.link, opened.file)
    except Exception:
        log.warning("page analytics not recorded (database unavailable?)")


async def _owe_nothing(db: Db, stats_id: str, note: analytics.PageNote) -> None:
    """A room read's first open or completion is announced by no view.* event: marked so, the
    outbox sweep (`webhook_events.announce_missed`) does not look at it again and again."""
    done = {**({"openAnnounced": True} if note.first_open else {}),
            **({"completeAnnounced": True} if note.completed else {})}
    if done:
        await db.link_stats.update_one({"_id": stats_id}, {"$set": done})


@dataclass
class _Views:
    """Pages of one link served since the last flush."""

    opened: OpenLink
    ip: str | None  # the latest viewer address
    pages: Counter[int] = field(default_factory=Counter)


class EngagementHook:
    """The page path's hook (`PagePath.hooks`): every page sent counts in the link's analytics
    and may fire `view.opened` / `view.completed`.

    The first page this process serves for a link is written at once: the link's record then
    exists (an activity report to any process finds it) and `view.opened` fires without delay.
    Later pages are added up per link and written together every `flush_seconds` (the setting
    `analytics.flush_seconds`; 0 writes every page at once): one update per link a flush instead
    of one per page, which cost about 1.4 ms of server and database CPU, 15 % of a warm page's
    (bench/page-path.md, fifth round). The price: pages served in the last `flush_seconds`
    before a crash are not counted (a clean stop flushes, `flush`), and this process's analytics
    reads flush that account's links first (`PagePath.settle`) while another process's may lag
    by that long.
    """

    def __init__(self, db: Db, flush_seconds: float = 0.25) -> None:
        self.db = db
        self.flush_seconds = flush_seconds
        self._known: OrderedDict[str, None] = OrderedDict()  # links written for, oldest first
        self._pending: dict[str, _Views] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._flushes: set[asyncio.Task[None]] = set()

    async def page_sent(self, sent: SentPage) -> None:
        page = sent.page
        link_id = page.link.link["_id"]
        if link_id not in self._known or not self.flush_seconds:
            self._remember(link_id)
            # Tracked with the timed writes: a flush (and so a clean stop) waits for it too.
            await self._track(page_served(self.db, page.link, {page.number: 1}, page.request.ip))
            return
        views = self._pending.setdefault(link_id, _Views(page.link, page.request.ip))
        views.opened, views.ip = page.link, page.request.ip
        views.pages[page.number] += 1
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.flush_seconds,
                                                                   self._flush_later)

    async def flush(self, account_id: str | None = None) -> None:
        """Write every page counted so far (of `account_id`'s links only, when given: what its
        analytics read needs), and wait for writes already under way."""
        if account_id is None and self._timer is not None:
            self._timer.cancel()
            self._timer = None
        await self._write(self._take(account_id))
        if self._flushes:
            await asyncio.gather(*self._flushes)

    def _flush_later(self) -> None:
        self._timer = None
        self._track(self._write(self._take()))

    def _track(self, write: Coroutine[object, object, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(write)
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)
        return task

    def _take(self, account_id: str | None = None) -> list[_Views]:
        if account_id is None:
            pending, self._pending = self._pending, {}
            return list(pending.values())
        taken = [link for link, views in self._pending.items()
                 if views.opened.account.id == account_id]
        return [self._pending.pop(link) for link in taken]

    async def _write(self, pending: list[_Views]) -> None:
        for views in pending:
            await page_served(self.db, views.opened, views.pages, views.ip)

    def _remember(self, link_id: str) -> None:
        self._known[link_id] = None
        if len(self._known) > KNOWN_LINKS:
            self._known.popitem(last=False)  # forgotten: its next page is written at once
