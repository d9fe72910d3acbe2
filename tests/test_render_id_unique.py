"""Render ids are unique within an account: a vaultd made to draw an id a
second time for one account serves that page under a fresh id, logged once; another account may
hold the same id. The ids are scripted by `tests/scripted_ids_site` (sitecustomize)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from render.forensic import decode
from render.forensic.layout import keyed
from render.forensic_wire import trace_codes
from tests import documents as docs
from tests.http_helpers import create_link, page_images, upload_ok
from tests.vault_process import ROOT, VaultProcess
from vaultd.db_indexes import ensure_indexes
from vaultd.services.pages.db_indexes import RENDER_ID_INDEX

pytestmark = pytest.mark.slow  # starts its own vaultd

SAME, FRESH = 0x0ABCDEF01234, 0x1234567ABCDE
SITE = Path(__file__).resolve().parent / "scripted_ids_site"


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    # Account A's first page draws SAME, its second SAME again then FRESH; account B's page SAME.
    ids = ",".join(f"{value:x}" for value in (SAME, SAME, FRESH, SAME))
    vault = VaultProcess(tmp_path_factory.mktemp("scripted") / "data",
                         env={"PYTHONPATH": f"{SITE}:{ROOT}", "SCRIPTED_RENDER_IDS": ids,
                              "VAULTD_RENDER_WORKERS": "2"})
    vault.start()
    try:
        yield vault
    finally:
        vault.stop()


def _page(vault: VaultProcess, key: str, number: int = 1) -> tuple[str, Image.Image]:
    with httpx.Client(base_url=f"{vault.url}/v1", timeout=60,
                      headers={"Authorization": f"Bearer {key}"}) as api:
        file = upload_ok(api, docs.pdf(pages=2))
        link = create_link(api, file["id"], "ivy@example.com")
        vault.secrets.append(link["token"])
        images = page_images(api, link["token"], number)
    return file["id"], images[-1]


def _render_ids(vault: VaultProcess, file_id: str) -> list[int]:
    async def read(db: Any) -> list[str]:
        return [e["renderId"] async for e in
                db.access_log.find({"fileId": file_id, "action": "page"}).sort("page", 1)]

    return [trace_codes.parse_render_id_hex(value) for value in vault.run_service(read)]


def test_an_id_drawn_twice_in_one_account_is_replaced(scripted: VaultProcess) -> None:
    _, key_a = scripted.new_account("Account A")
    file_a, second_page = _page(scripted, key_a, number=2)
    assert _render_ids(scripted, file_a) == [SAME, FRESH]  # one entry per page, no duplicate
    mark = scripted.mark_cipher()
    deployment = keyed(mark.layout_key)
    # The page that left carries the logged id.
    assert decode(second_page, deployment) == mark.seal(FRESH)
    assert "render id drawn twice in one account" in scripted.log_text()

    _, key_b = scripted.new_account("Account B")
    file_b, page_b = _page(scripted, key_b)
    assert _render_ids(scripted, file_b) == [SAME]  # unique per account, not across accounts
    assert decode(page_b, deployment) == mark.seal(SAME)


def test_the_index_refuses_a_duplicate_and_replaces_the_old_one(scripted: VaultProcess) -> None:
    async def check(db: Any) -> tuple[bool, dict[str, Any], str]:
        entry = {"accountId": "acct-x", "fileId": "f", "action": "page", "renderId": "00000000beef"}
        await db.access_log.insert_one(dict(entry))
        try:
            await db.access_log.insert_one(dict(entry))
            refused = ""
        except Exception as error:  # DuplicateKeyError
            refused = type(error).__name__
        # A trace entry repeats the id it found: it is outside the index.
        await db.access_log.insert_one({**entry, "action": "trace"})
        # A deployment from before unique ids has the plain index on the same keys.
        await db.access_log.drop_index(RENDER_ID_INDEX)
        await db.access_log.create_index([("accountId", 1), ("renderId", 1)])
        await ensure_indexes(db)
        indexes = await db.access_log.index_information()
        return "accountId_1_renderId_1" in indexes, indexes[RENDER_ID_INDEX], refused

    old_kept, index, refused = scripted.run_service(check)
    assert refused == "DuplicateKeyError"
    assert not old_kept
    assert index["unique"] is True
    assert index["key"] == [("accountId", 1), ("renderId", 1)]
