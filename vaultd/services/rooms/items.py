"""Changing a room's tree: folders and files added, renamed, moved, reordered, removed."""

from __future__ import annotations

import uuid
from typing import Any

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.errors import InvalidRequest, NotFound
from vaultd.records import FileDoc, RoomDoc, RoomItemDoc, RoomItemType
from vaultd.services.files.files import get_file, is_uuid
from vaultd.services.members.callers import require_caller
from vaultd.services.members.roles import Permission
from vaultd.services.rooms.records import ROOM_NOT_FOUND, parse_name
from vaultd.services.rooms.tree import MAX_ITEMS, children_of, load_items
from vaultd.timefmt import utcnow

ITEM_NOT_FOUND = "item not found"
ALREADY_IN_ROOM = "the file is already in this room"
NOT_A_FOLDER = "{field} must be the id of a folder of this room"


async def _folder_id(db: Db, room: RoomDoc, value: Any, field: str) -> str | None:
    if value is None:
        return None
    folder = await db.room_items.find_one({"_id": value, "roomId": room["_id"], "type": "folder"}
                                          ) if isinstance(value, str) else None
    if folder is None:
        raise InvalidRequest(NOT_A_FOLDER.format(field=field))
    return folder["_id"]


async def _next_position(db: Db, room_id: str, parent_id: str | None) -> int:
    last = await db.room_items.find_one({"roomId": room_id, "parentId": parent_id},
                                        sort=[("position", -1)])
    return int(last["position"]) + 1 if last else 1


async def take_item_place(db: Db, room_id: str) -> None:
    """One more item on the room's `itemCount`, atomically under MAX_ITEMS (two concurrent adds
    at the cap cannot both pass). A room from before the count gets it first, counted once. A
    room being deleted (`state`) or gone takes no item."""
    standing = {"_id": room_id, "state": {"$exists": False}}
    while True:
        taken = await db.rooms.update_one({**standing, "itemCount": {"$lt": MAX_ITEMS}},
                                          {"$inc": {"itemCount": 1}})
        if taken.modified_count:
            return
        counted = await db.room_items.count_documents({"roomId": room_id})
        started = await db.rooms.update_one({**standing, "itemCount": {"$exists": False}},
                                            {"$set": {"itemCount": counted}})
        if started.modified_count:
            continue
        if await db.rooms.find_one(standing, {"_id": 1}) is None:
            raise NotFound(ROOM_NOT_FOUND)
        raise InvalidRequest(f"a room holds at most {MAX_ITEMS} items")


async def give_back_places(db: Db, room_id: str, count: int) -> None:
    if count:
        await db.rooms.update_one({"_id": room_id, "itemCount": {"$exists": True}},
                                  {"$inc": {"itemCount": -count}})


async def _insert(db: Db, room: RoomDoc, kind: RoomItemType, name: str | None,
                  parent_id: str | None, file: FileDoc | None = None) -> RoomItemDoc:
    item: RoomItemDoc = {"_id": str(uuid.uuid4()), "roomId": room["_id"],
                         "accountId": room["accountId"], "type": kind, "name": name,
                         "parentId": parent_id,
                         "position": await _next_position(db, room["_id"], parent_id),
                         "createdAt": utcnow()}
    if file is not None:
        item.update({"fileId": file["_id"], "fileName": file["name"],
                     "pageCount": int(file["pageCount"])})
    # The place is taken last, right before the insert that gives it back on failure: a read
    # that failed between the two (a database timing out under load) kept the place for good.
    await take_item_place(db, room["_id"])
    try:
        await db.room_items.insert_one(item)
    except BaseException:
        await give_back_places(db, room["_id"], 1)
        raise
    await _kept_unless_deleting(db, item)
    return item


async def _kept_unless_deleting(db: Db, item: RoomItemDoc) -> None:
    """An item added while its room's deletion was claimed is taken back by the adder: the
    deletion's clean-up may have walked the room's items before this insert landed. Read after
    the insert, so one of the two always sees the other (rooms.room_deletions)."""
    standing = await db.rooms.find_one({"_id": item["roomId"], "state": {"$exists": False}},
                                       {"_id": 1})
    if standing is None:
        await db.room_items.delete_one({"_id": item["_id"]})
        raise NotFound(ROOM_NOT_FOUND)


async def add_folder(db: Db, room: RoomDoc, body: dict[str, Any]) -> RoomItemDoc:
    require_caller(Permission.CHANGE_CONTENT)
    name = parse_name(body.get("name"))
    parent = await _folder_id(db, room, body.get("parentId"), "parentId")
    return await _insert(db, room, "folder", name, parent)


