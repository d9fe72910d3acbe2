"""An account's members: add (invite), list, change a role, remove.

Every change is the actor's, checked here (never only by the route): only a role that may
manage the account changes its members, and the account keeps at least one admin.

The last-admin rule holds under concurrent requests without transactions (the embedded
database has none): the account record counts its admins (`adminCount`), and an admin leaves
(demoted or removed) only through one conditional update of that count, `adminCount > 1`, taken
before the member's record changes. Two requests demoting the last two admins race for that
update; the database applies one at a time, so the second finds the count at 1 and is refused.
An admin joining is counted after the member's record changes. Either way a process killed
between the two writes leaves the count one lower than the admins, never higher: a later
demotion may be refused that should not have been, but the last admin is never lost.
"""

from __future__ import annotations

import uuid
from typing import Any

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.emails import normalize_email
from vaultd.errors import Conflict, InvalidRequest, NotFound
from vaultd.records.members import MemberDoc
from vaultd.services.accounts.accounts import get_account
from vaultd.services.members import activity
from vaultd.services.members.actor import Actor
from vaultd.services.members.roles import Permission, Role
from vaultd.timefmt import iso_utc, utcnow

NAME_CHARS = 200
LAST_ADMIN = "an account keeps at least one admin"
NOT_FOUND = "member not found"
CHANGED_MEANWHILE = "the member was changed by another request; retry"


def parse_email(value: Any) -> str:
    email = normalize_email(value) if isinstance(value, str) else None
    if email is None:
        raise InvalidRequest("email must be a valid email address")
    return email.lower()


def parse_role(value: Any) -> Role:
    if not isinstance(value, str) or value not in {role.value for role in Role}:
        raise InvalidRequest("role must be one of admin, member, auditor")
    return Role(value)


def parse_name(value: Any) -> str:
    """Up to NAME_CHARS characters, shown trimmed with inner whitespace collapsed and an
    unprintable character as U+FFFD (as a room's name): a name is shown, never interpreted."""
    if not isinstance(value, str) or len(value) > NAME_CHARS:
        raise InvalidRequest(f"name must be text of at most {NAME_CHARS} characters")
    return "".join(ch if ch.isprintable() else "\ufffd" for ch in " ".join(value.split()))


def member_json(doc: MemberDoc) -> dict[str, Any]:
    return {"id": doc["_id"], "email": doc["email"], "name": doc["name"], "role": doc["role"],
            "state": doc["state"], "createdAt": iso_utc(doc["createdAt"]),
            "updatedAt": iso_utc(doc["updatedAt"])}


async def add_member(db: Db, actor: Actor, email: str, *, role: Role, name: str = "",
                     ip: str | None = None) -> MemberDoc:
    """Invite `email` with `role` (state `invited` until their first sign-in). A removed
    member may be added again: their record comes back, invited, with the new role."""
    actor.require(Permission.MANAGE_ACCOUNT)
    email, name = parse_email(email), parse_name(name)
    await get_account(db, actor.account_id)  # the operator names the account: it must exist
    now = utcnow()
    doc: MemberDoc = {
        "_id": str(uuid.uuid4()), "accountId": actor.account_id, "email": email, "name": name,
        "role": role.value, "state": "invited", "sessionEpoch": 0,
        "createdAt": now, "updatedAt": now, "invitedBy": actor.id,
    }
    try:
        await db.members.insert_one(doc)
    except DuplicateKeyError:
        readded = await db.members.find_one_and_update(
            {"accountId": actor.account_id, "email": email, "state": "removed"},
            {"$set": {"state": "invited", "role": role.value, "name": name, "updatedAt": now,
                      "invitedBy": actor.id}, "$inc": {"sessionEpoch": 1}},
            return_document=True)
        if readded is None:
            raise Conflict("a member with this email already belongs to this account") from None
        doc = readded
    if role is Role.ADMIN:
        await _admin_joined(db, actor.account_id)
    await activity.record(db, actor, "member.added", target=email,
                          detail={"role": role.value}, ip=ip)
    return doc


