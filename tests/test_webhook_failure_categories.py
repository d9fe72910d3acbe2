"""What a failed webhook attempt tells the tenant: a category only (`refused address`, `no
answer`, `TLS failure`, `answered <status>`), never what a host resolves to, which port answered
or how; vaultd's log keeps the detail under the attempt's message id. Against a vaultd that may
reach 127.0.0.1 (private networks allowed), so that each kind of failure really happens."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import upload_ok
from tests.inprocess import inprocess_vault
from tests.vault_process import VaultProcess, free_port
from tests.webhook_attempts import failure_logged, first_delivery, raw_server, self_signed_context
from tests.webhook_receiver import Reply, running_receiver

pytestmark = pytest.mark.slow  # starts its own vaultd (see docs/testing.md)

PRIVATE_ALLOWED = {"VAULTD_WEBHOOKS_ALLOW_PRIVATE_NETWORKS": "true",
                   "VAULTD_WEBHOOKS_POLL_SECONDS": "0.1"}
QUERY_SECRET = "?sig=tenant-query-secret"  # a URL's query is the tenant's: never logged
OPENAPI = Path(__file__).resolve().parents[1] / "vaultd" / "web" / "openapi.json"
# The published contract's list of categories (`WebhookDelivery.error`).
CATEGORY_PATTERN = json.loads(OPENAPI.read_text())["components"]["schemas"][
    "WebhookDelivery"]["properties"]["error"]["pattern"]


@pytest.fixture(scope="module")
def open_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with inprocess_vault(tmp_path_factory.mktemp("failures") / "data",
                         **PRIVATE_ALLOWED) as server:
        yield server


@pytest.fixture
def owner(open_vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = open_vault.new_account("Failing Receivers Ltd", plan="pro")
    with open_vault.client(key) as client:
        yield client


def attempt(owner: httpx.Client, vault: VaultProcess, url: str) -> tuple[dict[str, object], str]:
    """Register `url`, send one event; the first attempt's record and its logged detail."""
    created = owner.post("/webhooks", json={"url": url + QUERY_SECRET,
                                            "events": ["file.uploaded"]})
    assert created.status_code == 201, created.text
    vault.secrets += [created.json()["secret"], QUERY_SECRET]
    upload_ok(owner, docs.pdf(1))
    delivery = first_delivery(owner, created.json()["id"])
    return delivery, failure_logged(vault, delivery, created.json()["id"])


def assert_category_only(owner: httpx.Client, delivery: dict[str, object], category: str,
                         detail: str) -> None:
    assert (delivery["ok"], delivery["status"], delivery["error"]) == (False, None, category)
    assert re.fullmatch(CATEGORY_PATTERN, category)
    # Nothing of the detail reaches the tenant: not the address, the errno or the reply.
    [endpoint] = owner.get("/webhooks").json()["webhooks"]
    deliveries = owner.get(f"/webhooks/{endpoint['id']}/deliveries").text
    assert detail not in deliveries
    assert not [word for word in ("127.0.0.1", "Errno", "SSL", "Error") if word in deliveries]


def test_a_closed_port_is_no_answer(owner: httpx.Client, open_vault: VaultProcess) -> None:
    delivery, detail = attempt(owner, open_vault, f"http://127.0.0.1:{free_port()}/hooks")
    assert detail == "ConnectionRefusedError: [Errno 111] Connection refused"
    assert_category_only(owner, delivery, "no answer", detail)


def test_a_port_that_never_answers_is_no_answer(
        owner: httpx.Client, open_vault: VaultProcess) -> None:
    with raw_server(lambda conn: None) as port:  # accepts, reads nothing, says nothing
        delivery, detail = attempt(owner, open_vault, f"http://127.0.0.1:{port}/hooks")
    assert re.fullmatch(r"HTTPTimeoutError: Timeout (while connecting|during request)|"
                        r"timed out after 5 s", detail), detail
    assert_category_only(owner, delivery, "no answer", detail)


def test_a_service_that_is_not_http_is_no_answer(
        owner: httpx.Client, open_vault: VaultProcess) -> None:
    def banner(conn: socket.socket) -> None:  # what an SSH port says to anything
        conn.recv(65536)
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\nProtocol mismatch.\r\n")
        conn.close()

    with raw_server(banner) as port:
        delivery, detail = attempt(owner, open_vault, f"http://127.0.0.1:{port}/hooks")
    # Tornado finds no header block before the close (or, were the timing different, the reset)
    assert detail.startswith(("HTTPStreamClosedError: ", "HTTPInputError: ",
                              "ConnectionResetError: ")), detail
    assert_category_only(owner, delivery, "no answer", detail)


def test_a_certificate_no_authority_signed_is_a_tls_failure(
        owner: httpx.Client, open_vault: VaultProcess, tmp_path: Path) -> None:
    with raw_server(lambda conn: None, tls=self_signed_context(tmp_path)) as port:
        delivery, detail = attempt(owner, open_vault, f"https://127.0.0.1:{port}/hooks")
    assert detail.startswith("SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] "
                             "certificate verify failed: self-signed certificate"), detail
    assert_category_only(owner, delivery, "TLS failure", detail)


def test_tls_to_a_plain_http_port_is_a_tls_failure(
        owner: httpx.Client, open_vault: VaultProcess) -> None:
    with running_receiver() as receiver:
        url = receiver.url.replace("http://", "https://")
        delivery, detail = attempt(owner, open_vault, url)
        assert receiver.received == []
    assert detail.startswith("SSLError: [SSL: WRONG_VERSION_NUMBER]"), detail
    assert_category_only(owner, delivery, "TLS failure", detail)


def test_an_error_answer_is_its_status(owner: httpx.Client, open_vault: VaultProcess) -> None:
    with running_receiver() as receiver:
        receiver.reply = lambda n: Reply(503, body=b"internal: db-7.corp is down")
        delivery, detail = attempt(owner, open_vault, receiver.url)
    assert (delivery["status"], delivery["error"], detail) == (503, "answered 503",
                                                               "answered 503")
    assert re.fullmatch(CATEGORY_PATTERN, "answered 503")
    assert re.fullmatch(CATEGORY_PATTERN, "answered 302 (redirects are not followed)")


def test_a_status_then_a_stalled_body_is_decided_by_the_status(
        owner: httpx.Client, open_vault: VaultProcess) -> None:
    def stall(conn: socket.socket) -> None:  # the event was taken; the body never ends
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nok")

    with raw_server(stall) as port:
        created = owner.post("/webhooks", json={"url": f"http://127.0.0.1:{port}/hooks",
                                                "events": ["file.uploaded"]})
        assert created.status_code == 201, created.text
        open_vault.secrets.append(created.json()["secret"])
        upload_ok(owner, docs.pdf(1))
        delivery = first_delivery(owner, created.json()["id"])
    assert (delivery["ok"], delivery["status"], delivery["error"]) == (True, 200, None)
    assert delivery["durationMs"] >= 5000  # it waited out the attempt's time for the body


def test_no_secret_reaches_the_log(open_vault: VaultProcess) -> None:
    log = open_vault.log_text()
    assert "webhook delivery " in log  # the attempts above were logged
    assert not [secret for secret in open_vault.secrets if secret in log]
