"""The Files and file pages over HTTP, without a browser: what they show, the share form's
link (which then works over the API), the forms that revoke, extend and delete, and an auditor
whose every form is refused by the server (403 naming the role) with nothing changed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from html import unescape

import httpx
import pytest

from tests import documents as docs
from tests.console_auth import console_vault, member_client
from tests.http_helpers import assert_json_error, upload_ok
from tests.mail_server import MailServer, parts
from tests.vault_process import VaultProcess
from vaultd.web import console_share

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server

HTML = {"Accept": "text/html"}
AUDITOR_CHANGE = "the auditor role cannot change files, links or rooms"
LINK = re.compile(r'<input id="new-link" type="text" readonly value="([^"]+)"')


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("console-files") / "data", mail) as server:
        yield server


@pytest.fixture(scope="module")
def team(vault: VaultProcess) -> tuple[str, str]:
    return vault.new_account(name="Console Files Co")


@pytest.fixture(scope="module")
def admin(vault: VaultProcess, mail: MailServer,
          team: tuple[str, str]) -> Iterator[tuple[httpx.Client, str]]:
    client, csrf = member_client(vault, mail, team[0], "admin@files.example", "admin")
    yield client, csrf
    client.close()


@pytest.fixture(scope="module")
def auditor(vault: VaultProcess, mail: MailServer,
            team: tuple[str, str]) -> Iterator[tuple[httpx.Client, str]]:
    client, csrf = member_client(vault, mail, team[0], "auditor@files.example", "auditor")
    yield client, csrf
    client.close()


@pytest.fixture(scope="module")
def report(vault: VaultProcess, team: tuple[str, str]) -> str:
    with vault.client(team[1]) as api:
        file_id: str = upload_ok(api, docs.pdf(pages=2), name="Board report.pdf")["id"]
    return file_id


def share(client: httpx.Client, csrf: str, file_id: str, **fields: str) -> httpx.Response:
    return client.post(f"/console/files/{file_id}/share", headers=HTML,
                       data={"_csrf": csrf, "viewerEmail": "ann@client.example",
                             "viewerName": "Ann Lee", **fields})


def test_the_files_page_lists_newest_first_with_links_to_each(
        vault: VaultProcess, team: tuple[str, str], admin: tuple[httpx.Client, str]) -> None:
    client, _ = admin
    with vault.client(team[1]) as api:
        older = upload_ok(api, docs.pdf(pages=1), name="Older.pdf")["id"]
        newer = upload_ok(api, docs.pdf(pages=1), name="Newer.pdf")["id"]
    page = client.get("/console/files", headers=HTML)
    assert page.status_code == 200
    assert "<h1>Files</h1>" in page.text and '<label for="upload">Upload files</label>' in page.text
    newer_at = page.text.index(f'<a href="/console/files/{newer}">Newer.pdf</a>')
    assert newer_at < page.text.index(f'<a href="/console/files/{older}">Older.pdf</a>')


def test_a_link_made_with_the_share_form_works_over_the_api(
        vault: VaultProcess, team: tuple[str, str], admin: tuple[httpx.Client, str],
        report: str) -> None:
    client, csrf = admin
    made = share(client, csrf, report, passcode="harbour 42", days="3")
    assert made.status_code == 201, made.text
    url = unescape(LINK.search(made.text).group(1))  # type: ignore[union-attr]
    token = url.rsplit("/v/", 1)[1]
    vault.secrets.append(token)
    with vault.client(team[1]) as api:
        details = api.get(f"/views/{token}")
    assert details.status_code == 200 and details.json()["policy"] == {"passcode": True}
    assert details.json()["viewerName"] == "Ann Lee"
    again = client.get(f"/console/files/{report}", headers=HTML)
    assert token not in again.text  # shown once, on the answer to the form only
    assert "Ann Lee &lt;ann@client.example&gt;" in again.text


def test_a_refused_share_shows_the_form_again_with_the_reason(
        admin: tuple[httpx.Client, str], report: str) -> None:
    client, csrf = admin
    refused = share(client, csrf, report, passcode="abc", allowedIps="10.0.0.0/8")
    assert refused.status_code == 400
    assert "policy.passcode must be a string of 4 to 128 characters" in refused.text
    assert 'value="10.0.0.0/8"' in refused.text and 'value="abc"' not in refused.text
    too_long = share(client, csrf, report, days="60")
    assert too_long.status_code == 400 and "links on plan Pro last at most 30 days" in too_long.text


def test_the_share_form_offers_the_registered_gates_and_an_agreement_once_there_is_one(
        vault: VaultProcess, team: tuple[str, str], admin: tuple[httpx.Client, str]) -> None:
    client, csrf = admin
    with vault.client(team[1]) as api:
        file_id = upload_ok(api, docs.pdf(pages=1), name="Terms.pdf")["id"]
        before = client.get(f"/console/files/{file_id}", headers=HTML).text
        nda = api.post("/agreements", json={"name": "Mutual NDA",
                                            "text": "The reader keeps the terms secret."}).json()
        after = client.get(f"/console/files/{file_id}", headers=HTML).text
    # Every gate of the registry with a control, in its order (this vault sends mail); a choice
    # with nothing to choose is left out.
    fields = [control.field for control in console_share.controls()]
    assert fields == ["verifyEmail", "passcode", "agreementId"]
    assert [f'name="{field}"' in before for field in fields] == [True, True, False]
    places = [after.index(f'name="{field}"') for field in fields]
    assert places == sorted(places)
    assert f'<option value="{nda["id"]}">Mutual NDA</option>' in after
    made = share(client, csrf, file_id, agreementId=nda["id"], verifyEmail="on")
    assert made.status_code == 201, made.text
    url = unescape(LINK.search(made.text).group(1))  # type: ignore[union-attr]
    token = url.rsplit("/v/", 1)[1]
    vault.secrets.append(token)
    with vault.client(team[1]) as api:
        policy = api.get(f"/views/{token}").json()["policy"]
    assert policy["verifyEmail"] is True and policy["agreementId"] == nda["id"]
    listed = client.get(f"/console/files/{file_id}", headers=HTML).text
    assert "<td>email, agreement</td>" in listed


def test_revoke_and_extend_forms_change_the_link_and_come_back(
        vault: VaultProcess, team: tuple[str, str], admin: tuple[httpx.Client, str]) -> None:
    client, csrf = admin
    with vault.client(team[1]) as api:
        file_id = upload_ok(api, docs.pdf(pages=1), name="Forms.pdf")["id"]
        token = api.post("/views", json={"fileId": file_id, "viewerEmail": "b@c.example"}
                         ).json()["token"]
        link_id = api.get(f"/files/{file_id}/views").json()["views"][0]["id"]
        extended = client.post(f"/console/files/{file_id}/links/{link_id}/extend",
                               data={"_csrf": csrf, "days": "30"}, headers=HTML)
        assert extended.status_code == 303
        assert extended.headers["Location"] == f"/console/files/{file_id}?done=link-extended"
        assert api.get(f"/views/{token}").json()["expiresAt"] > "2026-12-20"
        revoked = client.post(f"/console/files/{file_id}/links/{link_id}/revoke",
                              data={"_csrf": csrf}, headers=HTML)
        assert revoked.headers["Location"] == f"/console/files/{file_id}?done=link-revoked"
        assert_json_error(api.get(f"/views/{token}"), 404, "link not found or no longer available")
        flashed = client.get(revoked.headers["Location"], headers=HTML)
        assert "The link was revoked" in flashed.text and "<td>revoked</td>" in flashed.text


def test_the_delete_confirmation_then_the_form_delete_the_file(
        vault: VaultProcess, team: tuple[str, str], admin: tuple[httpx.Client, str]) -> None:
    client, csrf = admin
    with vault.client(team[1]) as api:
        file_id = upload_ok(api, docs.pdf(pages=1), name="Doomed.pdf")["id"]
        confirm = client.get(f"/console/files/{file_id}/delete", headers=HTML)
        assert confirm.status_code == 200 and "Delete file</button>" in confirm.text
        assert api.get(f"/files/{file_id}").status_code == 200  # the GET changed nothing
        gone = client.post(f"/console/files/{file_id}/delete", data={"_csrf": csrf},
                           headers=HTML)
        assert gone.headers["Location"] == "/console/files?done=file-deleted"
        assert_json_error(api.get(f"/files/{file_id}"), 404, "file not found")


def test_an_auditor_sees_the_pages_without_their_forms(
        auditor: tuple[httpx.Client, str], report: str) -> None:
    client, _ = auditor
    files_page = client.get("/console/files", headers=HTML)
    assert files_page.status_code == 200 and "Board report.pdf" in files_page.text
    assert 'id="upload"' not in files_page.text
    file_page = client.get(f"/console/files/{report}", headers=HTML)
    assert file_page.status_code == 200 and "Access log" in file_page.text
    assert "Create link" not in file_page.text and ">Revoke</button>" not in file_page.text


def test_every_form_an_auditor_posts_is_refused_and_changes_nothing(
        vault: VaultProcess, team: tuple[str, str], auditor: tuple[httpx.Client, str],
        report: str) -> None:
    client, csrf = auditor
    with vault.client(team[1]) as api:
        token = api.post("/views", json={"fileId": report, "viewerEmail": "d@e.example"}
                         ).json()["token"]
        link_id = api.get(f"/files/{report}/views").json()["views"][0]["id"]
        before = api.get(f"/views/{token}").json()["expiresAt"]
        forms = {f"/console/files/{report}/share": {"viewerEmail": "x@y.example"},
                 f"/console/files/{report}/links/{link_id}/revoke": {},
                 f"/console/files/{report}/links/{link_id}/extend": {"days": "30"},
                 f"/console/files/{report}/revoke-all": {},
                 f"/console/files/{report}/delete": {}}
        for path, fields in forms.items():
            assert_json_error(client.post(path, data={"_csrf": csrf, **fields}), 403,
                              AUDITOR_CHANGE)
        in_words = client.post(f"/console/files/{report}/delete", data={"_csrf": csrf},
                               headers=HTML)
        assert in_words.status_code == 403 and AUDITOR_CHANGE in in_words.text
        assert api.get(f"/views/{token}").json()["expiresAt"] == before
        assert api.get(f"/files/{report}").status_code == 200
        assert len(api.get(f"/files/{report}/views").json()["views"]) >= 1


def test_a_preview_is_the_members_own_short_link_logged_as_their_view(
        vault: VaultProcess, team: tuple[str, str], auditor: tuple[httpx.Client, str],
        report: str) -> None:
    client, csrf = auditor  # reading is every role's: an auditor may look too
    opened = client.post(f"/console/files/{report}/preview", data={"_csrf": csrf},
                         headers=HTML)
    assert opened.status_code == 303
    location = opened.headers["Location"]
    assert "/v/" in location
    vault.secrets.append(location.rsplit("/", 1)[1])
    viewer = httpx.get(location, headers=HTML, timeout=30)
    assert viewer.status_code == 200 and "Board report.pdf" in viewer.text
    with vault.client(team[1]) as api:
        mine = [view for view in api.get(f"/files/{report}/views").json()["views"]
                if view["viewerEmail"] == "auditor@files.example"]
        log = api.get(f"/files/{report}/access-log").json()
    assert len(mine) == 1 and mine[0]["state"] == "active"
    lasts = (datetime.fromisoformat(mine[0]["expiresAt"].replace("Z", "+00:00"))
             - datetime.fromisoformat(mine[0]["createdAt"].replace("Z", "+00:00")))
    assert lasts == timedelta(minutes=15)
    assert {"action": "view", "viewerEmail": "auditor@files.example"}.items() <= log[0].items()


def test_a_link_can_be_mailed_to_its_viewer(
        vault: VaultProcess, mail: MailServer, admin: tuple[httpx.Client, str],
        report: str) -> None:
    client, csrf = admin
    before = mail.inbox.count()
    made = client.post(f"/console/files/{report}/share", headers=HTML,
                       data={"_csrf": csrf, "viewerEmail": "cy@client.example",
                             "viewerName": "Cy Park", "mailLink": "on"})
    assert made.status_code == 201
    assert "The link was mailed to cy@client.example." in made.text
    url = unescape(LINK.search(made.text).group(1))  # type: ignore[union-attr]
    vault.secrets.append(url.rsplit("/", 1)[1])
    message = mail.inbox.wait_for(before + 1)
    assert message["To"] == "cy@client.example"
    assert url in parts(message)["text/plain"] and "admin@files.example" in parts(message)[
        "text/plain"]
