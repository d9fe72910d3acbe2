"""The Office converter's confinement from inside: a process confined exactly as LibreOffice is
(render.sandbox.converter) tries what a document that took LibreOffice over would try
(tests/office_attacks.py). Every attempt is refused; the job directory stays writable."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest

from tests.confinement_fixtures import escape_listeners
from tests.vault_process import ROOT, base_env

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the converter's root path")


@pytest.fixture
def listeners() -> Iterator[tuple[int, socket.socket]]:
    with escape_listeners() as found:
        yield found


def test_every_escape_from_the_converter_sandbox_is_refused(
        listeners: tuple[int, socket.socket]) -> None:
    port, _ = listeners
    with tempfile.TemporaryDirectory(prefix="vaultd-convert-", dir="/var/tmp") as job_dir:
        os.makedirs(os.path.join(job_dir, "tmp"))
        done = subprocess.run([sys.executable, "-m", "tests.office_attacks", job_dir, str(port)],
                              cwd=ROOT, env=base_env(), capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        verdicts = dict(line.rsplit(": ", 1) for line in done.stdout.splitlines())
        assert len(verdicts) == 14, done.stdout
        assert {name for name, verdict in verdicts.items() if verdict != "refused"} == set()
        assert os.path.exists(os.path.join(job_dir, "inside"))
    assert not os.path.exists("/var/tmp/vaultd-office-escape")
