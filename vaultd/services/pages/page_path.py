"""The page path: one watermarked page of a link, in named stages.

    resolve    the link, file and account from records kept in the last second (no I/O), if any
    authorise  the caller's credentials, all of them before anything is started for the page:
               on the API route the key first (a bad key is 401 whatever else is wrong), then
               the link live; on the hosted viewer the token alone. A link kept from the last
               second is confirmed with the key in one round trip; otherwise the key and the
               link (with its file and account) are read concurrently, and the key judged first.
               The viewer session, when the request names one, is read alongside; then the
               link's gates (`services.gates.check`) are judged from the link record and it:
               a link without a policy costs nothing more. `admit` is this judgement for the
               requests about a link's pages that are not pages (activity reports, status
               polls), so a forwarded gated link learns and adds nothing without the gates
    render     the page, in the render pool, watermarked for this viewer and this moment
    log        the `page` entry, written while the page renders
    confirm    the render's result; the link read again if the render took long, so a revoke or
               delete during a slow or queued render still stops the page
    send       the caller's writer gets the JPEG; then the hooks are told

A refused request starts no render and writes nothing; an entry written for a page that is then
not sent is withdrawn. One `PagePath` is built by the composition root (`vaultd.main`) and held
by the app context; both page routes (`web.views`, `web.viewer`) call `serve`.

Room links (`services.rooms`) are a resolver variant: a request naming a `file_id` is resolved
and authorised by `PagePath.rooms` (`rooms.reads.RoomPages`), which also confirms it after the
render; every other stage is the same, so room pages get the same watermark, marks and log.

Extending it: a new stage is a method called from `serve` in its place; something that must
happen for every page sent (analytics, webhooks) is a `PageHook` added to `hooks`. What a stage
produces for later ones (a render id, say) belongs on `Page`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from pymongo.errors import DuplicateKeyError

from render.forensic_wire.trace_codes import new_render_id, render_id_hex
from render.pool.render_pool import RenderPool
from render.wire.model import PixelBudget, WatermarkSpec
from render.worker.entry_points import render_page
from vaultd.broker import brokered
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.numbers import is_decimal
from vaultd.records import ViewerSessionDoc
from vaultd.services.accounts import api_keys
from vaultd.services.accounts.accounts import Account
from vaultd.services.common import access_log
from vaultd.services.common.pool_calls import Departure, start_task
from vaultd.services.files import renditions
from vaultd.services.files.blobs import BlobStore
from vaultd.services.gates import registry, sessions
from vaultd.services.gates.check import Gates
from vaultd.services.links.link_records import LinkRecords
from vaultd.services.links.links import LINK_NOT_FOUND, OpenLink, still_open
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.timefmt import PARIS, paris_display, utcnow

log = logging.getLogger("vaultd.pages")

# A page is sent if its link was found live at most this long ago; a render that took longer
# (queued behind others, a heavy page) reads the link again first. A revoke therefore stops
# every page requested after it, and any page still rendering this long after it.
LINK_FRESH_SECONDS = 0.25
RENDER_ID_DRAWS = 3


@dataclass(frozen=True)
class PageRequest:
    """One page asked for, as the route received it."""

    token: str
    page: str  # as in the URL: parsed once the caller is authorised
    ip: str | None  # the viewer's address, for the watermark and the log
    api_key: str | None = None  # the caller's key on the API route; None on the hosted viewer
    departure: Departure | None = None  # told when the client has gone: a queued render drops
    session: str | None = None  # the viewer session's id (header or cookie), for gated links
    file_id: str | None = None  # a room link's page: the room's document asked for


@dataclass(frozen=True)
class Page:
    """A page being served: what the stages after `authorise` work from."""

    request: PageRequest
    link: OpenLink
    number: int
    render_id: int  # this page view's forensic id (docs/leak-tracing.md), in mark and log
    verified: bool = False  # the reader proved the viewer's email in this session


@dataclass(frozen=True)
class SentPage:
    """A page that left: what hooks are told."""

    page: Page
    log_entry_id: str
    size: int  # bytes of JPEG sent
    jpeg: bytes = b""  # what was sent (the tracing's page prints are made from it)


class RoomResolver(Protocol):
    async def open(self, request: PageRequest) -> OpenLink:
        """The document of a room link's page, readable now; Unauthorized or NotFound."""

    async def still_open(self, opened: OpenLink, fresh_for: float = 0.0) -> bool:
        """Whether it is still readable (read again unless checked within `fresh_for`)."""


class PageHook(Protocol):
    async def page_sent(self, sent: SentPage) -> None:
        """Called after a page was sent; an error is logged and does not reach the viewer."""

    async def flush(self, account_id: str | None = None) -> None:
        """Finish what `page_sent` deferred (before a read of its results, and at shutdown):
        for one account's pages, or everyone's."""


