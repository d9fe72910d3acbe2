"""Screenshots of every console page from a real run, for docs/console.md.

    python -m bench.console_screens [--out docs/console]

Starts a vaultd with a real SMTP server (tests.mail_server) in a temporary directory, fills one
Business account through the API (files, links opened by a viewer, a room with folders, a
member who asked for notifications), signs an admin in by a mailed code, and photographs each
page in headless Chromium at 1100 x 760. Each PNG is reduced to a 64-colour palette (Pillow) so
the set stays small in the repository; a page is the same page on every run but for times and
ids."""

from __future__ import annotations

import argparse
import io
import tempfile
from pathlib import Path

from PIL import Image
from playwright.sync_api import Page, sync_playwright

from tests import documents as docs
from tests.browser_session import CHROMIUM, CHROMIUM_ARGS
from tests.console_auth import PLAIN_COOKIE, browser, console_vault, new_member, sign_in
from tests.http_helpers import create_link, created, upload_ok
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess

VIEWPORT = {"width": 1100, "height": 760}
COLOURS = 64


def fill(vault: VaultProcess) -> dict[str, str]:
    """A Business account with something on every page; returns what the pages need."""
    account, key = vault.new_account("Harbour Legal", plan="business")
    with vault.client(key) as api:
        report = upload_ok(api, docs.pdf(4), name="Q3 board report.pdf")
        upload_ok(api, docs.pdf(2), name="Lease — signed copy.pdf")
        link = create_link(api, report["id"], "ann.lee@example.com", viewerName="Ann Lee")
        page = api.get(f"/views/{link['token']}/pages/1", headers={"x-viewer-ip": "203.0.113.9"})
        api.get(f"/views/{link['token']}/pages/2")
        room = created(api.post("/rooms", json={"name": "Project Oak"}))
        folder = created(api.post(f"/rooms/{room['id']}/folders", json={"name": "Finance"}))
        created(api.post(f"/rooms/{room['id']}/files",
                         json={"fileId": report["id"], "folderId": folder["id"]}))
        created(api.post("/keys", json={"name": "CI deploys", "role": "member"}))
    new_member(vault, account, "auditor@harbour.example", role="auditor")
    return {"account": account, "file": report["id"], "room": room["id"],
            "leak": page.content.hex()}


def shoot(page: Page, url: str, out: Path, name: str) -> None:
    page.goto(url)
    raw = page.screenshot(full_page=False)
    image = Image.open(io.BytesIO(raw)).convert("RGB").quantize(COLOURS)
    image.save(out / f"{name}.png", optimize=True)
    print(f"{name}.png {(out / f'{name}.png').stat().st_size // 1024} KiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/console"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    mail = MailServer().start()
    try:
        with tempfile.TemporaryDirectory() as tmp, console_vault(Path(tmp) / "data", mail) as vault:
            made = fill(vault)
            new_member(vault, made["account"], "admin@harbour.example", role="admin")
            with browser(vault) as client:
                sign_in(client, vault, mail, "admin@harbour.example")
                cookie = client.cookies[PLAIN_COOKIE]
            leak = Path(tmp) / "screenshot.jpg"
            leak.write_bytes(bytes.fromhex(made["leak"]))
            photograph(vault, cookie, made, leak, args.out)
    finally:
        mail.stop()


def photograph(vault: VaultProcess, cookie: str, made: dict[str, str], leak: Path,
               out: Path) -> None:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        anonymous = chromium.new_context(viewport=VIEWPORT).new_page()
        shoot(anonymous, f"{vault.url}/console/sign-in", out, "sign-in")
        context = chromium.new_context(viewport=VIEWPORT)
        context.add_cookies([{"name": PLAIN_COOKIE, "value": cookie, "url": vault.url}])
        page = context.new_page()
        base = f"{vault.url}/console"
        shoot(page, f"{base}/files", out, "files")
        shoot(page, f"{base}/files/{made['file']}", out, "file")
        shoot(page, f"{base}/rooms", out, "rooms")
        shoot(page, f"{base}/rooms/{made['room']}", out, "room")
        shoot(page, f"{base}/activity", out, "activity")
        shoot(page, f"{base}/activity?feed=files", out, "activity-files")
        shoot(page, f"{base}/settings", out, "settings")
        page.goto(f"{base}/trace")
        page.get_by_label("Leaked image", exact=True).set_input_files(str(leak))
        page.get_by_role("button", name="Trace", exact=True).click()
        page.get_by_role("table").first.wait_for(timeout=120_000)
        raw = page.screenshot()
        image = Image.open(io.BytesIO(raw)).convert("RGB").quantize(COLOURS)
        image.save(out / "trace.png", optimize=True)
        chromium.close()


if __name__ == "__main__":
    main()
