"""Listing, reading, downloading, deleting files, and their access log, over HTTP."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import (
    FILE_NOT_FOUND,
    LINK_GONE,
    NO_ENDPOINT,
    assert_json_error,
    create_link,
    upload_ok,
)
from tests.vault_process import VaultProcess
from vaultd.services.common import access_log

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_the_list_is_newest_first_with_total_and_active_links(api: httpx.Client) -> None:
    ids = [upload_ok(api, docs.pdf(), name=f"f{i}")["id"] for i in range(3)]
    create_link(api, ids[0])
    create_link(api, ids[0])
    body = api.get("/files").json()
    assert body["total"] == 3
    assert [f["id"] for f in body["files"]] == ids[::-1]
    assert [f["activeLinks"] for f in body["files"]] == [0, 0, 2]


def test_pagination_follows_page_and_per_page(api: httpx.Client) -> None:
    ids = [upload_ok(api, docs.png(), name=f"p{i}")["id"] for i in range(5)]
    page2 = api.get("/files", params={"page": 2, "perPage": 2}).json()
    assert page2["total"] == 5
    assert [f["id"] for f in page2["files"]] == [ids[2], ids[1]]
    assert api.get("/files", params={"page": 9}).json() == {"files": [], "total": 5}
    assert len(api.get("/files", params={"perPage": 100}).json()["files"]) == 5


BAD_PAGE = "page must be an integer between 1 and 1000000000"
BAD_PER_PAGE = "perPage must be an integer between 1 and 100"


@pytest.mark.parametrize(("params", "message"), [
    ({"perPage": 0}, BAD_PER_PAGE), ({"perPage": 101}, BAD_PER_PAGE), ({"page": 0}, BAD_PAGE),
    ({"page": "x"}, BAD_PAGE), ({"perPage": "-1"}, BAD_PER_PAGE), ({"page": "1.5"}, BAD_PAGE)])
def test_out_of_bounds_pagination_is_400(api: httpx.Client, params: dict, message: str) -> None:
    assert_json_error(api.get("/files", params=params), 400, message)


def test_a_file_is_read_by_id_without_its_content(api: httpx.Client) -> None:
    created = upload_ok(api, docs.pdf(pages=2), name="contract.pdf")
    body = api.get(f"/files/{created['id']}").json()
    assert body == created


@pytest.mark.parametrize(("file_id", "message"), [
    ("not-a-uuid", FILE_NOT_FOUND), ("00000000-0000-0000-0000-000000000000", FILE_NOT_FOUND),
    ("../../etc/passwd", NO_ENDPOINT),  # the client resolves the dots: no route of ours
    ("%00", FILE_NOT_FOUND)])
def test_unknown_and_malformed_ids_are_404(api: httpx.Client, file_id: str, message: str) -> None:
    for path in ("", "/download", "/access-log"):
        assert_json_error(api.get(f"/files/{file_id}{path}"), 404, message)
    assert_json_error(api.delete(f"/files/{file_id}"), 404, message)


def test_another_accounts_file_behaves_exactly_like_an_unknown_one(
    vault: VaultProcess, api: httpx.Client
) -> None:
    mine = upload_ok(api, docs.pdf(), kind="delivery")
    _, other_key = vault.new_account("Other Ltd")
    with vault.client(other_key) as other:
        for path in ("", "/download", "/access-log"):
            assert_json_error(other.get(f"/files/{mine['id']}{path}"), 404, FILE_NOT_FOUND)
        assert_json_error(other.delete(f"/files/{mine['id']}"), 404, FILE_NOT_FOUND)
        assert other.post(f"/files/{mine['id']}/revoke-views").json() == {"revoked": 0}
        assert other.get("/files").json()["total"] == 0
    assert api.get(f"/files/{mine['id']}").status_code == 200


def test_a_delivery_file_downloads_with_its_headers(api: httpx.Client) -> None:
    data = docs.pdf(pages=40)
    created = upload_ok(api, data, kind="delivery", name="Offre d'été #1.pdf")
    response = api.get(f"/files/{created['id']}/download",
                       headers={"x-viewer-email": "Client@Example.com"})
    assert response.status_code == 200
    assert response.content == data
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["cache-control"] == "private, no-store"
    assert unquote(response.headers["x-file-name"]) == "Offre d'été #1.pdf"
    log = api.get(f"/files/{created['id']}/access-log").json()
    assert log[0]["action"] == "download" and log[0]["viewerEmail"] == "Client@example.com"


def test_a_source_file_is_never_downloadable(api: httpx.Client) -> None:
    created = upload_ok(api, docs.pdf())
    assert_json_error(api.get(f"/files/{created['id']}/download"), 403,
                      "source files are view-only and cannot be downloaded")
    actions = [e["action"] for e in api.get(f"/files/{created['id']}/access-log").json()]
    assert actions == ["upload"]


def test_an_invalid_viewer_email_on_download_is_ignored(api: httpx.Client) -> None:
    created = upload_ok(api, docs.png(), kind="delivery")
    assert api.get(f"/files/{created['id']}/download",
                   headers={"x-viewer-email": "not an email"}).status_code == 200
    entry = api.get(f"/files/{created['id']}/access-log").json()[0]
    assert entry["action"] == "download" and "viewerEmail" not in entry


def test_deleting_a_file_removes_blob_links_and_usage(vault: VaultProcess,
                                                      api: httpx.Client) -> None:
    data = docs.pdf()
    created = upload_ok(api, data, kind="delivery")
    link = create_link(api, created["id"])
    blob = vault.data_dir / "blobs" / created["id"]
    assert blob.exists()
    assert api.get("/account").json()["usage"]["storageBytes"] == len(data)
    response = api.delete(f"/files/{created['id']}")
    assert response.status_code == 204 and response.content == b""
    assert not blob.exists()
    for path in ("", "/download", "/access-log"):
        assert_json_error(api.get(f"/files/{created['id']}{path}"), 404, FILE_NOT_FOUND)
    assert_json_error(api.get(f"/views/{link['token']}"), 404, LINK_GONE)
    assert_json_error(api.delete(f"/files/{created['id']}"), 404, FILE_NOT_FOUND)
    usage = api.get("/account").json()["usage"]
    assert (usage["documents"], usage["storageBytes"], usage["activeLinks"]) == (0, 0, 0)


def test_the_delete_entry_stays_in_the_account_log(vault: VaultProcess,
                                                   account: tuple[str, str]) -> None:
    account_id, key = account
    with vault.client(key) as api:
        created = upload_ok(api, docs.pdf())
        api.delete(f"/files/{created['id']}")

    async def entries(db) -> list[str]:
        cursor = db.access_log.find({"accountId": account_id, "fileId": created["id"]})
        return [doc["action"] async for doc in cursor.sort("at", 1)]

    assert vault.run_service(entries) == ["upload", "delete"]


def test_the_access_log_is_newest_first_and_capped_at_200(
        vault: VaultProcess, account: tuple[str, str], api: httpx.Client) -> None:
    created = upload_ok(api, docs.png(), kind="delivery")
    # 200 older downloads written as the download route writes its entry (through the service),
    # marked apart; then three over HTTP, which must come first while the oldest fall off.
    async def older_downloads(db: Any) -> None:
        for _ in range(200):
            await access_log.record(db, account[0], created["id"], "download",
                                    viewer_email="older@example.com")

    vault.run_service(older_downloads)
    for _ in range(3):
        assert api.get(f"/files/{created['id']}/download").status_code == 200
    log = api.get(f"/files/{created['id']}/access-log").json()
    assert len(log) == 200
    assert all(e["action"] == "download" for e in log)
    assert ["viewerEmail" in e for e in log] == [False] * 3 + [True] * 197
    stamps = [e["at"] for e in log]
    assert all(ISO.match(s) for s in stamps) and stamps == sorted(stamps, reverse=True)
    assert all(e["fileId"] == created["id"] for e in log)


def test_account_shows_plan_and_live_usage(vault: VaultProcess, api: httpx.Client) -> None:
    data = docs.pdf()
    created = upload_ok(api, data)
    create_link(api, created["id"])
    body = api.get("/account").json()
    assert body["name"] == "Acme Corp"
    assert body["plan"] == {
        "id": "pro", "name": "Pro", "priceCents": 4900, "maxDocuments": 5000,
        "maxStorageBytes": 26843545600, "maxViewSeconds": 2592000, "customWatermark": True,
        "accessLogExport": False, "maxApiKeys": 10, "support": "Email support, next business day",
        "maxRooms": 10,
    }
    assert body["usage"] == {"documents": 1, "storageBytes": len(data), "activeLinks": 1,
                             "apiKeys": 1}


def test_timestamps_are_iso_utc_with_milliseconds(api: httpx.Client) -> None:
    created = upload_ok(api, docs.pdf())
    assert ISO.match(created["createdAt"])
    entry = api.get(f"/files/{created['id']}/access-log").json()[0]
    assert ISO.match(entry["at"])
    logged = datetime.fromisoformat(entry["at"].replace("Z", "+00:00"))
    assert abs((datetime.now(UTC) - logged).total_seconds()) < 120
