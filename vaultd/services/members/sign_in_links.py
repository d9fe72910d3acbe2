"""The operator's one-time sign-in link (`vault-admin members sign-in-link`): for the first
admin, and wherever no SMTP server is set.

The URL carries a random token; the database keeps its SHA-256. It is valid 15 minutes and
spent on first use: the use deletes the record, so of two uses at once only one finds it."""

from __future__ import annotations

from datetime import timedelta

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.records.members import SignInLinkDoc
from vaultd.secrets import digest, is_token, new_token
from vaultd.services.members import sessions
from vaultd.services.members.sign_in import sign_in_verified_email
from vaultd.timefmt import utcnow

LINK_MINUTES = 15
LINK_PATH = "/console/auth/link/"
NOT_A_MEMBER = "{email} is not an invited or active member of account {account}"
LINK_NOT_VALID = "this sign-in link is not valid: it was used, has expired or never existed"


async def create_link(db: Db, settings: Settings, account_id: str, email: str,
                      port: int | None = None) -> str:
    """The URL that signs `email` in to `account_id` once, within LINK_MINUTES."""
    address = email.strip().lower()
    member = await db.members.find_one({"accountId": account_id, "email": address,
                                        "state": {"$in": list(sessions.LIVE_STATES)}})
    if member is None:
        raise NotFound(NOT_A_MEMBER.format(email=address, account=account_id))
    token = new_token()
    doc: SignInLinkDoc = {"_id": digest(token), "accountId": account_id, "email": address,
                          "expiresAt": utcnow() + timedelta(minutes=LINK_MINUTES)}
    await db.sign_in_links.insert_one(doc)
    return f"{settings.viewer_url(port).rstrip('/')}{LINK_PATH}{token}"


async def use_link(db: Db, settings: Settings, token: str, ip: str,
                   user_agent: str) -> sessions.NewSession:
    """The session the link opens, in the link's account; the link is spent."""
    link = None
    if is_token(token):
        link = await db.sign_in_links.find_one_and_delete(
            {"_id": digest(token), "expiresAt": {"$gt": utcnow()}})
    if link is None:
        raise NotFound(LINK_NOT_VALID)
    session = await sign_in_verified_email(db, settings, email=link["email"], method="link",
                                           ip=ip, user_agent=user_agent)
    if session is None:  # removed between the link's making and its use
        raise NotFound(LINK_NOT_VALID)
    if session.chosen_account_id != link["accountId"]:
        signed_in = await sessions.resolve(db, settings, session.session_id)
        if signed_in is not None:
            await sessions.choose_account(db, signed_in, link["accountId"])
    return session
