"""The burst shape of `tests/test_scale_shapes.py` and `python -m bench.scale_burst --shapes`:
one account whose records of each kind were written `burst` at a time within half a minute a
month ago, then nothing, in the shapes (numbers and counters included) the services write.

Each kind has its own records: files; links on the account's oldest file; access-log entries
on that file, in a room's log too; a link's viewer sessions; activity events; one person's
sessions; one webhook endpoint's deliveries; a room with one item and `burst` links (at most
`room_links`). `READS`
names every listed read as its route calls it, with what to count of what it returns.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Awaitable, Callable, Sized
from datetime import datetime, timedelta
from typing import Any, cast

from vaultd.db import Db
from vaultd.records import LinkDoc
from vaultd.secrets import digest, new_token
from vaultd.services.accounts import accounts, link_shards
from vaultd.services.analytics import link_listing
from vaultd.services.common import access_log, feed, numbered_log
from vaultd.services.files import files
from vaultd.services.gates import sessions as viewer_sessions
from vaultd.services.members import activity, activity_numbers, session_numbers, sessions
from vaultd.services.rooms import activity as room_activity
from vaultd.services.rooms import tree
from vaultd.services.webhooks import delivery_numbers, webhooks
from vaultd.timefmt import utcnow

SPAN = timedelta(seconds=30)
EMAIL = "burst@example.com"
# A room's links, at most: the burst of them that its analytics must not walk.
ROOM_LINKS = 2_000


class Shape:
    """The ids the reads need, filled by `seed_shape`."""

    account_id = file_id = link_id = room_id = endpoint_id = ""
    link_created = room_created = datetime.min
    file_created = endpoint_created = datetime.min

    def __init__(self) -> None:
        self.link: dict[str, Any] = {}  # the busy link's record, as a request reads it


async def seed_shape(db: Db, burst: int, room_links: int = ROOM_LINKS) -> Shape:
    shape, now = Shape(), utcnow()
    ended = now - timedelta(days=30)
    times = [ended - SPAN + SPAN * (place / burst) for place in range(burst)]
    account = await accounts.create_account(db, "Burst Co", "business")
    shape.account_id = account.id
    for seed in (_files, _links, _log, _viewer_sessions, _activity, _deliveries):
        await seed(db, shape, times)
    await _room(db, shape, times[-room_links:])
    await _member_sessions(db, times)
    return shape


async def _insert(db: Db, name: str, docs: list[dict[str, Any]]) -> None:
    for first in range(0, len(docs), 2000):  # each insert well under a second
        await db.raw(name).insert_many(docs[first:first + 2000], ordered=False)


async def _files(db: Db, shape: Shape, times: list[datetime]) -> None:
    year_ago = utcnow() - timedelta(days=365)
    docs = []
    for place, at in enumerate([year_ago, *times]):
        file_id = str(uuid.uuid4())
        docs.append({"_id": file_id, "accountId": shape.account_id, "name": f"{file_id[:8]}.pdf",
                     "kind": "delivery", "contentType": "application/pdf", "size": 1000,
                     "pageCount": 3, "createdAt": at, "state": "stored", "seq": place + 1,
                     "blob": {"name": f"seeded-{file_id}", "size": 1000, "key": {}},
                     "linkCount": {"live": 0, "sweptAt": at}})
    await _insert(db, "files", docs)
    shape.file_id, shape.file_created = docs[0]["_id"], year_ago  # the oldest: the busy file
    await db.accounts.update_one({"_id": shape.account_id}, {"$set": {
        "createdAt": year_ago - timedelta(days=1), "usage.documents": len(docs),
        "usage.storageBytes": 1000 * len(docs), "fileSeq": len(docs)}})


async def _links(db: Db, shape: Shape, times: list[datetime]) -> None:
    docs = [{"_id": str(uuid.uuid4()), "hash": digest(new_token()), "accountId": shape.account_id,
             "fileId": shape.file_id, "viewerEmail": "kim@example.com", "viewerName": "Kim",
             "createdAt": at, "expiresAt": at + timedelta(days=365), "revoked": False,
             "seq": place + 1, "shard": link_shards.shard_of(shape.file_id, place + 1),
             "listed": "active"} for place, at in enumerate(times)]
    await _insert(db, "links", docs)
    await db.files.update_one({"_id": shape.file_id}, {"$set": {
        "linkSeq": len(docs), "linkTotal": len(docs), "linkCount.live": len(docs)}})
    shape.link_id, shape.link_created = docs[0]["_id"], docs[0]["createdAt"]
    shape.link = docs[0]


async def _log(db: Db, shape: Shape, times: list[datetime]) -> None:
    """The file's log, in the room's log too (a room's document is read through the room),
    numbered in the file, the account and the room as the audit round numbers them."""
    shape.room_id, shape.room_created = str(uuid.uuid4()), utcnow() - timedelta(days=60)
    await _insert(db, "access_log", [
        {"_id": str(uuid.uuid4()), "accountId": shape.account_id, "fileId": shape.file_id,
         "roomId": shape.room_id, "action": "page", "page": 1 + place % 3, "at": at,
         "viewerEmail": "kim@example.com", "ip": "203.0.113.7",
         "fileSeq": place + 1, "accountSeq": place + 1, "roomSeq": place + 1}
        for place, at in enumerate(times)])
    scopes = [(numbered_log.FILE, shape.file_id), (numbered_log.ACCOUNT, shape.account_id),
              (numbered_log.ROOM, shape.room_id)]
    await db.number_counters.insert_many([
        *({"_id": scope.counter(value), "seq": len(times), "since": times[0]}
          for scope, value in scopes),
        {"_id": numbered_log.HORIZON, "horizon": utcnow()}])


async def _viewer_sessions(db: Db, shape: Shape, times: list[datetime]) -> None:
    await _insert(db, "viewer_sessions", [
        {"_id": str(uuid.uuid4()), "hash": digest(new_token()), "linkId": shape.link_id,
         "accountId": shape.account_id, "createdAt": max(at, shape.link_created),
         "expiresAt": utcnow() + timedelta(days=1), "passed": {}, "ip": "203.0.113.7",
         "seq": place + 1} for place, at in enumerate(times)])
    await db.raw("links").update_one({"_id": shape.link_id},
                                     {"$set": {"sessionsOpened": len(times)}})
    shape.link["sessionsOpened"] = len(times)


async def _activity(db: Db, shape: Shape, times: list[datetime]) -> None:
    await _insert(db, "activity", [
        {"_id": uuid.uuid4().hex, "accountId": shape.account_id, "at": at,
         "actor": {"kind": "key", "id": "key_1", "label": "ci"}, "action": "key.created",
         "target": "key_x", "seq": place + 1, "actionSeq": place + 1}
        for place, at in enumerate(times)])
    await db.number_counters.insert_many([
        {"_id": activity_numbers.scope(shape.account_id), "seq": len(times)},
        {"_id": activity_numbers.action_scope(shape.account_id, "key.created"),
         "seq": len(times)}])


async def _member_sessions(db: Db, times: list[datetime]) -> None:
    await _insert(db, "member_sessions", [
        {"_id": digest(new_token()), "publicId": secrets.token_hex(8), "email": EMAIL,
         "method": "code", "accountId": None, "memberId": None, "epoch": None,
         "ip": "203.0.113.7", "userAgent": "burst", "createdAt": at, "lastSeenAt": at,
         "expiresAt": utcnow() + timedelta(days=1), "seq": place + 1}
        for place, at in enumerate(times)])
    await db.number_counters.insert_one({"_id": session_numbers.scope(EMAIL),
                                         "seq": len(times)})


async def _deliveries(db: Db, shape: Shape, times: list[datetime]) -> None:
    shape.endpoint_id = f"ep_{secrets.token_hex(16)}"
    shape.endpoint_created = utcnow() - timedelta(days=60)
    await db.raw("webhook_endpoints").insert_one(
        {"_id": shape.endpoint_id, "accountId": shape.account_id,
         "url": "https://hooks.example.com/in", "events": ["file.uploaded"],
         "createdAt": shape.endpoint_created, "slot": 0})
    await _insert(db, "webhook_deliveries", [
        {"_id": str(uuid.uuid4()), "messageId": f"msg_{place:032x}",
         "endpointId": shape.endpoint_id, "accountId": shape.account_id, "type": "file.uploaded",
         "attempt": 1, "at": at, "status": 200, "ok": True, "durationMs": 12, "error": None,
         "seq": place + 1} for place, at in enumerate(times)])
    await db.number_counters.insert_one({"_id": delivery_numbers.scope(shape.endpoint_id),
                                         "seq": len(times)})


async def _room(db: Db, shape: Shape, times: list[datetime]) -> None:
    await db.raw("rooms").insert_one({"_id": shape.room_id, "accountId": shape.account_id,
                                      "name": "Burst room", "createdAt": shape.room_created,
                                      "itemCount": 1})
    await db.raw("room_items").insert_one(
        {"_id": str(uuid.uuid4()), "roomId": shape.room_id, "accountId": shape.account_id,
         "type": "file", "name": None, "parentId": None, "position": 1,
         "fileId": shape.file_id, "fileName": "busy.pdf", "pageCount": 3,
         "createdAt": shape.room_created})
    ids = [str(uuid.uuid4()) for _ in times]
    links = [{"_id": link_id, "hash": digest(new_token()),
              "accountId": shape.account_id, "roomId": shape.room_id,
              "viewerEmail": f"v{place}@example.com", "viewerName": "V", "folderIds": None,
              "createdAt": at, "expiresAt": at + timedelta(days=365), "revoked": False,
              "shard": link_shards.shard_of_id(link_id)}
             for place, (link_id, at) in enumerate(zip(ids, times, strict=True))]
    await _insert(db, "room_links", links)
    # The newest link was opened: the room's analytics has one viewer to show.
    await db.raw("link_stats").insert_one(
        {"_id": f"{links[-1]['_id']}:{shape.file_id}", "lastSeenAt": times[-1],
         "accountId": shape.account_id, "roomId": shape.room_id, "fileId": shape.file_id,
         "viewerEmail": links[-1]["viewerEmail"], "viewerName": links[-1]["viewerName"],
         "pages": {"p1": {"views": 1, "seconds": 2.0}}, "totalSeconds": 2.0})


def _signed_in() -> sessions.SignedIn:
    return sessions.SignedIn(key="k", public_id="p", email=EMAIL, csrf_token="c",
                             account_id=None, account=None, member=None)


Read = Callable[[Db, Shape], Awaitable[Any]]
# name: (the read as its route calls it, what of its answer it returned)
READS: dict[str, tuple[Read, Callable[[Any], Sized]]] = {
    "files, page 1 (25)": (lambda db, s: files.list_files(db, s.account_id, 1, 25),
                           lambda page: page["files"]),
    "a file's links, page 1 (20)": (lambda db, s: link_listing.list_file_links(
        db, s.account_id, s.file_id, 1, 20, None), lambda page: page["views"]),
    "a file's links by state (20)": (lambda db, s: link_listing.list_file_links(
        db, s.account_id, s.file_id, 1, 20, "active"), lambda page: page["views"]),
    "a file's access log (200)": (lambda db, s: access_log.latest_for_file(
        db, s.file_id, since=s.file_created), lambda entries: entries),
    "the account's access log (console, 50)": (lambda db, s: feed.log_page(
        db, s.account_id, per_page=50), lambda page: page.entries),
    "a link's viewer sessions (50)": (lambda db, s: viewer_sessions.sessions_json(
        db, cast("LinkDoc", s.link)), lambda rows: rows),
    "the activity log (50)": (lambda db, s: activity.page(db, s.account_id),
                              lambda page: page.entries),
    "the activity log of one action (console, 50)": (lambda db, s: activity.page(
        db, s.account_id, per_page=50, action="key.created"), lambda page: page.entries),
    "a person's sessions (50)": (lambda db, s: sessions.list_sessions(db, _signed_in()),
                                 lambda rows: rows),
    "a room's items": (lambda db, s: tree.read_tree(db, s.account_id, s.room_id),
                       lambda nodes: nodes),
    "a room's access log (200)": (lambda db, s: room_activity.latest_entries(
        db, s.room_id, since=s.room_created), lambda entries: entries),
    "a room's links (its analytics)": (lambda db, s: room_activity.analytics(db, s.room_id, {}),
                                        lambda report: report["viewers"]),
    "an endpoint's deliveries (50)": (lambda db, s: webhooks.latest_deliveries(
        db, s.account_id, s.endpoint_id), lambda rows: rows),
}
