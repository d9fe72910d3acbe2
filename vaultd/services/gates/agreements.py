"""Agreements (NDAs): immutable texts, one record per version.

Creating with a `name` already used by the account adds a new version of that agreement; a
version is never edited, and a link keeps the version it was created with (`AgreementRefDoc`),
so what a reader accepted is exactly the text whose SHA-256 the acceptance names."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from pymongo import DESCENDING
from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.errors import InvalidRequest, NotFound, PlanLimitReached
from vaultd.records import AgreementDoc, AgreementRefDoc
from vaultd.services.accounts.accounts import Account
from vaultd.services.files.files import is_uuid
from vaultd.services.members.callers import require_caller
from vaultd.services.members.roles import Permission
from vaultd.timefmt import iso_utc, utcnow

MAX_NAME = 200
MAX_TEXT = 12_000  # characters: the body must fit the 16 KiB JSON limit (web.body_guard)
AGREEMENT_NOT_FOUND = "agreement not found"
PLANS_WITH_AGREEMENTS = ("pro", "business")


def require_plan(account: Account) -> None:
    if account.plan.id not in PLANS_WITH_AGREEMENTS:
        raise PlanLimitReached(
            f"agreements need plan Pro or Business; this account is on plan {account.plan.name}")


def parse_agreement(body: dict[str, Any]) -> tuple[str, str]:
    name, text = body.get("name"), body.get("text")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise InvalidRequest(f"name is required: a string of at most {MAX_NAME} characters")
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
        raise InvalidRequest(f"text is required: a string of at most {MAX_TEXT} characters")
    return " ".join(name.split()), text


async def create_agreement(db: Db, account: Account, name: str, text: str) -> AgreementDoc:
    """A new agreement, or the next version of the account's agreement of that name."""
    require_caller(Permission.CHANGE_CONTENT)
    require_plan(account)
    while True:
        latest = await db.agreements.find_one({"accountId": account.id, "name": name},
                                              sort=[("version", DESCENDING)])
        agreement_id = latest["agreementId"] if latest else str(uuid.uuid4())
        version = latest["version"] + 1 if latest else 1
        doc: AgreementDoc = {
            "_id": f"{agreement_id}:{version}", "agreementId": agreement_id,
            "accountId": account.id, "version": version, "name": name, "text": text,
            "sha256": hashlib.sha256(text.encode()).hexdigest(), "createdAt": utcnow(),
        }
        try:  # the _id makes two concurrent creates of one version collide: the loser retries
            await db.agreements.insert_one(doc)
        except DuplicateKeyError:
            continue
        return doc


async def latest_version(db: Db, account_id: str, agreement_id: str) -> AgreementDoc:
    if not isinstance(agreement_id, str) or not is_uuid(agreement_id):
        raise NotFound(AGREEMENT_NOT_FOUND)
    doc = await db.agreements.find_one({"accountId": account_id, "agreementId": agreement_id},
                                       sort=[("version", DESCENDING)])
    if doc is None:
        raise NotFound(AGREEMENT_NOT_FOUND)
    return doc


async def version_of(db: Db, ref: AgreementRefDoc) -> AgreementDoc:
    doc = await db.agreements.find_one({"_id": f"{ref['id']}:{ref['version']}"})
    if doc is None:
        raise NotFound(AGREEMENT_NOT_FOUND)
    return doc


async def list_agreements(db: Db, account_id: str) -> list[AgreementDoc]:
    """Each agreement's latest version, newest first."""
    latest: dict[str, AgreementDoc] = {}
    async for doc in db.agreements.find({"accountId": account_id}, {"text": 0}).sort(
            "createdAt", DESCENDING):
        latest.setdefault(doc["agreementId"], doc)
    return list(latest.values())


def reference(doc: AgreementDoc) -> AgreementRefDoc:
    return {"id": doc["agreementId"], "version": doc["version"], "sha256": doc["sha256"]}


def agreement_json(doc: AgreementDoc, with_text: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"id": doc["agreementId"], "name": doc["name"],
                            "version": doc["version"], "sha256": doc["sha256"],
                            "createdAt": iso_utc(doc["createdAt"])}
    if with_text:
        body["text"] = doc["text"]
    return body