def parse_page_number(raw: str, page_count: int) -> int:
    if not is_decimal(raw) or len(raw) > 9 or not 1 <= int(raw) <= page_count:
        raise NotFound("page not found")
    return int(raw)


VERIFIED_MARK = " (verified)"


def watermark_for(
    opened: OpenLink, ip: str | None, render_id: int | None = None,
    mark_value: int | None = None, verified: bool = False, zone: ZoneInfo = PARIS,
    mark_layout: bytes | None = None, placement_seed: bytes | None = None,
) -> WatermarkSpec:
    email = opened.link["viewerEmail"]
    return WatermarkSpec(
        viewer_name=opened.link["viewerName"],
        viewer_email=email + VERIFIED_MARK if verified else email,
        ip=ip,
        brand=opened.account.brand,
        displayed_at=paris_display(utcnow(), zone),
        render_id=render_id,
        mark_value=mark_value,
        mark_layout=mark_layout,
        placement_seed=placement_seed,
    )


JPEG_QUALITY = 80


def budget_for(settings: Settings) -> PixelBudget:
    return PixelBudget(long_side=settings.render_long_side, max_pixels=settings.render_max_pixels)


@dataclass
class PagePath:
    db: Db
    store: BlobStore
    pool: RenderPool
    settings: Settings
    mark: MarkCipher  # seals each page's render id for its pixels (services.pages.mark_key)
    rooms: RoomResolver  # room links' pages (`rooms.reads.RoomPages`, from the composition root)
    records: LinkRecords = field(default_factory=LinkRecords)
    hooks: list[PageHook] = field(default_factory=list)
    gates: Gates = field(default_factory=Gates)

    async def serve(self, request: PageRequest, send: Callable[[bytes], None]) -> None:
        """Serve one page to `send`, or raise the domain error that refuses it."""
        if request.file_id is not None:
            opened, session = await self.authorise_room(request)
        else:
            opened, session = await self.authorise(request, self.resolve(request.token))
        number = parse_page_number(request.page, opened.file["pageCount"])
        verified = registry.marks_verified(session)
        page, render, entry_id = await self.start(
            Page(request, opened, number, new_render_id(), verified))
        try:
            jpeg = await self.confirm(page, render)
        except BaseException:
            await self._withdraw(entry_id)
            raise
        send(jpeg)
        await self._tell_hooks(SentPage(page, entry_id, len(jpeg), jpeg))

    async def open_link(self, token: str, owner: Account | None = None) -> OpenLink:
        """A live link with its file and account (`LinkRecords.open`), kept for its pages."""
        return await self.records.open(self.db, token, owner)

    def resolve(self, token: str) -> OpenLink | None:
        return self.records.kept(token)

    async def authorise(self, request: PageRequest, kept: OpenLink | None
                        ) -> tuple[OpenLink, ViewerSessionDoc | None]:
        """The link found live now for a caller entitled to it, and the viewer session named;
        Unauthorized, NotFound, or Forbidden naming the gates still pending."""
        if request.session is None:  # no session named: the link's reads alone, as before
            opened, session = await self._live_link(request, kept), None
        else:
            opened, session = await asyncio.gather(
                self._live_link(request, kept), sessions.find_session(self.db, request.session))
        self._admit(opened, request.ip, session)
        return opened, session

    async def authorise_room(self, request: PageRequest
                             ) -> tuple[OpenLink, ViewerSessionDoc | None]:
        """As `authorise`, for a room link's document (`rooms`): the room link's gates, judged
        against a session of the room link."""
        if request.session is None:
            opened, session = await self.rooms.open(request), None
        else:
            opened, session = await asyncio.gather(
                self.rooms.open(request), sessions.find_session(self.db, request.session))
        self._admit(opened, request.ip, session)
        return opened, session

    async def admit(self, opened: OpenLink, session_id: str | None, ip: str | None) -> None:
        """The authorise stage's gates for a request about a link's pages that is not one (an
        activity report, a status poll): refused exactly as a page of `opened` would be (403
        naming what is pending) unless the session named (cookie or `x-viewer-session`, as for
        pages) passed every gate. A link without a policy costs nothing more."""
        if opened.link.get("policy") is None:
            return
        self._admit(opened, ip, await sessions.find_session(self.db, session_id))

    def _admit(self, opened: OpenLink, ip: str | None, session: ViewerSessionDoc | None) -> None:
        # A room's document is judged against the room link's gates and sessions (`gate_id`).
        self.gates.admit_page(opened.link.get("policy"), opened.gate_id, ip, session)

    async def _live_link(self, request: PageRequest, kept: OpenLink | None) -> OpenLink:
        if request.api_key is None:
            if kept is not None:
                return await self.records.confirm(self.db, kept)
            return await self.open_link(request.token)
        if kept is not None:
            check = await api_keys.check_key(self.db, request.api_key, with_link=kept.link["_id"])
            _require_owner(check.owner, kept)
            return self.records.confirmed(kept, check.link, check.read_at)
        key, opened = await asyncio.gather(
            api_keys.check_key(self.db, request.api_key), self.open_link(request.token),
            return_exceptions=True)
        if isinstance(key, BaseException):
            raise key  # the key's verdict comes first, whatever the link's
        if isinstance(opened, BaseException):
            raise opened
        _require_owner(key.owner, opened)
        return opened

    async def start(self, page: Page) -> tuple[Page, asyncio.Future[bytes], str]:
        """Render and log at once. A render id is unique within its account (the log's index,
        `db.RENDER_ID_INDEX`): when the log refuses one already drawn (about once in 2^46 / n
        pages for an account with n page views), that render is dropped and the page started
        again under a new id, so a trace always names one view."""
        for draw in range(1, RENDER_ID_DRAWS + 1):
            render = self.render(page)
            try:
                return page, render, await self.log(page)
            except DuplicateKeyError:
                render.add_done_callback(_drop_result)
                if draw == RENDER_ID_DRAWS:
                    raise  # three collisions in a row: the id source is broken, not unlucky
                log.warning("render id drawn twice in one account: drawing again")
                page = replace(page, render_id=new_render_id())
            except BaseException:
                # It renders to the end (stopping a worker mid-task costs a respawn); dropped.
                render.add_done_callback(_drop_result)
                raise
        raise AssertionError("unreachable")

    def render(self, page: Page) -> asyncio.Future[bytes]:
        """Start the render; a full queue (503) or a link or client IP over its cap (429) is
        refused now, before anything is written. Queued fairly: under the link's account, with
        its link and the viewer's IP; dropped if the client leaves before it runs. An image with
        a stored rendition at this size renders from it."""
        budget = budget_for(self.settings)
        document = brokered(self.store, renditions.for_pages(page.link.file, budget))
        return asyncio.ensure_future(start_task(
            self.pool, render_page, document.source, page.number,
            watermark_for(page.link, page.request.ip, page.render_id,
                          self.mark.seal(page.render_id), page.verified,
                          ZoneInfo(self.settings.watermark_timezone), self.mark.layout_key,
                          self.mark.placement_seed(page.render_id)
                          if self.settings.trace_placement_mark else None),
            budget, JPEG_QUALITY,
            self.settings.render_page_cache_mb << 20, document=document,
            link=str(page.link.link["_id"]), ip=page.request.ip,
            departure=page.request.departure,
            affinity=(document.source.cache_key, document.source.version, page.number)))

    async def log(self, page: Page) -> str:
        opened = page.link
        return await access_log.record(
            self.db, opened.account.id, opened.file["_id"], "page",
            viewer_email=opened.link["viewerEmail"], ip=page.request.ip, page=page.number,
            render_id=render_id_hex(page.render_id), viewer_name=opened.link.get("viewerName"),
            room_id=opened.room_id)

    async def confirm(self, page: Page, render: asyncio.Future[bytes]) -> bytes:
        jpeg = await render
        if page.link.room_id is not None:
            live = await self.rooms.still_open(page.link, fresh_for=LINK_FRESH_SECONDS)
        else:
            live = await still_open(self.db, page.link, fresh_for=LINK_FRESH_SECONDS)
        if not live:
            raise NotFound(LINK_NOT_FOUND)
        return jpeg

    async def _withdraw(self, entry_id: str) -> None:
        try:
            await access_log.withdraw(self.db, entry_id)
        except Exception:  # the request's own error is the one to answer with
            log.warning("could not withdraw the log entry of a page that was not served")

    async def settle(self, account_id: str | None = None) -> None:
        """Every hook's deferred work done: this process's pages (of `account_id`, when given)
        all count in what is read next."""
        for hook in self.hooks:
            await hook.flush(account_id)

    async def _tell_hooks(self, sent: SentPage) -> None:
        for hook in self.hooks:
            try:
                await hook.page_sent(sent)
            except Exception:  # the page has left: a hook's failure is logged, not answered
                log.exception("page hook %s failed", type(hook).__name__)


def _require_owner(owner: str, opened: OpenLink) -> None:
    # Another account's link is indistinguishable from a missing one.
    if owner != opened.account.id:
        raise NotFound(LINK_NOT_FOUND)


def _drop_result(render: asyncio.Future[Any]) -> None:
    if not render.cancelled():
        render.exception()  # retrieved, so asyncio does not report it as lost
