"""The placement mark over HTTP (docs/leak-tracing.md, "The placement mark"):
with `trace.placement_mark` on (the default), a page washed of its invisible mark without the
key (the best wash the code allows) still names its view through POST /v1/trace, single and
multipart; it names no view of another account; and with the setting off the same wash leaves
nothing."""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from PIL import Image

from bench.corpus import small_pdf
from bench.leakmark_wash import WASHES
from render.forensic import decode
from render.forensic.layout import keyed
from render.forensic.served import LONG_SIDE
from tests.access_log import access_log_entries
from tests.http_helpers import create_link, page_images, upload_ok
from tests.trace_helpers import png, traced
from tests.vault_process import VaultProcess, running_vault

READABLE_DB = 35.0
WASH = "observed chips, no key"  # what beats the invisible mark without the key


@pytest.fixture(scope="module")
def unplaced_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with running_vault(tmp_path_factory.mktemp("unplaced") / "data",
                       VAULTD_TRACE_PLACEMENT_MARK="false") as server:
        yield server


def _served_pages(vault: VaultProcess, client: httpx.Client, viewer: str, pages: int = 2
                  ) -> tuple[list[Image.Image], list[dict[str, Any]]]:
    """The first `pages` pages of a text document (bench's generated cover, then its
    image pages), as a viewer was served them, and their log entries."""
    file = upload_ok(client, small_pdf().data, name="Term sheet.pdf")
    link = create_link(client, file["id"], viewer, viewerName="Viewer")
    vault.secrets.append(link["token"])
    return page_images(client, link["token"], pages), access_log_entries(vault, file["id"])


def _washed(vault: VaultProcess, page: Image.Image) -> bytes:
    """The page washed of its invisible mark without the key, still readable, as a PNG."""
    assert page.height > LONG_SIDE  # a portrait page: LONG_SIDE rows, then the strip
    washed = WASHES[WASH](page, LONG_SIDE, keyed(None))
    difference = np.asarray(washed, np.float64) - np.asarray(page, np.float64)
    assert 10 * math.log10(255 ** 2 / float((difference ** 2).mean())) >= READABLE_DB
    # The attack works on the invisible mark: the deployment's own layout reads nothing.
    assert decode(washed, keyed(vault.mark_cipher().layout_key)) is None
    return png(washed)


@pytest.mark.slow  # a few reads of whole pages
def test_a_washed_page_still_names_its_view(vault: VaultProcess) -> None:
    """A vaultd as configured by default (the placement mark on)."""
    _, key = vault.new_account("Placing Co")
    with vault.client(key) as client:
        pages, entries = _served_pages(vault, client, "ana@example.com")
        served = io.BytesIO()
        pages[1].save(served, "PNG")
        # Unwashed, the invisible mark names the view, as before: moved words cost it nothing.
        answer = traced(client, served.getvalue())
        assert [m["renderId"] for m in answer["matches"]] == [entries[1]["renderId"]]
        assert answer["matches"][0]["evidence"] == "invisible"
        washed = [_washed(vault, page) for page in pages]
        answer = traced(client, washed[0])
        assert answer["found"] is True, answer
        match, = answer["matches"]
        assert match["renderId"] == entries[0]["renderId"]  # page 1's view, not page 2's
        assert match["evidence"] == "placement"
        assert match["viewerEmail"] == "ana@example.com" and match["page"] == 1
        # Several images at once: each washed page names its own view.
        files = [("image", (f"p{n}.png", leak, "image/png"))
                 for n, leak in enumerate(washed, start=1)]
        batch = client.post("/trace", files=files, timeout=300).json()
        assert [image["matches"][0]["renderId"] for image in batch["images"]] == \
            [entry["renderId"] for entry in entries]
        assert batch["viewers"][0]["images"] == [0, 1]
        assert {image["matches"][0]["evidence"] for image in batch["images"]} == {"placement"}


@pytest.mark.slow
def test_with_the_setting_off_the_same_wash_leaves_nothing(unplaced_vault: VaultProcess) -> None:
    _, key = unplaced_vault.new_account("Unplaced Co")
    with unplaced_vault.client(key) as client:
        pages, entries = _served_pages(unplaced_vault, client, "di@example.com", pages=1)
        assert len(entries) == 1
        assert traced(client, _washed(unplaced_vault, pages[0])) == {"found": False}


@pytest.fixture(scope="module")
def admin_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    # Its own vault: the operator's trace scores every account in turn, and the shared one
    # holds whatever the suite's other modules left there.
    with running_vault(tmp_path_factory.mktemp("admin-trace") / "data") as server:
        yield server


@pytest.mark.slow
def test_vault_admin_trace_reads_the_placement_mark_as_the_api_does(
        admin_vault: VaultProcess, tmp_path: Path) -> None:
    """Two accounts, each with views of its own: the owner's washed page names its view over
    the API and in vault-admin's trace of every account, and nothing in the other account's,
    by either."""
    vault = admin_vault
    _, owner_key = vault.new_account("Admin Owner Co")
    other_id, other_key = vault.new_account("Admin Other Co")
    with vault.client(owner_key) as owner, vault.client(other_key) as other:
        pages, entries = _served_pages(vault, owner, "ed@example.com", pages=1)
        _served_pages(vault, other, "fy@example.com", pages=1)  # views of its own
        leak = tmp_path / "washed.png"
        leak.write_bytes(_washed(vault, pages[0]))
        assert traced(other, leak.read_bytes()) == {"found": False}
        by_api = traced(owner, leak.read_bytes())
    anywhere = vault.admin_json("trace", str(leak))
    match, = anywhere["matches"]
    assert match["renderId"] == entries[0]["renderId"] == by_api["matches"][0]["renderId"]
    assert match["evidence"] == by_api["matches"][0]["evidence"] == "placement"
    assert match["viewerEmail"] == "ed@example.com"
    assert vault.admin_json("trace", str(leak), "--account", other_id) == {"found": False}
    # The code typed off the strip is visible evidence here too, as in POST /v1/trace.
    typed = vault.admin_json("trace", str(leak), "--trace-code", match["traceCode"])
    assert [m["evidence"] for m in typed["matches"]] == ["both"]
    refused = vault.admin("trace", str(leak), "--trace-code", "not a code", expect_ok=False)
    assert refused.returncode == 1
    assert refused.stderr == "vault-admin: traceCode: a trace code has ten symbols\n"
