"""Encryption at rest, seen from outside: blobs on disk, records in MongoDB, tampering."""

from __future__ import annotations

import httpx

from tests import documents as docs
from tests.http_helpers import STORED_FILE_CORRUPT, assert_json_error, upload_ok
from tests.vault_process import VaultProcess


def test_blobs_on_disk_hold_no_plaintext(vault: VaultProcess, api: httpx.Client) -> None:
    data = docs.pdf(pages=3)
    created = upload_ok(api, data, kind="delivery")
    blob = (vault.data_dir / "blobs" / created["id"]).read_bytes()
    assert len(blob) == 56 + len(data) // 16384 * 16400 + len(data) % 16384 + 16
    assert b"%PDF" not in blob and data[100:140] not in blob


def test_the_database_holds_only_wrapped_keys_and_hashes(vault: VaultProcess,
                                                         account: tuple[str, str]) -> None:
    _, key = account
    with vault.client(key) as api:
        created = upload_ok(api, docs.pdf())
        token = api.post("/views", json={"fileId": created["id"],
                                         "viewerEmail": "v@example.com"}).json()["token"]
        vault.secrets.append(token)

    async def dump(db) -> str:
        parts = []
        for name in await db.database.list_collection_names():
            parts += [repr(doc) async for doc in db.database[name].find()]
        return "\n".join(parts)

    everything = vault.run_service(dump)
    master = (vault.data_dir / "master.key").read_text().split(":")[-1].strip()
    assert key not in everything and token not in everything
    assert key[8:] not in everything and master not in everything


def test_a_blob_moved_to_another_record_fails_to_decrypt(vault: VaultProcess,
                                                         api: httpx.Client) -> None:
    a = upload_ok(api, docs.png(), kind="delivery")
    b = upload_ok(api, docs.png(), kind="delivery")
    blobs = vault.data_dir / "blobs"
    (blobs / b["id"]).write_bytes((blobs / a["id"]).read_bytes())
    assert_json_error(api.get(f"/files/{b['id']}/download"), 500, STORED_FILE_CORRUPT)
    assert api.get(f"/files/{a['id']}/download").status_code == 200


def test_a_truncated_blob_is_refused_before_any_byte(vault: VaultProcess,
                                                     api: httpx.Client) -> None:
    created = upload_ok(api, docs.pdf(pages=30), kind="delivery")
    path = vault.data_dir / "blobs" / created["id"]
    path.write_bytes(path.read_bytes()[:-16400])
    assert_json_error(api.get(f"/files/{created['id']}/download"), 500, STORED_FILE_CORRUPT)


def test_a_flipped_bit_in_the_final_chunk_is_refused(vault: VaultProcess,
                                                     api: httpx.Client) -> None:
    created = upload_ok(api, docs.pdf(pages=30), kind="delivery")
    path = vault.data_dir / "blobs" / created["id"]
    blob = bytearray(path.read_bytes())
    blob[-3] ^= 0x01
    path.write_bytes(bytes(blob))
    assert_json_error(api.get(f"/files/{created['id']}/download"), 500, STORED_FILE_CORRUPT)