async def add_file(db: Db, room: RoomDoc, body: dict[str, Any]) -> RoomItemDoc:
    """A stored file of the room's account; another account's file is 404 like a missing one."""
    require_caller(Permission.CHANGE_CONTENT)
    file_id = body.get("fileId")
    if not isinstance(file_id, str) or not is_uuid(file_id):
        raise InvalidRequest("fileId must be a file UUID")
    parent = await _folder_id(db, room, body.get("folderId"), "folderId")
    file = await get_file(db, room["accountId"], file_id)
    places = await db.room_items.find({"fileId": file["_id"]}, {"roomId": 1}).to_list()
    if any(place["roomId"] == room["_id"] for place in places):  # by the file's index
        raise InvalidRequest(ALREADY_IN_ROOM)
    try:
        return await _insert(db, room, "file", None, parent, file)
    except DuplicateKeyError:
        # Two adds that both passed the check above: the unique (roomId, fileId) index
        # (`db_indexes.one_place_per_room`) lets one in; `_insert` gave the loser's place back.
        raise InvalidRequest(ALREADY_IN_ROOM) from None


async def get_item(db: Db, room: RoomDoc, item_id: str) -> RoomItemDoc:
    item = await db.room_items.find_one({"_id": item_id, "roomId": room["_id"]})
    if item is None:
        raise NotFound(ITEM_NOT_FOUND)
    return item


def _descendants(items: list[RoomItemDoc], root: str) -> set[str]:
    by_parent = children_of(items)
    found, queue = {root}, [root]
    while queue:
        for child in by_parent.get(queue.pop(), []):
            found.add(child["_id"])
            queue.append(child["_id"])
    return found


def _parse_position(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ITEMS:
        raise InvalidRequest(f"position must be an integer between 1 and {MAX_ITEMS}")
    return value


async def update_item(db: Db, room: RoomDoc, item_id: str, body: dict[str, Any]) -> None:
    """Rename (a file's item: the name shown in the room, null for the file's own), move under
    `parentId` (null: the top level) and/or put at `position` (1-based) among its siblings."""
    require_caller(Permission.CHANGE_CONTENT)
    item = await get_item(db, room, item_id)
    unknown = sorted(set(body) - {"name", "parentId", "position"})
    if unknown or not body:
        raise InvalidRequest("give at least one of name, parentId, position")
    changes: dict[str, Any] = {}
    if "name" in body:
        if body["name"] is None and item["type"] == "file":
            changes["name"] = None
        else:
            changes["name"] = parse_name(body["name"])
    parent = item["parentId"]
    if "parentId" in body:
        parent = await _folder_id(db, room, body["parentId"], "parentId")
        items = await load_items(db, room["_id"])
        if parent is not None and parent in _descendants(items, item["_id"]):
            raise InvalidRequest("parentId must not be the item itself or inside it")
        changes["parentId"] = parent
    position = _parse_position(body["position"]) if "position" in body else None
    if position is None and parent != item["parentId"]:
        position = await _next_position(db, room["_id"], parent)
    if changes:
        await db.room_items.update_one({"_id": item["_id"]}, {"$set": changes})
    if position is not None:
        await _reorder(db, room["_id"], parent, item["_id"], position)


async def _reorder(db: Db, room_id: str, parent: str | None, item_id: str, position: int) -> None:
    """Siblings renumbered 1..n with the item at `position` (the last place if beyond)."""
    siblings = children_of(await load_items(db, room_id)).get(parent, [])
    others = [sibling for sibling in siblings if sibling["_id"] != item_id]
    order = [sibling["_id"] for sibling in others]
    order.insert(min(position, len(order) + 1) - 1, item_id)
    current = {sibling["_id"]: sibling["position"] for sibling in siblings}
    for number, sibling_id in enumerate(order, start=1):
        if current.get(sibling_id) != number:
            await db.room_items.update_one({"_id": sibling_id}, {"$set": {"position": number}})


async def delete_item(db: Db, room: RoomDoc, item_id: str) -> int:
    """Removes the item, and a folder's content with it; returns how many items went."""
    require_caller(Permission.CHANGE_CONTENT)
    item = await get_item(db, room, item_id)
    ids = _descendants(await load_items(db, room["_id"]), item["_id"])
    result = await db.room_items.delete_many({"_id": {"$in": sorted(ids)}, "roomId": room["_id"]})
    await give_back_places(db, room["_id"], int(result.deleted_count))
    return int(result.deleted_count)
