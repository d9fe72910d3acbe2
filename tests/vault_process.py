"""A real vaultd process on a free port, for tests: started, waited for, stopped, its log kept."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.admin_zygote import run_admin
from tests.vaultd_zygote import VaultdProcess, run_vaultd_to_end, start_vaultd
from tests.waiting import NotReached, wait_until
from tests.worker_database import TEST_CONNECT_TIMEOUT_MS, WORKER_DATABASE

ROOT = Path(__file__).resolve().parents[1]


PORT_ATTEMPTS = 3  # starts of a vaultd whose port another process took before it bound it


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# A request's database deadline in the tests' vaults (`server.db_deadline_seconds`, 2 s by
# default): on the loaded 2-core CI host ordinary creates overran 2 s and were answered 503,
# and a write already sent may be made all the same (docs/operations.md), so a test of
# something else failed on the host's speed. The deadline's own tests set theirs.
TEST_DB_DEADLINE = {"VAULTD_DB_DEADLINE_SECONDS": "10"}


def base_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTD_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(TEST_DB_DEADLINE)
    env.update(extra or {})
    return env


@dataclass
class VaultProcess:
    data_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    process: VaultdProcess | None = None  # forked from tests.vaultd_zygote, or a Popen
    secrets: list[str] = field(default_factory=list)  # every key/token handed out, for log scans
    fixed_port: int = 0  # a port chosen before the start (for settings that name it); 0: any
    entry_module: str = "vaultd.main"  # a module run as vaultd (one that adds routes first)

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}-vaultd.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> VaultProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self.port = self.fixed_port or free_port()
            args = ["--host", "127.0.0.1", "--port", str(self.port),
                    "--data-dir", str(self.data_dir)]
            started_at = self.log_path.stat().st_size if self.log_path.exists() else 0
            with open(self.log_path, "ab") as log:  # a process of its own, as a fresh one is
                self.process = start_vaultd(self.entry_module, args, base_env(self.env), ROOT,
                                            stdout=log.fileno(), stderr=log.fileno())
            try:
                self._wait_healthy(timeout)
                return self
            except RuntimeError:
                if self.fixed_port or attempt == PORT_ATTEMPTS or not self._port_taken(
                        started_at):
                    raise
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _port_taken(self, started_at: int) -> bool:
        """Whether this start's vaultd exited because its port was taken meanwhile: a free
        port is chosen before vaultd binds it, and another process (a client's connection
        takes its local port from the same range) may take it in between."""
        assert self.process is not None
        if self.process.poll() is None:
            return False
        with open(self.log_path, "rb") as log:
            log.seek(started_at)
            return b"Address already in use" in log.read()

    def _wait_healthy(self, timeout: float) -> None:
        try:
            wait_until(self._healthy, timeout=timeout, interval=0.1, what="vaultd healthy")
        except NotReached:
            raise RuntimeError(
                f"vaultd did not become healthy:\n{self.log_path.read_text()[-3000:]}") from None

    def _healthy(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"vaultd exited early:\n{self.log_path.read_text()[-3000:]}")
        return self._http_healthy()

    def _http_healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
            raise

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    # --- administration through the real CLI --------------------------------------------------

    def admin(self, *args: str, expect_ok: bool = True) -> subprocess.CompletedProcess[str]:
        # A process of its own, forked from one that imported the CLI (tests.admin_zygote).
        result = run_admin(["--data-dir", str(self.data_dir), *args], base_env(self.env), ROOT,
                           timeout=120)
        if expect_ok and result.returncode != 0:
            raise AssertionError(f"vault-admin {' '.join(args)} failed: {result.stderr}")
        return result

    def admin_json(self, *args: str) -> Any:
        return json.loads(self.admin("--json", *args).stdout)

    # --- fast setup straight through the services, against the same database ------------------

    def database_address(self) -> tuple[str, str]:
        """(URI, database name) of this vaultd's database."""
        from vaultd.embedded_db import running_address

        uri = self.env.get("VAULTD_MONGODB_URI") or running_address(self.data_dir / "db")
        assert uri, "vaultd's embedded database is not running"
        return uri, self.env.get("VAULTD_MONGODB_DATABASE", "vaultd")

    def run_service(self, coro_factory: Any) -> Any:
        """Run `coro_factory(db)` on a client of its own: a test of this process may stop,
        kill or cut its database between calls."""
        from vaultd.db import connect

        uri, name = self.database_address()

        async def main() -> Any:
            db = connect(uri, name, TEST_CONNECT_TIMEOUT_MS)
            try:
                return await coro_factory(db)
            finally:
                await db.close()

        return asyncio.run(main())

    def mark_cipher(self) -> Any:
        """The deployment's `MarkCipher` (a served page's mark is its render id, sealed)."""
        from vaultd.crypto.keyring import MasterKeyring
        from vaultd.services.pages.mark_key import mark_cipher

        ring = MasterKeyring.load(self.data_dir / "master.key")
        return self.run_service(lambda db: mark_cipher(db, ring))

    def new_account(self, name: str = "Acme Corp", plan: str = "pro") -> tuple[str, str]:
        """(account id, API key) created through the services the CLI uses."""
        from vaultd.services.accounts import accounts, api_keys

        async def make(db: Any) -> tuple[str, str]:
            account = await accounts.create_account(db, name, plan)
            _, key = await api_keys.create_key(db, account.id)
            return account.id, key

        account_id, key = self.run_service(make)
        self.secrets.append(key)
        return account_id, key

    def client(self, key: str | None = None, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=f"{self.url}/v1", headers=headers, timeout=60, **kwargs)


