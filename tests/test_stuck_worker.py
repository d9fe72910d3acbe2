"""A render worker that asks for document data and never reads the answers.

Before: the server wrote broker answers to the worker's pipe from the event loop, blocking; a
worker that asked for data and did not read it (a hostile document that has taken its worker)
froze the whole event loop, and the task's timeout, a timer on that loop, never fired. Now the
pipe is non-blocking behind a bounded outbox: the stuck task alone fails, at its deadline, with
the documented error; its worker is killed and replaced; every other account keeps its pages
and /healthz answers throughout.

Two real set-ups: a real pool whose worker runs attacker code (`pool_helpers.task`, as in
test_sandbox_escape), and vaultd itself, whose worker is stopped (SIGSTOP) with a page task in
its pipe while the test writes its read requests on its real results pipe, as an exploited
worker would.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import statistics
import termios
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from render.pool.render_pool import RenderPool, TaskTimedOut, WorkerCrashed
from render.wire.channel import HEADER, MAX_READ_BYTES, READ_REQUEST, Kind, frame
from render.wire.model import PixelBudget
from render.worker.entry_points import render_page
from tests import documents as docs
from tests import pool_helpers as helpers
from tests import processes
from tests import render_fixtures as fx
from tests.http_helpers import assert_json_error, create_link, upload_ok
from tests.vault_process import VaultProcess, running_vault
from tests.waiting import wait_until, wait_until_async

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

DEADLINE = 4.0  # the render timeout in both set-ups
BIG = 700_000  # a document larger than one read: three answers overfill a 1 MiB pipe
TIMED_OUT = "rendering timed out; retry later"
F_GETPIPE_SZ = 1032


def stall_reads(length: int, reads: int) -> str:
    """A worker taken over: ask the broker for `length` bytes `reads` times, never reading an
    answer (each next ask waits until the previous answer started to arrive, as the protocol
    allows one read at a time), then wait to be killed."""
    import fcntl
    import os
    import stat
    import struct
    import time

    pipes = {}
    for fd in range(3, 64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                pipes[fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE] = fd
        except OSError:
            continue
    tasks, results = pipes[os.O_RDONLY], pipes[os.O_WRONLY]

    def held() -> int:  # FIONREAD: what the task pipe holds, unread
        return int.from_bytes(fcntl.ioctl(tasks, 0x541B, b"\0\0\0\0"), "little")

    for number in range(reads):
        before = held()
        os.write(results, struct.pack("!BBHI", 4, 0, 0, 12) + struct.pack("!QI", 0, length))
        while number < reads - 1 and held() == before:
            time.sleep(0.005)
    time.sleep(120)
    return "not killed"


# --- a real pool, a worker running attacker code ------------------------------------------------


@pytest.fixture
async def pool() -> AsyncIterator[RenderPool]:
    # Never recycled: the other account renders hundreds of cached pages during the stall.
    started = RenderPool(workers=2, queue_size=4, timeout_seconds=DEADLINE,
                         max_tasks_per_worker=0)
    await started.wait_ready()
    yield started
    await started.close()


async def _loop_lag(stop: asyncio.Event, lags: list[float]) -> None:
    """How late the loop runs a 20 ms sleep: a blocked loop shows as one huge lag."""
    while not stop.is_set():
        before = time.monotonic()
        await asyncio.sleep(0.02)
        lags.append(time.monotonic() - before - 0.02)


async def _timed(make: Callable[[], Awaitable[object]]) -> float:
    start = time.monotonic()
    await make()
    return time.monotonic() - start


async def test_a_worker_that_stops_reading_costs_its_own_task_only(
    pool: RenderPool, tmp_path: Path
) -> None:
    big = fx.brokered(fx.encrypt_to_local(tmp_path / "a", docs.png_of_size(BIG), fx.PNG))
    small_source = fx.encrypt_to_local(tmp_path / "b", fx.text_pdf(3), fx.PDF)
    small = fx.brokered(small_source)

    def other_page() -> Awaitable[bytes]:
        return pool.run(render_page, small_source, 2, fx.mark(), PixelBudget(), account="b",
                        document=small)

    await other_page()  # warm
    idle = statistics.median([await _timed(other_page) for _ in range(5)])
    before = set(pool.worker_pids())

    stop, lags = asyncio.Event(), list[float]()
    watcher = asyncio.ensure_future(_loop_lag(stop, lags))
    start = time.monotonic()
    stuck = asyncio.ensure_future(pool.run(*helpers.task(stall_reads, MAX_READ_BYTES, 3),
                                           account="a", document=big))
    during: list[float] = []
    while not stuck.done():
        during.append(await _timed(other_page))
    with pytest.raises(TaskTimedOut, match="the render took too long; its worker was replaced"):
        await stuck
    ended = time.monotonic() - start
    stop.set()
    await watcher

    assert DEADLINE - 0.1 <= ended < DEADLINE + 1.5, ended
    assert max(lags) < 0.5, max(lags)  # the loop never blocked on the worker's pipe
    assert len(during) >= 5, during  # the other account's pages kept coming
    assert statistics.median(during) < max(4 * idle, idle + 0.3), (idle, during)
    await wait_until_async(lambda: len(pool.worker_pids()) == 2, what="a replacement worker")
    after = set(pool.worker_pids())
    assert len(before - after) == 1 and len(after - before) == 1  # the stuck one, replaced
    assert (await pool.run(render_page, small_source, 1, fx.mark(), PixelBudget(),
                           account="a", document=small))[:2] == b"\xff\xd8"


# --- vaultd, its own worker stopped with a task in its pipe -----------------------------------


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    data: Path = tmp_path_factory.mktemp("stuck") / "data"
    # No placement mark: its page prints (a worker task after a page's first view) could leave
    # a worker mid-task when the test stops them all, and the stuck page would then wait in
    # the scheduler for it rather than sit in an idle worker's pipe, which the test watches.
    with running_vault(data, VAULTD_RENDER_WORKERS="3",
                       VAULTD_RENDER_TIMEOUT_SECONDS=str(DEADLINE),
                       VAULTD_TRACE_PLACEMENT_MARK="false") as server:
        yield server


def _pipes(worker: int) -> tuple[str, str]:
    """The worker's task pipe (its one read-only pipe) and results pipe (its one write-only)."""
    ends: dict[int, str] = {}
    for fd in os.listdir(f"/proc/{worker}/fd"):
        flags = int(Path(f"/proc/{worker}/fdinfo/{fd}").read_text().split()[3], 8)
        if os.readlink(f"/proc/{worker}/fd/{fd}").startswith("pipe:"):
            ends[flags & os.O_ACCMODE] = f"/proc/{worker}/fd/{fd}"
    return ends[os.O_RDONLY], ends[os.O_WRONLY]


