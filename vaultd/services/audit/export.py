"""A verifiable export: every entry of the log up to its newest checkpoint, with what proves it.

One JSON document (`format` `vaultd-audit-export/1`, docs/audit.md "The export"), written in
pieces so an export of 10^6 entries is never held whole: the published keys, every checkpoint,
the consistency proof from each checkpoint to the newest, then the entries in index order, each
with the leaf hash the tree holds for its index and the entry as its source record says now
(null once deleted). The verifier re-encodes each entry, hashes it, rebuilds the tree and checks
every checkpoint against it: what the database changed since shows as a named failure.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

from vaultd.db import Db
from vaultd.records.audit import AuditCheckpointDoc, AuditTreeDoc
from vaultd.services.audit import blocks, checkpoints, keys, leaves, merkle, tree_store
from vaultd.services.audit.blocks import BLOCK_SIZE, find_in

FORMAT = "vaultd-audit-export/1"
BATCH = 4 * BLOCK_SIZE  # entries read per round trip: their blocks, then their records


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def _consistency(db: Db, tree: AuditTreeDoc, sizes: list[int]) -> dict[str, list[str]]:
    newest = sizes[-1]
    proofs: dict[str, list[str]] = {}
    for size in sizes[:-1]:
        if size < newest:
            ranges = merkle.consistency_ranges(size, newest)
            proofs[str(size)] = [_b64(h) for h in
                                 await tree_store.range_hashes(db, tree, ranges)]
    return proofs


async def _entries(db: Db, tree: AuditTreeDoc, start: int, end: int) -> list[dict[str, Any]]:
    held = await blocks.read(db, tree, set(range(blocks.block_of(start),
                                                 blocks.block_of(end - 1) + 1)))
    by_index: dict[int, str] = {}
    hashes: dict[int, bytes] = {}
    for number, leaves_of in held.items():
        base = number * BLOCK_SIZE
        for position, (source, digest) in enumerate(zip(leaves_of["keys"],
                                                        leaves_of["hashes"], strict=True)):
            if start <= base + position < end:
                by_index[base + position] = source
                hashes[base + position] = digest
    sources: dict[str, Any] = {}
    for kind, collection in (("access", "access_log"), ("activity", "activity")):
        wanted = [key.split(":", 1)[1] for key in by_index.values() if key.startswith(kind + ":")]
        if wanted:
            async for doc in find_in(db.raw(collection), wanted):
                sources[f"{kind}:{doc['_id']}"] = doc
    out = []
    for index in range(start, end):
        key = by_index.get(index)
        leaf_hash = hashes.get(index)
        item: dict[str, Any] = {"index": index, "leafHash": _b64(leaf_hash) if leaf_hash else None}
        if key is not None:
            kind, entry_id = key.split(":", 1)
            record = sources.get(key)
            item["type"], item["id"] = kind, entry_id
            item["entry"] = None if record is None else _entry(kind, record)
        out.append(item)
    return out


def _entry(kind: str, doc: Any) -> dict[str, Any]:
    return leaves.access_entry(doc) if kind == "access" else leaves.activity_entry(doc)


async def export(db: Db, account_id: str, origin: str) -> AsyncIterator[str]:
    """The export as text pieces; NotFound before the first piece when nothing is signed."""
    newest = await checkpoints.latest(db, account_id)
    tree = await tree_store.committed(db, account_id)  # at least as large: signed after commit
    signed: list[AuditCheckpointDoc] = [doc for doc in await checkpoints.all_of(db, account_id)
                                        if doc["size"] <= newest["size"]]
    head = {"format": FORMAT, "account": account_id,
            "origin": checkpoints.origin_of(origin, account_id),
            "keys": await keys.published(db), "treeSize": newest["size"],
            "checkpoints": [doc["note"] for doc in signed],
            "consistency": await _consistency(db, tree, [doc["size"] for doc in signed])}
    yield json.dumps(head)[:-1] + ', "entries": ['
    for start in range(0, newest["size"], BATCH):
        batch = await _entries(db, tree, start, min(start + BATCH, newest["size"]))
        text = ",\n".join(json.dumps(item, sort_keys=True) for item in batch)
        yield ("\n" if start == 0 else ",\n") + text
    yield "\n]}\n"
