"""Escape attempts from inside real, confined render workers (the pool vaultd uses), and a
worker answering the server with crafted messages. Each attack is tried, and must be refused."""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import signal
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from render.pool.render_pool import RenderPool, WorkerCrashed
from render.wire.channel import HEADER, READ_REQUEST, Kind, ValueTag, frame
from render.wire.model import PixelBudget
from render.worker.entry_points import render_page
from tests import documents as docs
from tests import pool_helpers as helpers
from tests import render_fixtures as fx
from tests import sandbox_attacks as attacks
from tests.http_helpers import create_link, upload_ok
from tests.processes import render_workers
from tests.vault_process import VaultProcess, base_env, free_port, running_vault

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    # A process of its own: the worker must not reach the server's pid, nor this test's.
    with running_vault(tmp_path_factory.mktemp("vault") / "data") as server:
        yield server


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[RenderPool]:
    shared = RenderPool(workers=2, queue_size=2, timeout_seconds=60)
    await shared.wait_ready()
    yield shared
    await shared.close()


def _listening_ports() -> list[int]:
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A":  # LISTEN
                ports.append(int(local.rsplit(":", 1)[1], 16))
    return sorted(set(ports))


async def _attack(pool: RenderPool, fn: object, *args: object) -> str:
    result = await pool.run(*helpers.task(fn, *args))  # type: ignore[arg-type]
    assert isinstance(result, str)
    return result


async def test_the_worker_cannot_reach_keys_data_or_the_servers_memory(
    pool: RenderPool, vault: VaultProcess
) -> None:
    assert vault.process is not None
    server = vault.process.pid
    key = vault.data_dir / "master.key"
    assert key.exists()  # the target is there; only the sandbox stands in the way
    targets = [str(key), f"/proc/{server}/environ", f"/proc/{server}/mem",
               f"/proc/{os.getpid()}/environ", "/etc/shadow"]
    targets += [str(p) for p in vault.data_dir.rglob("*") if p.is_file()][:5]
    for target in targets:
        assert (await _attack(pool, attacks.read_file, target)).startswith("refused"), target
    for directory in (str(vault.data_dir), str(vault.data_dir.parent), "/proc", "/tmp"):
        assert (await _attack(pool, attacks.list_dir, directory)).startswith("refused")


async def test_the_worker_has_no_network(pool: RenderPool, vault: VaultProcess) -> None:
    ports = _listening_ports()
    assert vault.port in ports  # vaultd (and the database) listen on this machine
    for port in ports:
        assert (await _attack(pool, attacks.tcp_connect, port)).startswith("refused"), port
    for host in ("127.0.0.1", "8.8.8.8"):
        assert (await _attack(pool, attacks.udp_send, host, 53)).startswith("refused")


async def test_the_worker_cannot_write_run_programs_or_signal(
    pool: RenderPool, vault: VaultProcess, tmp_path: Path
) -> None:
    planted = tmp_path / "planted"
    assert (await _attack(pool, attacks.write_file, str(planted))).startswith("refused")
    assert not planted.exists()
    assert (await _attack(pool, attacks.write_file, "/dev/shm/planted")).startswith("refused")
    assert (await _attack(pool, attacks.run_program, "/bin/true")).startswith("refused")
    assert (await _attack(pool, attacks.exec_program, "/bin/true")).startswith("refused")
    assert vault.process is not None
    for pid in (vault.process.pid, os.getpid(), 1):
        assert (await _attack(pool, attacks.signal_process, pid)).startswith("refused"), pid
    assert (await _attack(pool, attacks.new_namespace)).startswith("refused")
    assert await _attack(pool, attacks.device_ioctl) == "refused: EPERM"