async def list_members(db: Db, account_id: str) -> list[MemberDoc]:
    """Every member not removed, by email (an account's people: tens, not thousands)."""
    cursor = db.members.find({"accountId": account_id, "state": {"$ne": "removed"}})
    return sorted(await cursor.to_list(), key=lambda doc: doc["email"])


async def memberships(db: Db, email: str) -> list[MemberDoc]:
    """Every account `email` belongs to (not removed), by account: a person signed in chooses
    one. Read on the `email` index: what one person has, never a scan."""
    cursor = db.members.find({"email": parse_email(email), "state": {"$ne": "removed"}})
    return sorted(await cursor.to_list(), key=lambda doc: doc["accountId"])


async def get_member(db: Db, account_id: str, member_id: str) -> MemberDoc:
    """A member of this account (not removed); another account's is not found, as unknown."""
    doc = await db.members.find_one({"_id": member_id})
    if doc is None or doc["accountId"] != account_id or doc["state"] == "removed":
        raise NotFound(NOT_FOUND)
    return doc


async def member_by_email(db: Db, account_id: str, email: str) -> MemberDoc:
    doc = await db.members.find_one({"accountId": account_id, "email": parse_email(email)})
    if doc is None or doc["state"] == "removed":
        raise NotFound(NOT_FOUND)
    return doc


async def set_role(db: Db, actor: Actor, member_id: str, role: Role, *,
                   ip: str | None = None) -> MemberDoc:
    """Change a member's role; their sessions end (`sessionEpoch`). The last admin stays."""
    actor.require(Permission.MANAGE_ACCOUNT)
    doc = await get_member(db, actor.account_id, member_id)
    old = Role(doc["role"])
    if old is role:
        return doc
    if old is Role.ADMIN:
        await _admin_leaving(db, actor.account_id)
    changed = await db.members.find_one_and_update(
        {"_id": member_id, "role": old.value, "state": {"$ne": "removed"}},
        {"$set": {"role": role.value, "updatedAt": utcnow()}, "$inc": {"sessionEpoch": 1}},
        return_document=True)
    if changed is None:
        if old is Role.ADMIN:
            await _admin_joined(db, actor.account_id)  # the admin did not leave after all
        raise Conflict(CHANGED_MEANWHILE)
    if role is Role.ADMIN:
        await _admin_joined(db, actor.account_id)
    await activity.record(db, actor, "member.role_changed", target=changed["email"],
                          detail={"from": old.value, "to": role.value}, ip=ip)
    return changed


async def remove_member(db: Db, actor: Actor, member_id: str, *,
                        ip: str | None = None) -> MemberDoc:
    """Remove a member: their sessions end; their record stays (the log's actor resolves).
    API keys they created keep working until revoked: a key belongs to the account."""
    actor.require(Permission.MANAGE_ACCOUNT)
    doc = await get_member(db, actor.account_id, member_id)
    if doc["role"] == Role.ADMIN.value:
        await _admin_leaving(db, actor.account_id)
    removed = await db.members.find_one_and_update(
        {"_id": member_id, "role": doc["role"], "state": {"$ne": "removed"}},
        {"$set": {"state": "removed", "updatedAt": utcnow()}, "$inc": {"sessionEpoch": 1}},
        return_document=True)
    if removed is None:
        if doc["role"] == Role.ADMIN.value:
            await _admin_joined(db, actor.account_id)
        raise Conflict(CHANGED_MEANWHILE)
    await activity.record(db, actor, "member.removed", target=removed["email"], ip=ip)
    return removed


async def _admin_joined(db: Db, account_id: str) -> None:
    await db.accounts.update_one({"_id": account_id}, {"$inc": {"adminCount": 1}})


async def _admin_leaving(db: Db, account_id: str) -> None:
    """Take one admin off the count, or refuse (409) if that would leave none."""
    taken = await db.accounts.find_one_and_update(
        {"_id": account_id, "adminCount": {"$gt": 1}}, {"$inc": {"adminCount": -1}})
    if taken is None:
        raise Conflict(LAST_ADMIN)
