"""The data shapes of `python -m bench.scale_shapes`, written straight into vaultd's database.

Every shape is one Business account with the records each route reads, in the shapes (numbers
and counters included) the services write, so that a read cannot tell them from a history of
real calls: `tests.scale_seed` and `tests.scale_shapes` write the same records. `seed_base` is
the empty vault's account (one file, a room holding it, a webhook endpoint, a
console admin); `seed_full_page` the full-page vault's (the same with FULL_PAGE ordinary
records of every kind: every route's page full); a shape's account is the same as the empty
one with `ordinary` records of every other kind spread over a year (ORDINARY_SHARE of the
shape's size), then the shape itself:

- `import`: N files uploaded within one minute a month ago, each with its `upload` entry,
  then nothing (their `file.uploaded` deliveries are past `webhooks.keep_days` by then);
- `hot-file`: the busiest file's access log holds N entries arriving in bursts of BURST_SPAN
  (pages read by a few viewers at once, a quarter of them through the room);
- `deleted`: N files over a year, then every other one deleted by a script within ten minutes
  last week, as a finished deletion leaves it (`services.files.deletions`): no file record
  and no link, a `delete` entry per file, a `file.deleted` delivery, the usage lowered, the
  numbers left as gaps;
- `link-bursts`: N links created in bursts (a mailing to a list) on the busiest file and a few
  others, most of the older ones expired;
- `mixed`: N records of every kind (uploads, views, links, deletions) at random over the year,
  drawn from `--seed` by `bench.scale_shape_mixed`, a process no read was tuned on.

The access log is written last, whole, and numbered as the audit sequencer's rounds number
what vaultd writes (`bench.scale_shape_log`). The entries carry no `fenced` mark, as any
tool's records with old times (`services.common.log_fence`): behind the sequencer's horizon,
they are not sequenced again, so no background work follows the seeding. A shape's account is
created with its vaultd running (`begin_shape`), its records written with vaultd stopped
(`fill_shape`, `bench.scale_shape_loading`: the big collections with their indexes built after
the insert), the empty vault's all with it running (`seed_base`). Links are written
`listed: active`, as a link's creation writes it (those whose expiry passed are marked when a
read of the expired lists them, as vaultd marks its own); no file had a revoke-all, so none
has `linkRevokedTo`.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from bench import scale_shape_mixed as mixed
from bench.scale_shape_loading import Loader
from bench.scale_shape_log import write_log
from bench.scale_shape_sessions import ADMIN, earlier_sessions, signed_in
from tests.member_records import insert_member
from tests.seeded_log import horizon_past
from vaultd.db import Db
from vaultd.secrets import digest, new_token
from vaultd.services.accounts import accounts, api_keys, link_shards
from vaultd.services.members import activity_numbers
from vaultd.services.webhooks import delivery_numbers
from vaultd.timefmt import utcnow

SHAPES = ("import", "hot-file", "deleted", "link-bursts", "mixed")
MIXED_SEED = 1  # the `mixed` shape's default draw (`--seed`)
ORDINARY_SHARE = 100  # a shape of N brings N / 100 records of every other kind (at least 10)
YEAR = timedelta(days=365)
BURSTS = 20  # the hot file's log and the link bursts arrive in this many bursts
BURST_SPAN = timedelta(minutes=5)
LINK_FILES = 5  # the link bursts land on the busiest file and on this many files in all
EVENTS = ["file.uploaded", "file.deleted", "view.created"]
# The full-page vault's records of every kind: a quarter of the busy file's log comes through
# the room, whose page is 200 entries (access_log.LATEST), as the file's.
FULL_PAGE = 4 * 200


@dataclass
class Seeded:
    """What the routes need, and what was written (for the table and its test)."""

    account_id: str
    key: str
    busy_file: str
    room_id: str
    endpoint_id: str
    key_id: str = ""
    # A shape's admin session (its cookie), written last as a sign-in writes one (`signed_in`)
    session: str = field(default="", repr=False)
    live_files: int = 0
    records: dict[str, int] = field(default_factory=dict)  # kind -> records written
    # The access log, numbered and written last (`write_log`); the counted ones in `records`.
    log: list[dict[str, Any]] = field(default_factory=list, repr=False)
    # How the records are written: a shape's, once vaultd is stopped, loads its big
    # collections with their indexes built after the insert (`Loader.loaded` names them).
    loader: Loader = field(default_factory=lambda: Loader(bulk=False), repr=False)
    plan: mixed.Plan | None = None  # the `mixed` shape's parameters, as drawn

    def count(self, kind: str, added: int) -> None:
        self.records[kind] = self.records.get(kind, 0) + added

    def add_log(self, entries: Iterable[dict[str, Any]], *, counted: bool = True) -> None:
        before = len(self.log)
        self.log.extend(entries)
        if counted:
            self.count("access_log", len(self.log) - before)


def _spread(count: int, start: datetime, span: timedelta) -> list[datetime]:
    return [start + span * (place / max(count, 1)) for place in range(count)]


def _bursts(count: int, first: datetime, every: timedelta) -> Iterator[datetime]:
    """`count` times in BURSTS bursts of BURST_SPAN, one burst every `every` from `first`."""
    size = -(-count // BURSTS)
    for place in range(count):
        burst, within = divmod(place, size)
        yield first + every * burst + BURST_SPAN * (within / size)


def _file(account_id: str, at: datetime, seq: int) -> dict[str, Any]:
    file_id = str(uuid.uuid4())
    return {"_id": file_id, "accountId": account_id, "name": f"{file_id[:8]}.pdf",
            "kind": "delivery", "contentType": "application/pdf", "size": 1000,
            "pageCount": 3, "createdAt": at, "state": "stored", "seq": seq,
            "blob": {"name": f"seeded-{file_id}", "size": 1000, "key": {}},
            "linkCount": {"live": 0, "sweptAt": at}, link_shards.FLAG: link_shards.SHARDS}


def _entry(seeded: Seeded, file_id: str, action: str, at: datetime, **more: Any
           ) -> dict[str, Any]:
    return {"_id": str(uuid.uuid4()), "accountId": seeded.account_id, "fileId": file_id,
            "action": action, "at": at, **more}


def _upload(seeded: Seeded, doc: dict[str, Any]) -> dict[str, Any]:
    return _entry(seeded, doc["_id"], "upload", doc["createdAt"],
                  actor={"kind": "key", "id": seeded.key_id, "label": ""})


def _link(seeded: Seeded, file_id: str, at: datetime, seq: int, ttl: timedelta
          ) -> dict[str, Any]:
    return {"_id": str(uuid.uuid4()), "hash": digest(new_token()),
            "accountId": seeded.account_id, "fileId": file_id,
            "viewerEmail": f"viewer{seq % 50}@client.example", "viewerName": "Viewer",
            "createdAt": at, "expiresAt": at + ttl, "revoked": False, "sessionsOpened": 0,
            "seq": seq, "shard": link_shards.shard_of(file_id, seq), "listed": "active"}


async def seed_base(db: Db) -> Seeded:
    """The empty vault's account: what every route needs to answer 200, and nothing more."""
    seeded = await _base(db)
    await write_log(db, seeded.loader, seeded.account_id, seeded.log)
    seeded.log = []
    seeded.session = await signed_in(db, seeded.account_id)
    return seeded


