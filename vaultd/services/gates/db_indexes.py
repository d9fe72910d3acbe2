"""The database indexes the link gates' queries stand on (viewer sessions, agreements, rate
windows), created at start-up by `vaultd.db_indexes`."""

from __future__ import annotations

from vaultd.db import GATE_COUNTERS
from vaultd.index_spec import Index, index

INDEXES: tuple[Index, ...] = (
    index("viewer_sessions", "hash", unique=True),
    index("viewer_sessions", "linkId", "-createdAt"),
    index("viewer_sessions", "linkId", "seq"),  # a link's newest by number (session_numbers)
    # A session ends with its link or after 24 h (`expiresAt`, the earlier): then the database
    # drops it (TTL), so sessions do not pile up; links keep their count (`sessionsOpened`).
    index("viewer_sessions", "expiresAt", expireAfterSeconds=0),
    index("agreements", "accountId", "agreementId", "-version"),
    # A gate's rate window is worth nothing once over: the database drops it (TTL), so the
    # counters of a year of code sends do not stay behind.
    index(GATE_COUNTERS, "expiresAt", expireAfterSeconds=0),
)
