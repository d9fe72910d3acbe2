"""What the webhook outbox promises when things go wrong: a crash between the outbox write and
the event's record (the message is sent if and only if the record exists), a master-key rotation
that drops the old key, concurrent endpoint creates against the limit, and retention."""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests import documents as docs
from tests.database_processes import wait_for_orphaned_database_to_exit
from tests.http_helpers import assert_json_error, create_link, sent_politely, upload_ok
from tests.vault_process import VaultProcess, running_vault
from tests.waiting import wait_until
from tests.webhook_receiver import distinct, running_receiver
from tests.webhook_subscriptions import FAST_RETRIES, subscribe
from vaultd.db import Db
from vaultd.db_indexes import ensure_indexes
from vaultd.records import LinkDoc, LinkStatsDoc
from vaultd.secrets import digest, new_token
from vaultd.services.common import outbox
from vaultd.services.webhooks import webhook_events
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

HOLD = {**FAST_RETRIES, "VAULTD_WEBHOOKS_HOLD_SECONDS": "3"}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    """One vaultd for the tests that neither kill it nor rotate its master key, each with an
    account (and a receiver) of its own: HOLD, and the pruning test's retention of a day (no
    other test's message is that old)."""
    with running_vault(tmp_path_factory.mktemp("durability") / "data", own_database=True,
                       **HOLD, VAULTD_WEBHOOKS_KEEP_DAYS="1") as server:
        yield server


def _link(account_id: str, file_id: str, email: str) -> LinkDoc:
    now = utcnow()
    return {"_id": str(uuid.uuid4()), "hash": digest(new_token()), "accountId": account_id,
            "fileId": file_id, "viewerEmail": email, "viewerName": email.partition("@")[0],
            "createdAt": now, "expiresAt": now + timedelta(hours=1), "revoked": False}


def _stats(link: LinkDoc) -> LinkStatsDoc:
    now = utcnow()
    return {"_id": link["_id"], "accountId": link["accountId"], "fileId": link["fileId"],
            "viewerEmail": link["viewerEmail"], "viewerName": link["viewerName"],
            "pageCount": 1, "totalSeconds": 0.0, "firstOpenedAt": now, "openMarker": "m",
            "openIp": "203.0.113.7", "lastSeenAt": now, "openAnnounced": False}


def test_a_crash_between_the_outbox_and_the_record_sends_exactly_the_recorded_events(
        tmp_path: Path) -> None:
    """The writes vaultd makes for an event, done up to the crash point, then SIGKILL."""
    with running_receiver() as receiver, running_vault(tmp_path / "data", own_database=True,
                                                       **HOLD) as vault:
        account_id, key = vault.new_account("Crash Point Ltd", plan="pro")
        with vault.client(key) as client:
            subscribe(client, receiver, ["view.created", "view.opened"], vault)
            file = upload_ok(client, docs.pdf(1), name="Deck.pdf")
        written = _link(account_id, file["id"], "kept@example.com")
        never = _link(account_id, file["id"], "lost@example.com")
        opened = _link(account_id, file["id"], "open@example.com")

        async def crash_points(db: Db) -> tuple[list[str], list[str]]:
            doc = await db.files.find_one({"_id": file["id"]})
            assert doc is not None
            # 1. outbox held, record written, killed before the release
            kept = await webhook_events.view_created(db, written, doc)
            await db.links.insert_one(written)
            # 2. outbox held, killed before the record
            lost = await webhook_events.view_created(db, never, doc)
            # 3. the open recorded (with "not announced"), killed before its message
            await db.links.insert_one(opened)
            await db.link_stats.insert_one(_stats(opened))
            return kept, lost

        kept, lost = vault.run_service(crash_points)
        vault.stop(signal.SIGKILL)  # well within the 3 s hold: nothing was settled yet
        wait_for_orphaned_database_to_exit(vault)
        assert receiver.received == []
        vault.start()
        seen = receiver.wait_for(lambda got: len(got) >= 2, timeout=30)
        by_type = {r.event["type"]: r for r in seen}
        created, announced = by_type["view.created"], by_type["view.opened"]
        assert created.verified and created.headers["webhook-id"] == kept[0]
        assert created.event["data"]["viewId"] == written["_id"]
        assert announced.verified and announced.event["data"]["viewId"] == opened["_id"]
        assert announced.event["data"]["ip"] == "203.0.113.7"

        def settled(db: Db) -> Any:
            return db.webhook_outbox.find_one({"_id": lost[0]})

        wait_until(lambda: vault.run_service(settled) is None, what="the orphan dropped")
        assert vault.run_service(lambda db: db.link_stats.find_one({"_id": opened["_id"]}))[
            "openAnnounced"] is True
        # Two messages, each delivered, and nothing for the link that was never written. A
        # message may arrive twice under the same webhook-id (at least once: an attempt that
        # outlasts its lease on a loaded machine is sent again); never a third message.
        wait_until(lambda: _states(vault, account_id) == {"delivered": 2}, what="delivered")
        assert {r.headers["webhook-id"] for r in receiver.received} == {
            created.headers["webhook-id"], announced.headers["webhook-id"]}, receiver.received
        assert created.headers["webhook-id"] != announced.headers["webhook-id"]
        assert never["_id"] not in b"".join(r.body for r in receiver.received).decode()


