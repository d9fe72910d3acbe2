"""Members' sessions, kept on the server: the cookie carries a random id, the database its
SHA-256 (`MemberSessionDoc._id`), so a read of the database opens no session.

A session ends when it has been idle `auth.session_idle_minutes`, when it is
`auth.session_lifetime_hours` old, at sign-out or revocation, and at once when its member is
removed, their role changes (their `sessionEpoch` moves), or their account is deleted: every
request reads the session with its member and account in one `aggregate` and checks all three.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import InvalidRequest, NotFound
from vaultd.records import AccountDoc
from vaultd.records.members import MemberDoc, MemberSessionDoc, SignInMethod
from vaultd.secrets import digest, is_token, new_token
from vaultd.services.common.numbered import newest_numbered
from vaultd.services.members import activity, session_numbers
from vaultd.services.members.actor import Actor
from vaultd.services.members.roles import Role
from vaultd.timefmt import iso_utc, utcnow

# The last-seen time is written at most this often: a request inside it is one read. The idle
# timeout is therefore exact to within this much.
TOUCH_EVERY = timedelta(seconds=60)
LISTED_SESSIONS = 50  # a person's sessions listed, newest first
LIVE_STATES = ("invited", "active")
_MEMBER, _ACCOUNT = "sessionMember", "sessionAccount"  # fields the resolving read adds
NO_SUCH_SESSION = "no such session"
NO_SUCH_ACCOUNT = "you are not a member of that account"


@dataclass(frozen=True)
class AccountChoice:
    """An account the signed-in person may work in, as the sign-in answer lists it."""

    account_id: str
    account_name: str
    member_id: str
    role: str
    epoch: int

    def as_json(self) -> dict[str, str]:
        return {"accountId": self.account_id, "name": self.account_name, "role": self.role}


@dataclass(frozen=True)
class NewSession:
    """A session just opened: `session_id` is the cookie's secret, shown nowhere else."""

    session_id: str
    csrf_token: str
    accounts: tuple[AccountChoice, ...]
    chosen_account_id: str | None


@dataclass(frozen=True)
class SignedIn:
    """A live session as a request sees it (`resolve`)."""

    key: str  # the stored hash of the session id
    public_id: str
    email: str
    csrf_token: str
    account_id: str | None
    account: AccountDoc | None  # the chosen account's record, read with the session
    member: MemberDoc | None

    @property
    def actor(self) -> Actor | None:
        """The member the request is attributed to; None before an account is chosen."""
        if self.member is None or self.account_id is None:
            return None
        member = self.member
        return Actor(account_id=self.account_id, role=Role(member["role"]), kind="member",
                     id=member["_id"], label=member["email"])


