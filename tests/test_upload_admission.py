"""Uploads refused before a byte is stored: from the declared size against the plan, and past
the per-account cap on uploads in progress (429 with Retry-After)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import assert_json_error, upload
from tests.inprocess import inprocess_vault
from tests.raw_posts import finish_post, start_post
from tests.vault_process import VaultProcess
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

CONCURRENT = 2


@pytest.fixture(scope="module")
def vault2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with inprocess_vault(tmp_path_factory.mktemp("admission") / "data", VAULTD_RENDER_WORKERS="1",
                         VAULTD_UPLOAD_MAX_CONCURRENT_PER_ACCOUNT=str(CONCURRENT)) as server:
        yield server


def set_usage(vault: VaultProcess, account_id: str, documents: int, storage: int) -> None:
    async def change(db: Any) -> None:
        await db.accounts.update_one(
            {"_id": account_id},
            {"$set": {"usage.documents": documents, "usage.storageBytes": storage}})

    vault.run_service(change)


def temporaries(vault: VaultProcess) -> list[str]:
    blobs = vault.data_dir / "blobs"
    return sorted(p.name for p in blobs.iterdir()) if blobs.exists() else []


def start_upload(vault: VaultProcess, key: str, data: bytes, sent: int) -> socket.socket:
    return start_post(vault.port, "/v1/files", key, "image/png", data, sent)


def test_an_account_at_its_document_limit_is_refused_before_any_byte_is_stored(
    vault2: VaultProcess,
) -> None:
    account_id, key = vault2.new_account(plan="free")
    set_usage(vault2, account_id, documents=100, storage=0)
    before = temporaries(vault2)
    data = docs.png_of_size(400_000)
    sock = start_upload(vault2, key, data, 300_000)
    time.sleep(0.5)
    assert temporaries(vault2) == before  # no temporary blob while the body arrives
    status, body = finish_post(sock, data, 300_000)
    assert status == 402
    assert body["error"] == "document limit reached: plan Free allows 100 documents"
    assert temporaries(vault2) == before


def test_an_upload_whose_declared_size_cannot_fit_the_quota_is_refused_402(
    vault2: VaultProcess,
) -> None:
    account_id, key = vault2.new_account(plan="free")
    set_usage(vault2, account_id, documents=1, storage=(1 << 30) - 100_000)
    with vault2.client(key) as api:
        assert_json_error(upload(api, docs.png_of_size(200_000), content_type="image/png"),
                          402, "storage limit reached: plan Free allows 1073741824 bytes")
        # A file that fits is still accepted.
        assert upload(api, docs.png_of_size(50_000), content_type="image/png").status_code == 201


def test_uploads_past_the_per_account_cap_get_429_with_retry_after(
    vault2: VaultProcess,
) -> None:
    _, key = vault2.new_account()
    data = docs.png_of_size(300_000)
    before = temporaries(vault2)
    held = [start_upload(vault2, key, data, 100_000) for _ in range(CONCURRENT)]
    # Each holds its slot once its temporary blob exists.
    wait_until(lambda: len(temporaries(vault2)) - len(before) == CONCURRENT, timeout=15,
               what="every upload under way")
    with vault2.client(key) as api:
        response = upload(api, docs.png(), content_type="image/png")
        assert_json_error(response, 429, f"too many uploads in progress for this account (at "
                          f"most {CONCURRENT}); retry when one has finished")
        assert response.headers["Retry-After"] == "5"
    _, other_key = vault2.new_account(name="Other")
    with vault2.client(other_key) as other:  # another account is not affected
        assert upload(other, docs.png(), content_type="image/png").status_code == 201
    for sock in held:
        assert finish_post(sock, data, 100_000)[0] == 201
    with vault2.client(key) as api:  # the slots were given back
        assert upload(api, docs.png(), content_type="image/png").status_code == 201


def test_an_abandoned_upload_gives_its_slot_back(vault2: VaultProcess) -> None:
    _, key = vault2.new_account()
    data = docs.png_of_size(300_000)
    for _ in range(CONCURRENT):
        start_upload(vault2, key, data, 100_000).close()
    with httpx.Client(base_url=f"{vault2.url}/v1",
                      headers={"Authorization": f"Bearer {key}"}) as api:
        # A 429 stores nothing: ask until the abandoned uploads have given their slots back.
        wait_until(lambda: upload(api, docs.png(), content_type="image/png").status_code == 201,
                   timeout=15, what="the slots given back")
