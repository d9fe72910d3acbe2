"""Leak tracing (docs/leak-tracing.md): which page view does a leaked image come from?

The image is decoded in a render worker (`render.forensic.trace_task`); the value the mark
carries is opened with the deployment's key (`services.pages.mark_key`), and the render id it gives
is reported only if a `page` entry of the searched account carries it. The caller may also give the
trace code read off the page's strip (`traceCode`): the visible evidence. Each match writes a
`trace` entry on the file it found. `account_id=None` searches every account (vault-admin only).
"""

from __future__ import annotations

from typing import Any, TypedDict

from render.forensic.codes import BadTraceCode, parse_trace_code, render_id_hex, trace_code
from render.forensic.trace_task import sniff, trace_image
from render.pool import RenderPool
from vaultd.db import Db
from vaultd.errors import Forbidden, InvalidRequest, UnsupportedMediaType
from vaultd.services.accounts.accounts import Account
from vaultd.services.common import access_log
from vaultd.services.common.pool_calls import run_task
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.timefmt import iso_utc

MAX_TRACE_BYTES = 25 * 1024 * 1024
TRACE_PLANS = frozenset({"pro", "business"})
CONTENT_TYPES = ("image/jpeg", "image/png")


class Match(TypedDict):
    renderId: str
    traceCode: str
    fileId: str
    fileName: str | None  # None once the file is deleted (its log stays)
    page: int | None
    viewerEmail: str | None
    viewerName: str | None
    ip: str | None
    at: str
    evidence: str  # "invisible" (the pixels), "visible" (the typed trace code) or "both"


def check_allowed(account: Account) -> None:
    if account.plan.id not in TRACE_PLANS:
        raise Forbidden(
            f"leak tracing needs the Pro or Business plan (account is on {account.plan.name})")


def check_content_type(header: str | None, data: bytes) -> None:
    declared = (header or "").split(";")[0].strip().lower()
    if declared not in CONTENT_TYPES:
        raise UnsupportedMediaType("send the leaked image as image/jpeg or image/png")
    if sniff(data) != declared:
        raise UnsupportedMediaType(f"the body is not a {declared} image")


async def decode_in_worker(pool: RenderPool, data: bytes, account_id: str,
                           mark: MarkCipher, long_side: int) -> int | None:
    """The sealed value the image's mark carries, read in the deployment's layout (then in the
    published one, for a deployment that served pages before the keyed layout), its pages
    served `long_side` px long (`render.long_side`). The image may hold the account's pages:
    it goes to a worker of that account only."""
    for layout_key in mark.trace_layouts:
        sealed = await run_task(pool, trace_image, data, layout_key, long_side,
                                account=account_id)
        if sealed is not None:
            return sealed
    return None


def parse_typed_code(text: str | None) -> int | None:
    if text is None or not text.strip():
        return None
    try:
        return parse_trace_code(text)
    except BadTraceCode as exc:
        raise InvalidRequest(f"traceCode: {exc}") from None


async def find_matches(db: Db, render_id: int, account_id: str | None,
                       evidence: str = "invisible") -> list[Match]:
    """The page views with this render id (in `account_id`, or anywhere), oldest first; a
    `trace` entry is written on each one's file."""
    query: dict[str, Any] = {"renderId": render_id_hex(render_id), "action": "page"}
    if account_id is not None:
        query["accountId"] = account_id
    matches: list[Match] = []
    async for entry in db.access_log.find(query).sort("at", 1):
        file = await db.files.find_one({"_id": entry["fileId"]})
        stored = file is not None and file.get("state") == "stored"
        matches.append(Match(
            renderId=entry["renderId"], traceCode=trace_code(render_id), fileId=entry["fileId"],
            fileName=file["name"] if stored and file is not None else None,
            page=entry.get("page"), viewerEmail=entry.get("viewerEmail"),
            viewerName=entry.get("viewerName"), ip=entry.get("ip"), at=iso_utc(entry["at"]),
            evidence=evidence))
        await access_log.record(db, entry["accountId"], entry["fileId"], "trace",
                                render_id=entry["renderId"])
    return matches


async def trace(db: Db, pool: RenderPool, mark: MarkCipher, account: Account, data: bytes,
                content_type: str | None, typed_code: str | None, long_side: int,
                ) -> dict[str, Any]:
    """The answer of POST /v1/trace for `account` (`long_side`: `render.long_side`)."""
    check_allowed(account)
    typed = parse_typed_code(typed_code)
    check_content_type(content_type, data)
    sealed = await decode_in_worker(pool, data, account.id, mark, long_side)
    decoded = None if sealed is None else mark.open(sealed)  # the pixels carry it sealed
    evidence: dict[int, str] = {}
    if decoded is not None:
        evidence[decoded] = "invisible"
    if typed is not None:
        evidence[typed] = "both" if typed == decoded else "visible"
    matches: list[Match] = []
    for render_id, kind in evidence.items():
        matches += await find_matches(db, render_id, account.id, kind)
    return {"found": True, "matches": matches} if matches else {"found": False}
