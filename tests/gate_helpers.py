"""Helpers of the gate tests (file links and room links): the texts a gated request answers
with, a gated file link whose token the vault's log check knows as a secret, and the email
gate's steps (a session, then a code read from the delivered mail)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.http_helpers import create_link
from tests.mail_server import MailServer, code_in
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


def email_session(api: httpx.Client, base: str, vault: VaultProcess,
                  headers: dict[str, str]) -> str:
    """A new viewer session on the link at `base` (`/views/<token>` or `/room-views/<token>`),
    which has the email gate still to pass."""
    body = api.post(f"{base}/sessions", headers=headers).json()
    assert body["pending"] == ["verifyEmail"]
    vault.secrets.append(body["sessionId"])
    session: str = body["sessionId"]
    return session


def send_code(api: httpx.Client, base: str, session: str, mail: MailServer, vault: VaultProcess,
              headers: dict[str, str]) -> tuple[str, str]:
    """(The code from the delivered mail, the session's new id: the old one has ended.)"""
    before = mail.inbox.count()
    response = api.post(f"{base}/sessions/{session}/code", headers=headers)
    assert response.status_code == 202, response.text
    body = response.json()
    renewed: str = body.pop("sessionId")
    assert renewed != session
    vault.secrets.append(renewed)
    assert body == {"sentTo": "a***@example.com", "expiresInSeconds": 600,
                    "resendInSeconds": 30}
    return code_in(mail.inbox.wait_for(before + 1)), renewed
