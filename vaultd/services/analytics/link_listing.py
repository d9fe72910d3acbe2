"""A file's links as its owner sees them (`GET /v1/files/:id/views`): newest first, paged like
the file list, by state; per link its id (never the token), viewer, times, state, policy
(without the passcode), sessions opened, pages viewed and last seen."""

from __future__ import annotations

from typing import Any

from vaultd.db import Db
from vaultd.errors import InvalidRequest
from vaultd.records import FileDoc, LinkDoc
from vaultd.services.accounts import link_generations
from vaultd.services.common.numbered import newest_numbered
from vaultd.services.files.files import get_file
from vaultd.services.gates.policy import policy_json
from vaultd.services.links import link_numbers, link_states
from vaultd.timefmt import iso_utc, utcnow

State = link_states.State
STATES: tuple[State, ...] = ("active", "expired", "revoked")


def parse_state(value: str | None) -> State | None:
    if value is None:
        return None
    for state in STATES:
        if value == state:
            return state
    raise InvalidRequest("state must be one of active, expired, revoked")


def state_of(link: LinkDoc, file: FileDoc) -> State:
    if link["revoked"] is not False or link_generations.killed(link, file):
        return "revoked"
    if link["expiresAt"] <= utcnow() or link.get("exhausted"):
        return "expired"
    return "active"


async def list_file_links(db: Db, account_id: str, file_id: str, page: int, per_page: int,
                          state: State | None) -> dict[str, Any]:
    """Newest first. Without a state, `total` is the file's count of link records and the page
    is read by the links' numbers in their file (`link_numbers`, `services.common.numbered`):
    page 1 costs the same at 10 links as at 10^5, a deep page what precedes it. By state, the
    same by the numbers of the links of that state (`services.links.link_states`)."""
    file = await get_file(db, account_id, file_id)
    if state is None:
        links, total = await _newest(db, file, page, per_page)
    else:
        links, total = await link_states.page_of(db, file, state, page, per_page)
    ids = [link["_id"] for link in links]
    sessions = await _sessions_opened(db, links)
    # A page without links asks for no stats (an `$in` of nothing is a round trip for nothing).
    stats = {doc["_id"]: doc async for doc in db.link_stats.find(
        {"_id": {"$in": ids}}, {"pages": 1, "lastSeenAt": 1})} if ids else {}
    return {"views": [_link_json(link, file, sessions.get(link["_id"], 0),
                                 stats.get(link["_id"])) for link in links], "total": total}


async def _newest(db: Db, file: FileDoc, page: int, per_page: int
                  ) -> tuple[list[LinkDoc], int]:
    total, top, floor = link_numbers.listing_bounds(file)
    wanted = min(page * per_page, total)
    if not wanted:
        return [], total
    docs = await newest_numbered(db.links, {"fileId": file["_id"]}, "seq", count=wanted,
                                 top=top, floor=floor)
    return docs[(page - 1) * per_page:], total


async def _sessions_opened(db: Db, links: list[LinkDoc]) -> dict[str, int]:
    """The count each link keeps on write (`gates.sessions.count_open`). Links made before it
    count their session records still kept: the last 24 hours' (the rest are pruned, TTL)."""
    counted = {link["_id"]: link["sessionsOpened"] for link in links if "sessionsOpened" in link}
    older = [link["_id"] for link in links if "sessionsOpened" not in link]
    if not older:
        return counted
    pipeline: list[dict[str, Any]] = [{"$match": {"linkId": {"$in": older}}},
                                      {"$group": {"_id": "$linkId", "n": {"$sum": 1}}}]
    cursor = await db.raw(db.viewer_sessions.name).aggregate(pipeline)
    return counted | {row["_id"]: int(row["n"]) async for row in cursor}


def _link_json(link: LinkDoc, file: FileDoc, sessions: int, stats: Any) -> dict[str, Any]:
    pages = stats.get("pages", {}) if stats else {}
    body: dict[str, Any] = {
        "id": link["_id"], "viewerEmail": link["viewerEmail"], "viewerName": link["viewerName"],
        "createdAt": iso_utc(link["createdAt"]), "expiresAt": iso_utc(link["expiresAt"]),
        "state": state_of(link, file), "sessionsOpened": sessions,
        "pagesViewed": sum(int(entry.get("views", 0)) for entry in pages.values()),
        "lastSeenAt": iso_utc(stats["lastSeenAt"]) if stats and "lastSeenAt" in stats else None,
    }
    if "policy" in link:
        body["policy"] = policy_json(link["policy"])
    return body
