"""Image renditions (vaultd/services/files/renditions.py): made at upload, used for pages, invisible
in usage and listings, removed with the file; files without one still render."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import httpx
from PIL import Image

from render.documents.brokered_reads import open_blob
from render.page.rasterise import decode_image
from render.wire.model import PixelBudget
from render.worker import rendition
from render.worker.tasks import validate_document
from tests import documents as docs
from tests import render_fixtures as fx
from tests.access_log import file_record
from tests.http_helpers import create_link, upload_ok
from tests.vault_process import VaultProcess
from tests.waiting import wait_until


def _page_size(api: httpx.Client, token: str) -> tuple[int, int]:
    response = api.get(f"/views/{token}/pages/1")
    assert response.status_code == 200, response.text
    return Image.open(io.BytesIO(response.content)).size


def test_an_image_gets_a_rendition_that_pages_use_and_nothing_counts(
    vault: VaultProcess, api: httpx.Client
) -> None:
    before = api.get("/account").json()["usage"]
    data = fx.big_png()
    created = upload_ok(api, data, name="scan.png")
    blobs = vault.data_dir / "blobs"
    original, kept = blobs / created["id"], blobs / f"{created['id']}.rendition"
    assert original.exists() and kept.exists()
    record = file_record(vault, created["id"])["rendition"]
    assert (record["name"], record["longSide"], record["maxPixels"]) == (
        kept.name, 1600, 4_000_000)
    assert kept.read_bytes()[:64] != original.read_bytes()[:64]  # encrypted under its own key
    usage = api.get("/account").json()["usage"]
    assert usage["storageBytes"] - before["storageBytes"] == len(data) == created["size"]
    assert usage["documents"] - before["documents"] == 1
    listed = [f for f in api.get("/files", params={"per_page": 100}).json()["files"]]
    assert [f["size"] for f in listed if f["id"] == created["id"]] == [len(data)]
    assert all("rendition" not in f["id"] for f in listed)
    link = create_link(api, created["id"])
    size = _page_size(api, link["token"])
    # The original made unreadable: pages still come, from the rendition alone.
    original.write_bytes(b"\0" * original.stat().st_size)
    assert _page_size(api, link["token"]) == size
    assert api.delete(f"/files/{created['id']}").status_code == 204
    assert not original.exists() and not kept.exists()


def test_an_image_without_a_rendition_renders_from_the_original(
    vault: VaultProcess, api: httpx.Client
) -> None:
    created = upload_ok(api, fx.big_png(), name="old.png")
    link = create_link(api, created["id"])
    with_rendition = _page_size(api, link["token"])
    kept = vault.data_dir / "blobs" / f"{created['id']}.rendition"

    async def forget(db: Any) -> None:  # as a file uploaded before renditions existed
        await db.files.update_one({"_id": created["id"]}, {"$unset": {"rendition": ""}})

    vault.run_service(forget)
    kept.unlink()
    # The file's record is kept for a second per process (services.common.recent): once it is read
    # again, pages come from the original.
    wait_until(lambda: api.get(f"/views/{link['token']}/pages/1").status_code == 200,
               timeout=10)
    assert _page_size(api, link["token"]) == with_rendition
    assert api.delete(f"/files/{created['id']}").status_code == 204


def test_a_pdf_or_a_small_image_gets_no_rendition(vault: VaultProcess, api: httpx.Client
                                                   ) -> None:
    # A picture of up to two pages' worth of pixels decodes about as fast as a rendition.
    for body in (docs.pdf(pages=2), fx.big_png((2400, 1600))):
        created = upload_ok(api, body)
        assert "rendition" not in file_record(vault, created["id"])
        assert not (vault.data_dir / "blobs" / f"{created['id']}.rendition").exists()
        assert api.get(f"/views/{create_link(api, created['id'])['token']}/pages/1"
                       ).status_code == 200


def test_the_rendition_has_the_pixels_a_page_of_the_original_has(tmp_path: Path) -> None:
    budget = PixelBudget(long_side=900, max_pixels=500_000)  # a rendition from 1 megapixel up
    for data, kind in ((fx.big_png(), fx.PNG), (fx.sideways_jpeg((1600, 1200)), fx.JPEG)):
        source = fx.encrypt_to_local(tmp_path, data, kind)
        assert validate_document(source, budget).page_count == 1
        kept = Image.open(io.BytesIO(rendition.image_rendition(source, budget)))
        assert rendition.LAST.kept is None  # taken by the rendition, not left behind
        again = Image.open(io.BytesIO(rendition.image_rendition(source, budget)))  # decoded anew
        with open_blob(source) as blob:
            direct = decode_image(blob, kind, budget)
        assert kept.mode == again.mode == "RGB" and kept.width * kept.height <= 500_000
        assert kept.tobytes() == again.tobytes() == direct.tobytes()
    small = fx.encrypt_to_local(tmp_path, fx.jpeg((800, 600)), fx.JPEG)
    assert rendition.image_rendition(small, budget) == b""  # 0.48 megapixels: none needed
