"""The hosted viewer over plain HTTP: security headers, the 404 page, access-log entries."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests import documents as docs
from tests import http_helpers
from tests.http_helpers import (
    LINK_GONE,
    NOT_AVAILABLE,
    assert_json_error,
    assert_viewer_headers,
    create_link,
    upload_ok,
)
from tests.vault_process import VaultProcess

web = http_helpers.web  # this module's fixture



@pytest.fixture
def shared(vault: VaultProcess, api: httpx.Client) -> dict:
    file = upload_ok(api, docs.pdf(pages=2), name="Board minutes.pdf")
    link = create_link(api, file["id"], "Dana@Example.com", viewerName="Dana Scully")
    vault.secrets.append(link["token"])
    return {"file": file, "token": link["token"], "path": f"/v/{link['token']}"}


def latest_log(api: httpx.Client, file_id: str) -> dict:
    return api.get(f"/files/{file_id}/access-log").json()[0]


@pytest.mark.parametrize(("suffix", "status", "content_type"), [
    ("", 200, "text/html"),
    ("/pages/1", 200, "image/jpeg"),
    ("/status", 200, "application/json"),
    ("/pages/3", 404, "application/json"),
])
def test_every_viewer_response_carries_the_security_headers(
    web: httpx.Client, shared: dict, suffix: str, status: int, content_type: str
) -> None:
    response = web.get(shared["path"] + suffix)
    assert response.status_code == status
    assert response.headers["content-type"].startswith(content_type)
    assert_viewer_headers(response)
    assert "etag" not in response.headers and "last-modified" not in response.headers


@pytest.mark.parametrize(("asset", "content_type"), [
    ("viewer.js", "text/javascript"),
    ("viewer.css", "text/css"),
])
def test_the_viewer_assets_carry_the_security_headers(web: httpx.Client, asset: str,
                                                      content_type: str) -> None:
    response = web.get(f"/assets/{asset}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(content_type)
    assert_viewer_headers(response)


def test_only_the_two_viewer_assets_are_served(web: httpx.Client) -> None:
    for path in ["/assets/viewer.html", "/assets/../viewer.py", "/assets/"]:
        assert web.get(path).status_code == 404


def test_the_status_answers_active_and_logs_nothing(web: httpx.Client, api: httpx.Client,
                                                   shared: dict) -> None:
    before = api.get(f"/files/{shared['file']['id']}/access-log").json()
    response = web.get(shared["path"] + "/status")
    assert response.json() == {"active": True}
    assert api.get(f"/files/{shared['file']['id']}/access-log").json() == before


def test_opening_the_viewer_logs_a_view_with_the_ip_and_email(web: httpx.Client,
                                                             api: httpx.Client,
                                                             shared: dict) -> None:
    page = web.get(shared["path"])
    assert page.status_code == 200
    entry = latest_log(api, shared["file"]["id"])
    assert entry == {"at": entry["at"], "fileId": shared["file"]["id"], "action": "view",
                     "viewerEmail": "Dana@example.com", "ip": "127.0.0.1"}


def test_each_page_image_logs_a_page_entry(web: httpx.Client, api: httpx.Client,
                                           shared: dict) -> None:
    for number in (2, 1):
        response = web.get(f"{shared['path']}/pages/{number}")
        assert response.status_code == 200
        assert response.content[:3] == b"\xff\xd8\xff"
        entry = latest_log(api, shared["file"]["id"])
        assert entry == {"at": entry["at"], "fileId": shared["file"]["id"], "action": "page",
                         "viewerEmail": "Dana@example.com", "ip": "127.0.0.1", "page": number}


def test_a_forged_forwarded_for_from_an_untrusted_client_is_ignored(
    web: httpx.Client, api: httpx.Client, shared: dict
) -> None:
    forged = {"X-Forwarded-For": "203.0.113.7", "X-Real-IP": "203.0.113.8"}
    assert web.get(shared["path"], headers=forged).status_code == 200
    assert latest_log(api, shared["file"]["id"])["ip"] == "127.0.0.1"
    assert web.get(f"{shared['path']}/pages/1", headers=forged).status_code == 200
    assert latest_log(api, shared["file"]["id"])["ip"] == "127.0.0.1"


def test_the_page_passes_its_settings_as_data_attributes(web: httpx.Client,
                                                         shared: dict) -> None:
    html = web.get(shared["path"]).text
    assert 'data-page-count="2"' in html
    assert f'data-page-url="{shared["path"]}/pages/{{n}}"' in html
    assert f'data-status-url="{shared["path"]}/status"' in html
    assert f'data-activity-url="{shared["path"]}/activity"' in html
    assert re.search(r'data-expires-at="\d{4}-\d\d-\d\dT[\d:.]+Z"', html)
    assert "Board minutes.pdf" in html and "Dana Scully" in html and "Acme Corp" in html
    assert "Confidential — shared with Dana Scully." in html


def test_the_page_has_no_inline_script_or_style(web: httpx.Client, shared: dict) -> None:
    html = web.get(shared["path"]).text
    assert re.findall(r"<script\b[^>]*>", html) == [
        '<script src="/assets/viewer.js" defer>', '<script src="/assets/viewer-activity.js" defer>']
    assert "<style" not in html and " style=" not in html and "javascript:" not in html
    assert "<img" not in html
    assert '<meta name="referrer" content="no-referrer">' in html


def test_the_file_name_is_escaped(vault: VaultProcess, web: httpx.Client,
                                  api: httpx.Client) -> None:
    file = upload_ok(api, docs.pdf(), name='<script>alert(1)</script>".pdf')
    link = create_link(api, file["id"], viewerName="<b>Eve</b>")
    vault.secrets.append(link["token"])
    html = web.get(f"/v/{link['token']}").text
    assert "<script>alert(1)" not in html and "<b>Eve" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;.pdf" in html
    assert "&lt;b&gt;Eve&lt;/b&gt;" in html


def test_a_revoked_link_shows_the_404_page_and_json_404_elsewhere(
    web: httpx.Client, api: httpx.Client, shared: dict
) -> None:
    assert api.delete(f"/views/{shared['token']}").status_code == 204
    page = web.get(shared["path"])
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")
    assert NOT_AVAILABLE in page.text
    assert_viewer_headers(page)
    for suffix in ("/pages/1", "/status"):
        response = web.get(shared["path"] + suffix)
        assert_json_error(response, 404, LINK_GONE)
        assert_viewer_headers(response)


def test_expired_revoked_and_unknown_links_look_the_same(
    vault: VaultProcess, web: httpx.Client, api: httpx.Client, shared: dict
) -> None:
    from vaultd.secrets import digest

    expired = create_link(api, shared["file"]["id"])
    vault.secrets.append(expired["token"])

    async def expire(db) -> None:
        await db.links.update_one({"hash": digest(expired["token"])},
                                  {"$set": {"expiresAt": datetime.now(UTC) - timedelta(seconds=1)}})

    vault.run_service(expire)
    api.delete(f"/views/{shared['token']}")
    bodies = {web.get(path).text for path in [
        f"/v/{expired['token']}", shared["path"], "/v/" + "A" * 43, "/v/short"]}
    assert len(bodies) == 1
    body = bodies.pop()
    assert NOT_AVAILABLE in body
    for hint in ("expired", "revoked", "unknown", "deleted", "token", "<script"):
        assert hint not in body.lower()


def test_viewing_writes_no_token_to_the_server_log(vault: VaultProcess, web: httpx.Client,
                                                   shared: dict) -> None:
    web.get(shared["path"])
    web.get(shared["path"] + "/pages/1")
    web.get(shared["path"] + "/status")
    assert shared["token"] not in vault.log_text()
