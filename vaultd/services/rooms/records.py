"""Rooms themselves: account-scoped like files, limited by plan (`Plan.maxRooms`)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from pymongo import ReturnDocument
from pymongo.errors import ConnectionFailure, ExecutionTimeout, WTimeoutError

from vaultd.db import Db
from vaultd.db_deadline import UnsentWrite
from vaultd.errors import InvalidRequest, NotFound, PlanLimitReached
from vaultd.records import RoomDoc
from vaultd.services.accounts.accounts import Account, get_account
from vaultd.services.files.files import is_uuid
from vaultd.services.members.callers import require_caller
from vaultd.services.members.roles import Permission
from vaultd.services.rooms import room_counts, room_numbers
from vaultd.timefmt import iso_utc, utcnow

ROOM_NOT_FOUND = "room not found"
MAX_NAME = 200


def parse_name(value: Any, field: str = "name") -> str:
    """1 to MAX_NAME characters with one that is not whitespace (the OpenAPI schema's rule),
    shown trimmed, inner whitespace collapsed, an unprintable character as U+FFFD."""
    if not isinstance(value, str):
        raise InvalidRequest(f"{field} is required and must be a string")
    if len(value) > MAX_NAME:
        raise InvalidRequest(f"{field} must be at most {MAX_NAME} characters")
    name = " ".join(value.split())
    if not name:
        raise InvalidRequest(f"{field} must not be empty")
    return "".join(ch if ch.isprintable() else "\ufffd" for ch in name)


def room_json(doc: RoomDoc, item_count: int) -> dict[str, Any]:
    return {"id": doc["_id"], "name": doc["name"], "createdAt": iso_utc(doc["createdAt"]),
            "itemCount": item_count}


async def item_count(db: Db, room: RoomDoc) -> int:
    """The room's items: its maintained count, or (a room from before the count, read once
    until its next item) its items counted."""
    if "itemCount" in room:
        return room["itemCount"]
    return await db.room_items.count_documents({"roomId": room["_id"]})


async def create_room(db: Db, account: Account, name: str) -> RoomDoc:
    """A new room, its place under the plan's cap taken first (`take_room_slot`)."""
    require_caller(Permission.CHANGE_CONTENT)
    number = await take_room_slot(db, account)
    doc: RoomDoc = {"_id": str(uuid.uuid4()), "accountId": account.id, "name": name,
                    "createdAt": utcnow(), "itemCount": 0, "seq": number}
    try:
        await db.rooms.insert_one(doc)
    except BaseException as error:
        if not _may_have_been_made(error):
            await _give_back_slot(db, account.id)
        raise
    return doc


def _may_have_been_made(error: BaseException) -> bool:
    """Whether an insert that raised `error` may be made all the same: it timed out or lost its
    connection after it was sent (the answer is `504`, "read it back"), or its request was
    cancelled while it was in flight. Its place then stays taken: given back, a room made after
    all would be missing from `roomCount`, the listing's total (and the plan's cap would let
    one room too many in); kept for an insert that was not made, the total is one too high
    until a listing that reaches the last room counts what it found (`room_numbers`)."""
    if isinstance(error, UnsentWrite):
        return False
    return isinstance(error, (ConnectionFailure, ExecutionTimeout, WTimeoutError,
                              asyncio.CancelledError))


async def take_room_slot(db: Db, account: Account) -> int:
    """One more room on the account's `roomCount`, atomically under the plan's cap: two
    concurrent creates at the cap cannot both pass (a count then an insert could). The count
    is kept on every plan, so a plan change finds it right (`db_indexes.count_rooms_once`).
    The same write gives the room its number in the account (`room_numbers`), returned."""
    plan = account.plan
    if plan.maxRooms == 0:
        raise PlanLimitReached(f"data rooms are not available on plan {plan.name}")
    query: dict[str, Any] = {"_id": account.id}
    if plan.maxRooms is not None:
        query["roomCount"] = {"$not": {"$gte": plan.maxRooms}}
    taken = await db.accounts.find_one_and_update(
        query, {"$inc": {"roomCount": 1, "roomSeq": 1}}, {"roomSeq": 1},
        return_document=ReturnDocument.AFTER)
    if taken is None:
        raise PlanLimitReached(f"plan {plan.name} allows at most {plan.maxRooms} rooms")
    return int(taken["roomSeq"])


async def _give_back_slot(db: Db, account_id: str) -> None:
    await db.accounts.update_one({"_id": account_id, "roomCount": {"$gt": 0}},
                                 {"$inc": {"roomCount": -1}})


async def get_room(db: Db, account_id: str, room_id: str) -> RoomDoc:
    """A room of this account; unknown, foreign and malformed ids are all 404."""
    if not is_uuid(room_id):
        raise NotFound(ROOM_NOT_FOUND)
    doc = await db.rooms.find_one({"_id": room_id.lower()})
    # A room being deleted has no `accountId` (`room_deletions`): gone for everyone.
    if doc is None or doc.get("accountId") != account_id:
        raise NotFound(ROOM_NOT_FOUND)
    return doc


async def list_rooms(db: Db, account_id: str, page: int, per_page: int) -> dict[str, Any]:
    """Newest first, read by the rooms' numbers in the account (`room_numbers`): page 1 costs
    the same at 10 rooms as at 10^5, a deep page what precedes it."""
    docs, total = await room_numbers.newest_rooms(db, account_id, page, per_page)
    return {"rooms": [room_json(doc, await item_count(db, doc)) for doc in docs],
            "total": total}


async def rename_room(db: Db, account_id: str, room_id: str, name: str) -> RoomDoc:
    require_caller(Permission.CHANGE_CONTENT)
    room = await get_room(db, account_id, room_id)
    await db.rooms.update_one({"_id": room["_id"]}, {"$set": {"name": name}})
    return {**room, "name": name}


async def summaries(db: Db, account_id: str) -> list[dict[str, Any]]:
    """Every room of an account, newest first, with its items and live links (vault-admin)."""
    await get_account(db, account_id)  # an unknown account is NotFound, not an empty list
    rooms = await room_numbers.every_room(db, account_id)
    # Not revoked nor expired: the room's maintained count (`room_counts`).
    return [{**room_json(room, await item_count(db, room)),
             "activeLinks": await room_counts.live(db, room["_id"])}
            for room in rooms]
