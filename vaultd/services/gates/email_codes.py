"""Email codes: the reader proves control of the link's `viewerEmail`.

Six digits drawn with `secrets`, stored only as HMAC-SHA256 under the deployment's code key
(`code_key`), bound to the session; valid 10 minutes; 5 tries per code (counted before the
check, atomically), then a new code is needed. Sending is limited to one per 30 s per session,
10 an hour per link and address and 20 an hour per address, over rolling hours (`counters`):
never per link alone, or a stranger asking for codes would lock the reader out.
docs/security.md gives the odds."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pymongo import ReturnDocument

from vaultd.db import Db
from vaultd.errors import Forbidden, InvalidRequest, TooManyRequests
from vaultd.records import ViewerSessionDoc
from vaultd.services.gates import counters, events, sessions
from vaultd.services.gates.actions import pending_of, require_gate
from vaultd.services.gates.gated import GatedLink, Reader
from vaultd.services.gates.mail import Mailer
from vaultd.timefmt import utcnow

CODE_DIGITS = 6
CODE_MINUTES = 10
TRIES_PER_CODE = 5
RESEND_SECONDS = 30
SENDS_PER_LINK_HOUR = 10  # per link and address
SENDS_PER_IP_HOUR = 20
WRONG_CODE = "code is not correct"
NO_CODE = "no code was sent in this session: ask for one"
CODE_EXPIRED = "the code has expired: ask for a new one"
TOO_MANY_TRIES = "too many wrong codes: ask for a new one"
ALREADY_VERIFIED = "the email is already verified in this session"
BAD_CODE_FORMAT = "code must be the six digits from the mail"
# ASCII digits only: str.isdigit and \d also take other scripts' digits (Arabic-Indic,
# full-width), which no mail of ours contains.
CODE_FORMAT = re.compile(f"[0-9]{{{CODE_DIGITS}}}", re.ASCII)


def masked(email: str) -> str:
    """a***@example.com: enough for the reader to recognise their address, not to learn it."""
    local, _, domain = email.partition("@")
    return f"{local[:1]}***@{domain}"


@dataclass(frozen=True)
class EmailCodes:
    db: Db
    key: bytes  # code_key(): HMAC key, never stored in clear
    mailer: Mailer

    def _digest(self, session: ViewerSessionDoc, code: str) -> str:
        return hmac.new(self.key, f"{session['_id']}:{code}".encode(), hashlib.sha256).hexdigest()

    async def send(self, link: GatedLink, session: ViewerSessionDoc,
                   reader: Reader) -> dict[str, Any]:
        require_gate(link, "verifyEmail")
        if "verifyEmail" in session["passed"]:
            raise InvalidRequest(ALREADY_VERIFIED)
        await self._limit_sends(link, session, reader)
        code = f"{secrets.randbelow(10 ** CODE_DIGITS):0{CODE_DIGITS}d}"
        await self.db.viewer_sessions.update_one({"_id": session["_id"]}, {"$set": {"code": {
            "hash": self._digest(session, code), "tries": 0,
            "expiresAt": utcnow() + timedelta(minutes=CODE_MINUTES)}}})
        try:
            await self.mailer.send_code(link.viewer_email, code, link.brand, CODE_MINUTES)
        except BaseException:  # not sent: the reader may ask again at once
            await self.db.viewer_sessions.update_one(
                {"_id": session["_id"]}, {"$unset": {"code": "", "lastCodeAt": ""}})
            raise
        await events.verify_entry(self.db, link, "code-sent", reader.ip)
        return {"sentTo": masked(link.viewer_email), "expiresInSeconds": CODE_MINUTES * 60,
                "resendInSeconds": RESEND_SECONDS}

    async def _limit_sends(self, link: GatedLink, session: ViewerSessionDoc,
                           reader: Reader) -> None:
        now = utcnow()
        claimed = await self.db.viewer_sessions.update_one(
            {"_id": session["_id"], "lastCodeAt": {"$not": {"$gt": now - timedelta(
                seconds=RESEND_SECONDS)}}}, {"$set": {"lastCodeAt": now}})
        if not claimed.modified_count:
            raise TooManyRequests(f"a code was sent less than {RESEND_SECONDS} s ago: wait "
                                  "before asking again", retry_after=RESEND_SECONDS)
        address = counters.address_key(reader.ip)
        if not await counters.take(self.db, f"code-link:{link.id}:{address}",
                                   SENDS_PER_LINK_HOUR, 3600):
            raise TooManyRequests("too many codes sent for this link from this address: try "
                                  "again within the hour", retry_after=600)
        if reader.ip and not await counters.take(self.db, f"code-ip:{address}",
                                                 SENDS_PER_IP_HOUR, 3600):
            raise TooManyRequests("too many codes sent to this address: try again within the "
                                  "hour", retry_after=600)

    async def verify(self, link: GatedLink, session: ViewerSessionDoc, value: Any,
                     reader: Reader) -> tuple[list[str], str | None]:
        """(The gates still pending, the session's new id if the code passed now.)"""
        require_gate(link, "verifyEmail")
        if "verifyEmail" in session["passed"]:
            return pending_of(link, session), None
        if not isinstance(value, str) or not CODE_FORMAT.fullmatch(value):
            raise InvalidRequest(BAD_CODE_FORMAT)
        code = await self._take_try(session)
        if not hmac.compare_digest(code["hash"], self._digest(session, value)):
            await events.verify_entry(self.db, link, "wrong-code", reader.ip)
            raise Forbidden(WRONG_CODE)
        renewed = await sessions.mark_passed(self.db, link, session, "verifyEmail")
        await self.db.viewer_sessions.update_one({"_id": session["_id"]},
                                                 {"$unset": {"code": ""}})
        await events.announce(self.db, link, "view.verified", "verify", reader.ip,
                              {"step": "verified"})
        return pending_of(link, session), renewed

    async def _take_try(self, session: ViewerSessionDoc) -> dict[str, Any]:
        """The current code with one more try counted; every try counts, before the check."""
        counted = await self.db.viewer_sessions.find_one_and_update(
            {"_id": session["_id"], "code.tries": {"$lt": TRIES_PER_CODE},
             "code.expiresAt": {"$gt": utcnow()}},
            {"$inc": {"code.tries": 1}}, return_document=ReturnDocument.AFTER)
        if counted is not None and "code" in counted:
            return counted["code"]
        current = await self.db.viewer_sessions.find_one({"_id": session["_id"]}, {"code": 1})
        code = current.get("code") if current else None
        if code is None:
            raise InvalidRequest(NO_CODE)
        if code["tries"] >= TRIES_PER_CODE:
            raise TooManyRequests(TOO_MANY_TRIES, retry_after=1)
        raise InvalidRequest(CODE_EXPIRED)
