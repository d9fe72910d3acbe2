"""The one sign-in every method ends in (a mailed code, the operator's link, OpenID Connect):
the method has proved the person controls `email`; this opens their session."""

from __future__ import annotations

from typing import Literal

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.members import sessions
from vaultd.services.members.sessions import NewSession
from vaultd.timefmt import utcnow

__all__ = ["NewSession", "sign_in_verified_email"]


async def sign_in_verified_email(db: Db, settings: Settings, *, email: str,
                                 method: Literal["code", "link", "oidc"], ip: str,
                                 user_agent: str) -> NewSession | None:
    """A new session for the person at `email` (already verified by `method`), or None when
    they are not an invited or active member of any account: the caller then answers exactly
    as for a wrong code, so that sign-in tells no one who is a member.

    Signing in is what accepting an invitation means: the person's invited records turn
    active. A person in one account has it chosen; one in several chooses
    (`sessions.choose_account`)."""
    address = email.strip().lower()
    await db.members.update_many({"email": address, "state": "invited"},
                                 {"$set": {"state": "active", "updatedAt": utcnow()}})
    accounts = await sessions.memberships(db, address)
    if not accounts:
        return None
    return await sessions.open_session(db, settings, email=address, method=method, ip=ip,
                                       user_agent=user_agent, accounts=accounts)
