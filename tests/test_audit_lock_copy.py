"""The locked copy of each signed checkpoint (services.audit.lock_copy) in a real moto S3
server, with a real sequencer on the real embedded database: each checkpoint lands in the bucket
byte for byte, under Object Lock with its mode and retain-until date, and deleting it (the
operator covering a fork) is refused; a vaultd with `audit.copy_*` set copies its
checkpoints (storage stays local); a bucket that fails is retried and logged while
sequencing and signing go on, and the waiting checkpoints are copied once it works."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.audit_helpers import checkpoint_of, record_entries
from tests.embedded_database import running_database, vault_db
from tests.moto_server import AWS_ENV, REGION, SECRET_ACCESS_KEY, MotoServer
from tests.vault_process import VaultProcess, assert_no_secrets_in_log
from tests.waiting import wait_until, wait_until_async
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db
from vaultd.services.audit.keys import current_signer
from vaultd.services.audit.lock_copy import CopyConfig, LockCopier, object_key
from vaultd.services.audit.sequencer import Sequencer, SequencerConfig
from vaultd.services.common import access_log

pytestmark = pytest.mark.slow  # starts its own database server and the session's moto server

RING = MasterKeyring.generate()
ORIGIN = "test.example/audit"
PREFIX = "witness/"


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Db]:
    with running_database(tmp_path / "db") as server:
        async with vault_db(server) as database:
            yield database


@pytest.fixture
def s3(moto: MotoServer) -> Iterator[Any]:
    client = boto3.client("s3", region_name=REGION, endpoint_url=moto.endpoint)
    yield client
    client.close()


def locked_bucket(s3: Any) -> str:
    name = f"audit-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    return name


def sequencer(db: Db) -> Sequencer:
    config = SequencerConfig(0.05, 0.3, 60.0, 5, 3600.0, ORIGIN, copy_checkpoints=True)
    return Sequencer(db, lambda: current_signer(db, RING, ORIGIN), config, "one")


def copier(db: Db, moto: MotoServer, bucket: str, mode: str = "COMPLIANCE") -> LockCopier:
    return LockCopier(db, CopyConfig(bucket, PREFIX, mode, 30, REGION, moto.endpoint, "path",
                                     poll_seconds=0.05), "one")


async def signed(db: Db, worker: Sequencer, account_id: str, count: int, size: int) -> None:
    """`count` new entries of the account, sequenced and signed up to `size`."""
    for n in range(count):
        await access_log.record(db, account_id, "file-1", "page", page=n + 1)

    async def made() -> bool:
        await worker.round()
        return await db.audit_checkpoints.find_one({"_id": f"{account_id}/{size}"}) is not None
    await wait_until_async(made, timeout=30, what=f"the checkpoint at {size}")


async def test_each_checkpoint_is_copied_locked_and_cannot_be_deleted(
        db: Db, moto: MotoServer, s3: Any) -> None:
    bucket, worker = locked_bucket(s3), sequencer(db)
    await signed(db, worker, "acct", 5, 5)  # the first checkpoint, and one 5 entries later
    await signed(db, worker, "acct", 5, 10)
    made = [doc async for doc in db.audit_checkpoints.find({"accountId": "acct"})]
    assert len(made) == 2 and all(doc.get("copyPending") for doc in made)

    copies = copier(db, moto, bucket)
    try:
        assert await copies.copy_pending() == 2
        assert await copies.copy_pending() == 0  # each once
    finally:
        await copies.stop()
    for doc in made:
        key = object_key(PREFIX, "acct", doc["size"])
        stored = s3.get_object(Bucket=bucket, Key=key)
        assert stored["Body"].read() == doc["note"].encode()  # the signed note, byte for byte
        assert stored["ObjectLockMode"] == "COMPLIANCE"
        until = stored["ObjectLockRetainUntilDate"]
        assert abs(until - (doc["at"] + timedelta(days=30))) < timedelta(seconds=1)
        kept = await db.audit_checkpoints.find_one({"_id": doc["_id"]})
        assert kept is not None and "copyPending" not in kept and "copiedAt" in kept
        # The operator removing a checkpoint a customer could hold against a rewritten log:
        with pytest.raises(ClientError) as refused:
            s3.delete_object(Bucket=bucket, Key=key, VersionId=stored["VersionId"])
        assert refused.value.response["Error"]["Code"] == "AccessDenied"
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == doc["note"].encode()
    assert key.endswith(f"acct/{made[-1]['size']:020d}.checkpoint")


async def test_a_failing_bucket_is_retried_and_logged_and_never_holds_up_sequencing(
        db: Db, moto: MotoServer, s3: Any, caplog: pytest.LogCaptureFixture) -> None:
    bucket, worker = f"audit-{uuid.uuid4().hex[:12]}", sequencer(db)  # not created yet
    copies = copier(db, moto, bucket, mode="GOVERNANCE")
    await worker.round()  # takes the lease: the holder copies
    caplog.set_level(logging.WARNING, logger="vaultd.audit")
    copies.start()
    try:
        await signed(db, worker, "acct", 6, 6)

        async def logged() -> bool:
            return "audit checkpoint copy to S3 bucket" in caplog.text
        await wait_until_async(logged, timeout=30, what="the failed copy logged")
        assert f"bucket {bucket} failed (NoSuchBucket)" in caplog.text
        await signed(db, worker, "other", 5, 5)  # sequencing and signing went on meanwhile
        assert await db.audit_checkpoints.count_documents({"copyPending": True}) == 2

        s3.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=True)

        async def copied() -> bool:  # the retry, its wait doubled since the failures
            return await db.audit_checkpoints.count_documents({"copyPending": True}) == 0
        await wait_until_async(copied, timeout=60, what="the copies once the bucket works")
    finally:
        await copies.stop()
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=PREFIX)
    assert sorted(item["Key"] for item in listed["Contents"]) == sorted(
        [object_key(PREFIX, "acct", 6), object_key(PREFIX, "other", 5)])
    head = s3.head_object(Bucket=bucket, Key=object_key(PREFIX, "other", 5))
    assert head["ObjectLockMode"] == "GOVERNANCE"
    assert "vaultd-test-secret" not in caplog.text  # the credentials never reach the log


def test_a_vaultd_with_the_copy_set_writes_its_checkpoints_to_the_bucket(
        moto: MotoServer, s3: Any, tmp_path: Path) -> None:
    bucket = locked_bucket(s3)
    env = {**AWS_ENV, "VAULTD_S3_ENDPOINT_URL": moto.endpoint, "VAULTD_S3_REGION": REGION,
           "VAULTD_S3_ADDRESSING_STYLE": "path", "VAULTD_AUDIT_COPY_BUCKET": bucket,
           "VAULTD_AUDIT_COPY_PREFIX": PREFIX, "VAULTD_AUDIT_COPY_RETENTION_DAYS": "2",
           "VAULTD_AUDIT_MERGE_DELAY_SECONDS": "0.1",
           "VAULTD_AUDIT_CHECKPOINT_EVERY_SECONDS": "0.2",  # the 7 may take several rounds
           "VAULTD_RENDER_WORKERS": "1"}
    server = VaultProcess(tmp_path / "data", env=env).start()
    try:
        account_id, key = server.new_account("Witnessed")
        record_entries(server, account_id, 7)
        with server.client(key) as api:
            checkpoint = checkpoint_of(api, 7)
        wanted = object_key(PREFIX, account_id, checkpoint["treeSize"])

        def landed() -> dict[str, Any] | None:
            listed = s3.list_objects_v2(Bucket=bucket, Prefix=PREFIX).get("Contents", [])
            if wanted not in {item["Key"] for item in listed}:
                return None
            return dict(s3.get_object(Bucket=bucket, Key=wanted))
        stored = wait_until(landed, timeout=60, what="the checkpoint's copy in the bucket")
        assert stored["Body"].read().decode() == checkpoint["checkpoint"]
        assert stored["ObjectLockMode"] == "COMPLIANCE"  # the default mode
    finally:
        server.stop()
    server.secrets.append(SECRET_ACCESS_KEY)
    assert_no_secrets_in_log(server)
