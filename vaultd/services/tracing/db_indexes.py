"""The database indexes a placement trace's reads stand on (docs/leak-tracing.md, "A year of
views"), created at start-up by `vaultd.db_indexes`."""

from __future__ import annotations

from vaultd.index_spec import Index, index

INDEXES: tuple[Index, ...] = (
    # A leak's page looked up by its print's bands (`page_prints.pages_shown`).
    index("page_prints", "accountId", "bands"),
    # One page's views of the year, newest first, a chunk at a time (`candidates.page_views`).
    index("access_log", "accountId", "fileId", "action", "page", "-at"),
)
