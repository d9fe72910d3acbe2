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

from tests.http_helpers import assert_json_error
from tests.room_helpers import create_room, room_link
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
            await db.room_links.update_one(
                {"roomId": second["id"], "viewerEmail": "r0@example.com"},
                {"$set": {"expiresAt": expiry}})

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
