"""The records of the tamper-evident audit log (`services.audit`, docs/audit.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

SourceKind = Literal["access", "activity"]


class AuditPieceDoc(TypedDict):
    """Collection `audit_pieces`: the leaves one round gave one account within one block of
    256 indexes, `_id` `<account>/<block>/<start>` (services.audit.blocks): which source entry
    got which index, and its leaf hash. Only the indexes below the committed size count."""

    _id: str
    accountId: str
    block: int  # indexes block * 256 .. block * 256 + 255
    start: int  # the position in the block of the first leaf here
    count: int  # how many leaves `keys` and `hashes` hold
    keys: list[str]  # source keys (`access:<id>`, `activity:<id>`) in index order
    hashes: list[bytes]  # their leaf hashes
    epoch: int  # the sequencer lease it was written under: an older holder cannot overwrite


class AuditBlockDoc(TypedDict):
    """Collection `audit_blocks`: a complete block's 256 leaves in one document, `_id`
    `<account>/<block>`, written with its last piece (services.audit.blocks)."""

    _id: str
    accountId: str
    block: int
    keys: list[str]
    hashes: list[bytes]
    epoch: int


class AuditNodeDoc(TypedDict):
    """Collection `audit_nodes`: the hash of one complete subtree of 256 leaves or more, `_id`
    `<account>/<level>/<index>` (level 8 and up: those below are computed from a block),
    written before the tree that includes it."""

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
    copyPending: NotRequired[bool]  # to be copied to the Object Lock bucket (lock_copy)
    copiedAt: NotRequired[datetime]


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
    pieces: NotRequired[list[int]]  # where the pieces of the last, incomplete block start


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
    fenced: NotRequired[bool]  # services.common.log_fence's mark: not part of the leaf
