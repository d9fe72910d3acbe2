"""Azure backend in render workers: the sync client, one per process and configuration."""

from __future__ import annotations

import threading

from azure.core.exceptions import HttpResponseError
from azure.storage.blob import BlobServiceClient as SyncServiceClient
from azure.storage.blob import ContainerClient as SyncContainerClient

from backends.azure.options import (
    RETRY_TOTAL,
    AzureConfig,
    _check_name,
    _client_options,
    _config_errors,
    _identity_module,
    _is_invalid_range,
    _SyncRetry,
    _translated,
)
from backends.base import BlobRef

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
