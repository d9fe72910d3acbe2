"""An account's API keys as its admins manage them: each with a name, a role and the actor
who made it, every creation and revocation in the activity log.

A key belongs to the account, not to the member who made it: a member removed later leaves
their keys working until an admin revokes them (the list shows who made each)."""

from __future__ import annotations

from typing import Any

from vaultd.db import Db
from vaultd.services.accounts import api_keys
from vaultd.services.accounts.api_keys import ApiKeyInfo
from vaultd.services.members import activity
from vaultd.services.members.actor import Actor
from vaultd.services.members.members import parse_name
from vaultd.services.members.roles import Permission, Role


def key_json(info: ApiKeyInfo) -> dict[str, Any]:
    """A key as its account sees it: never the key, nor its hash."""
    out = info.to_json()
    out.pop("accountId")
    out["prefix"] = out.pop("hint")
    return out


async def create(db: Db, actor: Actor, *, name: str = "", role: Role = Role.ADMIN,
                 ip: str | None = None) -> tuple[ApiKeyInfo, str]:
    """The new key's record and the key, shown once."""
    actor.require(Permission.MANAGE_ACCOUNT)
    info, key = await api_keys.create_key(db, actor.account_id, name=parse_name(name),
                                          role=role.value, created_by=actor.as_record())
    await activity.record(db, actor, "key.created", target=info.id,
                          detail={"name": info.name, "role": info.role}, ip=ip)
    return info, key


async def list_keys(db: Db, account_id: str) -> list[ApiKeyInfo]:
    return await api_keys.list_keys(db, account_id)


async def revoke(db: Db, actor: Actor, key_id: str, *, ip: str | None = None) -> ApiKeyInfo:
    """Revoke one of the actor's account's keys (idempotent: recorded the first time)."""
    actor.require(Permission.MANAGE_ACCOUNT)
    info, revoked_now = await api_keys.revoke_key_once(db, key_id, actor.account_id)
    if revoked_now:
        await activity.record(db, actor, "key.revoked", target=info.id,
                              detail={"name": info.name}, ip=ip)
    return info
