"""Azure Blob Storage backend: azure-storage-blob's async client in the server, the sync client
in render workers.

Uploads are block blobs written as staged blocks: a writer buffers ciphertext and stages a block
whenever `block_size` bytes (a few MiB: hundreds of 16 KiB encrypted chunks) have accumulated;
`commit` stages the tail and commits the block list in one request. Nothing is visible under the
name before that, and an aborted upload leaves only uncommitted blocks, which Azure discards by
itself. Reads are ranged downloads, so a page render fetches only the chunks it needs.

Transient failures are retried by the SDK's retry policy with a short exponential backoff; what
is still failing after that (storage unreachable, 5xx, throttling) is `BackendUnavailable`, which
the HTTP layer answers with a JSON 503. Nothing here caches state that could go stale: the next
request after an outage simply succeeds.
"""

from __future__ import annotations

import asyncio
import io
import logging
import random
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from azure.core.exceptions import (
    AzureError,
    HttpResponseError,
    ResourceExistsError,
    ResourceNotFoundError,
)
from azure.storage.blob import BlobBlock
from azure.storage.blob import BlobServiceClient as SyncServiceClient
from azure.storage.blob import ContainerClient as SyncContainerClient
from azure.storage.blob import ExponentialRetry as SyncExponentialRetry
from azure.storage.blob.aio import BlobServiceClient, ContainerClient
from azure.storage.blob.aio import ExponentialRetry as AsyncExponentialRetry

from backends.base import BackendUnavailable, BlobRef
from vaultd.config import ConfigError

if TYPE_CHECKING:
    from vaultd.config import Settings

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


class _SyncRetry(SyncExponentialRetry):
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
            raise ConfigError("config: storage.azure.container is invalid: 3-63 lowercase "
                              "letters, digits and single hyphens")
        if not self.connection_string and not self.account_url:
            raise ConfigError("config: storage.backend 'azure' needs "
                              "storage.azure.connection_string (VAULTD_AZURE_CONNECTION_STRING) "
                              "or storage.azure.account_url (VAULTD_AZURE_ACCOUNT_URL)")
        if self.needs_identity:
            _identity_module()  # fail at start-up, not at the first request
        return self

    @property
    def needs_identity(self) -> bool:
        return not self.connection_string and not urlsplit(self.account_url).query

    def options(self) -> tuple[tuple[str, str], ...]:
        return (("container", self.container), ("connection_string", self.connection_string),
                ("account_url", self.account_url))

    @classmethod
    def from_ref(cls, ref: BlobRef) -> AzureConfig:
        return cls(ref.option("container"), ref.option("connection_string"),
                   ref.option("account_url"))


def _identity_module(aio: bool = False) -> Any:
    try:
        if aio:
            import azure.identity.aio as identity
        else:
            from azure import identity
    except ImportError:
        raise ConfigError("config: storage.azure.account_url without a SAS token authenticates "
                          "with Azure AD: pip install azure-identity") from None
    return identity


