"""`vault-admin doctor` checks the vault besides its sandbox (`services.storage.health`): the
database answers, the disk has room, the master key file is private (a key file others may read
fails the doctor), and the newest backup's age (none yet, then the one just made). Through the
real CLI on a real vault (its own embedded database), as an operator runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.vault_process import VaultProcess

pytestmark = pytest.mark.slow  # starts its own embedded database and a render worker


def _vault_findings(vault: VaultProcess) -> tuple[int, dict[str, dict[str, str]]]:
    done = vault.admin("--json", "doctor", expect_ok=False)
    report = json.loads(done.stdout)
    return done.returncode, {f["name"]: f for f in report["vault"]}


def test_doctor_checks_the_database_disk_key_file_and_newest_backup(tmp_path: Path) -> None:
    vault = VaultProcess(tmp_path / "data")
    vault.admin("init")
    status, found = _vault_findings(vault)
    assert found["database"]["verdict"] == "ok" and "answers" in found["database"]["detail"]
    disks = [f for name, f in found.items() if name.startswith("disk")]
    assert disks and all(f["verdict"] in ("ok", "warning") and "GiB free" in f["detail"]
                         for f in disks)
    assert found["master key"]["verdict"] == "ok" and "mode 600" in found["master key"]["detail"]
    assert found["backup"] == {"name": "backup", "verdict": "warning",
                               "detail": "none recorded (vault-admin backup DEST)"}
    assert status == 0  # warnings alone do not fail it

    key = vault.data_dir / "master.key"
    key.chmod(0o644)  # as a careless copy leaves it
    status, found = _vault_findings(vault)
    assert status == 1
    assert found["master key"]["verdict"] == "problem"
    assert f"{key} has mode 644: others may read it" in found["master key"]["detail"]
    said = vault.admin("doctor", expect_ok=False).stdout
    assert "PROBLEM  master key" in said and f"chmod 600 {key}" in said
    key.chmod(0o600)

    vault.admin("backup", str(tmp_path / "backup"))
    status, found = _vault_findings(vault)
    assert status == 0 and found["backup"]["verdict"] == "ok"
    assert "minutes ago" in found["backup"]["detail"]
    assert str((tmp_path / "backup").resolve()) in found["backup"]["detail"]


def test_doctor_outside_a_vault_says_what_it_did_not_check(tmp_path: Path) -> None:
    nowhere = VaultProcess(tmp_path / "empty")
    nowhere.data_dir.mkdir(parents=True, exist_ok=True)
    said = nowhere.admin("doctor", expect_ok=False).stdout
    assert "database, disk, key file and backup not checked" in said
