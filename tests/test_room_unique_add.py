"""A file is in a room at most once, under concurrent adds too: many adds of one file into two
folders of one room, sent at once, let exactly one in, and every link then sees one place for
it. A database that already holds a file twice in a room keeps the older item when the unique
index is built."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import httpx
import pytest
from pymongo.errors import ExecutionTimeout

from tests import documents as docs
from tests.http_helpers import assert_json_error, sent_politely, upload_ok
from tests.room_helpers import add_file, add_folder, create_room, room_link
from tests.vault_process import VaultProcess
from vaultd.db_indexes import ensure_indexes
from vaultd.services.rooms import items
from vaultd.services.rooms.db_indexes import ROOM_FILE_INDEX

ALREADY_IN_ROOM = "the file is already in this room"
ADDS = 16  # at once, alternating between the two folders


def _add_at_once(api: httpx.Client, room_id: str, file_id: str,
                 folders: list[str]) -> list[httpx.Response]:
    """The adds at once, each re-sent after a 503 the database's load caused (its place is
    given back: `test_an_add_the_database_times_out_before_its_insert_keeps_no_place`)."""
    with ThreadPoolExecutor(ADDS) as pool:
        return list(pool.map(lambda n: sent_politely(lambda: api.post(
            f"/rooms/{room_id}/files", json={"fileId": file_id, "folderId": folders[n % 2]})),
            range(ADDS)))


def _tree_files(node_list: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for node in node_list:
        if node["type"] == "file":
            found.append(node["fileId"])
        found += _tree_files(node.get("children", []))
    return found


def test_concurrent_adds_of_one_file_into_two_folders_let_exactly_one_in(
        api: httpx.Client) -> None:
    room = create_room(api)
    folders = [add_folder(api, room["id"], name)["id"] for name in ("First", "Second")]
    for round_number in range(3):  # a race may go either way: a few rounds of it
        file = upload_ok(api, docs.pdf(pages=1), name=f"Deal {round_number}.pdf")
        answers = _add_at_once(api, room["id"], file["id"], folders)
        won = [answer for answer in answers if answer.status_code == 201]
        assert len(won) == 1, [answer.status_code for answer in answers]
        for answer in answers:
            if answer is not won[0]:
                assert_json_error(answer, 400, ALREADY_IN_ROOM)
        winner = won[0].json()["parentId"]
        loser = folders[1] if winner == folders[0] else folders[0]
        winner_link = room_link(api, room["id"], folderIds=[winner])
        loser_link = room_link(api, room["id"], folderIds=[loser])
        assert file["id"] in _tree_files(api.get(f"/room-views/{winner_link['token']}")
                                         .json()["tree"])
        assert file["id"] not in _tree_files(api.get(f"/room-views/{loser_link['token']}")
                                             .json()["tree"])
        page = api.get(f"/room-views/{winner_link['token']}/files/{file['id']}/pages/1")
        assert page.status_code == 200 and page.content[:2] == b"\xff\xd8"
    listed = api.get(f"/rooms/{room['id']}").json()
    assert listed["itemCount"] == 2 + 3
    assert sorted(_tree_files(listed["tree"])) == sorted(set(_tree_files(listed["tree"])))


def test_a_file_already_twice_in_a_room_keeps_its_older_item_when_the_index_is_built(
        vault: VaultProcess, api: httpx.Client, caplog: pytest.LogCaptureFixture) -> None:
    room = create_room(api)
    file = upload_ok(api, docs.pdf(pages=1), name="Twice.pdf")
    older = add_file(api, room["id"], file["id"])

    async def duplicate_then_reindex(db: Any) -> tuple[bool, list[str], int, bool]:
        await db.room_items.drop_index(ROOM_FILE_INDEX)  # as a database from before the index
        original = await db.room_items.find_one({"_id": older["id"]})
        later = {**original, "_id": "later-" + older["id"],
                 "createdAt": original["createdAt"] + timedelta(seconds=1), "position": 2}
        await db.room_items.insert_one(later)
        await db.rooms.update_one({"_id": room["id"]}, {"$inc": {"itemCount": 1}})
        await ensure_indexes(db)
        kept = [item["_id"] async for item in db.room_items.find({"roomId": room["id"]})]
        indexes = await db.room_items.index_information()
        try:  # the index now refuses a second place, as it does for concurrent adds
            await db.room_items.insert_one({**later, "_id": "third-" + older["id"]})
            refused = False
        except Exception as error:  # noqa: BLE001 - its class is what is asserted
            refused = type(error).__name__ == "DuplicateKeyError"
        room_doc = await db.rooms.find_one({"_id": room["id"]})
        return indexes[ROOM_FILE_INDEX]["unique"], kept, room_doc["itemCount"], refused

    with caplog.at_level(logging.WARNING, logger="vaultd.db"):
        unique, kept, item_count, refused = vault.run_service(duplicate_then_reindex)
    assert unique and refused
    assert kept == [older["id"]]
    assert item_count == 1
    assert caplog.messages == [f"room {room['id']} held file {file['id']} twice: the later item "
                               f"later-{older['id']} removed"]
    assert_json_error(api.post(f"/rooms/{room['id']}/files", json={"fileId": file["id"]}),
                      400, ALREADY_IN_ROOM)


def test_an_add_the_database_times_out_before_its_insert_keeps_no_place(
        api: httpx.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database that times a command out under load answers the add 503; the room's count
    is what it was, so the retry (and the cap) see the room as it is. The session's vaultd runs
    in this process: the read before the insert is made to time out once."""
    room = create_room(api)
    file = upload_ok(api, docs.pdf(pages=1), name="Timed out.pdf")
    real_next_position = items._next_position

    async def timed_out(*args: Any) -> int:
        monkeypatch.setattr(items, "_next_position", real_next_position)
        raise ExecutionTimeout("operation exceeded time limit")

    monkeypatch.setattr(items, "_next_position", timed_out)
    failed = api.post(f"/rooms/{room['id']}/files", json={"fileId": file["id"]})
    assert_json_error(failed, 503, "database unavailable; retry shortly")
    assert api.get(f"/rooms/{room['id']}").json()["itemCount"] == 0
    add_file(api, room["id"], file["id"])
    assert api.get(f"/rooms/{room['id']}").json()["itemCount"] == 1
