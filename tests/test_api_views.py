"""View links and watermarked pages over the API (Option B), with the state table of spec 3.2."""

from __future__ import annotations

import io
import re
import threading
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from PIL import Image

from tests import documents as docs
from tests.http_helpers import (
    FILE_NOT_FOUND,
    LINK_GONE,
    PAGE_NOT_FOUND,
    assert_json_error,
    create_link,
    upload_ok,
)
from tests.vault_process import VaultProcess

TOKEN = re.compile(r"^[A-Za-z0-9_-]{43}$")


@pytest.fixture
def pdf_file(api: httpx.Client) -> dict:
    return upload_ok(api, docs.pdf(pages=3), name="Board minutes.pdf")


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_link_is_created_with_token_url_and_default_expiry(
    vault: VaultProcess, api: httpx.Client, pdf_file: dict
) -> None:
    response = api.post("/views", json={"fileId": pdf_file["id"], "viewerEmail": "ann@example.com"})
    assert response.status_code == 201
    body = response.json()
    vault.secrets.append(body["token"])
    assert set(body) == {"token", "url", "expiresAt"}
    assert TOKEN.match(body["token"])
    assert body["url"] == f"{vault.url}/v/{body['token']}"
    lifetime = parse_time(body["expiresAt"]) - datetime.now(UTC)
    assert timedelta(seconds=3500) < lifetime <= timedelta(seconds=3600)


def test_a_custom_ttl_within_the_plan_is_honoured(api: httpx.Client, pdf_file: dict) -> None:
    body = create_link(api, pdf_file["id"], ttlSeconds=2_592_000)
    lifetime = parse_time(body["expiresAt"]) - datetime.now(UTC)
    assert timedelta(days=29, hours=23) < lifetime <= timedelta(days=30)


NOT_A_FILE_ID = "fileId must be a file UUID"
BAD_EMAIL = "viewerEmail is not a valid email address"
TTL_RANGE = "ttlSeconds must be between 60 and 2592000 on plan Pro"
TTL_NOT_A_NUMBER = "ttlSeconds must be a number between 60 and 2592000"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"fileId": None}, NOT_A_FILE_ID),
        ({"fileId": "not-a-uuid"}, NOT_A_FILE_ID),
        ({"fileId": 42}, NOT_A_FILE_ID),
        ({"viewerEmail": None}, "viewerEmail is required and must be an email address"),
        ({"viewerEmail": "nobody"}, BAD_EMAIL),
        ({"viewerEmail": "a@b"}, BAD_EMAIL),
        ({"viewerEmail": "two@@example.com"}, BAD_EMAIL),
        ({"viewerName": "n" * 101}, "viewerName must be at most 100 characters"),
        ({"viewerName": 7}, "viewerName must be a string"),
        ({"ttlSeconds": 59}, TTL_RANGE),
        ({"ttlSeconds": 2_592_001}, TTL_RANGE),
        ({"ttlSeconds": "3600"}, TTL_NOT_A_NUMBER),
        ({"ttlSeconds": True}, TTL_NOT_A_NUMBER),
        ({"ttlSeconds": -1}, TTL_RANGE),
    ],
)
def test_invalid_link_requests_are_400(api: httpx.Client, pdf_file: dict, fields: dict,
                                       message: str) -> None:
    body = {"fileId": pdf_file["id"], "viewerEmail": "ok@example.com", **fields}
    body = {k: v for k, v in body.items() if v is not None}
    assert_json_error(api.post("/views", json=body), 400, message)


def test_a_null_ttl_is_not_a_number(api: httpx.Client, pdf_file: dict) -> None:
    """Absent is the default 3600 s; null is not a number (the OpenAPI schema's type)."""
    body = {"fileId": pdf_file["id"], "viewerEmail": "ok@example.com", "ttlSeconds": None}
    assert_json_error(api.post("/views", json=body), 400, TTL_NOT_A_NUMBER)


