"""Rooms and their tree over HTTP: account-scoped, numbered, exported, plan-limited."""

from __future__ import annotations

import csv
import io

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import FILE_NOT_FOUND, assert_json_error, upload_ok
from tests.room_helpers import ROOM_NOT_FOUND, add_file, add_folder, create_room, numbered
from tests.vault_process import VaultProcess


@pytest.fixture
def two_files(api: httpx.Client) -> tuple[dict, dict]:
    return (upload_ok(api, docs.pdf(pages=2), name="Accounts.pdf"),
            upload_ok(api, docs.pdf(pages=3), name="=Contracts.pdf"))


def test_a_room_is_created_listed_read_renamed_and_deleted(api: httpx.Client) -> None:
    room = create_room(api, "  Board   pack ")
    assert set(room) == {"id", "name", "createdAt", "itemCount"}
    assert room["name"] == "Board pack" and room["itemCount"] == 0
    listed = api.get("/rooms").json()
    assert listed["total"] == 1 and listed["rooms"][0]["id"] == room["id"]
    renamed = api.patch(f"/rooms/{room['id']}", json={"name": "Board pack Q3"})
    assert renamed.status_code == 200 and renamed.json()["name"] == "Board pack Q3"
    assert api.get(f"/rooms/{room['id']}").json()["tree"] == []
    assert api.delete(f"/rooms/{room['id']}").status_code == 204
    assert_json_error(api.get(f"/rooms/{room['id']}"), 404, ROOM_NOT_FOUND)
    assert api.get("/rooms").json() == {"rooms": [], "total": 0}


@pytest.mark.parametrize(("body", "message"), [
    ({}, "name is required and must be a string"),
    ({"name": "   "}, "name must not be empty"),
    ({"name": "n" * 201}, "name must be at most 200 characters"),
])
def test_a_bad_room_name_is_400(api: httpx.Client, body: dict, message: str) -> None:
    assert_json_error(api.post("/rooms", json=body), 400, message)


def test_the_tree_is_numbered_from_positions(api: httpx.Client, two_files: tuple) -> None:
    accounts, contracts = two_files
    room = create_room(api)
    finance = add_folder(api, room["id"], "Finance")
    legal = add_folder(api, room["id"], "Legal")
    audits = add_folder(api, room["id"], "Audits", parent=finance["id"])
    add_file(api, room["id"], accounts["id"], folder=finance["id"])
    add_file(api, room["id"], contracts["id"], folder=audits["id"])
    tree = api.get(f"/rooms/{room['id']}").json()
    assert tree["itemCount"] == 5
    assert numbered(tree["tree"]) == [("1", "Finance"), ("1.1", "Audits"),
                                      ("1.1.1", "=Contracts.pdf"), ("1.2", "Accounts.pdf"),
                                      ("2", "Legal")]
    # Legal first, then Audits moved to the top level at the end, renamed
    assert api.patch(f"/rooms/{room['id']}/items/{legal['id']}",
                     json={"position": 1}).status_code == 200
    moved = api.patch(f"/rooms/{room['id']}/items/{audits['id']}",
                      json={"parentId": None, "name": "Audit reports"})
    assert moved.status_code == 200 and moved.json()["number"] == "3"
    tree = api.get(f"/rooms/{room['id']}").json()["tree"]
    assert numbered(tree) == [("1", "Legal"), ("2", "Finance"), ("2.1", "Accounts.pdf"),
                              ("3", "Audit reports"), ("3.1", "=Contracts.pdf")]


def test_moves_that_would_loop_or_leave_the_room_are_400(api: httpx.Client) -> None:
    room, other = create_room(api), create_room(api, "Other")
    top = add_folder(api, room["id"], "Top")
    inner = add_folder(api, room["id"], "Inner", parent=top["id"])
    foreign = add_folder(api, other["id"], "Elsewhere")
    assert_json_error(api.patch(f"/rooms/{room['id']}/items/{top['id']}",
                                json={"parentId": inner["id"]}), 400,
                      "parentId must not be the item itself or inside it")
    assert_json_error(api.patch(f"/rooms/{room['id']}/items/{top['id']}",
                                json={"parentId": foreign["id"]}), 400,
                      "parentId must be the id of a folder of this room")
    assert_json_error(api.patch(f"/rooms/{room['id']}/items/{top['id']}",
                                json={"position": 0}), 400,
                      "position must be an integer between 1 and 5000")
    assert_json_error(api.patch(f"/rooms/{other['id']}/items/{top['id']}",
                                json={"name": "x"}), 404, "item not found")


