"""Leak tracing (docs/leak-tracing.md): which page view does a leaked image come from?

The image is read in a render worker (`render.forensic.trace_task`) by the stages of
`services.tracing.reader` (the invisible mark, then the placement mark), and the render id
they give is reported only if a `page` entry of the searched account carries it. The caller
may also give the trace code read off the page's strip (`traceCode`): the visible evidence.
Each match writes a `trace` entry on the file it found. `account_id=None` searches every
account (vault-admin only).
"""

from __future__ import annotations

from typing import Any, TypedDict

from render.forensic_wire.image_kinds import sniff
from render.forensic_wire.trace_codes import (
    BadTraceCode,
    parse_trace_code,
    render_id_hex,
    trace_code,
)
from vaultd.db import Db
from vaultd.errors import Forbidden, InvalidRequest, UnsupportedMediaType
from vaultd.services.accounts.accounts import Account
from vaultd.services.common import access_log
from vaultd.services.tracing.reader import LeakReader, Reading
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
    # "invisible" (the pixels' chips), "placement" (the pattern's words, when the chips were
    # washed off), "visible" (the typed trace code) or "both" (the pixels and the typed code)
    evidence: str


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


async def trace(db: Db, reader: LeakReader, account: Account, data: bytes,
                content_type: str | None, typed_code: str | None) -> dict[str, Any]:
    """The answer of POST /v1/trace for `account`."""
    check_allowed(account)
    typed = parse_typed_code(typed_code)
    check_content_type(content_type, data)
    reading = await reader.read(data, account.id)
    return await answer(db, reading, typed, account.id)


async def answer(db: Db, reading: Reading | None, typed: int | None,
                 account_id: str | None) -> dict[str, Any]:
    """The trace's answer from what the image gave and the code typed off its strip: the
    views each names (in `account_id`, or anywhere for the operator), with their evidence."""
    decoded = None if reading is None else reading.render_id
    evidence: dict[int, str] = {}
    if reading is not None:
        evidence[reading.render_id] = reading.evidence
    if typed is not None:
        evidence[typed] = "both" if typed == decoded else "visible"
    matches: list[Match] = []
    for render_id, kind in evidence.items():
        matches += await find_matches(db, render_id, account_id, kind)
    return {"found": True, "matches": matches} if matches else {"found": False}