async def seed_full_page(db: Db) -> Seeded:
    """The full-page vault's account: the empty vault's with FULL_PAGE ordinary records of
    every kind, so that every route's page is as full as on a shape (the file's log 200, the
    room's a quarter of it 200, 50 deliveries...): beside it a shape costs what its shape
    adds, not what a fuller page costs. Written with vaultd running, as the empty vault's."""
    seeded = await _base(db)
    await _ordinary(db, seeded, FULL_PAGE)
    await write_log(db, seeded.loader, seeded.account_id, seeded.log)
    seeded.log = []
    seeded.session = await signed_in(db, seeded.account_id)
    return seeded


async def _base(db: Db) -> Seeded:
    account = await accounts.create_account(db, "Shapes Co", "business")
    info, key = await api_keys.create_key(db, account.id)
    year_ago = utcnow() - YEAR - timedelta(days=2)
    busy = _file(account.id, year_ago, 1)
    seeded = Seeded(account.id, key, busy["_id"], str(uuid.uuid4()),
                    f"ep_{secrets.token_hex(16)}", info.id, live_files=1)
    await seeded.loader.insert(db, "files", [busy])
    seeded.add_log([_upload(seeded, busy)], counted=False)
    await insert_member(db, account.id, ADMIN, role="admin")
    await db.raw("webhook_endpoints").insert_one(
        {"_id": seeded.endpoint_id, "accountId": account.id, "url": "https://hooks.example.com/in",
         "events": EVENTS, "createdAt": year_ago, "slot": 0})
    await db.raw("rooms").insert_one({"_id": seeded.room_id, "accountId": account.id,
                                      "name": "Shapes room", "createdAt": year_ago,
                                      "itemCount": 1})
    await db.raw("room_items").insert_one(
        {"_id": str(uuid.uuid4()), "roomId": seeded.room_id, "accountId": account.id,
         "type": "file", "name": None, "parentId": None, "position": 1, "fileId": busy["_id"],
         "fileName": busy["name"], "pageCount": 3, "createdAt": year_ago})
    await _finish_links(db, seeded, {busy["_id"]: []})
    await _finish_files(db, seeded, 1)
    return seeded


