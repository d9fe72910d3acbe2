"""Stretches of an account's numbers that hold no file and never will, remembered on the account
(`fileGaps: [{bottom, top}]`) so that the file listing reads past them.

`numbered.newest_numbered` widens its ranges across numbers that hold nothing, by GROWTH at a
time, and the range that ends such a stretch holds what it holds: after the 4,549 files
uploaded above the oldest 1,000 were deleted but the newest, page 1 read the 1,000 files below
them for a page of 25 (5.1x of the empty vault's p95: docs/performance-records.md). Numbers
are never given twice (`quota.reserve_upload` raises `fileSeq`), so a number that holds no
stored file never will, unless an upload holds it and has not written its record yet: its
reservation stays in the account's `pendingUploads` until the record is written
(`uploads.Upload._record`). So:

- a listing reads from the account's `fileSeq` down, every number down to the last range's
  lowest. If its account read showed no upload pending, the stretches of at least MIN_GAP
  numbers it found empty (above its first file, between two of its files; all it read if it
  found none) are remembered with those known before, merged, the KEPT highest;
- later listings count only the other numbers in a range's width (`newest_numbered`'s
  `empty`), so one range reaches past a stretch of thousands to the files below it, no wider
  there than the page needs;
- an upload whose reservation recovery cancelled (its process was taken for dead and its blob
  deleted) removes the record it wrote, so no remembered number ever holds a file;
- a restore drops the memory (`storage.restore`), as it drops the files' link counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from vaultd.db import Db

FIELD = "fileGaps"
MIN_GAP = 100  # numbers: a shorter stretch costs a page's ranges little
KEPT = 8  # stretches, the highest (a listing reads from the top down)


def known(account: Mapping[str, Any]) -> list[tuple[int, int]]:
    """The account's stretches known to hold no file, (lowest, highest), highest first."""
    return [(int(gap["bottom"]), int(gap["top"])) for gap in account.get(FIELD) or []]


async def remember(db: Db, account: Mapping[str, Any], numbered: Sequence[Mapping[str, Any]]
                   ) -> None:
    """After a listing of `account` (read with `fileSeq`, `fileSeqFloor`, `pendingUploads` and
    FIELD) read its files by number from `fileSeq` down and found `numbered`, highest first."""
    if account.get("pendingUploads"):
        return  # a pending upload may still write a record under one of the numbers
    edges = [int(account.get("fileSeq", 0)) + 1, *(int(doc["seq"]) for doc in numbered)]
    if not numbered:
        edges.append(int(account.get("fileSeqFloor", 1)) - 1)  # read down to the floor
    found = []
    for upper, lower in pairwise(edges):  # every number between the two was read: none held
        bottom, top = max(lower + 1, 1), upper - 1  # not below 1: start-up numbers older files
        if top - bottom + 1 >= MIN_GAP:
            found.append((bottom, top))
    merged = _merged([*known(account), *found])[:KEPT]
    if merged != known(account):
        await db.accounts.update_one({"_id": account["_id"]}, {"$set": {
            FIELD: [{"bottom": bottom, "top": top} for bottom, top in merged]}})


def _merged(stretches: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or adjacent stretches made one, highest first."""
    merged: list[tuple[int, int]] = []
    for bottom, top in sorted(stretches, reverse=True, key=lambda stretch: stretch[1]):
        if merged and top >= merged[-1][0] - 1:
            merged[-1] = (min(bottom, merged[-1][0]), merged[-1][1])
        else:
            merged.append((bottom, top))
    return merged
