"""A locked copy of each signed checkpoint in an S3 bucket with Object Lock (docs/audit.md).

With `audit.copy_bucket` set, a checkpoint is stored marked `copyPending` (an index holds only
the marked ones). This loop, in the process holding the sequencer's lease, writes each marked
checkpoint's signed note to `<prefix><account id>/<size, 20 digits>.checkpoint` with the Object
Lock mode and a retain-until date (its time plus `audit.copy_retention_days`) in the same
request, then unmarks it. A copy that fails (the bucket unreachable or without Object Lock,
credentials refused) is logged and tried again, less often while it keeps failing; it never
holds up sequencing, which is another task. A repeat after a crash between the write and the
unmark writes the same bytes under the same key (a new version of the same note).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from aiobotocore.session import get_session
from botocore.exceptions import BotoCoreError, ClientError
from pymongo.errors import PyMongoError

from backends.s3.options import S3Config, error_code
from vaultd.db import Db
from vaultd.records.audit import AuditCheckpointDoc
from vaultd.services.audit import lease
from vaultd.services.common.periodic import cancel_and_wait
from vaultd.timefmt import utcnow

log = logging.getLogger("vaultd.audit")
PENDING = "copyPending"
LONGEST_WAIT_SECONDS = 300.0  # between attempts while the bucket keeps failing


@dataclass(frozen=True)
class CopyConfig:
    bucket: str
    prefix: str
    mode: str  # COMPLIANCE or GOVERNANCE
    retention_days: int
    region: str = ""
    endpoint_url: str = ""
    addressing_style: str = "virtual"
    poll_seconds: float = 5.0


def object_key(prefix: str, account_id: str, size: int) -> str:
    return f"{prefix}{account_id}/{size:020d}.checkpoint"  # digits: keys list in size order


@dataclass
class LockCopier:
    db: Db
    config: CopyConfig
    holder: str  # this process's lease holder name: only the holder copies
    _context: Any = None
    _client: Any = None
    _task: asyncio.Task[None] | None = None

    async def copy_pending(self) -> int:
        """Writes every checkpoint still marked; the number written."""
        client = await self._open()
        copied = 0
        async for doc in self.db.audit_checkpoints.find({PENDING: True}):
            await self._put(client, doc)
            await self.db.audit_checkpoints.update_one(
                {"_id": doc["_id"]}, {"$unset": {PENDING: ""}, "$set": {"copiedAt": utcnow()}})
            copied += 1
        return copied

    async def _put(self, client: Any, doc: AuditCheckpointDoc) -> None:
        body = doc["note"].encode()
        # Object Lock puts must carry a checksum of the body (S3 refuses them without one).
        digest = hashlib.md5(body, usedforsecurity=False).digest()
        await client.put_object(
            Bucket=self.config.bucket, Key=object_key(self.config.prefix, doc["accountId"],
                                                      doc["size"]),
            Body=body, ContentType="text/plain; charset=utf-8",
            ContentMD5=base64.b64encode(digest).decode(), ObjectLockMode=self.config.mode,
            ObjectLockRetainUntilDate=doc["at"] + timedelta(days=self.config.retention_days))

    async def _open(self) -> Any:
        if self._client is None:
            where = S3Config(self.config.bucket, region=self.config.region,
                             endpoint_url=self.config.endpoint_url,
                             addressing_style=self.config.addressing_style)
            self._context = get_session().create_client(
                "s3", region_name=where.region or None, endpoint_url=where.endpoint_url or None,
                config=where.client_config())
            self._client = await self._context.__aenter__()
        return self._client

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        wait = self.config.poll_seconds
        while True:
            try:
                if await lease.holds(self.db, self.holder):
                    await self.copy_pending()
                wait = self.config.poll_seconds
            except (ClientError, BotoCoreError, PyMongoError, OSError) as error:
                wait = min(wait * 2, LONGEST_WAIT_SECONDS)
                reason = (error_code(error) if isinstance(error, ClientError)
                          else type(error).__name__)
                log.warning("audit checkpoint copy to S3 bucket %s failed (%s): tried again in "
                            "%.0f s; sequencing goes on", self.config.bucket, reason, wait)
            except Exception:
                wait = min(wait * 2, LONGEST_WAIT_SECONDS)
                log.exception("audit checkpoint copy failed")
            await asyncio.sleep(wait)

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
        if self._context is not None:
            with contextlib.suppress(Exception):
                await self._context.__aexit__(None, None, None)
            self._context = self._client = None
