"""The README's first session, run as written against a real vaultd (each step on what the one
before it left, so an order that no longer works fails here), and CI running exactly its test
command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests import documents as docs
from tests.vault_process import ROOT, running_vault

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

README = (ROOT / "README.md").read_text()


def first_session() -> str:
    section = README.split("## A first session", 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


def test_the_first_session_runs_end_to_end_as_written(tmp_path: Path) -> None:
    with running_vault(tmp_path / "vault-data", own_database=True,
                       VAULTD_RENDER_WORKERS="1") as vault:
        (tmp_path / "report.pdf").write_bytes(docs.pdf(pages=2))
        script = first_session().replace("http://127.0.0.1:8080", vault.url).replace(
            ".venv/bin/vault-admin", f"{sys.executable} -m admin_cli.main")
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path,
                                env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
    # The access log, the link revoked (204), no link left to revoke, the file deleted (204).
    assert result.stdout.endswith(']204\n{"revoked": 0}204\n'), result.stdout[-300:]
    assert (tmp_path / "copy.pdf").read_bytes() == (tmp_path / "report.pdf").read_bytes()
    assert (tmp_path / "page1.jpg").read_bytes()[:3] == b"\xff\xd8\xff"
    assert (tmp_path / "room-page1.jpg").read_bytes()[:3] == b"\xff\xd8\xff"  # a room's page
    assert '"number": "1.1"' in result.stdout and "Q3 board pack" in result.stdout
    assert '"action": "page"' in result.stdout and '"ip": "203.0.113.7"' in result.stdout


def test_the_session_creates_its_view_before_it_deletes_the_file() -> None:
    script = first_session()
    assert script.index("-X POST $B/views") < script.index("-X DELETE $B/files/$FILE")


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    assert "bash scripts/test.sh" in README.split("## Quick start", 1)[1].split("##", 1)[0]
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == "exec bash scripts/test.sh"


def quick_start_admin_command() -> str:
    section = README.split("## Quick start", 1)[1].split("## A first session", 1)[0]
    blocks = [block.split("```", 1)[0] for block in section.split("```sh\n")[1:]]
    commands = [line for block in blocks for line in block.splitlines()
                if "add-first-admin" in line and not line.startswith("#")]
    assert len(commands) == 1, commands
    return commands[0]


def test_the_quick_start_ends_signed_in_to_the_console(tmp_path: Path) -> None:
    with running_vault(tmp_path / "vault-data", own_database=True,
                       VAULTD_RENDER_WORKERS="1") as vault:
        command = quick_start_admin_command().replace(
            ".venv/bin/vault-admin", f"{sys.executable} -m admin_cli.main")
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=tmp_path,
                                env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        path = "/console/auth/link/" + result.stdout.split("/console/auth/link/", 1)[1].split()[0]
        vault.secrets.append(path.rsplit("/", 1)[1])
        with httpx.Client(base_url=vault.url, follow_redirects=True, timeout=30,
                          headers={"Accept": "text/html"}) as browser:
            console = browser.get(path)
            assert console.status_code == 200 and console.url.path == "/console/files"
            assert "<h1>Files</h1>" in console.text and "you@example.com" in console.text
            again = browser.get(path)  # the link works once
            assert again.status_code == 404
        second = subprocess.run(["bash", "-euo", "pipefail", "-c",
                                 command.replace("you@example.com", "someone@else.example")],
                                cwd=tmp_path, env={"PATH": "/usr/bin:/bin",
                                                   "PYTHONPATH": str(ROOT)},
                                capture_output=True, text=True, timeout=120)
        assert second.returncode == 1
        assert "this vault already has accounts" in second.stderr + second.stdout
