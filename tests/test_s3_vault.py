"""A vaultd whose blobs live in S3 (a real moto_server): the cloud credentials it holds never
reach its render workers, and wrong S3 settings stop its start. (Two vaultd processes sharing a
bucket, and a storage outage, are in tests/test_multi_process.py.)"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import create_link, is_jpeg, upload_ok
from tests.moto_server import (
    AWS_ENV,
    SECRET_ACCESS_KEY,
    MotoServer,
)
from tests.processes import render_workers
from tests.vault_process import ROOT, VaultProcess, assert_no_secrets_in_log, base_env, run_vaultd

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

BUCKET, PREFIX = "vault-on-s3", "blobs/"
AZURE_SECRET = "azure-client-secret-a-worker-must-not-see"
SESSION_TOKEN = "aws-session-token-for-the-server-only"


@pytest.fixture(scope="module")
def s3_vault(tmp_path_factory: pytest.TempPathFactory,
             moto: MotoServer) -> Iterator[VaultProcess]:
    # DEBUG: botocore would log every request's headers, the session token among them.
    env = {**moto.env(BUCKET, PREFIX), "AWS_SESSION_TOKEN": SESSION_TOKEN,
           "AZURE_CLIENT_SECRET": AZURE_SECRET, "VAULTD_RENDER_WORKERS": "1",
           "VAULTD_LOG_LEVEL": "DEBUG"}
    server = VaultProcess(tmp_path_factory.mktemp("s3-vault") / "data", env=env).start()
    yield server
    server.stop()
    server.secrets += [SECRET_ACCESS_KEY, SESSION_TOKEN, AZURE_SECRET]
    assert_no_secrets_in_log(server)


@pytest.fixture
def api(s3_vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = s3_vault.new_account("Bucket Brigade")
    with s3_vault.client(key) as client:
        yield client


def bucket_keys(moto: MotoServer) -> set[str]:
    async def listing() -> set[str]:
        backend = moto.backend(BUCKET, PREFIX)
        try:
            return {PREFIX + name for name, _ in await backend.list_names()}
        finally:
            await backend.close()

    return asyncio.run(listing())


def test_pages_downloads_and_deletes_go_through_the_bucket(
        s3_vault: VaultProcess, api: httpx.Client, moto: MotoServer) -> None:
    original = docs.pdf(pages=3)
    stored = upload_ok(api, original, kind="delivery")
    assert f"{PREFIX}{stored['id']}" in bucket_keys(moto)
    token = create_link(api, stored["id"])["token"]
    s3_vault.secrets.append(token)
    assert is_jpeg(api.get(f"/views/{token}/pages/3"))
    assert api.get(f"/files/{stored['id']}/download").content == original
    assert api.delete(f"/files/{stored['id']}").status_code == 204
    assert f"{PREFIX}{stored['id']}" not in bucket_keys(moto)


def test_vaultds_workers_hold_none_of_its_cloud_credentials(
        s3_vault: VaultProcess, api: httpx.Client) -> None:
    stored = upload_ok(api, docs.pdf(pages=1))  # the server used its AWS credentials for this
    assert stored["id"]
    assert s3_vault.process is not None
    workers = render_workers(s3_vault.process.pid)
    assert workers, "no render worker found under vaultd"
    for pid in workers:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        for leaked in (b"AWS_", b"AZURE_", SECRET_ACCESS_KEY.encode(), SESSION_TOKEN.encode(),
                       AZURE_SECRET.encode()):
            assert leaked not in environ, (pid, leaked)


ATTACK_FROM_A_WORKER = """
import asyncio
from render.pool.render_pool import RenderPool
from tests import pool_helpers, sandbox_attacks

async def main() -> None:
    pool = RenderPool(workers=1, queue_size=0)
    try:
        await pool.wait_ready()
        print(await pool.run(*pool_helpers.task(sandbox_attacks.cloud_credentials)))
    finally:
        await pool.close()

asyncio.run(main())
"""


def test_a_worker_cannot_read_the_servers_aws_credentials(tmp_path: Path) -> None:
    # A server process of its own (the fork server is started once per process), with every
    # source of the AWS chain a worker could try: variables, and a profile's file under HOME.
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text(
        f"[default]\naws_secret_access_key = {SECRET_ACCESS_KEY}\n")
    env = base_env({**AWS_ENV, "AWS_SESSION_TOKEN": SESSION_TOKEN,
                    "AZURE_CLIENT_SECRET": AZURE_SECRET, "HOME": str(tmp_path)})
    result = subprocess.run([sys.executable, "-c", ATTACK_FROM_A_WORKER], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "refused: no AWS_* or AZURE_* variable"


@pytest.mark.parametrize(("env", "line"), [
    ({"VAULTD_S3_BUCKET": ""},
     "config: storage.backend 's3' needs storage.s3.bucket (VAULTD_S3_BUCKET)"),
    ({"VAULTD_S3_ADDRESSING_STYLE": "dns"}, "config: storage.s3.addressing_style "
     "(VAULTD_S3_ADDRESSING_STYLE) is invalid: must be one of virtual, path"),
    ({"VAULTD_S3_ENDPOINT_URL": "minio:9000"}, "config: storage.s3.endpoint_url "
     "(VAULTD_S3_ENDPOINT_URL) is invalid: must start with http:// or https://"),
])
def test_vaultd_refuses_wrong_s3_settings_with_one_line(
        moto: MotoServer, tmp_path: Path, env: dict[str, str], line: str) -> None:
    settings = {**moto.env(BUCKET, PREFIX), **env}
    if not env.get("VAULTD_S3_BUCKET", "x"):
        del settings["VAULTD_S3_BUCKET"]
    result = run_vaultd(["--data-dir", str(tmp_path)], settings)
    assert result.returncode == 2
    # (A first start announces its new master key before it opens the backend.)
    assert result.stderr.strip().splitlines()[-1] == f"vaultd: {line}"
    assert "Traceback" not in result.stderr
