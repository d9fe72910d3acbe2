"""The blob backend contract: one suite, run unchanged against every backend.

Each test gets a fresh, empty store: a temporary directory for the local backend, a new
container in a real Azurite for the Azure backend, a new bucket in a real moto server (a child
process on loopback) for the S3 backend; a temporary directory for the test-only plug-in
backend of the backend recipe (`tests/twist_backend.py`), which must keep the same contract.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from backends.azure import AzureBackend, AzureConfig
from backends.base import BlobBackend
from backends.local import LocalBackend
from backends.s3 import S3Backend
from tests import twist_backend
from tests.azurite import Azurite
from tests.moto_server import MotoServer

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

MiB = 1 << 20
BLOCK = 4 * MiB  # the Azure backend's block size: sizes around it cross block boundaries
PART = 5 * MiB  # the S3 backend's part size in these tests
PIECE = 16400  # what the encryptor hands over: one encrypted chunk


@pytest.fixture(params=["local", "azure", "s3", twist_backend.NAME])
def make_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], BlobBackend]:
    if request.param == "local":
        return lambda: LocalBackend(tmp_path / "blobs")
    if request.param == twist_backend.NAME:
        return lambda: twist_backend.create({"data_dir": str(tmp_path)})
    if request.param == "s3":
        moto: MotoServer = request.getfixturevalue("moto")
        bucket = f"contract-{uuid.uuid4().hex[:16]}"
        # A small part size (S3's minimum), so that the sizes below cross part boundaries too;
        # the sweep's own floor (an hour without a part) off, as for local temporaries.
        return lambda: S3Backend(moto.config(bucket, prefix="vault/"), part_size=PART,
                                 stale_upload_seconds=0)
    azurite: Azurite = request.getfixturevalue("azurite")
    connection_string = azurite.connection_string
    container = f"contract-{uuid.uuid4().hex[:16]}"
    return lambda: AzureBackend(AzureConfig(container, connection_string=connection_string))


@pytest.fixture
async def backend(make_backend: Callable[[], BlobBackend]) -> AsyncIterator[BlobBackend]:
    store = make_backend()
    try:
        yield store
    finally:
        await store.close()


async def put(store: BlobBackend, name: str, data: bytes, piece: int = PIECE) -> int:
    writer = await store.open_writer(name)
    for start in range(0, len(data), piece):
        await writer.write(data[start:start + piece])
    return await writer.commit()


def name() -> str:
    return str(uuid.uuid4())


async def test_a_committed_blob_reads_back_exactly(backend: BlobBackend) -> None:
    data, blob = os.urandom(100_000), name()
    assert await put(backend, blob, data) == len(data)
    assert await backend.exists(blob)
    assert await backend.size(blob) == len(data)
    assert await backend.read_range(blob, 0, len(data)) == data
    assert await backend.read_range(blob, 12_345, 40_000) == data[12_345:52_345]
    assert await backend.read_range(blob, 99_999, 1) == data[-1:]


async def test_nothing_is_visible_before_commit(backend: BlobBackend) -> None:
    blob = name()
    writer = await backend.open_writer(blob)
    await writer.write(os.urandom(5 * MiB))  # past one block: something was staged
    assert not await backend.exists(blob)
    assert blob not in dict(await backend.list_names())
    with pytest.raises(FileNotFoundError):
        await backend.size(blob)
    await writer.commit()
    assert await backend.exists(blob)


async def test_an_aborted_blob_leaves_nothing_and_abort_is_idempotent(
        backend: BlobBackend) -> None:
    blob = name()
    writer = await backend.open_writer(blob)
    await writer.write(os.urandom(5 * MiB))
    await writer.abort()
    await writer.abort()
    assert not await backend.exists(blob)
    assert await backend.list_names() == []
    with pytest.raises(FileNotFoundError):
        await backend.read_range(blob, 0, 10)


async def test_abort_after_commit_keeps_the_blob(backend: BlobBackend) -> None:
    blob = name()
    writer = await backend.open_writer(blob)
    await writer.write(b"kept")
    await writer.commit()
    await writer.abort()
    assert await backend.read_range(blob, 0, 100) == b"kept"


@pytest.mark.parametrize("finish", ["commit", "abort"])
async def test_a_finished_writer_refuses_more_writes_and_commits(
        backend: BlobBackend, finish: str) -> None:
    blob = name()
    writer = await backend.open_writer(blob)
    await writer.write(b"done")
    await (writer.commit() if finish == "commit" else writer.abort())
    with pytest.raises(ValueError):
        await writer.write(b"more")
    with pytest.raises(ValueError):
        await writer.commit()
    assert await backend.exists(blob) is (finish == "commit")


async def test_reads_at_and_past_the_end_are_short_or_empty(backend: BlobBackend) -> None:
    data, blob = os.urandom(1000), name()
    await put(backend, blob, data)
    assert await backend.read_range(blob, 990, 100) == data[990:]
    assert await backend.read_range(blob, 1000, 10) == b""
    assert await backend.read_range(blob, 5000, 10) == b""
    assert await backend.read_range(blob, 10, 0) == b""


@pytest.mark.parametrize("size", [0, 1, BLOCK - 1, BLOCK, PART, 2 * BLOCK, 2 * BLOCK + 12_345],
                         ids=["empty", "one-byte", "block-minus-one", "one-block", "one-part",
                              "two-blocks-empty-tail", "two-blocks-and-a-tail"])
async def test_sizes_around_block_boundaries_round_trip(backend: BlobBackend, size: int) -> None:
    data, blob = os.urandom(size), name()
    assert await put(backend, blob, data) == size
    assert await backend.size(blob) == size
    assert await backend.read_range(blob, 0, size + 10) == data
    if size > BLOCK:  # a range straddling the first block boundary
        assert await backend.read_range(blob, BLOCK - 7, 14) == data[BLOCK - 7:BLOCK + 7]


async def test_empty_writes_change_nothing(backend: BlobBackend) -> None:
    blob = name()
    writer = await backend.open_writer(blob)
    for piece in (b"", b"abc", b"", b"def", b""):
        await writer.write(piece)
    assert await writer.commit() == 6
    assert await backend.read_range(blob, 0, 10) == b"abcdef"


async def test_missing_blobs_are_file_not_found(backend: BlobBackend) -> None:
    blob = name()
    with pytest.raises(FileNotFoundError):
        await backend.read_range(blob, 0, 10)
    with pytest.raises(FileNotFoundError):
        await backend.size(blob)
    assert not await backend.exists(blob)


async def test_delete_removes_and_reports_whether_it_existed(backend: BlobBackend) -> None:
    blob = name()
    await put(backend, blob, b"gone soon")
    assert await backend.delete(blob) is True
    assert not await backend.exists(blob)
    assert await backend.delete(blob) is False


async def test_list_names_gives_committed_blobs_with_their_time(backend: BlobBackend) -> None:
    before = time.time()
    names = sorted(name() for _ in range(3))
    for blob in names:
        await put(backend, blob, blob.encode())
    listed = dict(await backend.list_names())
    assert sorted(listed) == names
    for modified in listed.values():
        assert before - 5 <= modified <= time.time() + 5


async def test_committing_under_an_existing_name_replaces_the_blob(backend: BlobBackend) -> None:
    blob = name()
    await put(backend, blob, b"first version, longer")
    await put(backend, blob, b"second")
    assert await backend.read_range(blob, 0, 100) == b"second"


async def test_concurrent_writers_never_mix_their_blobs(backend: BlobBackend) -> None:
    payloads = {name(): os.urandom(BLOCK + 1000 * i) for i in range(6)}

    async def write(blob: str, data: bytes) -> None:
        writer = await backend.open_writer(blob)
        for start in range(0, len(data), 256 * 1024):
            await writer.write(data[start:start + 256 * 1024])
            await asyncio.sleep(0)  # interleave with the other writers
        await writer.commit()

    await asyncio.gather(*(write(blob, data) for blob, data in payloads.items()))
    for blob, data in payloads.items():
        assert await backend.read_range(blob, 0, len(data) + 1) == data


async def test_the_sweep_removes_what_a_dead_writer_left_and_only_when_idle_long_enough(
        backend: BlobBackend) -> None:
    blob = name()
    writer = await backend.open_writer(blob)
    await writer.write(os.urandom(6 * MiB))  # past a block and a part: something is stored
    # The writer's process "dies" here: neither commit nor abort.
    assert await backend.sweep_temporaries(3600) == 0  # it was active moments ago
    # Azure discards uncommitted blocks by itself: nothing for vaultd to sweep.
    expected = {"local": 1, "azure": 0, "s3": 1, twist_backend.NAME: 1}[backend.name]
    assert await backend.sweep_temporaries(0) == expected
    assert await backend.sweep_temporaries(0) == 0
    assert not await backend.exists(blob)
    assert await backend.list_names() == []
    await writer.abort()  # what a late abort finds already swept is no error


@pytest.mark.parametrize("bad", ["../escape", "a/b", "", ".hidden", "x" * 300])
async def test_names_outside_the_safe_alphabet_are_refused(backend: BlobBackend, bad: str) -> None:
    with pytest.raises(ValueError):
        await backend.open_writer(bad)
    with pytest.raises(ValueError):
        await backend.read_range(bad, 0, 10)
    with pytest.raises(ValueError):
        await backend.delete(bad)
