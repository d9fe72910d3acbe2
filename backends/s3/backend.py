"""S3 backend in the server process: aiobotocore's client."""

from __future__ import annotations

import asyncio
import io
import time
from typing import Any

from aiobotocore.session import get_session
from botocore.exceptions import ClientError

from backends.base import PartWriter
from backends.s3.options import (
    PART_SIZE,
    STALE_UPLOAD_SECONDS,
    S3Config,
    _check_name,
    error_code,
    log,
    translated,
)

_BUCKET_EXISTS = {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}


class S3BlobWriter(PartWriter):
    """A single PUT for a blob smaller than one part; otherwise a multipart upload, a part per
    `part_size` bytes, completed once (`PartWriter`)."""

    puts_small_blobs_whole = True

    def __init__(self, backend: S3Backend, name: str) -> None:
        super().__init__(backend, name, backend.part_size)
        self._backend = backend
        self._key = backend.config.key(name)
        self._upload_id = ""
        self._parts: list[dict[str, Any]] = []

    async def _send_part(self, data: bytes) -> None:
        client = await self._backend.client()
        with translated(self._name):
            if not self._upload_id:
                created = await client.create_multipart_upload(
                    Bucket=self._backend.config.bucket, Key=self._key)
                self._upload_id = created["UploadId"]
            number = len(self._parts) + 1
            # A stream, not bytes: aiohttp warns about (and writes in one go) multi-MiB bytes.
            answer = await client.upload_part(
                Bucket=self._backend.config.bucket, Key=self._key, UploadId=self._upload_id,
                PartNumber=number, Body=io.BytesIO(data), ContentLength=len(data))
        self._parts.append({"ETag": answer["ETag"], "PartNumber": number})

    async def _connect(self) -> None:
        await self._backend.client()

    async def _complete(self, whole: bytes) -> None:
        client, bucket = await self._backend.client(), self._backend.config.bucket
        with translated(self._name):
            if self._upload_id:
                await client.complete_multipart_upload(
                    Bucket=bucket, Key=self._key, UploadId=self._upload_id,
                    MultipartUpload={"Parts": self._parts})
            else:
                await client.put_object(Bucket=bucket, Key=self._key, Body=io.BytesIO(whole),
                                        ContentLength=len(whole))

    async def _discard_parts(self) -> None:
        if self._upload_id:  # an upload left open is otherwise aborted by sweep_temporaries
            await self._backend.abort_upload(self._key, self._upload_id)


