"""Webhooks against a live vaultd and a real receiver on 127.0.0.1 (private networks allowed for
this vaultd): endpoints, every event signed per Standard Webhooks, retries under one webhook-id,
redirects and large answers, and the plan and endpoint limits."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import create_link, upload_ok
from tests.inprocess import inprocess_vault
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from tests.webhook_receiver import Receiver, Reply, running_receiver
from tests.webhook_subscriptions import ALL_EVENTS, FAST_RETRIES, subscribe

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

GATE_EVENTS = ["view.verified", "agreement.accepted"]  # tests/test_gates_email.py sends them
ROOM_EVENTS = ["room.opened", "room.revoked"]
AUDIT_EVENTS = ["audit.checkpoint"]  # tests/test_audit_log.py receives it
EVERY_EVENT = ALL_EVENTS + GATE_EVENTS + ROOM_EVENTS + AUDIT_EVENTS  # what one may subscribe to


@pytest.fixture(scope="module")
def hooks_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with inprocess_vault(tmp_path_factory.mktemp("hooks") / "data", **FAST_RETRIES) as server:
        yield server


@pytest.fixture
def owner(hooks_vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = hooks_vault.new_account("Hooked Inc", plan="business")
    with hooks_vault.client(key) as client:
        yield client


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


def test_an_endpoint_is_created_with_a_secret_shown_once(
        owner: httpx.Client, receiver: Receiver, hooks_vault: VaultProcess) -> None:
    created = subscribe(owner, receiver, ["file.uploaded"], hooks_vault)
    assert created["secret"].startswith("whsec_") and len(created["secret"]) > 40
    assert created["id"].startswith("ep_") and created["events"] == ["file.uploaded"]
    listed = owner.get("/webhooks").json()["webhooks"]
    assert listed == [{k: v for k, v in created.items() if k != "secret"}]
    stored = hooks_vault.run_service(
        lambda db: db.webhook_endpoints.find_one({"_id": created["id"]}))
    assert created["secret"] not in repr(stored)
    raw = created["secret"].removeprefix("whsec_")
    assert base64.b64decode(raw) not in stored["secret"]["ciphertext"]
    assert set(stored["secret"]) == {"v", "key_id", "nonce", "ciphertext"}


def test_deleting_an_endpoint_twice_is_a_404_the_second_time(
        owner: httpx.Client, receiver: Receiver) -> None:
    created = subscribe(owner, receiver)
    assert owner.delete(f"/webhooks/{created['id']}").status_code == 204
    again = owner.delete(f"/webhooks/{created['id']}")
    assert again.status_code == 404 and again.json() == {"error": "webhook endpoint not found"}
    assert owner.get("/webhooks").json() == {"webhooks": []}


@pytest.mark.parametrize(("body", "message"), [
    ({"url": "ftp://example.com/x", "events": ["file.uploaded"]},
     "url is not a valid http:// or https:// address"),
    ({"url": "https://user:pw@example.com/x", "events": ["file.uploaded"]},
     "url must not contain a user name or password"),
    ({"url": "https://exa mple.com/x", "events": ["file.uploaded"]},
     "url must not contain spaces or control characters"),
    ({"url": "https://example.com/x", "events": ["file.eaten"]},
     "unknown event 'file.eaten'; events: " + ", ".join(EVERY_EVENT)),
    ({"url": "https://example.com/x", "events": []},
     "events must be a non-empty list among: " + ", ".join(EVERY_EVENT)),
])
def test_bad_endpoints_are_refused(owner: httpx.Client, body: dict[str, Any],
                                   message: str) -> None:
    response = owner.post("/webhooks", json=body)
    assert response.status_code == 400
    assert response.json() == {"error": message}


def test_webhooks_need_the_pro_or_business_plan(hooks_vault: VaultProcess) -> None:
    _, key = hooks_vault.new_account("Free Co", plan="free")
    with hooks_vault.client(key) as client:
        response = client.post("/webhooks", json={"url": "https://example.com/h",
                                                  "events": ["file.uploaded"]})
    assert response.status_code == 402
    assert response.json() == {"error": "webhooks need the Pro or Business plan (account is on "
                                        "Free)"}


def test_an_account_has_at_most_ten_endpoints(owner: httpx.Client) -> None:
    for _ in range(10):
        body = {"url": "https://example.com/h", "events": ["file.deleted"]}
        assert owner.post("/webhooks", json=body).status_code == 201
    response = owner.post("/webhooks", json={"url": "https://example.com/h",
                                              "events": ["file.deleted"]})
    assert response.status_code == 402
    assert response.json() == {"error": "at most 10 webhook endpoints per account"}


def test_every_event_arrives_signed_without_secrets_or_content(
        owner: httpx.Client, receiver: Receiver, hooks_vault: VaultProcess) -> None:
    subscribe(owner, receiver, vault=hooks_vault)
    pdf = docs.pdf(2)
    file = upload_ok(owner, pdf, name="Term sheet.pdf", kind="delivery")
    link = create_link(owner, file["id"], "ana@example.com", viewerName="Ana Lima")
    hooks_vault.secrets.append(link["token"])
    token = link["token"]
    assert owner.get(f"/views/{token}", headers={"x-viewer-ip": "203.0.113.9"}).status_code == 200
    for page in (1, 2, 1):
        assert owner.get(f"/views/{token}/pages/{page}").status_code == 200
    assert owner.delete(f"/views/{token}").status_code == 204
    assert owner.delete(f"/views/{token}").status_code == 204  # already revoked: no 2nd event
    download = owner.get(f"/files/{file['id']}/download", headers={"x-viewer-email": "b@ex.com"})
    assert download.status_code == 200
    assert owner.delete(f"/files/{file['id']}").status_code == 204

    seen = receiver.wait_for(lambda got: len(got) >= len(ALL_EVENTS))
    types = [r.event["type"] for r in seen]
    assert sorted(types) == sorted(ALL_EVENTS), types
    assert all(r.verified for r in seen)
    assert len({r.headers["webhook-id"] for r in seen}) == len(seen)
    for r in seen:
        assert token not in r.body.decode() and pdf[:200] not in r.body
        assert set(r.event) == {"type", "timestamp", "data"}
    opened = receiver.of_type("view.opened")[0].event["data"]
    assert opened["ip"] == "203.0.113.9" and opened["viewerEmail"] == "ana@example.com"
    assert opened["viewerName"] == "Ana Lima" and opened["fileName"] == "Term sheet.pdf"
    assert opened["pageCount"] == 2 and opened["fileId"] == file["id"]
    assert receiver.of_type("file.downloaded")[0].event["data"]["viewerEmail"] == "b@ex.com"
    assert receiver.of_type("view.completed")[0].event["data"]["viewId"] == opened["viewId"]


def test_a_receiver_that_fails_twice_gets_three_attempts_under_one_id(
        owner: httpx.Client, receiver: Receiver, hooks_vault: VaultProcess) -> None:
    receiver.reply = lambda n: Reply(500, body=b"down") if n < 2 else Reply(204, body=b"")
    created = subscribe(owner, receiver, ["file.uploaded"], hooks_vault)
    upload_ok(owner, docs.pdf(1))
    seen = receiver.wait_for(lambda got: len(got) >= 3)
    assert len({r.headers["webhook-id"] for r in seen}) == 1
    assert all(r.verified for r in seen) and len({r.body for r in seen}) == 1
    deliveries = wait_for_deliveries(owner, created["id"], 3)
    assert [(d["attempt"], d["status"], d["ok"]) for d in reversed(deliveries)] == [
        (1, 500, False), (2, 500, False), (3, 204, True)]
    assert deliveries[-1]["error"] == "answered 500"
    assert len(receiver.received) == 3  # delivered: no fourth attempt


def test_redirects_are_not_followed(owner: httpx.Client, receiver: Receiver,
                                    hooks_vault: VaultProcess) -> None:
    receiver.reply = lambda n: Reply(302, {"Location": receiver.url + "/elsewhere"})
    created = subscribe(owner, receiver, ["file.uploaded"], hooks_vault)
    upload_ok(owner, docs.pdf(1))
    first = wait_for_deliveries(owner, created["id"], 1)[-1]
    assert first["status"] == 302 and first["ok"] is False
    assert first["error"] == "answered 302 (redirects are not followed)"
    assert all(r.path == "/hooks" for r in receiver.received)


def test_a_large_answer_is_cut_off_and_still_counts(owner: httpx.Client, receiver: Receiver,
                                                    hooks_vault: VaultProcess) -> None:
    receiver.reply = lambda n: Reply(200, body=b"x" * 200_000)
    created = subscribe(owner, receiver, ["file.uploaded"], hooks_vault)
    upload_ok(owner, docs.pdf(1))
    delivery = wait_for_deliveries(owner, created["id"], 1)[-1]
    assert (delivery["status"], delivery["ok"], delivery["error"]) == (200, True, None)


def test_deliveries_of_an_unknown_endpoint_are_a_404(owner: httpx.Client) -> None:
    response = owner.get("/webhooks/ep_00000000000000000000000000000000/deliveries")
    assert response.status_code == 404
    assert response.json() == {"error": "webhook endpoint not found"}


def wait_for_deliveries(client: httpx.Client, endpoint_id: str,
                        count: int) -> list[dict[str, Any]]:
    def recorded() -> list[dict[str, Any]] | None:
        deliveries = client.get(f"/webhooks/{endpoint_id}/deliveries").json()["deliveries"]
        return list(deliveries) if len(deliveries) >= count else None

    return wait_until(recorded, timeout=20, interval=0.1,
                      what=f"{count} delivery attempts recorded")


def test_room_links_announce_their_first_opening_and_revocations(
        owner: httpx.Client, receiver: Receiver, hooks_vault: VaultProcess) -> None:
    subscribe(owner, receiver, ROOM_EVENTS, vault=hooks_vault)
    file = upload_ok(owner, docs.pdf(1), name="Deck.pdf")
    room = owner.post("/rooms", json={"name": "Board pack"}).json()
    assert owner.post(f"/rooms/{room['id']}/files", json={"fileId": file["id"]}).status_code == 201
    tokens = [owner.post(f"/rooms/{room['id']}/views",
                         json={"viewerEmail": f"r{n}@example.com"}).json()["token"]
              for n in range(3)]
    hooks_vault.secrets.extend(tokens)
    for _ in range(2):  # opened twice: announced once
        assert owner.get(f"/room-views/{tokens[0]}",
                         headers={"x-viewer-ip": "203.0.113.9"}).status_code == 200
    assert owner.delete(f"/room-views/{tokens[0]}").status_code == 204
    assert owner.post(f"/rooms/{room['id']}/revoke-views").json() == {"revoked": 2}
    seen = receiver.wait_for(lambda got: len(got) >= 3)
    assert sorted(r.event["type"] for r in seen) == ["room.opened", "room.revoked",
                                                     "room.revoked"]
    opened = receiver.of_type("room.opened")[0].event["data"]
    assert opened["roomId"] == room["id"] and opened["roomName"] == "Board pack"
    assert opened["viewerEmail"] == "r0@example.com" and opened["ip"] == "203.0.113.9"
    counts = sorted(r.event["data"]["revoked"] for r in receiver.of_type("room.revoked"))
    assert counts == [1, 2]
    for r in seen:
        assert r.verified and not any(token in r.body.decode() for token in tokens)
