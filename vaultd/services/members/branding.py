"""The account's branding as its admins set it: the name the hosted viewer, the gates' pages,
the verification mails and the watermark show in place of the account's name.

The spec ties custom branding to the Pro and Business plans (`customWatermark`); on Free the
account's name is shown, so an admin of a Free account is refused rather than told the change
was made and then seeing nothing change. An empty value goes back to the account's name. Each
change is in the activity log with the new text (a name, never a secret)."""

from __future__ import annotations

from vaultd.db import Db
from vaultd.errors import InvalidRequest, PlanLimitReached
from vaultd.services.accounts import accounts
from vaultd.services.accounts.accounts import MAX_BRANDING, Account
from vaultd.services.members import activity
from vaultd.services.members.actor import Actor
from vaultd.services.members.roles import Permission

NOT_PRINTABLE = "branding must be printable text on one line"
TOO_LONG = f"branding is longer than {MAX_BRANDING} characters"


def plan_allows_branding(account: Account) -> bool:
    return account.plan.customWatermark


def parse_branding(value: str) -> str:
    """The text as it will be shown: runs of spaces made one; "" for the account's name."""
    if any(not ch.isprintable() for ch in value.replace("\t", " ")):
        raise InvalidRequest(NOT_PRINTABLE)
    text = " ".join(value.split())
    if len(text) > MAX_BRANDING:
        raise InvalidRequest(TOO_LONG)
    return text


async def change(db: Db, actor: Actor, account: Account, value: str, *,
                 ip: str | None = None) -> Account:
    actor.require(Permission.MANAGE_ACCOUNT)
    if not plan_allows_branding(account):
        raise PlanLimitReached(f"custom branding needs the Pro or Business plan (account is on "
                               f"{account.plan.name})")
    text = parse_branding(value)
    changed = await accounts.set_branding(db, account.id, text)
    await activity.record(db, actor, "branding.changed",
                          detail={"branding": text or "(the account's name)"}, ip=ip)
    return changed
