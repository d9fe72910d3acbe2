"""The console's Trace page over HTTP, without a browser, through a real vaultd: a served page's
JPEG posted by the form names its viewer; an image of nothing is "Nothing found"; an auditor's
post is refused in its role's words, a Free account's in the plan's, a missing or mistyped
image in words, each on the form again for a browser and as {"error"} for a script. The
Chromium half is tests/test_console_trace_browser.py."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import closing

import httpx
import pytest
from PIL import Image

from tests.console_auth import console_vault, member_client
from tests.http_helpers import assert_json_error, served_page
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server

HTML = {"Accept": "text/html"}
AUDITOR_REFUSED = "the auditor role cannot trace leaked images"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("trace") / "data", mail) as server:
        yield server


def post_image(client: httpx.Client, csrf: str, image: bytes, kind: str = "image/jpeg",
               **headers: str) -> httpx.Response:
    return client.post("/console/trace", data={"_csrf": csrf},
                       files={"image": ("leak.jpg", image, kind)}, headers=headers, timeout=120)


def test_a_served_page_names_its_viewer_and_a_blank_image_finds_nothing(
        vault: VaultProcess, mail: MailServer) -> None:
    account, key = vault.new_account("Trace Co", plan="pro")
    leaked = served_page(vault, key, "dana@example.com", "Dana <b>Scully</b>")
    client, csrf = member_client(vault, mail, account, "m@trace.example", "member")
    with closing(client):
        found = post_image(client, csrf, leaked, **HTML)
        assert found.status_code == 200, found.text
        assert "Dana &lt;b&gt;Scully&lt;/b&gt;" in found.text  # the name as text
        assert "<b>Scully</b>" not in found.text
        for shown in ("dana@example.com", "203.0.113.9", "Board minutes.pdf", "invisible"):
            assert shown in found.text
        blank = io.BytesIO()
        Image.new("RGB", (600, 800), "white").save(blank, "PNG")
        nothing = post_image(client, csrf, blank.getvalue(), "image/png", **HTML)
        assert nothing.status_code == 200
        assert "Nothing found" in nothing.text and "dana@example.com" not in nothing.text


def test_refusals_in_words_for_a_role_a_plan_and_a_bad_image(
        vault: VaultProcess, mail: MailServer) -> None:
    account, key = vault.new_account("Refusing Co", plan="pro")
    leaked = served_page(vault, key, "eve@example.com", "Eve")
    auditor, auditor_csrf = member_client(vault, mail, account, "a@refusing.example", "auditor")
    member, member_csrf = member_client(vault, mail, account, "m@refusing.example", "member")
    free_account, _ = vault.new_account("Free Co", plan="free")
    free, free_csrf = member_client(vault, mail, free_account, "f@free.example", "admin")
    with closing(auditor), closing(member), closing(free):
        page = auditor.get("/console/trace", headers=HTML)
        assert page.status_code == 200 and 'type="file"' not in page.text
        refused = post_image(auditor, auditor_csrf, leaked, **HTML)
        assert refused.status_code == 403 and AUDITOR_REFUSED in refused.text
        assert "eve@example.com" not in refused.text
        assert_json_error(post_image(auditor, auditor_csrf, leaked), 403, AUDITOR_REFUSED)
        assert_json_error(post_image(free, free_csrf, leaked), 403,
                          "leak tracing needs the Pro or Business plan (account is on Free)")
        assert "needs the Pro or Business plan" in free.get("/console/trace", headers=HTML).text
        assert_json_error(member.post("/console/trace", data={"_csrf": member_csrf},
                                      files={"other": ("x", b"x", "text/plain")}),
                          400, "choose the leaked image (a JPEG or PNG) first")
        mistyped = post_image(member, member_csrf, b"%PDF-1.7 not an image", "application/pdf",
                              **HTML)
        assert mistyped.status_code == 415
        assert "send the leaked image as image/jpeg or image/png" in mistyped.text
        assert 'id="leaked-image"' in mistyped.text  # the form again, to try another
        assert_json_error(member.post("/console/trace", files={"image": ("l.jpg", leaked,
                                                                         "image/jpeg")}),
                          403, "missing CSRF token: send the session's token in X-CSRF-Token")
