"""What the S3 backend does beyond the shared contract (tests/test_backend_contract.py): how it
uploads, what it leaves in the bucket, its settings and its failures, against a real moto server
on loopback."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

import backends
from backends.base import BackendConfigError, BackendUnavailable
from backends.s3 import S3Backend, S3Config
from tests.moto_server import REGION, MotoServer
from tests.tcp_relay import TcpRelay
from tests.vault_process import free_port
from tests.waiting import wait_until_async

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

MiB = 1 << 20
PART = 5 * MiB


@pytest.fixture
async def bucket(moto: MotoServer) -> AsyncIterator[str]:
    yield f"s3-{uuid.uuid4().hex[:16]}"


@pytest.fixture
async def store(moto: MotoServer, bucket: str) -> AsyncIterator[S3Backend]:
    backend = S3Backend(moto.config(bucket, prefix="vault/"), part_size=PART,
                        stale_upload_seconds=0)
    await backend.start()
    yield backend
    await backend.close()


async def uploads_in_progress(store: S3Backend) -> list[dict[str, Any]]:
    client = await store.client()
    answer = await client.list_multipart_uploads(Bucket=store.config.bucket)
    return list(answer.get("Uploads", []))


async def etag(store: S3Backend, key: str) -> str:
    client = await store.client()
    return str((await client.head_object(Bucket=store.config.bucket, Key=key))["ETag"])


async def write(store: S3Backend, name: str, size: int) -> int:
    writer = await store.open_writer(name)
    await writer.write(os.urandom(size))
    return await writer.commit()


async def test_a_blob_smaller_than_a_part_is_one_put_and_a_larger_one_is_multipart(
        store: S3Backend) -> None:
    await write(store, "small", PART - 1)
    await write(store, "large", 2 * PART + 7)
    # S3 gives a multipart object the ETag "<md5 of the parts' md5s>-<number of parts>".
    assert "-" not in await etag(store, "vault/small")
    assert (await etag(store, "vault/large")).strip('"').endswith("-3")
    assert await uploads_in_progress(store) == []


async def test_blobs_live_under_the_prefix_and_other_keys_are_left_alone(
        store: S3Backend) -> None:
    client = await store.client()
    for key in ("elsewhere", "vault/deeper/thing", "vaultish"):
        await client.put_object(Bucket=store.config.bucket, Key=key, Body=b"not ours")
    await write(store, "blob-1", 10)
    assert [name for name, _ in await store.list_names()] == ["blob-1"]
    assert await store.size("blob-1") == 10
    assert not await store.exists("elsewhere")
    assert await store.delete("elsewhere") is False
    assert await etag(store, "elsewhere")  # still there


async def test_an_aborted_multipart_upload_is_aborted_in_the_bucket(store: S3Backend) -> None:
    writer = await store.open_writer("given-up")
    await writer.write(os.urandom(PART + 1))
    assert [u["Key"] for u in await uploads_in_progress(store)] == ["vault/given-up"]
    await writer.abort()
    assert await uploads_in_progress(store) == []
    assert not await store.exists("given-up")


async def test_the_sweep_keeps_an_old_upload_that_is_still_adding_parts(
        store: S3Backend) -> None:
    writer = await store.open_writer("slow-but-alive")
    await writer.write(os.urandom(PART))
    started = time.time()
    # S3 times have whole seconds: wait until the upload's start is clearly in the past.
    await wait_until_async(lambda: time.time() > started + 2.2, timeout=10, what="2 s passed")
    await writer.write(os.urandom(PART))  # a fresh part: the upload is active
    assert await store.sweep_temporaries(2) == 0
    assert await writer.commit() == 2 * PART
    assert await store.size("slow-but-alive") == 2 * PART


async def test_by_default_the_sweep_leaves_an_upload_alone_for_an_hour(
        moto: MotoServer, bucket: str) -> None:
    backend = S3Backend(moto.config(bucket), part_size=PART)
    try:
        writer = await backend.open_writer("slow-client")
        await writer.write(os.urandom(PART))
        started = time.time()
        await wait_until_async(lambda: time.time() > started + 1.2, timeout=10, what="1 s passed")
        assert await backend.sweep_temporaries(0) == 0  # a slow upload's next part may be far
        backend.stale_upload_seconds = 1
        assert await backend.sweep_temporaries(0) == 1
        await writer.abort()
    finally:
        await backend.close()


async def test_the_bucket_is_created_at_start_and_a_second_start_finds_it(
        moto: MotoServer, bucket: str) -> None:
    for _ in range(2):
        backend = S3Backend(moto.config(bucket))
        try:
            await backend.start()
            assert await backend.list_names() == []
        finally:
            await backend.close()


@pytest.mark.parametrize(("options", "message"), [
    ({}, "config: storage.backend 's3' needs storage.s3.bucket (VAULTD_S3_BUCKET)"),
    ({"bucket": "Bad_Bucket"}, "config: storage.s3.bucket is invalid: 3-63 lowercase letters, "
                               "digits, dots and hyphens"),
    ({"bucket": "fine", "prefix": "/abs"}, "config: storage.s3.prefix is invalid: empty, or "
     "folder names of letters, digits, '.', '_', '-', each ending in '/' (e.g. vaultd/)"),
    ({"bucket": "fine", "endpoint_url": "https://user:pw@minio.example"},
     "config: storage.s3.endpoint_url is invalid: an http:// or https:// URL without user or "
     "password"),
    ({"bucket": "fine", "region": "EU West"}, "config: storage.s3.region is invalid: lowercase "
     "letters, digits and hyphens (e.g. eu-west-1)"),
    ({"bucket": "fine", "addressing_style": "dns"},
     "config: storage.s3.addressing_style must be virtual or path"),
])
def test_wrong_settings_are_refused_naming_the_setting(options: dict[str, str],
                                                       message: str) -> None:
    with pytest.raises(BackendConfigError) as refused:
        backends.create_backend("s3", options)
    assert str(refused.value) == message


async def test_an_unreachable_endpoint_is_unavailable_within_seconds(
        moto: MotoServer, caplog: pytest.LogCaptureFixture) -> None:
    config = S3Config("nobody-home", region="us-east-1",
                      endpoint_url=f"http://127.0.0.1:{free_port()}", addressing_style="path")
    backend = S3Backend(config)
    started = time.monotonic()
    try:
        with pytest.raises(BackendUnavailable) as down:
            await backend.start()
    finally:
        await backend.close()
    assert str(down.value) == "storage unavailable (EndpointConnectionError)"
    assert time.monotonic() - started < 10
    assert "S3 storage unavailable: EndpointConnectionError" in caplog.text


async def test_missing_credentials_are_unavailable_and_named_without_a_value(
        moto: MotoServer, bucket: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    backend = moto.backend(bucket)
    try:
        with pytest.raises(BackendUnavailable) as down:
            await backend.start()
    finally:
        await backend.close()
    assert str(down.value) == "storage unavailable (no credentials)"
    assert "no AWS credentials found" in caplog.text


@pytest.fixture
async def cuttable(moto: MotoServer, bucket: str) -> AsyncIterator[tuple[S3Backend, TcpRelay]]:
    """A backend that reaches moto through a relay the test can cut."""
    relay = TcpRelay(moto.port).start()
    config = S3Config(bucket, prefix="vault/", region=REGION,
                      endpoint_url=f"http://127.0.0.1:{relay.port}", addressing_style="path")
    backend = S3Backend(config, part_size=PART, stale_upload_seconds=0)
    await backend.start()
    yield backend, relay
    relay.stop()
    await backend.close()


async def test_a_part_lost_to_an_outage_is_abandoned_by_the_abort_that_follows(
        cuttable: tuple[S3Backend, TcpRelay]) -> None:
    store, relay = cuttable
    writer = await store.open_writer("cut-short")
    await writer.write(os.urandom(PART))  # the first part is stored
    relay.stop()
    with pytest.raises(BackendUnavailable):
        await writer.write(os.urandom(PART))
    relay.start()
    await writer.abort()
    assert await uploads_in_progress(store) == []
    assert not await store.exists("cut-short")


async def test_a_commit_that_meets_an_outage_leaves_the_upload_to_the_sweep(
        cuttable: tuple[S3Backend, TcpRelay], caplog: pytest.LogCaptureFixture) -> None:
    store, relay = cuttable
    writer = await store.open_writer("never-done")
    await writer.write(os.urandom(PART + 10))  # one part stored, 10 bytes held
    relay.stop()
    with pytest.raises(BackendUnavailable):
        await writer.commit()  # the last part fails; so does the abort that follows
    assert "could not clean up after the upload of blob never-done" in caplog.text
    with pytest.raises(ValueError) as refused:
        await writer.write(b"more")
    assert str(refused.value) == "blob writer for never-done is aborted"
    relay.start()
    assert [u["Key"] for u in await uploads_in_progress(store)] == ["vault/never-done"]
    assert await store.sweep_temporaries(0) == 1
    assert await uploads_in_progress(store) == []
    assert not await store.exists("never-done")
