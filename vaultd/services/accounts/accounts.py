"""Accounts: creation, plans, branding and live usage."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.plans import Plan, get_plan
from vaultd.records import AccountDoc
from vaultd.services.accounts import link_counts
from vaultd.services.common import id_ranges
from vaultd.timefmt import utcnow

MAX_ACCOUNT_NAME = 200
MAX_BRANDING = 120


@dataclass(frozen=True)
class Account:
    id: str
    name: str
    plan: Plan
    branding: str | None

    @classmethod
    def from_doc(cls, doc: AccountDoc) -> Account:
        return cls(doc["_id"], doc["name"], get_plan(doc["plan"]), doc.get("branding"))

    @property
    def brand(self) -> str:
        """The account's name, or its custom branding where the plan allows it (spec 1.2)."""
        if self.plan.customWatermark and self.branding:
            return self.branding
        return self.name


def _clean_text(value: str, limit: int, what: str) -> str:
    text = " ".join(value.split())
    if not text:
        raise ValueError(f"{what} must not be empty")
    if len(text) > limit:
        raise ValueError(f"{what} is longer than {limit} characters")
    return text


async def create_account(db: Db, name: str, plan_id: str = "free") -> Account:
    plan = get_plan(plan_id)
    doc: AccountDoc = {
        "_id": str(uuid.uuid4()),
        "name": _clean_text(name, MAX_ACCOUNT_NAME, "account name"),
        "plan": plan.id,
        "branding": None,
        "createdAt": utcnow(),
        "usage": {"documents": 0, "storageBytes": 0},
        "pendingUploads": [],
        "pendingDeletes": [],
    }
    await db.accounts.insert_one(doc)
    return Account.from_doc(doc)


async def get_account(db: Db, account_id: str) -> Account:
    doc = await db.accounts.find_one({"_id": account_id})
    if doc is None:
        raise NotFound("account not found")
    return Account.from_doc(doc)


async def any_account(db: Db) -> bool:
    """Whether the vault has an account: the first `_id` window that holds one
    (`id_ranges.batches`), a few bounded reads. An unfiltered `find_one` would read and decode
    every account first: the embedded database does not stop a scan at its limit."""
    async for _ in id_ranges.batches(db.accounts, {"_id": 1}, size=1):
        return True
    return False


async def list_accounts(db: Db) -> list[Account]:
    """Every account, oldest first (`vault-admin accounts list`): read in bounded `_id` windows
    (`id_ranges.batches`) and ordered here, where one `find` sorted by time read them all in
    one operation that every request waited behind."""
    found = [doc async for batch in id_ranges.batches(db.accounts) for doc in batch]
    found.sort(key=lambda doc: (doc["createdAt"], doc["_id"]))
    return [Account.from_doc(doc) for doc in found]


async def set_plan(db: Db, account_id: str, plan_id: str) -> Account:
    get_plan(plan_id)
    await _update(db, account_id, {"plan": plan_id})
    return await get_account(db, account_id)


async def set_branding(db: Db, account_id: str, text: str) -> Account:
    value = _clean_text(text, MAX_BRANDING, "branding") if text.strip() else None
    await _update(db, account_id, {"branding": value})
    return await get_account(db, account_id)


async def _update(db: Db, account_id: str, fields: dict[str, Any]) -> None:
    result = await db.accounts.update_one({"_id": account_id}, {"$set": fields})
    if result.matched_count == 0:
        raise NotFound("account not found")


async def usage(db: Db, account_id: str) -> dict[str, int]:
    """Live usage: counters kept on write for documents, bytes and links (file and room
    links); keys are counted (an account has a handful)."""
    doc = await db.accounts.find_one({"_id": account_id}, {"usage": 1})
    if doc is None:
        raise NotFound("account not found")
    # File and room links, from the maintained count (services.accounts.link_counts).
    active_links = await link_counts.account_live(db, account_id)
    api_keys = await db.api_keys.count_documents({"accountId": account_id, "revokedAt": None})
    return {
        "documents": int(doc["usage"]["documents"]),
        "storageBytes": int(doc["usage"]["storageBytes"]),
        "activeLinks": active_links,
        "apiKeys": api_keys,
    }


async def account_json(db: Db, account: Account) -> dict[str, Any]:
    return {
        "id": account.id,
        "name": account.name,
        "plan": account.plan.to_json(),
        "usage": await usage(db, account.id),
    }
