"""What a reader does inside a viewer session: open one, give the passcode, accept the
agreement (email codes: `email_codes`). The hosted viewer and the proxy API both call these, for a
file link or a room link alike (`gated.GatedLink`); only these calls pass a gate, whatever a
client claims.

An action that succeeds renews the session's id (`sessions.mark_passed`, `sessions.renew`):
the caller hands the new id back (the API's body, the hosted viewer's cookie), and the id the
action was asked under has ended."""

from __future__ import annotations

from typing import Any

from pymongo import ReturnDocument

from vaultd.db import Db
from vaultd.errors import Forbidden, InvalidRequest, TooManyRequests
from vaultd.records import PolicyDoc, ViewerSessionDoc
from vaultd.services.gates import agreements, counters, events, sessions
from vaultd.services.gates.check import Gates, pending_message
from vaultd.services.gates.gated import GatedLink, Reader
from vaultd.services.gates.passcodes import passcode_matches
from vaultd.services.gates.registry import session_gates

PASSCODE_TRIES_PER_SESSION = 5
# Per address (and link), over a rolling hour: a stranger's wrong tries never lock the link for
# its reader, who tries from another address (`counters.address_key`).
PASSCODE_TRIES_PER_ADDRESS_HOUR = 30
WRONG_PASSCODE = "passcode is not correct"
TOO_MANY_FROM_ADDRESS = "too many passcode tries from this address: try again later"
NAME_LENGTH = (2, 100)


async def open_session(db: Db, link: GatedLink, reader: Reader) -> tuple[str, list[str]]:
    """A new session of a live link: (its id, the gates pending in it)."""
    Gates().admit_open(link.policy, reader.ip)
    session_id, doc = await sessions.open_session(db, link, reader.ip)
    return session_id, pending_of(link, doc)


def pending_of(link: GatedLink, session: ViewerSessionDoc | None) -> list[str]:
    return sessions.pending(session_gates(link.policy), session) if link.policy else []


def require_gate(link: GatedLink, gate: str) -> PolicyDoc:
    if link.policy is None or gate not in session_gates(link.policy):
        raise InvalidRequest(f"this link has no {gate} gate")
    return link.policy


async def give_passcode(db: Db, link: GatedLink, session: ViewerSessionDoc, value: Any,
                        reader: Reader) -> tuple[list[str], str | None]:
    """Check the passcode; every try counts (5 per session, 30 an hour per address and link):
    (the gates still pending, the session's new id if the passcode passed now)."""
    policy = require_gate(link, "passcode")
    if not isinstance(value, str) or not value:
        raise InvalidRequest("passcode is required")
    renewed = None
    if "passcode" not in session["passed"]:
        await _count_passcode_try(db, session, link.id, reader.ip)
        if not await passcode_matches(value, policy["passcodeHash"]):
            await events.verify_entry(db, link, "passcode-wrong", reader.ip)
            raise Forbidden(WRONG_PASSCODE)
        renewed = await sessions.mark_passed(db, link, session, "passcode")
        await events.verify_entry(db, link, "passcode", reader.ip)
    return pending_of(link, session), renewed


async def _count_passcode_try(db: Db, session: ViewerSessionDoc, link_id: str,
                              ip: str | None) -> None:
    # Counted before the check, atomically: concurrent tries cannot exceed the limit.
    counted = await db.viewer_sessions.find_one_and_update(
        {"_id": session["_id"], "wrongPasscodes": {"$not": {"$gte": PASSCODE_TRIES_PER_SESSION}}},
        {"$inc": {"wrongPasscodes": 1}}, return_document=ReturnDocument.AFTER)
    if counted is None:
        raise TooManyRequests("too many passcode tries in this session: open a new session",
                              retry_after=1)
    if not await counters.take(db, f"passcode:{link_id}:{counters.address_key(ip)}",
                               PASSCODE_TRIES_PER_ADDRESS_HOUR, 3600):
        raise TooManyRequests(TOO_MANY_FROM_ADDRESS, retry_after=600)


async def accept_agreement(db: Db, link: GatedLink, session: ViewerSessionDoc, name: Any,
                           reader: Reader) -> tuple[list[str], str | None]:
    """Record the acceptance of the link's agreement version under the typed full name. The
    other gates come first: the name is then typed by the verified reader."""
    policy = require_gate(link, "agreement")
    before = [gate for gate in pending_of(link, session) if gate != "agreement"]
    if before:
        raise Forbidden(pending_message(before))
    typed = " ".join(name.split()) if isinstance(name, str) else ""
    low, high = NAME_LENGTH
    if not low <= len(typed) <= high:
        raise InvalidRequest(f"name must be the reader's full name, typed ({low} to {high} "
                             "characters)")
    renewed = None
    if "agreement" not in session["passed"]:
        agreement = await agreements.version_of(db, policy["agreement"])
        renewed = await sessions.mark_passed(db, link, session, "agreement",
                                             {"acceptedName": typed})
        await events.announce(db, link, "agreement.accepted", "agreement", reader.ip, {
            "agreementId": agreement["agreementId"], "version": agreement["version"],
            "sha256": agreement["sha256"], "name": typed, "userAgent": reader.user_agent})
    return pending_of(link, session), renewed
