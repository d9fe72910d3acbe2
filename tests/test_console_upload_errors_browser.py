"""The console's upload refusals in Chromium, in words a person understands, found by the names
a screen reader announces: a file over the server's size limit ("too large", with the limit),
an account at its plan's document limit ("plan limit reached", with the plan), and a file of a
type vaultd does not take ("wrong type"); each beside a file that did go up, axe-core clean."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests import documents as docs
from tests.browser_session import chromium_browser
from tests.console_auth import console_vault
from tests.console_browser import assert_accessible, off_the_loop, signed_in_tab
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # starts Chromium and its own servers

SIZE_LIMIT = 120_000  # bytes: a small limit, so that a "too large" file is quick to send
WAIT_MS = 30_000


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("upload-errors") / "data", mail,
                       VAULTD_UPLOAD_MAX_BYTES=str(SIZE_LIMIT)) as server:
        yield server


@pytest.fixture(scope="module")
def accounts(vault: VaultProcess) -> dict[str, str]:
    """Made before Chromium starts (its event loop holds the thread: see chromium_browser)."""
    return {plan: vault.new_account(name=f"Uploads {plan}", plan=plan)[0]
            for plan in ("pro", "free")}


@pytest.fixture(scope="module")
def chromium(accounts: dict[str, str]) -> Iterator[Browser]:
    with chromium_browser() as launched:
        yield launched


def choose(page: Page, *files: tuple[str, str, bytes]) -> None:
    page.get_by_label("Upload files").set_input_files(
        [{"name": name, "mimeType": mime, "buffer": data} for name, mime, data in files])


def refusal_of(page: Page, name: str) -> str:
    item = page.get_by_role("listitem").filter(has_text=name)
    item.get_by_text("Not uploaded:").wait_for(timeout=WAIT_MS)
    text: str = item.inner_text()
    return text


def test_a_file_over_the_size_limit_is_too_large_and_says_the_limit(
        chromium: Browser, vault: VaultProcess, mail: MailServer,
        accounts: dict[str, str]) -> None:
    big = docs.pdf(pages=1) + b"%" + b"x" * SIZE_LIMIT  # a PDF, only too big
    with signed_in_tab(chromium, vault, mail, accounts["pro"], "big@uploads.example",
                       "member") as tab:
        page = tab.page
        # Beside it, a file within the limit yet larger than a JSON body may be (16 KB): the
        # console's upload streams as the API's does.
        fits = docs.pdf(pages=1) + b"%" + b"y" * (SIZE_LIMIT // 2)
        choose(page, ("Huge scan.pdf", "application/pdf", big),
               ("Fits.pdf", "application/pdf", fits))
        page.get_by_role("link", name="Open Fits.pdf").wait_for(timeout=WAIT_MS)
        said = refusal_of(page, "Huge scan.pdf")
        assert f"Not uploaded: too large: file larger than the {SIZE_LIMIT} byte limit" in said
        assert_accessible(page)
        assert tab.errors == []


def test_an_account_at_its_plans_limit_reads_plan_limit_reached(
        chromium: Browser, vault: VaultProcess, mail: MailServer,
        accounts: dict[str, str]) -> None:
    async def at_the_limit(db: Any) -> None:  # Free allows 100 documents: say it holds them
        await db.accounts.update_one({"_id": accounts["free"]},
                                     {"$set": {"usage.documents": 100}})
    off_the_loop(lambda: vault.run_service(at_the_limit))
    with signed_in_tab(chromium, vault, mail, accounts["free"], "full@uploads.example",
                       "member") as tab:
        page = tab.page
        choose(page, ("One more.pdf", "application/pdf", docs.pdf(pages=1)))
        said = refusal_of(page, "One more.pdf")
        assert ("Not uploaded: plan limit reached: document limit reached: plan Free allows "
                "100 documents") in said
        assert page.get_by_role("link", name="Open One more.pdf").count() == 0
        assert_accessible(page)


def test_a_file_of_another_type_is_the_wrong_type(
        chromium: Browser, vault: VaultProcess, mail: MailServer,
        accounts: dict[str, str]) -> None:
    with signed_in_tab(chromium, vault, mail, accounts["pro"], "odd@uploads.example",
                       "member") as tab:
        page = tab.page
        choose(page, ("song.mp3", "audio/mpeg", b"ID3\x03\x00" + b"\x00" * 2000))
        said = refusal_of(page, "song.mp3")
        assert "Not uploaded: wrong type (PDF, JPEG or PNG" in said
        assert_accessible(page)