def _held(fd: int) -> int:
    return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), "little")


def _link(vault: VaultProcess, name: str, data: bytes) -> str:
    _, key = vault.new_account(name, plan="business")
    with vault.client(key) as api:
        token: str = create_link(api, upload_ok(api, data)["id"])["token"]
    vault.secrets += [key, token]
    return token


class HealthWatch:
    """/healthz asked every 50 ms from a thread; the slowest answer (a timeout counts as 10 s)."""

    def __init__(self, url: str) -> None:
        self.slowest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(url,), daemon=True)

    def __enter__(self) -> HealthWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(15)

    def _watch(self, url: str) -> None:
        with httpx.Client(base_url=url, timeout=10) as client:
            while not self._stop.wait(0.05):
                start = time.monotonic()
                try:
                    client.get("/healthz").raise_for_status()
                    took = time.monotonic() - start
                except httpx.HTTPError:
                    took = 10.0
                self.slowest = max(self.slowest, took)


def test_vaultd_serves_everyone_while_a_worker_does_not_read_its_data(
    vault: VaultProcess, request: pytest.FixtureRequest
) -> None:
    assert vault.process is not None
    stuck_token = _link(vault, "Stuck Ltd", docs.png_of_size(BIG))
    other_token = _link(vault, "Other Inc", docs.pdf(pages=3))
    web = httpx.Client(base_url=vault.url, timeout=30)
    request.addfinalizer(web.close)

    def other_page(number: int) -> float:
        start = time.monotonic()
        response = web.get(f"/v/{other_token}/pages/{number}")
        assert response.status_code == 200 and response.content[:2] == b"\xff\xd8"
        return time.monotonic() - start

    other_page(1)
    idle = statistics.median([other_page(n) for n in (1, 2, 3, 1, 2, 3)])

    workers = processes.render_workers(vault.process.pid)
    assert len(workers) == 3
    for pid in workers:
        os.kill(pid, signal.SIGSTOP)
    # What each worker's task pipe holds (never read here): the page task shows which one got it.
    openings = {pid: os.open(_pipes(pid)[0], os.O_RDONLY | os.O_NONBLOCK) for pid in workers}
    caller = ThreadPoolExecutor(1)
    sent_at = time.monotonic()
    stuck = caller.submit(
        lambda: httpx.get(f"{vault.url}/v/{stuck_token}/pages/1", timeout=30))
    try:
        victim = wait_until(lambda: next((p for p, fd in openings.items() if _held(fd)), None),
                            timeout=10, what="the page task in a worker's pipe")
        for pid in workers:
            if pid != victim:
                os.kill(pid, signal.SIGCONT)
        with HealthWatch(vault.url) as health:
            _ask_three_times(openings[victim], _pipes(victim)[1])
            during: list[float] = []
            while not stuck.done():
                during.append(other_page(len(during) % 3 + 1))
            response = stuck.result()
            ended = time.monotonic() - sent_at
    finally:
        for pid in workers:  # a stopped worker the server failed to kill must not outlive us
            if processes.alive(pid):
                os.kill(pid, signal.SIGCONT)
        for fd in openings.values():
            os.close(fd)
        caller.shutdown()

    assert_json_error(response, 503, TIMED_OUT)
    assert DEADLINE - 0.1 <= ended < DEADLINE + 2.0, ended
    assert health.slowest < 1.0, health.slowest
    assert len(during) >= 5, during
    assert statistics.median(during) < max(4 * idle, idle + 0.3), (idle, during)
    wait_until(lambda: victim not in processes.render_workers(vault.process.pid), timeout=10,
               what="the stuck worker killed")
    replaced = wait_until(lambda: len(processes.render_workers(vault.process.pid)) == 3
                          and processes.render_workers(vault.process.pid), timeout=20,
                          what="a replacement worker")
    assert set(replaced) - set(workers) and victim not in replaced
    again = web.get(f"/v/{stuck_token}/pages/1")
    assert again.status_code == 200 and again.content[:2] == b"\xff\xd8"


