"""Uploads when a disk is really full (a small tmpfs, filled): the blob store's (507) or the
embedded database's (503, before WiredTiger would meet it). Nothing partial is kept, usage does
not move, files stored before are still served, and uploads work again once space is freed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import assert_json_error, create_link, upload, upload_ok
from tests.tmpfs import fill, free_bytes, mounted_tmpfs
from tests.vault_process import VaultProcess, running_vault

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

BLOBS_FULL = "storage is full; retry later"
DATABASE_FULL = "database storage is full; retry later"
DB_RESERVE = 64 << 20  # vaultd.services.storage.db_room.DB_RESERVE_BYTES, written out: a contract


def usage(api: httpx.Client) -> tuple[int, int]:
    found = api.get("/account").json()["usage"]
    return found["documents"], found["storageBytes"]


def assert_still_served(api: httpx.Client, server: VaultProcess, file_id: str,
                        data: bytes) -> None:
    link = create_link(api, file_id)
    server.secrets.append(link["token"])
    assert api.get(f"/views/{link['token']}/pages/1").status_code == 200
    download = api.get(f"/files/{file_id}/download")
    assert download.status_code == 200 and download.content == data


@pytest.fixture
def blob_disk(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "blobs", "2m") as mount:
        yield mount


def test_a_full_blob_disk_is_507_keeps_nothing_and_old_files_are_still_served(
    tmp_path: Path, blob_disk: Path
) -> None:
    with running_vault(tmp_path / "data", own_database=True,
                       VAULTD_STORAGE_LOCAL_DIR=str(blob_disk),
                       VAULTD_RENDER_WORKERS="1") as server:
        _, key = server.new_account()
        with server.client(key) as api:
            kept = docs.png_of_size(300_000)
            first = upload_ok(api, kept, content_type="image/png", kind="delivery")
            filler = fill(blob_disk, leave=100_000)
            before = sorted(p.name for p in blob_disk.iterdir())
            response = upload(api, docs.png_of_size(350_000), content_type="image/png")
            body = assert_json_error(response, 507, BLOBS_FULL)
            assert body == {"error": BLOBS_FULL}
            assert response.headers["retry-after"] == "60"
            assert sorted(p.name for p in blob_disk.iterdir()) == before  # no partial blob
            assert usage(api) == (1, 300_000)
            assert_still_served(api, server, first["id"], kept)
            filler.unlink()
            again = upload_ok(api, docs.png_of_size(350_000), content_type="image/png")
            assert sorted(p.name for p in blob_disk.iterdir()) == sorted([first["id"],
                                                                          again["id"]])
            assert usage(api) == (2, 650_000)


@pytest.fixture
def database_disk(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "data" / "db", "128m") as mount:
        yield mount


def test_a_nearly_full_database_disk_refuses_uploads_with_503_and_keeps_serving(
    tmp_path: Path, database_disk: Path
) -> None:
    with running_vault(tmp_path / "data", own_database=True, VAULTD_RENDER_WORKERS="1") as server:
        _, key = server.new_account()
        blobs = server.data_dir / "blobs"
        with server.client(key) as api:
            kept = docs.pdf()
            first = upload_ok(api, kept, kind="delivery")
            filler = fill(database_disk, leave=16 << 20)
            assert free_bytes(database_disk) < DB_RESERVE
            response = upload(api, docs.pdf(pages=3))
            assert_json_error(response, 503, DATABASE_FULL)
            assert response.headers["retry-after"] == "60"
            assert [p.name for p in blobs.iterdir()] == [first["id"]]
            assert usage(api) == (1, len(kept))
            assert_still_served(api, server, first["id"], kept)
            assert api.get("/files").json()["total"] == 1
            filler.unlink()
            upload_ok(api, docs.pdf(pages=3))
            assert usage(api)[0] == 2


@pytest.fixture
def shared_disk(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "data", "160m") as mount:
        yield mount


def test_blobs_on_the_database_disk_count_against_its_reserve(
    shared_disk: Path,
) -> None:
    with running_vault(shared_disk, own_database=True, VAULTD_RENDER_WORKERS="1") as server:
        _, key = server.new_account()
        with server.client(key) as api:
            filler = fill(shared_disk, leave=DB_RESERVE + (8 << 20))
            large = docs.png_of_size(10 << 20)  # would leave the database less than its reserve
            assert_json_error(upload(api, large, content_type="image/png"), 503, DATABASE_FULL)
            assert usage(api) == (0, 0)
            upload_ok(api, docs.pdf())  # a small one still fits beside the reserve
            filler.unlink()
            upload_ok(api, large, content_type="image/png")
