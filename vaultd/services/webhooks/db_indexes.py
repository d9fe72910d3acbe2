"""The database indexes the webhooks domain's queries stand on (endpoints, the outbox, deliveries),
created at start-up by `vaultd.db_indexes`."""

from __future__ import annotations

from vaultd.index_spec import Index, index

INDEXES: tuple[Index, ...] = (
    # One endpoint per (account, slot 0-9): the endpoint limit holds under concurrent creates.
    index("webhook_endpoints", "accountId", "slot", unique=True),
    index("webhook_outbox", "state", "nextAttemptAt"),
    index("webhook_outbox", "state", "createdAt"),
    index("webhook_outbox", "state", "finishedAt"),
    index("webhook_deliveries", "endpointId", "-at"),
    index("webhook_deliveries", "at"),  # retention prunes by age
    # An endpoint's latest deliveries: ranges of their numbers (delivery_numbers).
    index("webhook_deliveries", "endpointId", "seq"),
)
