"""Pages served by a real vaultd carry a render id: stored on their `page` log entry, printed as
a trace code in the strip, and decoded back from the JPEG after a leak."""

from __future__ import annotations

import io
import random
import re
from pathlib import Path

import httpx
import pytest
from PIL import Image

from bench.leakmark_attacks import ATTACKS
from render.forensic import decode
from render.forensic.layout import keyed
from render.forensic_wire import trace_codes
from tests import documents as docs
from tests.access_log import access_log_entries
from tests.http_helpers import create_link, upload_ok
from tests.ocr import edit_distance, read_text
from tests.vault_process import VaultProcess

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop


def test_pages_from_both_routes_trace_back_to_their_log_entry(
    vault: VaultProcess, api: httpx.Client
) -> None:
    file = upload_ok(api, docs.pdf(pages=2), name="Board minutes.pdf")
    link = create_link(api, file["id"], "dana@example.com", viewerName="Dana Scully")
    vault.secrets.append(link["token"])
    served = [api.get(f"/views/{link['token']}/pages/1").content,
              httpx.get(f"{vault.url}/v/{link['token']}/pages/2", timeout=60).content]
    entries = access_log_entries(vault, file["id"])
    assert [e["page"] for e in entries] == [1, 2]
    ids = [trace_codes.parse_render_id_hex(e["renderId"]) for e in entries]
    assert ids[0] != ids[1]
    rng = random.Random(16)
    mark = vault.mark_cipher()
    deployment = keyed(mark.layout_key)
    for jpeg, render_id, entry in zip(served, ids, entries, strict=True):
        page = Image.open(io.BytesIO(jpeg)).convert("RGB")
        sealed = decode(page, deployment)
        # The pixels carry the id sealed with the deployment's key, never the id itself...
        assert sealed is not None and sealed != render_id and mark.open(sealed) == render_id
        # ...laid out by the deployment's layout key: the published layout reads nothing.
        assert decode(page) is None
        for attack in ("jpeg q50", "downscale 50%", "screenshot", "rotate 2 deg + crop"):
            leaked = ATTACKS[attack](page, page.height * 9 // 10, rng)
            assert decode(leaked, deployment) == sealed, attack
        assert entry["viewerEmail"] == "dana@example.com"


def test_the_strip_prints_the_trace_code(
    vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    file = upload_ok(api, docs.pdf(pages=1))
    link = create_link(api, file["id"], "erin@example.com")
    vault.secrets.append(link["token"])
    jpeg = api.get(f"/views/{link['token']}/pages/1").content
    entry = access_log_entries(vault, file["id"])[0]
    render_id = trace_codes.parse_render_id_hex(entry["renderId"])
    page = Image.open(io.BytesIO(jpeg))
    strip = page.crop((0, page.height - page.width // 6, page.width, page.height))
    text = read_text(strip, tmp_path)
    typed = re.search(r"Trace code:([^\n]+)", text)
    assert typed is not None, text
    # Tesseract misreads DejaVu's descending J as "]" or ")" in about one random code in
    # twenty, so the OCR text must be near this page's code, not equal to it: another page's
    # code differs in about nine of its ten symbols. Exact parsing is tested in test_forensic_codes.
    read = typed.group(1).replace(" ", "")
    assert edit_distance(read, trace_codes.trace_code(render_id)) <= 2, (read, text)
