"""The tests' vaultd (`tests.vault_process.VaultProcess`) chooses a free port before vaultd
binds it; when another process takes the port in between (a CI run's clients take their local
ports from the same range), vaultd exits with "Address already in use", and the start tries
again on another port rather than failing the test that wanted a vaultd."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import vault_process
from tests.vault_process import running_vault

pytestmark = pytest.mark.slow  # starts its own vaultd (docs/testing.md)


def test_a_vaultd_whose_port_was_taken_starts_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        taken_port = int(taken.getsockname()[1])
        ports: Iterator[int] = iter([taken_port])
        real_free_port = vault_process.free_port
        monkeypatch.setattr(vault_process, "free_port", lambda: next(ports, real_free_port()))
        with running_vault(tmp_path / "data") as server:
            assert server.port != taken_port
            assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
        log = server.log_text()
    assert f"cannot listen on 127.0.0.1:{taken_port}: Address already in use" in log


def test_an_in_process_vaultd_whose_port_was_taken_starts_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests import inprocess

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        taken_port = int(taken.getsockname()[1])
        ports: Iterator[int] = iter([taken_port])
        real_free_port = vault_process.free_port
        monkeypatch.setattr(inprocess, "free_port", lambda: next(ports, real_free_port()))
        with inprocess.inprocess_vault(tmp_path / "data") as server:
            assert server.port != taken_port
            assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
