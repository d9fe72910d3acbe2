"""The database indexes the shared plumbing's queries stand on (the access log's reads, rolling
limits), created at start-up by `vaultd.db_indexes`."""

from __future__ import annotations

from vaultd.index_spec import Index, index
from vaultd.services.common import numbered_log

INDEXES: tuple[Index, ...] = (
    index("access_log", "fileId", "-at"),
    # The log filtered by action is a time range too (access_log, newest).
    index("access_log", "fileId", "action", "-at"),
    index("access_log", "accountId", "-at"),
    # The console's Activity page filtered by action: a time range too (feed).
    index("access_log", "accountId", "action", "-at"),
    # The whole log of a file, an account, a room by the entries' numbers (numbered_log).
    index("access_log", "fileId", "fileSeq"),
    index("access_log", "accountId", "accountSeq"),
    index("access_log", "roomId", "roomSeq", sparse=True),
    # Their logs of one action by the entries' numbers per action (numbered_log.ACTION_SCOPES):
    # only numbered entries are in them, so the page path's insert (no number yet) does not
    # write them (docs/performance-records.md, *The access log of one action and before numbering*).
    *(index("access_log", scope.field, "action", scope.number,
            partialFilterExpression={scope.number: numbered_log.NUMBERED})
      for scope in numbered_log.ACTION_SCOPES.values()),
    # A rolling window is dropped by the database when it is over (TTL: rolling_limits).
    index("rate_limits", "expiresAt", expireAfterSeconds=0),
)
