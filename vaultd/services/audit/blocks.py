"""An account's leaves: pieces as rounds write them, whole blocks of 256 once complete.

Which entry has which index, and its leaf hash, is written once per round and account as a
*piece* (`audit_pieces`, `_id` `<account>/<block>/<start>`): from position `start` of block
`block` (indexes block * 256 ..), the entries' source keys (`keys`) and leaf hashes
(`hashes`). Pieces are only inserted (`INSERT_KEYS` leaf keys a command at most: a quiet
round's in one), so the index on `keys` (an entry's index by its id) costs each key once. The
tree's record lists where the pieces of its last, incomplete block start (`pieces`); the round
that completes a block also writes it whole, one document (`audit_blocks`, `_id`
`<account>/<block>`, not indexed), so a complete block is one point read whatever the traffic
that filled it. The nodes below a block (levels 1 to 7) are not stored: a proof computes the
few it needs from the block's leaf hashes (at most 255 hashes); `audit_nodes` keeps the nodes
of level 8 and up.

A round killed after its writes but before its commit leaves a piece, or a whole block, past
the committed size; the next round for that account starts at the same place, so its writes
have the same `_id`s and replace them (fenced by the lease epoch). Readers read only indexes
below the committed size, and a piece only up to where the next listed one starts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, TypedDict

from pymongo.errors import BulkWriteError, DuplicateKeyError

from vaultd.db import Db
from vaultd.records.audit import AuditBlockDoc, AuditPieceDoc, AuditTreeDoc
from vaultd.services.audit import merkle

BLOCK_LEVEL = 8
BLOCK_SIZE = 1 << BLOCK_LEVEL  # leaves per block: the level of the lowest stored node
DUPLICATE_KEY = 11000
IN_CHUNK = 100  # ids per `$in`: SecantusDB answers a long list slower than several short ones
# Leaf keys an insert carries at most: each is an entry of the multikey index on `keys`, and
# SecantusDB holds its one lock 12 to 30 ms a block of them, more as the index grows (`python
# -m bench.bulk_steps --catch-up-only`): one block, under the 50 ms another request may wait
# behind one operation.
INSERT_KEYS = BLOCK_SIZE


class Leaves(TypedDict):
    """A block's committed leaves, from its position 0: source keys and leaf hashes."""

    keys: list[str]
    hashes: list[bytes]


class BlockFenced(Exception):
    """A newer lease holder has written there: this round may not write it."""


@dataclass(frozen=True)
class Segment:
    """New leaves of one account going into one block, from position `start` in it."""

    account_id: str
    block: int
    start: int
    keys: list[str]
    hashes: list[bytes]

    def doc(self, epoch: int) -> AuditPieceDoc:
        return {"_id": piece_id(self.account_id, self.block, self.start),
                "accountId": self.account_id, "block": self.block, "start": self.start,
                "count": len(self.keys), "keys": self.keys, "hashes": self.hashes,
                "epoch": epoch}


async def find_in(collection: Any, ids: list[str],
                  projection: dict[str, int] | None = None) -> AsyncIterator[Any]:
    """The documents of `ids` (those that exist), read by `_id` in short `$in` lists."""
    for start in range(0, len(ids), IN_CHUNK):
        async for doc in collection.find({"_id": {"$in": ids[start:start + IN_CHUNK]}},
                                         projection):
            yield doc


def piece_id(account_id: str, block: int, start: int) -> str:
    return f"{account_id}/{block}/{start}"


def block_id(account_id: str, block: int) -> str:
    return f"{account_id}/{block}"


def block_of(index: int) -> int:
    return index >> BLOCK_LEVEL


def segments(account_id: str, size: int, keys: list[str], hashes: list[bytes]) -> list[Segment]:
    """The new leaves at indexes size.. of an account, cut at block boundaries."""
    out = []
    offset = 0
    while offset < len(keys):
        index = size + offset
        start = index % BLOCK_SIZE
        take = min(BLOCK_SIZE - start, len(keys) - offset)
        out.append(Segment(account_id, block_of(index), start, keys[offset:offset + take],
                           hashes[offset:offset + take]))
        offset += take
    return out


def starts_after(tree: AuditTreeDoc, parts: list[Segment]) -> list[int]:
    """Where the pieces of the last incomplete block start once `parts` are committed."""
    size = tree["size"] + sum(len(part.keys) for part in parts)
    if size % BLOCK_SIZE == 0:
        return []
    last = block_of(size)
    starts = list(tree.get("pieces", [])) if block_of(tree["size"]) == last else []
    return starts + [part.start for part in parts if part.block == last]


async def write(db: Db, rounds: list[tuple[AuditTreeDoc, list[Segment]]], epoch: int) -> None:
    """The accounts' new pieces, then every block they complete, whole (with the leaves of its
    earlier pieces, those of its tree's last block), `INSERT_KEYS` leaf keys a command at most
    (`insert_fenced`)."""
    await insert_fenced(db.audit_pieces, [part.doc(epoch) for _, parts in rounds for part in parts],
                       epoch)
    completing = [(tree, part) for tree, parts in rounds for part in parts
                  if part.start + len(part.keys) == BLOCK_SIZE]
    earlier = await _earlier_pieces(db, [(tree, part) for tree, part in completing
                                         if part.start > 0])
    whole: list[AuditBlockDoc] = []
    for _, part in completing:
        keys, hashes = part.keys, part.hashes
        if part.start > 0:
            before = earlier[part.account_id]
            keys, hashes = before["keys"] + keys, before["hashes"] + hashes
        whole.append({"_id": block_id(part.account_id, part.block),
                      "accountId": part.account_id, "block": part.block, "keys": keys,
                      "hashes": hashes, "epoch": epoch})
    await insert_fenced(db.audit_blocks, whole, epoch)


