"""Active links are counted on write (`services.accounts.link_counts`), and stay right as links are
revoked one by one, expire, are revoked after expiring, and are revoked all at once; concurrent
reads after an expiry subtract it once. Against a real embedded SecantusDB, through the services.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from backends.local import LocalBackend
from tests.embedded_database import running_database, vault_db
from tests.link_clock import set_expiry
from tests.scale_seed import _file
from vaultd import embedded_db
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db
from vaultd.secrets import digest
from vaultd.services.accounts import accounts, link_counts
from vaultd.services.accounts.accounts import Account
from vaultd.services.common import background, batches
from vaultd.services.files import deletions, files
from vaultd.services.files.blobs import BlobStore
from vaultd.services.links import links, revoke_jobs
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded_db.EmbeddedServer]:
    with running_database(tmp_path_factory.mktemp("counts") / "db") as running:
        yield running


@pytest.fixture(scope="module")
async def db(server: embedded_db.EmbeddedServer) -> AsyncIterator[Db]:
    async with vault_db(server) as database:
        yield database


async def _account_with_file(db: Db) -> tuple[Account, str]:
    account = await accounts.create_account(db, "Counted Co", "pro")
    doc: dict[str, Any] = _file(account.id, utcnow())
    del doc["linkCount"]  # as an upload writes it: the count appears with the first link
    await db.raw("files").insert_one(doc)
    await db.accounts.update_one({"_id": account.id},
                                 {"$inc": {"usage.documents": 1, "fileSeq": 1}})
    return account, str(doc["_id"])


async def _new_links(db: Db, account: Account, file_id: str, count: int) -> list[str]:
    request = links.LinkRequest(file_id, "kim@example.com", "Kim", 3600)
    return [(await links.create_link(db, account, request))[0] for _ in range(count)]


async def _counts(db: Db, account: Account, file_id: str) -> tuple[int, int, int]:
    usage = await accounts.usage(db, account.id)
    listing = await files.list_files(db, account.id, 1, 25)
    return usage["activeLinks"], listing["files"][0]["activeLinks"], \
        await link_counts.file_live(db, file_id)


async def _link(db: Db, token: str) -> dict[str, Any]:
    link = await db.links.find_one({"hash": digest(token)})
    assert link is not None
    return dict(link)


async def _expire(db: Db, token: str) -> None:
    """As if the link's time had passed: it ends now (not earlier: a count swept a moment ago
    has already passed that time, which no real link's expiry can precede)."""
    await set_expiry(db, {"hash": digest(token)}, utcnow())


async def test_live_links_follow_revokes_and_expiry(db: Db) -> None:
    account, file_id = await _account_with_file(db)
    tokens = await _new_links(db, account, file_id, 5)
    assert await _counts(db, account, file_id) == (5, 5, 5)
    await links.revoke_link(db, account.id, tokens[0])
    await links.revoke_link(db, account.id, tokens[0])  # twice: counted once
    assert await _counts(db, account, file_id) == (4, 4, 4)
    await _expire(db, tokens[1])
    assert await _counts(db, account, file_id) == (3, 3, 3)
    assert await _counts(db, account, file_id) == (3, 3, 3)  # the sweep subtracted it once
    for record in (await db.accounts.find_one({"_id": account.id}),
                   await db.files.find_one({"_id": file_id})):
        assert record is not None  # swept and kept: the next read starts after the expiry
        assert record["linkCount"]["sweptAt"] >= (await _link(db, tokens[1]))["expiresAt"]
    await links.revoke_link(db, account.id, tokens[1])  # revoked after it expired
    assert await _counts(db, account, file_id) == (3, 3, 3)
    assert await links.revoke_file_links(db, account.id, file_id) == 3
    assert await _counts(db, account, file_id) == (0, 0, 0)


async def test_concurrent_reads_after_an_expiry_subtract_it_once(db: Db) -> None:
    account, file_id = await _account_with_file(db)
    tokens = await _new_links(db, account, file_id, 4)
    await asyncio.gather(*(_expire(db, token) for token in tokens[:2]))
    seen = await asyncio.gather(*(link_counts.account_live(db, account.id) for _ in range(6)),
                                *(link_counts.file_live(db, file_id) for _ in range(6)))
    assert seen == [2] * 12
    assert await _counts(db, account, file_id) == (2, 2, 2)


async def test_a_revoke_all_larger_than_a_batch_revokes_every_live_link(db: Db) -> None:
    account, file_id = await _account_with_file(db)
    count = revoke_jobs.BATCH * 2 + 7
    await _new_links(db, account, file_id, count)
    assert await links.revoke_file_links(db, account.id, file_id) == count
    assert await _counts(db, account, file_id) == (0, 0, 0)
    await revoke_jobs.all_marked()  # the link records are marked in the background
    assert await db.links.count_documents({"fileId": file_id, "revoked": False}) == 0
    assert await _counts(db, account, file_id) == (0, 0, 0)


async def test_deleting_a_file_takes_its_live_links_from_the_account(
        db: Db, tmp_path: Path) -> None:
    account, kept_file = await _account_with_file(db)
    await _new_links(db, account, kept_file, 2)
    _, doomed = await _account_with_file(db)
    await db.files.update_one({"_id": doomed}, {"$set": {"accountId": account.id}})
    count = batches.DELETE_BATCH + 3
    tokens = await _new_links(db, account, doomed, count)
    await _expire(db, tokens[0])
    await db.raw("link_stats").insert_many(
        [{"_id": f"stats-{n}", "fileId": doomed} for n in range(batches.DELETE_BATCH + 1)])
    assert (await accounts.usage(db, account.id))["activeLinks"] == 2 + count - 1
    store = BlobStore(LocalBackend(tmp_path / "blobs"), MasterKeyring([("k1", bytes(32))]))
    await deletions.delete_file(db, store, account.id, doomed, owner="vaultd-test")
    assert (await accounts.usage(db, account.id))["activeLinks"] == 2
    await background.settled()  # the links go in the background
    assert (await accounts.usage(db, account.id))["activeLinks"] == 2
    assert await db.links.count_documents({"fileId": doomed}) == 0
    assert await db.link_stats.count_documents({"fileId": doomed}) == 0