async def begin_shape(db: Db) -> Seeded:
    """The shape's account as the empty vault's, with vaultd running: the services create it,
    and the numbering horizon, which only vaultd's rounds move, passes the seeding's start
    (every seeded entry is older: the newest, the ordinary log's, is an hour old)."""
    started = utcnow()
    seeded = await _base(db)
    await horizon_past(db, started)
    return seeded


async def fill_shape(db: Db, seeded: Seeded, shape: str, size: int, seed: int = MIXED_SEED
                     ) -> Seeded:
    """Ordinary records of every kind in `seeded`'s account, then `shape` at `size`, then the
    whole log: written with vaultd stopped (`scale_shape_loading.stopped_vault`), the big
    collections loaded with their indexes built after the insert."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}")
    seeded.loader = Loader(bulk=True)
    ordinary = max(10, size // ORDINARY_SHARE)
    top = await _ordinary(db, seeded, ordinary)
    if shape == "import":
        await _import(db, seeded, size, top)
    elif shape == "hot-file":
        await _hot_file(db, seeded, size)
    elif shape == "deleted":
        await _deleted(db, seeded, size, top)
    elif shape == "mixed":
        await _mixed(db, seeded, size, top, seed)
    else:
        await _link_bursts(db, seeded, size)
    await write_log(db, seeded.loader, seeded.account_id, seeded.log)
    seeded.log = []
    seeded.session = await signed_in(db, seeded.account_id)
    return seeded


async def _ordinary(db: Db, seeded: Seeded, count: int) -> int:
    """`count` of every kind over the year before the shapes' times; returns the files' top
    number. Half the links live 30 days (most of those have expired), half 400."""
    now = utcnow()
    start = now - YEAR
    files = [_file(seeded.account_id, at, 2 + place)
             for place, at in enumerate(_spread(count, start, YEAR - timedelta(days=45)))]
    await _files_with_uploads(db, seeded, files)
    links = [_link(seeded, seeded.busy_file, at, 1 + place,
                   timedelta(days=30 if place % 2 else 400))
             for place, at in enumerate(_spread(count, start, YEAR - timedelta(hours=1)))]
    await _finish_links(db, seeded, {seeded.busy_file: links})
    seeded.add_log(
        _entry(seeded, seeded.busy_file, "page", at, viewerEmail="kim@client.example",
               ip="203.0.113.7", page=1 + place % 3,
               **({"roomId": seeded.room_id} if place % 4 == 0 else {}))
        for place, at in enumerate(_spread(count, start, YEAR - timedelta(hours=1))))
    seeded.count("activity", await seeded.loader.insert(db, "activity", (
        {"_id": uuid.uuid4().hex, "accountId": seeded.account_id, "at": at,
         "actor": {"kind": "key", "id": seeded.key_id, "label": ""}, "action": "key.created",
         "target": "key_x", "seq": place + 1, "actionSeq": place + 1}
        for place, at in enumerate(_spread(count, start, YEAR - timedelta(hours=1))))))
    await db.number_counters.insert_many([
        {"_id": activity_numbers.scope(seeded.account_id), "seq": count},
        {"_id": activity_numbers.action_scope(seeded.account_id, "key.created"), "seq": count}])
    await _deliveries(db, seeded, "file.uploaded",
                      _spread(count, now - timedelta(days=25), timedelta(days=24)), 0)
    seeded.count("member_sessions", await earlier_sessions(db, seeded.account_id, seeded.loader))
    await _finish_files(db, seeded, 1 + count)
    return 1 + count


async def _files_with_uploads(db: Db, seeded: Seeded, files: list[dict[str, Any]]) -> None:
    seeded.count("files", await seeded.loader.insert(db, "files", files))
    seeded.add_log(_upload(seeded, doc) for doc in files)
    seeded.live_files += len(files)


async def _deliveries(db: Db, seeded: Seeded, event: str, times: list[datetime],
                      numbered: int) -> int:
    """One delivered attempt per time, numbered in the endpoint after `numbered`."""
    written = await seeded.loader.insert(db, "webhook_deliveries", (
        {"_id": uuid.uuid4().hex, "messageId": f"msg_{uuid.uuid4().hex}",
         "endpointId": seeded.endpoint_id, "accountId": seeded.account_id, "type": event,
         "attempt": 1, "at": at, "status": 200, "ok": True, "durationMs": 12, "error": None,
         "seq": numbered + place + 1} for place, at in enumerate(times)))
    await db.number_counters.update_one({"_id": delivery_numbers.scope(seeded.endpoint_id)},
                                        {"$set": {"seq": numbered + written}}, upsert=True)
    seeded.count("webhook_deliveries", written)
    return numbered + written


async def _import(db: Db, seeded: Seeded, size: int, top: int) -> None:
    ended = utcnow() - timedelta(days=30)
    times = _spread(size, ended - timedelta(minutes=1), timedelta(minutes=1))
    await _files_with_uploads(db, seeded, [_file(seeded.account_id, at, top + 1 + place)
                                           for place, at in enumerate(times)])
    await _finish_files(db, seeded, top + size)


async def _hot_file(db: Db, seeded: Seeded, size: int) -> None:
    first = utcnow() - timedelta(days=60)
    seeded.add_log(
        _entry(seeded, seeded.busy_file, "page" if place % 5 else "view", at,
               viewerEmail=f"reader{place % 7}@client.example", ip="203.0.113.8",
               **({"page": 1 + place % 3} if place % 5 else {}),
               **({"roomId": seeded.room_id} if place % 4 == 0 else {}))
        for place, at in enumerate(_bursts(size, first, timedelta(days=3))))


async def _deleted(db: Db, seeded: Seeded, size: int, top: int) -> None:
    """`size` files over the year, then every other one deleted within ten minutes."""
    now = utcnow()
    files = [_file(seeded.account_id, at, top + 1 + place) for place, at in
             enumerate(_spread(size, now - YEAR, YEAR - timedelta(days=10)))]
    gone, kept = files[::2], files[1::2]
    await _files_with_uploads(db, seeded, kept)
    deleted_at = _spread(len(gone), now - timedelta(days=7), timedelta(minutes=10))
    await _gone(db, seeded, list(zip(gone, deleted_at, strict=True)), deleted_at)
    await _finish_files(db, seeded, top + size)


async def _gone(db: Db, seeded: Seeded, deleted: list[tuple[dict[str, Any], datetime]],
                delivered: list[datetime]) -> None:
    """Files deleted (each with its time) as a finished deletion leaves them: no record, their
    `upload` and `delete` entries, and a `file.deleted` delivery at each of `delivered`."""
    seeded.add_log(_upload(seeded, doc) for doc, _ in deleted)
    # Random ids, as vaultd writes them: the audit catch-up's walk splits the log by `_id`
    # windows (`id_ranges`), and half a million ids sharing a prefix fell in one window, read
    # whole (a 10^6 shape's database held for minutes, vaultd's rounds failing).
    seeded.add_log(_entry(seeded, doc["_id"], "delete", at,
                          actor={"kind": "key", "id": seeded.key_id, "label": ""})
                   for doc, at in deleted)
    numbered = await db.number_counters.find_one(
        {"_id": delivery_numbers.scope(seeded.endpoint_id)})
    await _deliveries(db, seeded, "file.deleted", delivered,
                      int(numbered["seq"]) if numbered else 0)


async def _link_bursts(db: Db, seeded: Seeded, size: int) -> None:
    """`size` links in BURSTS bursts, one every five days, each burst on one of LINK_FILES
    files in turn (the busiest first); a link lives 30 days."""
    others = await db.files.find({"accountId": seeded.account_id,
                                  "_id": {"$ne": seeded.busy_file}}, {"_id": 1}
                                 ).to_list(LINK_FILES - 1)
    targets = [seeded.busy_file, *(doc["_id"] for doc in others)]
    first = utcnow() - timedelta(days=5 * BURSTS - 2)
    by_file: dict[str, list[dict[str, Any]]] = {target: [] for target in targets}
    busy = await db.files.find_one({"_id": seeded.busy_file}, {"linkSeq": 1})
    numbers = {target: 0 for target in targets}
    numbers[seeded.busy_file] = int(busy["linkSeq"]) if busy else 0
    size_of_burst = -(-size // BURSTS)
    for place, at in enumerate(_bursts(size, first, timedelta(days=5))):
        target = targets[(place // size_of_burst) % len(targets)]
        numbers[target] += 1
        by_file[target].append(_link(seeded, target, at, numbers[target], timedelta(days=30)))
    await _finish_links(db, seeded, by_file)


async def _mixed(db: Db, seeded: Seeded, size: int, top: int, seed: int) -> None:
    """`size` records drawn from `seed` (`scale_shape_mixed.draw`), written as the services
    write them."""
    busy = await db.files.find_one({"_id": seeded.busy_file}, {"linkSeq": 1})
    seeded.plan, drawn = mixed.draw(
        seed, size, {"_id": seeded.busy_file, **(busy or {})}, top,
        lambda at, seq: _file(seeded.account_id, at, seq),
        lambda file_id, at, seq, life: _link(seeded, file_id, at, seq, life))
    await _files_with_uploads(db, seeded, drawn.files)
    await _gone(db, seeded, drawn.deleted, [at for _, at in drawn.deleted if mixed.recent(at)])
    seeded.add_log(_entry(seeded, file_id, "page", at, viewerEmail="kim@client.example",
                          ip="203.0.113.7", page=1, **({"roomId": seeded.room_id} if room else {}))
                   for file_id, at, room in drawn.views)
    # (a file with no link keeps what `_file` wrote, as an import's files do)
    await _finish_links(db, seeded, {file_id: links for file_id, links in drawn.links.items()
                                     if links or file_id == seeded.busy_file})
    await _finish_files(db, seeded, drawn.top)


async def _finish_links(db: Db, seeded: Seeded, by_file: dict[str, list[dict[str, Any]]]
                        ) -> None:
    """Inserts each file's new links and sets the counters a link's creation keeps (numbers,
    totals, the live count as of a sweep now), then the account's live count from every
    link of the account."""
    now = utcnow()
    for file_id, links in by_file.items():
        seeded.count("links", await seeded.loader.insert(db, "links", links))
        total = await db.raw("links").count_documents({"fileId": file_id})
        live = await db.raw("links").count_documents(
            {"fileId": file_id, "revoked": False, "expiresAt": {"$gt": now}})
        top = max([int(link["seq"]) for link in links], default=0)
        await db.files.update_one({"_id": file_id}, {
            "$max": {"linkSeq": top},
            "$set": {"linkTotal": total, "linkCount": {"live": live, "sweptAt": now}}})
    live_links = await db.raw("links").count_documents(
        {"accountId": seeded.account_id, "revoked": False, "expiresAt": {"$gt": now}})
    await db.accounts.update_one({"_id": seeded.account_id}, {"$set": {
        "linkCount": {"live": live_links, "sweptAt": now}}})


async def _finish_files(db: Db, seeded: Seeded, top: int) -> None:
    """The usage an upload (and a deletion) keeps, and the account's file number."""
    await db.accounts.update_one({"_id": seeded.account_id}, {"$set": {
        "createdAt": utcnow() - YEAR - timedelta(days=3),
        "usage.documents": seeded.live_files, "usage.storageBytes": 1000 * seeded.live_files,
        "fileSeq": top}})
