"""The database indexes the audit log's queries stand on (the sequencer's reads, its own records),
created at start-up by `vaultd.db_indexes`."""

from __future__ import annotations

from vaultd.index_spec import Index, index

INDEXES: tuple[Index, ...] = (
    # The sequencer reads every new entry by time, whatever its account (sequencer); its own
    # records are read by index, never scanned.
    index("access_log", "at"),
    index("activity", "at"),
    # A catch-up's plan walks the events by `_id` windows (services.audit.catch_up; the access
    # log's walk has its pair from `db.WALKS`).
    index("activity", "_id", "at"),
    # Which index an entry has (its proof by id, the sequencer's check after a take-over).
    index("audit_pieces", "keys"),
    index("audit_checkpoints", "accountId", "size"),
    # The checkpoints still to be copied to the Object Lock bucket (services.audit.lock_copy).
    index("audit_checkpoints", "copyPending", sparse=True),
)
