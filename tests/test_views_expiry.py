"""`PATCH /v1/views/:token`: a live link's new expiry, the same token. It moves both ways within
the plan's bounds, refuses what the spec's states forbid (an ended link stays ended), and an
auditor's key cannot use it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from tests import documents as docs
from tests.http_helpers import assert_json_error, create_link, created, upload_ok
from tests.vault_process import VaultProcess

ONE_OF = "give exactly one of expiresAt and ttlSeconds"
LINK_NOT_FOUND = "link not found or no longer available"
AUDITOR_CHANGE = "the auditor role cannot change files, links or rooms"
PRO_TTL = "ttlSeconds must be a number between 60 and 2592000 on plan Pro"
PRO_AT = ("expiresAt must be an ISO 8601 time with a zone, from 60 to 2592000 seconds from now "
          "on plan Pro")


def when(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def new_link(api: httpx.Client, **fields: object) -> dict[str, str]:
    file_id = upload_ok(api, docs.pdf(pages=1), name="Expiry.pdf")["id"]
    return create_link(api, file_id, ttlSeconds=3600, **fields) | {"fileId": file_id}


def test_a_link_is_extended_by_seconds_and_keeps_its_token(api: httpx.Client) -> None:
    link = new_link(api)
    before = datetime.now(UTC)
    changed = api.patch(f"/views/{link['token']}", json={"ttlSeconds": 10 * 86400})
    assert changed.status_code == 200, changed.text
    moved = when(changed.json()["expiresAt"])
    assert before + timedelta(days=10) - timedelta(seconds=1) <= moved
    assert moved <= datetime.now(UTC) + timedelta(days=10)
    details = api.get(f"/views/{link['token']}")
    assert details.status_code == 200 and when(details.json()["expiresAt"]) == moved


def test_a_link_is_shortened_to_a_given_time(api: httpx.Client) -> None:
    link = new_link(api)
    target = (datetime.now(UTC) + timedelta(minutes=30)).replace(microsecond=0)
    changed = api.patch(f"/views/{link['token']}", json={"expiresAt": target.isoformat()})
    assert changed.status_code == 200, changed.text
    assert when(changed.json()["expiresAt"]) == target
    listed = api.get(f"/files/{link['fileId']}/views").json()["views"]
    assert [when(view["expiresAt"]) for view in listed] == [target]


def test_neither_or_both_fields_and_values_outside_the_plan_are_refused(
        api: httpx.Client) -> None:
    link = new_link(api)
    path = f"/views/{link['token']}"
    assert_json_error(api.patch(path, json={}), 400, ONE_OF)
    assert_json_error(api.patch(path, json={"ttlSeconds": 600, "expiresAt": "2030-01-01T00:00Z"}),
                      400, ONE_OF)
    assert_json_error(api.patch(path, json={"ttlSeconds": 31 * 86400}), 400, PRO_TTL)
    assert_json_error(api.patch(path, json={"ttlSeconds": True}), 400, PRO_TTL)
    assert_json_error(api.patch(path, json={"expiresAt": "2020-01-01T00:00:00Z"}), 400, PRO_AT)
    assert_json_error(api.patch(path, json={"expiresAt": "2030-01-01T00:00:00"}), 400, PRO_AT)
    assert_json_error(api.patch(path, content=b"[]",
                                headers={"Content-Type": "application/json"}),
                      400, "request body must be a JSON object")
    assert when(api.get(path).json()["expiresAt"]) < datetime.now(UTC) + timedelta(hours=2)


def test_a_revoked_or_unknown_link_is_not_brought_back(api: httpx.Client) -> None:
    link = new_link(api)
    assert api.delete(f"/views/{link['token']}").status_code == 204
    assert_json_error(api.patch(f"/views/{link['token']}", json={"ttlSeconds": 86400}), 404,
                      LINK_NOT_FOUND)
    assert_json_error(api.patch("/views/" + "A" * 43, json={"ttlSeconds": 86400}), 404,
                      LINK_NOT_FOUND)
    assert_json_error(api.get(f"/views/{link['token']}"), 404, LINK_NOT_FOUND)


def test_an_expiry_before_the_links_not_before_is_refused(api: httpx.Client) -> None:
    opens = (datetime.now(UTC) + timedelta(minutes=50)).isoformat()
    link = new_link(api, policy={"notBefore": opens})
    assert_json_error(api.patch(f"/views/{link['token']}", json={"ttlSeconds": 600}), 400,
                      "the new expiry must come after the link's notBefore")


def test_another_accounts_token_is_not_found(vault: VaultProcess, api: httpx.Client) -> None:
    link = new_link(api)
    _, other_key = vault.new_account(name="Other Co")
    with vault.client(other_key) as other:
        assert_json_error(other.patch(f"/views/{link['token']}", json={"ttlSeconds": 86400}),
                          404, LINK_NOT_FOUND)


def test_an_auditors_key_cannot_change_an_expiry(vault: VaultProcess, api: httpx.Client) -> None:
    link = new_link(api)
    auditor_key = created(api.post("/keys", json={"name": "audit", "role": "auditor"}))["key"]
    vault.secrets.append(auditor_key)
    with vault.client(auditor_key) as auditor:
        assert_json_error(auditor.patch(f"/views/{link['token']}", json={"ttlSeconds": 86400}),
                          403, AUDITOR_CHANGE)
    assert when(api.get(f"/views/{link['token']}").json()["expiresAt"]) < (
        datetime.now(UTC) + timedelta(hours=2))