def assert_no_secrets_in_log(server: VaultProcess) -> None:
    text = server.log_text()
    leaked = [s[:12] + "…" for s in server.secrets if s in text]
    assert not leaked, f"secrets found in the server log: {leaked}"


def vault_env(data_dir: Path, env: dict[str, str], own_database: bool) -> dict[str, str]:
    """A test vaultd's settings: 2 render workers unless `env` says otherwise, and a database of
    its own on the worker's shared server (tests.worker_database) unless `own_database` or `env`
    names one."""
    shared: dict[str, str] = {}
    if not own_database and "VAULTD_MONGODB_URI" not in env:
        shared = WORKER_DATABASE.env(data_dir)
    return {"VAULTD_RENDER_WORKERS": "2", **shared, **env}


@contextmanager
def running_vault(data_dir: Path, *, own_database: bool = False,
                  **env: str) -> Iterator[VaultProcess]:
    """A started vaultd, stopped afterwards, whose log is then checked for every secret the
    tests registered in `server.secrets`. Its database is on the worker's shared server
    (`vault_env`); `own_database` gives it its own embedded database in `data_dir`, for the
    tests of that database (its files, its child process, a full disk, a restore)."""
    server = VaultProcess(data_dir, env=vault_env(data_dir, env, own_database))
    try:
        server.start()
        yield server
    finally:
        server.stop()
        WORKER_DATABASE.release(server.env)
    assert_no_secrets_in_log(server)


@contextmanager
def vault_pair(root: Path, env: dict[str, str]) -> Iterator[tuple[VaultProcess, VaultProcess]]:
    """Two vaultd on one database: A starts its embedded one, B is pointed at it (with the
    credentials A's embedded database requires, vaultd.db_credentials). B stops first: A owns
    the database."""
    from vaultd.embedded_db import running_address

    a = VaultProcess(root / "a", env=dict(env)).start()
    b: VaultProcess | None = None
    try:
        uri = running_address(a.data_dir / "db")
        assert uri is not None
        b = VaultProcess(root / "b", env={**env, "VAULTD_MONGODB_URI": uri}).start()
        yield a, b
    finally:
        if b is not None:
            b.stop()
        a.stop()


def run_vaultd(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """vaultd run to its end with `args` and the test environment plus `env` (a start that is
    refused, a `--help`): its exit code and output."""
    return run_vaultd_to_end("vaultd.main", args, base_env(env), ROOT, timeout=60)
