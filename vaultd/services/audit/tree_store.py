"""One account's tree in the database: its committed state, its nodes, and proofs read from them.

Every complete subtree's hash is stored once, `_id` `<account>/<level>/<index>`, so a proof
reads the O(log n) nodes it is made of by `_id` (point reads, one `$in`), never a scan, at any
size. Nodes past the committed size may be left by a killed sequencer: no proof reads them,
and the next sequencer overwrites them before it commits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.records.audit import AuditTreeDoc
from vaultd.services.audit import merkle

NO_ENTRIES = "the account's audit log has no entries yet"
IN_CHUNK = 100  # ids per `$in`: SecantusDB answers a long list slower than several short ones


async def find_in(collection: Any, ids: list[str]) -> AsyncIterator[Any]:
    """The documents of `ids` (those that exist), read by `_id` in short `$in` lists."""
    for start in range(0, len(ids), IN_CHUNK):
        async for doc in collection.find({"_id": {"$in": ids[start:start + IN_CHUNK]}}):
            yield doc


def node_id(account_id: str, level: int, index: int) -> str:
    return f"{account_id}/{level}/{index}"


async def committed(db: Db, account_id: str) -> AuditTreeDoc:
    tree = await db.audit_trees.find_one({"_id": account_id})
    if tree is None or tree["size"] == 0:
        raise NotFound(NO_ENTRIES)
    return tree


async def read_nodes(db: Db, account_id: str,
                     keys: set[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
    ids = {node_id(account_id, level, index): (level, index) for level, index in keys}
    found = {ids[doc["_id"]]: bytes(doc["hash"])
             async for doc in find_in(db.audit_nodes, list(ids))}
    if len(found) != len(ids):  # a committed tree has every node below its size
        raise LookupError(f"audit tree of {account_id} is missing nodes")
    return found


async def range_hashes(db: Db, account_id: str, ranges: list[merkle.Range]) -> list[bytes]:
    nodes = await read_nodes(db, account_id, merkle.needed_nodes(ranges))
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
    hashes = await range_hashes(db, account_id, [*ranges, (index, index + 1)])
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
    return {"from": first, "to": second, "proof": await range_hashes(db, account_id, ranges)}


async def root_at(db: Db, account_id: str, size: int) -> bytes:
    return (await range_hashes(db, account_id, [(0, size)]))[0]


async def index_of(db: Db, account_id: str, kind: str, entry_id: str) -> int:
    """The committed index of an entry of this account; NotFound until it is sequenced."""
    leaf = await db.audit_leaves.find_one({"_id": f"{kind}:{entry_id}"})
    tree = await db.audit_trees.find_one({"_id": account_id}, {"size": 1})
    if (leaf is None or tree is None or leaf["accountId"] != account_id
            or leaf["index"] >= tree["size"]):
        raise NotFound("no such entry in the audit log (not of this account, or not sequenced "
                       "yet: within audit.merge_delay_seconds)")
    return leaf["index"]