def test_a_crash_inside_revoke_views_sends_the_event_only_if_links_were_revoked(
        tmp_path: Path) -> None:
    """`POST /files/:id/revoke-views` step by step (links.revoke_file_links) up to two crash
    points on two files, then SIGKILL: the file whose links changed gets its event, the other
    none."""
    with running_receiver() as receiver, running_vault(tmp_path / "data", own_database=True,
                                                       **HOLD) as vault:
        account_id, key = vault.new_account("Revoke Crash Ltd", plan="pro")
        with vault.client(key) as client:
            subscribe(client, receiver, ["view.revoked"], vault)
            revoked_file = upload_ok(client, docs.pdf(1), name="Revoked.pdf")
            untouched_file = upload_ok(client, docs.pdf(1), name="Untouched.pdf")
        links = [_link(account_id, revoked_file["id"], f"r{n}@example.com") for n in range(2)]
        other = _link(account_id, untouched_file["id"], "u@example.com")

        async def crash_points(db: Db) -> list[str]:
            await db.links.insert_many([*links, other])
            # 1. held, the file's link generation raised by the batch, killed before the release
            kept = await webhook_events.file_links_revoking(
                db, account_id, revoked_file["id"], 2, "batch-kept", 0)
            await db.files.update_one(
                {"_id": revoked_file["id"]},
                {"$set": {"linkGeneration": 1,
                          "linkRevokes.0": {"at": utcnow(), "batch": "batch-kept"}}})
            # 2. held, killed before the generation's update
            await webhook_events.file_links_revoking(
                db, account_id, untouched_file["id"], 1, "batch-lost", 0)
            return kept

        kept = vault.run_service(crash_points)
        vault.stop(signal.SIGKILL)  # within the 3 s hold: nothing was settled yet
        wait_for_orphaned_database_to_exit(vault)
        vault.start()
        [sent] = receiver.wait_for(lambda got: len(got) >= 1, timeout=30)
        assert sent.verified and sent.headers["webhook-id"] == kept[0]
        assert sent.event["data"]["fileId"] == revoked_file["id"]
        assert sent.event["data"]["revoked"] == 2
        wait_until(lambda: _states(vault, account_id) == {"delivered": 1}, what="orphan dropped")
        assert len(distinct(receiver.received)) == 1