def test_the_free_plan_caps_links_at_seven_days(vault: VaultProcess) -> None:
    _, key = vault.new_account("Free Co", plan="free")
    with vault.client(key) as api:
        file_id = upload_ok(api, docs.png())["id"]
        assert_json_error(
            api.post(
                "/views",
                json={"fileId": file_id, "viewerEmail": "a@example.com", "ttlSeconds": 604_801},
            ),
            400,
            "ttlSeconds must be between 60 and 604800 on plan Free",
        )
        create_link(api, file_id, ttlSeconds=604_800)


def test_a_body_that_is_not_json_is_400(api: httpx.Client) -> None:
    assert_json_error(api.post("/views", content=b"fileId=x"), 400,
                      "Content-Type must be application/json")
    assert_json_error(api.post("/views", json=["a"]), 400, "request body must be a JSON object")


def test_a_link_to_an_unknown_or_foreign_file_is_404(
    vault: VaultProcess, api: httpx.Client, pdf_file: dict
) -> None:
    assert_json_error(
        api.post(
            "/views",
            json={"fileId": "00000000-0000-4000-8000-000000000000", "viewerEmail": "a@example.com"},
        ),
        404,
        FILE_NOT_FOUND,
    )
    _, other = vault.new_account("Other")
    with vault.client(other) as client:
        assert_json_error(
            client.post("/views", json={"fileId": pdf_file["id"], "viewerEmail": "a@example.com"}),
            404,
            FILE_NOT_FOUND,
        )


def test_link_details_log_a_view_with_the_viewer_ip(api: httpx.Client, pdf_file: dict) -> None:
    link = create_link(api, pdf_file["id"], "Ann@Example.com", viewerName="Ann Lée")
    response = api.get(f"/views/{link['token']}", headers={"x-viewer-ip": "2001:db8::1"})
    assert response.status_code == 200
    assert response.json() == {
        "fileName": "Board minutes.pdf",
        "pageCount": 3,
        "viewerName": "Ann Lée",
        "viewerEmail": "Ann@example.com",
        "expiresAt": link["expiresAt"],
        "brand": "Acme Corp",
    }
    entry = api.get(f"/files/{pdf_file['id']}/access-log").json()[0]
    assert entry == {
        "at": entry["at"],
        "fileId": pdf_file["id"],
        "action": "view",
        "viewerEmail": "Ann@example.com",
        "ip": "2001:db8::1",
    }


def test_viewer_name_defaults_to_the_email_and_custom_branding_shows(
    vault: VaultProcess, account: tuple[str, str], api: httpx.Client, pdf_file: dict
) -> None:
    vault.admin("accounts", "set-branding", account[0], "Acme Legal — Strictly Private")
    link = create_link(api, pdf_file["id"], "bob@example.com")
    details = api.get(f"/views/{link['token']}").json()
    assert details["viewerName"] == "bob@example.com"
    assert details["brand"] == "Acme Legal — Strictly Private"


@pytest.mark.parametrize("ip", ["999.1.1.1", "not-an-ip", "1.2.3.4, 5.6.7.8", "<script>"])
def test_an_invalid_viewer_ip_is_ignored_not_logged(
    api: httpx.Client, pdf_file: dict, ip: str
) -> None:
    link = create_link(api, pdf_file["id"])
    assert api.get(f"/views/{link['token']}", headers={"x-viewer-ip": ip}).status_code == 200
    assert (
        api.get(f"/views/{link['token']}/pages/1", headers={"x-viewer-ip": ip}).status_code == 200
    )
    for entry in api.get(f"/files/{pdf_file['id']}/access-log").json()[:2]:
        assert "ip" not in entry


