"""The database indexes the members domain's queries stand on (members, their sessions and
sign-ins, the activity log), created at start-up by `vaultd.db_indexes`."""

from __future__ import annotations

from vaultd.index_spec import Index, index

# Members: one record per person and account (unique), a person's records by address (sign-in,
# the account choice); their sessions by address (their listing, newest first) and by public id
# (revocation); each session, code and sign-in link dropped by the database when its time is
# over (TTL); the activity log's pages, newest first within an account (common.newest).
INDEXES: tuple[Index, ...] = (
    index("members", "email"),
    index("member_sessions", "email", "-createdAt"),
    index("member_sessions", "email", "publicId"),
    index("member_sessions", "expiresAt", expireAfterSeconds=0),
    index("sign_in_codes", "expiresAt", expireAfterSeconds=0),
    index("sign_in_links", "expiresAt", expireAfterSeconds=0),
    index("members", "accountId", "email", unique=True),
    index("activity", "accountId", "-at", "-_id"),
    # The console's Activity page filtered by action: a time range too (common.feed).
    index("activity", "accountId", "action", "-at"),
)
