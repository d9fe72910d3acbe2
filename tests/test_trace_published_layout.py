"""A deployment that marked pages before the keyed layout still traces them: its mark key's
record has no `layout`, so on the next start it is stamped `publishedLayoutUntil` and traces read
an image in the keyed layout, then in the published one. A deployment made since does not read
the published layout at all (`test_trace_api`'s forgery test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from render.forensic.embed import embed
from render.forensic_wire import trace_codes
from tests import documents as docs
from tests.access_log import access_log_entries
from tests.http_helpers import create_link, upload_ok
from tests.trace_helpers import png, traced
from tests.vault_process import VaultProcess

pytestmark = pytest.mark.slow  # starts (and restarts) its own vaultd


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    server = VaultProcess(tmp_path_factory.mktemp("published-layout") / "data")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _page_marked_before_the_upgrade(vault: VaultProcess, render_id: int) -> bytes:
    """A page as a deployment of the published layout served it: the sealed id in that layout."""
    clean = Image.new("RGB", (1237, 1600), "white")
    draw = ImageDraw.Draw(clean)
    for row in range(40):
        draw.text((100, 80 + row * 36), "Quarterly figures, confidential " * 3, fill=(30, 30, 30))
    return png(embed(clean, vault.mark_cipher().seal(render_id)))


def _forget_the_layout(db: Any) -> Any:
    return db.deployment_keys.update_one({"_id": "trace-mark"},
                                         {"$unset": {"layout": "", "publishedLayoutUntil": ""}})


def test_pages_marked_in_the_published_layout_trace_after_the_upgrade(
        vault: VaultProcess, tmp_path: Path) -> None:
    _, key = vault.new_account("Legacy Co")
    vault.secrets.append(key)
    with vault.client(key) as api:
        file = upload_ok(api, docs.pdf(), name="Old minutes.pdf")
        link = create_link(api, file["id"], "erin@example.com", viewerName="Erin Burke")
        vault.secrets.append(link["token"])
        page = api.get(f"/views/{link['token']}/pages/1", headers={"x-viewer-ip": "203.0.113.4"})
        assert page.status_code == 200
    [entry] = access_log_entries(vault, file["id"])
    leaked = _page_marked_before_the_upgrade(
        vault, trace_codes.parse_render_id_hex(entry["renderId"]))
    with vault.client(key) as api:  # a deployment made with the keyed layout: not read
        assert traced(api, leaked) == {"found": False}

    vault.run_service(_forget_the_layout)  # as a key record written before the keyed layout
    vault.stop()
    vault.start()
    stamped = vault.run_service(lambda db: db.deployment_keys.find_one({"_id": "trace-mark"}))
    assert stamped["layout"] == "keyed-v1" and stamped["publishedLayoutUntil"] is not None

    with vault.client(key) as api:
        [match] = traced(api, leaked)["matches"]
    assert match["renderId"] == entry["renderId"] and match["viewerEmail"] == "erin@example.com"
    image = tmp_path / "leak.png"
    image.write_bytes(leaked)
    found = vault.admin_json("trace", str(image))
    assert [m["renderId"] for m in found["matches"]] == [entry["renderId"]]
