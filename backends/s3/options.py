"""S3 backend: where the blobs live (`S3Config`), the client's retries and timeouts, and botocore
errors translated into the backend interface's (FileNotFoundError, BackendUnavailable).

Credentials are never settings of vaultd: the client finds them through the standard AWS chain
(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, a container or instance role).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiobotocore.config import AioConfig
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from backends.base import BackendConfigError, BackendUnavailable

log = logging.getLogger("vaultd.backends.s3")
# botocore logs every request's headers at DEBUG, a session token (X-Amz-Security-Token) among
# them: keep the SDK's loggers out of vaultd's log below WARNING, whatever log_level says.
for _sdk in ("botocore", "aiobotocore"):
    logging.getLogger(_sdk).setLevel(logging.WARNING)

PART_SIZE = 8 << 20  # bytes per uploaded part: S3 needs at least 5 MiB for all but the last
# A live writer sends a part only every PART_SIZE bytes, so a slow upload's newest part can be
# minutes old: the sweep leaves every upload alone until it has been this long without a part.
STALE_UPLOAD_SECONDS = 3600.0
TOTAL_ATTEMPTS = 3  # the first and two retries: a dead endpoint fails within a few seconds
CONNECT_TIMEOUT_SECONDS = 2
READ_TIMEOUT_SECONDS = 20
ADDRESSING_STYLES = ("virtual", "path")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
_BUCKET = re.compile(r"^(?!.*\.\.)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_PREFIX = re.compile(r"^(?:[A-Za-z0-9._-]+/){0,10}$")
_REGION = re.compile(r"^[a-z0-9-]{0,40}$")
_MISSING_KEY = {"404", "NoSuchKey", "NotFound"}


def _check_name(name: str) -> str:
    # The same names as the local backend, so migrating between them never meets a surprise.
    if not _NAME.match(name):
        raise ValueError(f"invalid blob name {name!r}")
    return name


@dataclass(frozen=True)
class S3Config:
    """Where the blobs live: a bucket (created when missing) and a key prefix in it, on AWS or
    on any S3-compatible endpoint."""

    bucket: str
    prefix: str = ""
    region: str = ""
    endpoint_url: str = ""
    addressing_style: str = "virtual"

    def check(self) -> S3Config:
        if not self.bucket:
            raise BackendConfigError("config: storage.backend 's3' needs storage.s3.bucket "
                                     "(VAULTD_S3_BUCKET)")
        if not _BUCKET.match(self.bucket):
            raise BackendConfigError("config: storage.s3.bucket is invalid: 3-63 lowercase "
                                     "letters, digits, dots and hyphens")
        if not _PREFIX.match(self.prefix):
            raise BackendConfigError("config: storage.s3.prefix is invalid: empty, or folder "
                                     "names of letters, digits, '.', '_', '-', each ending in "
                                     "'/' (e.g. vaultd/)")
        if not _REGION.match(self.region):
            raise BackendConfigError("config: storage.s3.region is invalid: lowercase letters, "
                                     "digits and hyphens (e.g. eu-west-1)")
        if self.endpoint_url and not _is_http_url(self.endpoint_url):
            raise BackendConfigError("config: storage.s3.endpoint_url is invalid: an http:// or "
                                     "https:// URL without user or password")
        if self.addressing_style not in ADDRESSING_STYLES:
            raise BackendConfigError("config: storage.s3.addressing_style must be virtual or "
                                     "path")
        return self

    def key(self, name: str) -> str:
        return self.prefix + _check_name(name)

    def client_config(self) -> AioConfig:
        # "when_required": S3-compatible stores that lack the newer default CRC checksums
        # (aws-chunked uploads) still work; blobs are authenticated by vaultd's own AES-GCM.
        return AioConfig(
            s3={"addressing_style": self.addressing_style},
            retries={"total_max_attempts": TOTAL_ATTEMPTS, "mode": "standard"},
            connect_timeout=CONNECT_TIMEOUT_SECONDS, read_timeout=READ_TIMEOUT_SECONDS,
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required")


def _is_http_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.hostname) and \
        parts.username is None and parts.password is None


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


@contextmanager
def translated(name: str | None) -> Iterator[None]:
    """botocore errors as the backend interface's: FileNotFoundError or BackendUnavailable."""
    try:
        yield
    except ClientError as exc:
        code = error_code(exc)
        if code == "NoSuchBucket":
            log.warning("S3 bucket missing")
            raise BackendUnavailable("storage bucket is missing") from None
        if code in _MISSING_KEY and name is not None:
            raise FileNotFoundError(f"blob {name} not found") from None
        # Refused, throttled or 5xx after the retries. Kind and code only: never a URL.
        log.warning("S3 storage unavailable: %s (%s)", type(exc).__name__, code)
        raise BackendUnavailable(f"storage unavailable ({code})") from None
    except NoCredentialsError:
        log.warning("S3 storage unavailable: no AWS credentials found (AWS_ACCESS_KEY_ID and "
                    "AWS_SECRET_ACCESS_KEY, a profile or an instance role)")
        raise BackendUnavailable("storage unavailable (no credentials)") from None
    except BotoCoreError as exc:
        log.warning("S3 storage unavailable: %s", type(exc).__name__)
        raise BackendUnavailable(f"storage unavailable ({type(exc).__name__})") from None
