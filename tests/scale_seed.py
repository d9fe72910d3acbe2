"""One account's year, written straight as the services write it (the same record shapes, the
counters they keep), fast enough for 10^4 in a test and 10^6 in `bench.scale`.

The big account has `files` files spread over a year, its busiest file (the oldest) `entries`
access-log entries and `links` links (half expired, none revoked), all spread over the year.
Its log is written unnumbered, as a tool writes entries with older times, unless asked for
`numbered` (`tests.seeded_log`: as vaultd's rounds leave its own log; the vaultd must be
running, since the entries wait for its numbering horizon to pass them).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tests import seeded_log
from vaultd.db import Db
from vaultd.secrets import digest, new_token
from vaultd.services.accounts import accounts, api_keys, link_shards
from vaultd.timefmt import utcnow

YEAR = timedelta(days=365)
BATCH = 2000  # documents per insert_many: each one well under a second on the embedded DB
ACTIONS = ("view", "page", "page", "page", "download")


@dataclass
class Seeded:
    account_id: str
    key: str
    busy_file: str
    live_token: str  # a live link of the busy file
    expired_links: int
    live_links: int


def _spread(index: int, total: int, start: datetime, span: timedelta) -> datetime:
    return start + span * (index / max(total, 1))


async def _insert(db: Db, name: str, docs: list[dict[str, Any]]) -> None:
    for first in range(0, len(docs), BATCH):
        await db.raw(name).insert_many(docs[first:first + BATCH], ordered=False)


def _file(account_id: str, at: datetime, seq: int = 1) -> dict[str, Any]:
    """A stored file, `seq` its number in the account (oldest 1), as an upload numbers it."""
    file_id = str(uuid.uuid4())
    return {"_id": file_id, "accountId": account_id, "name": f"{file_id[:8]}.pdf",
            "kind": "delivery", "contentType": "application/pdf", "size": 1000, "pageCount": 3,
            "createdAt": at, "state": "stored", "seq": seq,
            "blob": {"name": f"seeded-{file_id}", "size": 1000, "key": {}},
            "linkCount": {"live": 0, "sweptAt": at}}


async def seed_account(db: Db, name: str, *, files: int, entries: int, links: int,
                       numbered: bool = False) -> Seeded:
    account = await accounts.create_account(db, name, "business")  # no document limit
    _, key = await api_keys.create_key(db, account.id)
    now = utcnow()
    start = now - YEAR
    docs = [_file(account.id, _spread(i, files, start, YEAR - timedelta(hours=1)), i + 1)
            for i in range(max(files, 1))]
    busy = docs[0]  # the oldest: its log spans the year
    await _insert(db, "files", docs)
    expired, live = links // 2, links - links // 2
    token = await _seed_links(db, account.id, busy["_id"], expired, live, busy["createdAt"])
    log = _entries(account.id, busy["_id"], entries, busy["createdAt"])
    if numbered:
        await seeded_log.write_log(db, account.id, log,
                                   lambda name, docs: _insert(db, name, list(docs)))
    else:
        await _insert(db, "access_log", log)
    counted = {"live": live + 1, "sweptAt": now}
    await db.accounts.update_one({"_id": account.id}, {"$set": {
        "createdAt": start - timedelta(days=1), "usage.documents": len(docs),
        "usage.storageBytes": 1000 * len(docs), "linkCount": counted, "fileSeq": len(docs)}})
    await db.files.update_one({"_id": busy["_id"]}, {"$set": {"linkCount": counted}})
    return Seeded(account.id, key, busy["_id"], token, expired, live + 1)


def _link(account_id: str, file_id: str, created: datetime, expires: datetime,
          token: str | None = None) -> dict[str, Any]:
    link_id = str(uuid.uuid4())
    return {"_id": link_id, "hash": digest(token or new_token()),
            "accountId": account_id, "fileId": file_id, "viewerEmail": "kim@example.com",
            "viewerName": "Kim", "createdAt": created, "expiresAt": expires, "revoked": False,
            "shard": link_shards.shard_of_id(link_id),  # unnumbered: as the start-up pass gives
            "listed": "active"}  # the expired ones not yet marked (services.links.link_states)


async def _seed_links(db: Db, account_id: str, file_id: str, expired: int, live: int,
                      since: datetime) -> str:
    now = utcnow()
    docs = [_link(account_id, file_id, since, _spread(i, expired, since, now - since
                                                      - timedelta(minutes=5)))
            for i in range(expired)]
    docs += [_link(account_id, file_id, now, now + timedelta(days=1 + i % 300))
             for i in range(live)]
    token = new_token()
    docs.append(_link(account_id, file_id, now, now + timedelta(days=30), token))
    for number, doc in enumerate(docs, start=1):  # numbered in their file, as links are made
        doc["seq"] = number
    await _insert(db, "links", docs)
    await db.files.update_one({"_id": file_id},
                              {"$set": {"linkSeq": len(docs), "linkTotal": len(docs)}})
    return token


def _entries(account_id: str, file_id: str, entries: int,
             since: datetime) -> list[dict[str, Any]]:
    span = utcnow() - since - timedelta(seconds=5)
    return [{"_id": str(uuid.uuid4()), "accountId": account_id, "fileId": file_id,
             "action": ACTIONS[i % len(ACTIONS)], "at": _spread(i, entries, since, span),
             "viewerEmail": "kim@example.com", "ip": "203.0.113.7", **_page(i)}
            for i in range(entries)]


def _page(index: int) -> dict[str, Any]:
    return {"page": 1 + index % 3} if ACTIONS[index % len(ACTIONS)] == "page" else {}
