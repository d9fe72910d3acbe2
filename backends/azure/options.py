"""Azure backend: where the blobs live (`AzureConfig`), the SDK clients' retry and timeouts, and
SDK errors translated into the backend interface's (FileNotFoundError, BackendUnavailable)."""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from azure.core.exceptions import AzureError, HttpResponseError, ResourceNotFoundError
from azure.storage.blob.aio import ExponentialRetry as AsyncExponentialRetry

from backends.base import BackendConfigError, BackendUnavailable

log = logging.getLogger("vaultd.backends.azure")

BLOCK_SIZE = 4 << 20  # bytes per staged block: 256 encrypted chunks
RETRY_TOTAL = 3  # retries after the first attempt
BACKOFF_SECONDS = 0.2  # doubled on each retry: 0.2, 0.4, 0.8 (+ jitter)
CONNECT_TIMEOUT_SECONDS = 2
READ_TIMEOUT_SECONDS = 20

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
_CONTAINER = re.compile(r"^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")


def _check_name(name: str) -> str:
    # The same names as the local backend, so migrating between them never meets a surprise.
    if not _NAME.match(name):
        raise ValueError(f"invalid blob name {name!r}")
    return name


def _backoff(count: int) -> float:
    return BACKOFF_SECONDS * 2.0 ** max(count - 1, 0) + random.uniform(0, BACKOFF_SECONDS / 2)


class _AsyncRetry(AsyncExponentialRetry):
    def get_backoff_time(self, settings: dict[str, Any]) -> float:
        return _backoff(int(settings["count"]))


# The SDK logs every request and response at INFO: keep that out of vaultd's log unless asked.
_http_log = logging.getLogger("vaultd.backends.azure.http")
_http_log.setLevel(logging.WARNING)


def _client_options(retry: Any) -> dict[str, Any]:
    # Short enough that a request fails within a few seconds when storage is down.
    return {"retry_policy": retry, "connection_timeout": CONNECT_TIMEOUT_SECONDS,
            "read_timeout": READ_TIMEOUT_SECONDS, "logger": _http_log}


@dataclass(frozen=True)
class AzureConfig:
    """Where the blobs live: a connection string, or an account URL (with a SAS token in its
    query, or else an Azure AD identity through azure-identity), and the container."""

    container: str
    # Secrets (an account key, a SAS token): never in a repr.
    connection_string: str = field(default="", repr=False)
    account_url: str = field(default="", repr=False)

    def check(self) -> AzureConfig:
        if not _CONTAINER.match(self.container):
            raise BackendConfigError("config: storage.azure.container is invalid: 3-63 "
                                     "lowercase letters, digits and single hyphens")
        if not self.connection_string and not self.account_url:
            raise BackendConfigError(
                "config: storage.backend 'azure' needs storage.azure.connection_string "
                "(VAULTD_AZURE_CONNECTION_STRING) or storage.azure.account_url "
                "(VAULTD_AZURE_ACCOUNT_URL)")
        if self.needs_identity:
            _identity_module()  # fail at start-up, not at the first request
        return self

    @property
    def needs_identity(self) -> bool:
        return not self.connection_string and not urlsplit(self.account_url).query

def _identity_module(aio: bool = False) -> Any:
    try:
        if aio:
            import azure.identity.aio as identity
        else:
            from azure import identity
    except ImportError:
        raise BackendConfigError("config: storage.azure.account_url without a SAS token "
                                 "authenticates with Azure AD: pip install azure-identity"
                                 ) from None
    return identity


@contextmanager
def _config_errors() -> Iterator[None]:
    try:
        yield
    except ValueError:
        # The SDK's message may quote the value, which holds the account key: name the setting.
        raise BackendConfigError("config: storage.azure.connection_string or account_url is "
                                 "malformed") from None


@contextmanager
def _translated(name: str | None) -> Iterator[None]:
    """SDK errors as the backend interface's: FileNotFoundError or BackendUnavailable."""
    try:
        yield
    except ResourceNotFoundError as exc:
        if getattr(exc, "error_code", None) == "ContainerNotFound" or name is None:
            log.warning("Azure container missing")
            raise BackendUnavailable("storage container is missing") from None
        raise FileNotFoundError(f"blob {name} not found") from None
    except AzureError as exc:
        # Still failing after the retry policy: unreachable, 5xx, throttled or refused. The
        # message names the kind and status only; SDK messages can carry URLs with SAS tokens.
        status = getattr(exc, "status_code", None)
        log.warning("Azure storage unavailable: %s%s", type(exc).__name__,
                    f" (HTTP {status})" if status else "")
        raise BackendUnavailable(f"storage unavailable ({type(exc).__name__})") from None


def _is_invalid_range(exc: HttpResponseError) -> bool:
    return exc.status_code == 416


