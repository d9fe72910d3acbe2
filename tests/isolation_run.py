"""The isolation measurement of tests/test_scale_isolation.py, shared with `bench.isolation`:
an account with a year of data (10^4 log entries, 5,000 links, 2,000 files) revokes every link
of its biggest file and then reads its log, listing, account and analytics in a loop, in a
process of its own; another account's page times are taken at rest and beside it. The year's
log is numbered as vaultd's rounds number its own (`tests.seeded_log`), not a tool's import
of older entries, which the first read of its file walks whole."""

from __future__ import annotations

import multiprocessing
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from tests import documents as docs
from tests.http_helpers import create_link, sent_politely, upload_ok
from tests.scale_seed import Seeded, seed_account
from tests.vault_process import VaultProcess

PAGES = 300  # the p95 of 300 is the 16th-worst page: one stray stall does not decide it
# Each phase lasts at least this long too: a page takes about 10 ms, so 300 of them would be
# three seconds, within the noise of the machine's other work.
PHASE_SECONDS = 5.0
MOST_PAGES = 6000  # the busy phase lasts until the heavy tenant has read HEAVY_ROUNDS rounds
HEAVY_ROUNDS = 2
READY_SECONDS = 60.0  # for the heavy tenant's process to start and connect
# The bystander's viewer reads from an address of its own, through the trusted proxy the vaultd
# is given (PROXY): pages read from the account's own callers' address are its own reading,
# which the fair share does not protect (services.common.fair_share).
VIEWER = {"X-Forwarded-For": "203.0.113.9"}
PROXY = {"VAULTD_TRUSTED_PROXIES": "127.0.0.1/32"}


def p95(seconds: list[float]) -> float:
    return statistics.quantiles(seconds, n=20)[-1]


def pages(vault: VaultProcess, key: str, token: str,
          until: Callable[[], bool] = lambda: True) -> list[float]:
    """The bystander's page times: PAGES of them over PHASE_SECONDS at least, and more while
    `until()` is false (at most MOST_PAGES). Read as its viewer reads them, in the hosted
    viewer (the token alone): only a viewer's pages count for the fair share
    (`services.pages.fair_share_hook`), never those its owner's `key` reads over the API."""
    del key  # the owner's: not how a viewer reads
    took: list[float] = []
    ends = time.monotonic() + PHASE_SECONDS
    with httpx.Client(base_url=vault.url, headers=VIEWER, timeout=60) as viewer:
        while (len(took) < PAGES or time.monotonic() < ends
               or (not until() and len(took) < MOST_PAGES)):
            started = time.perf_counter()
            assert viewer.get(f"/v/{token}/pages/1").status_code == 200
            took.append(time.perf_counter() - started)
    return took


def heavy_tenant(url: str, key: str, file_id: str, stop: Any, revoked: Any, rounds: Any,
                 ready: Any, go: Any) -> None:
    """The heavy tenant, in a process of its own (as another client would be): a thread of the
    bystander's process would take its interpreter lock to parse 200-entry logs, and the
    bystander's own client would be what waits. It says when it is `ready` (imported and
    connected: a process's start is the harness's cost, not the tenant's calls) and starts on
    `go`."""
    with httpx.Client(base_url=f"{url}/v1", headers={"Authorization": f"Bearer {key}"},
                      timeout=60) as api:
        assert api.get("/account").status_code == 200  # connected, its imports done
        ready.set()
        go.wait()
        revoked.put(api.post(f"/files/{file_id}/revoke-views").json()["revoked"])
        while not stop.is_set():
            for path in (f"/files/{file_id}/access-log", "/files?page=1&perPage=100",
                         f"/files/{file_id}/access-log?action=download", "/account",
                         f"/files/{file_id}/analytics"):
                # Its reads are the load, not what is measured: a 503 of a busy database is
                # read again, as a polite client does.
                response = sent_politely(lambda path=path: api.get(path))
                assert response.status_code == 200, (path, response.status_code, response.text)
            with rounds.get_lock():
                rounds.value += 1


@dataclass
class Run:
    expected_revoked: int
    revoked: list[int]
    at_rest: list[float]
    busy: list[float]


def measure(vault: VaultProcess) -> Run:
    """The bystander's pages at rest, then beside the heavy tenant."""
    big: Seeded = vault.run_service(lambda db: seed_account(
        db, "Heavy Co", files=2000, entries=10_000, links=5000, numbered=True))
    vault.secrets.append(big.key)
    _, key = vault.new_account("Bystander Co")
    with vault.client(key) as api:
        token = str(create_link(api, upload_ok(api, docs.pdf())["id"])["token"])
    vault.secrets.append(token)
    pages(vault, key, token)  # warm: renders, caches, connections
    at_rest = pages(vault, key, token)
    spawn = multiprocessing.get_context("spawn")
    stop, revoked, rounds = spawn.Event(), spawn.Queue(), spawn.Value("i", 0)
    ready, go = spawn.Event(), spawn.Event()
    tenant = spawn.Process(target=heavy_tenant, args=(vault.url, big.key, big.busy_file, stop,
                                                      revoked, rounds, ready, go))
    tenant.start()
    try:  # beside the revoke-all, then beside at least two rounds of the reads (or until the
        # heavy tenant fails: its exit code says so below, not a page loop run to its end)
        assert ready.wait(READY_SECONDS), "the heavy tenant's process did not start"
        go.set()
        busy = pages(vault, key, token,
                     until=lambda: rounds.value >= HEAVY_ROUNDS or not tenant.is_alive())
    finally:
        stop.set()
        tenant.join(120)
    assert tenant.exitcode == 0, f"the heavy tenant's process ended with {tenant.exitcode}"
    assert rounds.value >= HEAVY_ROUNDS, f"the heavy tenant read {rounds.value} rounds"
    return Run(big.live_links, [revoked.get(timeout=5)], at_rest, busy)
