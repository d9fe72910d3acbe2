"""Plan limits and usage counters, exact under concurrency and crashes.

Every change to an account's usage is one atomic update of the account document, so concurrent
uploads through any number of vaultd processes can never pass a limit. A reservation is
recorded in the same update (`pendingUploads`, `pendingDeletes`), so a process killed half way
leaves a trace that `recover` can settle: counters stay exact without transactions, which a
standalone MongoDB does not offer.
"""

from __future__ import annotations

from typing import Any

from pymongo import ReturnDocument

from vaultd.db import Db
from vaultd.errors import NotFound, PlanLimitReached
from vaultd.plans import get_plan
from vaultd.records import UsageDoc
from vaultd.timefmt import utcnow


def _fits(plan_id: str, size: int) -> dict[str, Any]:
    plan = get_plan(plan_id)
    conditions: list[dict[str, Any]] = [
        {"$lte": [{"$add": ["$usage.storageBytes", size]}, plan.maxStorageBytes]}
    ]
    if plan.maxDocuments is not None:
        conditions.append({"$lt": ["$usage.documents", plan.maxDocuments]})
    return {"$expr": {"$and": conditions}}


async def reserve_upload(db: Db, account_id: str, file_id: str, size: int, owner: str) -> int:
    """Count a new file of `size` bytes, or raise PlanLimitReached naming the plan and limit;
    returns the file's number in the account (`fileSeq`, raised in the same update: the
    listing reads numbers, `services.common.numbered`).

    `owner` is the reserving process's instance id, so recovery knows when it died."""
    doc = await db.accounts.find_one({"_id": account_id}, {"plan": 1, "usage": 1})
    if doc is None:
        raise NotFound("account not found")
    # The plan is part of the filter, so a concurrent plan change makes this retry-safe: the
    # update simply does not match and we report the limit of the plan we read.
    counted = await db.accounts.find_one_and_update(
        {"_id": account_id, "plan": doc["plan"], **_fits(doc["plan"], size)},
        {
            "$inc": {"usage.documents": 1, "usage.storageBytes": size, "fileSeq": 1},
            "$push": {
                "pendingUploads": {"id": file_id, "size": size, "at": utcnow(), "owner": owner}
            },
        },
        {"fileSeq": 1}, return_document=ReturnDocument.AFTER,
    )
    if counted is not None:
        return int(counted["fileSeq"])
    # Read again: concurrent uploads may have used the room since our first read.
    current = await db.accounts.find_one({"_id": account_id}, {"plan": 1, "usage": 1}) or doc
    raise _limit_error(current["plan"], current["usage"], size)


async def check_room(db: Db, account_id: str, size: int | None) -> None:
    """Refuse an upload at once when its declared size (or one more document) cannot fit the
    plan, before any byte is stored. Advisory: reserve_upload still decides at the end."""
    doc = await db.accounts.find_one({"_id": account_id}, {"plan": 1, "usage": 1})
    if doc is None:
        raise NotFound("account not found")
    plan, usage = get_plan(doc["plan"]), doc["usage"]
    full = plan.maxDocuments is not None and usage["documents"] >= plan.maxDocuments
    if full or usage["storageBytes"] + (size or 0) > plan.maxStorageBytes:
        raise _limit_error(doc["plan"], usage, size or 0)


def _limit_error(plan_id: str, usage: UsageDoc, size: int) -> PlanLimitReached:
    plan = get_plan(plan_id)
    if plan.maxDocuments is not None and usage["documents"] >= plan.maxDocuments:
        return PlanLimitReached(
            f"document limit reached: plan {plan.name} allows {plan.maxDocuments} documents"
        )
    return PlanLimitReached(
        f"storage limit reached: plan {plan.name} allows {plan.maxStorageBytes} bytes"
    )


async def settle_upload(db: Db, account_id: str, file_id: str) -> bool:
    """The file record exists: the reservation becomes plain usage. False: there was none (a
    second call, or recovery cancelled it)."""
    result = await db.accounts.update_one(
        {"_id": account_id, "pendingUploads.id": file_id},
        {"$pull": {"pendingUploads": {"id": file_id}}}
    )
    return bool(result.modified_count)


async def cancel_upload(db: Db, account_id: str, file_id: str, size: int) -> None:
    """Give back a reservation; matching on the entry makes a second call a no-op."""
    await db.accounts.update_one(
        {"_id": account_id, "pendingUploads.id": file_id},
        {
            "$inc": {"usage.documents": -1, "usage.storageBytes": -size},
            "$pull": {"pendingUploads": {"id": file_id}},
        },
    )


async def release_file(db: Db, account_id: str, file_id: str, size: int,
                       live_links: int = 0) -> bool:
    """Uncount a file being deleted, and its `live_links` (`services.accounts.link_counts`); the
    pendingDeletes marker makes it happen exactly once."""
    result = await db.accounts.update_one(
        {"_id": account_id, "pendingDeletes": {"$ne": file_id}},
        {
            "$inc": {"usage.documents": -1, "usage.storageBytes": -size,
                     "linkCount.live": -live_links},
            "$push": {"pendingDeletes": file_id},
        },
    )
    return result.modified_count == 1


async def finish_release(db: Db, account_id: str, file_id: str) -> None:
    await db.accounts.update_one({"_id": account_id}, {"$pull": {"pendingDeletes": file_id}})
