"""The rooms API for their owner: rooms, their tree, index, links, log, analytics, preview."""

from __future__ import annotations

from typing import Any

from vaultd.errors import InvalidRequest, NotFound
from vaultd.records import RoomDoc
from vaultd.services.rooms import (
    activity,
    index,
    items,
    records,
    room_deletions,
    room_links,
    tree,
)
from vaultd.timefmt import iso_utc
from vaultd.web.base import BaseHandler
from vaultd.web.files import parse_before, parse_bounded_int
from vaultd.web.permissions import CHANGE, READ


class RoomBase(BaseHandler):
    async def room(self, room_id: str) -> RoomDoc:
        assert self.account is not None
        return await records.get_room(self.ctx.db, self.account.id, room_id)

    async def room_json(self, room: RoomDoc) -> dict[str, Any]:
        nodes = await tree.read_tree(self.ctx.db, room["accountId"], room["_id"])
        return {**records.room_json(room, await records.item_count(self.ctx.db, room)),
                "tree": tree.tree_json(nodes)}

    async def item_json(self, room: RoomDoc, item_id: str) -> dict[str, Any]:
        nodes = await tree.read_tree(self.ctx.db, room["accountId"], room["_id"])
        node = next((node for node in tree.walk(nodes) if node.item["_id"] == item_id), None)
        if node is None:  # its file was deleted meanwhile: it left the room
            raise NotFound(items.ITEM_NOT_FOUND)
        body = tree.node_json(node)
        body["parentId"] = node.item["parentId"]
        return body


class RoomListHandler(RoomBase):
    async def get(self) -> None:
        assert self.account is not None
        page = parse_bounded_int(self.get_query_argument("page", None), "page", 1, 1, 10**9)
        per_page = parse_bounded_int(self.get_query_argument("perPage", None), "perPage",
                                     25, 1, 100)
        self.send_json(200, await records.list_rooms(self.ctx.db, self.account.id, page,
                                                     per_page))

    async def post(self) -> None:
        assert self.account is not None
        name = records.parse_name(self.json_body().get("name"))
        room = await records.create_room(self.ctx.db, self.account, name)
        self.send_json(201, records.room_json(room, 0))


class RoomHandler(RoomBase):
    async def get(self, room_id: str) -> None:
        self.send_json(200, await self.room_json(await self.room(room_id)))

    async def patch(self, room_id: str) -> None:
        assert self.account is not None
        name = records.parse_name(self.json_body().get("name"))
        room = await records.rename_room(self.ctx.db, self.account.id, room_id, name)
        self.send_json(200, await self.room_json(room))

    async def delete(self, room_id: str) -> None:
        assert self.account is not None
        await room_deletions.delete_room(self.ctx.db, self.account.id, room_id,
                                         self.ctx.instance_id)
        self.send_empty(204)


class FoldersHandler(RoomBase):
    async def post(self, room_id: str) -> None:
        room = await self.room(room_id)
        item = await items.add_folder(self.ctx.db, room, self.json_body())
        self.send_json(201, await self.item_json(room, item["_id"]))


class FilesHandler(RoomBase):
    async def post(self, room_id: str) -> None:
        room = await self.room(room_id)
        item = await items.add_file(self.ctx.db, room, self.json_body())
        self.send_json(201, await self.item_json(room, item["_id"]))


class ItemHandler(RoomBase):
    async def patch(self, room_id: str, item_id: str) -> None:
        room = await self.room(room_id)
        await items.update_item(self.ctx.db, room, item_id, self.json_body())
        self.send_json(200, await self.item_json(room, item_id))

    async def delete(self, room_id: str, item_id: str) -> None:
        room = await self.room(room_id)
        await items.delete_item(self.ctx.db, room, item_id)
        self.send_empty(204)


class IndexHandler(RoomBase):
    async def get(self, room_id: str) -> None:
        room = await self.room(room_id)
        fmt = self.get_query_argument("format", "json")
        if fmt not in ("json", "csv"):
            raise InvalidRequest("format must be json or csv")
        rows = index.index_rows(await tree.read_tree(self.ctx.db, room["accountId"],
                                                     room["_id"]))
        if fmt == "json":
            self.send_json(200, {"roomId": room["_id"], "name": room["name"], "items": rows})
            return
        self.set_header("Content-Type", "text/csv; charset=utf-8")
        self.set_header("Content-Disposition", 'attachment; filename="room-index.csv"')
        self.set_header("Cache-Control", "private, no-store")
        self.finish(index.index_csv(rows))