def test_deleting_a_folder_takes_its_content_not_the_files(
        api: httpx.Client, two_files: tuple) -> None:
    room = create_room(api)
    folder = add_folder(api, room["id"], "Finance")
    add_file(api, room["id"], two_files[0]["id"], folder=folder["id"])
    assert api.delete(f"/rooms/{room['id']}/items/{folder['id']}").status_code == 204
    assert api.get(f"/rooms/{room['id']}").json()["itemCount"] == 0
    assert api.get(f"/files/{two_files[0]['id']}").status_code == 200


def test_a_file_may_be_in_several_rooms_and_deleting_it_empties_them(
        api: httpx.Client, two_files: tuple) -> None:
    file = two_files[0]
    rooms = [create_room(api, f"Room {n}") for n in range(2)]
    for room in rooms:
        add_file(api, room["id"], file["id"])
    assert_json_error(api.post(f"/rooms/{rooms[0]['id']}/files", json={"fileId": file["id"]}),
                      400, "the file is already in this room")
    assert api.delete(f"/files/{file['id']}").status_code == 204
    for room in rooms:
        body = api.get(f"/rooms/{room['id']}").json()
        assert body["tree"] == [] and body["itemCount"] == 0


def test_another_accounts_file_or_room_is_404(vault: VaultProcess, api: httpx.Client) -> None:
    _, other_key = vault.new_account("Other Corp")
    with vault.client(other_key) as other:
        their_file = upload_ok(other, docs.pdf(), name="Theirs.pdf")
        their_room = create_room(other, "Theirs")
    room = create_room(api)
    assert_json_error(api.post(f"/rooms/{room['id']}/files", json={"fileId": their_file["id"]}),
                      404, FILE_NOT_FOUND)
    assert_json_error(api.get(f"/rooms/{their_room['id']}"), 404, ROOM_NOT_FOUND)
    assert_json_error(api.delete(f"/rooms/{their_room['id']}"), 404, ROOM_NOT_FOUND)
    assert_json_error(api.post(f"/rooms/{room['id']}/files", json={"fileId": "nope"}), 400,
                      "fileId must be a file UUID")


def test_the_index_exports_json_and_formula_safe_csv(api: httpx.Client, two_files: tuple) -> None:
    accounts, contracts = two_files
    room = create_room(api)
    folder = add_folder(api, room["id"], "Finance")
    add_file(api, room["id"], accounts["id"], folder=folder["id"])
    add_file(api, room["id"], contracts["id"])
    rows = api.get(f"/rooms/{room['id']}/index").json()["items"]
    assert rows == [
        {"number": "1", "path": "Finance", "name": "Finance", "type": "folder",
         "pageCount": None},
        {"number": "1.1", "path": "Finance/Accounts.pdf", "name": "Accounts.pdf",
         "type": "file", "pageCount": 2},
        {"number": "2", "path": "=Contracts.pdf", "name": "=Contracts.pdf", "type": "file",
         "pageCount": 3}]
    response = api.get(f"/rooms/{room['id']}/index", params={"format": "csv"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(response.text)))
    assert [row["number"] for row in table] == ["1", "1.1", "2"]
    assert table[2]["name"] == "'=Contracts.pdf" and table[2]["path"] == "'=Contracts.pdf"
    assert table[0]["pageCount"] == ""
    assert_json_error(api.get(f"/rooms/{room['id']}/index", params={"format": "xml"}), 400,
                      "format must be json or csv")


def test_plans_limit_rooms(vault: VaultProcess) -> None:
    _, free_key = vault.new_account("Free Co", plan="free")
    with vault.client(free_key) as free:
        assert_json_error(free.post("/rooms", json={"name": "R"}), 402,
                          "data rooms are not available on plan Free")
        assert free.get("/account").json()["plan"]["maxRooms"] == 0
    _, pro_key = vault.new_account("Pro Co", plan="pro")
    with vault.client(pro_key) as pro:
        for number in range(10):
            create_room(pro, f"Room {number}")
        assert_json_error(pro.post("/rooms", json={"name": "R"}), 402,
                          "plan Pro allows at most 10 rooms")
    _, business_key = vault.new_account("Big Co", plan="business")
    with vault.client(business_key) as business:
        assert business.get("/account").json()["plan"]["maxRooms"] is None
        for number in range(11):
            create_room(business, f"Room {number}")
