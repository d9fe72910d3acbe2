"""The database indexes the accounts domain's queries stand on (keys, the usage counters kept on
accounts and files), created at start-up by `vaultd.db_indexes`."""

from __future__ import annotations

from vaultd.index_spec import Index, index

INDEXES: tuple[Index, ...] = (
    index("api_keys", "hash", unique=True),
    index("api_keys", "accountId"),
    index("api_keys", "accountId", "revokedAt"),
    # SecantusDB uses an index only when it holds every field of the filter (equalities, then
    # one range): an `_id`-led pair serves a conditional update of one record (the accounts'
    # is their walk's, `db.WALKS`).
    index("files", "_id", "linkCount.sweptAt"),
    # Links expired since the last sweep of a file's or an account's live count (link_counts).
    index("links", "accountId", "expiresAt"),
    index("links", "fileId", "expiresAt"),
    # ...and per shard: a file's with many links, an account's where one shard holds many
    # (link_shards).
    index("links", "fileId", "shard", "expiresAt"),
    index("links", "accountId", "shard", "expiresAt"),
)
