"""The database indexes the analytics domain's queries stand on (a link's aggregates), created at
start-up by `vaultd.db_indexes`."""

from __future__ import annotations

from vaultd.index_spec import Index, index

INDEXES: tuple[Index, ...] = (
    index("link_stats", "fileId"),
    index("link_stats", "fileId", "_id"),  # deletion
    # The activity report's conditional update of one link's aggregates (analytics) stands on
    # (_id, totalSeconds), the walk's pair (`db.WALKS`). Not (_id, completedAt): its update asks
    # for completedAt None, which SecantusDB's index does not match on a record without the
    # field (a collection scan does).
    index("link_stats", "openAnnounced"),
    index("link_stats", "completeAnnounced"),
)
