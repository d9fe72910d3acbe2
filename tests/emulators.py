"""What the storage emulators the tests run (Azurite, moto's S3 server) share: a child process in
a session of its own on a free loopback port, started and waited for until it answers HTTP, the
end of its log for a failure message, a stop of its whole process group, and one server per
test session."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Self, TypeVar, cast

import httpx
import pytest

from tests.vault_process import free_port
from tests.waiting import NotReached, wait_until

START_TIMEOUT_SECONDS = 30.0


def log_tail(log_path: Path) -> str:
    return log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""


def stop_group(process: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """SIGTERM to the emulator's session (it saves its state on a clean stop), then SIGKILL."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)


@dataclass
class EmulatorProcess:
    """One emulator on a free loopback port, working in `location`. A kind supplies its `label`,
    its command line, the URL that answers once it is ready and where its log goes."""

    location: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    label: ClassVar[str] = "emulator"

    def command(self) -> list[str]:
        raise NotImplementedError

    @property
    def probe_url(self) -> str:
        raise NotImplementedError

    @property
    def log_path(self) -> Path:
        raise NotImplementedError

    def start(self) -> Self:
        """Start (or restart on the same port) and wait until it answers."""
        self.location.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps its own descriptor
        self.process = subprocess.Popen(self.command(), cwd=self.location, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        try:
            wait_until(self._answers, timeout=START_TIMEOUT_SECONDS, interval=0.1,
                       what=f"{self.label} answering")
        except NotReached:
            self.stop()
            raise RuntimeError(f"{self.label} did not answer on port {self.port}:\n"
                               f"{log_tail(self.log_path)}") from None
        return self

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"{self.label} exited early:\n{log_tail(self.log_path)}")
        try:
            httpx.get(self.probe_url, timeout=1)  # any HTTP answer means ready
        except httpx.HTTPError:
            return False
        return True

    def stop(self, timeout: float = 15.0) -> None:
        process, self.process = self.process, None
        stop_group(process, timeout)


Emulator = TypeVar("Emulator", bound=EmulatorProcess)
_SESSION: dict[type[EmulatorProcess], EmulatorProcess] = {}


def session_emulator(config: pytest.Config, kind: type[Emulator],
                     make: Callable[[], Emulator]) -> Emulator:
    """The session's emulator of `kind`, made and started on first use and stopped when the
    session ends; each test module keeps to containers or buckets of its own."""
    if kind not in _SESSION:
        _SESSION[kind] = make().start()
        config.add_cleanup(lambda: _SESSION.pop(kind).stop())
    return cast(Emulator, _SESSION[kind])
