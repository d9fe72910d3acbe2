"""A webhook endpoint's test event, through a real vaultd and a real receiver that verifies the
Standard Webhooks signature: an admin key's `POST /v1/webhooks/:id/test` reaches that endpoint
only, signed, and shows in its delivery log; a second press within the window is refused in
words; a member's or an auditor's key and a member's console form are refused with the roles'
words; another account's endpoint is a 404. The browser half (the button in Settings) is in
tests/test_console_settings_browser.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.console_auth import browser, console_vault, new_member, sign_in
from tests.http_helpers import assert_json_error
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from tests.webhook_receiver import Receiver, running_receiver
from vaultd.services.webhooks.webhook_test_event import TOO_MANY_TESTS

pytestmark = pytest.mark.slow  # starts its own vaultd, SMTP server and receivers

MANAGE_REFUSED = "the {} role cannot manage members, API keys, webhooks or branding"
FAST_DELIVERY = {"VAULTD_WEBHOOKS_ALLOW_PRIVATE_NETWORKS": "true",
                 "VAULTD_WEBHOOKS_POLL_SECONDS": "0.1"}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("hook-test") / "data", mail,
                       **FAST_DELIVERY) as server:
        yield server


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


def api(vault: VaultProcess, key: str) -> httpx.Client:
    return httpx.Client(base_url=f"{vault.url}/v1", timeout=30,
                        headers={"Authorization": f"Bearer {key}"})


def subscribe(client: httpx.Client, receiver: Receiver, vault: VaultProcess) -> str:
    made = client.post("/webhooks", json={"url": receiver.url, "events": ["file.deleted"]})
    assert made.status_code == 201, made.text
    receiver.secret = made.json()["secret"]
    vault.secrets.append(made.json()["secret"])
    endpoint_id: str = made.json()["id"]
    return endpoint_id


def role_key(client: httpx.Client, vault: VaultProcess, role: str) -> str:
    made = client.post("/keys", json={"name": f"{role} key", "role": role})
    assert made.status_code == 201, made.text
    key: str = made.json()["key"]
    vault.secrets.append(key)
    return key


def test_an_admin_key_sends_a_signed_test_event_to_that_endpoint_only(
        vault: VaultProcess, receiver: Receiver) -> None:
    _, key = vault.new_account("Test Signal", plan="business")
    with api(vault, key) as admin, running_receiver() as bystander:
        endpoint_id = subscribe(admin, receiver, vault)
        subscribe(admin, bystander, vault)
        sent = admin.post(f"/webhooks/{endpoint_id}/test")
        assert sent.status_code == 202, sent.text
        assert sent.json()["type"] == "webhook.test"
        message_id = sent.json()["messageId"]
        got = receiver.wait_for(lambda seen: len(seen) >= 1)
        assert got[0].verified, "the test event's signature does not verify"
        assert got[0].headers["webhook-id"] == message_id
        event = got[0].event
        assert event["type"] == "webhook.test"
        assert event["data"]["endpointId"] == endpoint_id
        again = [admin.post(f"/webhooks/{endpoint_id}/test") for _ in range(2)]
        # Two presses within a few milliseconds: at most one may fall in the next 10 s window.
        refused = [answer for answer in again if answer.status_code == 429]
        assert refused, [answer.status_code for answer in again]
        assert_json_error(refused[0], 429, TOO_MANY_TESTS)

        def logged() -> list[dict[str, Any]]:
            rows: list[dict[str, Any]] = admin.get(
                f"/webhooks/{endpoint_id}/deliveries").json()["deliveries"]
            return [row for row in rows if row["messageId"] == message_id]
        wait_until(lambda: logged() != [], timeout=20)
        assert logged()[0]["type"] == "webhook.test" and logged()[0]["ok"] is True
        assert logged()[0]["status"] == 200
        assert bystander.received == []  # the other endpoint was not called


@pytest.mark.parametrize("role", ["member", "auditor"])
def test_a_key_below_admin_is_refused_and_nothing_is_sent(
        vault: VaultProcess, receiver: Receiver, role: str) -> None:
    _, key = vault.new_account(f"Test Roles {role}", plan="pro")
    with api(vault, key) as admin:
        endpoint_id = subscribe(admin, receiver, vault)
        with api(vault, role_key(admin, vault, role)) as weak:
            assert_json_error(weak.post(f"/webhooks/{endpoint_id}/test"), 403,
                              MANAGE_REFUSED.format(role))
        assert admin.get(f"/webhooks/{endpoint_id}/deliveries").json()["deliveries"] == []
    assert receiver.received == []


def test_another_accounts_endpoint_is_not_found(vault: VaultProcess, receiver: Receiver) -> None:
    _, key = vault.new_account("Test Owner", plan="pro")
    _, stranger_key = vault.new_account("Test Stranger", plan="pro")
    with api(vault, key) as owner, api(vault, stranger_key) as stranger:
        endpoint_id = subscribe(owner, receiver, vault)
        for path in (f"/webhooks/{endpoint_id}/test", "/webhooks/ep_nothing/test"):
            assert_json_error(stranger.post(path), 404, "webhook endpoint not found")
    assert receiver.received == []


def test_a_members_console_form_is_refused_in_the_roles_words(
        vault: VaultProcess, mail: MailServer, receiver: Receiver) -> None:
    account_id, key = vault.new_account("Test Console", plan="pro")
    with api(vault, key) as admin:
        endpoint_id = subscribe(admin, receiver, vault)
    new_member(vault, account_id, "plain@console.example", role="member")
    with browser(vault) as member:
        csrf = sign_in(member, vault, mail, "plain@console.example")["csrfToken"]
        path = f"/console/settings/webhooks/{endpoint_id}/test"
        assert_json_error(member.post(path, data={"_csrf": csrf}), 403,
                          MANAGE_REFUSED.format("member"))
        page = member.post(path, data={"_csrf": csrf}, headers={"Accept": "text/html"})
        assert page.status_code == 403 and MANAGE_REFUSED.format("member") in page.text
    assert receiver.received == []