def test_a_page_is_a_fresh_uncacheable_jpeg_and_is_logged(
    api: httpx.Client, pdf_file: dict
) -> None:
    link = create_link(api, pdf_file["id"], "carol@example.com")
    response = api.get(f"/views/{link['token']}/pages/2", headers={"x-viewer-ip": "203.0.113.9"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/jpeg"
    assert response.headers["cache-control"] == "private, no-store"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert "etag" not in response.headers and "last-modified" not in response.headers
    image = Image.open(io.BytesIO(response.content))
    assert image.format == "JPEG" and max(image.size) <= 1700
    entry = api.get(f"/files/{pdf_file['id']}/access-log").json()[0]
    assert entry == {
        "at": entry["at"],
        "fileId": pdf_file["id"],
        "action": "page",
        "viewerEmail": "carol@example.com",
        "ip": "203.0.113.9",
        "page": 2,
    }


@pytest.mark.parametrize("page", ["0", "4", "-1", "abc", "1.0", "99999999999"])
def test_pages_outside_the_document_are_404(api: httpx.Client, pdf_file: dict, page: str) -> None:
    link = create_link(api, pdf_file["id"])
    assert_json_error(api.get(f"/views/{link['token']}/pages/{page}"), 404, PAGE_NOT_FOUND)


def test_two_viewers_get_different_pixels_for_the_same_page(
    api: httpx.Client, pdf_file: dict
) -> None:
    first = create_link(api, pdf_file["id"], "one@example.com")
    second = create_link(api, pdf_file["id"], "two@example.com")
    a = api.get(f"/views/{first['token']}/pages/1").content
    b = api.get(f"/views/{second['token']}/pages/1").content
    assert a != b


def test_revoking_a_link_stops_it_at_once_and_is_idempotent(
    api: httpx.Client, pdf_file: dict
) -> None:
    link = create_link(api, pdf_file["id"])
    assert api.get(f"/views/{link['token']}/pages/1").status_code == 200
    response = api.delete(f"/views/{link['token']}")
    assert response.status_code == 204 and response.content == b""
    assert_json_error(api.get(f"/views/{link['token']}"), 404, LINK_GONE)
    assert_json_error(api.get(f"/views/{link['token']}/pages/1"), 404, LINK_GONE)
    assert api.delete(f"/views/{link['token']}").status_code == 204
    assert api.get("/account").json()["usage"]["activeLinks"] == 0


def test_unknown_and_foreign_tokens_are_404_everywhere(
    vault: VaultProcess, api: httpx.Client, pdf_file: dict
) -> None:
    link = create_link(api, pdf_file["id"])
    _, other = vault.new_account("Snoop Inc")
    with vault.client(other) as snoop:
        assert_json_error(snoop.get(f"/views/{link['token']}"), 404, LINK_GONE)
        assert_json_error(snoop.get(f"/views/{link['token']}/pages/1"), 404, LINK_GONE)
        assert_json_error(snoop.delete(f"/views/{link['token']}"), 404, LINK_GONE)
    for token in ["A" * 43, "short", "A" * 44, "%2e%2e"]:
        assert_json_error(api.get(f"/views/{token}"), 404, LINK_GONE)
        assert_json_error(api.delete(f"/views/{token}"), 404, LINK_GONE)
    assert api.get(f"/views/{link['token']}").status_code == 200


def test_an_expired_link_reads_as_404_and_is_not_active(
    vault: VaultProcess, api: httpx.Client, pdf_file: dict
) -> None:
    link = create_link(api, pdf_file["id"])
    from vaultd.secrets import digest

    async def expire(db) -> None:
        await db.links.update_one(
            {"hash": digest(link["token"])},
            {"$set": {"expiresAt": datetime.now(UTC) - timedelta(seconds=1)}},
        )

    vault.run_service(expire)
    assert_json_error(api.get(f"/views/{link['token']}"), 404, LINK_GONE)
    assert_json_error(api.get(f"/views/{link['token']}/pages/1"), 404, LINK_GONE)
    assert api.get("/files").json()["files"][0]["activeLinks"] == 0
    assert api.delete(f"/views/{link['token']}").status_code == 204


def test_revoke_views_disables_every_active_link_and_logs_once(
    api: httpx.Client, pdf_file: dict
) -> None:
    links = [create_link(api, pdf_file["id"]) for _ in range(3)]
    api.delete(f"/views/{links[0]['token']}")
    assert api.post(f"/files/{pdf_file['id']}/revoke-views").json() == {"revoked": 2}
    for link in links:
        assert_json_error(api.get(f"/views/{link['token']}"), 404, LINK_GONE)
    assert api.post(f"/files/{pdf_file['id']}/revoke-views").json() == {"revoked": 0}
    actions = [e["action"] for e in api.get(f"/files/{pdf_file['id']}/access-log").json()]
    assert actions.count("revoke") == 1
    assert api.get(f"/files/{pdf_file['id']}").status_code == 200


def test_revoke_views_on_an_unknown_file_is_zero(api: httpx.Client) -> None:
    for file_id in ["00000000-0000-4000-8000-000000000000", "junk"]:
        response = api.post(f"/files/{file_id}/revoke-views")
        assert response.status_code == 200 and response.json() == {"revoked": 0}


def test_deleting_the_file_kills_its_links(api: httpx.Client, pdf_file: dict) -> None:
    link = create_link(api, pdf_file["id"])
    assert api.get(f"/views/{link['token']}/pages/1").status_code == 200  # record now kept
    assert api.delete(f"/files/{pdf_file['id']}").status_code == 204
    assert_json_error(api.get(f"/views/{link['token']}"), 404, LINK_GONE)
    assert_json_error(api.get(f"/views/{link['token']}/pages/1"), 404, LINK_GONE)


def test_a_revoke_while_pages_are_being_fetched_stops_the_next_page(
    vault: VaultProcess, account: tuple[str, str], pdf_file: dict
) -> None:
    with vault.client(account[1]) as api:
        link = create_link(api, pdf_file["id"])
    answers: list[tuple[float, float, int]] = []  # (sent, answered, status), one at a time

    def reader() -> None:
        with vault.client(account[1]) as client:
            for i in range(60):
                sent = time.monotonic()
                status = client.get(f"/views/{link['token']}/pages/{i % 3 + 1}").status_code
                answers.append((sent, time.monotonic(), status))

    thread = threading.Thread(target=reader)
    thread.start()
    while len(answers) < 3:
        threading.Event().wait(0.02)
    with vault.client(account[1]) as api:
        revoking = time.monotonic()
        assert api.delete(f"/views/{link['token']}").status_code == 204
        revoked = time.monotonic()
        thread.join(120)
        before = [status for sent, answered, status in answers if answered < revoking]
        after = [status for sent, answered, status in answers if sent > revoked]
        assert before and set(before) == {200}
        assert after and set(after) == {404}
        # Requests overlapping the revoke may go either way, but once one is refused, no later
        # one is served.
        statuses = [status for _, _, status in answers]
        assert statuses == sorted(statuses) and set(statuses) == {200, 404}
        served = sum(1 for _, _, status in answers if status == 200)
        pages = [
            e
            for e in api.get(f"/files/{pdf_file['id']}/access-log").json()
            if e["action"] == "page"
        ]
        assert len(pages) == served


def test_the_bottom_strip_of_a_served_page_names_the_viewer(
    api: httpx.Client, pdf_file: dict, tmp_path
) -> None:
    from tests.ocr import read_text

    link = create_link(api, pdf_file["id"], "dana.ross@example.com", viewerName="Dana Ross")
    response = api.get(f"/views/{link['token']}/pages/1", headers={"x-viewer-ip": "198.51.100.23"})
    image = Image.open(io.BytesIO(response.content)).convert("L")
    strip = image.crop((0, image.height - 120, image.width, image.height))
    text = read_text(strip, tmp_path)
    assert "dana.ross@example.com" in text
    assert "198.51.100.23" in text and "Dana Ross" in text
