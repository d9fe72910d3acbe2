"""Whose notifications a new link feeds: the member who made it.

A link made in the console is its member's. A link made with an API key is the member's who
made that key: a member's integration (a script, a CRM) sharing documents for them is still
their sharing, and "the link was opened" is news to them. A key made by the operator
(`vault-admin`), or one older than keys naming their maker, has no member: its links are
reported by webhooks only."""

from __future__ import annotations

from vaultd.db import Db


async def link_owner(db: Db, actor: dict[str, str] | None) -> str | None:
    """The member id to note on a new link (`createdBy`), or None."""
    if actor is None:
        return None
    if actor["kind"] == "member":
        return actor["id"]
    if actor["kind"] != "key":
        return None
    key = await db.api_keys.find_one({"_id": actor["id"]}, {"createdBy": 1})
    made_by = key.get("createdBy") if key is not None else None
    if made_by is None or made_by.get("kind") != "member":
        return None
    return made_by["id"]
