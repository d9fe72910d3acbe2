"""Members made straight in the database, as the contract's `MemberDoc` says, and their removal
or role change exactly as the members service makes it (state, role, `sessionEpoch` + 1)."""

from __future__ import annotations

import uuid
from typing import Any

from vaultd.db import Db
from vaultd.records.members import MemberDoc, MemberState, RoleName
from vaultd.timefmt import utcnow


async def insert_member(db: Db, account_id: str, email: str, *, role: RoleName = "admin",
                        state: MemberState = "active", name: str = "A Member") -> str:
    now = utcnow()
    doc: MemberDoc = {"_id": str(uuid.uuid4()), "accountId": account_id, "email": email,
                      "name": name, "role": role, "state": state, "sessionEpoch": 0,
                      "createdAt": now, "updatedAt": now, "invitedBy": "operator"}
    await db.members.insert_one(doc)
    return doc["_id"]


async def change_member(db: Db, member_id: str, **fields: Any) -> None:
    """A removal (`state="removed"`) or a role change (`role=...`): the epoch moves with it."""
    await db.members.update_one({"_id": member_id},
                                {"$set": {**fields, "updatedAt": utcnow()},
                                 "$inc": {"sessionEpoch": 1}})
