"""The backend recipe's worked example (docs/architecture.md): a backend that lives outside the
tree (`tests/twist_backend.py`), registered by an entry point of an installed distribution, and
driven end to end through real vaultd and vault-admin processes: upload, a page, a download, a
delete; `storage backends`, `verify` and a `migrate` onto it followed by a restart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import documents as docs
from tests.http_helpers import create_link, is_jpeg, upload_ok
from tests.twist_backend import NAME, distribution, twist_distribution, twisted
from tests.vault_process import ROOT, VaultProcess, base_env, run_vaultd, running_vault

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """PYTHONPATH with the distribution that registers "twist": without it, no such backend."""
    return os.pathsep.join([str(ROOT), str(twist_distribution(tmp_path_factory.mktemp("dist")))])


@pytest.fixture(scope="module")
def twist_vault(tmp_path_factory: pytest.TempPathFactory,
                plugin_path: str) -> Iterator[VaultProcess]:
    with running_vault(tmp_path_factory.mktemp("twist") / "data", PYTHONPATH=plugin_path,
                       VAULTD_STORAGE_BACKEND=NAME, VAULTD_RENDER_WORKERS="1") as server:
        yield server


def test_uploads_pages_downloads_and_deletes_go_through_the_registered_backend(
        twist_vault: VaultProcess) -> None:
    _, key = twist_vault.new_account("Twisted Pair")
    original = docs.pdf(pages=2)
    with twist_vault.client(key) as api:
        stored = upload_ok(api, original, kind="delivery")
        on_disk = twist_vault.data_dir / NAME / stored["id"]
        # Stored by the twist backend alone (its stored form is checked in the migration test);
        # the page and the download below decrypt only if its reads untwist.
        assert on_disk.is_file()
        assert not (twist_vault.data_dir / "blobs" / stored["id"]).exists()
        token = create_link(api, stored["id"])["token"]
        twist_vault.secrets.append(token)
        assert is_jpeg(api.get(f"/views/{token}/pages/2"))
        assert api.get(f"/files/{stored['id']}/download").content == original
        assert api.delete(f"/files/{stored['id']}").status_code == 204
    assert not on_disk.exists()


def test_vault_admin_lists_the_registered_backend_and_verifies_through_it(
        twist_vault: VaultProcess) -> None:
    listed = {row["name"]: row for row in twist_vault.admin_json("storage", "backends")}
    assert listed[NAME] == {"name": NAME, "module": "tests.twist_backend",
                            "source": "vaultd-twist-example", "available": True, "problem": ""}
    assert listed["local"]["source"] == "built-in"
    _, key = twist_vault.new_account("Verified Twist")
    with twist_vault.client(key) as api:
        stored = upload_ok(api, docs.pdf(pages=1))
    report = twist_vault.admin_json("storage", "verify")
    assert report["missing"] == [] and report["corrupt"] == [] and report["ok"] >= 1
    # A byte changed in the stored form is caught: verify reads through the twist backend.
    blob = twist_vault.data_dir / NAME / stored["id"]
    damaged = bytearray(blob.read_bytes())
    damaged[-1] ^= 0x01
    blob.write_bytes(bytes(damaged))
    failed = twist_vault.admin("--json", "storage", "verify", expect_ok=False)
    assert failed.returncode == 1
    assert [e["fileId"] for e in json.loads(failed.stdout)["corrupt"]] == [stored["id"]]


def test_blobs_migrate_onto_the_registered_backend_and_serve_after_the_switch(
        tmp_path: Path, plugin_path: str) -> None:
    original = docs.pdf(pages=1)
    with running_vault(tmp_path / "data", PYTHONPATH=plugin_path,
                       VAULTD_RENDER_WORKERS="1") as server:
        _, key = server.new_account("Moving House")
        with server.client(key) as api:
            stored = upload_ok(api, original, kind="delivery")
        migrated = server.admin_json("storage", "migrate", "--to", NAME)
        assert (migrated["from"], migrated["to"], migrated["copied"]) == ("local", NAME, 1)
        server.stop()
        local_copy = tmp_path / "data" / "blobs" / stored["id"]
        stored_form = (tmp_path / "data" / NAME / stored["id"]).read_bytes()
        assert stored_form == twisted(local_copy.read_bytes()) != local_copy.read_bytes()
        local_copy.unlink()  # only the twist copy is left
        # The same records (the worker's database, named after the data directory).
        server.env["VAULTD_STORAGE_BACKEND"] = NAME
        server.start()
        with server.client(key) as api:
            assert api.get(f"/files/{stored['id']}/download").content == original


def test_without_its_distribution_the_backend_is_refused_in_one_line(tmp_path: Path) -> None:
    result = run_vaultd(["--data-dir", str(tmp_path)], {"VAULTD_STORAGE_BACKEND": NAME})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "vaultd: config: storage.backend (VAULTD_STORAGE_BACKEND) is invalid: must be one of "
        "local, azure, s3"]


def test_a_registered_backend_whose_module_is_missing_is_named_with_what_to_install(
        tmp_path: Path) -> None:
    # A distribution whose entry point names a module that is not there (a half-installed
    # plug-in): listed as unavailable, and a vaultd configured with it stops in one line.
    broken = distribution(tmp_path / "dist", "vaultd-broken-example",
                          {"broken": "vaultd_broken_example.backend"})
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), str(broken)])}
    listing = subprocess.run(
        [sys.executable, "-m", "admin_cli.main", "--data-dir", str(tmp_path / "data"), "--json",
         "storage", "backends"], cwd=ROOT, env=base_env(env), capture_output=True, text=True,
        timeout=120)
    assert listing.returncode == 0, listing.stderr
    row = {r["name"]: r for r in json.loads(listing.stdout)}["broken"]
    expected = ("storage.backend 'broken' needs: the distribution vaultd-broken-example "
                "(No module named 'vaultd_broken_example')")
    assert (row["available"], row["source"], row["problem"]) == (
        False, "vaultd-broken-example", expected)
    result = run_vaultd(["--data-dir", str(tmp_path / "data")],
                        {**env, "VAULTD_STORAGE_BACKEND": "broken"})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    # After the first start's notice of its new master key, the one line of the refusal.
    assert result.stderr.strip().splitlines()[-1] == f"vaultd: {expected}"
