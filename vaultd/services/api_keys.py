"""API keys: created and revoked by operators (vault-admin), resolved on every API request."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.errors import NotFound, PlanLimitReached
from vaultd.records import ApiKeyDoc
from vaultd.secrets import API_KEY_PREFIX, digest, is_api_key, new_api_key
from vaultd.services.accounts import Account, get_account
from vaultd.timefmt import iso_utc, utcnow


@dataclass(frozen=True)
class ApiKeyInfo:
    id: str
    account_id: str
    hint: str  # first characters after the prefix, enough to tell keys apart, never the key
    created_at: datetime
    revoked_at: datetime | None

    @classmethod
    def from_doc(cls, doc: ApiKeyDoc) -> ApiKeyInfo:
        return cls(
            doc["_id"], doc["accountId"], doc["hint"], doc["createdAt"], doc.get("revokedAt")
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "accountId": self.account_id,
            "hint": self.hint,
            "createdAt": iso_utc(self.created_at),
            "revokedAt": iso_utc(self.revoked_at) if self.revoked_at else None,
        }


async def create_key(db: Db, account_id: str) -> tuple[ApiKeyInfo, str]:
    """Returns the key's record and the key itself, which is shown once and never stored."""
    account = await get_account(db, account_id)
    active = await db.api_keys.count_documents({"accountId": account_id, "revokedAt": None})
    if active >= account.plan.maxApiKeys:
        raise PlanLimitReached(
            f"plan {account.plan.name} allows {account.plan.maxApiKeys} API keys"
        )
    while True:
        key = new_api_key()
        doc: ApiKeyDoc = {
            "_id": f"key_{uuid.uuid4().hex[:16]}",
            "accountId": account_id,
            "hash": digest(key),
            "hint": key[: len(API_KEY_PREFIX) + 4] + "…",
            "createdAt": utcnow(),
            "revokedAt": None,
        }
        try:
            await db.api_keys.insert_one(doc)
            return ApiKeyInfo.from_doc(doc), key
        except DuplicateKeyError:  # a 256-bit collision; retry rather than reason about it
            continue


async def list_keys(db: Db, account_id: str) -> list[ApiKeyInfo]:
    await get_account(db, account_id)
    cursor = db.api_keys.find({"accountId": account_id}).sort("createdAt", 1)
    return [ApiKeyInfo.from_doc(doc) async for doc in cursor]


async def revoke_key(db: Db, key_id: str) -> ApiKeyInfo:
    doc = await db.api_keys.find_one_and_update(
        {"_id": key_id, "revokedAt": None}, {"$set": {"revokedAt": utcnow()}}, return_document=True
    )
    doc = doc or await db.api_keys.find_one({"_id": key_id})
    if doc is None:
        raise NotFound("API key not found")
    return ApiKeyInfo.from_doc(doc)


async def resolve_key(db: Db, key: str) -> Account | None:
    """The account of a live key, or None for a malformed, unknown or revoked one."""
    account_id = await key_owner(db, key)
    if account_id is None:
        return None
    try:
        return await get_account(db, account_id)
    except NotFound:
        return None


# What a key check reads of a key's record.
KEY_CHECK_FIELDS = {"accountId": 1, "revokedAt": 1}


async def key_owner(db: Db, key: str) -> str | None:
    """The account id of a live key, or None for a malformed, unknown or revoked one."""
    if not is_api_key(key):
        return None
    return live_owner(await db.api_keys.find_one({"hash": digest(key)}, KEY_CHECK_FIELDS))


def live_owner(doc: ApiKeyDoc | None) -> str | None:
    """The account id in a key's record (KEY_CHECK_FIELDS of it), or None if missing or revoked."""
    if doc is None or doc.get("revokedAt") is not None:
        return None
    return doc["accountId"]
