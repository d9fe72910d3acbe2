"""The tests' vaultd (`tests.vault_process.VaultProcess`) chooses a free port before vaultd
binds it; when another process takes the port in between (a CI run's clients take their local
ports from the same range), vaultd exits with "Address already in use", and the start tries
again on another port rather than failing the test that wanted a vaultd."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from tests import inprocess, vault_process
from tests.vault_process import running_vault

pytestmark = pytest.mark.slow  # starts its own vaultd (docs/testing.md)


@contextmanager
def a_taken_port_first(harness: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The harness's first free port is one a listening socket holds; then real free ones."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        taken_port = int(taken.getsockname()[1])
        ports: Iterator[int] = iter([taken_port])
        real_free_port = vault_process.free_port
        monkeypatch.setattr(harness, "free_port", lambda: next(ports, real_free_port()))
        yield taken_port


def assert_serving_elsewhere(url: str, port: int, taken_port: int) -> None:
    assert port != taken_port
    assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200


def test_a_vaultd_whose_port_was_taken_starts_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    with (a_taken_port_first(vault_process, monkeypatch) as taken_port,
          running_vault(tmp_path / "data") as server):
        assert_serving_elsewhere(server.url, server.port, taken_port)
    assert (f"cannot listen on 127.0.0.1:{taken_port}: Address already in use"
            in server.log_text())


def test_an_in_process_vaultd_whose_port_was_taken_starts_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    with (a_taken_port_first(inprocess, monkeypatch) as taken_port,
          inprocess.inprocess_vault(tmp_path / "data") as server):
        assert_serving_elsewhere(server.url, server.port, taken_port)