@contextmanager
def _config_errors() -> Iterator[None]:
    try:
        yield
    except ValueError:
        # The SDK's message may quote the value, which holds the account key: name the setting.
        raise ConfigError("config: storage.azure.connection_string or account_url is "
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


class AzureBlobWriter:
    """Staged blocks, committed once. A writer owns its name: two writers must not share one
    (committing discards every other uncommitted block of that blob, as Azure does)."""

    def __init__(self, backend: AzureBackend, name: str) -> None:
        self._backend = backend
        self._name = name
        self._blob = backend.container.get_blob_client(name)
        self._prefix = uuid.uuid4().hex  # block ids unique to this writer, all the same length
        self._blocks: list[str] = []
        self._buffer = bytearray()
        self._size = 0
        self._state = "open"  # open -> committed | aborted; "uncertain" if commit may have landed

    def _check_open(self) -> None:
        if self._state != "open":
            raise ValueError(f"blob writer for {self._name} is {self._state}")

    async def write(self, data: bytes) -> None:
        self._check_open()
        self._buffer += data
        self._size += len(data)
        if len(self._buffer) >= self._backend.block_size:
            await self._stage()

    async def _stage(self) -> None:
        block_id = f"{self._prefix}-{len(self._blocks):06d}"
        await self._backend.ready()
        with _translated(self._name):
            # A stream, not bytes: aiohttp refuses (warns about) multi-MiB bytes bodies, which
            # it would write to the socket in one go, stalling the event loop.
            await self._blob.stage_block(block_id, io.BytesIO(self._buffer),
                                         length=len(self._buffer))
        self._blocks.append(block_id)
        self._buffer.clear()

    async def commit(self) -> int:
        self._check_open()
        try:
            if self._buffer:
                await self._stage()
            await self._backend.ready()
            self._state = "uncertain"
            with _translated(self._name):
                await self._blob.commit_block_list([BlobBlock(block) for block in self._blocks])
        except BaseException:
            if self._state == "open":
                self._state = "aborted"
            raise
        self._state = "committed"
        self._buffer = bytearray()
        return self._size

    async def abort(self) -> None:
        state, self._buffer = self._state, bytearray()
        if state in ("committed", "aborted"):
            return
        self._state = "aborted"
        if state == "uncertain":
            # The commit request failed without an answer: it may have landed. Best effort only;
            # a blob left behind is an orphan that `vault-admin storage gc` removes.
            try:
                await self._backend.delete(self._name)
            except (BackendUnavailable, OSError):
                log.warning("could not remove blob %s after a failed commit", self._name)


class AzureBackend:
    """Blobs in one Azure container (created when missing)."""

    name = "azure"

    def __init__(self, config: AzureConfig, block_size: int = BLOCK_SIZE) -> None:
        self.config = config.check()
        self.block_size = block_size
        self._credential: Any = None
        self._service = self._make_service()
        self.container: ContainerClient = self._service.get_container_client(config.container)
        self._container_ready = False
        self._lock = asyncio.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> AzureBackend:
        return cls(AzureConfig(
            container=settings.storage_azure_container,
            connection_string=settings.storage_azure_connection_string,
            account_url=settings.storage_azure_account_url,
        ))

    def _make_service(self) -> BlobServiceClient:
        options = _client_options(_AsyncRetry(retry_total=RETRY_TOTAL))
        with _config_errors():
            if self.config.connection_string:
                return BlobServiceClient.from_connection_string(self.config.connection_string,
                                                                **options)
            if self.config.needs_identity:
                self._credential = _identity_module(aio=True).DefaultAzureCredential()
            return BlobServiceClient(self.config.account_url, credential=self._credential,
                                     **options)

    async def start(self) -> None:
        """Create the container when missing. BackendUnavailable if storage is unreachable;
        every other call does this first too, so a process started during an outage recovers."""
        await self.ready()

    async def ready(self) -> None:
        if self._container_ready:
            return
        async with self._lock:
            if not self._container_ready:
                await self._ensure_container()
                self._container_ready = True

    async def _ensure_container(self) -> None:
        with _translated(None):
            try:
                await self.container.get_container_properties()
                return
            except ResourceNotFoundError:
                pass
            try:
                await self.container.create_container()
                log.info("created Azure container %s", self.config.container)
            except ResourceExistsError:
                pass  # another vaultd process created it first

    async def open_writer(self, name: str) -> AzureBlobWriter:
        # No request yet: an upload meets storage trouble when its first block is staged.
        return AzureBlobWriter(self, _check_name(name))

    async def read_range(self, name: str, offset: int, length: int) -> bytes:
        blob = self.container.get_blob_client(_check_name(name))
        await self.ready()
        if length <= 0:
            await self.size(name)  # FileNotFoundError when missing, like a read would
            return b""
        with _translated(name):
            try:
                downloader = await blob.download_blob(offset=offset, length=length)
                return await downloader.readall()
            except HttpResponseError as exc:
                if _is_invalid_range(exc):  # at or past the end
                    return b""
                raise

    async def size(self, name: str) -> int:
        blob = self.container.get_blob_client(_check_name(name))
        await self.ready()
        with _translated(name):
            return int((await blob.get_blob_properties()).size)

    async def delete(self, name: str) -> bool:
        blob = self.container.get_blob_client(_check_name(name))
        await self.ready()
        try:
            with _translated(name):
                await blob.delete_blob()
            return True
        except FileNotFoundError:
            return False

    async def exists(self, name: str) -> bool:
        blob = self.container.get_blob_client(_check_name(name))
        await self.ready()
        with _translated(name):
            return bool(await blob.exists())

    async def list_names(self) -> list[tuple[str, float]]:
        await self.ready()
        with _translated(None):
            return [(item.name, item.last_modified.timestamp())
                    async for item in self.container.list_blobs()]

    def ref(self, name: str) -> BlobRef:
        return BlobRef("azure", self.config.options(), _check_name(name))

    async def close(self) -> None:
        await self._service.close()
        if self._credential is not None:
            await self._credential.close()


# --- worker processes: the sync client, one per process and configuration ----------------------

_SYNC_CONTAINERS: dict[AzureConfig, SyncContainerClient] = {}
_SYNC_LOCK = threading.Lock()


def _sync_container(config: AzureConfig) -> SyncContainerClient:
    # A worker renders many pages: keep one client (and its connection pool) per process.
    with _SYNC_LOCK:
        client = _SYNC_CONTAINERS.get(config)
        if client is None:
            options = _client_options(_SyncRetry(retry_total=RETRY_TOTAL))
            with _config_errors():
                if config.connection_string:
                    service = SyncServiceClient.from_connection_string(
                        config.connection_string, **options)
                else:
                    credential = (_identity_module().DefaultAzureCredential()
                                  if config.needs_identity else None)
                    service = SyncServiceClient(config.account_url, credential=credential,
                                                **options)
            client = _SYNC_CONTAINERS[config] = service.get_container_client(config.container)
        return client


class AzureSyncReader:
    """Ranged downloads of one committed blob (used inside render workers)."""

    def __init__(self, container: SyncContainerClient, name: str) -> None:
        self._name = name
        self._blob = container.get_blob_client(name)
        with _translated(name):
            self.size = int(self._blob.get_blob_properties().size)

    def read_at(self, offset: int, length: int) -> bytes:
        if length <= 0 or offset >= self.size:
            return b""
        with _translated(self._name):
            try:
                return bytes(self._blob.download_blob(offset=offset, length=length).readall())
            except HttpResponseError as exc:
                if _is_invalid_range(exc):
                    return b""
                raise

    def exists(self) -> bool:
        with _translated(self._name):
            return bool(self._blob.exists())

    def close(self) -> None:
        return None  # the container client is shared by every reader of this process


def open_reader(ref: BlobRef) -> AzureSyncReader:
    return AzureSyncReader(_sync_container(AzureConfig.from_ref(ref)), _check_name(ref.name))
