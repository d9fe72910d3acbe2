"""An account's newest numbers that hold no file and never will, remembered on the account
(`fileGap: {bottom, top}`) so that the file listing jumps them.

`numbered.newest_numbered` widens its ranges across numbers that hold nothing, by GROWTH at a
time, and the range that ends such a gap holds what it holds: after the newest 4,550 of 5,551
files were deleted, page 1 read the 1,001 live files below them for a page of 25 (5.1x of the
empty vault's p95: docs/performance-records.md). Numbers are never given twice
(`quota.reserve_upload` raises `fileSeq`), so a number that holds no stored file never will,
unless an upload holds it and has not written its record yet: its reservation stays in the
account's `pendingUploads` until the record is written (`uploads.Upload._record`). So:

- a listing reads from the account's `fileSeq` down; if its account read showed no upload
  pending, the numbers above the highest file it found (all it read, down to the floor, if it
  found none) are remembered, at least MIN_GAP of them, so a single deletion costs no write;
- later listings do not read them (`newest_numbered`'s `empty`); uploads after that number
  above them, and a later listing remembers a stretch that reaches past the old one whole;
- an upload whose reservation recovery cancelled (its process was taken for dead and its blob
  deleted) removes the record it wrote, so no remembered number ever holds a file;
- a restore drops the memory (`storage.restore`), as it drops the files' link counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vaultd.db import Db

FIELD = "fileGap"
MIN_GAP = 100  # numbers: below this a page's first ranges cost what a write would


def known(account: Mapping[str, Any]) -> tuple[int, int] | None:
    """The lowest and highest of the account's numbers known to hold no file, if any."""
    gap = account.get(FIELD)
    return (int(gap["bottom"]), int(gap["top"])) if gap else None


async def remember(db: Db, account: Mapping[str, Any], numbered: Sequence[Mapping[str, Any]]
                   ) -> None:
    """After a listing of `account` (read with `fileSeq`, `fileSeqFloor`, `pendingUploads` and
    FIELD) read its files by number from `fileSeq` down, highest first, and found `numbered`."""
    if account.get("pendingUploads"):
        return  # a pending upload may still write a record under one of the numbers
    top = int(account.get("fileSeq", 0))
    bottom = int(numbered[0]["seq"]) + 1 if numbered else int(account.get("fileSeqFloor", 1))
    bottom = max(bottom, 1)  # numbers below 1 are given by start-up's numbering of older files
    if top - bottom + 1 < MIN_GAP or known(account) == (bottom, top):
        return
    await db.accounts.update_one({"_id": account["_id"]},
                                 {"$set": {FIELD: {"bottom": bottom, "top": top}}})