def _ask_three_times(tasks: int, results_path: str) -> None:
    """Three broker reads on the stopped worker's results pipe, each sent once the previous
    answer has started to arrive (one read at a time is the protocol); none is ever read."""
    request = frame(Kind.READ, READ_REQUEST.pack(0, MAX_READ_BYTES))
    capacity = fcntl.fcntl(tasks, F_GETPIPE_SZ)
    assert 2 * (HEADER.size + MAX_READ_BYTES) > capacity  # the second answer fills the pipe
    with open(results_path, "wb", buffering=0) as results:
        for number in range(3):
            held = _held(tasks)
            results.write(request)
            if number < 2:
                wait_until(lambda held=held: _held(tasks) > held, timeout=5,
                           what="an answer arriving")


def answer_left_unread() -> str:
    """A worker taken over: ask for data, let the answer arrive, never read it, report a
    result (value None) as if the task were done, and read nothing more."""
    import fcntl
    import os
    import stat
    import struct
    import time

    pipes = {}
    for fd in range(3, 64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                pipes[fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE] = fd
        except OSError:
            continue
    os.write(pipes[os.O_WRONLY], struct.pack("!BBHI", 4, 0, 0, 12) + struct.pack("!QI", 0, 16))
    while not int.from_bytes(fcntl.ioctl(pipes[os.O_RDONLY], 0x541B, b"\0\0\0\0"), "little"):
        time.sleep(0.005)
    os.write(pipes[os.O_WRONLY], struct.pack("!BBHI", 2, 0, 0, 0))
    time.sleep(120)
    return "not killed"


async def test_a_result_with_an_answer_left_unread_costs_that_worker(
    pool: RenderPool, tmp_path: Path
) -> None:
    # Its next task would wait behind the stale answer (here: until its deadline): the worker
    # is replaced at once instead, and the account's next pages render.
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(2), fx.PDF)
    document = fx.brokered(source)
    with pytest.raises(WorkerCrashed, match="the render worker misbehaved and was replaced"):
        await pool.run(*helpers.task(answer_left_unread), account="a", document=document)
    for number in (1, 2):
        page = await pool.run(render_page, source, number, fx.mark(), PixelBudget(),
                              account="a", document=document)
        assert page[:2] == b"\xff\xd8"
