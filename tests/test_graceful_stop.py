"""A graceful stop under load, with real signals: pages in flight are answered, an upload still
arriving is cut without a trace, what is batched is flushed, and vaultd exits 0 within its
grace (`server.shutdown_grace_seconds`) plus a few seconds."""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests import documents as docs
from tests.access_log import page_entries
from tests.http_helpers import create_link, upload_ok
from tests.vault_process import VaultProcess, assert_no_secrets_in_log
from tests.waiting import wait_until
from tests.webhook_receiver import Reply, running_receiver
from tests.webhook_subscriptions import FAST_RETRIES, subscribe

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

GRACE = 6.0  # not the default (10): the setting is what bounds the wait
STOP_ALLOWANCE = 5.0  # past the grace: cut work's clean-up, flushes, workers, the database


@dataclass
class Trickle:
    """A raw POST /v1/files that sends a few bytes every 0.2 s and never finishes."""

    port: int
    key: str
    data: bytes = field(default_factory=lambda: docs.png_of_size(400_000))
    sock: socket.socket | None = None
    cut: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        head = (f"POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {self.key}\r\n"
                f"Content-Type: image/png\r\nContent-Length: {len(self.data)}\r\n\r\n").encode()
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        self.sock.sendall(head + self.data[:100_000])
        threading.Thread(target=self._send_slowly, daemon=True).start()

    def _send_slowly(self) -> None:
        assert self.sock is not None
        offset = 100_000
        with self.sock:
            while offset < len(self.data) - 100:
                try:
                    self.sock.sendall(self.data[offset:offset + 10])
                except OSError:
                    break
                offset += 10
                self.cut.wait(0.2)  # a steady pace, not a wait for something
            self.cut.set()


@dataclass
class PageLoad:
    """Clients asking for pages in a loop, each request noted with when it was sent."""

    url: str
    key: str
    outcomes: list[tuple[float, str]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {self.key}"}, timeout=30) as api:
            while not self.done.is_set():
                sent = time.monotonic()
                try:
                    outcome = str(api.get(self.url).status_code)
                except httpx.HTTPError as error:
                    outcome = type(error).__name__
                self.outcomes.append((sent, outcome))
                if outcome != "200":
                    return  # the server has stopped answering


@contextmanager
def page_load(url: str, key: str, clients: int) -> Iterator[PageLoad]:
    load = PageLoad(url, key)
    threads = [threading.Thread(target=load.run, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    try:
        yield load
    finally:
        load.done.set()
        for thread in threads:
            thread.join(30)


def temp_blobs(server: VaultProcess) -> list[str]:
    return [p.name for p in (server.data_dir / "blobs").iterdir() if p.name.startswith(".tmp-")]


def test_a_stop_under_load_answers_pages_in_flight_and_cuts_a_trickling_upload(
        tmp_path: Path) -> None:
    server = VaultProcess(tmp_path / "data", env={
        "VAULTD_RENDER_WORKERS": "2",
        "VAULTD_SHUTDOWN_GRACE_SECONDS": str(GRACE)}).start()
    try:
        _, key = server.new_account()
        with server.client(key) as api:
            slow = upload_ok(api, docs.slow_pdf(shapes=8_000))  # about 1 s
            fast = upload_ok(api, docs.pdf(pages=1))
            slow_link, fast_link = create_link(api, slow["id"]), create_link(api, fast["id"])
            usage = api.get("/account").json()["usage"]
        slow_page: list[httpx.Response] = []
        slow_thread = threading.Thread(target=lambda: slow_page.append(httpx.get(
            f"{server.url}/v1/views/{slow_link['token']}/pages/1",
            headers={"Authorization": f"Bearer {key}"}, timeout=60)))
        trickle = Trickle(server.port, key)
        fast_url = f"{server.url}/v1/views/{fast_link['token']}/pages/1"
        with page_load(fast_url, key, clients=3) as load, server.client(key) as api:
            slow_thread.start()
            trickle.start()
            wait_until(lambda: page_entries(api, slow["id"]), what="the slow page rendering")
            wait_until(lambda: temp_blobs(server), what="the trickling upload stored in part")
            wait_until(lambda: len(load.outcomes) >= 6, what="pages served under load")
            signalled = time.monotonic()
            assert server.stop(signal.SIGTERM, timeout=GRACE + 30) == 0
            took = time.monotonic() - signalled
        slow_thread.join(30)
        # The trickle holds vaultd to the end of its grace, and no longer than a few seconds past.
        assert GRACE <= took < GRACE + STOP_ALLOWANCE, took
        wait_until(trickle.cut.is_set, timeout=10, what="the trickling upload cut off")
        assert [r.status_code for r in slow_page] == [200]
        before = [outcome for sent, outcome in load.outcomes if sent < signalled]
        assert before and set(before) == {"200"}, load.outcomes
        assert "requests still in flight after the grace period: cut" in server.log_text()
        assert "Traceback" not in server.log_text()
        # The stop finished: its last line comes after the database closed.
        assert server.log_text().rstrip().endswith("vaultd stopped"), server.log_text()[-2000:]
        # Nothing of the cut upload remains, before or after a restart.
        assert {p.name for p in (server.data_dir / "blobs").iterdir()} == {slow["id"], fast["id"]}
        server.start()
        with server.client(key) as api:
            assert api.get("/account").json()["usage"] == usage
            assert {f["id"] for f in api.get("/files").json()["files"]} == {slow["id"], fast["id"]}
    finally:
        server.stop()
    assert_no_secrets_in_log(server)


def test_a_stop_sends_the_webhook_deliveries_due(tmp_path: Path) -> None:
    # Polling once a minute: an event's first attempt is rung at once (doorbell), but its retry,
    # due half a second after the first attempt failed, waits for the next poll; only the stop's
    # flush sends it before exit (it used to be left for the next start). Page views batched at
    # the stop: tests/test_analytics_batching.py.
    env = {**FAST_RETRIES, "VAULTD_WEBHOOKS_POLL_SECONDS": "60", "VAULTD_RENDER_WORKERS": "1"}
    with running_receiver() as receiver:
        receiver.reply = lambda n: Reply(status=503 if n == 0 else 200)
        server = VaultProcess(tmp_path / "data", env=env).start()
        try:
            _, key = server.new_account()
            with server.client(key) as api:
                subscribe(api, receiver, ["file.uploaded"], server)
                created = upload_ok(api, docs.pdf(pages=1))
            receiver.wait_for(lambda seen: len(seen) == 1, timeout=10)  # refused with a 503
            time.sleep(1.0)  # the retry is due, and no poll comes for a minute
            assert len(receiver.received) == 1
            assert server.stop(signal.SIGINT) == 0
            delivered = receiver.of_type("file.uploaded")
            assert [r.event["data"]["fileId"] for r in delivered] == [created["id"]] * 2
            assert delivered[1].verified
        finally:
            server.stop()
        assert_no_secrets_in_log(server)
