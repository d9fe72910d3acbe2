"""Sign-ins sent to the provider and not yet back (collection `oidc_pending`): single use,
ten minutes, and bound to the browser that started them.

A sign-in's `state`, PKCE verifier and nonce all hang on two random secrets: the state (in the
provider's URL) and the browser's binding secret (in a cookie only this browser sends). The
verifier and the nonce are HMACs of the state under the browser's secret, so they need no
storage, and a state copied into another browser finishes nothing."""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from datetime import timedelta
from typing import cast

from pymongo import ASCENDING
from pymongo.asynchronous.collection import AsyncCollection

from vaultd.db import Db
from vaultd.errors import InvalidRequest, TooManyRequests
from vaultd.records.oidc import OidcPendingDoc
from vaultd.secrets import digest, is_token, new_token
from vaultd.services.common import rolling_limits
from vaultd.timefmt import utcnow

PENDING_SECONDS = 600
# Starting a sign-in needs no credential and writes a record: one address may start this many
# in any ten minutes (the time a pending one lives, so never more are pending). High enough for
# an office behind one NAT address signing in at nine; low enough that one client cannot fill
# the database.
MAX_STARTS_PER_IP = 60
STATE_REFUSED = ("sign-in state is unknown, already used, expired or from another browser: "
                 "start the sign-in again")


@dataclass(frozen=True)
class PendingSignIn:
    """One sign-in's secrets, as sent to the provider (state, nonce, PKCE challenge) and to
    the token endpoint (verifier)."""

    state: str
    nonce: str
    code_verifier: str

    @property
    def code_challenge(self) -> str:
        """S256 (RFC 7636): the verifier's SHA-256, base64url without padding."""
        return _b64(hashlib.sha256(self.code_verifier.encode("ascii")).digest())


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def derive(state: str, browser_secret: str) -> PendingSignIn:
    def keyed(purpose: str) -> str:
        return _b64(hmac.new(browser_secret.encode("ascii"), f"{purpose}:{state}".encode("ascii"),
                             hashlib.sha256).digest())

    return PendingSignIn(state=state, nonce=keyed("nonce"), code_verifier=keyed("pkce"))


def pending(db: Db) -> AsyncCollection[OidcPendingDoc]:
    return cast("AsyncCollection[OidcPendingDoc]", db.raw("oidc_pending"))


async def ensure_indexes(db: Db) -> None:
    # A sign-in abandoned at the provider is worth nothing after its ten minutes: the
    # database drops it (TTL), so abandoned ones never pile up.
    await pending(db).create_index([("expiresAt", ASCENDING)], expireAfterSeconds=0)
    await pending(db).create_index([("_id", ASCENDING), ("browser", ASCENDING)])


def new_browser_secret() -> str:
    return new_token()


def valid_secret(value: str | None) -> bool:
    return value is not None and is_token(value)


def start_limit_key(ip: str) -> str:
    """The address's record in `rate_limits`, named by a digest as the other limits are."""
    return "oidc-start:" + digest(ip)[:32]


async def begin(db: Db, browser_secret: str, ip: str) -> PendingSignIn:
    now = utcnow()
    # One conditional update counts the start and checks the cap, so concurrent starts (on any
    # vaultd sharing the database) cannot pass it together, as a count then an insert could.
    if not await rolling_limits.take(db, start_limit_key(ip), MAX_STARTS_PER_IP,
                                     PENDING_SECONDS, now):
        raise TooManyRequests("too many sign-ins started from this address; try again in a few "
                              "minutes", retry_after=60)
    sign_in = derive(new_token(), browser_secret)
    await pending(db).insert_one({"_id": digest(sign_in.state), "browser": digest(browser_secret),
                                  "ip": ip, "createdAt": now,
                                  "expiresAt": now + timedelta(seconds=PENDING_SECONDS)})
    return sign_in


async def take(db: Db, state: str, browser_secret: str | None) -> PendingSignIn:
    """The sign-in `state` names, removed so it can never be used again; refused when it is
    unknown, used, expired, or was started in another browser."""
    if not is_token(state) or browser_secret is None or not valid_secret(browser_secret):
        raise InvalidRequest(STATE_REFUSED)
    # The browser is part of the match: a state replayed from another browser is refused
    # and leaves the real sign-in untouched.
    record = await pending(db).find_one_and_delete({"_id": digest(state),
                                                    "browser": digest(browser_secret)})
    if record is None or record["expiresAt"] <= utcnow():  # the TTL sweep runs once a minute
        raise InvalidRequest(STATE_REFUSED)
    return derive(state, browser_secret)
