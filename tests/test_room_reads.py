"""Room links and reading a room: scope, re-checks on every page, revocation, and
what the owner learns. A real vaultd, real renders, real pages."""

from __future__ import annotations

import io
from typing import Any

import httpx
import pytest
from PIL import Image

from tests import documents as docs
from tests.http_helpers import LINK_GONE, assert_json_error, upload_ok
from tests.room_helpers import add_file, add_folder, create_room, numbered, room_link
from tests.vault_process import VaultProcess


@pytest.fixture
def room(vault: VaultProcess, api: httpx.Client) -> dict[str, Any]:
    """1 Finance (1.1 Accounts.pdf), 2 Legal (2.1 Contracts.pdf), 3 Cover.pdf at the top."""
    files = {name: upload_ok(api, docs.pdf(pages=2), name=name)
             for name in ("Accounts.pdf", "Contracts.pdf", "Cover.pdf")}
    made = create_room(api, "Deal room")
    finance = add_folder(api, made["id"], "Finance")
    legal = add_folder(api, made["id"], "Legal")
    add_file(api, made["id"], files["Accounts.pdf"]["id"], folder=finance["id"])
    add_file(api, made["id"], files["Contracts.pdf"]["id"], folder=legal["id"])
    cover = add_file(api, made["id"], files["Cover.pdf"]["id"])
    return {"id": made["id"], "files": files, "finance": finance, "legal": legal,
            "cover": cover}


def link_for(vault: VaultProcess, api: httpx.Client, room: dict, **fields: Any) -> str:
    token: str = room_link(api, room["id"], "dana@example.com", viewerName="Dana Scully",
                           **fields)["token"]
    vault.secrets.append(token)
    return token


def page(api: httpx.Client, token: str, file_id: str, number: int = 1) -> httpx.Response:
    return api.get(f"/room-views/{token}/files/{file_id}/pages/{number}",
                   headers={"x-viewer-ip": "203.0.113.7"}, timeout=60)


