"""A file's links as its owner sees them (`GET /v1/files/:id/views`) and revoking by link id
(`DELETE /v1/files/:id/views/:linkId`)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import FILE_NOT_FOUND, LINK_GONE, assert_json_error, create_link, upload_ok
from tests.vault_process import VaultProcess
from tests.waiting import wait_until


@pytest.fixture
def pdf_file(api: httpx.Client) -> dict[str, Any]:
    return upload_ok(api, docs.pdf(pages=2), name="Listing.pdf")


def link(api: httpx.Client, file_id: str, vault: VaultProcess, email: str,
         **fields: Any) -> str:
    token: str = create_link(api, file_id, email, **fields)["token"]
    vault.secrets.append(token)
    return token


def test_links_are_listed_newest_first_without_tokens_and_by_state(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    first = link(api, pdf_file["id"], vault, "one@example.com")
    second = link(api, pdf_file["id"], vault, "two@example.com",
                  policy={"passcode": "secret word", "maxOpens": 4})
    assert api.get(f"/views/{first}/pages/1").status_code == 200
    listed = api.get(f"/files/{pdf_file['id']}/views")
    assert listed.status_code == 200
    body = listed.json()
    assert body["total"] == 2
    assert [v["viewerEmail"] for v in body["views"]] == ["two@example.com", "one@example.com"]
    assert not any(secret in listed.text for secret in (first, second, "secret word"))
    newest, oldest = body["views"]
    assert newest["policy"] == {"passcode": True, "maxOpens": 4}
    assert "policy" not in oldest
    assert {k: oldest[k] for k in ("state", "sessionsOpened")} == {"state": "active",
                                                                   "sessionsOpened": 0}
    wait_until(lambda: api.get(f"/files/{pdf_file['id']}/views").json()["views"][1]
               ["pagesViewed"] == 1)
    assert api.get(f"/files/{pdf_file['id']}/views").json()["views"][1]["lastSeenAt"]
    assert api.delete(f"/files/{pdf_file['id']}/views/{oldest['id']}").status_code == 204
    assert api.delete(f"/files/{pdf_file['id']}/views/{oldest['id']}").status_code == 204
    assert_json_error(api.get(f"/views/{first}/pages/1"), 404, LINK_GONE)
    revoked = api.get(f"/files/{pdf_file['id']}/views?state=revoked").json()
    assert [v["id"] for v in revoked["views"]] == [oldest["id"]]
    active = api.get(f"/files/{pdf_file['id']}/views?state=active&perPage=1&page=1").json()
    assert active["total"] == 1 and active["views"][0]["id"] == newest["id"]
    assert api.get(f"/files/{pdf_file['id']}/views?state=expired").json() == {"views": [],
                                                                              "total": 0}


def test_listing_and_revoking_are_scoped_to_the_account_and_file(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    link(api, pdf_file["id"], vault, "one@example.com")
    link_id = api.get(f"/files/{pdf_file['id']}/views").json()["views"][0]["id"]
    other = upload_ok(api, docs.pdf(pages=1))
    assert_json_error(api.delete(f"/files/{other['id']}/views/{link_id}"), 404, LINK_GONE)
    assert_json_error(api.delete(f"/files/{pdf_file['id']}/views/nope"), 404, LINK_GONE)
    _, key = vault.new_account("Someone Else")
    with vault.client(key) as stranger:
        assert_json_error(stranger.get(f"/files/{pdf_file['id']}/views"), 404, FILE_NOT_FOUND)
        assert_json_error(stranger.delete(f"/files/{pdf_file['id']}/views/{link_id}"), 404,
                          LINK_GONE)
    assert_json_error(api.get(f"/files/{pdf_file['id']}/views?state=gone"), 400,
                      "state must be one of active, expired, revoked")
