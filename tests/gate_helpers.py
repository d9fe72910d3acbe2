"""Helpers of the gate tests (file links and room links): the texts a gated request answers
with, and a gated file link whose token the vault's log check knows as a secret."""

from __future__ import annotations

from typing import Any

import httpx

from tests.http_helpers import create_link
from tests.vault_process import VaultProcess

# The viewer session's cookie, and the error texts of the interface spec, written out (not
# imported from vaultd): a changed name or message is a changed contract and should fail here.
COOKIE = "vaultd_session"
SESSION_GONE = "viewer session not found or ended: open a new one"


def pending(*gates: str) -> str:
    """The 403 message of a request made before `gates` are passed."""
    return f"gates still pending: {', '.join(gates)} (pass them in a viewer session)"


def gated_link(api: httpx.Client, file_id: str, vault: VaultProcess, **policy: Any) -> str:
    """The token of a new link to `file_id` under `policy`, registered as a secret of `vault`
    (so the test fails if it ever reaches the vault's logs)."""
    token: str = create_link(api, file_id, policy=policy)["token"]
    vault.secrets.append(token)
    return token
