"""The Office converter's unprivileged path: a vaultd that does not run as root (the container
image's uid 10001) confines its converter in a user namespace instead of switching uids. Run
here by becoming that uid in a child (tests/office_unprivileged.py): a spreadsheet converts with
every layer active (fitted to the page width inside the sandbox), even while the uid runs
hundreds of threads elsewhere, every escape from the sandbox is refused, and `vault-admin doctor`
run as that uid reports the converter confined."""

from __future__ import annotations

import json
import os
import shutil
import site
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from render.office import runner
from render.office.launcher_protocol import LAYERS_FILE
from render.sandbox.layers import ALL_LAYERS
from tests import office_documents as od
from tests.confinement_fixtures import VAULTD_UID as UID
from tests.confinement_fixtures import escape_listeners, uid_running_threads
from tests.office_pdf import converters_running, page_texts
from tests.vault_process import ROOT, base_env

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="becoming another uid needs root"),
    pytest.mark.skipif(not runner.installed(), reason="LibreOffice is not installed"),
]

THREADS = 300  # more than the converter's RLIMIT_NPROC (256)


def _as_uid(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tests.office_unprivileged", str(UID), *args],
                          cwd=ROOT, env=base_env(), capture_output=True, text=True,
                          timeout=timeout, start_new_session=True)


def _give(path: str) -> None:
    for root, dirs, files in os.walk(path):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            os.chown(name, UID, UID)


@pytest.fixture
def busy_uid() -> Iterator[None]:
    """The uid already runs THREADS threads, as a vaultd's server and workers do."""
    with uid_running_threads(THREADS):
        yield


def test_a_spreadsheet_converts_unprivileged_with_every_layer_while_the_uid_is_busy(
        busy_uid: None) -> None:
    wide = [[f"Col{c:02d}" for c in range(40)], *([f"v{c}" for c in range(40)]
                                                  for _ in range(5))]
    job_dir = runner._make_job_dir()  # as vaultd makes it, then its owner's (vaultd's uid)
    try:
        with open(os.path.join(job_dir, "document.xlsx"), "wb") as document:
            document.write(od.xlsx([wide]))
        _give(job_dir)
        done = _as_uid("launch", job_dir, "document.xlsx")
        assert done.returncode == 0, done.stderr  # 3: a layer was missing
        with open(os.path.join(job_dir, LAYERS_FILE), "rb") as layers:
            assert int(layers.read()) == ALL_LAYERS
        with open(os.path.join(job_dir, "out", "document.pdf"), "rb") as pdf:
            [page] = page_texts(pdf.read())
        assert "Col00" in page.split() and "Col39" in page.split()
    finally:
        shutil.rmtree(job_dir)
    assert not converters_running()


@pytest.fixture
def listeners() -> Iterator[int]:
    with escape_listeners() as (port, _):
        yield port


def test_every_escape_from_the_unprivileged_converter_sandbox_is_refused(
        listeners: int) -> None:
    with tempfile.TemporaryDirectory(prefix="vaultd-convert-", dir="/var/tmp") as job_dir:
        os.makedirs(os.path.join(job_dir, "tmp"))
        _give(job_dir)
        done = _as_uid("attacks", job_dir, str(listeners), timeout=60)
        assert done.returncode == 0, done.stderr
        verdicts = dict(line.rsplit(": ", 1) for line in done.stdout.splitlines())
        assert len(verdicts) == 14, done.stdout
        assert {name for name, verdict in verdicts.items() if verdict != "refused"} == set()
        assert os.path.exists(os.path.join(job_dir, "inside"))
    assert not os.path.exists("/var/tmp/vaultd-office-escape")


SYSTEM_PYTHON = "/usr/bin/python3"


def _system_python_is_ours() -> bool:
    """The distribution's Python, which any uid may run, of this interpreter's version (so the
    test environment's packages and the C extension import in it)."""
    if not os.access(SYSTEM_PYTHON, os.X_OK) or not shutil.which("setpriv"):
        return False
    version = subprocess.run([SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info[:2])"],
                             capture_output=True, text=True, check=False).stdout.strip()
    return version == str(sys.version_info[:2])


def _open_to_others(path: Path) -> bool:
    """Whether any uid may read `path`: every folder above it searchable by others (a checkout
    under /root, or in a 0700 folder, is not: then uid 10001 cannot import vaultd from it)."""
    path = path.resolve()
    folders = [path, *path.parents]
    return bool(path.stat().st_mode & stat.S_IROTH) and all(
        folder.stat().st_mode & stat.S_IXOTH for folder in folders)


@pytest.mark.slow  # a render pool and a conversion, in a fresh environment
@pytest.mark.skipif(not _system_python_is_ours(), reason="no Python that uid 10001 may run")
@pytest.mark.skipif(not (_open_to_others(ROOT)
                         and _open_to_others(Path(site.getsitepackages()[0]))),
                    reason="the checkout or its packages are in a folder uid 10001 may not read")
def test_doctor_as_an_unprivileged_user_reports_the_converter_confined() -> None:
    with tempfile.TemporaryDirectory(prefix="vaultd-doctor-", dir="/var/tmp") as home:
        # A virtual environment on the distribution's Python that sees this one's packages.
        venv = Path(home) / "venv"
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
        [packages] = venv.glob("lib/python3*/site-packages")
        (packages / "test-environment.pth").write_text(site.getsitepackages()[0] + "\n")
        os.chmod(home, 0o755)  # the rest is made world-readable by the umask
        done = subprocess.run(
            ["setpriv", f"--reuid={UID}", f"--regid={UID}", "--clear-groups",
             str(venv / "bin" / "python"), "-m", "admin_cli.main", "doctor", "--json"],
            cwd=home, env={"PATH": "/usr/bin:/bin", "HOME": home, "PYTHONPATH": str(ROOT),
                           "VAULTD_UPLOAD_OFFICE": "true"},
            capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    converter = json.loads(done.stdout)["officeConverter"]
    assert (converter["installed"], converter["converted"], converter["complete"]) == (
        True, True, True), converter
    assert all(converter["layers"].values()), converter["layers"]
