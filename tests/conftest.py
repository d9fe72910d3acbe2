"""Shared fixtures: one real vaultd (embedded SecantusDB, local blobs, real render pool) per
session, a fresh account and key per test, and a check that no secret reached the server log."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.vault_process import VaultProcess


@pytest.fixture(scope="session")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    server = VaultProcess(tmp_path_factory.mktemp("vault") / "data",
                          env={"VAULTD_RENDER_WORKERS": "2"}).start()
    yield server
    server.stop()
    assert_no_secrets_in_log(server)


def assert_no_secrets_in_log(server: VaultProcess) -> None:
    text = server.log_text()
    leaked = [s[:12] + "…" for s in server.secrets if s in text]
    assert not leaked, f"secrets found in the server log: {leaked}"


@pytest.fixture
def account(vault: VaultProcess) -> tuple[str, str]:
    return vault.new_account()


@pytest.fixture
def api(vault: VaultProcess, account: tuple[str, str]) -> Iterator[httpx.Client]:
    with vault.client(account[1]) as client:
        yield client


@pytest.fixture
def anon(vault: VaultProcess) -> Iterator[httpx.Client]:
    with vault.client() as client:
        yield client
