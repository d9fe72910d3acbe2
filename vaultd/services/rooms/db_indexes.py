"""The database indexes the data rooms' queries stand on (rooms, their items and links, a room's
log), created at start-up by `vaultd.db_indexes`."""

from __future__ import annotations

from vaultd.index_spec import Index, index

ROOM_FILE_INDEX = "roomId_fileId_unique"
# A file is in a room at most once, under concurrent adds too (items.add_file); built after the
# duplicates older adds may have left are removed (`vaultd.db_indexes.one_place_per_room`).
ONE_PLACE_PER_ROOM = index("room_items", "roomId", "fileId", name=ROOM_FILE_INDEX, unique=True,
                           partialFilterExpression={"fileId": {"$exists": True}})

INDEXES: tuple[Index, ...] = (
    index("rooms", "accountId", "-createdAt"),
    # The rooms listing's ranges of numbers (`room_numbers`).
    index("rooms", "accountId", "seq"),
    index("room_items", "roomId", "parentId"),
    index("room_items", "fileId"),  # a deleted file leaves every room
    ONE_PLACE_PER_ROOM,
    index("room_links", "hash", unique=True),
    index("room_links", "roomId"),
    index("room_links", "accountId", "expiresAt"),
    index("access_log", "roomId", "-at", sparse=True),
    # A room's log filtered by action is a time range too (activity).
    index("access_log", "roomId", "action", "-at", sparse=True),
    # A room's links that expired since its count's sweep (`room_counts`).
    index("room_links", "roomId", "expiresAt"),
    # ...and per shard, where one shard's range holds many (accounts.link_shards.read_probed):
    # the room's and the account's.
    index("room_links", "roomId", "shard", "expiresAt"),
    index("room_links", "accountId", "shard", "expiresAt"),
    # A room's revoke-all and deletion walk its links by `_id` windows, and write them by `_id`
    # (`links.revoke_jobs`, `room_deletions`); a deletion walks its items the same way.
    index("room_links", "roomId", "revoked", "_id"),
    index("room_links", "revoked", "_id"),
    index("room_items", "roomId", "_id"),
    # Deletions left to recovery (`room_deletions.resume_orphaned`): few, found by the index.
    index("rooms", "state", sparse=True),
    # A room's analytics: its links' aggregates per document (`activity.analytics`).
    index("link_stats", "roomId", sparse=True),
)
