"""The console admin's sessions in a `bench.scale_shapes` account: the earlier ones its sessions
page lists, and the bench's own sign-in, numbered after them as `members.sessions` numbers
them. Written straight into the database, as the rest of a shape is."""

from __future__ import annotations

import secrets
from datetime import timedelta

from bench.scale_shape_loading import Loader
from vaultd.db import Db
from vaultd.secrets import digest, new_token
from vaultd.services.members import session_numbers
from vaultd.timefmt import utcnow

SESSIONS = 60  # the admin's console sessions: more than the 50 listed
ADMIN = "bench-admin@shapes.example"


async def signed_in(db: Db, account_id: str) -> str:
    """The admin's session of the bench, as a sign-in opens it (`members.sessions`), numbered
    after the earlier ones: its cookie's value."""
    member = await db.members.find_one({"accountId": account_id, "email": ADMIN})
    assert member is not None
    session, now = new_token(), utcnow()
    await db.member_sessions.insert_one(
        {"_id": digest(session), "publicId": secrets.token_hex(8), "email": ADMIN,
         "method": "link", "accountId": account_id, "memberId": member["_id"],
         "epoch": int(member["sessionEpoch"]), "ip": "127.0.0.1", "userAgent": "bench",
         "createdAt": now, "lastSeenAt": now, "expiresAt": now + timedelta(hours=12),
         "seq": SESSIONS + 1})
    await db.number_counters.update_one({"_id": session_numbers.scope(ADMIN)},
                                        {"$set": {"seq": SESSIONS + 1}})
    return session


async def earlier_sessions(db: Db, account_id: str, loader: Loader) -> int:
    """The admin's SESSIONS earlier console sessions over the last twenty days (the bench signs
    in once more, numbered after): how many were written."""
    member = await db.members.find_one({"accountId": account_id, "email": ADMIN})
    assert member is not None
    now = utcnow()
    first, every = now - timedelta(days=20), timedelta(days=19) / SESSIONS
    written = await loader.insert(db, "member_sessions", (
        {"_id": digest(new_token()), "publicId": secrets.token_hex(8), "email": ADMIN,
         "method": "code", "accountId": account_id, "memberId": member["_id"],
         "epoch": 0, "ip": "203.0.113.9", "userAgent": "bench", "createdAt": at,
         "lastSeenAt": at, "expiresAt": now + timedelta(days=10), "seq": place + 1}
        for place, at in ((place, first + every * place) for place in range(SESSIONS))))
    await db.number_counters.insert_one({"_id": session_numbers.scope(ADMIN), "seq": SESSIONS})
    return written
