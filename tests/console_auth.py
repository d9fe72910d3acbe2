"""Signing members in over HTTP for the console tests: a vaultd that mails through the real
SMTP server of `tests.mail_server`, members inserted as the contract's records, and a browser-
like client (its own `X-Forwarded-For` address, the site's own `Origin`, cookies kept)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.mail_server import MailServer, code_in
from tests.member_records import change_member, insert_member
from tests.vault_process import VaultProcess, running_vault
from vaultd.records.members import MemberState, RoleName

NOT_SIGNED_IN = "not signed in (or the session has ended): sign in again"
WRONG_CODE = "the code is wrong, expired or spent: ask for a new one"
NO_ORIGIN = "cross-site request refused: the request carries no Origin or Referer"
OTHER_ORIGIN = "cross-site request refused: the Origin is not this site's"
NO_CSRF = "missing CSRF token: send the session's token in X-CSRF-Token"
WRONG_CSRF = "the CSRF token is not this session's"
PLAIN_COOKIE = "vaultd_session"

_addresses = itertools.count(10)


@contextmanager
def console_vault(data_dir: Path, mail: MailServer | None, **env: str) -> Iterator[VaultProcess]:
    """A vaultd behind a trusted proxy on loopback (each client names its own IP address)."""
    mail_env = mail.env() if mail is not None else {}
    with running_vault(data_dir, VAULTD_TRUSTED_PROXIES="127.0.0.1/32", **mail_env,
                       **env) as server:
        yield server


def browser(vault: VaultProcess, **headers: str) -> httpx.Client:
    """A client from an address of its own, sending the site's own Origin (as its pages do)."""
    ip = f"198.51.100.{next(_addresses) % 250 + 1}"
    return httpx.Client(base_url=vault.url, timeout=60, headers={
        "Origin": vault.url, "X-Forwarded-For": ip, "User-Agent": "console-test", **headers})


def new_member(vault: VaultProcess, account_id: str, email: str, *, role: RoleName = "admin",
               state: MemberState = "active") -> str:
    member_id: str = vault.run_service(
        lambda db: insert_member(db, account_id, email, role=role, state=state))
    return member_id


def change(vault: VaultProcess, member_id: str, **fields: Any) -> None:
    vault.run_service(lambda db: change_member(db, member_id, **fields))


def ask_code(client: httpx.Client, email: str) -> httpx.Response:
    return client.post("/console/auth/code", json={"email": email})


def mailed_code(client: httpx.Client, mail: MailServer, email: str) -> str:
    before = mail.inbox.count()
    response = ask_code(client, email)
    assert response.status_code == 202, response.text
    message = mail.inbox.wait_for(before + 1)
    assert message["To"] == email
    return code_in(message)


def sign_in(client: httpx.Client, vault: VaultProcess, mail: MailServer,
            email: str) -> dict[str, Any]:
    """Signed in by a mailed code; the cookie is in the client, the answer returned."""
    code = mailed_code(client, mail, email)
    response = client.post("/console/auth/sign-in", json={"email": email, "code": code})
    assert response.status_code == 200, response.text
    vault.secrets.append(client.cookies[PLAIN_COOKIE])
    body: dict[str, Any] = response.json()
    vault.secrets.append(body["csrfToken"])
    return body


def member_client(vault: VaultProcess, mail: MailServer, account_id: str, email: str,
                  role: RoleName = "admin") -> tuple[httpx.Client, str]:
    """A new member of `account_id` with `role`, signed in by a mailed code in a browser of
    their own: the browser and the session's CSRF token."""
    new_member(vault, account_id, email, role=role)
    client = browser(vault)
    csrf: str = sign_in(client, vault, mail, email)["csrfToken"]
    return client, csrf
