"""Azurite, the Azure Storage emulator, as a real child process for tests.

`scripts/install-azurite.sh` installs it into `node_modules/` at the repository root; a global
install on PATH works too. A missing Azurite is an error, not a skip: the Azure backend must be
tested wherever the suite runs.

`session_azurite` starts one server for the whole test session (each module's `azurite` fixture
asks for it, and uses containers of its own); it is stopped when pytest exits.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.emulators import log_tail, stop_group
from tests.vault_process import ROOT, free_port
from tests.waiting import NotReached, wait_until

# Azurite's fixed development account; its key is public (documented by Microsoft).
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
START_TIMEOUT_SECONDS = 30.0


def find_binary() -> str:
    """The blob-only Azurite launcher (one port, less start-up), or the full one."""
    for name in ("azurite-blob", "azurite"):
        local = ROOT / "node_modules" / ".bin" / name
        if local.exists():
            return str(local)
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError(
        "Azurite is not installed: run `bash scripts/install-azurite.sh` "
        "(npm install azurite@3 into node_modules/) to run the Azure backend tests"
    )


@dataclass
class Azurite:
    """One Azurite blob service on a free loopback port, its data under `location`."""

    location: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    binary: str = field(default_factory=find_binary)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{ACCOUNT}"

    @property
    def connection_string(self) -> str:
        return (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
                f"BlobEndpoint={self.endpoint};")

    @property
    def log_path(self) -> Path:
        return self.location.parent / f"{self.location.name}-azurite.log"

    def env(self, container: str) -> dict[str, str]:
        """vaultd settings (environment) for this Azurite and `container`."""
        return {
            "VAULTD_STORAGE_BACKEND": "azure",
            "VAULTD_AZURE_CONNECTION_STRING": self.connection_string,
            "VAULTD_AZURE_CONTAINER": container,
        }

    def start(self) -> Azurite:
        """Start (or restart on the same port, with the same data)."""
        self.location.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        cmd = [self.binary, "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
               "--location", str(self.location), "--silent", "--skipApiVersionCheck", "--loose",
               "--disableTelemetry"]
        if Path(self.binary).name == "azurite":
            # The full launcher also starts queue and table services: keep them off fixed ports.
            cmd += ["--queuePort", str(free_port()), "--tablePort", str(free_port())]
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps its own descriptor
        self.process = subprocess.Popen(cmd, cwd=self.location, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        try:
            wait_until(self._answers, timeout=START_TIMEOUT_SECONDS, interval=0.1,
                       what="Azurite answering")
        except NotReached:
            self.stop()
            raise RuntimeError(
                f"Azurite did not answer on port {self.port}:\n{self._log_tail()}") from None

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"Azurite exited early:\n{self._log_tail()}")
        try:
            # Any HTTP answer (Azurite says 400 or 403 to an anonymous listing) means ready.
            httpx.get(f"{self.endpoint}?comp=list", timeout=1)
        except httpx.HTTPError:
            return False
        return True

    def _log_tail(self) -> str:
        return log_tail(self.log_path)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM (Azurite saves its metadata on a clean shutdown), then SIGKILL."""
        process, self.process = self.process, None
        stop_group(process, timeout)


@contextmanager
def running_azurite(location: Path) -> Iterator[Azurite]:
    server = Azurite(location).start()
    try:
        yield server
    finally:
        server.stop()


_SESSION: dict[str, Azurite] = {}


def session_azurite(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Azurite:
    """The session's Azurite, started on first use and stopped at the end of the session."""
    if "server" not in _SESSION:
        _SESSION["server"] = Azurite(tmp_path_factory.mktemp("azurite") / "data").start()
        config.add_cleanup(_stop_session_azurite)
    return _SESSION["server"]


def _stop_session_azurite() -> None:
    _SESSION.pop("server").stop()
