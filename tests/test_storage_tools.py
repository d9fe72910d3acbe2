"""`vault-admin storage verify | gc | migrate`, run as real processes against a running vaultd,
on the local backend, on Azure (Azurite) and on S3 (moto_server)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import httpx
import pytest

from backends.azure import AzureBackend, AzureConfig
from backends.base import BlobBackend
from backends.local import LocalBackend
from backends.s3 import S3Backend, S3Config
from tests import documents as docs
from tests.admin_zygote import run_admin
from tests.azurite import ACCOUNT_KEY, Azurite
from tests.cli_errors import one_line_error
from tests.http_helpers import upload_ok
from tests.moto_server import SECRET_ACCESS_KEY, MotoServer
from tests.vault_process import ROOT, VaultProcess, base_env, running_vault
from vaultd.crypto.blob_format import HEADER_SIZE, WIRE_CHUNK_SIZE

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

T = TypeVar("T")


def tools_vault(root: Any, env: dict[str, str]) -> Iterator[VaultProcess]:
    # The worker's database (tests.worker_database): the tools work on the records and blobs,
    # not on the embedded database, so a start of one per vault would buy nothing here.
    with running_vault(root / "data", VAULTD_RENDER_WORKERS="1", **env) as server:
        server.secrets += [ACCOUNT_KEY, SECRET_ACCESS_KEY]
        yield server


@pytest.fixture(scope="module")
def local_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    yield from tools_vault(tmp_path_factory.mktemp("tools-local"), {})


@pytest.fixture(scope="module")
def azure_vault(tmp_path_factory: pytest.TempPathFactory,
                azurite: Azurite) -> Iterator[VaultProcess]:
    container = f"tools-{uuid.uuid4().hex[:12]}"
    yield from tools_vault(tmp_path_factory.mktemp("tools-azure"), azurite.env(container))


@pytest.fixture(scope="module")
def s3_vault(tmp_path_factory: pytest.TempPathFactory, moto: MotoServer) -> Iterator[VaultProcess]:
    bucket = f"tools-{uuid.uuid4().hex[:12]}"
    yield from tools_vault(tmp_path_factory.mktemp("tools-s3"), moto.env(bucket, "blobs/"))


@pytest.fixture(params=["local", "azure", "s3"])
def vault(request: pytest.FixtureRequest) -> VaultProcess:
    server: VaultProcess = request.getfixturevalue(f"{request.param}_vault")
    return server


@pytest.fixture
def api(vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = vault.new_account("Integrity Inc")
    with vault.client(key) as client:
        yield client


def admin(vault: VaultProcess, *args: str, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    """vault-admin with the server's settings, plus `env`; any exit code."""
    return run_admin(["--data-dir", str(vault.data_dir), *args],
                     base_env({**vault.env, **(env or {})}), ROOT, timeout=120)


def admin_json(vault: VaultProcess, *args: str, code: int = 0,
               env: dict[str, str] | None = None) -> Any:
    result = admin(vault, "--json", *args, env=env)
    assert result.returncode == code, result.stderr
    return json.loads(result.stdout)


def storage_of(env: dict[str, str], vault: VaultProcess) -> BlobBackend:
    if env.get("VAULTD_STORAGE_BACKEND") == "azure":
        return AzureBackend(AzureConfig(env["VAULTD_AZURE_CONTAINER"],
                                        connection_string=env["VAULTD_AZURE_CONNECTION_STRING"]))
    if env.get("VAULTD_STORAGE_BACKEND") == "s3":
        return S3Backend(S3Config(env["VAULTD_S3_BUCKET"], prefix=env["VAULTD_S3_PREFIX"],
                                  region=env["VAULTD_S3_REGION"],
                                  endpoint_url=env["VAULTD_S3_ENDPOINT_URL"],
                                  addressing_style=env["VAULTD_S3_ADDRESSING_STYLE"]))
    return LocalBackend(vault.data_dir / "blobs")


def on_storage(vault: VaultProcess, action: Callable[[BlobBackend], Awaitable[T]]) -> T:
    """Run `action` against the server's blob storage, directly (as damage would happen)."""
    async def main() -> T:
        backend = storage_of(vault.env, vault)
        try:
            return await action(backend)
        finally:
            await backend.close()

    return asyncio.run(main())


async def put(backend: BlobBackend, name: str, data: bytes) -> None:
    writer = await backend.open_writer(name)
    await writer.write(data)
    await writer.commit()


def corrupt_chunk(vault: VaultProcess, name: str, chunk: int) -> None:
    async def flip(backend: BlobBackend) -> None:
        blob = bytearray(await backend.read_range(name, 0, await backend.size(name)))
        blob[HEADER_SIZE + chunk * WIRE_CHUNK_SIZE + 100] ^= 0x01
        await put(backend, name, bytes(blob))

    on_storage(vault, flip)


