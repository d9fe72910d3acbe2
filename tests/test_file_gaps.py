"""After the newest files of an account were deleted, the file listing remembers the numbers that
hold no file (`services.files.file_gaps`): the first page read after the deletion reads the
range that ends the gap once, later ones read about what they return. Never while an upload
may still fill one of the numbers; a restore forgets them. Against a real embedded SecantusDB,
through the services; what each query walks is measured on the server's side (`tests.db_reads`).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from backends.local import LocalBackend
from tests import recorded_database
from tests.db_reads import QueryRecorder, examined
from tests.scale_seed import _file
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db, connect
from vaultd.db_indexes import ensure_indexes
from vaultd.services.accounts import accounts
from vaultd.services.common import numbered
from vaultd.services.files import file_gaps, files
from vaultd.services.storage import backup, restore
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures

NUMBERS = 3000  # files uploaded, numbered 1..NUMBERS
KEPT = 400  # the oldest, still stored; every newer one deleted


async def _account(db: Db, name: str, *, kept: int = KEPT, numbers: int = NUMBERS) -> str:
    """An account that uploaded `numbers` files and deleted all but the oldest `kept`."""
    account = await accounts.create_account(db, name, "business")
    start = utcnow() - timedelta(days=30)
    docs = [_file(account.id, start + timedelta(seconds=n), n) for n in range(1, kept + 1)]
    if docs:
        await db.raw("files").insert_many(docs)
    await db.accounts.update_one({"_id": account.id},
                                 {"$set": {"usage.documents": kept, "fileSeq": numbers}})
    return account.id


async def _walked(db: Db, recorder: QueryRecorder, account_id: str
                  ) -> tuple[list[int], int, int]:
    """Page 1's numbers (-1: a file not numbered), the file records its queries walked, and how
    many queries of the files it sent."""
    with recorder.recorded() as queries:
        page = await files.list_files(db, account_id, 1, 25, active_links=False)
    reads = [query for query in queries if query.collection == "files"]
    walked = sum([await examined(db, query) for query in reads])
    seqs = [doc.get("seq", -1) for doc in await db.files.find(
        {"_id": {"$in": [item["id"] for item in page["files"]]}}, {"seq": 1}).to_list()]
    return sorted(seqs, reverse=True), walked, len(reads)


async def test_the_first_page_after_the_newest_were_deleted_then_reads_what_it_returns(
        db: Db, recorder: QueryRecorder) -> None:
    account_id = await _account(db, "Deleted Newest Co")
    newest = list(range(KEPT, KEPT - 25, -1))
    seqs, first, _ = await _walked(db, recorder, account_id)
    assert seqs == newest
    assert first == KEPT  # the range that ends the gap holds every file below it
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None
    assert account[file_gaps.FIELD] == [{"bottom": KEPT + 1, "top": NUMBERS}]
    seqs, again, _ = await _walked(db, recorder, account_id)
    assert seqs == newest
    assert again <= numbered.FIRST_RANGE  # a page's first range, below the gap


async def test_an_upload_after_the_gap_lists_first_and_the_gap_is_still_jumped(
        db: Db, recorder: QueryRecorder) -> None:
    account_id = await _account(db, "Uploaded Again Co")
    await _walked(db, recorder, account_id)
    new = _file(account_id, utcnow(), NUMBERS + 1)
    await db.raw("files").insert_one(new)
    await db.accounts.update_one({"_id": account_id},
                                 {"$inc": {"usage.documents": 1, "fileSeq": 1}})
    seqs, walked, reads = await _walked(db, recorder, account_id)
    assert seqs == [NUMBERS + 1, *range(KEPT, KEPT - 24, -1)]
    assert (walked, reads) == (25, 1)  # one range past the gap, as wide as the page below it
    # The new file deleted too: the next listing remembers a stretch reaching past the old one.
    await db.raw("files").delete_one({"_id": new["_id"]})
    await db.accounts.update_one({"_id": account_id}, {"$inc": {"usage.documents": -1}})
    await _walked(db, recorder, account_id)
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None
    assert account[file_gaps.FIELD] == [{"bottom": KEPT + 1, "top": NUMBERS + 1}]


async def test_a_stretch_below_the_newest_file_is_remembered_and_read_past(
        db: Db, recorder: QueryRecorder) -> None:
    """The newest file kept, the thousands uploaded before it deleted: the stretch between it
    and the files below is remembered, and one range reaches past it to the page's files."""
    account_id = await _account(db, "Newest Kept Co")
    await db.raw("files").insert_one(_file(account_id, utcnow(), NUMBERS))
    await db.accounts.update_one({"_id": account_id}, {"$inc": {"usage.documents": 1}})
    newest = [NUMBERS, *range(KEPT, KEPT - 24, -1)]
    seqs, first, _ = await _walked(db, recorder, account_id)
    assert seqs == newest and first == KEPT + 1
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None
    assert account[file_gaps.FIELD] == [{"bottom": KEPT + 1, "top": NUMBERS - 1}]
    seqs, again, reads = await _walked(db, recorder, account_id)
    assert seqs == newest and again <= numbered.FIRST_RANGE and reads == 1