def csrf_token_of(session_id: str) -> str:
    """The session's CSRF token, derived from its secret id: nothing more is stored, and the
    stored hash (a plain SHA-256) does not give it."""
    mac = hmac.new(session_id.encode(), b"vaultd member session csrf", hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode()


async def memberships(db: Db, email: str) -> list[AccountChoice]:
    """The accounts `email` is an invited or active member of, whose account still exists."""
    pipeline: list[dict[str, Any]] = [
        {"$match": {"email": email}},
        {"$lookup": {"from": db.accounts.name, "localField": "accountId",
                     "foreignField": "_id", "as": _ACCOUNT}},
    ]
    found = []
    async for doc in await db.raw(db.members.name).aggregate(pipeline):
        if doc["state"] in LIVE_STATES and doc[_ACCOUNT]:
            found.append(AccountChoice(doc["accountId"], doc[_ACCOUNT][0]["name"], doc["_id"],
                                       doc["role"], int(doc["sessionEpoch"])))
    return sorted(found, key=lambda choice: (choice.account_name, choice.account_id))


async def open_session(db: Db, settings: Settings, *, email: str, method: SignInMethod,
                       ip: str, user_agent: str, accounts: list[AccountChoice]) -> NewSession:
    """A new session; a person in one account has it chosen for them."""
    number = await session_numbers.next_number(db, email)
    session_id, now = new_token(), utcnow()
    chosen = accounts[0] if len(accounts) == 1 else None
    doc: MemberSessionDoc = {
        "_id": digest(session_id), "publicId": secrets.token_hex(8), "email": email,
        "method": method, "accountId": chosen.account_id if chosen else None,
        "memberId": chosen.member_id if chosen else None,
        "epoch": chosen.epoch if chosen else None, "ip": ip, "userAgent": user_agent[:300],
        "createdAt": now, "lastSeenAt": now,
        "expiresAt": now + timedelta(hours=settings.auth_session_lifetime_hours),
        "seq": number}
    await db.member_sessions.insert_one(doc)
    return NewSession(session_id, csrf_token_of(session_id), tuple(accounts),
                      chosen.account_id if chosen else None)


async def resolve(db: Db, settings: Settings, session_id: str) -> SignedIn | None:
    """The live session of `session_id`, read with its member and account in one round trip;
    None (and the record deleted) when it has ended for any reason."""
    if not is_token(session_id):
        return None
    key = digest(session_id)
    pipeline: list[dict[str, Any]] = [
        {"$match": {"_id": key}},
        {"$lookup": {"from": db.members.name, "localField": "memberId",
                     "foreignField": "_id", "as": _MEMBER}},
        {"$lookup": {"from": db.accounts.name, "localField": "accountId",
                     "foreignField": "_id", "as": _ACCOUNT}},
    ]
    doc: dict[str, Any] | None = None
    async for found in await db.raw(db.member_sessions.name).aggregate(pipeline):
        doc = found
    if doc is None:
        return None
    members, accounts = doc.pop(_MEMBER), doc.pop(_ACCOUNT)
    session = cast("MemberSessionDoc", doc)
    member = cast("MemberDoc", members[0]) if members else None
    now = utcnow()
    if not _alive(session, member, bool(accounts), settings, now):
        await db.member_sessions.delete_one({"_id": key})
        return None
    if now - session["lastSeenAt"] >= TOUCH_EVERY:
        await db.member_sessions.update_one({"_id": key}, {"$set": {"lastSeenAt": now}})
    return SignedIn(key, session["publicId"], session["email"], csrf_token_of(session_id),
                    session["accountId"],
                    cast("AccountDoc", accounts[0]) if accounts else None, member)


def _alive(session: MemberSessionDoc, member: MemberDoc | None, account_exists: bool,
           settings: Settings, now: datetime) -> bool:
    idle = timedelta(minutes=settings.auth_session_idle_minutes)
    if session["expiresAt"] <= now or now - session["lastSeenAt"] >= idle:
        return False
    if session["accountId"] is None:
        return True  # signed in, no account chosen yet: nothing to check against
    return (member is not None and account_exists and member["state"] == "active"
            and member["sessionEpoch"] == session["epoch"]
            and member["accountId"] == session["accountId"])


async def choose_account(db: Db, signed_in: SignedIn, account_id: object) -> AccountChoice:
    """Work in `account_id` from now on in this session (one of the person's accounts)."""
    if not isinstance(account_id, str) or not account_id:
        raise InvalidRequest("accountId must be a non-empty string")
    choice = next((c for c in await memberships(db, signed_in.email)
                   if c.account_id == account_id), None)
    if choice is None:
        raise NotFound(NO_SUCH_ACCOUNT)
    await db.members.update_one({"_id": choice.member_id, "state": "invited"},
                                    {"$set": {"state": "active", "updatedAt": utcnow()}})
    await db.member_sessions.update_one({"_id": signed_in.key}, {"$set": {
        "accountId": choice.account_id, "memberId": choice.member_id, "epoch": choice.epoch}})
    return choice


async def sign_out(db: Db, signed_in: SignedIn, *, ip: str | None = None) -> None:
    await db.member_sessions.delete_one({"_id": signed_in.key})
    await _record_end(db, signed_in.email, signed_in.account_id,
                      signed_in.member["_id"] if signed_in.member else None, "signed out", ip)


async def list_sessions(db: Db, signed_in: SignedIn) -> list[dict[str, Any]]:
    """The person's newest LISTED_SESSIONS sessions, newest first, read by their numbers
    (`session_numbers`: about what is listed, however many there are); each named by its
    public id, never its secret."""
    top, floor = await session_numbers.bounds(db, signed_in.email)
    found = await newest_numbered(db.member_sessions, {"email": signed_in.email}, "seq",
                                  count=LISTED_SESSIONS, top=top, floor=floor)
    return [{"id": doc["publicId"], "current": doc["_id"] == signed_in.key,
             "accountId": doc["accountId"], "method": doc["method"], "ip": doc["ip"],
             "userAgent": doc["userAgent"], "createdAt": iso_utc(doc["createdAt"]),
             "lastSeenAt": iso_utc(doc["lastSeenAt"])} for doc in found]


async def revoke(db: Db, signed_in: SignedIn, public_id: str, *,
                 ip: str | None = None) -> None:
    """End one of the person's own sessions (another person's is not found)."""
    ended = await db.member_sessions.find_one_and_delete({"email": signed_in.email,
                                                          "publicId": public_id})
    if ended is None:
        raise NotFound(NO_SUCH_SESSION)
    await _record_end(db, signed_in.email, ended["accountId"], ended["memberId"], "revoked",
                      ip)


async def _record_end(db: Db, email: str, account_id: str | None, member_id: str | None,
                      how: str, ip: str | None) -> None:
    """A session's end in its account's activity log (one with no account chosen has none)."""
    if account_id is not None and member_id is not None:
        await activity.record_for(db, account_id, activity.member_record(member_id, email),
                                  "signout", detail={"how": how}, ip=ip)