def put_blob(vault: VaultProcess, name: str, data: bytes) -> None:
    async def write(backend: BlobBackend) -> None:
        await put(backend, name, data)

    on_storage(vault, write)


def delete_blob(vault: VaultProcess, name: str) -> bool:
    async def delete(backend: BlobBackend) -> bool:
        return await backend.delete(name)

    return on_storage(vault, delete)


def blob_exists(vault: VaultProcess, name: str) -> bool:
    async def exists(backend: BlobBackend) -> bool:
        return await backend.exists(name)

    return on_storage(vault, exists)


def account_id_of(api: httpx.Client) -> str:
    return str(api.get("/account").json()["id"])


def test_verify_passes_when_every_blob_decrypts(vault: VaultProcess, api: httpx.Client) -> None:
    for body in (docs.pdf(pages=2), docs.png_of_size(200_000)):
        upload_ok(api, body, content_type="application/octet-stream")
    result = admin(vault, "storage", "verify", "--account", account_id_of(api))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "checked 2 files: 2 ok, 0 missing, 0 corrupt\n"


def test_verify_reports_missing_and_corrupt_blobs_and_exits_1(vault: VaultProcess,
                                                              api: httpx.Client) -> None:
    damaged = upload_ok(api, docs.png_of_size(100_000), content_type="image/png")
    gone = upload_ok(api, docs.pdf(pages=1))
    upload_ok(api, docs.png(), content_type="image/png")
    # A middle chunk: length, header and final chunk still check out, so only a complete
    # decryption notices.
    corrupt_chunk(vault, damaged["id"], chunk=3)
    assert delete_blob(vault, gone["id"])
    account_id = account_id_of(api)
    try:
        report = admin_json(vault, "storage", "verify", "--account", account_id, code=1)
    finally:
        for broken in (damaged, gone):  # leave the store healthy for the other tests
            assert api.delete(f"/files/{broken['id']}").status_code == 204
    assert (report["checked"], report["ok"]) == (3, 1)
    assert report["missing"] == [{"fileId": gone["id"], "accountId": account_id,
                                  "blob": gone["id"]}]
    [corrupt] = report["corrupt"]
    assert corrupt["fileId"] == damaged["id"]
    assert "chunk 3 failed authentication" in corrupt["problem"]


def live_instance(vault: VaultProcess) -> str:
    async def find(db: Any) -> str:
        return str((await db.database["instances"].find_one({}, sort=[("seenAt", -1)]))["_id"])

    return str(vault.run_service(find))


def pending_upload(vault: VaultProcess, account_id: str, file_id: str, add: bool) -> None:
    """An upload in flight, as a live process records it (and its removal afterwards)."""
    entry = {"id": file_id, "size": 10, "at": None, "owner": live_instance(vault)}
    change = ({"$push": {"pendingUploads": entry}} if add
              else {"$pull": {"pendingUploads": {"id": file_id}}})

    async def update(db: Any) -> None:
        await db.accounts.update_one({"_id": account_id}, change)

    vault.run_service(update)


def test_gc_removes_old_orphans_only_keeps_uploads_in_flight_and_reports_lost_blobs(
        vault: VaultProcess, api: httpx.Client) -> None:
    kept = upload_ok(api, docs.pdf(pages=1))
    lost = upload_ok(api, docs.pdf(pages=1))
    assert delete_blob(vault, lost["id"])
    orphan, in_flight, foreign = str(uuid.uuid4()), str(uuid.uuid4()), "someone-elses.txt"
    for name in (orphan, in_flight, foreign):
        put_blob(vault, name, os.urandom(1000))
    account_id = account_id_of(api)
    pending_upload(vault, account_id, in_flight, add=True)
    try:
        young = admin(vault, "storage", "gc")
        dry = admin_json(vault, "storage", "gc", "--older-than", "0s", "--dry-run")
        assert orphan in dry["orphans"] and blob_exists(vault, orphan)
        done = admin_json(vault, "storage", "gc", "--older-than", "0")
    finally:
        pending_upload(vault, account_id, in_flight, add=False)
        for name in (in_flight, foreign):
            delete_blob(vault, name)
        assert api.delete(f"/files/{lost['id']}").status_code == 204
    assert young.returncode == 0 and "removed 0 orphan blobs" in young.stdout
    assert f"file {lost['id']} (account {account_id}) has no blob" in young.stdout
    assert orphan in done["orphans"] and not blob_exists(vault, orphan)
    assert in_flight not in done["orphans"] and done["keptInFlight"] == 1
    assert kept["id"] not in done["orphans"] and foreign in done["foreign"]
    assert {"fileId": lost["id"], "accountId": account_id, "blob": lost["id"]} in \
        done["missingBlobs"]


