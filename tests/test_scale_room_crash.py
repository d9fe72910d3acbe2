"""A room's revoke-all and a room's deletion with 1,000 links each answer after one bounded write
(`services.rooms.room_counts`, `room_deletions`): from the answer on no page or index of those
links is served and the live count is already exact, and a SIGKILL while the links are still
being marked and deleted in the background is finished by the next start's recovery: every link
of the first room marked revoked, every link and item of the second deleted with its record, the
`room.revoked` webhook sent once."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests import documents as docs
from tests.database_processes import wait_for_orphaned_database_to_exit
from tests.embedded_database import running_database, vault_db
from tests.http_helpers import LINK_GONE, assert_json_error, upload_ok
from tests.room_helpers import ROOM_NOT_FOUND, add_file, create_room, room_link
from tests.room_link_seed import seed_room_items, seed_room_links
from tests.vault_process import running_vault
from tests.waiting import wait_until
from tests.webhook_receiver import running_receiver
from tests.webhook_subscriptions import FAST_RETRIES, subscribe
from vaultd.db import Db

pytestmark = pytest.mark.slow  # starts, kills and restarts a vaultd

# Twenty reads of the marking's `revoke_jobs.BATCH` (50) and two hundred paced writes of at most
# 5, ten reads and fifty paced deletes of 20 for the deletion: far from done when the kill lands
# a few requests after the answers, and done by recovery in well under the wait's deadline on a
# loaded machine (5,000 links each took longer than the test's 300 s there).
LINKS = 1000
ITEMS = 100
# The answer is a handful of commands whatever the links (tests/test_room_generation.py counts
# them); this bound only catches a call that walks them again (hundreds of paced writes), on a
# loaded machine.
ANSWER_SECONDS = 2.0


def _state(revoked_room: str, deleted_room: str, account_id: str) -> Any:
    async def read(db: Db) -> dict[str, Any]:
        account = await db.accounts.find_one({"_id": account_id})
        assert account is not None
        deleted = await db.raw("rooms").find_one({"_id": deleted_room}, {"state": 1})
        revoked = await db.raw("rooms").find_one({"_id": revoked_room}, {"linkRevokes": 1})
        assert revoked is not None
        return {"unmarked": await db.room_links.count_documents({"roomId": revoked_room,
                                                                 "revoked": False}),
                "notes": revoked.get("linkRevokes") or {},
                "jobs": await db.raw("revoke_jobs").count_documents({"roomId": revoked_room}),
                "links": await db.room_links.count_documents({"roomId": deleted_room}),
                "items": await db.room_items.count_documents({"roomId": deleted_room}),
                "record": deleted["state"] if deleted is not None else None,
                "accountLive": account["linkCount"]["live"],
                "roomCount": account["roomCount"],
                "events": await db.webhook_outbox.count_documents(
                    {"accountId": account_id, "type": "room.revoked"})}
    return read


def _timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def test_a_rooms_revoke_all_and_deletion_of_1000_links_answer_at_once_and_survive_a_kill(
        tmp_path: Path) -> None:
    with running_receiver() as receiver, running_vault(
            tmp_path / "data", own_database=True, VAULTD_RENDER_WORKERS="1",  # one page read
            **FAST_RETRIES) as vault:
        account_id, key = vault.new_account("Cut Rooms Ltd", plan="business")
        with vault.client(key) as api:
            subscribe(api, receiver, ["room.revoked"], vault)
            file_id = upload_ok(api, docs.pdf(2))["id"]
            rooms = [create_room(api, name)["id"] for name in ("Revoked", "Deleted")]
            tokens = []
            for room in rooms:
                add_file(api, room, file_id)
                tokens.append(room_link(api, room)["token"])
                vault.run_service(lambda db, room=room: seed_room_links(db, account_id, room,
                                                                        LINKS))
            vault.secrets += tokens
            vault.run_service(lambda db: seed_room_items(db, account_id, rooms[1], ITEMS))
            pages = [f"/room-views/{token}/files/{file_id}/pages/1" for token in tokens]
            assert [api.get(page).status_code for page in pages] == [200, 200]
            assert api.get("/account").json()["usage"]["activeLinks"] == 2 * (LINKS + 1)
            revoked, revoke_took = _timed(lambda: api.post(f"/rooms/{rooms[0]}/revoke-views"))
            deleted, delete_took = _timed(lambda: api.delete(f"/rooms/{rooms[1]}"))
            assert revoked.status_code == 200 and revoked.json() == {"revoked": LINKS + 1}
            assert deleted.status_code == 204 and deleted.content == b""
            assert max(revoke_took, delete_took) < ANSWER_SECONDS, (revoke_took, delete_took)
            # Before the background steps have marked or deleted the links: none serves.
            for token, page in zip(tokens, pages, strict=True):
                assert_json_error(api.get(page), 404, LINK_GONE)
                assert_json_error(api.get(f"/room-views/{token}"), 404, LINK_GONE)
            assert_json_error(api.get(f"/rooms/{rooms[1]}"), 404, ROOM_NOT_FOUND)
            assert_json_error(api.delete(f"/rooms/{rooms[1]}"), 404, ROOM_NOT_FOUND)
            assert [room["id"] for room in api.get("/rooms").json()["rooms"]] == [rooms[0]]
            assert api.get("/account").json()["usage"]["activeLinks"] == 0
        vault.stop(signal.SIGKILL)  # its links are still being marked and deleted
        wait_for_orphaned_database_to_exit(vault)
        with running_database(vault.data_dir / "db") as server:
            async def read_cut() -> dict[str, Any]:
                async with vault_db(server) as db:
                    return dict(await _state(rooms[0], rooms[1], account_id)(db))

            cut = asyncio.run(read_cut())
        assert cut["unmarked"] > 0 and cut["jobs"] == 1, cut
        assert cut["links"] > 0 and cut["record"] == "deleting", cut
        assert (cut["accountLive"], cut["roomCount"]) == (0, 1), cut
        vault.start()  # recovery takes both over
        done = {"unmarked": 0, "notes": {}, "jobs": 0, "links": 0, "items": 0, "record": None,
                "accountLive": 0, "roomCount": 1, "events": 1}
        # Inside the test's own 300 s timeout, so that a recovery too slow fails by name
        # (1,000 links each: the whole test took 38 s at load 3).
        wait_until(lambda: vault.run_service(_state(rooms[0], rooms[1], account_id)) == done,
                   timeout=200, what="the resumed revoke-all and deletion finished")
        sent = receiver.wait_for(lambda got: len(got) >= 1, timeout=30)[0]
        assert sent.verified and sent.event["type"] == "room.revoked"
        assert sent.event["data"] == {"roomId": rooms[0], "revoked": LINKS + 1}
        # One event, delivered at least once (a kill between the receiver's answer and the
        # delivery's record sends the same message again, same webhook-id).
        assert {got.headers["webhook-id"] for got in receiver.received} == {
            sent.headers["webhook-id"]}, receiver.received
        with vault.client(key) as api:
            assert_json_error(api.get(pages[0]), 404, LINK_GONE)
            assert api.get("/account").json()["usage"]["activeLinks"] == 0
