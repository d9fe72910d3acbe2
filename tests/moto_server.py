"""moto's S3 server as a real child process for tests (`moto_server` on loopback).

moto comes with the test extra (`moto[server]`). It keeps everything in memory: a restarted
server is empty. `session_moto` starts one server for the whole test session; each test module
uses buckets of its own. Credentials are the standard AWS variables (moto accepts any), with
every other source of the AWS chain switched off, so nothing reaches beyond loopback.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from backends.s3 import S3Backend, S3Config
from tests.emulators import log_tail, stop_group
from tests.vault_process import free_port
from tests.waiting import NotReached, wait_until

REGION = "us-east-1"
# Not secrets (moto accepts anything), but tests check they never reach a log or a worker.
ACCESS_KEY_ID = "AKIAVAULTDTESTKEY000"
SECRET_ACCESS_KEY = "vaultd-test-secret-access-key-not-for-logs"
START_TIMEOUT_SECONDS = 30.0

AWS_ENV = {
    "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
    "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    "AWS_EC2_METADATA_DISABLED": "true",  # never ask 169.254.169.254 for a role
}


def find_binary() -> str:
    local = Path(sys.executable).parent / "moto_server"
    found = str(local) if local.exists() else shutil.which("moto_server")
    if not found:
        raise RuntimeError("moto_server is not installed: pip install -e '.[test]' (moto[server]) "
                           "to run the S3 backend tests")
    return found


@dataclass
class MotoServer:
    """One moto S3 server on a free loopback port; its log beside `location`."""

    location: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self, bucket: str, prefix: str = "") -> S3Config:
        return S3Config(bucket, prefix=prefix, region=REGION, endpoint_url=self.endpoint,
                        addressing_style="path")

    def backend(self, bucket: str, prefix: str = "") -> S3Backend:
        """A backend on this server, from the test process (which needs AWS_ENV set)."""
        return S3Backend(self.config(bucket, prefix))

    def env(self, bucket: str, prefix: str = "") -> dict[str, str]:
        """vaultd settings and AWS credentials (environment) for this server and `bucket`."""
        return {"VAULTD_STORAGE_BACKEND": "s3", "VAULTD_S3_ENDPOINT_URL": self.endpoint,
                "VAULTD_S3_REGION": REGION, "VAULTD_S3_BUCKET": bucket,
                "VAULTD_S3_PREFIX": prefix, "VAULTD_S3_ADDRESSING_STYLE": "path", **AWS_ENV}

    @property
    def log_path(self) -> Path:
        return self.location / "moto-server.log"

    def start(self) -> MotoServer:
        """Start (or restart on the same port: empty again)."""
        self.location.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps its own descriptor
        self.process = subprocess.Popen(
            [find_binary(), "-H", "127.0.0.1", "-p", str(self.port)], stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        try:
            wait_until(self._answers, timeout=START_TIMEOUT_SECONDS, interval=0.1,
                       what="moto_server answering")
        except NotReached:
            self.stop()
            raise RuntimeError(f"moto_server did not answer on port {self.port}:\n"
                               f"{self._log_tail()}") from None
        return self

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"moto_server exited early:\n{self._log_tail()}")
        try:
            httpx.get(f"{self.endpoint}/", timeout=1)  # any HTTP answer means ready
        except httpx.HTTPError:
            return False
        return True

    def _log_tail(self) -> str:
        return log_tail(self.log_path)

    def stop(self, timeout: float = 15.0) -> None:
        process, self.process = self.process, None
        stop_group(process, timeout)


@contextmanager
def aws_credentials() -> Iterator[None]:
    """The AWS variables in this process, for backends a test opens itself; restored after."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in AWS_ENV.items():
            patch.setenv(name, value)
        yield


_SESSION: dict[str, MotoServer] = {}


def session_moto(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> MotoServer:
    """The session's moto server, started on first use and stopped at the end of the session."""
    if "server" not in _SESSION:
        _SESSION["server"] = MotoServer(tmp_path_factory.mktemp("moto")).start()
        config.add_cleanup(_stop_session_moto)
    return _SESSION["server"]


def _stop_session_moto() -> None:
    _SESSION.pop("server").stop()
