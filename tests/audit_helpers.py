"""Helpers of the audit-log tests: entries written as vaultd writes them, exports fetched and
verified by the stand-alone verifier."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from pymongo import monitoring

from admin_cli import audit_verify
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from vaultd.services.common import access_log
from vaultd.timefmt import utcnow


@dataclass
class SentCommands(monitoring.CommandListener):
    """Every command sent while `on` (pass it as the client's listener): its name, collection
    and filter."""

    on: bool = False
    sent: list[tuple[str, Any, dict[str, Any]]] = field(default_factory=list)

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self.on:
            command = event.command
            self.sent.append((event.command_name, command.get(event.command_name),
                              dict(command.get("filter") or {})))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def record_entries(vault: VaultProcess, account_id: str, count: int, *, page: int = 1) -> list[str]:
    """`count` access-log entries written by the server's own writer (`access_log.record`)."""
    async def write(db: Any) -> list[str]:
        return [await access_log.record(db, account_id, f"file-{n % 3}", "page",
                                        viewer_email=f"v{n}@client.example", ip="203.0.113.7",
                                        page=page + n)
                for n in range(count)]
    ids: list[str] = vault.run_service(write)
    return ids


def record_activity(vault: VaultProcess, account_id: str, count: int) -> list[str]:
    """Activity events as the members' log stores them (collection `activity`)."""
    docs = [{"_id": str(uuid.uuid4()), "accountId": account_id, "at": utcnow(),
             "actor": {"kind": "member", "id": "m1", "label": "Ann Admin"},
             "action": "member.role_changed", "target": f"member-{n}",
             "detail": {"from": "member", "to": "auditor"}, "ip": "198.51.100.4"}
            for n in range(count)]

    async def write(db: Any) -> None:
        await db.activity.insert_many(docs)
    vault.run_service(write)
    return [doc["_id"] for doc in docs]


def checkpoint_of(api: httpx.Client, size: int) -> dict[str, Any]:
    """The newest checkpoint, once it signs at least `size` entries."""
    def reached() -> dict[str, Any] | None:
        response = api.get("/audit/checkpoint")
        if response.status_code == 200 and response.json()["treeSize"] >= size:
            return dict(response.json())
        return None
    return wait_until(reached, timeout=60, what=f"a checkpoint of {size} entries")


def fetch_export(api: httpx.Client, path: Path) -> dict[str, Any]:
    response = api.get("/audit/export")
    assert response.status_code == 200, response.text
    path.write_bytes(response.content)
    return dict(json.loads(response.content))


def problems(export: dict[str, Any], since: dict[str, Any] | None = None) -> list[str]:
    if since is not None:
        return audit_verify.verify_since(export, since)
    return audit_verify.verify(export).problems
