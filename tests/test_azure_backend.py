"""What the Azure backend's writer does beyond the shared contract (tests/test_backend_contract.py):
the blocks it stages and what an outage mid-upload leaves, against a real Azurite reached through a
relay the tests can cut."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import pytest

from backends.azure import AzureBackend, AzureConfig
from backends.base import BackendUnavailable
from tests.azurite import Azurite
from tests.tcp_relay import TcpRelay

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

BLOCK = 64 * 1024  # a small block size: a few writes cross several block boundaries


@pytest.fixture
async def cuttable(azurite: Azurite) -> AsyncIterator[tuple[AzureBackend, TcpRelay]]:
    relay = TcpRelay(azurite.port).start()
    through_relay = azurite.connection_string.replace(f":{azurite.port}/", f":{relay.port}/")
    container = f"azure-{uuid.uuid4().hex[:16]}"
    backend = AzureBackend(AzureConfig(container, connection_string=through_relay),
                           block_size=BLOCK)
    await backend.start()
    yield backend, relay
    relay.stop()
    await backend.close()


async def uncommitted_sizes(store: AzureBackend, name: str) -> list[int]:
    _, uncommitted = await store.container.get_blob_client(name).get_block_list("uncommitted")
    return [block.size for block in uncommitted]


async def test_blocks_are_staged_at_exactly_the_block_size_and_the_tail_at_commit(
        cuttable: tuple[AzureBackend, TcpRelay]) -> None:
    store, _ = cuttable
    data = os.urandom(2 * BLOCK + 100)
    writer = await store.open_writer("in-blocks")
    for start in range(0, len(data), 50_000):  # pieces that do not line up with blocks
        await writer.write(data[start:start + 50_000])
    assert await uncommitted_sizes(store, "in-blocks") == [BLOCK, BLOCK]
    assert await writer.commit() == len(data)
    committed, _ = await store.container.get_blob_client("in-blocks").get_block_list("committed")
    assert [block.size for block in committed] == [BLOCK, BLOCK, 100]
    assert await store.read_range("in-blocks", 0, len(data)) == data


async def test_a_commit_that_meets_an_outage_leaves_nothing_and_the_writer_aborted(
        cuttable: tuple[AzureBackend, TcpRelay]) -> None:
    store, relay = cuttable
    writer = await store.open_writer("never-done")
    await writer.write(os.urandom(BLOCK + 10))  # one block staged, 10 bytes held
    relay.stop()
    with pytest.raises(BackendUnavailable):
        await writer.commit()
    with pytest.raises(ValueError) as refused:
        await writer.write(b"more")
    assert str(refused.value) == "blob writer for never-done is aborted"
    relay.start()
    await writer.abort()  # already aborted: no error, nothing sent
    assert not await store.exists("never-done")
    assert await store.list_names() == []
