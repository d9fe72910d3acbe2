"""The records of the tamper-evident audit log (`services.audit`, docs/audit.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

SourceKind = Literal["access", "activity"]


class AuditLeafDoc(TypedDict):
    """Collection `audit_leaves`: which source entry got which index. `_id` is the entry's
    source key (`access:<id>` or `activity:<id>`), so no entry is ever sequenced twice."""

    _id: str
    accountId: str
    index: int


class AuditNodeDoc(TypedDict):
    """Collection `audit_nodes`: the hash of one complete subtree, `_id` `<account>/<level>/
    <index>` (level 0: the leaf hashes), written before the tree that includes it."""

    _id: str
    hash: bytes
    epoch: int  # the sequencer lease it was written under: an older holder cannot overwrite


class AuditCheckpointDoc(TypedDict):
    """Collection `audit_checkpoints`: every signed checkpoint, `_id` `<account>/<size>`."""

    _id: str
    accountId: str
    size: int
    note: str  # the C2SP signed note, as published
    keyId: str
    at: datetime


class AuditTreeDoc(TypedDict):
    """Collection `audit_trees`: one account's tree, advanced only by a conditional write on
    `size` (so a killed sequencer leaves the last whole state)."""

    _id: str  # the account id
    size: int
    root: bytes
    frontier: list[list[Any]]  # the compact range: [level, hash] pairs, highest level first
    checkpointSize: int
    checkpointAt: datetime | None
    epoch: int  # the sequencer lease that last claimed it: an older holder cannot commit


class AuditSequencerDoc(TypedDict):
    """Collection `audit_sequencer`, `_id` `lease`: which process sequences, until when, and
    how far the sources have been read."""

    _id: str
    holder: str
    until: datetime
    epoch: int
    cursors: NotRequired[dict[str, datetime]]  # per source kind: the newest `at` read


class AuditKeyDoc(TypedDict):
    """Collection `audit_keys`: checkpoint signing keys. The private key (an Ed25519 seed) is
    stored only wrapped by the master keyring, and only while the key is current; a retired
    key keeps its public half, so the checkpoints it signed still verify."""

    _id: str  # the C2SP key id, 8 hex digits
    name: str
    publicKey: bytes
    createdAt: datetime
    key: NotRequired[dict[str, Any]]  # WrappedKey.to_doc(); removed when retired
    retiredAt: NotRequired[datetime]


class ActivitySourceDoc(TypedDict):
    """What the sequencer reads of collection `activity` (the members' activity log)."""

    _id: str
    accountId: str
    at: datetime
    actor: NotRequired[dict[str, Any]]
    action: NotRequired[str]
    target: NotRequired[Any]
    detail: NotRequired[Any]
    ip: NotRequired[str | None]
