"""The hosted room viewer over plain HTTP: /r/<token> is the numbered index, each
document opens in the existing viewer under the room link, with the viewer's headers."""

from __future__ import annotations

import re

import httpx
import pytest

from tests import documents as docs
from tests import http_helpers
from tests.http_helpers import (
    LINK_GONE,
    NOT_AVAILABLE,
    assert_json_error,
    assert_viewer_headers,
    upload_ok,
)
from tests.room_helpers import add_file, add_folder, create_room, room_link
from tests.vault_process import VaultProcess
from tests.waiting import wait_until

web = http_helpers.web  # this module's fixture


@pytest.fixture
def shared(vault: VaultProcess, api: httpx.Client) -> dict:
    room = create_room(api, "Board <pack>")
    folder = add_folder(api, room["id"], "Finance & <Legal>")
    inside = upload_ok(api, docs.pdf(pages=2), name="<b>Accounts</b>.pdf")
    outside = upload_ok(api, docs.pdf(pages=1), name="Cover.pdf")
    item = add_file(api, room["id"], inside["id"], folder=folder["id"])
    add_file(api, room["id"], outside["id"])
    token = room_link(api, room["id"], "dana@example.com", viewerName="Dana Scully",
                      folderIds=[folder["id"]])["token"]
    vault.secrets.append(token)
    return {"room": room, "item": item, "inside": inside, "outside": outside,
            "path": f"/r/{token}"}


def test_the_index_lists_the_numbered_tree_in_scope(web: httpx.Client, api: httpx.Client,
                                                    shared: dict) -> None:
    response = web.get(shared["path"])
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert_viewer_headers(response)
    html = response.text
    assert "Board &lt;pack&gt;" in html and "<b>Accounts" not in html
    assert re.findall(r'data-number="([^"]+)"', html) == ["1", "1.1"]
    assert f'href="{shared["path"]}/files/{shared["inside"]["id"]}"' in html
    assert "Cover.pdf" not in html and "<script" not in html and "style=" not in html
    log = api.get(f"/rooms/{shared['room']['id']}/access-log").json()
    assert log[0]["action"] == "room.view" and log[0]["viewerEmail"] == "dana@example.com"


def test_a_document_opens_in_the_viewer_under_the_room_link(web: httpx.Client, api: httpx.Client,
                                                            shared: dict) -> None:
    base = f"{shared['path']}/files/{shared['inside']['id']}"
    response = web.get(base)
    assert response.status_code == 200
    assert_viewer_headers(response)
    assert f'data-page-url="{base}/pages/{{n}}"' in response.text
    assert 'data-page-count="2"' in response.text
    page = web.get(f"{base}/pages/2")
    assert page.status_code == 200 and page.headers["content-type"] == "image/jpeg"
    assert_viewer_headers(page)
    assert web.get(f"{base}/status").json() == {"active": True}
    # Time counts once this much has passed since the first page (a report is refused whole
    # before): the room's analytics show it for this reader and document.
    report = {"events": [{"page": 1, "seconds": 0.2}]}
    wait_until(lambda: web.post(f"{base}/activity", json=report).status_code == 200)
    analytics = api.get(f"/rooms/{shared['room']['id']}/analytics").json()
    assert analytics["viewers"][0]["seconds"] == 0.2
    assert analytics["documents"][0]["seconds"] == 0.2


def test_a_document_outside_the_scope_or_removed_is_not_available(
        web: httpx.Client, api: httpx.Client, shared: dict) -> None:
    outside = f"{shared['path']}/files/{shared['outside']['id']}"
    response = web.get(outside)
    assert response.status_code == 404 and NOT_AVAILABLE in response.text
    assert_json_error(web.get(f"{outside}/pages/1"), 404, LINK_GONE)
    assert_json_error(web.get(f"{outside}/status"), 404, LINK_GONE)
    inside = f"{shared['path']}/files/{shared['inside']['id']}"
    assert web.get(f"{inside}/status").status_code == 200
    room_id, item_id = shared["room"]["id"], shared["item"]["id"]
    assert api.delete(f"/rooms/{room_id}/items/{item_id}").status_code == 204
    assert_json_error(web.get(f"{inside}/status"), 404, LINK_GONE)
    assert_json_error(web.get(f"{inside}/pages/1"), 404, LINK_GONE)
    assert web.get(inside).status_code == 404


def test_an_unknown_or_deleted_room_link_gets_the_404_page(web: httpx.Client, api: httpx.Client,
                                                          shared: dict) -> None:
    unknown = web.get("/r/" + "A" * 43)
    assert unknown.status_code == 404 and NOT_AVAILABLE in unknown.text
    assert api.delete(f"/rooms/{shared['room']['id']}").status_code == 204
    gone = web.get(shared["path"])
    assert gone.status_code == 404 and gone.text == unknown.text
