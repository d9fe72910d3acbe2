"""Crash safety with real SIGKILLs: vaultd is killed at five random moments while clients upload,
create and revoke links and view pages, and is restarted each time on the same data directory.
Afterwards nothing the API acknowledged is lost: every file's blob is there and no blob is left
without a file, the usage counters match the files, every acknowledged event reached the
webhook receiver, and no page was served from a link after its revoke was answered.

The seed is printed (`-s` shows it); `CRASH_SEED=<n>` replays a run's choices (the moments the
kills land still depend on the machine's timing).
"""

from __future__ import annotations

import os
import random
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.crash_load import Ledger, start_load
from tests.processes import render_workers, running
from tests.vault_process import VaultProcess, assert_no_secrets_in_log
from tests.waiting import wait_until
from tests.webhook_receiver import Received, Receiver, running_receiver
from tests.webhook_subscriptions import FAST_RETRIES, subscribe

pytestmark = pytest.mark.slow  # kills and restarts its own vaultd (see docs/testing.md)

KILLS = 5
EVENTS = ["file.uploaded", "view.created", "view.revoked"]
ENV = {**FAST_RETRIES, "VAULTD_RENDER_WORKERS": "2",
       # A held outbox entry whose writer was killed is settled after a second, not a minute.
       "VAULTD_WEBHOOKS_HOLD_SECONDS": "1"}


def crash(server: VaultProcess) -> None:
    """SIGKILL vaultd's own process, as a crash or the OOM killer would. Its render workers die
    with it; its embedded database is told by the kernel (SIGTERM) and whatever of it is left
    is stopped by the next vaultd on the same data directory (vaultd/db_orphans.py)."""
    assert server.process is not None
    pid = server.process.pid
    workers = render_workers(pid)
    os.kill(pid, signal.SIGKILL)
    server.process.wait(10)
    wait_until(lambda: not any(running(worker) for worker in workers), what="workers gone")


def settled_by_recovery(server: VaultProcess) -> int:
    lines = re.findall(r"recovery settled (\d+) interrupted operations", server.log_text())
    return sum(int(count) for count in lines)


def at_work(ledger: Ledger) -> None:
    """Until the clients have had three more requests acknowledged (they are at work again)."""
    done = ledger.acknowledged()
    wait_until(lambda: ledger.acknowledged() >= done + 3, timeout=60, what="clients at work")


def blob_names(server: VaultProcess) -> set[str]:
    """Committed blobs; temporaries (`.tmp-*`) of uploads the kills cut are swept by vaultd
    once idle for two minutes (docs/architecture.md, Crash safety), so they are not counted."""
    return {p.name for p in (server.data_dir / "blobs").iterdir()
            if not p.name.startswith(".tmp-")}


def all_files(server: VaultProcess, key: str) -> list[dict[str, Any]]:
    files: list[dict[str, Any]] = []
    with server.client(key) as api:
        for page in range(1, 1000):
            batch = api.get("/files", params={"page": page, "perPage": 100}).json()["files"]
            files += batch
            if len(batch) < 100:
                return files
    raise AssertionError("too many files")


def delivered_everything(receiver: Receiver, ledger: Ledger) -> bool:
    return not undelivered(receiver.received, ledger)


def undelivered(received: list[Received], ledger: Ledger) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {event: set() for event in EVENTS}
    for request in received:
        event = request.event
        data = event["data"]
        seen[event["type"]].add(data["fileId"] if event["type"] == "file.uploaded"
                                else data["viewerEmail"])
    wanted = {"file.uploaded": set(ledger.files), "view.created": set(ledger.links.values()),
              "view.revoked": {ledger.links[token] for token in ledger.revoked}}
    return {event: wanted[event] - seen[event] for event in EVENTS if wanted[event] - seen[event]}


def test_nothing_acknowledged_is_lost_across_five_kills(tmp_path: Path) -> None:
    seed = int(os.environ.get("CRASH_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    moments = [rng.uniform(0.0, 2.0) for _ in range(KILLS)]
    print(f"crash test seed {seed} (CRASH_SEED={seed} replays it); kill moments {moments}")
    ledger = Ledger()
    with running_receiver() as receiver:
        server = VaultProcess(tmp_path / "data", env=ENV).start()
        try:
            _, key = server.new_account("Crash Test Ltd", plan="business")
            with server.client(key) as api:
                subscribe(api, receiver, EVENTS, server)
            load = start_load(lambda: server.url, key, ledger, seed)
            try:
                for moment in moments:
                    # Kill once the clients are at work again, at a random moment after that.
                    at_work(ledger)
                    time.sleep(moment)  # the random moment itself, not a wait for something
                    crash(server)
                    server.start()  # at once: no wait for the old database
                at_work(ledger)
            finally:
                load.finish()
            check_storage_and_usage(server, key, ledger)
            check_no_page_after_revoke(ledger)
            assert 500 not in ledger.statuses
            receiver.wait_for(lambda _: delivered_everything(receiver, ledger), timeout=30)
            assert all(request.verified for request in receiver.received)
            print(f"acknowledged {len(ledger.files)} uploads, {len(ledger.links)} links, "
                  f"{len(ledger.revoked)} revokes, {len(ledger.pages)} pages asked; "
                  f"{ledger.unanswered} requests cut or refused; "
                  f"{len(receiver.received)} webhook requests received; recovery settled "
                  f"{settled_by_recovery(server)} interrupted operations")
            assert server.stop() == 0
        finally:
            server.stop()
    assert_no_secrets_in_log(server)


def check_storage_and_usage(server: VaultProcess, key: str, ledger: Ledger) -> None:
    verify = server.admin_json("storage", "verify")
    assert verify["missing"] == [] and verify["corrupt"] == [], verify
    gc = server.admin_json("storage", "gc", "--dry-run", "--older-than", "0s")
    assert gc["orphans"] == [] and gc["missingBlobs"] == [], gc
    files = all_files(server, key)
    assert blob_names(server) == {f["id"] for f in files}
    assert set(ledger.files) <= {f["id"] for f in files}
    with server.client(key) as api:  # every link acknowledged is there, revoked or not
        statuses = {token: api.get(f"/views/{token}").status_code for token in ledger.links}
    # A revoke the kill left unanswered may or may not have been made.
    wrong = {token[:8]: status for token, status in statuses.items()
             if status != (404 if token in ledger.revoked else 200)
             and not (token in ledger.revoking and token not in ledger.revoked)}
    assert wrong == {}, wrong
    with server.client(key) as api:
        usage = api.get("/account").json()["usage"]
    assert usage["documents"] == len(files), (usage, len(files))
    assert usage["storageBytes"] == sum(f["size"] for f in files), usage


def check_no_page_after_revoke(ledger: Ledger) -> None:
    served_after = [page for page in ledger.pages
                    if page.token in ledger.revoked and page.sent > ledger.revoked[page.token]
                    and page.status == 200]
    assert served_after == [], served_after
    asked_after = [page for page in ledger.pages
                   if page.token in ledger.revoked and page.sent > ledger.revoked[page.token]]
    assert asked_after, "no page was asked for after a revoke: the check saw nothing"
