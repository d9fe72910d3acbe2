"""What a sequencer round writes to its accounts' trees: each account's new leaves planned
after its committed size, the stored nodes they complete, and the commit of every tree in one
conditional command.

The round (`sequencer`) reads and claims; this module plans and writes. The commit is the
fence: leaves and nodes are written first, and a tree's size, root and compact range move only
where the tree is still at the size and lease epoch the plan started from.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pymongo import UpdateOne

from vaultd.db import Db
from vaultd.records.audit import AuditNodeDoc, AuditTreeDoc, SourceKind
from vaultd.services.audit import blocks, leaves, merkle
from vaultd.services.audit.blocks import BLOCK_LEVEL, insert_fenced
from vaultd.services.audit.tree_store import node_id


class LeaseLost(Exception):
    """A newer holder has written: this round stops, and commits nothing."""


@dataclass(frozen=True)
class NewEntry:
    at: datetime
    key: str
    account_id: str
    leaf: bytes


@dataclass(frozen=True)
class Plan:
    """One account's part of a round: its new leaves after `tree`, what they write."""

    tree: AuditTreeDoc  # as committed before
    batch: list[NewEntry]
    frontier: list[tuple[int, bytes]]  # the compact range after them
    nodes: list[tuple[int, int, bytes]]  # the stored nodes they complete (level 8 and up)
    pieces: list[blocks.Segment]


def leaf(kind: SourceKind, doc: Any) -> bytes:
    entry = leaves.access_entry(doc) if kind == "access" else leaves.activity_entry(doc)
    return leaves.encode(kind, doc["_id"], doc["accountId"], entry)


def plan(tree: AuditTreeDoc, batch: list[NewEntry]) -> Plan:
    size = tree["size"]
    frontier = [(int(level), bytes(digest)) for level, digest in tree["frontier"]]
    closed: list[tuple[int, int, bytes]] = []
    hashes = []
    for offset, entry in enumerate(batch):
        hashes.append(merkle.leaf_hash(entry.leaf))
        merkle.append(frontier, size + offset, hashes[-1], closed)
    return Plan(tree, batch, frontier,
                [node for node in closed if node[0] >= BLOCK_LEVEL],
                blocks.segments(tree["_id"], size, [entry.key for entry in batch], hashes))


async def commit(db: Db, plans: list[Plan], epoch: int) -> None:
    """Every account's new size, root and compact range, each conditional on the size it
    started from and the epoch, in one command (one round trip, not one per account).
    Each statement stands alone: where any missed, some may have landed, so the caller ends
    the round as failed and the next one looks its entries up."""
    committed = await db.audit_trees.bulk_write([UpdateOne(
        {"_id": plan.tree["_id"], "size": plan.tree["size"], "epoch": epoch},
        {"$set": {"size": plan.tree["size"] + len(plan.batch),
                  "root": merkle.frontier_root(plan.frontier),
                  "frontier": [[level, digest] for level, digest in plan.frontier],
                  "pieces": blocks.starts_after(plan.tree, plan.pieces)}})
        for plan in plans], ordered=False)
    if committed.modified_count != len(plans):
        raise LeaseLost(f"{len(plans) - committed.modified_count} of {len(plans)} trees")


async def write_nodes(db: Db, closed: list[tuple[str, int, int, bytes]], epoch: int) -> None:
    if not closed:
        return
    docs: list[AuditNodeDoc] = [{"_id": node_id(account_id, level, index), "hash": digest,
                                 "epoch": epoch}
                                for account_id, level, index, digest in closed]
    # Nodes a killed round left past the committed size are overwritten, unless a newer
    # holder wrote them (its epoch is above ours): then BlockFenced ends the round.
    await insert_fenced(db.audit_nodes, docs, epoch)


def by_account(entries: list[NewEntry]) -> dict[str, list[NewEntry]]:
    grouped: dict[str, list[NewEntry]] = {}
    for entry in entries:
        grouped.setdefault(entry.account_id, []).append(entry)
    return grouped
