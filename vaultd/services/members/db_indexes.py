"""The database indexes the members domain's queries stand on (members, their sessions and
sign-ins, the activity log), created at start-up by `vaultd.db_indexes`."""

from __future__ import annotations

from vaultd.index_spec import Index, index

# Members: one record per person and account (unique), a person's records by address (sign-in,
# the account choice); their sessions by address and number (their listing, newest first by
# ranges of numbers: session_numbers) and by public id (revocation); each session, code and
# sign-in link dropped by the database when its time is over (TTL); the activity log by time
# (the audit sequencer, the feed filtered by action: common.newest).
INDEXES: tuple[Index, ...] = (
    index("members", "email"),
    index("member_sessions", "email", "seq"),
    index("member_sessions", "email", "publicId"),
    index("member_sessions", "expiresAt", expireAfterSeconds=0),
    index("sign_in_codes", "expiresAt", expireAfterSeconds=0),
    index("sign_in_links", "expiresAt", expireAfterSeconds=0),
    index("members", "accountId", "email", unique=True),
    index("activity", "accountId", "-at", "-_id"),
    # The console's Activity page filtered by action: a time range too (common.feed).
    index("activity", "accountId", "action", "-at"),
    # The activity log's pages: ranges of the events' numbers (activity_numbers).
    index("activity", "accountId", "seq"),
    # One action's pages: ranges of the events' numbers among that action (activity_numbers).
    index("activity", "accountId", "action", "actionSeq"),
)
