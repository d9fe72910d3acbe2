"""The sequencer: gives every new log entry its index and extends its account's tree.

Off the page path: the page path's insert stays one command, and this loop, in whichever
vaultd process holds the lease (`lease`), reads what arrived since its last round. A round:

1. moves each source's horizon to `audit.late_arrival_seconds` before its clock and sets the
   collection's fence there (`log_fence`): an entry stamped before it that has not landed is
   refused, and its writer stamps it again, ahead of it. So one read by time from the previous
   horizon on is the last look at what is stamped before the new one, and also finds the new
   entries, sequenced at once; only those stamped after the horizon are read again next round
   (an entry stamped by a process's clock may land after a later one). What it already
   sequenced is dropped (kept in memory until the horizon passes it). Where that stretch is
   not known to be small (a first round, a last look more than ten minutes back), the round
   catches up instead (`catch_up`): it plans the stretch up to the horizon as time windows of
   at most `READ_BATCH` entries, and this round and the next read them in order, a bounded
   number a round, the cursors saved where each stopped; the log's numbering still follows
   the fence's horizon;
2. claims the trees of the accounts it found for its lease epoch; where an earlier holder may
   have committed meanwhile (a tree claimed now, or after a failed round), looks the entries up
   in the blocks (`blocks`) and drops those already committed: nothing is sequenced twice;
3. per account, in (time, source key) order: appends the new leaves to the account's blocks
   (one command for all), writes the nodes of level 8 and up they complete (another), then
   commits size, root and compact range in one conditional write on the size it started from
   (`tree_writes` plans and writes them);
4. makes the checkpoints that are due.

After a full round that left nothing behind, the next rounds only look for new entries, one
read a source, until one is found (`quiet`).

Killed at any instant, a round leaves either the previous committed tree or the new one; its
leftovers past the committed size are overwritten by the next round before it commits, so no
index is skipped, repeated or reordered.

Extending it: a new source is a (kind, collection) of `SOURCES`, with an index on `at`, one on
(`_id`, `at`) for the catch-up's walk, and random hex ids; every read of a round stays a closed
range on an index, or a read of what arrived since the last look.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure, PyMongoError

from vaultd.db import Db
from vaultd.records.audit import AuditTreeDoc, SourceKind
from vaultd.services.audit import blocks, catch_up, checkpoints, lease, leaves, merkle, tree_writes
from vaultd.services.audit.blocks import BlockFenced, find_in
from vaultd.services.audit.catch_up import READ_BATCH, Backlog
from vaultd.services.audit.keys import Signer
from vaultd.services.audit.quiet import Numbering, QuietWatch
from vaultd.services.audit.tree_writes import LeaseLost, NewEntry, Plan, by_account
from vaultd.services.common import log_fence
from vaultd.services.common.periodic import cancel_and_wait
from vaultd.timefmt import utcnow

if TYPE_CHECKING:  # its SDK is an optional install, imported only where the copy is set
    from vaultd.services.audit.lock_copy import LockCopier

log = logging.getLogger("vaultd.audit")
DUPLICATE_KEY = 11000
UNAUTHORIZED = 13
SOURCES: tuple[tuple[SourceKind, str], ...] = (("access", "access_log"), ("activity", "activity"))
LOOKED = ".looked"  # a cursor's companion: how far behind it the last look has reached
# What a round reads of a source: kind, collection, start, horizon, cursor (`Sequencer._read`).
Stretch = tuple[SourceKind, str, datetime | None, datetime, datetime | None]


@dataclass(frozen=True)
class SequencerConfig:
    merge_delay_seconds: float
    late_arrival_seconds: float
    lease_seconds: float
    checkpoint_every_entries: int
    checkpoint_every_seconds: float
    origin: str
    copy_checkpoints: bool = False  # each marked for the locked copy in S3 (lock_copy)
    # Without the fence (a database user that may not run collMod), how far behind its last
    # look each round reads again for entries that landed late (`Sequencer._unfenced`).
    unfenced_look_back_seconds: float = 30.0


@dataclass
class Sequencer:
    db: Db
    signer: Callable[[], Awaitable[Signer]]
    config: SequencerConfig
    holder: str
    seen: dict[str, datetime] = field(default_factory=dict)  # source keys sequenced, by time
    epoch: int = 0
    pending: set[str] = field(default_factory=set)  # accounts with a checkpoint to make
    # After a take-over or a failed round, what was committed may not be in `seen`: the next
    # round looks every entry it found up in the blocks before it writes.
    dirty: bool = True
    copier: LockCopier | None = None  # the checkpoints' locked copy, its own task (S3's SDK)
    unfenced: set[str] = field(default_factory=set)  # sources whose fence could not be set
    numbering: Numbering | None = None  # the log's (older_log_numbering.LogNumbering)
    backlog: Backlog | None = None  # a catch-up under way (`catch_up`)
    # A catch-up planned after a take-over or a failure: its entries, and those of the round
    # after it, are looked up in the blocks before they are written, as `dirty` ones are.
    unsure: bool = False
    horizons: dict[str, datetime] = field(default_factory=dict)  # each source's fence, this round
    watch: QuietWatch = field(default_factory=QuietWatch)  # whether a round may be quiet
    _task: asyncio.Task[None] | None = None

    async def round(self) -> int:
        """One round; the number of entries it sequenced (0 without the lease, or quiet)."""
        if await self.watch.quiet(self.db, self.holder, self.config.lease_seconds, self.seen):
            await self._checkpoints()
            return 0
        self.watch.disarm()
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
        try:
            entries = await self._read(cursors)
        except LeaseLost:  # taken over while planning a catch-up
            self.dirty = True
            return 0
        try:
            sequenced = await self._extend(by_account(entries))
        except (LeaseLost, BlockFenced, DuplicateKeyError, BulkWriteError):
            sequenced, self.dirty = 0, True  # the next round checks and reads it again
        if not self.dirty:
            await lease.save_cursors(self.db, self.holder, self.epoch, cursors)
            if self.backlog is not None:
                self.backlog.advance()
            else:
                self.unsure = False
        # Behind the fence's horizon, not the cursors': in a catch-up they trail it by as much
        # as is left to catch up, and every entry stamped before the fence has landed.
        if self.numbering is not None and "access_log" not in self.unfenced:
            await self.numbering(self.horizons["access"])
        await self._checkpoints()
        finished = (not (self.dirty or self.unsure or self.unfenced) and self.backlog is None
                    and (self.numbering is None or self.numbering.settled))
        self.watch.settled(epoch=self.epoch, until=held["until"], finished=finished, sources={
            collection: (kind, cursors.get(kind), self.horizons[kind])
            for kind, collection in SOURCES})
        return sequenced

    async def _read(self, cursors: dict[str, datetime]) -> list[NewEntry]:
        now = utcnow()
        late = timedelta(seconds=self.config.late_arrival_seconds)
        fences = await log_fence.horizons(self.db, [collection for _, collection in SOURCES])
        stretches: list[Stretch] = []
        for kind, collection in SOURCES:
            cursor = cursors.get(kind)
            looked = cursors.get(kind + LOOKED, cursor - late if cursor is not None else None)
            # The horizon: what is stamped before it is final once the fence stands there
            # (a late writer stamps again, ahead of it), so this round's read is its last look.
            horizon = max(now - late, looked) if looked is not None else now - late
            start = await self._fence(collection, fences.get(collection), looked, horizon)
            self.horizons[kind] = horizon
            stretches.append((kind, collection, start, horizon, cursor))
        backlog = await self._planned(stretches)
        windows = backlog.take(catch_up.ROUND_CAP) if backlog is not None else []
        # A catch-up's last windows, then what is newer, unless what arrived during the
        # catch-up is itself a long stretch: that is planned again (`catch_up.outrun`).
        finishing = backlog is not None and backlog.finishing() and not catch_up.outrun(
            backlog, [stretch[3] for stretch in stretches])
        found: list[NewEntry] = []
        keep_from = now
        for kind, collection, looked, horizon, newer in stretches:
            start, cursor, ranges = looked, newer, []
            if backlog is not None:  # its windows, then (once they are all read) what is newer
                start = cursor = backlog.looked(kind)
                ranges = backlog.queries(kind, windows)
            if backlog is None or finishing:
                ranges += self._ranges(start, horizon, cursor)
            newest = newer  # the cursor: the newest entry read (a later read starts there)
            async for doc in self._arrived(collection, ranges):
                newest = doc["at"] if newest is None else max(newest, doc["at"])
                key = leaves.source_key(kind, doc["_id"])
                if key not in self.seen:
                    found.append(NewEntry(doc["at"], key, doc["accountId"],
                                          tree_writes.leaf(kind, doc)))
            cursors[kind + LOOKED] = horizon
            if backlog is not None:  # read whole up to the end of its last window (at least)
                newest = newest or backlog.looked(kind)
                if not finishing:
                    cursors[kind + LOOKED] = backlog.looked(kind)
            if newest is not None:
                cursors[kind] = min(newest, now)  # a clock ahead must not skip the others
            # Where the next read starts at the earliest: what was sequenced before it cannot
            # come back, and need not be remembered.
            bound = min(cursors[kind + LOOKED], cursors.get(kind) or cursors[kind + LOOKED])
            if collection in self.unfenced:
                bound -= timedelta(seconds=self.config.unfenced_look_back_seconds)
            keep_from = min(keep_from, bound)
        self._forget_before(keep_from)
        return sorted(found, key=lambda entry: (entry.at, entry.key))

    async def _planned(self, stretches: list[Stretch]) -> Backlog | None:
        """The catch-up this round reads (`catch_up`): the one under way; or one planned now,
        where a stretch is long or a failure cut one short (from the saved cursors)."""
        going = self.backlog is not None and not self.backlog.used_up()
        if self.dirty or not going:
            self.backlog = None
        if self.backlog is None and (
                (going and self.dirty) or catch_up.needed([(s[2], s[3]) for s in stretches])):
            self.backlog = await catch_up.plan(
                self.db, [(kind, collection, start) for kind, collection, start, *_ in stretches],
                min(stretch[3] for stretch in stretches),
                catch_up.Renewal(self.holder, self.epoch, self.config.lease_seconds))
            self.unsure = self.unsure or self.dirty
        return self.backlog

    async def _fence(self, collection: str, fenced: datetime | None, looked: datetime | None,
                     horizon: datetime) -> datetime | None:
        """Refuses entries stamped before `horizon` (log_fence) before the stretch up to it is
        read a last time: one that has not landed by now is stamped again, ahead of it, and
        read as new. Where the collection's fence stands below where this holder's last look
        ended (a holder that lost the lease set it since), entries may have landed behind the
        look: the stretch is read again from the fence, and looked up as after a take-over.
        Where the database user may not set it, from further back (`_unfenced`). Where this
        round's last look starts (None: the whole collection, a first round)."""
        start = looked
        if fenced is None or fenced < horizon:
            try:
                await log_fence.raise_horizon(self.db, collection, horizon)
                self.unfenced.discard(collection)
            except OperationFailure as error:
                if error.code != UNAUTHORIZED:
                    raise
                start = self._unfenced(collection, looked)
        if fenced is not None and start is not None and fenced < start:
            self.dirty = True
            return fenced
        return start

    def _unfenced(self, collection: str, looked: datetime | None) -> datetime | None:
        """Where a round reads from when the fence could not be set (a database user without
        `collMod`): a late entry can land behind any look, so the window behind it is read
        again, and what was not sequenced is, in arrival order; one stalled longer is lost, as
        the operator is told. On the first such round `seen` may lack what is in the window:
        it is looked up, as after a take-over."""
        window = self.config.unfenced_look_back_seconds
        log.warning("audit log fence on %s not set (the database user may not run collMod): "
                    "each round reads the %g s behind its last look again; an entry landing "
                    "later than that is not sequenced", collection, window)
        if collection not in self.unfenced:
            self.unfenced.add(collection)
            self.dirty = True
        return None if looked is None else looked - timedelta(seconds=window)

    async def _arrived(self, collection: str, ranges: list[dict[str, Any]]) -> AsyncIterator[Any]:
        raw = self.db.raw(collection)
        for query in ranges:
            cursor = raw.find(query, batch_size=READ_BATCH)
            # A batch at a time: awaiting the cursor for each of 5,000 records costs the
            # event loop more than decoding them.
            while batch := await cursor.to_list(READ_BATCH):
                for doc in batch:
                    yield doc

    def _ranges(self, start: datetime | None, horizon: datetime,
                cursor: datetime | None) -> list[dict[str, Any]]:
        """What a round reads of a source, each record whole and once: the stretch from `start`
        to the horizon (its last look) and the new records from the cursor on. Where the
        cursor is not past the horizon (a horizon that trails the clock by less than rounds
        are apart), one range. Where it is past, the records between them wait for their last
        look. From the cursor where it is behind the horizon: a record without the fence's
        mark stamped before the horizon is read if it lands in time for its first read."""
        if cursor is None or start is None:
            return [{}]  # nothing read yet: all there is
        if cursor <= horizon or self.dirty:
            return [{"at": {"$gte": min(start, cursor)}}]
        stretch = [{"at": {"$gte": start, "$lt": horizon}}] if start < horizon else []
        return [*stretch, {"at": {"$gte": cursor}}]

    def _forget_before(self, moment: datetime) -> None:
        self.seen = {key: at for key, at in self.seen.items() if at >= moment}

    async def _claim(self, account_id: str, tree: AuditTreeDoc | None,
                     ) -> tuple[AuditTreeDoc, bool]:
        """The account's tree, claimed for this lease epoch before anything is written; and
        whether it was claimed now (an earlier holder may have committed to it meanwhile)."""
        if tree is None:
            tree = {"_id": account_id, "size": 0, "root": merkle.EMPTY_ROOT, "frontier": [],
                    "checkpointSize": 0, "checkpointAt": None, "epoch": self.epoch}
            try:
                await self.db.audit_trees.insert_one(tree)
                return tree, False
            except DuplicateKeyError:
                return await self._claim(account_id,
                                         await self.db.audit_trees.find_one({"_id": account_id}))
        epoch = tree["epoch"]
        if epoch > self.epoch:
            raise LeaseLost(account_id)
        if epoch < self.epoch:  # claimed before anything is written: the old holder's
            claimed = await self.db.audit_trees.update_one(  # commit can no longer land
                {"_id": account_id, "size": tree["size"], "epoch": epoch},
                {"$set": {"epoch": self.epoch}})
            if claimed.modified_count != 1:
                raise LeaseLost(account_id)
            return {**tree, "epoch": self.epoch}, True
        return tree, False

    async def _trees(self, by_account: dict[str, list[NewEntry]],
                     ) -> tuple[dict[str, AuditTreeDoc], set[str]]:
        """Every account's tree, claimed; and which of the new entries an earlier holder
        committed (looked up after the claim, so none can be committed after the look)."""
        found = {doc["_id"]: doc async for doc in find_in(self.db.audit_trees, list(by_account))}
        trees: dict[str, AuditTreeDoc] = {}
        unsure: list[str] = []
        for account_id, entries in by_account.items():
            trees[account_id], claimed = await self._claim(account_id, found.get(account_id))
            if claimed or self.dirty or self.unsure:
                unsure.extend(entry.key for entry in entries)
        if not unsure:
            return trees, set()
        sizes = {account_id: tree["size"] for account_id, tree in trees.items()}
        return trees, set(await blocks.committed_indexes(self.db, unsure, sizes))

    async def _extend(self, by_account: dict[str, list[NewEntry]]) -> int:
        """Every account's new leaves in one write (a piece per block) and the nodes they
        complete in another, then one conditional commit per account."""
        trees, committed_elsewhere = await self._trees(by_account)
        plans = []
        for account_id, entries in by_account.items():
            for entry in entries:
                if entry.key in committed_elsewhere:
                    self.seen[entry.key] = entry.at
            batch = [entry for entry in entries if entry.key not in committed_elsewhere]
            if batch:
                plans.append(tree_writes.plan(trees[account_id], batch))
        if plans:
            # Both written before any commit (the commit is the fence), so their order does
            # not matter: sent together, one's encoding overlaps the database's work on the other.
            written = await asyncio.gather(
                blocks.write(self.db, [(plan.tree, plan.pieces) for plan in plans], self.epoch),
                self._write_nodes([(plan.tree["_id"], *node) for plan in plans
                                   for node in plan.nodes]), return_exceptions=True)
            for outcome in written:
                if isinstance(outcome, BaseException):
                    raise outcome
        self.dirty = False
        if plans:
            await self._commit(plans)
        for plan in plans:
            for entry in plan.batch:
                self.seen[entry.key] = entry.at
        return sum(len(plan.batch) for plan in plans)

    async def _commit(self, plans: list[Plan]) -> None:
        """Every account's tree moved in one conditional command (`tree_writes.commit`); a
        miss raises LeaseLost, and the next round looks its entries up (`dirty`)."""
        self.pending.update(plan.tree["_id"] for plan in plans)  # checked before signing
        await tree_writes.commit(self.db, plans, self.epoch)

    async def _write_nodes(self, closed: list[tuple[str, int, int, bytes]]) -> None:
        await tree_writes.write_nodes(self.db, closed, self.epoch)

    async def _checkpoints(self) -> None:
        if self.pending:
            config = self.config
            self.pending -= await checkpoints.make_due(
                self.db, sorted(self.pending), self.signer, config.checkpoint_every_entries,
                config.checkpoint_every_seconds, config.origin, copy=config.copy_checkpoints)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())
        if self.copier is not None:
            self.copier.start()

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
        if self.copier is not None:
            await self.copier.stop()
        if self._task is None:
            return
        await cancel_and_wait(self._task)
        with contextlib.suppress(PyMongoError):
            await lease.release(self.db, self.holder)