def test_revoke_views_raced_by_another_revoke_announces_what_it_revoked(
        vault: VaultProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another caller revokes one of the file's links after revoke-views has read the file's
    count and held its event (forced here by wrapping the hold): the generation's write finds
    the count changed and is not made; the call reads again and revokes the two left. Two
    events go out: the one link's, and the file's with 2; the first hold is dropped."""
    from vaultd.services.accounts.accounts import get_account
    from vaultd.services.links import links as link_service

    with running_receiver() as receiver:
        account_id, key = vault.new_account("Race Ltd", plan="pro")
        with vault.client(key) as client:
            subscribe(client, receiver, ["view.revoked"], vault)
            file = upload_ok(client, docs.pdf(1), name="Raced.pdf")
        holding = webhook_events.file_links_revoking
        held: list[list[str]] = []
        raced: list[str] = []

        async def held_then_raced(db: Db, *args: Any) -> list[str]:
            held.append(await holding(db, *args))
            await link_service.revoke_link_id(db, account_id, file["id"], raced[0])
            return held[-1]

        monkeypatch.setattr(webhook_events, "file_links_revoking", held_then_raced)

        async def revoke(db: Db) -> tuple[int, list[str]]:
            account = await get_account(db, account_id)
            request = link_service.LinkRequest(file["id"], "v@example.com", "V", 3600)
            for _ in range(3):
                await link_service.create_link(db, account, request)
            first = await db.links.find_one({"fileId": file["id"]})
            assert first is not None
            raced.append(first["_id"])
            revoked = await link_service.revoke_file_links(db, account_id, file["id"])
            return revoked, [m["_id"] async for m in db.webhook_outbox.find(
                {"accountId": account_id, "type": "view.revoked"})]

        revoked, messages = vault.run_service(revoke)
        assert revoked == 2
        assert len(held) == 2 and held[1][0] in messages and held[0][0] not in messages
        sent = distinct(receiver.wait_for(lambda got: len(distinct(got)) >= 2, timeout=30))
        counts = sorted(str(r.event["data"].get("revoked")) for r in sent)
        assert all(r.verified for r in sent) and counts == ["2", "None"], counts
        wait_until(lambda: _states(vault, account_id) == {"delivered": 2}, what="delivered")
        assert len(distinct(receiver.received)) == 2


def test_revoke_views_over_http_sends_one_event_with_the_count(vault: VaultProcess) -> None:
    with running_receiver() as receiver:
        _, key = vault.new_account("Revoke Ltd", plan="pro")
        with vault.client(key) as client:
            subscribe(client, receiver, ["view.revoked"], vault)
            file = upload_ok(client, docs.pdf(1))
            for n in range(3):
                create_link(client, file["id"], f"v{n}@example.com")
            assert client.post(f"/files/{file['id']}/revoke-views").status_code == 200
        [sent] = receiver.wait_for(lambda got: len(got) >= 1)
        assert sent.event["type"] == "view.revoked" and sent.event["data"]["revoked"] == 3


def _states(vault: Any, account_id: str) -> dict[str, int]:
    async def count(db: Db) -> dict[str, int]:
        states: dict[str, int] = {}
        async for message in db.webhook_outbox.find({"accountId": account_id}):
            states[message["state"]] = states.get(message["state"], 0) + 1
        return states

    return dict(vault.run_service(count))


def test_deliveries_still_verify_after_a_rotation_that_drops_the_old_key(
        tmp_path: Path) -> None:
    with running_receiver() as receiver, running_vault(tmp_path / "data", own_database=True,
                                                       **FAST_RETRIES) as vault:
        _, key = vault.new_account("Rotating Ltd", plan="business")
        with vault.client(key) as client:
            created = subscribe(client, receiver, ["file.uploaded"], vault)
            before = vault.run_service(
                lambda db: db.webhook_endpoints.find_one({"_id": created["id"]}))["secret"]
            result = vault.admin_json("master-key", "rotate", "--drop-old")
            assert result["keyIds"] == [result["currentKeyId"]] and result["rewrapped"] >= 1
            after = vault.run_service(
                lambda db: db.webhook_endpoints.find_one({"_id": created["id"]}))["secret"]
            assert before["key_id"] != after["key_id"] == result["currentKeyId"]
            upload_ok(client, docs.pdf(1))
            seen = receiver.wait_for(lambda got: len(got) >= 1)
            assert seen[0].verified, "signed with the secret shown at creation"
            deliveries = client.get(f"/webhooks/{created['id']}/deliveries").json()
            assert deliveries["deliveries"][0]["ok"] is True
            assert deliveries["deliveries"][0]["error"] is None


def test_concurrent_creates_never_pass_ten_endpoints(vault: VaultProcess) -> None:
    account_id, key = vault.new_account("Racing Ltd", plan="pro")
    body = {"url": "https://example.com/h", "events": ["file.deleted"]}
    with vault.client(key) as client:
        assert client.post("/webhooks", json=body).status_code == 201
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda _: sent_politely(
                lambda: client.post("/webhooks", json=body)), range(24)))
        refused = [a for a in answers if a.status_code != 201]
        assert len(answers) - len(refused) == 9
        for answer in refused:
            assert_json_error(answer, 402, "at most 10 webhook endpoints per account")
        listed = client.get("/webhooks").json()["webhooks"]
    assert len(listed) == 10
    slots = vault.run_service(lambda db: db.webhook_endpoints.distinct(
        "slot", {"accountId": account_id}))
    assert sorted(slots) == list(range(10))


def test_old_messages_and_attempts_are_pruned_and_deliveries_keep_their_shape(
        vault: VaultProcess) -> None:
    with running_receiver() as receiver:
        _, key = vault.new_account("Tidy Ltd", plan="pro")
        with vault.client(key) as client:
            created = subscribe(client, receiver, ["view.created"], vault)
            file = upload_ok(client, docs.pdf(1))
            create_link(client, file["id"], "a@example.com")
            receiver.wait_for(lambda got: len(got) >= 1)
            fresh = wait_until(lambda: client.get(
                f"/webhooks/{created['id']}/deliveries").json()["deliveries"])
            old = utcnow() - timedelta(days=2)

            async def age_copies(db: Db) -> None:
                row = await db.webhook_deliveries.find_one({"endpointId": created["id"]})
                message = await db.webhook_outbox.find_one({"endpointId": created["id"]})
                assert row is not None and message is not None
                await db.webhook_deliveries.insert_one({**row, "_id": "old", "at": old})
                await db.webhook_outbox.insert_one(
                    {**message, "_id": "msg_old", "createdAt": old, "finishedAt": old})

            vault.run_service(age_copies)

            def pruned(db: Db) -> Any:
                return outbox_and_attempts(db, created["id"])

            wait_until(lambda: vault.run_service(pruned) == (1, 1), what="pruned")
            kept = client.get(f"/webhooks/{created['id']}/deliveries").json()
        assert kept == {"deliveries": fresh}
        assert set(fresh[0]) == {"messageId", "type", "attempt", "at", "status", "ok",
                                 "durationMs", "error"}
        assert fresh[0]["messageId"].startswith("msg_") and fresh[0]["ok"] is True


async def outbox_and_attempts(db: Db, endpoint_id: str) -> tuple[int, int]:
    messages = await db.webhook_outbox.count_documents({"endpointId": endpoint_id})
    attempts = await db.webhook_deliveries.count_documents({"endpointId": endpoint_id})
    return messages, attempts


def test_a_held_message_is_never_sent_before_its_record_exists(vault: VaultProcess) -> None:
    with running_receiver() as receiver:
        account_id, key = vault.new_account("Patient Ltd", plan="pro")
        with vault.client(key) as client:
            subscribe(client, receiver, ["view.created"], vault)
            file = upload_ok(client, docs.pdf(1))
        link = _link(account_id, file["id"], "late@example.com")

        async def hold(db: Db) -> list[str]:
            doc = await db.files.find_one({"_id": file["id"]})
            assert doc is not None
            return await webhook_events.view_created(db, link, doc)

        held = vault.run_service(hold)
        with vault.client(key) as client:  # a later event goes out while this one waits
            create_link(client, file["id"], "now@example.com")
        first = receiver.wait_for(lambda got: len(got) >= 1)
        assert first[0].event["data"]["viewerEmail"] == "now@example.com"
        assert vault.run_service(
            lambda db: db.webhook_outbox.find_one({"_id": held[0]}))["state"] == "held"

        async def record(db: Db) -> None:
            await db.links.insert_one(link)
            await outbox.release(db, held)

        vault.run_service(record)
        seen = receiver.wait_for(lambda got: len(got) >= 2)
        assert seen[1].headers["webhook-id"] == held[0] and seen[1].verified
        assert seen[1].event["data"]["viewId"] == link["_id"]


def test_endpoints_created_before_slots_are_numbered_at_start(vault: VaultProcess) -> None:
    account_id, key = vault.new_account("Early Ltd", plan="pro")

    async def legacy(db: Db) -> list[int]:
        await db.webhook_endpoints.drop_index("accountId_1_slot_1")
        for number in range(2):
            await db.raw("webhook_endpoints").insert_one(
                {"_id": f"ep_{number:032x}", "accountId": account_id, "createdAt": utcnow(),
                 "url": "https://example.com/h", "events": ["file.deleted"], "secret": {}})
        await ensure_indexes(db)
        return sorted(await db.webhook_endpoints.distinct("slot", {"accountId": account_id}))

    assert vault.run_service(legacy) == [0, 1]
    with vault.client(key) as client:
        body = {"url": "https://example.com/h", "events": ["file.deleted"]}
        created = client.post("/webhooks", json=body)
        assert created.status_code == 201, created.text
    stored = vault.run_service(
        lambda db: db.webhook_endpoints.find_one({"_id": created.json()["id"]}))
    assert stored["slot"] == 2
