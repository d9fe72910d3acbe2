"""An account's webhook endpoint pointed at a test's receiver (`tests.webhook_receiver`), and
the settings under which a vaultd retries its deliveries within a test's patience."""

from __future__ import annotations

from typing import Any

import httpx

from tests.vault_process import VaultProcess
from tests.webhook_receiver import Receiver

ALL_EVENTS = ["file.uploaded", "file.deleted", "view.created", "view.opened", "view.revoked",
              "view.completed", "file.downloaded"]
# Private networks allowed (the receiver is on 127.0.0.1), retries half a second apart.
FAST_RETRIES = {"VAULTD_WEBHOOKS_ALLOW_PRIVATE_NETWORKS": "true",
                "VAULTD_WEBHOOKS_RETRY_SCHEDULE": "0.5,0.5,0.5",
                "VAULTD_WEBHOOKS_POLL_SECONDS": "0.1",
                "VAULTD_WEBHOOKS_LEASE_SECONDS": "6"}


def subscribe(client: httpx.Client, receiver: Receiver, events: list[str] | None = None,
              vault: VaultProcess | None = None) -> dict[str, Any]:
    """An endpoint for `events` (ALL_EVENTS by default) at the receiver, which then checks
    signatures with its secret (kept out of `vault`'s log by its secret scan)."""
    response = client.post("/webhooks", json={"url": receiver.url, "events": events or ALL_EVENTS})
    assert response.status_code == 201, response.text
    created = response.json()
    receiver.secret = created["secret"]
    if vault is not None:
        vault.secrets.append(created["secret"])
    return dict(created)
