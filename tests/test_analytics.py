"""Engagement analytics over HTTP against a live vaultd: page views and reported time per link
and per file, the bounds on time reports, concurrency, and `vault-admin files analytics`."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import create_link, upload_ok
from tests.vault_process import VaultProcess
from tests.waiting import wait_until


@pytest.fixture
def three_pages(api: httpx.Client) -> dict[str, Any]:
    return upload_ok(api, docs.pdf(3), name="Board deck.pdf")


def opened_link(api: httpx.Client, vault: VaultProcess, file_id: str,
                email: str = "ana@example.com") -> str:
    token = str(create_link(api, file_id, email)["token"])
    vault.secrets.append(token)
    assert api.get(f"/views/{token}", headers={"x-viewer-ip": "198.51.100.7"}).status_code == 200
    return token


def report(client: httpx.Client, token: str, events: Any) -> httpx.Response:
    return client.post(f"/views/{token}/activity", json={"events": events},
                       headers={"x-viewer-ip": "198.51.100.7"})


def test_a_link_reports_pages_time_and_completion(api: httpx.Client, vault: VaultProcess,
                                                   three_pages: dict[str, Any]) -> None:
    token = opened_link(api, vault, three_pages["id"])
    for page in (1, 2, 2):
        assert api.get(f"/views/{token}/pages/{page}").status_code == 200
    time.sleep(0.8)  # a report adds at most the time since the link was opened
    accepted = report(api, token, [{"page": 1, "seconds": 0.5}, {"page": 2, "seconds": 0.25}])
    assert accepted.status_code == 200 and accepted.json() == {"events": 2, "seconds": 0.75}
    body = api.get(f"/views/{token}/analytics").json()
    assert body["pages"] == [{"page": 1, "views": 1, "seconds": 0.5},
                             {"page": 2, "views": 2, "seconds": 0.25},
                             {"page": 3, "views": 0, "seconds": 0.0}]
    assert (body["pagesViewed"], body["completion"], body["totalSeconds"]) == (2, 0.6667, 0.75)
    assert body["firstOpenedAt"] <= body["lastSeenAt"]
    assert api.get(f"/views/{token}/pages/3").status_code == 200
    assert api.get(f"/views/{token}/analytics").json()["completion"] == 1.0


@pytest.mark.slow  # several seconds: kept out of the fast loop
def test_the_file_view_aggregates_viewers_with_a_median(api: httpx.Client, vault: VaultProcess,
                                                        three_pages: dict[str, Any]) -> None:
    viewers = {"a@example.com": 1.0, "b@example.com": 2.0, "c@example.com": 6.0}
    tokens = {email: opened_link(api, vault, three_pages["id"], email) for email in viewers}
    time.sleep(6.2)
    for email, seconds in viewers.items():
        assert api.get(f"/views/{tokens[email]}/pages/1").status_code == 200
        assert report(api, tokens[email], [{"page": 1, "seconds": seconds}]).status_code == 200
    second = opened_link(api, vault, three_pages["id"], "a@example.com")  # same viewer again
    assert api.get(f"/views/{second}/pages/1").status_code == 200
    body = api.get(f"/files/{three_pages['id']}/analytics").json()
    assert body["pages"][0] == {"page": 1, "views": 4, "uniqueViewers": 3, "seconds": 9.0,
                                "medianSeconds": 2.0}
    assert body["pages"][1] == {"page": 2, "views": 0, "uniqueViewers": 0, "seconds": 0.0,
                                "medianSeconds": 0.0}
    ana = next(v for v in body["viewers"] if v["viewerEmail"] == "a@example.com")
    assert (ana["links"], ana["pagesViewed"], ana["totalSeconds"]) == (2, 1, 1.0)
    assert ana["pages"][0] == {"page": 1, "views": 2, "seconds": 1.0}
    assert [v["viewerEmail"] for v in body["viewers"]] == sorted(viewers)


@pytest.mark.slow  # several seconds: kept out of the fast loop
def test_concurrent_reports_add_up_exactly(api: httpx.Client, vault: VaultProcess,
                                           three_pages: dict[str, Any]) -> None:
    token = opened_link(api, vault, three_pages["id"])
    time.sleep(3.2)
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda _: report(api, token, [{"page": 2, "seconds": 0.1}])
                              .status_code, range(24)))
    assert codes == [200] * 24
    body = api.get(f"/views/{token}/analytics").json()
    assert body["totalSeconds"] == pytest.approx(2.4, abs=1e-6)
    assert body["pages"][1]["seconds"] == pytest.approx(2.4, abs=1e-6)


@pytest.mark.parametrize(("events", "message"), [
    ([{"page": 1, "seconds": 61}], "events[0].seconds must be a number above 0 and at most 60"),
    ([{"page": 1, "seconds": 0}], "events[0].seconds must be a number above 0 and at most 60"),
    ([{"page": 1, "seconds": "5"}], "events[0].seconds must be a number above 0 and at most 60"),
    ([{"page": 4, "seconds": 1}], "events[0].page 4 does not exist: the document has 3 pages"),
    ([{"page": 0, "seconds": 1}], "events[0].page 0 does not exist: the document has 3 pages"),
    ([{"page": True, "seconds": 1}], "events[0].page must be an integer"),
    ([{"page": 1, "seconds": 1}] * 101, "at most 100 events per report"),
    ([], "events must be a non-empty list of {page, seconds}"),
    ("lots", "events must be a non-empty list of {page, seconds}"),
    ([{"page": 1, "seconds": 1, "at": "yesterday"}],
     "events[0].at must be an ISO 8601 time with a zone, e.g. 2026-11-22T01:02:03.456Z"),
    ([{"page": 1, "seconds": 1, "at": "2099-01-01T00:00:00Z"}], "events[0].at is in the future"),
])
def test_bad_reports_are_refused(api: httpx.Client, vault: VaultProcess,
                                 three_pages: dict[str, Any], events: Any, message: str) -> None:
    token = opened_link(api, vault, three_pages["id"])
    response = report(api, token, events)
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert api.get(f"/views/{token}/analytics").json()["totalSeconds"] == 0


def test_a_report_cannot_claim_more_time_than_has_passed(api: httpx.Client, vault: VaultProcess,
                                                         three_pages: dict[str, Any]) -> None:
    token = opened_link(api, vault, three_pages["id"])
    response = report(api, token, [{"page": 1, "seconds": 60}, {"page": 2, "seconds": 60}])
    assert response.status_code == 422
    assert response.json() == {
        "error": "the report adds more time than has passed since the link was opened"}
    assert api.get(f"/views/{token}/analytics").json()["totalSeconds"] == 0


def test_a_link_never_opened_cannot_report_time(api: httpx.Client, vault: VaultProcess,
                                                three_pages: dict[str, Any]) -> None:
    token = create_link(api, three_pages["id"])["token"]
    response = report(api, token, [{"page": 1, "seconds": 1}])
    assert response.status_code == 422
    assert response.json() == {"error": "the link has not been opened yet: no time can be "
                                        "reported"}


def test_a_revoked_link_reports_nothing_but_keeps_its_analytics(
        api: httpx.Client, anon: httpx.Client, vault: VaultProcess,
        three_pages: dict[str, Any]) -> None:
    token = opened_link(api, vault, three_pages["id"])
    assert api.delete(f"/views/{token}").status_code == 204
    for client, path in ((api, f"/views/{token}/activity"),
                         (anon, f"{vault.url}/v/{token}/activity")):
        response = client.post(path, json={"events": [{"page": 1, "seconds": 1}]})
        assert response.status_code == 404
        assert response.json() == {"error": "link not found or no longer available"}
    assert api.get(f"/views/{token}/analytics").json()["firstOpenedAt"] is not None


def test_the_hosted_viewer_reports_without_a_key(anon: httpx.Client, api: httpx.Client,
                                                 vault: VaultProcess,
                                                 three_pages: dict[str, Any]) -> None:
    token = create_link(api, three_pages["id"])["token"]
    vault.secrets.append(token)
    assert anon.get(f"{vault.url}/v/{token}").status_code == 200
    time.sleep(1.2)
    response = anon.post(f"{vault.url}/v/{token}/activity",
                         json={"events": [{"page": 3, "seconds": 1}]})
    assert response.status_code == 200, response.text
    not_json = anon.post(f"{vault.url}/v/{token}/activity", content=b"{",
                         headers={"Content-Type": "application/json"})
    assert not_json.status_code == 400
    assert not_json.json() == {"error": "request body is not valid JSON"}
    assert api.get(f"/views/{token}/analytics").json()["pages"][2]["seconds"] == 1.0


def test_deleting_the_file_removes_its_analytics(api: httpx.Client, vault: VaultProcess,
                                                 three_pages: dict[str, Any]) -> None:
    token = opened_link(api, vault, three_pages["id"])
    assert api.get(f"/views/{token}/pages/1").status_code == 200
    assert api.delete(f"/files/{three_pages['id']}").status_code == 204
    for path in (f"/views/{token}/analytics", f"/files/{three_pages['id']}/analytics"):
        assert api.get(path).status_code == 404
    # A link's aggregates go with its links, in the deletion's background steps.
    wait_until(lambda: vault.run_service(lambda db: db.link_stats.count_documents(
        {"fileId": three_pages["id"]})) == 0, what="the file's analytics removed")


def test_analytics_of_other_accounts_are_not_found(api: httpx.Client, vault: VaultProcess,
                                                   three_pages: dict[str, Any]) -> None:
    token = opened_link(api, vault, three_pages["id"])
    _, other_key = vault.new_account("Other Co")
    with vault.client(other_key) as other:
        for path, message in ((f"/views/{token}/analytics", "link not found or no longer "
                                                            "available"),
                              (f"/files/{three_pages['id']}/analytics", "file not found")):
            response = other.get(path)
            assert response.status_code == 404 and response.json() == {"error": message}


def test_vault_admin_prints_the_per_page_table(api: httpx.Client, vault: VaultProcess,
                                               three_pages: dict[str, Any]) -> None:
    token = opened_link(api, vault, three_pages["id"])
    assert api.get(f"/views/{token}/pages/2").status_code == 200
    as_json = json.loads(vault.admin("files", "analytics", three_pages["id"], "--json").stdout)
    assert as_json == api.get(f"/files/{three_pages['id']}/analytics").json()
    text = vault.admin("files", "analytics", three_pages["id"]).stdout
    lines = text.splitlines()
    assert lines[0].split() == ["page", "views", "viewers", "seconds", "median"]
    assert lines[3].split() == ["2", "1", "1", "0.0", "0.0"]
    assert "ana@example.com" in text
    missing = vault.admin("files", "analytics", "00000000-0000-4000-8000-000000000000",
                          expect_ok=False)
    assert missing.returncode == 1
    assert missing.stderr.strip() == "vault-admin: file not found"


def test_concurrent_first_opens_of_a_link_all_succeed(api: httpx.Client, vault: VaultProcess,
                                                      three_pages: dict[str, Any]) -> None:
    # Several viewers opening one new link at once: every upsert of its record but one races
    # (the embedded database answers some of them with no document); none may fail.
    tokens = [str(create_link(api, three_pages["id"], f"race{n}@example.com")["token"])
              for n in range(10)]
    vault.secrets.extend(tokens)

    def open_link(token: str) -> int:
        return api.get(f"/views/{token}", headers={"x-viewer-ip": "198.51.100.9"}).status_code

    with ThreadPoolExecutor(8) as threads:
        statuses = list(threads.map(open_link, [t for t in tokens for _ in range(8)]))
    assert set(statuses) == {200}
    for token in tokens:
        body = api.get(f"/views/{token}/analytics").json()
        assert body["firstOpenedAt"] is not None and body["pagesViewed"] == 0
