"""Azure Blob Storage backend: azure-storage-blob's async client, in the server process.

Uploads are block blobs written as staged blocks (`backends.base.PartWriter`): a writer buffers
ciphertext and stages a block whenever `block_size` bytes (a few MiB: hundreds of 16 KiB encrypted
chunks) have accumulated; `commit` stages the tail and commits the block list in one request.
Nothing is visible under the name before that, and an aborted upload leaves only uncommitted blocks,
which Azure discards by itself. Reads are ranged downloads, so a page render fetches only the chunks
it needs.

Transient failures are retried by the SDK's retry policy with a short exponential backoff; what
is still failing after that (storage unreachable, 5xx, throttling) is `BackendUnavailable`, which
the HTTP layer answers with a JSON 503. Nothing here caches state that could go stale: the next
request after an outage simply succeeds.
"""

from __future__ import annotations

from collections.abc import Mapping

from backends.azure.backend import AzureBackend, AzureBlobWriter
from backends.azure.options import AzureConfig


def create(options: Mapping[str, str]) -> AzureBackend:
    """The backend factory (`backends.BackendModule`): `storage.azure.*` settings by name."""
    return AzureBackend(AzureConfig(
        container=options.get("container", ""),
        connection_string=options.get("connection_string", ""),
        account_url=options.get("account_url", ""),
    ))


__all__ = ["AzureBackend", "AzureBlobWriter", "AzureConfig", "create"]
