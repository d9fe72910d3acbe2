"""How vault-admin refuses: exit status 1 and one line on stderr, never a traceback."""

from __future__ import annotations

import subprocess

from tests.vault_process import VaultProcess


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one line of a refusal (exit 1); fails on any other exit or a longer stderr."""
    assert result.returncode == 1, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def admin_error(vault: VaultProcess, *args: str) -> str:
    """The one line vault-admin prints when it refuses `args` (exit 1)."""
    return one_line_error(vault.admin(*args, expect_ok=False))
