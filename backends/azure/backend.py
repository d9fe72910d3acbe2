"""Azure backend in the server process: azure-storage-blob's async client."""

from __future__ import annotations

import asyncio
import io
import uuid
from typing import Any

from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.storage.blob import BlobBlock
from azure.storage.blob.aio import BlobServiceClient, ContainerClient

from backends.azure.options import (
    BLOCK_SIZE,
    RETRY_TOTAL,
    AzureConfig,
    _AsyncRetry,
    _check_name,
    _client_options,
    _config_errors,
    _identity_module,
    _is_invalid_range,
    _translated,
    log,
)
from backends.base import PartWriter


class AzureBlobWriter(PartWriter):
    """Staged blocks, a block per `block_size` bytes and the tail, committed once (`PartWriter`;
    not a Put Blob for small blobs: the SDK would send its body as bytes, stalling the loop). A
    writer owns its name: two writers must not share one (committing discards every other
    uncommitted block of that blob, as Azure does)."""

    def __init__(self, backend: AzureBackend, name: str) -> None:
        super().__init__(backend, name, backend.block_size)
        self._backend = backend
        self._blob = backend.container.get_blob_client(name)
        self._prefix = uuid.uuid4().hex  # block ids unique to this writer, all the same length
        self._blocks: list[str] = []

    async def _send_part(self, data: bytes) -> None:
        block_id = f"{self._prefix}-{len(self._blocks):06d}"
        await self._backend.ready()
        with _translated(self._name):
            # A stream, not bytes: aiohttp refuses (warns about) multi-MiB bytes bodies, which
            # it would write to the socket in one go, stalling the event loop.
            await self._blob.stage_block(block_id, io.BytesIO(data), length=len(data))
        self._blocks.append(block_id)

    async def _connect(self) -> None:
        await self._backend.ready()

    async def _complete(self, whole: bytes) -> None:
        with _translated(self._name):
            await self._blob.commit_block_list([BlobBlock(block) for block in self._blocks])

    async def _discard_parts(self) -> None:
        """Nothing to do: Azure drops uncommitted blocks by itself (after 7 days)."""


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

    async def sweep_temporaries(self, older_than_seconds: float) -> int:
        """Nothing to sweep: Azure discards uncommitted blocks by itself (after 7 days)."""
        return 0

    async def close(self) -> None:
        await self._service.close()
        if self._credential is not None:
            await self._credential.close()


