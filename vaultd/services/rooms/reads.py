"""What a room link may read, decided again at every request.

A room page goes through the page path (`services.pages.page_path`) like a file link's page: this
module is its resolver for room links (`PagePath.rooms`). It reads the link, the room, the
file's place in the room and the file itself from the database on every page, and again after
a render that took long: a file removed from the room, moved out of the link's scope or deleted
stops at its next page with the same 404 as an unknown token.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.records import FileDoc, LinkDoc, RoomDoc, RoomItemDoc, RoomLinkDoc
from vaultd.secrets import is_token
from vaultd.services.accounts import api_keys
from vaultd.services.accounts.accounts import Account, get_account
from vaultd.services.common.recent import RecentRecords
from vaultd.services.files.files import get_file, is_uuid
from vaultd.services.links.links import LINK_NOT_FOUND, OpenLink
from vaultd.services.rooms import page_read, room_counts, room_links, tree
from vaultd.timefmt import iso_utc

if TYPE_CHECKING:  # the page path holds this resolver: only the type is needed here
    from vaultd.services.pages.page_path import PageRequest

MAX_DEPTH = 100  # folders above a file, at most, when its scope is checked


def page_link(link: RoomLinkDoc, file: FileDoc) -> LinkDoc:
    """The link one document of a room link is read through: the page path's watermark, log,
    render fairness and analytics (`link_stats` id `<room link id>:<file id>`) work from it."""
    doc: LinkDoc = {"_id": f"{link['_id']}:{file['_id']}", "hash": link["hash"],
                    "accountId": link["accountId"], "fileId": file["_id"],
                    "viewerEmail": link["viewerEmail"], "viewerName": link["viewerName"],
                    "createdAt": link["createdAt"], "expiresAt": link["expiresAt"],
                    "revoked": False}
    if "policy" in link:  # the room link's gates, judged against its sessions (`gate_id`)
        doc["policy"] = link["policy"]
    return doc


async def places_of(db: Db, file_id: str) -> list[RoomItemDoc]:
    """The file's items in every room, by the file's index (a file is in few rooms)."""
    return await db.room_items.find({"fileId": file_id}, {"roomId": 1, "parentId": 1}).to_list()


async def in_scope(db: Db, link: RoomLinkDoc, file_id: str,
                   places: list[RoomItemDoc] | None = None) -> bool:
    """Whether the file is in the link's room now, inside one of its scope's folders.

    Its items are read by the file's index (`places`, when the caller read them alongside the
    link), the room filtered here, then the chain of folders above it by id: reads SecantusDB
    answers from an index (a query on the room's items would walk them all)."""
    if places is None:
        places = await places_of(db, file_id)
    item = next((place for place in places if place["roomId"] == link["roomId"]), None)
    if item is None:
        return False
    if link["folderIds"] is None:
        return True
    scope, parent = set(link["folderIds"]), item["parentId"]
    for _ in range(MAX_DEPTH):
        if parent is None:
            return False
        if parent in scope:
            return True
        folder = await db.room_items.find_one({"_id": parent}, {"roomId": 1, "parentId": 1})
        if folder is None or folder["roomId"] != link["roomId"]:
            return False
        parent = folder["parentId"]
    return False


async def open_room(db: Db, token: str, owner: str | None = None
                    ) -> tuple[RoomLinkDoc, RoomDoc, Account]:
    """A live room link with its room and account; another owner's is NotFound too."""
    link = await room_links.find_live(db, token)
    room = await db.rooms.find_one({"_id": link["roomId"]})
    if room is None or (owner is not None and link["accountId"] != owner):
        raise NotFound(LINK_NOT_FOUND)
    return link, room, await get_account(db, link["accountId"])


async def visible_tree(db: Db, link: RoomLinkDoc) -> list[tree.Node]:
    """Exactly what the link sees now (items added later inside its scope included)."""
    nodes = await tree.read_tree(db, link["accountId"], link["roomId"])
    return tree.scoped(nodes, link["folderIds"])


def room_details(link: RoomLinkDoc, room: RoomDoc, account: Account, nodes: list[tree.Node]
                 ) -> dict[str, Any]:
    return {"roomId": room["_id"], "name": room["name"], "viewerName": link["viewerName"],
            "viewerEmail": link["viewerEmail"], "expiresAt": iso_utc(link["expiresAt"]),
            "brand": account.brand, "tree": tree.tree_json(nodes)}


async def open_document(db: Db, token: str, file_id: str, owner: str | None = None,
                        kept: KeptRecords | None = None, api_key: str | None = None
                        ) -> OpenLink:
    """One document of a room link, readable now; NotFound (LINK_NOT_FOUND) otherwise.

    The link, the file's places in rooms and the caller's `api_key` (the API route: its
    verdict, Unauthorized, comes first; its account must own the link) are read in one round
    trip (`page_read`), then the scope's folders (if any). The room is joined to the link, not
    read: a room being deleted, or gone, leaves none of its links live (`room_counts`). The
    file's and account's records may come from `kept` (read in the last second): they do not
    change while the file is stored, and a deleted file leaves its rooms first."""
    if not is_token(token) or not is_uuid(file_id):
        if api_key is not None:
            await api_keys.check_key(db, api_key)  # the key's verdict first
        raise NotFound(LINK_NOT_FOUND)
    file_id = file_id.lower()
    kept = kept or KeptRecords()
    records = await page_read.read_together(db, token, file_id, api_key)
    read_at = time.monotonic()
    if api_key is not None:
        owner = page_read.key_owner(records.key)
    link, places = records.link, records.places
    if link is None or not room_links.is_live(link):
        raise NotFound(LINK_NOT_FOUND)
    if owner is not None and link["accountId"] != owner:
        raise NotFound(LINK_NOT_FOUND)
    placed, file, account = await asyncio.gather(
        in_scope(db, link, file_id, places), kept.file(db, link["accountId"], file_id),
        kept.account(db, link["accountId"]))
    if not placed or file is None:
        raise NotFound(LINK_NOT_FOUND)
    return OpenLink(page_link(link, file), file, account, read_at, room_id=link["roomId"])


class KeptRecords:
    """Files and accounts read in the last second for room pages (`services.common.recent`)."""

    def __init__(self) -> None:
        self.files: RecentRecords[FileDoc] = RecentRecords()
        self.accounts: RecentRecords[Account] = RecentRecords()

    async def file(self, db: Db, account_id: str, file_id: str) -> FileDoc | None:
        file = self.files.fresh(file_id)
        if file is None:
            try:
                file = await get_file(db, account_id, file_id)
            except NotFound:
                return None
            self.files.keep(file_id, file)
        return file if file["accountId"] == account_id else None

    async def account(self, db: Db, account_id: str) -> Account:
        account = self.accounts.fresh(account_id)
        if account is None:
            account = await get_account(db, account_id)
            self.accounts.keep(account_id, account)
        return account


class RoomPages:
    """The page path's resolver for room links (`PagePath.rooms`)."""

    def __init__(self, db: Db) -> None:
        self.db = db
        self.kept = KeptRecords()

    async def open(self, request: PageRequest) -> OpenLink:
        assert request.file_id is not None
        # With a key (the API route), the key is read with the link; its verdict comes first,
        # and another account's link is as a missing one.
        return await open_document(self.db, request.token, request.file_id, kept=self.kept,
                                   api_key=request.api_key)

    async def still_open(self, opened: OpenLink, fresh_for: float = 0.0) -> bool:
        """As `links.still_open`: live now, or checked less than `fresh_for` seconds ago."""
        if time.monotonic() - opened.read_at < fresh_for:
            return True
        link_id = opened.link["_id"].partition(":")[0]
        link = await room_counts.read_link(self.db, {"_id": link_id})
        return (link is not None and room_links.is_live(link)
                and await in_scope(self.db, link, opened.file["_id"]))
