"""The database indexes the links domain's queries stand on (a link by its token, revokes), created
at start-up by `vaultd.db_indexes`."""

from __future__ import annotations

from vaultd.index_spec import Index, index

INDEXES: tuple[Index, ...] = (
    index("links", "hash", unique=True),
    index("links", "fileId", "revoked"),
    # A file's live links (revoke-all), and one link or a batch revoked only if still live.
    index("links", "fileId", "revoked", "expiresAt"),
    index("links", "revoked", "_id"),
    # A revoke-all walks the file's unrevoked links, then counts its own, by `_id` windows.
    index("links", "fileId", "revoked", "_id"),
    # A file's links read by number ranges (services.analytics.link_listing).
    index("links", "fileId", "-seq"),
    # A file's links of one listed state by number, and its links listed active whose expiry
    # passed (services.links.link_states).
    index("links", "fileId", "listed", "seq"),
    index("links", "fileId", "listed", "expiresAt"),
    index("links", "fileId", "listed", "shard", "expiresAt"),  # of a file with many (link_shards)
)
