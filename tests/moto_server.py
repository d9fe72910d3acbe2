"""moto's S3 server as a real child process for tests (`moto_server` on loopback).

moto comes with the test extra (`moto[server]`). It keeps everything in memory: a restarted
server is empty. `session_moto` starts one server for the whole test session; each test module
uses buckets of its own. Credentials are the standard AWS variables (moto accepts any), with
every other source of the AWS chain switched off, so nothing reaches beyond loopback.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from backends.s3 import S3Backend, S3Config
from tests.emulators import EmulatorProcess, session_emulator

REGION = "us-east-1"
# Not secrets (moto accepts anything), but tests check they never reach a log or a worker.
ACCESS_KEY_ID = "AKIAVAULTDTESTKEY000"
SECRET_ACCESS_KEY = "vaultd-test-secret-access-key-not-for-logs"

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
class MotoServer(EmulatorProcess):
    """One moto S3 server on a free loopback port; its log in `location`. A restart empties it
    (moto keeps everything in memory)."""

    label: ClassVar[str] = "moto_server"

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

    @property
    def probe_url(self) -> str:
        return f"{self.endpoint}/"

    def command(self) -> list[str]:
        return [find_binary(), "-H", "127.0.0.1", "-p", str(self.port)]


@contextmanager
def aws_credentials() -> Iterator[None]:
    """The AWS variables in this process, for backends a test opens itself; restored after."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in AWS_ENV.items():
            patch.setenv(name, value)
        yield


def session_moto(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> MotoServer:
    """The session's moto server, started on first use and stopped at the end of the session."""
    return session_emulator(config, MotoServer, lambda: MotoServer(tmp_path_factory.mktemp("moto")))