async def test_a_stretch_a_deeper_page_found_is_kept_by_page_1(db: Db) -> None:
    """Page 1 does not reach the stretch page 6 found below the 100 newest: it keeps it."""
    account_id = await _account(db, "Deep Found Co")
    newer = [_file(account_id, utcnow(), NUMBERS + n) for n in range(1, 101)]
    await db.raw("files").insert_many(newer)
    await db.accounts.update_one({"_id": account_id},
                                 {"$inc": {"usage.documents": 100, "fileSeq": 100}})
    await files.list_files(db, account_id, 6, 25, active_links=False)
    stretch = [{"bottom": KEPT + 1, "top": NUMBERS}]
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None and account[file_gaps.FIELD] == stretch
    await files.list_files(db, account_id, 1, 25, active_links=False)
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None and account[file_gaps.FIELD] == stretch


async def test_below_the_gap_a_range_is_sized_by_what_was_read_not_by_the_numbers_jumped(
        db: Db, recorder: QueryRecorder) -> None:
    """Every other number below the gap holds a file: the ranges there aim at the density they
    read (one in two), not at the one file in the 2,601 numbers above counting the gap."""
    account_id = await _account(db, "Sparse Below Co", kept=0)
    docs = [_file(account_id, utcnow() - timedelta(days=1, seconds=-n), n)
            for n in range(2, KEPT + 1, 2)]
    await db.raw("files").insert_many(docs)
    await db.accounts.update_one({"_id": account_id}, {"$set": {
        "usage.documents": len(docs), file_gaps.FIELD: [{"bottom": KEPT + 1, "top": NUMBERS}]}})
    await db.raw("files").insert_one(_file(account_id, utcnow(), NUMBERS + 1))
    await db.accounts.update_one({"_id": account_id},
                                 {"$inc": {"usage.documents": 1, "fileSeq": 1}})
    seqs, walked, _ = await _walked(db, recorder, account_id)
    assert seqs == [NUMBERS + 1, *range(KEPT, KEPT - 48, -2)]
    assert walked <= 2 * 25, walked


async def test_nothing_is_remembered_while_an_upload_is_pending(
        db: Db, recorder: QueryRecorder) -> None:
    """The pending upload's number may be any of the empty ones: its record is written after
    the read, and a remembered number would hide it."""
    account_id = await _account(db, "Pending Co")
    pending = {"id": "f5e2c1a0-0000-4000-8000-000000000001", "size": 1000, "at": utcnow(),
               "owner": "another-process"}
    await db.accounts.update_one({"_id": account_id}, {"$push": {"pendingUploads": pending},
                                                       "$inc": {"usage.documents": 1}})
    seqs, _, _ = await _walked(db, recorder, account_id)
    assert seqs == list(range(KEPT, KEPT - 25, -1))
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None and not account.get(file_gaps.FIELD)
    # Its record written under a number among the empty ones, then settled: listed first.
    await db.raw("files").insert_one(_file(account_id, utcnow(), NUMBERS - 7))
    await db.accounts.update_one({"_id": account_id}, {"$pull": {"pendingUploads": {}}})
    seqs, _, _ = await _walked(db, recorder, account_id)
    assert seqs[:2] == [NUMBERS - 7, KEPT]


async def test_a_few_deleted_files_are_not_worth_a_write(db: Db, recorder: QueryRecorder
                                                         ) -> None:
    account_id = await _account(db, "Few Deleted Co", kept=KEPT,
                                numbers=KEPT + file_gaps.MIN_GAP - 1)
    seqs, _, _ = await _walked(db, recorder, account_id)
    assert seqs == list(range(KEPT, KEPT - 25, -1))
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None and not account.get(file_gaps.FIELD)


async def test_every_file_deleted_remembers_down_to_the_floor(db: Db, recorder: QueryRecorder
                                                              ) -> None:
    """Numbers below 1 are never remembered: start-up numbers older files there."""
    account_id = await _account(db, "All Deleted Co", kept=0)
    await db.accounts.update_one({"_id": account_id},
                                 {"$set": {"usage.documents": 1, "fileSeqFloor": -5}})
    older = _file(account_id, utcnow())
    del older["seq"]  # written before files were numbered: listed by time
    await db.raw("files").insert_one(older)
    seqs, _, _ = await _walked(db, recorder, account_id)
    assert seqs == [-1]
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None and account[file_gaps.FIELD] == [{"bottom": 1, "top": NUMBERS}]


async def test_a_restore_forgets_the_remembered_numbers(
        db: Db, recorder: QueryRecorder, server: Any, tmp_path: Path) -> None:
    account_id = await _account(db, "Restored Co", kept=30, numbers=500)
    await _walked(db, recorder, account_id)
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None and file_gaps.FIELD in account
    ring = MasterKeyring.generate()
    blobs = LocalBackend(tmp_path / "blobs")
    await blobs.start()
    made = await backup.create_backup(db, blobs, lambda: ring, tmp_path / "backup", "test")
    restored = connect(server.uri, "restored_gaps")
    try:
        await ensure_indexes(restored)
        await restore.import_database(restored, tmp_path / "backup", made)
        back = await restored.accounts.find_one({"_id": account_id})
        assert back is not None and file_gaps.FIELD not in back
        assert back["fileSeq"] == 500
    finally:
        await restored.close()
