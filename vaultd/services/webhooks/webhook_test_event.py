"""A test event sent to one endpoint on request, so that the account can check its receiver
(its URL, its signature verification, its answer) without waiting for a real event.

The test is queued in the outbox like any event and goes through the same delivery: signed per
Standard Webhooks with the endpoint's secret, retried on the same schedule under the same
`webhook-id`, and recorded in the endpoint's delivery log. It goes to that endpoint only,
whatever events it subscribed to, and carries no document, viewer or secret.
"""

from __future__ import annotations

import hashlib
from typing import TypedDict

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.errors import TooManyRequests
from vaultd.records import OutboxDoc
from vaultd.services.accounts.accounts import Account
from vaultd.services.common import doorbell
from vaultd.services.common.outbox import NEVER_LEASED, event_body
from vaultd.services.members.callers import require_caller
from vaultd.services.members.roles import Permission
from vaultd.services.webhooks.webhooks import get_endpoint, require_webhook_plan
from vaultd.timefmt import utcnow

TEST_EVENT = "webhook.test"
# One test per endpoint per window: a button pressed again and again must not make vaultd
# hammer someone's server. The window names the message id, so the insert itself is the check.
TEST_WINDOW_SECONDS = 10
TOO_MANY_TESTS = (f"a test event was sent to this endpoint less than {TEST_WINDOW_SECONDS} s "
                  "ago: see its delivery log")


class TestEventJson(TypedDict):
    messageId: str
    type: str


async def send_test_event(db: Db, account: Account, endpoint_id: str) -> TestEventJson:
    require_caller(Permission.MANAGE_ACCOUNT)
    require_webhook_plan(account)
    endpoint = await get_endpoint(db, account.id, endpoint_id)
    now = utcnow()
    window = int(now.timestamp()) // TEST_WINDOW_SECONDS
    message_id = "msg_" + hashlib.sha256(
        f"{TEST_EVENT}|{endpoint['_id']}|{window}".encode()).hexdigest()[:32]
    data = {"endpointId": endpoint["_id"],
            "message": "A test event sent from vaultd on request: nothing happened."}
    message: OutboxDoc = {
        "_id": message_id, "accountId": account.id, "endpointId": endpoint["_id"],
        "type": TEST_EVENT, "body": event_body(TEST_EVENT, data, now), "createdAt": now,
        "state": "pending", "attempts": 0, "nextAttemptAt": now, "leaseUntil": NEVER_LEASED}
    try:
        await db.webhook_outbox.insert_one(message)
    except DuplicateKeyError:
        raise TooManyRequests(TOO_MANY_TESTS, retry_after=TEST_WINDOW_SECONDS) from None
    doorbell.ring(db)  # sent at once, not at the next poll
    return {"messageId": message_id, "type": TEST_EVENT}
