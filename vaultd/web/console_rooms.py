"""The console's Rooms pages: the rooms, 50 a page (create one), and a room: its numbered
index, a folder or a file added, its links made with the same share form as a file's, and its
analytics per reader and per document.

The forms are the `/v1/rooms` routes' services for the signed-in member, held to the same
permissions (CHANGE_CONTENT for every change). A room link's answer is the room's page with the
new URL, shown once, as for a file's link."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from math import ceil
from typing import Any

from vaultd.errors import NotFound, VaultError
from vaultd.records import RoomDoc
from vaultd.services.files import files
from vaultd.services.gates.policy import parse_policy
from vaultd.services.members.roles import Permission
from vaultd.services.rooms import activity, index, items, records, room_links, tree
from vaultd.timefmt import iso_utc, utcnow
from vaultd.web import console_share
from vaultd.web.console_file import DEFAULT_EXPIRY_DAYS
from vaultd.web.console_files import MAX_PAGE
from vaultd.web.console_page import ConsolePage
from vaultd.web.files import parse_bounded_int
from vaultd.web.permissions import CHANGE, READ

ROOMS_PATH = "/console/rooms"
ROOMS_PER_PAGE = 50
FILES_TO_ADD = 100  # the newest files offered by "Add file": one bounded page of the listing


def room_path(room_id: str) -> str:
    return f"{ROOMS_PATH}/{room_id}"


class RoomsBase(ConsolePage):
    section = "rooms"

    def form(self, name: str) -> str:
        return (self.get_body_argument(name, "") or "").strip()


class RoomsPage(RoomsBase):
    async def get(self) -> None:
        assert self.account is not None
        page = parse_bounded_int(self.get_query_argument("page", None), "page", 1, 1, MAX_PAGE)
        # A page costs what it shows however many rooms (`rooms.room_numbers`).
        listing = await records.list_rooms(self.ctx.db, self.account.id, page, ROOMS_PER_PAGE)
        pages = max(1, ceil(listing["total"] / ROOMS_PER_PAGE))
        self.page("rooms.html", "Rooms", rooms=listing["rooms"], total=listing["total"],
                  plan=self.account.plan, page_number=page, pages=pages)

    async def post(self) -> None:
        assert self.account is not None
        room = await records.create_room(self.ctx.db, self.account,
                                         records.parse_name(self.form("name")))
        self.done(room_path(room["_id"]), "room-created")


class RoomBase(RoomsBase):
    async def room(self, room_id: str) -> RoomDoc:
        assert self.account is not None
        return await records.get_room(self.ctx.db, self.account.id, room_id)

    async def room_page(self, room: RoomDoc, status: int = 200, **extra: Any) -> None:
        assert self.account is not None
        db = self.ctx.db
        await self.ctx.pages.settle(room["accountId"])  # pages counted but not yet written
        nodes = await tree.read_tree(db, room["accountId"], room["_id"])
        names = {node.file.id: node.name for node in tree.walk(nodes) if node.file}
        folders = [node for node in tree.walk(nodes) if node.file is None]
        offered: dict[str, Any] = {"files": []}
        if self.can(Permission.CHANGE_CONTENT):  # only "Add file" shows them: names alone
            offered = await files.list_files(db, self.account.id, 1, FILES_TO_ADD,
                                             active_links=False)
        values: dict[str, Any] = {"error": None, "form": {}, "new_link": None}
        self.page("room.html", room["name"], status=status, room=room,
                  rows=index.index_rows(nodes), folders=folders, offered=offered["files"],
                  analytics=await activity.analytics(db, room["_id"], names),
                  default_days=DEFAULT_EXPIRY_DAYS, mail_on=bool(self.ctx.settings.smtp_host),
                  share_gates=await console_share.offered(
                      db, self.account, mail_on=bool(self.ctx.settings.smtp_host),
                      choices=False),
                  **{**values, **extra})


class RoomPage(RoomBase):
    async def get(self, room_id: str) -> None:
        await self.room_page(await self.room(room_id))


class AddFolderForm(RoomBase):
    async def post(self, room_id: str) -> None:
        room = await self.room(room_id)
        await items.add_folder(self.ctx.db, room, {"name": self.form("name"),
                                                   "parentId": self.form("parentId") or None})
        self.done(room_path(room_id), "folder-added")


class AddFileForm(RoomBase):
    async def post(self, room_id: str) -> None:
        room = await self.room(room_id)
        await items.add_file(self.ctx.db, room, {"fileId": self.form("fileId"),
                                                 "folderId": self.form("parentId") or None})
        self.done(room_path(room_id), "file-added")


class RoomShareForm(RoomBase):
    """The file's share form's fields and gates (`console_file`), for a room link."""

    async def post(self, room_id: str) -> None:
        room = await self.room(room_id)
        form = {name: self.form(name) for name in console_share.share_fields()}
        try:
            new_link = await self.share(room, form)
        except VaultError as error:
            if not self.wants_html() or isinstance(error, NotFound):
                raise
            await self.room_page(room, status=error.status, error=error.message,
                                 form=console_share.without_secrets(form))
            return
        await self.room_page(room, status=201, new_link=new_link)

    async def share(self, room: RoomDoc, form: dict[str, str]) -> dict[str, str]:
        assert self.account is not None
        ttl = console_share.ttl_seconds(form, self.account, DEFAULT_EXPIRY_DAYS)
        body = {"viewerEmail": form["viewerEmail"], "viewerName": form["viewerName"] or None,
                "ttlSeconds": ttl}
        request = await room_links.parse_request(self.ctx.db, self.ctx.settings, room,
                                                 self.account, body)
        expires_at = utcnow() + timedelta(seconds=request.ttl_seconds)
        policy = await parse_policy(self.ctx.db, self.ctx.settings, self.account,
                                    console_share.form_policy(form, expires_at), expires_at)
        token, expires_at = await room_links.create(self.ctx.db, room,
                                                    replace(request, policy=policy))
        return {"url": f"{self.ctx.viewer_url}/r/{token}", "viewer": request.viewer_email,
                "expiresAt": iso_utc(expires_at)}


ROUTES = [
    (r"/console/rooms", RoomsPage),
    (r"/console/rooms/([^/]+)", RoomPage),
    (r"/console/rooms/([^/]+)/folders", AddFolderForm),
    (r"/console/rooms/([^/]+)/files", AddFileForm),
    (r"/console/rooms/([^/]+)/share", RoomShareForm),
]

# What each page and form needs, by the rule of `web.permissions` (a page reads, a form changes
# what it names; joined by `web.app.route_permissions`).
PERMISSIONS = {
    r"/console/rooms": {"GET": READ, "POST": CHANGE},
    r"/console/rooms/([^/]+)": {"GET": READ},
    r"/console/rooms/([^/]+)/folders": {"POST": CHANGE},
    r"/console/rooms/([^/]+)/files": {"POST": CHANGE},
    r"/console/rooms/([^/]+)/share": {"POST": CHANGE},
}
