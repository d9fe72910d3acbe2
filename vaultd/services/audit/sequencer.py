"""The sequencer: gives every new log entry its index and extends its account's tree.

Off the page path: the page path's insert stays one command, and this loop, in whichever
vaultd process holds the lease (`lease`), reads what arrived since its last round. A round:

1. reads each source (`access_log`, `activity`) by time from its cursor less
   `audit.late_arrival_seconds` (an entry stamped by a process's clock may land after a later
   one), and drops what it already sequenced: in memory, then `audit_leaves` by `_id`;
2. per account, in (time, source key) order: claims the tree for its lease epoch, deletes any
   leaf a killed round left past the committed size, inserts the new leaves (their `_id` is the
   source key: nothing is ever sequenced twice), writes the nodes they complete, then commits
   size, root and compact range in one conditional write on the size it started from;
3. makes the checkpoints that are due.

Killed at any instant, a round leaves either the previous committed tree or the new one; its
leftovers past the committed size are deleted or overwritten by the next round, so no index is
skipped, repeated or reordered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pymongo.errors import BulkWriteError, DuplicateKeyError, PyMongoError

from vaultd.db import Db
from vaultd.records.audit import AuditNodeDoc, AuditTreeDoc, SourceKind
from vaultd.services.audit import checkpoints, lease, leaves, merkle
from vaultd.services.audit.keys import Signer
from vaultd.services.audit.tree_store import find_in, node_id
from vaultd.timefmt import utcnow

log = logging.getLogger("vaultd.audit")
DUPLICATE_KEY = 11000
SOURCES: tuple[tuple[SourceKind, str], ...] = (("access", "access_log"), ("activity", "activity"))


class LeaseLost(Exception):
    """A newer holder has written: this round stops, and commits nothing."""


@dataclass(frozen=True)
class SequencerConfig:
    merge_delay_seconds: float
    late_arrival_seconds: float
    lease_seconds: float
    checkpoint_every_entries: int
    checkpoint_every_seconds: float
    origin: str


@dataclass(frozen=True)
class NewEntry:
    at: datetime
    key: str
    account_id: str
    leaf: bytes


@dataclass
class Sequencer:
    db: Db
    signer: Callable[[], Awaitable[Signer]]
    config: SequencerConfig
    holder: str
    seen: dict[str, datetime] = field(default_factory=dict)  # source keys sequenced, by time
    epoch: int = 0
    pending: set[str] = field(default_factory=set)  # accounts with a checkpoint to make
    # A round may have left leaves past a committed size (a killed holder's, or this one's
    # failed round): the next round deletes them before it writes.
    dirty: bool = True
    _task: asyncio.Task[None] | None = None

    async def round(self) -> int:
        """One round; the number of entries it sequenced (0 without the lease)."""
        held = await lease.take(self.db, self.holder, self.config.lease_seconds)
        if held is None:
            return 0
        if held["epoch"] != self.epoch:  # taken over: what this process saw may be stale
            self.seen.clear()
            self.dirty = True
            self.epoch = held["epoch"]
            self.pending = {tree["_id"] async for tree in self.db.audit_trees.find(
                {}, {"_id": 1, "size": 1, "checkpointSize": 1})
                if tree["size"] > tree["checkpointSize"]}
        cursors = dict(held.get("cursors", {}))
        entries = await self._read(cursors)
        try:
            sequenced = await self._extend(_by_account(entries))
        except (LeaseLost, DuplicateKeyError, BulkWriteError):
            sequenced, self.dirty = 0, True  # the next round cleans up and reads it again
        if not self.dirty:
            await lease.save_cursors(self.db, self.holder, self.epoch, cursors)
        await self._checkpoints()
        return sequenced

    async def _read(self, cursors: dict[str, datetime]) -> list[NewEntry]:
        now = utcnow()
        late = timedelta(seconds=self.config.late_arrival_seconds)
        found: list[NewEntry] = []
        for kind, collection in SOURCES:
            cursor = cursors.get(kind)
            query: dict[str, Any] = {"at": {"$gte": cursor - late}} if cursor else {}
            newest = cursor
            # One range read on the `at` index (a second `$in` read of the unseen ones cost
            # more than the window: SecantusDB's `$in` grows faster than its list).
            async for doc in self.db.raw(collection).find(query):
                newest = doc["at"] if newest is None else max(newest, doc["at"])
                key = leaves.source_key(kind, doc["_id"])
                if key not in self.seen:
                    found.append(NewEntry(doc["at"], key, doc["accountId"], _leaf(kind, doc)))
            if newest is not None:
                cursors[kind] = min(newest, now)  # a clock ahead must not skip the others
        self._forget_before(min(cursors.values(), default=now) - late)
        return await self._unsequenced(found)

    def _forget_before(self, moment: datetime) -> None:
        self.seen = {key: at for key, at in self.seen.items() if at >= moment}

    async def _unsequenced(self, found: list[NewEntry]) -> list[NewEntry]:
        """Drops the entries an earlier holder sequenced (committed leaves only)."""
        if not found:
            return []
        keys = [entry.key for entry in found]
        leaves_found = {doc["_id"]: doc async for doc in find_in(self.db.audit_leaves, keys)}
        sizes: dict[str, int] = {}
        for doc in leaves_found.values():
            if doc["accountId"] not in sizes:
                tree = await self.db.audit_trees.find_one({"_id": doc["accountId"]}, {"size": 1})
                sizes[doc["accountId"]] = tree["size"] if tree else 0
        fresh = []
        for entry in found:
            leaf = leaves_found.get(entry.key)
            if leaf is not None and leaf["index"] < sizes[leaf["accountId"]]:
                self.seen[entry.key] = entry.at
            else:
                fresh.append(entry)
        return sorted(fresh, key=lambda entry: (entry.at, entry.key))

    async def _tree(self, account_id: str) -> AuditTreeDoc:
        tree = await self.db.audit_trees.find_one({"_id": account_id})
        if tree is None:
            tree = {"_id": account_id, "size": 0, "root": merkle.EMPTY_ROOT, "frontier": [],
                    "checkpointSize": 0, "checkpointAt": None, "epoch": self.epoch}
            try:
                await self.db.audit_trees.insert_one(tree)
                return tree
            except DuplicateKeyError:
                return await self._tree(account_id)
        epoch = tree["epoch"]
        if epoch > self.epoch:
            raise LeaseLost(account_id)
        if epoch < self.epoch:  # claimed before anything is written: the old holder's
            claimed = await self.db.audit_trees.update_one(  # commit can no longer land
                {"_id": account_id, "size": tree["size"], "epoch": epoch},
                {"$set": {"epoch": self.epoch}})
            if claimed.modified_count != 1:
                raise LeaseLost(account_id)
        return tree

    async def _extend(self, by_account: dict[str, list[NewEntry]]) -> int:
        """Every account's new leaves and nodes in one write each, then one conditional
        commit per account."""
        plans = []
        for account_id, batch in by_account.items():
            tree = await self._tree(account_id)
            size = tree["size"]
            frontier = [(int(level), bytes(digest)) for level, digest in tree["frontier"]]
            closed: list[tuple[int, int, bytes]] = []
            for offset, entry in enumerate(batch):
                merkle.append(frontier, size + offset, merkle.leaf_hash(entry.leaf), closed)
            plans.append((account_id, batch, size, frontier, closed))
        if self.dirty:
            for account_id, _, size, _, _ in plans:
                await self.db.audit_leaves.delete_many({"accountId": account_id,
                                                        "index": {"$gte": size}})
        if plans:
            # Both written before any commit (the commit is the fence), so their order does
            # not matter: sent together, one's encoding overlaps the database's work on the other.
            written = await asyncio.gather(
                self.db.audit_leaves.insert_many(
                    [{"_id": entry.key, "accountId": account_id, "index": size + offset}
                     for account_id, batch, size, _, _ in plans
                     for offset, entry in enumerate(batch)], ordered=True),
                self._write_nodes([(account_id, *node) for account_id, _, _, _, closed in plans
                                   for node in closed]),
                return_exceptions=True)
            for outcome in written:
                if isinstance(outcome, BaseException):
                    raise outcome
        self.dirty = False
        for account_id, batch, size, frontier, _ in plans:
            await self._commit(account_id, size, len(batch), frontier)
            for entry in batch:
                self.seen[entry.key] = entry.at
        return sum(len(batch) for _, batch, _, _, _ in plans)

    async def _commit(self, account_id: str, size: int, added: int,
                      frontier: list[tuple[int, bytes]]) -> None:
        committed = await self.db.audit_trees.update_one(
            {"_id": account_id, "size": size, "epoch": self.epoch},
            {"$set": {"size": size + added, "root": merkle.frontier_root(frontier),
                      "frontier": [[level, digest] for level, digest in frontier]}})
        if committed.modified_count != 1:
            raise LeaseLost(account_id)
        self.pending.add(account_id)

    async def _write_nodes(self, closed: list[tuple[str, int, int, bytes]]) -> None:
        docs: list[AuditNodeDoc] = [{"_id": node_id(account_id, level, index), "hash": digest,
                                     "epoch": self.epoch}
                                    for account_id, level, index, digest in closed]
        try:
            await self.db.audit_nodes.insert_many(docs, ordered=False)
        except BulkWriteError as error:
            # Nodes a killed round left past the committed size: overwritten, unless a newer
            # holder wrote them (its epoch is above ours: the upsert's insert then collides).
            errors = error.details["writeErrors"]
            if any(item.get("code") != DUPLICATE_KEY for item in errors):
                raise
            for item in errors:
                doc = docs[item["index"]]
                await self.db.audit_nodes.replace_one(
                    {"_id": doc["_id"], "epoch": {"$lte": self.epoch}}, doc, upsert=True)

    async def _checkpoints(self) -> None:
        if not self.pending:
            return
        now, signer = utcnow(), await self.signer()
        for account_id in sorted(self.pending):
            tree = await self.db.audit_trees.find_one({"_id": account_id})
            if tree is None or tree["size"] <= tree["checkpointSize"]:
                self.pending.discard(account_id)
            elif checkpoints.due(tree, self.config.checkpoint_every_entries,
                                 self.config.checkpoint_every_seconds, now):
                await checkpoints.make(self.db, tree, signer, self.config.origin)
                self.pending.discard(account_id)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            try:
                await self.round()
            except PyMongoError:  # the database may be down: the next round retries
                log.warning("audit sequencer round skipped: database unavailable")
            except Exception:
                log.exception("audit sequencer round failed")
            await asyncio.sleep(self.config.merge_delay_seconds)

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        with contextlib.suppress(PyMongoError):
            await lease.release(self.db, self.holder)


def _leaf(kind: SourceKind, doc: Any) -> bytes:
    entry = leaves.access_entry(doc) if kind == "access" else leaves.activity_entry(doc)
    return leaves.encode(kind, doc["_id"], doc["accountId"], entry)


def _by_account(entries: list[NewEntry]) -> dict[str, list[NewEntry]]:
    grouped: dict[str, list[NewEntry]] = {}
    for entry in entries:
        grouped.setdefault(entry.account_id, []).append(entry)
    return grouped
