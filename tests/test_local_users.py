"""Another local user can read nothing of vaultd's and cannot use its database: attempted as
uid 65534 in a forked child of this (root) test process."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pymongo import MongoClient
from pymongo.errors import OperationFailure

from tests import documents as docs
from tests.http_helpers import upload_ok
from tests.vault_process import VaultProcess, running_vault
from vaultd.db_credentials import FILE_NAME

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

NOBODY = 65534


@pytest.fixture(scope="module")
def private_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    root = tmp_path_factory.mktemp("private")
    root.chmod(0o755)  # the parent is traversable: only vaultd's own modes protect the data
    with running_vault(root / "data", own_database=True, VAULTD_RENDER_WORKERS="1") as server:
        server.secrets.append(json.loads((server.data_dir / FILE_NAME).read_text())["password"])
        _, key = server.new_account()
        with server.client(key) as api:
            upload_ok(api, docs.pdf())
        yield server


def as_nobody(attempt: Callable[[], str]) -> str:
    """Run `attempt` in a child process with uid/gid 65534; returns what it reported."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop root for good, try, report, exit
        os.close(read_end)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            outcome = attempt()
        except BaseException as exc:  # noqa: BLE001 - everything is reported to the parent
            outcome = f"{type(exc).__name__}: {exc}"
        os.write(write_end, outcome.encode()[:4000])
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = pipe.read().decode()
    os.waitpid(pid, 0)
    return report


def database_port(server: VaultProcess) -> int:
    return int(json.loads((server.data_dir / "db" / "address.json").read_text())["port"])


def test_the_data_directory_is_0700_and_every_file_0600(private_vault: VaultProcess) -> None:
    assert stat.S_IMODE(private_vault.data_dir.stat().st_mode) == 0o700
    loose = []
    for folder, dirs, files in os.walk(private_vault.data_dir):
        for name in dirs + files:
            mode = stat.S_IMODE(Path(folder, name).lstat().st_mode)
            if mode & 0o077:
                loose.append(f"{Path(folder, name)} {oct(mode)}")
    assert not loose
    assert (private_vault.data_dir / FILE_NAME).exists()


def test_another_user_cannot_list_or_read_the_data_directory(
    private_vault: VaultProcess,
) -> None:
    data = private_vault.data_dir

    def attempt() -> str:
        results = []
        for action in (lambda: os.listdir(data),
                       (data / "master.key").read_bytes,
                       (data / FILE_NAME).read_bytes,
                       lambda: os.listdir(data / "db")):
            try:
                action()
                results.append("allowed")
            except PermissionError:
                results.append("denied")
        return ",".join(results)

    assert as_nobody(attempt) == "denied,denied,denied,denied"


def test_another_user_cannot_use_the_database_without_its_credentials(
    private_vault: VaultProcess,
) -> None:
    port = database_port(private_vault)

    def attempt() -> str:
        client: MongoClient = MongoClient(f"mongodb://127.0.0.1:{port}/?directConnection=true",
                                          serverSelectionTimeoutMS=5000)
        results = []
        for action in (client.vaultd.accounts.find_one,
                       lambda: client.vaultd.api_keys.insert_one({"hash": "planted"}),
                       lambda: client.admin.command("createUser", "evil", pwd="x",
                                                    roles=["root"])):
            try:
                action()
                results.append("allowed")
            except OperationFailure as exc:
                results.append(str(exc.details.get("errmsg")))
        client.close()
        return " | ".join(results)

    refused = "command {} requires authentication"
    assert as_nobody(attempt) == " | ".join(
        refused.format(c) for c in ("find", "insert", "createUser"))


def test_loose_modes_are_fixed_at_start_with_a_warning(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with running_vault(data, own_database=True, VAULTD_RENDER_WORKERS="1"):
        pass
    data.chmod(0o755)
    (data / "master.key").chmod(0o644)
    (data / "db").chmod(0o755)
    with running_vault(data, own_database=True, VAULTD_RENDER_WORKERS="1") as server:
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        assert stat.S_IMODE((data / "master.key").stat().st_mode) == 0o600
        assert stat.S_IMODE((data / "db").stat().st_mode) == 0o700
        assert "3 files or directories were readable by other users; made private" in (
            server.log_text())