class RoomViewsHandler(RoomBase):
    async def post(self, room_id: str) -> None:
        assert self.account is not None
        room = await self.room(room_id)
        request = await room_links.parse_request(self.ctx.db, self.ctx.settings, room,
                                                 self.account, self.json_body())
        token, expires_at = await room_links.create(self.ctx.db, room, request)
        self.send_json(201, {"token": token, "url": f"{self.ctx.viewer_url}/r/{token}",
                             "expiresAt": iso_utc(expires_at)})


class RevokeRoomViewsHandler(RoomBase):
    async def post(self, room_id: str) -> None:
        room = await self.room(room_id)
        revoked = await room_links.revoke_all(self.ctx.db, room, self.ctx.instance_id)
        self.send_json(200, {"revoked": revoked})


class RoomAccessLogHandler(RoomBase):
    async def get(self, room_id: str) -> None:
        before = parse_before(self.get_query_argument("before", None))
        action = self.get_query_argument("action", None)
        if action is not None and action not in activity.ROOM_ACTIONS:
            raise InvalidRequest(f"action must be one of {', '.join(activity.ROOM_ACTIONS)}")
        room = await self.room(room_id)
        self.send_json(200, await activity.latest_entries(self.ctx.db, room["_id"],
                                                          before=before, action=action,
                                                          since=room["createdAt"]))


class RoomAnalyticsHandler(RoomBase):
    async def get(self, room_id: str) -> None:
        room = await self.room(room_id)
        await self.ctx.pages.settle(room["accountId"])  # pages counted but not yet written
        nodes = await tree.read_tree(self.ctx.db, room["accountId"], room["_id"])
        names = {node.file.id: node.name for node in tree.walk(nodes) if node.file}
        self.send_json(200, await activity.analytics(self.ctx.db, room["_id"], names))


class PreviewHandler(RoomBase):
    """View as: exactly the tree a link scoped to `folderIds` (comma-separated) sees."""

    async def get(self, room_id: str) -> None:
        room = await self.room(room_id)
        raw = self.get_query_argument("folderIds", None)
        scope = await room_links.parse_folder_ids(
            self.ctx.db, room, None if raw is None else raw.split(","))
        nodes = await tree.read_tree(self.ctx.db, room["accountId"], room["_id"])
        self.send_json(200, {"roomId": room["_id"], "name": room["name"], "folderIds": scope,
                             "tree": tree.tree_json(tree.scoped(nodes, scope))})


ROUTES = [
    (r"/v1/rooms", RoomListHandler),
    (r"/v1/rooms/([^/]+)", RoomHandler),
    (r"/v1/rooms/([^/]+)/folders", FoldersHandler),
    (r"/v1/rooms/([^/]+)/files", FilesHandler),
    (r"/v1/rooms/([^/]+)/items/([^/]+)", ItemHandler),
    (r"/v1/rooms/([^/]+)/index", IndexHandler),
    (r"/v1/rooms/([^/]+)/views", RoomViewsHandler),
    (r"/v1/rooms/([^/]+)/revoke-views", RevokeRoomViewsHandler),
    (r"/v1/rooms/([^/]+)/access-log", RoomAccessLogHandler),
    (r"/v1/rooms/([^/]+)/analytics", RoomAnalyticsHandler),
    (r"/v1/rooms/([^/]+)/preview", PreviewHandler),
]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/rooms": {"GET": READ, "POST": CHANGE},
    r"/v1/rooms/([^/]+)": {"GET": READ, "PATCH": CHANGE, "DELETE": CHANGE},
    r"/v1/rooms/([^/]+)/folders": {"POST": CHANGE},
    r"/v1/rooms/([^/]+)/files": {"POST": CHANGE},
    r"/v1/rooms/([^/]+)/items/([^/]+)": {"PATCH": CHANGE, "DELETE": CHANGE},
    r"/v1/rooms/([^/]+)/index": {"GET": READ},
    r"/v1/rooms/([^/]+)/views": {"POST": CHANGE},
    r"/v1/rooms/([^/]+)/revoke-views": {"POST": CHANGE},
    r"/v1/rooms/([^/]+)/access-log": {"GET": READ},
    r"/v1/rooms/([^/]+)/analytics": {"GET": READ},
    r"/v1/rooms/([^/]+)/preview": {"GET": READ},
}
