"""What the access log holds for a file, read straight from the database of a running vaultd (the
API's own listing filters and shapes it)."""

from __future__ import annotations

from typing import Any

from tests.vault_process import VaultProcess


def access_log_entries(vault: VaultProcess, file_id: str,
                       action: str = "page") -> list[dict[str, Any]]:
    """The file's entries of `action`, oldest first."""
    async def read(db: Any) -> list[dict[str, Any]]:
        cursor = db.access_log.find({"fileId": file_id, "action": action}).sort("at", 1)
        return [entry async for entry in cursor]

    result: list[dict[str, Any]] = vault.run_service(read)
    return result
