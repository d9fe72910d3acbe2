"""The records of data rooms: a room, its items (folders and files) and its readers' links."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal, NotRequired, TypedDict

if TYPE_CHECKING:  # the gates' policy is a file link's too, declared beside it
    from vaultd.records import PolicyDoc

RoomItemType = Literal["folder", "file"]


class RoomDoc(TypedDict):
    """Collection `rooms`: a named set of an account's files (`services.rooms`)."""

    _id: str
    accountId: str
    name: str
    createdAt: datetime
    # Its items, kept on write (services.rooms.items) so listings never count them; absent on
    # rooms made before the count, which get it at their next item (`items.take_item_place`).
    itemCount: NotRequired[int]
    # Its number in its account, given with its place under the plan's cap (the listing reads
    # rooms by number ranges: services.rooms.room_numbers); absent on a room an older vaultd
    # wrote until the start-up numbering reaches it.
    seq: NotRequired[int]


class RoomItemDoc(TypedDict):
    """Collection `room_items`: a folder or a file of a room. `parentId` is a folder of the
    same room or None (top level); siblings are ordered by `position` then `_id`."""

    _id: str
    roomId: str
    accountId: str
    type: RoomItemType
    name: str | None  # a folder's name; a file's item shows the file's own name
    parentId: str | None
    position: int
    fileId: NotRequired[str]
    fileName: NotRequired[str]  # a file's name and page count, copied when it is added: a
    pageCount: NotRequired[int]  # stored file never changes them, and the tree reads no file
    createdAt: datetime


class RoomLinkDoc(TypedDict):
    """Collection `room_links`: one reader's link to a room. Only the token's SHA-256 is kept."""

    _id: str
    hash: str
    accountId: str
    roomId: str
    viewerEmail: str
    viewerName: str
    folderIds: list[str] | None  # the link's scope (None: the whole room)
    createdAt: datetime
    expiresAt: datetime
    revoked: bool
    firstOpenedAt: NotRequired[datetime]  # set by its first opening, which sends room.opened
    countedOut: NotRequired[bool]  # revoked while live: left the live counts then
    policy: NotRequired[PolicyDoc]  # the link's gates (services.gates), as on file links
    opens: NotRequired[int]  # opens counted against policy.maxOpens
    exhausted: NotRequired[bool]  # True once an open beyond maxOpens was refused: link spent
    createdBy: NotRequired[str]  # the member whose notifications it feeds (notifications.owners)
    alertOwed: NotRequired[bool]  # its member's first-open note not written yet (notifications)
    generation: NotRequired[int]  # its room's linkGeneration when counted (services.rooms)
    shard: NotRequired[int]  # from its id: its expiry ranges read per shard (accounts.link_shards)
