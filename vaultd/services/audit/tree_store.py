"""One account's tree in the database: its committed state, its nodes, and proofs read from them.

Every complete subtree of 256 leaves or more has its hash stored once, `_id`
`<account>/<level>/<index>`; those below are computed from the leaf hashes of their block
(`blocks`). So a proof reads the O(log n) nodes it is made of and at most three blocks by `_id`
(point reads, in `$in` lists), never a scan, at any size. Nodes and leaves past the committed
size may be left by a killed sequencer: no proof reads them, and the next sequencer overwrites
them before it commits.
"""

from __future__ import annotations

from typing import Any

from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.records.audit import AuditTreeDoc
from vaultd.services.audit import blocks, merkle
from vaultd.services.audit.blocks import BLOCK_LEVEL, find_in

NO_ENTRIES = "the account's audit log has no entries yet"


def node_id(account_id: str, level: int, index: int) -> str:
    return f"{account_id}/{level}/{index}"


async def committed(db: Db, account_id: str) -> AuditTreeDoc:
    tree = await db.audit_trees.find_one({"_id": account_id})
    if tree is None or tree["size"] == 0:
        raise NotFound(NO_ENTRIES)
    return tree


async def read_nodes(db: Db, tree: AuditTreeDoc,
                     keys: set[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
    account_id = tree["_id"]
    stored = {node_id(account_id, level, index): (level, index)
              for level, index in keys if level >= BLOCK_LEVEL}
    found = {stored[doc["_id"]]: bytes(doc["hash"])
             async for doc in find_in(db.audit_nodes, list(stored))}
    if len(found) != len(stored):  # a committed tree has every node below its size
        raise LookupError(f"audit tree of {account_id} is missing nodes")
    low = [(level, index) for level, index in keys if level < BLOCK_LEVEL]
    held = await blocks.read(db, tree, {blocks.block_of(index << level) for level, index in low},
                             keys_too=False)
    for level, index in low:
        block = blocks.block_of(index << level)
        if block not in held:
            raise LookupError(f"audit tree of {account_id} is missing a block")
        found[(level, index)] = blocks.subtree_hash(held[block], block, level, index)
    return found


async def range_hashes(db: Db, tree: AuditTreeDoc, ranges: list[merkle.Range]) -> list[bytes]:
    """The hashes of `ranges`, all within the committed `tree`."""
    nodes = await read_nodes(db, tree, merkle.needed_nodes(ranges))
    return [merkle.range_hash(start, end, lambda level, index: nodes[(level, index)])
            for start, end in ranges]


def _size(value: int | None, tree: AuditTreeDoc, name: str) -> int:
    if value is None:
        return tree["size"]
    if not 1 <= value <= tree["size"]:
        raise NotFound(f"{name} is beyond the log: its tree size is {tree['size']}")
    return value


async def inclusion(db: Db, account_id: str, index: int, size: int | None) -> dict[str, Any]:
    """RFC 9162 inclusion proof of leaf `index` in the tree of `size` (default: current)."""
    tree = await committed(db, account_id)
    size = _size(size, tree, "treeSize")
    if not 0 <= index < size:
        raise NotFound(f"no entry at index {index}: the tree size is {size}")
    ranges = merkle.inclusion_ranges(index, size)
    hashes = await range_hashes(db, tree, [*ranges, (index, index + 1)])
    return {"index": index, "treeSize": size, "leafHash": hashes[-1],
            "proof": hashes[:-1]}


async def consistency(db: Db, account_id: str, first: int, second: int | None,
                      ) -> dict[str, Any]:
    """RFC 9162 consistency proof between the trees of sizes `first` and `second`."""
    tree = await committed(db, account_id)
    second = _size(second, tree, "to")
    first = _size(first, tree, "from")
    if first > second:
        raise NotFound("no consistency proof from a larger tree to a smaller one")
    ranges = merkle.consistency_ranges(first, second) if first < second else []
    return {"from": first, "to": second, "proof": await range_hashes(db, tree, ranges)}


async def index_of(db: Db, account_id: str, kind: str, entry_id: str) -> int:
    """The committed index of an entry of this account; NotFound until it is sequenced."""
    tree = await db.audit_trees.find_one({"_id": account_id}, {"size": 1})
    key = f"{kind}:{entry_id}"
    found = await blocks.committed_indexes(db, [key], {account_id: tree["size"] if tree else 0})
    if key not in found:
        raise NotFound("no such entry in the audit log (not of this account, or not sequenced "
                       "yet: within audit.merge_delay_seconds)")
    return found[key]
