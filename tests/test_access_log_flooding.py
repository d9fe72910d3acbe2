"""Every details call writes its own `view` entry (spec 4.9), and a flood of them cannot hide
older entries: `?before=` and `?action=` still reach them."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tests import documents as docs
from tests.http_helpers import assert_json_error, create_link, upload_ok
from tests.vault_process import VaultProcess


def views(log: list[dict]) -> list[dict]:
    return [e for e in log if e["action"] == "view"]


def test_each_reload_of_the_hosted_viewer_writes_its_own_view_entry(
    vault: VaultProcess, api: httpx.Client
) -> None:
    created = upload_ok(api, docs.pdf(), kind="delivery")
    link = create_link(api, created["id"], email="reader@example.com")
    with httpx.Client(timeout=30) as browser:
        for _ in range(60):
            assert browser.get(f"{vault.url}/v/{link['token']}").status_code == 200
    log = api.get(f"/files/{created['id']}/access-log").json()
    seen = views(log)
    assert len(seen) == 60
    assert all(set(e) == {"at", "fileId", "action", "viewerEmail", "ip"} for e in seen)
    assert all(e["viewerEmail"] == "reader@example.com" and e["ip"] == "127.0.0.1"
               for e in seen)
    assert [e["at"] for e in seen] == sorted((e["at"] for e in seen), reverse=True)
    assert log[-1]["action"] == "upload"


def test_concurrent_details_calls_each_write_a_view_entry(api: httpx.Client) -> None:
    created = upload_ok(api, docs.pdf(), kind="delivery")
    link = create_link(api, created["id"])

    def view(_: int) -> int:
        return api.get(f"/views/{link['token']}", headers={"x-viewer-ip": "203.0.113.7"}
                       ).status_code

    with ThreadPoolExecutor(8) as threads:
        assert set(threads.map(view, range(80))) == {200}
    seen = views(api.get(f"/files/{created['id']}/access-log").json())
    assert len(seen) == 80 and {e["ip"] for e in seen} == {"203.0.113.7"}


def test_views_from_different_addresses_are_entries_of_their_own(api: httpx.Client) -> None:
    created = upload_ok(api, docs.pdf(), kind="delivery")
    link = create_link(api, created["id"])
    for ip in ("198.51.100.1", "198.51.100.2", "198.51.100.1"):
        api.get(f"/views/{link['token']}", headers={"x-viewer-ip": ip})
    seen = views(api.get(f"/files/{created['id']}/access-log").json())
    assert [e["ip"] for e in seen] == ["198.51.100.1", "198.51.100.2", "198.51.100.1"]


def test_a_flood_of_views_hides_no_older_entry_from_before_and_action(
    api: httpx.Client
) -> None:
    created = upload_ok(api, docs.pdf(), kind="delivery")
    link = create_link(api, created["id"])
    for _ in range(210):
        assert api.get(f"/views/{link['token']}").status_code == 200
    path = f"/files/{created['id']}/access-log"
    latest = api.get(path).json()
    assert len(latest) >= 200 and all(e["action"] == "view" for e in latest)
    older = api.get(path, params={"before": latest[-1]["at"]}).json()
    assert older[-1]["action"] == "upload" and len(latest) + len(older) == 211
    assert [e["action"] for e in api.get(path, params={"action": "upload"}).json()] == ["upload"]


def test_before_reaches_entries_older_than_the_latest_200(api: httpx.Client) -> None:
    created = upload_ok(api, docs.png(), kind="delivery")
    for _ in range(205):
        assert api.get(f"/files/{created['id']}/download").status_code == 200
    first = api.get(f"/files/{created['id']}/access-log").json()
    # 200, plus any entries sharing the 200th's millisecond (the next page starts before it).
    assert len(first) >= 200 and first[-1]["action"] == "download"
    assert all(e["at"] == first[199]["at"] for e in first[200:])
    older = api.get(f"/files/{created['id']}/access-log", params={"before": first[-1]["at"]})
    assert older.status_code == 200
    second = older.json()
    assert second[-1]["action"] == "upload"
    assert all(e["at"] < first[-1]["at"] for e in second)
    assert len(first) + len(second) == 206  # every entry once: 205 downloads and the upload


def test_a_page_boundary_inside_one_millisecond_skips_nothing(
    vault: VaultProcess, api: httpx.Client
) -> None:
    created = upload_ok(api, docs.png(), kind="delivery")
    moment = (datetime.now(UTC) + timedelta(minutes=1)).replace(microsecond=123000)  # newest

    async def write(db: Any) -> None:  # 210 downloads logged within one millisecond
        await db.access_log.insert_many([
            {"_id": f"tie-{created['id']}-{n:03}", "accountId": "-", "fileId": created["id"],
             "action": "download", "at": moment} for n in range(210)])

    vault.run_service(write)
    path = f"/files/{created['id']}/access-log"
    first = api.get(path).json()
    assert len(first) == 210 and {e["at"] for e in first} == {first[0]["at"]}
    second = api.get(path, params={"before": first[-1]["at"]}).json()
    assert [e["action"] for e in second] == ["upload"]


def test_action_filters_the_log(api: httpx.Client) -> None:
    created = upload_ok(api, docs.png(), kind="delivery")
    for _ in range(3):
        api.get(f"/files/{created['id']}/download")
    only_uploads = api.get(f"/files/{created['id']}/access-log", params={"action": "upload"})
    assert [e["action"] for e in only_uploads.json()] == ["upload"]
    downloads = api.get(f"/files/{created['id']}/access-log", params={"action": "download"})
    assert [e["action"] for e in downloads.json()] == ["download"] * 3


def test_invalid_before_and_action_are_400_with_a_message(api: httpx.Client) -> None:
    created = upload_ok(api, docs.png())
    path = f"/files/{created['id']}/access-log"
    for bad in ("yesterday", "2026-01-31T12:00:00", ""):
        assert_json_error(api.get(path, params={"before": bad}), 400,
                          re.compile(r"before must be an ISO 8601 time with a zone.*"))
    assert_json_error(api.get(path, params={"action": "steal"}), 400,
                      "action must be one of agreement, delete, download, page, revoke, trace, "
                      "upload, verify, view")
