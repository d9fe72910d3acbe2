"""The share form's gates, a file's and a room's (`console_file`, `console_rooms`), read from the
gate registry (`services.gates.registry`): each registered gate with a `ShareControl` is one
control of the form, its value the gate's policy field; the link's conditions (allowed IPs,
maximum opens, not before) follow, the same for every link. A gate added to the registry
appears in the form and in the table of links with no line here."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from vaultd.db import Db
from vaultd.errors import InvalidRequest
from vaultd.services.accounts.accounts import Account
from vaultd.services.gates import registry
from vaultd.services.gates.registry import ShareControl
from vaultd.web.files import parse_bounded_int

FORM_FIELDS = ("viewerEmail", "viewerName", "days", "allowedIps", "maxOpens", "notBefore",
               "mailLink")
CONDITION_LABELS = {"allowedIps": "IP ranges", "notBefore": "not before",
                    "maxOpens": "max opens"}


def controls() -> list[ShareControl]:
    return [gate.share_control for gate in registry.gates() if gate.share_control is not None]


def share_fields() -> tuple[str, ...]:
    """Every field the form posts: the reader's, the gates', the conditions'."""
    return (*FORM_FIELDS[:3], *(control.field for control in controls()), *FORM_FIELDS[3:])


async def offered(db: Db, account: Account, *, mail_on: bool, choices: bool = True,
                  ) -> list[dict[str, Any]]:
    """The gates' controls the form shows, each with its choices: a mail gate only where mail
    is sent, a choice only when it has some (and `choices`: the room's form offers none)."""
    shown = []
    for gate in registry.gates():
        control = gate.share_control
        if control is None or (control.needs_mail and not mail_on):
            continue
        options = await gate.share_choices(db, account) if control.kind == "choice" else []
        if control.kind == "choice" and not (choices and options):
            continue
        shown.append({"control": control, "choices": options})
    return shown


def ttl_seconds(form: dict[str, str], account: Account, default_days: int) -> int:
    """The share form's "Expires after (days)" as the link's lifetime, held to the plan's
    longest (refused in words, as the form shows it, before anything is made)."""
    days = parse_bounded_int(form["days"] or None, "Expires after (days)", default_days, 1, 3650)
    longest = account.plan.maxViewSeconds
    if days * 86400 > longest:
        raise InvalidRequest(f"links on plan {account.plan.name} last at most "
                             f"{longest // 86400} days")
    return days * 86400


def without_secrets(form: dict[str, str]) -> dict[str, str]:
    """The form as typed, to show again after a refusal: never a secret (the passcode)."""
    secret = {control.field for control in controls() if control.secret}
    return {name: value for name, value in form.items() if name not in secret}


def form_policy(form: dict[str, str], expires_at: datetime) -> dict[str, Any] | None:
    """The form's gates and conditions as the API's `policy` object (services.gates.policy
    parses it, with its messages)."""
    policy: dict[str, Any] = {}
    for control in controls():
        value = form.get(control.field, "")
        if control.kind == "checkbox" and value == "on":
            policy[control.field] = True
        elif control.kind != "checkbox" and value:
            policy[control.field] = value
    ranges = [part for part in form.get("allowedIps", "").replace(",", " ").split() if part]
    if ranges:
        policy["allowedIps"] = ranges
    if form.get("maxOpens"):
        policy["maxOpens"] = parse_bounded_int(form["maxOpens"], "Maximum opens", 1, 1,
                                               1_000_000)
    if form.get("notBefore"):
        policy["notBefore"] = _utc_local(form["notBefore"])
    return policy or None


def _utc_local(value: str) -> str:
    """A `datetime-local` field's value, read as UTC (the form says so)."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidRequest("Not before must be a date and time (UTC)") from None
    return moment.replace(tzinfo=None).isoformat() + "+00:00"


def gates_of(view: dict[str, Any]) -> str:
    """A link's gates and conditions in words, for the table of links ("passcode, max opens")."""
    policy = view.get("policy") or {}
    named = [gate.share_control.listed_as if gate.share_control else gate.name
             for gate in registry.gates() if any(field in policy for field in gate.shown_fields)]
    named += [label for name, label in CONDITION_LABELS.items() if name in policy]
    return ", ".join(named) or "none"
