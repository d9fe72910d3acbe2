"""Sign-in by a mailed code: the person proves they read the mail of their address.

Six ASCII digits drawn with `secrets`, kept only as an HMAC under the deployment's code key
(`common.code_key`), valid 10 minutes; 5 tries per code, each counted before the check, then
the code is spent. Sends are limited per address and per IP over a rolling hour
(`common.rolling_limits`, in the database, so every vaultd sharing it holds them).

Nobody learns who is a member. Asking for a code does the same work on the request path for
any well-formed address: the limits, a new code stored under the address, and a task started;
only that task, after the answer has gone, looks the address up and mails the code to a
member. A stranger's address therefore holds a code no one received, which is tried, spent and
expires exactly as a member's; a wrong, expired or spent code gets one message for all. A
wrong try at a member's code goes to their accounts' activity logs the same way: by a task,
after the answer.
The mail carries no link: mail scanners open links."""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import timedelta
from email.message import EmailMessage
from typing import Any
from urllib.parse import urlsplit

from pymongo import ReturnDocument

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.emails import normalize_email
from vaultd.errors import InvalidRequest, ServiceUnavailable, TooManyRequests
from vaultd.services.common import rolling_limits, smtp
from vaultd.services.members import sessions
from vaultd.services.members.sign_in import record_failed, sign_in_verified_email
from vaultd.timefmt import utcnow

log = logging.getLogger("vaultd.members")

CODE_DIGITS = 6
CODE_MINUTES = 10
TRIES_PER_CODE = 5
SENDS_PER_ADDRESS_HOUR = 5
SENDS_PER_IP_HOUR = 20
BAD_EMAIL = "email must be a valid email address"
BAD_CODE = "code must be the six digits from the mail"
WRONG_CODE = "the code is wrong, expired or spent: ask for a new one"
NO_MAIL = ("sign-in by mailed code is off here (smtp.host is not set): ask the operator for a "
           "sign-in link")
MAIL_FAILED = "the sign-in code could not be sent; retry shortly"
TOO_MANY_FOR_ADDRESS = "too many codes asked for this address: try again within the hour"
TOO_MANY_FOR_IP = "too many codes asked from this network address: try again within the hour"

Spawn = Callable[[Coroutine[Any, Any, object], str], None]


def address_of(value: Any) -> str:
    address = normalize_email(value) if isinstance(value, str) and len(value) <= 320 else None
    if address is None:
        raise InvalidRequest(BAD_EMAIL)
    return address.lower()


def is_code(value: Any) -> bool:
    """Exactly six ASCII digits (str.isdigit alone would take Arabic-Indic or full-width ones)."""
    return (isinstance(value, str) and len(value) == CODE_DIGITS and value.isascii()
            and value.isdigit())


def code_message(settings: Settings, to: str, code: str) -> EmailMessage:
    """The code, how long it lasts and where to type it, as text: no link."""
    site = urlsplit(settings.public_url).netloc if settings.public_url else "your vault"
    message = EmailMessage()
    message["From"] = smtp.sender(settings)
    message["To"] = to
    message["Subject"] = "Your sign-in code"
    message.set_content(
        f"Your code to sign in to {site} is:\n\n    {code}\n\n"
        f"It is valid for {CODE_MINUTES} minutes. Type it only on the sign-in page you "
        "opened yourself; nobody at your company or at vaultd will ever ask you for it.\n"
        "If you did not ask for it, ignore this mail: without the code no one can sign in.\n")
    return message


@dataclass(frozen=True)
class SignInCodes:
    db: Db
    settings: Settings
    key: bytes  # common.code_key(): the HMAC key, never stored in clear
    spawn: Spawn  # starts the mail's task, off the request path

    def _digest(self, address: str, code: str) -> str:
        return hmac.new(self.key, f"sign-in:{address}:{code}".encode(),
                        hashlib.sha256).hexdigest()

    def _limit_key(self, kind: str, value: str) -> str:
        """The limit's record named by an HMAC: the database keeps no list of addresses."""
        return f"sign-in-{kind}:" + hmac.new(self.key, value.encode(),
                                             hashlib.sha256).hexdigest()[:32]

    async def send(self, email: Any, ip: str) -> None:
        """Answered the same for every well-formed address (see the module's text)."""
        if not self.settings.smtp_host:
            raise ServiceUnavailable(NO_MAIL, retry_after=3600)
        address = address_of(email)
        if not await rolling_limits.take(self.db, self._limit_key("address", address),
                                         SENDS_PER_ADDRESS_HOUR, 3600):
            raise TooManyRequests(TOO_MANY_FOR_ADDRESS, retry_after=600)
        if ip and not await rolling_limits.take(self.db, self._limit_key("ip", ip),
                                                SENDS_PER_IP_HOUR, 3600):
            raise TooManyRequests(TOO_MANY_FOR_IP, retry_after=600)
        code = f"{secrets.randbelow(10 ** CODE_DIGITS):0{CODE_DIGITS}d}"
        await self.db.sign_in_codes.replace_one({"_id": address}, {
            "_id": address, "hash": self._digest(address, code), "tries": 0,
            "expiresAt": utcnow() + timedelta(minutes=CODE_MINUTES)}, upsert=True)
        self.spawn(self._mail_if_member(address, code), "sign-in code mail")

    async def _mail_if_member(self, address: str, code: str) -> None:
        if not await sessions.memberships(self.db, address):
            return
        try:
            await smtp.send(self.settings, code_message(self.settings, address, code),
                            MAIL_FAILED)
        except ServiceUnavailable:
            return  # logged by smtp.send (without the address); the person asks again

    async def sign_in(self, email: Any, code: Any, ip: str,
                      user_agent: str) -> sessions.NewSession:
        """A session for the right code; one refusal for a wrong, expired or spent code."""
        address = address_of(email)
        if not is_code(code):
            raise InvalidRequest(BAD_CODE)
        counted = await self.db.sign_in_codes.find_one_and_update(
            {"_id": address, "tries": {"$lt": TRIES_PER_CODE}, "expiresAt": {"$gt": utcnow()}},
            {"$inc": {"tries": 1}}, return_document=ReturnDocument.AFTER)
        if counted is None:
            spent = await self.db.sign_in_codes.find_one(
                {"_id": address, "tries": {"$gte": TRIES_PER_CODE}})
            if spent is not None:
                raise TooManyRequests(WRONG_CODE, retry_after=1)
            raise InvalidRequest(WRONG_CODE)
        if not hmac.compare_digest(counted["hash"], self._digest(address, code)):
            # Only a counted try is recorded (5 a code, 5 codes an hour): a flood of tries on
            # a spent code cannot flood the log. Recorded by a task, as the mail is sent: the
            # member's accounts are looked up after the answer, never before it.
            self.spawn(record_failed(self.db, address, method="code", ip=ip),
                       "failed sign-in record")
            raise InvalidRequest(WRONG_CODE)
        # The code is used once: of two requests with it, one deletes it and signs in.
        used = await self.db.sign_in_codes.delete_one({"_id": address, "hash": counted["hash"]})
        session = None
        if used.deleted_count:
            session = await sign_in_verified_email(self.db, self.settings, email=address,
                                                   method="code", ip=ip, user_agent=user_agent)
        if session is None:
            raise InvalidRequest(WRONG_CODE)
        return session