@pytest.mark.parametrize(("args", "message"), [
    (("storage", "gc", "--older-than", "soon"), "--older-than 'soon'"),
    (("storage", "verify", "--account", "no-such-account"), "account not found"),
    (("storage", "migrate", "--to", "floppy"), "--to must be one of azure, local, s3"),
    (("storage", "migrate", "--to", "local"), "storage.backend is already 'local'"),
])
def test_bad_arguments_are_one_line_errors(local_vault: VaultProcess, args: tuple[str, ...],
                                           message: str) -> None:
    assert message in one_line_error(admin(local_vault, *args))


def stored_files(vault: VaultProcess) -> int:
    async def count(db: Any) -> int:
        return int(await db.files.count_documents({"state": "stored"}))

    return int(vault.run_service(count))


def cloud_env(target: str, azurite: Azurite, moto: MotoServer) -> dict[str, str]:
    """Settings (environment) for a new, empty container or bucket of `target`."""
    if target == "azure":
        return azurite.env(f"migrated-{uuid.uuid4().hex[:12]}")
    return moto.env(f"migrated-{uuid.uuid4().hex[:12]}", "vault/")


def migrate_ok(vault: VaultProcess, env: dict[str, str], to: str, files: int) -> None:
    """`storage migrate --to`, twice (the second copies nothing), then verify on `to`."""
    first = admin_json(vault, "storage", "migrate", "--to", to, env=env)
    assert (first["copied"], first["alreadyPresent"], first["failed"]) == (files, 0, [])
    assert f"VAULTD_STORAGE_BACKEND={to}" in first["next"]
    again = admin(vault, "storage", "migrate", "--to", to, env=env)
    assert again.returncode == 0
    assert f"{files} files, 0 copied, {files} already present, 0 failed" in again.stdout
    # Switched over: the same records, every blob read and authenticated from `to`.
    on_target = {**env, "VAULTD_STORAGE_BACKEND": to}
    assert admin_json(vault, "storage", "verify", env=on_target)["ok"] == files


@pytest.mark.parametrize("target", ["azure", "s3"])
def test_migrate_copies_every_blob_both_ways_verifies_and_is_safe_to_rerun(
        local_vault: VaultProcess, azurite: Azurite, moto: MotoServer, tmp_path: Any,
        target: str) -> None:
    _, key = local_vault.new_account("Moving Co")
    with local_vault.client(key) as api:
        for body in (docs.pdf(pages=3), docs.png_of_size(300_000)):
            upload_ok(api, body, content_type="application/octet-stream")
    files = stored_files(local_vault)
    to_cloud = {**cloud_env(target, azurite, moto), "VAULTD_STORAGE_BACKEND": "local"}
    migrate_ok(local_vault, to_cloud, target, files)
    back = {**to_cloud, "VAULTD_STORAGE_BACKEND": target,
            "VAULTD_STORAGE_LOCAL_DIR": str(tmp_path / "back")}
    returned = admin_json(local_vault, "storage", "migrate", "--to", "local", env=back)
    assert (returned["copied"], returned["failed"]) == (files, [])
    assert "VAULTD_STORAGE_BACKEND=local" in returned["next"]
    copied = sorted(path.name for path in (tmp_path / "back").iterdir())
    renditions = [name for name in copied if name.endswith(".rendition")]
    # Every file's blob, and any image's rendition with it (services.files.renditions).
    assert len(copied) - len(renditions) == files
    assert all(name.removesuffix(".rendition") in copied for name in renditions)


def test_migrate_goes_between_azure_and_s3_both_ways(
        local_vault: VaultProcess, azurite: Azurite, moto: MotoServer) -> None:
    _, key = local_vault.new_account("Cloud Hopper")
    with local_vault.client(key) as api:
        upload_ok(api, docs.pdf(pages=2))
    files = stored_files(local_vault)
    azure, s3 = cloud_env("azure", azurite, moto), cloud_env("s3", azurite, moto)
    # Onto Azure first: that leg's rerun and verify are the local-to-Azure test's.
    first = admin_json(local_vault, "storage", "migrate", "--to", "azure",
                       env={**azure, **s3, "VAULTD_STORAGE_BACKEND": "local"})
    assert (first["copied"], first["failed"]) == (files, [])
    migrate_ok(local_vault, {**azure, **s3, "VAULTD_STORAGE_BACKEND": "azure"}, "s3", files)
    azure_again = cloud_env("azure", azurite, moto)
    migrate_ok(local_vault, {**s3, **azure_again, "VAULTD_STORAGE_BACKEND": "s3"}, "azure", files)
