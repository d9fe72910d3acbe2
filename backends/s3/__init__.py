"""S3 (and S3-compatible) object storage backend: aiobotocore's async client.

Uploads stream (`backends.base.PartWriter`): a writer buffers ciphertext and sends a part of a
multipart upload whenever `part_size` bytes (8 MiB: S3 wants at least 5 MiB for every part but the
last) have accumulated; `commit` sends the tail and completes the upload in one request. A blob
smaller than one part is a single PUT. Nothing is visible under the name before that. An aborted
writer aborts its multipart upload; one left behind by a dead process is aborted by
`sweep_temporaries`. Reads are ranged GETs, so a page render fetches only the chunks it needs.

Transient failures are retried by botocore's standard retry mode (three attempts in all); what
still fails after that is `BackendUnavailable`, which the HTTP layer answers with a JSON 503.
Credentials come from the standard AWS chain, never from vaultd's settings.
"""

from __future__ import annotations

from collections.abc import Mapping

from backends.s3.backend import S3Backend, S3BlobWriter
from backends.s3.options import S3Config


def create(options: Mapping[str, str]) -> S3Backend:
    """The backend factory (`backends.BackendModule`): `storage.s3.*` settings by name."""
    return S3Backend(S3Config(
        bucket=options.get("bucket", ""),
        prefix=options.get("prefix", ""),
        region=options.get("region", ""),
        endpoint_url=options.get("endpoint_url", ""),
        addressing_style=options.get("addressing_style", "virtual"),
    ))


__all__ = ["S3Backend", "S3BlobWriter", "S3Config", "create"]
