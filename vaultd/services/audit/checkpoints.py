"""Signed checkpoints: made every N entries or T seconds, kept, announced by webhook.

A checkpoint is the C2SP tlog-checkpoint of one account's tree (origin `<audit.origin>/<account
id>`, size, root), signed by the current key. Each is stored once (`_id` `<account>/<size>`) and
queued as the `audit.checkpoint` webhook event, so a customer's endpoint keeps every checkpoint
outside the operator's reach (a witness). A crash between the steps repeats them: the insert and
the event are keyed by size, so the repeat adds nothing.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from pymongo import DESCENDING, UpdateOne
from pymongo.errors import BulkWriteError

from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.records.audit import AuditCheckpointDoc, AuditTreeDoc
from vaultd.services.audit import notes
from vaultd.services.audit.blocks import find_in
from vaultd.services.audit.keys import Signer
from vaultd.services.audit.tree_store import NO_ENTRIES
from vaultd.services.common import outbox
from vaultd.timefmt import iso_utc, utcnow

EVENT = "audit.checkpoint"
DUPLICATE_KEY = 11000


def origin_of(prefix: str, account_id: str) -> str:
    return f"{prefix}/{account_id}"


def due(tree: AuditTreeDoc, every_entries: int, every_seconds: float, now: datetime) -> bool:
    behind = tree["size"] - tree["checkpointSize"]
    if behind <= 0:
        return False
    last = tree["checkpointAt"]
    return (behind >= every_entries or last is None
            or now - last >= timedelta(seconds=every_seconds))


async def make_all(db: Db, trees: list[AuditTreeDoc], signer: Signer, prefix: str, *,
                   copy: bool = False) -> list[AuditCheckpointDoc]:
    """Signs, stores and announces the checkpoint of each of `trees` as committed; `copy`:
    marked for the locked copy in S3 (lock_copy), in the same insert. Stored in one insert and
    recorded on their trees in one write (a round that signs for many accounts sends two
    commands for them, not two per account); each event is queued before its tree says the
    checkpoint is made."""
    docs = [_signed(tree, signer, prefix, copy) for tree in trees]
    if not docs:
        return []
    try:
        await db.audit_checkpoints.insert_many(docs, ordered=False)
    except BulkWriteError as error:  # made before a crash: those are the checkpoints
        if any(item.get("code") != DUPLICATE_KEY for item in error.details["writeErrors"]):
            raise
        made = [docs[item["index"]]["_id"] for item in error.details["writeErrors"]]
        kept = {doc["_id"]: doc async for doc in db.audit_checkpoints.find({"_id": {"$in": made}})}
        docs = [kept.get(doc["_id"], doc) for doc in docs]
    for doc in docs:
        await outbox.emit(db, doc["accountId"], EVENT, checkpoint_json(doc),
                          key=f"audit:{doc['_id']}")
    await db.audit_trees.bulk_write([UpdateOne(
        {"_id": doc["accountId"], "checkpointSize": {"$lt": doc["size"]}},
        {"$set": {"checkpointSize": doc["size"], "checkpointAt": doc["at"]}}) for doc in docs],
        ordered=False)
    return docs


async def make_due(db: Db, pending: list[str], signer: Callable[[], Awaitable[Signer]],
                   every_entries: int, every_seconds: float, prefix: str, *,
                   copy: bool = False) -> set[str]:
    """The checkpoints due of the `pending` accounts' trees, made; which accounts are no
    longer pending (a checkpoint made, no tree, or nothing past the last one to sign)."""
    now, sign = utcnow(), await signer()
    trees = {doc["_id"]: doc async for doc in find_in(db.audit_trees, pending)}
    ready = [tree for tree in trees.values() if tree["size"] > tree["checkpointSize"]
             and due(tree, every_entries, every_seconds, now)]
    await make_all(db, ready, sign, prefix, copy=copy)
    made = {tree["_id"] for tree in ready}
    return {key for key in pending if key in made or key not in trees
            or trees[key]["size"] <= trees[key]["checkpointSize"]}


def _signed(tree: AuditTreeDoc, signer: Signer, prefix: str, copy: bool) -> AuditCheckpointDoc:
    account_id, size = tree["_id"], tree["size"]
    body = notes.checkpoint_body(origin_of(prefix, account_id), size, bytes(tree["root"]))
    doc: AuditCheckpointDoc = {"_id": f"{account_id}/{size}", "accountId": account_id,
                               "size": size, "note": signer.sign(body), "keyId": signer.key_id,
                               "at": utcnow()}
    if copy:
        doc["copyPending"] = True
    return doc


def checkpoint_json(doc: AuditCheckpointDoc) -> dict[str, Any]:
    root = doc["note"].split("\n")[2]
    return {"treeSize": doc["size"], "rootHash": root, "keyId": doc["keyId"],
            "at": iso_utc(doc["at"]), "checkpoint": doc["note"]}


async def latest(db: Db, account_id: str) -> AuditCheckpointDoc:
    tree = await db.audit_trees.find_one({"_id": account_id})
    if tree is None or tree["checkpointSize"] == 0:
        raise NotFound("the account's audit log has no checkpoint yet")
    doc = await db.audit_checkpoints.find_one({"_id": f"{account_id}/{tree['checkpointSize']}"})
    if doc is None:
        raise NotFound(NO_ENTRIES)
    return doc


async def all_of(db: Db, account_id: str) -> list[AuditCheckpointDoc]:
    """Every checkpoint of an account, oldest first (an export holds them all)."""
    found = db.audit_checkpoints.find({"accountId": account_id}).sort("size", DESCENDING)
    return [doc async for doc in found][::-1]


def root_of(doc: AuditCheckpointDoc) -> bytes:
    return base64.b64decode(doc["note"].split("\n")[2])
