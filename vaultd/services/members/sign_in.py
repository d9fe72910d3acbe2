"""The one sign-in every method ends in (a mailed code, the operator's link, OpenID Connect):
the method has proved the person controls `email`; this opens their session, and records the
sign-in in the activity log of each of the person's accounts (a failed try: `record_failed`)."""

from __future__ import annotations

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.records.members import SignInMethod
from vaultd.services.members import activity, sessions
from vaultd.services.members.sessions import NewSession
from vaultd.timefmt import utcnow

__all__ = ["NewSession", "record_failed", "sign_in_verified_email"]


async def sign_in_verified_email(db: Db, settings: Settings, *, email: str,
                                 method: SignInMethod, ip: str,
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
    session = await sessions.open_session(db, settings, email=address, method=method, ip=ip,
                                          user_agent=user_agent, accounts=accounts)
    # In each of the person's accounts: the session may enter any of them, so each account's
    # admins see that this person holds one (and from where).
    for choice in accounts:
        await activity.record_for(db, choice.account_id,
                                  activity.member_record(choice.member_id, address), "signin",
                                  detail={"method": method}, ip=ip)
    return session


async def record_failed(db: Db, email: str, *, method: SignInMethod, ip: str) -> None:
    """A failed try at a member's sign-in, in each account the address is a member of;
    nothing for an address of no member. Called off the request path (by the caller's task),
    so a stranger's failure costs the request what a member's does."""
    address = email.strip().lower()
    for choice in await sessions.memberships(db, address):
        await activity.record_for(db, choice.account_id,
                                  activity.member_record(choice.member_id, address),
                                  "signin.failed", detail={"method": method}, ip=ip)
