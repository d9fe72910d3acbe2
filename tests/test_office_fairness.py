"""One account cannot hold the Office converter for the others, over HTTP against a real vaultd
and a real LibreOffice: a tiny XLSX or ODS whose used range is A1:XFD1048576 is refused before
LibreOffice starts; an account's third conversion is a 429; and while one account has a
document that keeps LibreOffice busy until its deadline running and another such document
waiting, a second account's small DOCX waits for the running one only (measured).
Marked `alone`: it bounds a time (docs/testing.md)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests import office_documents as od
from tests.http_helpers import assert_json_error, upload, upload_ok
from tests.office_costly import far_cell_ods, far_cell_xlsx
from tests.vault_process import VaultProcess, running_vault
from tests.waiting import wait_until

pytestmark = [
    pytest.mark.slow,  # its own vaultd and LibreOffice
    pytest.mark.alone,
    pytest.mark.skipif(not shutil.which("soffice"), reason="LibreOffice is not installed"),
]

OCTET = "application/octet-stream"
DEADLINE = 30  # seconds: upload.office_timeout_seconds for this vaultd
ACCOUNT_BUSY = ("this account already has 2 Office documents converting or waiting; retry when "
                "one is done")
TOO_SLOW = f"the document took longer than {DEADLINE} s to convert"
FAR = ("the spreadsheet's used range exceeds the budget of 2,000,000 cells ({part} spans "
       "A1:XFD1048576, 17,179,869,184 cells)")


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with running_vault(tmp_path_factory.mktemp("office-fair") / "data",
                       VAULTD_UPLOAD_OFFICE="true",
                       VAULTD_UPLOAD_OFFICE_TIMEOUT_SECONDS=str(DEADLINE)) as server:
        yield server


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as stat:
        return int(stat.read().rsplit(b")", 1)[1].split()[1])


def converting(vault: VaultProcess) -> bool:
    """A converter process of this vaultd (a child, or a child's child) is running."""
    assert vault.process is not None
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as cmdline:
                if b"/var/tmp/vaultd-convert-" not in cmdline.read():  # its job directory
                    continue
            parent = _parent(int(name))
            if vault.process.pid in (parent, _parent(parent)):
                return True
        except (OSError, ValueError, IndexError):
            continue
    return False


def test_a_tiny_spreadsheet_with_a_huge_used_range_is_refused_before_libreoffice(
        vault: VaultProcess, api: httpx.Client) -> None:
    for package, part in ((far_cell_xlsx(), "xl/worksheets/sheet1.xml"),
                          (far_cell_ods(), "content.xml table 1")):
        assert len(package) < 2_000
        started = time.monotonic()
        assert_json_error(upload(api, package, content_type=OCTET), 422, FAR.format(part=part))
        assert time.monotonic() - started < DEADLINE / 2  # refused by the worker, not killed
        assert not converting(vault)
    small = upload_ok(api, far_cell_xlsx("C", 40), content_type=OCTET, name="small.xlsx")
    assert small["pageCount"] == 1


def _client(vault: VaultProcess, key: str) -> httpx.Client:
    # Longer than the client default: A's waiting document takes two deadlines and B's turn.
    return httpx.Client(base_url=f"{vault.url}/v1", timeout=180,
                        headers={"Authorization": f"Bearer {key}"})


def _in_thread(client: httpx.Client, data: bytes, out: list[httpx.Response]) -> threading.Thread:
    thread = threading.Thread(target=lambda: out.append(upload(client, data, content_type=OCTET)))
    thread.start()
    return thread


def test_another_accounts_document_waits_for_one_conversion_not_a_queue(
        vault: VaultProcess) -> None:
    _, key_a = vault.new_account("Hog Inc")
    _, key_b = vault.new_account("Small Co")
    with _client(vault, key_b) as small:
        for text in ("warm up", "alone"):  # the second: one warm small conversion, now
            started = time.monotonic()
            upload_ok(small, od.docx([text]), content_type=OCTET)
            alone = time.monotonic() - started

    answers: list[httpx.Response] = []
    clients = [_client(vault, key_a) for _ in range(3)]
    try:
        threads = [_in_thread(client, od.docx_that_hangs(), answers) for client in clients]
        # Two of A's documents held (one converting, one waiting); the third is refused.
        refused = wait_until(lambda: [a for a in answers if a.status_code == 429], timeout=60,
                             what="account A's third upload refused")
        wait_until(lambda: converting(vault), timeout=60, what="A's first conversion")
        assert_json_error(refused[0], 429, ACCOUNT_BUSY)
        assert refused[0].headers["Retry-After"] == "10"
        with _client(vault, key_b) as small:
            started = time.monotonic()
            created = upload_ok(small, od.docx(["next in turn"]), content_type=OCTET)
            waited = time.monotonic() - started
        assert created["pageCount"] == 1
        # In turn: A's running conversion (at most DEADLINE), then B's. First come first
        # served would have been both of A's, at least 2 * DEADLINE minus the time A's first
        # had run before B asked (a second or two).
        assert waited < DEADLINE + alone + DEADLINE / 2, (waited, alone)
        print(f"B's DOCX waited {waited:.1f} s; alone it took {alone:.1f} s")
        for thread in threads:
            thread.join(3 * DEADLINE + 60)
    finally:
        for client in clients:
            client.close()
    assert sorted(a.status_code for a in answers) == [422, 422, 429]
    for answer in answers:
        if answer.status_code == 422:
            assert_json_error(answer, 422, TOO_SLOW)
