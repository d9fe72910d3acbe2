"""The per-account cap on leak traces in progress (429 with Retry-After): each trace holds its
image, up to 25 MiB, in memory until a worker has decoded it, so one account sending many at
once could otherwise fill vaultd's memory."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import assert_json_error
from tests.inprocess import inprocess_vault
from tests.raw_posts import finish_post, start_post
from tests.vault_process import VaultProcess
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # starts its own server (see docs/testing.md)

CONCURRENT = 2
IMAGE = docs.png_of_size(300_000)
SENT = 100_000  # what a held trace sends of its body before it waits
CONTINUE = b"HTTP/1.1 100 (Continue)\r\n\r\n"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with inprocess_vault(tmp_path_factory.mktemp("trace-admission") / "data",
                         VAULTD_RENDER_WORKERS="1",
                         VAULTD_TRACE_MAX_CONCURRENT_PER_ACCOUNT=str(CONCURRENT)) as server:
        yield server


def start_trace(vault: VaultProcess, key: str) -> socket.socket:
    """A raw trace that declares the whole image and sends only its first SENT bytes for now,
    returned once vaultd has admitted it: Tornado answers `Expect: 100-continue` after the
    handler's `prepare`, where the slot is taken. (Without waiting, a trace asked next could
    be admitted first under load and take a held trace's slot: the cap would never show.)"""
    sock = start_post(vault.port, "/v1/trace", key, "image/png", IMAGE, SENT,
                      headers={"Expect": "100-continue"})
    answer = b""
    while len(answer) < len(CONTINUE):
        chunk = sock.recv(len(CONTINUE) - len(answer))
        assert chunk, f"connection closed after {answer!r}"
        answer += chunk
    assert answer == CONTINUE, answer
    return sock


def finish_trace(sock: socket.socket) -> tuple[int, dict[str, Any]]:
    return finish_post(sock, IMAGE, SENT)


def trace(vault: VaultProcess, key: str) -> httpx.Response:
    with vault.client(key) as api:
        return api.post("/trace", content=IMAGE, headers={"Content-Type": "image/png"},
                        timeout=60)


def _refused(response: httpx.Response) -> httpx.Response | None:
    return response if response.status_code == 429 else None


def test_traces_past_the_per_account_cap_get_429_with_retry_after(vault: VaultProcess) -> None:
    _, key = vault.new_account()
    held = [start_trace(vault, key) for _ in range(CONCURRENT)]
    try:
        # The slots are taken when the headers are read: ask until the cap shows.
        refused = wait_until(lambda: _refused(trace(vault, key)), timeout=15,
                             what="every trace under way")
    except BaseException:
        for sock in held:
            sock.close()
        raise
    assert_json_error(refused, 429, f"too many traces in progress for this account (at most "
                      f"{CONCURRENT}); retry when one has finished")
    assert refused.headers["Retry-After"] == "5"
    _, other_key = vault.new_account(name="Other")
    other = trace(vault, other_key)  # another account is not affected
    assert other.status_code == 200 and other.json() == {"found": False}
    for sock in held:  # the held traces are answered in full
        assert finish_trace(sock) == (200, {"found": False})
    again = trace(vault, key)  # their slots were given back
    assert again.status_code == 200 and again.json() == {"found": False}


def test_an_abandoned_trace_gives_its_slot_back(vault: VaultProcess) -> None:
    _, key = vault.new_account()
    held = [start_trace(vault, key) for _ in range(CONCURRENT)]
    wait_until(lambda: trace(vault, key).status_code == 429, timeout=15,
               what="every trace under way")
    for sock in held:
        sock.close()
    wait_until(lambda: trace(vault, key).status_code == 200, timeout=15,
               what="the slots given back")


def test_a_free_account_is_refused_for_its_plan_not_for_the_cap(vault: VaultProcess) -> None:
    _, key = vault.new_account(plan="free")
    held = [start_trace(vault, key) for _ in range(CONCURRENT)]
    try:
        response = trace(vault, key)  # refused traces take no slot
        assert_json_error(response, 403, "leak tracing needs the Pro or Business plan "
                          "(account is on Free)")
    finally:
        for sock in held:
            sock.close()
