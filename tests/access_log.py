"""What a running vaultd holds for a file: its access-log entries read straight from the
database (the API's own listing filters and shapes them) or through the API, and its record
(with the blob and rendition fields the API does not show)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.vault_process import VaultProcess


def access_log_entries(vault: VaultProcess, file_id: str,
                       action: str = "page") -> list[dict[str, Any]]:
    """The file's entries of `action`, oldest first."""
    async def read(db: Any) -> list[dict[str, Any]]:
        cursor = db.access_log.find({"fileId": file_id, "action": action}).sort("at", 1)
        return [entry async for entry in cursor]

    result: list[dict[str, Any]] = vault.run_service(read)
    return result


def file_record(vault: VaultProcess, file_id: str) -> dict[str, Any]:
    """The file's record in `files`, as stored."""
    async def read(db: Any) -> dict[str, Any]:
        found: dict[str, Any] = await db.files.find_one({"_id": file_id})
        return found

    found: dict[str, Any] = vault.run_service(read)
    return found


def page_entries(api: httpx.Client, file_id: str) -> list[dict[str, Any]]:
    """The file's page entries as the owner's API lists them."""
    return [e for e in api.get(f"/files/{file_id}/access-log").json() if e["action"] == "page"]