async def test_the_worker_environment_has_no_vaultd_secret(
    pool: RenderPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTD_MASTER_KEY", "a-secret-the-worker-must-not-see")
    fresh = RenderPool(workers=1, queue_size=0)  # started while the server has the variable
    try:
        assert (await _attack(fresh, attacks.secret_environment)).startswith("refused")
    finally:
        await fresh.close()
    assert os.environ["VAULTD_MASTER_KEY"]  # the server keeps its own


def test_vaultds_own_workers_are_confined(vault: VaultProcess) -> None:
    assert vault.process is not None
    workers = render_workers(vault.process.pid)
    assert workers, "no render worker found under vaultd"
    for pid in workers:
        status = dict(line.split(":", 1) for line in
                      Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
        assert status["NoNewPrivs"].strip() == "1"
        assert status["Seccomp"].strip() == "2"  # filter mode
        assert status["Uid"].split()[0] != "0"
        assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        assert b"VAULTD_" not in environ


class _Bomb:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def _crafted(marker: Path) -> dict[str, list[bytes]]:
    bomb = pickle.dumps(_Bomb(str(marker)))
    return {
        "garbage": [os.urandom(64)],
        "oversized": [HEADER.pack(Kind.RESULT, 0, ValueTag.BYTES, 0xFFFFFFFF)],
        "pickle as a result": [frame(Kind.RESULT, bomb, code=77)],
        "pickle as an error": [frame(Kind.ERROR, bomb, code=1)],
        "pickle in multiprocessing framing": [struct.pack("!i", len(bomb)) + bomb],
        "a second ready": [frame(Kind.READY)],
        "a read outside the document": [frame(Kind.READ, READ_REQUEST.pack(1 << 40, 4096))],
    }


@pytest.mark.parametrize("case", list(_crafted(Path("/x"))))
async def test_a_worker_sending_a_crafted_reply_is_killed_and_replaced(
    pool: RenderPool, tmp_path: Path, case: str
) -> None:
    marker = tmp_path / "bomb-went-off"
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(2), fx.PDF)
    document = fx.brokered(source)
    before = set(pool.worker_pids())
    bystander = asyncio.ensure_future(pool.run(*helpers.task(helpers.sleep_for, 1.0)))
    await asyncio.sleep(0.2)
    with pytest.raises(WorkerCrashed, match="misbehaved"):
        await pool.run(*helpers.task(attacks.send_frames, *_crafted(marker)[case]),
                       document=document)
    assert isinstance(await bystander, int)  # the other worker's task was not affected
    assert not marker.exists()  # nothing the worker sent was unpickled
    deadline = time.monotonic() + 10
    while len(pool.worker_pids()) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert len(set(pool.worker_pids()) - before) == 1  # exactly one replaced
    jpeg = await pool.run(render_page, source, 2, fx.mark(), PixelBudget(), document=document)
    assert jpeg[:2] == b"\xff\xd8"


def _results_pipe(worker: int) -> str:
    """The worker's end of its results pipe (its one write-only pipe), as /proc names it."""
    for fd in os.listdir(f"/proc/{worker}/fd"):
        flags = int(Path(f"/proc/{worker}/fdinfo/{fd}").read_text().split()[3], 8)
        if os.readlink(f"/proc/{worker}/fd/{fd}").startswith("pipe:") and flags & 3 == 1:
            return f"/proc/{worker}/fd/{fd}"
    raise AssertionError("no results pipe")


def test_vaultd_kills_a_worker_that_sends_a_pickle_and_keeps_serving_pages(
    vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    # What an exploited worker of vaultd's own pool would write, put on that worker's real
    # results pipe from outside: vaultd must parse it as data, kill the worker, keep serving.
    file = upload_ok(api, docs.pdf(pages=2), name="Minutes.pdf")
    token = create_link(api, file["id"], "dana@example.com")["token"]
    vault.secrets.append(token)
    with httpx.Client(base_url=vault.url, timeout=60) as web:
        assert web.get(f"/v/{token}/pages/1").status_code == 200
        assert vault.process is not None
        victim = render_workers(vault.process.pid)[0]
        marker = tmp_path / "bomb-went-off"
        with open(_results_pipe(victim), "wb") as pipe:
            pipe.write(frame(Kind.RESULT, pickle.dumps(_Bomb(str(marker))), code=77))
        deadline = time.monotonic() + 10
        while victim in render_workers(vault.process.pid):
            assert time.monotonic() < deadline, "the worker was not killed"
            time.sleep(0.05)
        for number in (1, 2, 1):
            response = web.get(f"/v/{token}/pages/{number}")
            assert response.status_code == 200 and response.content[:2] == b"\xff\xd8"
        body = web.get("/healthz").json()
    assert not marker.exists()
    assert "broke the channel protocol" in vault.log_text()
    layers = body["renderSandbox"]["layers"]
    assert body["renderSandbox"]["mode"] == "auto"
    assert layers and all(layers.values()), layers  # every layer is available on this machine


def test_a_worker_cannot_write_into_vaultds_log(vault: VaultProcess, api: httpx.Client) -> None:
    # A worker taken over writes a forged line to its standard error, from outside through
    # /proc as the exploit would from inside: it must not reach vaultd's log.
    file = upload_ok(api, docs.pdf(pages=1))
    token = create_link(api, file["id"], "erin@example.com")["token"]
    vault.secrets.append(token)
    assert api.get(f"/views/{token}/pages/1").status_code == 200
    assert vault.process is not None
    forged = f"ERROR vaultd.web: forged by a worker {uuid.uuid4().hex}"
    for worker in render_workers(vault.process.pid):
        with open(f"/proc/{worker}/fd/2", "a") as stderr:
            stderr.write(forged + "\n")
    assert api.get(f"/views/{token}/pages/1").status_code == 200
    assert forged not in vault.log_text()


# vaultd started under a seccomp filter that refuses unshare(): the network-namespace layer
# cannot be applied (as in a container profile that forbids it). Nothing in vaultd is switched.
NO_UNSHARE = """
import errno, os, sys
import pyseccomp as seccomp
rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
rules.add_rule(seccomp.ERRNO(errno.EPERM), "unshare")
rules.load()
os.execv(sys.executable, [sys.executable, "-m", "vaultd.main", *sys.argv[1:]])
"""


def _start_without_unshare(data_dir: Path, mode: str) -> subprocess.Popen[str]:
    env = {**base_env(), "VAULTD_RENDER_SANDBOX": mode, "VAULTD_RENDER_WORKERS": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", NO_UNSHARE, "--host", "127.0.0.1", "--port", str(free_port()),
         "--data-dir", str(data_dir)],
        cwd=Path(__file__).parents[1], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)


def test_required_mode_refuses_to_start_with_a_layer_missing(tmp_path: Path) -> None:
    process = _start_without_unshare(tmp_path / "data", "required")
    try:
        _, err = process.communicate(timeout=90)
    finally:
        process.kill()
    assert process.returncode == 2
    assert 'render.sandbox is "required" but these layers are missing: net_namespace' in err
    assert "Traceback" not in err


def test_auto_mode_starts_warns_once_and_reports_the_missing_layer(tmp_path: Path) -> None:
    process = _start_without_unshare(tmp_path / "data", "auto")
    try:
        assert process.stdout is not None
        # A first start also announces the new master key; then "listening on http://host:port".
        line = process.stdout.readline()
        if "master key" in line:
            line = process.stdout.readline()
        assert "listening on" in line, process.stderr.read() if process.stderr else ""
        url = line.split()[-1]
        layers = httpx.get(f"{url}/healthz", timeout=10).json()["renderSandbox"]["layers"]
        assert layers["net_namespace"] is False and layers["seccomp"] is True
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert err.count("render sandbox layer missing: net_namespace") == 1


def test_doctor_prints_each_layer_and_fails_when_required_and_missing(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "admin_cli.main", "doctor"]
    root = Path(__file__).parents[1]
    ok = subprocess.run([*command, "--json"], cwd=root, env=base_env(), capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    state = json.loads(ok.stdout)["renderSandbox"]
    assert state["complete"] is True and state["layers"]["seccomp"] is True
    assert set(state["layers"]) >= {"no_new_privs", "landlock_fs", "landlock_net",
                                    "landlock_scope", "net_namespace", "own_identity",
                                    "rlimits", "clean_env", "server_not_dumpable"}
    wrapper = NO_UNSHARE.replace('"-m", "vaultd.main"', '"-m", "admin_cli.main"')
    missing = subprocess.run(
        [sys.executable, "-c", wrapper, "doctor"], cwd=root, capture_output=True, text=True,
        env={**base_env(), "VAULTD_RENDER_SANDBOX": "required"}, timeout=120)
    assert missing.returncode == 1, missing.stderr
    lines = missing.stdout.splitlines()
    assert any(line.startswith("MISSING") and "net_namespace" in line for line in lines)
    assert any(line.startswith("active") and "seccomp" in line for line in lines)
    assert "some layers missing" in missing.stdout