def assert_jpeg(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/jpeg"
    assert Image.open(io.BytesIO(response.content)).format == "JPEG"


def test_a_room_link_has_a_token_url_and_expiry(vault: VaultProcess, api: httpx.Client,
                                                room: dict) -> None:
    body = room_link(api, room["id"], ttlSeconds=600)
    vault.secrets.append(body["token"])
    assert set(body) == {"token", "url", "expiresAt"}
    assert body["url"] == f"{vault.url}/r/{body['token']}"
    usage = api.get("/account").json()["usage"]
    assert usage["activeLinks"] == 1
    assert api.delete(f"/room-views/{body['token']}").status_code == 204
    assert api.get("/account").json()["usage"]["activeLinks"] == 0


@pytest.mark.parametrize(("fields", "message"), [
    # The file links' policy parser (services.gates.policy): the same fields, the same messages.
    ({"policy": {"verify": "email"}}, "policy.verify is not a known gate (gates: verifyEmail, "
                                      "passcode, agreementId, allowedIps, notBefore, maxOpens)"),
    ({"policy": {"maxOpens": 0}}, "policy.maxOpens must be a whole number from 1 to 1000000"),
    ({"policy": {"passcode": "ab"}}, "policy.passcode must be a string of 4 to 128 characters"),
    ({"folderIds": []}, "folderIds must be a list of 1 to 100 folder ids"),
    ({"folderIds": "x"}, "folderIds must be a list of 1 to 100 folder ids"),
    ({"folderIds": ["not-a-folder"]}, "folderIds must be ids of folders of this room"),
    ({"viewerEmail": "nobody"}, "viewerEmail is not a valid email address"),
    ({"ttlSeconds": 59}, "ttlSeconds must be between 60 and 2592000 on plan Pro"),
])
def test_bad_room_links_are_400(api: httpx.Client, room: dict, fields: dict,
                                message: str) -> None:
    body = {"viewerEmail": "dana@example.com", **fields}
    assert_json_error(api.post(f"/rooms/{room['id']}/views", json=body), 400, message)


def test_a_file_of_the_room_cannot_be_a_scope(api: httpx.Client, room: dict) -> None:
    body = {"viewerEmail": "dana@example.com", "folderIds": [room["cover"]["id"]]}
    assert_json_error(api.post(f"/rooms/{room['id']}/views", json=body), 400,
                      "folderIds must be ids of folders of this room")


def test_the_proxy_reads_the_tree_and_pages(vault: VaultProcess, api: httpx.Client,
                                            room: dict) -> None:
    token = link_for(vault, api, room)
    body = api.get(f"/room-views/{token}").json()
    assert body["name"] == "Deal room" and body["viewerEmail"] == "dana@example.com"
    assert numbered(body["tree"]) == [("1", "Finance"), ("1.1", "Accounts.pdf"),
                                      ("2", "Legal"), ("2.1", "Contracts.pdf"),
                                      ("3", "Cover.pdf")]
    accounts = room["files"]["Accounts.pdf"]["id"]
    assert_jpeg(page(api, token, accounts, 2))
    assert_json_error(page(api, token, accounts, 3), 404, "page not found")
    # The page is the file's too: its log shows it; the room's log names the room.
    file_log = api.get(f"/files/{accounts}/access-log").json()
    assert file_log[0]["action"] == "page" and file_log[0]["page"] == 2
    room_log = api.get(f"/rooms/{room['id']}/access-log").json()
    assert [entry["action"] for entry in room_log] == ["page", "room.view"]
    assert room_log[0]["roomId"] == room["id"] and room_log[0]["fileId"] == accounts
    assert room_log[0]["ip"] == "203.0.113.7"
    only_views = api.get(f"/rooms/{room['id']}/access-log", params={"action": "room.view"})
    assert [entry["action"] for entry in only_views.json()] == ["room.view"]
    assert_json_error(api.get(f"/rooms/{room['id']}/access-log", params={"action": "upload"}),
                      400, "action must be one of page, room.view, verify, agreement")


def test_another_accounts_key_cannot_read_a_room_link(vault: VaultProcess, api: httpx.Client,
                                                      room: dict) -> None:
    token = link_for(vault, api, room)
    _, other_key = vault.new_account("Other Corp")
    with vault.client(other_key) as other:
        assert_json_error(other.get(f"/room-views/{token}"), 404, LINK_GONE)
        assert_json_error(page(other, token, room["files"]["Cover.pdf"]["id"]), 404, LINK_GONE)
        assert_json_error(other.delete(f"/room-views/{token}"), 404, LINK_GONE)


def test_a_file_removed_while_being_read_stops_at_its_next_page(
        vault: VaultProcess, api: httpx.Client, room: dict) -> None:
    token = link_for(vault, api, room)
    cover = room["files"]["Cover.pdf"]["id"]
    assert_jpeg(page(api, token, cover, 1))
    assert api.delete(f"/rooms/{room['id']}/items/{room['cover']['id']}").status_code == 204
    assert_json_error(page(api, token, cover, 2), 404, LINK_GONE)
    assert "Cover.pdf" not in [name for _, name in numbered(
        api.get(f"/room-views/{token}").json()["tree"])]
    # Deleting a file does the same.
    accounts = room["files"]["Accounts.pdf"]["id"]
    assert_jpeg(page(api, token, accounts, 1))
    assert api.delete(f"/files/{accounts}").status_code == 204
    assert_json_error(page(api, token, accounts, 2), 404, LINK_GONE)


def test_a_folder_scoped_link_reaches_nothing_outside_its_scope(
        vault: VaultProcess, api: httpx.Client, room: dict) -> None:
    token = link_for(vault, api, room, folderIds=[room["finance"]["id"]])
    tree = api.get(f"/room-views/{token}").json()["tree"]
    assert numbered(tree) == [("1", "Finance"), ("1.1", "Accounts.pdf")]
    accounts = room["files"]["Accounts.pdf"]["id"]
    assert_jpeg(page(api, token, accounts))
    outside = [room["files"]["Contracts.pdf"]["id"], room["files"]["Cover.pdf"]["id"]]
    for file_id in outside:
        for number in (1, 2):
            assert_json_error(page(api, token, file_id, number), 404, LINK_GONE)
            response = httpx.get(f"{vault.url}/r/{token}/files/{file_id}/pages/{number}",
                                 timeout=60)
            assert_json_error(response, 404, LINK_GONE)
        assert httpx.get(f"{vault.url}/r/{token}/files/{file_id}", timeout=60
                         ).status_code == 404
        for variant in (file_id.upper(), f"{file_id}%2F..", "..", room["finance"]["id"]):
            assert page(api, token, variant).status_code == 404
    # A file added later inside the scope appears; one moved out of it stops.
    late = upload_ok(api, docs.pdf(), name="Late.pdf")
    add_file(api, room["id"], late["id"], folder=room["finance"]["id"])
    assert_jpeg(page(api, token, late["id"]))
    moved = api.patch(f"/rooms/{room['id']}/items/{room['finance']['id']}",
                      json={"parentId": room["legal"]["id"]})
    assert moved.status_code == 200  # Finance inside Legal: still in scope
    assert_jpeg(page(api, token, accounts))
    items = api.get(f"/rooms/{room['id']}").json()["tree"]
    accounts_item = next(node for node in _walk(items) if node.get("fileId") == accounts)
    api.patch(f"/rooms/{room['id']}/items/{accounts_item['id']}", json={"parentId": None})
    assert_json_error(page(api, token, accounts), 404, LINK_GONE)


def _walk(nodes: list[dict]) -> list[dict]:
    out: list[dict] = []
    for node in nodes:
        out += [node, *_walk(node.get("children", []))]
    return out


def test_preview_is_exactly_what_a_scoped_link_sees(vault: VaultProcess, api: httpx.Client,
                                                    room: dict) -> None:
    scope = [room["legal"]["id"]]
    token = link_for(vault, api, room, folderIds=scope)
    preview = api.get(f"/rooms/{room['id']}/preview", params={"folderIds": ",".join(scope)})
    assert preview.status_code == 200
    assert preview.json()["tree"] == api.get(f"/room-views/{token}").json()["tree"]
    whole = api.get(f"/rooms/{room['id']}/preview").json()["tree"]
    assert len(_walk(whole)) == 5
    assert_json_error(api.get(f"/rooms/{room['id']}/preview", params={"folderIds": "x"}), 400,
                      "folderIds must be ids of folders of this room")


def test_revoking_and_deleting_the_room_stop_its_links(vault: VaultProcess, api: httpx.Client,
                                                       room: dict) -> None:
    cover = room["files"]["Cover.pdf"]["id"]
    first, second, third = (link_for(vault, api, room) for _ in range(3))
    assert api.delete(f"/room-views/{first}").status_code == 204
    assert api.delete(f"/room-views/{first}").status_code == 204  # twice is fine
    assert_json_error(page(api, first, cover), 404, LINK_GONE)
    assert_jpeg(page(api, second, cover))
    assert api.post(f"/rooms/{room['id']}/revoke-views").json() == {"revoked": 2}
    assert_json_error(page(api, second, cover), 404, LINK_GONE)
    fourth = link_for(vault, api, room)
    assert_jpeg(page(api, fourth, cover))
    assert api.delete(f"/rooms/{room['id']}").status_code == 204
    for token in (third, fourth):
        assert_json_error(page(api, token, cover), 404, LINK_GONE)
        assert_json_error(api.get(f"/room-views/{token}"), 404, LINK_GONE)
    assert api.get(f"/files/{cover}").status_code == 200  # the files stay
    assert api.get("/account").json()["usage"]["activeLinks"] == 0


def test_the_owner_sees_per_viewer_and_per_document_analytics(
        vault: VaultProcess, api: httpx.Client, room: dict) -> None:
    dana = link_for(vault, api, room)
    eve = room_link(api, room["id"], "eve@example.com")["token"]
    vault.secrets.append(eve)
    cover, accounts = room["files"]["Cover.pdf"]["id"], room["files"]["Accounts.pdf"]["id"]
    for number in (1, 2):
        assert_jpeg(page(api, dana, cover, number))
    assert_jpeg(page(api, dana, accounts, 1))
    assert_jpeg(page(api, eve, cover, 1))
    body = api.get(f"/rooms/{room['id']}/analytics").json()
    by_viewer = {viewer["viewerEmail"]: viewer for viewer in body["viewers"]}
    assert by_viewer["dana@example.com"]["documentsOpened"] == 2
    assert by_viewer["dana@example.com"]["pagesViewed"] == 3
    assert by_viewer["eve@example.com"]["pagesViewed"] == 1
    assert by_viewer["dana@example.com"]["lastSeenAt"].endswith("Z")
    by_document = {document["fileId"]: document for document in body["documents"]}
    assert by_document[cover]["viewers"] == 2 and by_document[accounts]["viewers"] == 1
    assert by_document[cover]["name"] == "Cover.pdf"
    # Read in full (view.* events are not sent for room reads): nothing is left to announce.
    async def owed(db: Any) -> list[Any]:
        return [doc["_id"] async for doc in db.link_stats.find(
            {"fileId": cover, "$or": [{"openAnnounced": False}, {"completeAnnounced": False}]})]

    assert vault.run_service(owed) == []


def test_a_leaked_room_page_traces_back_to_its_reader(vault: VaultProcess, api: httpx.Client,
                                                      room: dict) -> None:
    """The same invisible mark and log entry as a file link's page: a leaked screenshot of a
    room page names the room link's reader, the document and the page."""
    token = link_for(vault, api, room)
    cover = room["files"]["Cover.pdf"]["id"]
    response = page(api, token, cover, 2)
    assert_jpeg(response)
    leaked = io.BytesIO()
    Image.open(io.BytesIO(response.content)).convert("RGB").save(leaked, "PNG")
    traced = api.post("/trace", content=leaked.getvalue(),
                      headers={"Content-Type": "image/png"}, timeout=120)
    assert traced.status_code == 200, traced.text
    [match] = traced.json()["matches"]
    assert match["fileId"] == cover and match["page"] == 2
    assert match["viewerEmail"] == "dana@example.com" and match["viewerName"] == "Dana Scully"
    assert match["ip"] == "203.0.113.7" and match["evidence"] == "invisible"


def test_a_room_page_checks_the_key_before_the_link(vault: VaultProcess, room: dict) -> None:
    cover = room["files"]["Cover.pdf"]["id"]
    with vault.client("sd_live_" + "x" * 43) as stranger:
        assert_json_error(page(stranger, "A" * 43, cover), 401, "invalid or revoked API key")
    with vault.client() as anonymous:
        assert_json_error(page(anonymous, "A" * 43, cover), 401,
                          "missing API key: send Authorization: Bearer <API_KEY>")
