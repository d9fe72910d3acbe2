"""A backup of a vault whose blobs are in Azure (Azurite): the blobs listed with checksums, not
copied; restore checks that the configured container holds them."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import documents as docs
from tests.azurite import ACCOUNT_KEY, Azurite
from tests.http_helpers import upload_ok
from tests.vault_process import VaultProcess, running_vault

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)


@pytest.fixture(scope="module")
def azure_vault(tmp_path_factory: pytest.TempPathFactory,
                azurite: Azurite) -> Iterator[VaultProcess]:
    env = {"VAULTD_RENDER_WORKERS": "1", **azurite.env(f"backup-{uuid.uuid4().hex[:12]}")}
    with running_vault(tmp_path_factory.mktemp("backup-azure") / "data", own_database=True,
                       **env) as vault:
        vault.secrets.append(ACCOUNT_KEY)
        yield vault


def test_an_azure_vault_is_listed_with_checksums_and_restored_over_its_container(
        azure_vault: VaultProcess, tmp_path: Path) -> None:
    _, key = azure_vault.new_account("Cloud Co")
    document = docs.pdf(2)
    with azure_vault.client(key) as client:
        pdf = upload_ok(client, document, kind="delivery")
        upload_ok(client, docs.png(), content_type="image/png", kind="source")
    backup = tmp_path / "backup"
    report = azure_vault.admin_json("backup", str(backup))
    assert report["blobsCopied"] is False and report["blobs"] == 2
    manifest = json.loads((backup / "manifest.json").read_text())
    assert manifest["storageBackend"] == "azure" and not (backup / "blobs").exists()
    assert all(len(entry["sha256"]) == 64 for entry in manifest["blobs"].values())
    assert azure_vault.admin_json("backup", "verify", str(backup))["ok"] is True

    key_file = str(azure_vault.data_dir / "master.key")
    restored_dir = tmp_path / "restored"
    same = VaultProcess(restored_dir, env=azure_vault.env)
    restored = same.admin_json("restore", str(backup), "--master-key-file", key_file)
    assert restored["absentFromStorage"] == [] and restored["written"] == 0
    with running_vault(restored_dir, own_database=True,
                       **azure_vault.env) as vault, vault.client(key) as client:
        assert client.get(f"/files/{pdf['id']}/download").content == document
        vault.secrets += [key, ACCOUNT_KEY]

    other_container = {"VAULTD_AZURE_CONTAINER": f"empty-{uuid.uuid4().hex[:12]}"}
    empty = VaultProcess(tmp_path / "elsewhere", env={**azure_vault.env, **other_container})
    result = empty.admin("restore", str(backup), "--master-key-file", key_file,
                         expect_ok=False)
    assert result.returncode == 1
    assert sorted(result.stdout.splitlines()[:2]) == sorted(
        f"blob {name} is missing from azure storage, or of another size: copy the container "
        "first"
        for name in manifest["blobs"])
