"""The console's branding form over HTTP, through a real vaultd and its SMTP server: an admin of
a Pro account sets a brand name that the hosted viewer, the link's details and the activity log
then show, and clears it back to the account's name; a Free account's page says why there is no
form and its post is refused 402 in words; a member and an auditor are refused 403 in their
roles' words; too long or unprintable text is refused 400 and changes nothing. The browser half
is in tests/test_console_settings_browser.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from tests import documents as docs
from tests.console_auth import console_vault, member_client
from tests.http_helpers import assert_json_error, create_link, upload_ok
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess
from vaultd.records.members import RoleName
from vaultd.services.members.branding import NOT_PRINTABLE, TOO_LONG

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server

HTML = {"Accept": "text/html"}
MANAGE_REFUSED = "the {} role cannot manage members, API keys, webhooks or branding"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("branding") / "data", mail) as server:
        yield server


class Member:
    def __init__(self, vault: VaultProcess, mail: MailServer, account: str, email: str,
                 role: RoleName) -> None:
        self.client, self.csrf = member_client(vault, mail, account, email, role)

    def save(self, text: str, **headers: str) -> httpx.Response:
        return self.client.post("/console/settings/branding", headers=headers,
                                data={"_csrf": self.csrf, "branding": text})


MakeMember = Callable[[str, str, RoleName], Member]


@pytest.fixture
def member(vault: VaultProcess, mail: MailServer) -> Iterator[MakeMember]:
    made: list[Member] = []

    def make(account: str, email: str, role: RoleName) -> Member:
        made.append(Member(vault, mail, account, email, role))
        return made[-1]
    yield make
    for one in made:
        one.client.close()


def brand_of(vault: VaultProcess, key: str) -> tuple[str, str]:
    """(the brand of a new link's details, the hosted viewer's page) for a fresh link."""
    with vault.client(key) as api:
        file_id = upload_ok(api, docs.pdf(1))["id"]
        token = create_link(api, file_id)["token"]
        details = api.get(f"/views/{token}").json()
    page = httpx.get(f"{vault.url}/v/{token}").text
    return details["brand"], page


def test_an_admin_sets_the_brand_viewers_see_and_clears_it(
        vault: VaultProcess, member: MakeMember) -> None:
    account, key = vault.new_account(name="Harbour Legal", plan="pro")
    admin = member(account, "brand-admin@harbour.example", "admin")
    saved = admin.save("  Harbour   <b>Chambers</b> ", **HTML)
    assert saved.status_code == 303
    assert saved.headers["Location"] == "/console/settings?done=branding-saved"
    brand, viewer = brand_of(vault, key)
    assert brand == "Harbour <b>Chambers</b>"
    assert "Harbour &lt;b&gt;Chambers&lt;/b&gt;" in viewer and "<b>Chambers" not in viewer
    settings = admin.client.get("/console/settings", headers=HTML).text
    assert 'value="Harbour &lt;b&gt;Chambers&lt;/b&gt;"' in settings
    with vault.client(key) as api:
        logged = api.get("/activity", params={"action": "branding.changed"}).json()
    assert logged["entries"][0]["actor"]["label"] == "brand-admin@harbour.example"
    assert logged["entries"][0]["detail"] == {"branding": "Harbour <b>Chambers</b>"}
    assert admin.save("").status_code == 303
    assert brand_of(vault, key)[0] == "Harbour Legal"


def test_bad_text_is_refused_in_words_and_changes_nothing(
        vault: VaultProcess, member: MakeMember) -> None:
    account, key = vault.new_account(name="Careful Ltd", plan="business")
    admin = member(account, "careful@brand.example", "admin")
    assert admin.save("Careful Chambers").status_code == 303
    assert_json_error(admin.save("x" * 121), 400, TOO_LONG)
    # (Tornado drops C0 control characters from form fields itself: these reach the service.)
    assert_json_error(admin.save("Careful\x7fChambers"), 400, NOT_PRINTABLE)
    page = admin.save("two\u2028lines", **HTML)
    assert page.status_code == 400 and NOT_PRINTABLE in page.text
    assert brand_of(vault, key)[0] == "Careful Chambers"


def test_a_free_account_is_told_why_and_refused(vault: VaultProcess, member: MakeMember) -> None:
    account, key = vault.new_account(name="Small Firm", plan="free")
    admin = member(account, "small@brand.example", "admin")
    page = admin.client.get("/console/settings", headers=HTML).text
    assert "Custom branding needs the Pro or Business plan; this account is on Free" in page
    assert 'action="/console/settings/branding"' not in page
    assert_json_error(admin.save("Big Firm"), 402,
                      "custom branding needs the Pro or Business plan (account is on Free)")
    assert brand_of(vault, key)[0] == "Small Firm"


@pytest.mark.parametrize("role", ["member", "auditor"])
def test_a_role_below_admin_is_refused_in_its_words(
        vault: VaultProcess, member: MakeMember, role: RoleName) -> None:
    account, key = vault.new_account(name=f"Roles {role}", plan="pro")
    weak = member(account, f"{role}@roles.example", role)
    assert 'action="/console/settings/branding"' not in weak.client.get(
        "/console/settings", headers=HTML).text
    assert_json_error(weak.save("Taken Over"), 403, MANAGE_REFUSED.format(role))
    assert brand_of(vault, key)[0] == f"Roles {role}"