class S3Backend:
    """Blobs as objects `prefix + name` in one bucket (created when missing)."""

    name = "s3"

    def __init__(self, config: S3Config, part_size: int = PART_SIZE,
                 stale_upload_seconds: float = STALE_UPLOAD_SECONDS) -> None:
        self.config = config.check()
        self.part_size = part_size
        self.stale_upload_seconds = stale_upload_seconds
        self._client: Any = None
        self._context: Any = None
        self._bucket_ready = False
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Create the bucket when missing. BackendUnavailable if storage is unreachable; every
        other call does this first too, so a process started during an outage recovers."""
        await self.client()

    async def client(self) -> Any:
        """The client, once the bucket is known to exist."""
        if self._bucket_ready:
            return self._client
        async with self._lock:
            if self._client is None:
                self._context = get_session().create_client(
                    "s3", region_name=self.config.region or None,
                    endpoint_url=self.config.endpoint_url or None,
                    config=self.config.client_config())
                with translated(None):
                    self._client = await self._context.__aenter__()
            if not self._bucket_ready:
                await self._ensure_bucket()
                self._bucket_ready = True
        return self._client

    async def _ensure_bucket(self) -> None:
        bucket = self.config.bucket
        with translated(None):
            try:
                await self._client.head_bucket(Bucket=bucket)
                return
            except ClientError as exc:
                if error_code(exc) not in ("404", "NoSuchBucket", "NotFound"):
                    raise
            region = self._client.meta.region_name
            where = ({} if region in (None, "us-east-1")
                     else {"CreateBucketConfiguration": {"LocationConstraint": region}})
            try:
                await self._client.create_bucket(Bucket=bucket, **where)
                log.info("created S3 bucket %s", bucket)
            except ClientError as exc:
                if error_code(exc) not in _BUCKET_EXISTS:  # another vaultd created it first
                    raise

    async def open_writer(self, name: str) -> S3BlobWriter:
        # No request yet: an upload meets storage trouble when its first part is sent.
        return S3BlobWriter(self, _check_name(name))

    async def read_range(self, name: str, offset: int, length: int) -> bytes:
        key, client = self.config.key(name), await self.client()
        if length <= 0:
            await self.size(name)  # FileNotFoundError when missing, like a read would
            return b""
        with translated(name):
            try:
                answer = await client.get_object(Bucket=self.config.bucket, Key=key,
                                                 Range=f"bytes={offset}-{offset + length - 1}")
            except ClientError as exc:
                if error_code(exc) == "InvalidRange":  # at or past the end
                    return b""
                raise
            async with answer["Body"] as body:
                return bytes(await body.read())

    async def size(self, name: str) -> int:
        key, client = self.config.key(name), await self.client()
        with translated(name):
            head = await client.head_object(Bucket=self.config.bucket, Key=key)
        return int(head["ContentLength"])

    async def delete(self, name: str) -> bool:
        key, client = self.config.key(name), await self.client()
        # S3 deletes whether or not the key exists; the interface reports which it was.
        if not await self.exists(name):
            return False
        with translated(name):
            await client.delete_object(Bucket=self.config.bucket, Key=key)
        return True

    async def exists(self, name: str) -> bool:
        try:
            await self.size(name)
        except FileNotFoundError:
            return False
        return True

    async def list_names(self) -> list[tuple[str, float]]:
        client, prefix = await self.client(), self.config.prefix
        names: list[tuple[str, float]] = []
        # The delimiter keeps keys in deeper "folders" out: only this prefix's own blobs.
        pages = client.get_paginator("list_objects_v2").paginate(
            Bucket=self.config.bucket, Prefix=prefix, Delimiter="/")
        with translated(None):
            async for page in pages:
                names += [(item["Key"].removeprefix(prefix), item["LastModified"].timestamp())
                          for item in page.get("Contents", [])]
        return names

    async def abort_upload(self, key: str, upload_id: str) -> None:
        client = await self.client()
        with translated(None):
            try:
                await client.abort_multipart_upload(Bucket=self.config.bucket, Key=key,
                                                    UploadId=upload_id)
            except ClientError as exc:
                if error_code(exc) != "NoSuchUpload":  # already aborted or completed
                    raise

    async def sweep_temporaries(self, older_than_seconds: float) -> int:
        """Abort multipart uploads left by dead writers: without a new part for at least
        `older_than_seconds`, and never sooner than `stale_upload_seconds` (a live writer's parts
        come only every `part_size` bytes). Their parts are stored, and billed, until aborted."""
        idle = max(older_than_seconds, self.stale_upload_seconds)
        client, cutoff = await self.client(), time.time() - idle
        aborted = 0
        pages = client.get_paginator("list_multipart_uploads").paginate(
            Bucket=self.config.bucket, Prefix=self.config.prefix)
        with translated(None):
            async for page in pages:
                for upload in page.get("Uploads", []):
                    if upload["Initiated"].timestamp() < cutoff and \
                            await self._last_part_time(upload) < cutoff:
                        await self.abort_upload(upload["Key"], upload["UploadId"])
                        aborted += 1
        return aborted

    async def _last_part_time(self, upload: dict[str, Any]) -> float:
        """When the upload's newest part was stored (0 without parts): a live writer adds one
        every `part_size` bytes, so an upload started long ago may still be going."""
        pages = self._client.get_paginator("list_parts").paginate(
            Bucket=self.config.bucket, Key=upload["Key"], UploadId=upload["UploadId"])
        last = 0.0
        async for page in pages:
            for part in page.get("Parts", []):
                last = max(last, part["LastModified"].timestamp())
        return last

    async def close(self) -> None:
        context, self._context, self._client = self._context, None, None
        self._bucket_ready = False
        if context is not None:
            await context.__aexit__(None, None, None)
