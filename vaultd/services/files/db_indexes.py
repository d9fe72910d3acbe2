"""The database indexes the files domain's queries stand on (listings, deletions, recovery),
created at start-up by `vaultd.db_indexes`."""

from __future__ import annotations

from vaultd.index_spec import Index, index

INDEXES: tuple[Index, ...] = (
    index("files", "accountId", "-createdAt"),
    # SecantusDB uses an index only when it holds every field of the filter (equalities, then
    # one range): a field outside the index turns a query into a collection scan. Hence the
    # listing's index (the `_id`-led pair for conditional updates of one record, `_id` and
    # `state`, is the files' walk's: `db.WALKS`).
    index("files", "accountId", "state", "-createdAt"),
    index("files", "state"),  # recovery looks for "deleting"
    # The listing reads a range of the files' numbers in their account (files.files).
    index("files", "accountId", "state", "-seq"),
    # The file read for a new link with its number reserved, by id within its account, in one
    # write (services.links.link_numbers.reserve).
    index("files", "_id", "accountId", "state"),
)
