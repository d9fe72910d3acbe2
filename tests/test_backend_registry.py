"""One registry of storage backends (`backends.BACKENDS`): the settings' choices, the CLI's help,
the container image's requirements and the container test all read it, and none names a
backend by hand. (A backend registered from outside the tree: tests/test_storage_plugin.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from backends import BACKENDS, BUILT_IN
from backends.requirements import image_requirements
from tests.vault_process import ROOT, base_env
from vaultd.config import ConfigError, load_settings

PYPROJECT = ROOT / "pyproject.toml"


def test_the_image_requirements_are_the_dependencies_and_every_backends_extra() -> None:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    wanted = image_requirements(PYPROJECT)
    extras = [spec.extra for spec in BUILT_IN.values() if spec.extra]
    assert extras, "no built-in backend names an extra"
    expected = list(project["dependencies"])
    for extra in extras:
        expected += project["optional-dependencies"][extra]
    assert wanted == expected


@pytest.mark.parametrize("path", ["Dockerfile", "scripts/container-test.sh"])
def test_the_image_and_the_container_test_take_the_backends_from_the_registry(path: str) -> None:
    text = (ROOT / path).read_text()
    assert "backends.requirements pyproject.toml" in text
    named = [name for name in BUILT_IN if re.search(rf"\[['\"]{name}['\"]\]", text)]
    assert named == [], f"{path} names backends by hand: {named}"


def test_the_settings_choices_are_the_registered_backends() -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings({}, env={"VAULTD_STORAGE_BACKEND": "floppy"})
    assert str(refused.value) == ("config: storage.backend (VAULTD_STORAGE_BACKEND) is invalid: "
                                  f"must be one of {', '.join(BACKENDS)}")


def test_the_migrate_help_names_every_registered_backend() -> None:
    result = subprocess.run([sys.executable, "-m", "admin_cli.main", "storage", "migrate",
                             "--help"], cwd=ROOT, env={**base_env(), "COLUMNS": "200"},
                            capture_output=True, text=True, check=True, timeout=60)
    assert f"Backend to copy every blob to: {', '.join(BACKENDS)}." in result.stdout


def test_a_backend_whose_extra_is_missing_from_pyproject_stops_the_image_build(
        tmp_path: Path) -> None:
    text = re.sub(r"(?m)^s3 = .*\n", "", PYPROJECT.read_text())
    copy = tmp_path / "pyproject.toml"
    copy.write_text(text)
    with pytest.raises(SystemExit, match=re.escape(
            "backend s3: pyproject.toml has no optional dependency group 's3'")):
        image_requirements(copy)


def test_without_the_s3_sdk_vaultd_loads_and_only_a_checkpoint_copy_asks_for_it() -> None:
    # The S3 client is the `s3` extra: a plain install must start, and set to copy audit
    # checkpoints to S3 it must refuse before anything starts, saying what to install.
    script = (
        "import sys\n"
        "sys.modules['aiobotocore'] = None\n"
        "sys.modules['botocore'] = None\n"
        "import admin_cli.main\n"
        "from vaultd import main\n"
        "from vaultd.config import ConfigError, load_settings\n"
        "main.require_copy_sdk(load_settings({}, env={}))\n"
        "try:\n"
        "    main.require_copy_sdk(load_settings({}, env={'VAULTD_AUDIT_COPY_BUCKET': 'kept'}))\n"
        "except ConfigError as refused:\n"
        "    print(refused)\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=base_env(),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ("config: audit.copy_bucket needs the S3 client: pip install "
                                     "'aiobotocore>=2.19'")
