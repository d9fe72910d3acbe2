"""Viewer sessions: the gates one reader of one link has passed.

A session id is a secret like a view token: 32 random bytes, handed out once, stored only as
its SHA-256, and renewed by every action that succeeds in it (`renew`, `mark_passed`): an id
known before a gate was passed (planted in the reader's browser, say) ends at that moment.
A session belongs to one link (`linkId`: a file link's or a room link's id, both UUIDs drawn
apart, `gated.GatedLink`), ends 24 h after it was opened or with the link, whichever is first,
and is judged with the link on every request: a revoked or expired link ends its sessions at
once, and a session replayed on another link is unknown there."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from pymongo import ReturnDocument

from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.records import LinkDoc, RoomLinkDoc, ViewerSessionDoc
from vaultd.secrets import digest, is_token, new_token
from vaultd.services.common.numbered import newest_numbered
from vaultd.services.gates import session_numbers
from vaultd.services.gates.gated import GatedLink
from vaultd.services.gates.registry import session_gates
from vaultd.services.links import link_states
from vaultd.services.links.links import LINK_NOT_FOUND
from vaultd.timefmt import iso_utc, utcnow

SESSION_LIFETIME = timedelta(hours=24)
SESSION_NOT_FOUND = "viewer session not found or ended: open a new one"


async def count_open(db: Db, link: GatedLink, *, session: bool = False) -> int | None:
    """One more open of a link (a session opened, when `session`): against its `maxOpens`,
    beyond which the link is spent (as if expired), and in its `sessionsOpened`. With
    `session`, the link's `sessionsOpened` after it: the session's number (`sessions_json`),
    returned by the same one command that raises it."""
    tally = {"sessionsOpened": 1} if session else {}
    limit = (link.policy or {}).get("maxOpens")
    records = db.raw(link.records)
    if limit is None:
        return await _opened(db, link) if session else None
    counted = await records.find_one_and_update(
        {"_id": link.id, "opens": {"$lt": limit}}, {"$inc": {"opens": 1, **tally}},
        {"sessionsOpened": 1}, return_document=ReturnDocument.AFTER)
    if counted is None:
        if link.records == db.links.name:  # a file link: listed expired, out of the live counts
            await link_states.spent(db, link.id)
        else:
            await records.update_one({"_id": link.id}, {"$set": {"exhausted": True}})
        raise NotFound(LINK_NOT_FOUND)
    return int(counted["sessionsOpened"]) if session else None


async def _opened(db: Db, link: GatedLink) -> int:
    """The link's `sessionsOpened`, raised by one: the number of the session being opened."""
    raised = await db.raw(link.records).find_one_and_update(
        {"_id": link.id}, {"$inc": {"sessionsOpened": 1}}, {"sessionsOpened": 1},
        return_document=ReturnDocument.AFTER)
    if raised is None:  # deleted since it was read: its sessions would be read by no one
        raise NotFound(LINK_NOT_FOUND)
    return int(raised["sessionsOpened"])


async def open_session(db: Db, link: GatedLink, ip: str | None
                       ) -> tuple[str, ViewerSessionDoc]:
    """A new session of `link`: (its id, shown once; its record). Counted against the link's
    maxOpens only when it has no gate to pass (it is then admitted at once); otherwise when
    its last gate is passed (`mark_passed`), so opening a link spends nothing."""
    gated = bool(session_gates(link.policy or {}))
    number = await _opened(db, link) if gated else await count_open(db, link, session=True)
    assert number is not None  # counted as a session
    now = utcnow()
    session_id = new_token()
    doc: ViewerSessionDoc = {
        "_id": str(uuid.uuid4()), "hash": digest(session_id), "linkId": link.id,
        "accountId": link.account_id, "createdAt": now,
        "expiresAt": min(now + SESSION_LIFETIME, link.expires_at), "passed": {},
        "seq": number,
    }
    if ip:
        doc["ip"] = ip
    if gated:
        doc["countsWhenAdmitted"] = True
    await db.viewer_sessions.insert_one(doc)
    return session_id, doc


async def find_session(db: Db, session_id: str | None) -> ViewerSessionDoc | None:
    """The session of this id, whatever its link or state (`session_of` judges it)."""
    if session_id is None or not is_token(session_id):
        return None
    return await db.viewer_sessions.find_one({"hash": digest(session_id)})


def is_current(session: ViewerSessionDoc | None, link_id: str) -> bool:
    """A session of this link (by its id: one link's session is unknown on any other) that has
    not ended."""
    return (session is not None and session["linkId"] == link_id
            and session["expiresAt"] > utcnow())


async def session_of(db: Db, session_id: str | None, link: GatedLink) -> ViewerSessionDoc:
    session = await find_session(db, session_id)
    if session is None or not is_current(session, link.id):
        raise NotFound(SESSION_NOT_FOUND)
    assert session is not None
    return session


async def mark_passed(db: Db, link: GatedLink, session: ViewerSessionDoc, gate: str,
                      extra: dict[str, Any] | None = None) -> str:
    """`gate` passed in `session`, under a new session id (returned; the old one ends in the
    same update). The last gate passed is the link's open: counted against its maxOpens first,
    and a spent link passes nothing (NotFound, as an expired one)."""
    now = utcnow()
    last = not [left for left in pending(session_gates(link.policy or {}), session)
                if left != gate]
    if last and session.get("countsWhenAdmitted"):
        await count_open(db, link)
    session_id = new_token()
    renewed = await db.viewer_sessions.update_one(
        {"_id": session["_id"], "hash": session["hash"]},
        {"$set": {f"passed.{gate}": now, "hash": digest(session_id), **(extra or {})}})
    if not renewed.modified_count:  # renewed meanwhile by another action: this id has ended
        raise NotFound(SESSION_NOT_FOUND)
    session["passed"][gate] = now
    session["hash"] = digest(session_id)
    return session_id


async def renew(db: Db, session: ViewerSessionDoc) -> str:
    """A new id for `session` after an action that passed no gate; the old id ends at once."""
    session_id = new_token()
    renewed = await db.viewer_sessions.update_one(
        {"_id": session["_id"], "hash": session["hash"]}, {"$set": {"hash": digest(session_id)}})
    if not renewed.modified_count:
        raise NotFound(SESSION_NOT_FOUND)
    session["hash"] = digest(session_id)
    return session_id


def pending(gates: list[str], session: ViewerSessionDoc | None) -> list[str]:
    passed = session["passed"] if session else {}
    return [gate for gate in gates if gate not in passed]


async def sessions_json(db: Db, link: LinkDoc | RoomLinkDoc,
                        limit: int = 50) -> list[dict[str, Any]]:
    """A link's latest sessions as its owner sees them (those not yet pruned: a session's
    record goes when it ends), never the session id. Read newest first by ranges of their
    numbers (`seq`, from the link's `sessionsOpened` down, `common.numbered`), so the read is
    bounded by `limit`, not by the link's sessions nor by how they arrived. `link` is the
    record as read for this request: sessions opened since are not shown."""
    top, floor = session_numbers.bounds(link)
    latest = await newest_numbered(db.viewer_sessions, {"linkId": link["_id"]}, "seq",
                                   count=limit, top=top, floor=floor)
    return [{"createdAt": iso_utc(doc["createdAt"]), "expiresAt": iso_utc(doc["expiresAt"]),
             "ip": doc.get("ip"),
             "passed": {gate: iso_utc(at) for gate, at in doc["passed"].items()}}
            for doc in latest]