async def _earlier_pieces(db: Db, completing: list[tuple[AuditTreeDoc, Segment]],
                          ) -> dict[str, Leaves]:
    """The committed leaves before each of the segments that complete their tree's last block,
    by account: every account's listed pieces read in one `$in` list (per IN_CHUNK), not one
    read per account."""
    ids = [piece_id(tree["_id"], part.block, start) for tree, part in completing
           for start in tree.get("pieces", [])]
    pieces = {doc["_id"]: doc async for doc in find_in(db.audit_pieces, ids)}
    out: dict[str, Leaves] = {}
    for tree, part in completing:
        out[tree["_id"]] = _joined(tree, part.block, pieces, keys_too=True)
    return out


async def insert_fenced(collection: Any, docs: list[Any], epoch: int) -> None:
    """Inserted, `INSERT_KEYS` leaf keys a command at most (a quiet round's in one);
    one a killed round left at the same `_id` is replaced, unless a newer holder wrote it
    (then BlockFenced). A kill between two commands leaves what a kill inside one could: some
    inserted past the committed size, which the next round writes again."""
    for chunk in _by_keys(docs):
        await _insert_chunk(collection, chunk, epoch)


def _by_keys(docs: list[Any]) -> list[list[Any]]:
    chunks: list[list[Any]] = []
    carried = INSERT_KEYS
    for doc in docs:
        weight = max(1, len(doc.get("keys", ())))
        if carried + weight > INSERT_KEYS:
            chunks.append([])
            carried = 0
        chunks[-1].append(doc)
        carried += weight
    return chunks


async def _insert_chunk(collection: Any, docs: list[Any], epoch: int) -> None:
    try:
        await collection.insert_many(docs, ordered=False)
    except BulkWriteError as error:
        errors = error.details["writeErrors"]
        if any(item.get("code") != DUPLICATE_KEY for item in errors):
            raise
        for item in errors:
            doc = docs[item["index"]]
            try:  # the fence in the filter: a newer holder's makes the upsert's insert collide
                await collection.replace_one({"_id": doc["_id"], "epoch": {"$lte": epoch}},
                                             doc, upsert=True)
            except DuplicateKeyError as fenced:
                raise BlockFenced(doc["_id"]) from fenced


async def read(db: Db, tree: AuditTreeDoc, wanted: set[int], *,
               keys_too: bool = True) -> dict[int, Leaves]:
    """The committed leaves of blocks `wanted` of the tree: a complete block whole, the last
    one from its listed pieces, each up to where the next starts. `keys_too` False: the leaf
    hashes only (a proof's), half the bytes to read."""
    account_id, size = tree["_id"], tree["size"]
    last = block_of(size)
    out: dict[int, Leaves] = {}
    skip = None if keys_too else {"keys": 0}
    complete = [block_id(account_id, block) for block in sorted(wanted) if block < last]
    async for doc in find_in(db.audit_blocks, complete, skip):
        out[doc["block"]] = {"keys": doc.get("keys", []),
                             "hashes": [bytes(h) for h in doc["hashes"]]}
    if last in wanted and size % BLOCK_SIZE:
        ids = [piece_id(account_id, last, start) for start in tree.get("pieces", [])]
        pieces = {doc["_id"]: doc async for doc in find_in(db.audit_pieces, ids, skip)}
        out[last] = _joined(tree, last, pieces, keys_too=keys_too)
    return out


def _joined(tree: AuditTreeDoc, block: int, pieces: dict[str, Any], *, keys_too: bool) -> Leaves:
    """The committed leaves of the tree's last, incomplete block `block` from its listed
    `pieces` (by `_id`), each up to where the next starts."""
    account_id = tree["_id"]
    starts = list(tree.get("pieces", []))
    ends = [*starts[1:], tree["size"] - block * BLOCK_SIZE]
    keys: list[str] = []
    hashes: list[bytes] = []
    for start, end in zip(starts, ends, strict=True):
        piece = pieces.get(piece_id(account_id, block, start))
        if piece is None or start != len(hashes):
            raise LookupError(f"audit tree of {account_id} is missing leaves")
        hashes += [bytes(h) for h in piece["hashes"][:end - start]]
        keys += piece.get("keys", [""] * (end - start))[:end - start]
    return {"keys": keys if keys_too else [], "hashes": hashes}


def subtree_hash(leaves: Leaves, block: int, level: int, index: int) -> bytes:
    """The node (level, index), level below BLOCK_LEVEL, from its block's leaf hashes."""
    start = (index << level) - block * BLOCK_SIZE
    layer = leaves["hashes"][start:start + (1 << level)]
    if len(layer) != 1 << level:
        raise LookupError(f"audit block {block} is missing leaves")
    while len(layer) > 1:
        layer = [merkle.node_hash(layer[i], layer[i + 1]) for i in range(0, len(layer), 2)]
    return layer[0]


async def committed_indexes(db: Db, keys: list[str], sizes: dict[str, int]) -> dict[str, int]:
    """The committed index of each of `keys` that has one (a piece names it below its
    account's committed size, `sizes`), read through the index on `keys`."""
    found: dict[str, int] = {}
    wanted = set(keys)
    for start in range(0, len(keys), IN_CHUNK):
        query: dict[str, Any] = {"keys": {"$in": keys[start:start + IN_CHUNK]}}
        projection = {"keys": 1, "accountId": 1, "block": 1, "start": 1}
        async for doc in db.audit_pieces.find(query, projection):
            size = sizes.get(doc["accountId"], 0)
            base = doc["block"] * BLOCK_SIZE + doc["start"]
            for position, key in enumerate(doc["keys"]):
                if key in wanted and base + position < size:
                    found[key] = base + position
    return found
