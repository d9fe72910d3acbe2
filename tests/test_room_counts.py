"""What rooms count, over HTTP: the plan's room cap taken atomically (concurrent creates at the
cap), room links in the account's `activeLinks` from the maintained count (created, revoked,
revoked all, deleted with their room, expired), and a `room.view` entry that names no file in
the room's log and in the account's export."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from datetime import timedelta
from typing import Any

import httpx

from tests import documents as docs
from tests.http_helpers import assert_json_error, upload_ok
from tests.link_clock import set_room_expiry
from tests.room_helpers import add_file, add_folder, create_room, room_link
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from vaultd.timefmt import utcnow

PRO_CAP = "plan Pro allows at most 10 rooms"


async def create_at_once(vault: VaultProcess, key: str, count: int) -> list[httpx.Response]:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=f"{vault.url}/v1", headers=headers,
                                 timeout=60) as client:
        return await asyncio.gather(*(client.post("/rooms", json={"name": f"Race {n}"})
                                      for n in range(count)))


def test_concurrent_creates_at_the_cap_pass_once(vault: VaultProcess) -> None:
    _, key = vault.new_account("Racing Co", plan="pro")
    with vault.client(key) as api:
        for n in range(8):
            create_room(api, f"Room {n}")
        answers = asyncio.run(create_at_once(vault, key, 8))
        statuses = sorted(answer.status_code for answer in answers)
        assert statuses == [201, 201] + [402] * 6, statuses
        for answer in answers:
            if answer.status_code == 402:
                assert_json_error(answer, 402, PRO_CAP)
        assert api.get("/rooms").json()["total"] == 10
        # A deleted room gives its place back, once.
        room_id = api.get("/rooms").json()["rooms"][0]["id"]
        assert api.delete(f"/rooms/{room_id}").status_code == 204
        assert api.delete(f"/rooms/{room_id}").status_code == 404
        create_room(api, "Back in")
        assert_json_error(api.post("/rooms", json={"name": "One too many"}), 402, PRO_CAP)


def active_links(api: httpx.Client) -> int:
    count: int = api.get("/account").json()["usage"]["activeLinks"]
    return count


def test_room_links_count_in_active_links_until_revoked_deleted_or_expired(
        vault: VaultProcess) -> None:
    _, key = vault.new_account("Counting Co", plan="pro")
    with vault.client(key) as api:
        first, second = create_room(api, "First"), create_room(api, "Second")
        tokens = [room_link(api, first["id"])["token"] for _ in range(3)]
        tokens += [room_link(api, second["id"], f"r{n}@example.com")["token"] for n in range(2)]
        vault.secrets.extend(tokens)
        assert active_links(api) == 5
        assert api.delete(f"/room-views/{tokens[0]}").status_code == 204
        assert api.delete(f"/room-views/{tokens[0]}").status_code == 204  # twice: counted once
        assert active_links(api) == 4
        assert api.post(f"/rooms/{first['id']}/revoke-views").json() == {"revoked": 2}
        assert active_links(api) == 2
        # One of the second room's links expires: its expiry set to a moment after the last
        # read's sweep (standing in for time), then the count drops once that moment passed.
        expiry = utcnow() + timedelta(milliseconds=300)

        async def expire(db: Any) -> None:
            await set_room_expiry(db, {"roomId": second["id"], "viewerEmail": "r0@example.com"},
                                  expiry)

        vault.run_service(expire)
        wait_until(lambda: active_links(api) == 1, what="the expired room link swept out")
        assert active_links(api) == 1  # swept once
        room_link(api, second["id"], "r9@example.com")
        assert active_links(api) == 2
        assert api.delete(f"/rooms/{second['id']}").status_code == 204
        assert active_links(api) == 0


def test_a_room_view_entry_names_the_room_and_no_file(vault: VaultProcess) -> None:
    account_id, key = vault.new_account("Export Co", plan="business")
    with vault.client(key) as api:
        room = create_room(api, "Exported room")
        token = room_link(api, room["id"])["token"]
        vault.secrets.append(token)
        assert api.get(f"/room-views/{token}", headers={"x-viewer-ip": "203.0.113.7"}
                       ).status_code == 200
        [entry] = api.get(f"/rooms/{room['id']}/access-log").json()
        assert entry["action"] == "room.view" and entry["roomId"] == room["id"]
        assert "fileId" not in entry
    [exported] = [json.loads(line) for line in
                  vault.admin("log", "export", account_id).stdout.splitlines()]
    assert exported == {"at": entry["at"], "action": "room.view", "roomId": room["id"],
                        "viewerEmail": "reader@example.com", "ip": "203.0.113.7"}
    rows = list(csv.DictReader(io.StringIO(
        vault.admin("log", "export", account_id, "--format", "csv").stdout)))
    assert rows == [{"at": entry["at"], "fileId": "", "action": "room.view",
                     "viewerEmail": "reader@example.com", "ip": "203.0.113.7", "page": ""}]


def _room_count(vault: VaultProcess, room_id: str) -> Any:
    async def read(db: Any) -> Any:
        return (await db.rooms.find_one({"_id": room_id})).get("itemCount")
    return vault.run_service(read)


def test_a_rooms_item_count_is_kept_on_write_and_counted_once_for_an_older_room(
        vault: VaultProcess) -> None:
    """`itemCount` is the room record's count, kept by every add and removal (a folder with its
    content, a deleted file leaving every room), so listings never count items; a room made
    before the count gets it, counted once, at its next item."""
    _, key = vault.new_account("Counting Co", plan="pro")
    with vault.client(key) as api:
        room, other = create_room(api, "Board pack"), create_room(api, "Audit")
        folder = add_folder(api, room["id"], "Finance")
        files = [upload_ok(api, docs.pdf(), name=f"Report {n}.pdf") for n in range(3)]
        for file in files:
            add_file(api, room["id"], file["id"], folder=folder["id"])
        add_file(api, other["id"], files[0]["id"])
        assert _room_count(vault, room["id"]) == 4 and _room_count(vault, other["id"]) == 1

        assert api.delete(f"/files/{files[0]['id']}").status_code == 204
        wait_until(lambda: _room_count(vault, other["id"]) == 0, what="the file left the room")
        assert _room_count(vault, room["id"]) == 3
        listed = {r["id"]: r["itemCount"] for r in api.get("/rooms").json()["rooms"]}
        assert listed == {room["id"]: 3, other["id"]: 0}
        assert api.delete(f"/rooms/{room['id']}/items/{folder['id']}").status_code == 204
        assert api.get(f"/rooms/{room['id']}").json()["itemCount"] == 0 == _room_count(
            vault, room["id"])

        older = create_room(api, "Made before the count")
        add_file(api, older["id"], files[1]["id"])
        vault.run_service(lambda db: db.rooms.update_one({"_id": older["id"]},
                                                         {"$unset": {"itemCount": ""}}))
        assert api.get(f"/rooms/{older['id']}").json()["itemCount"] == 1  # counted on read
        add_file(api, older["id"], files[2]["id"])
        assert _room_count(vault, older["id"]) == 2
