"""The session gates a link's policy can name, registered once: everything else reads this.

A session gate is what a reader passes by doing something inside a viewer session (confirm
their email, give the passcode, accept the agreement). Each is one module of `kinds/` (or an
operator's module named by the setting `gates.extra_modules`) holding one `SessionGate`: the
policy fields it takes on link creation and their JSON schema, what it stores on the link and
shows back to the owner, the actions a reader posts, its screen in the hosted viewer and
whether passing it marks the watermark. The policy's parser (`policy`), the check
(`check.Gates`), the viewer sessions (`sessions`), the API and hosted-viewer routes
(`web.gate_sessions`, `web.viewer_gates`) and the OpenAPI document (held by
tests/test_gates_registry.py) all derive from `gates()`.

The link's conditions (`allowedIps`, `notBefore`, `maxOpens`) are not session gates: nothing
is done to pass them, so they stay in `policy` and `check`.

A policy that stores a key no registered gate or condition claims (a link made while an extra
gate module was loaded, served after it was removed) is refused, never served without its gate
(`session_gates`)."""

from __future__ import annotations

import importlib
import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import Forbidden
from vaultd.records import PolicyDoc, ViewerSessionDoc
from vaultd.services.accounts.accounts import Account
from vaultd.services.gates.gated import GatedLink, Reader

if TYPE_CHECKING:
    from vaultd.services.gates.email_codes import EmailCodes

# What the policy stores for the link's conditions (`policy`), not for a session gate.
CONDITION_KEYS = ("allowedIps", "notBefore", "maxOpens")
UNKNOWN_GATE = "this link needs a gate this server does not have ({names}): ask its owner"
BUILTIN_MODULE = "vaultd.services.gates.kinds"
ACTION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*", re.ASCII)


class GateRegistryError(Exception):
    """A gate that cannot be registered (a name or action taken, a module that is not one)."""


@dataclass(frozen=True)
class PolicyInput:
    """What a gate's parser may use besides the value: whose link, until when."""

    db: Db
    settings: Settings
    account: Account
    expires_at: datetime


@dataclass(frozen=True)
class GateContext:
    """What a gate's action may use besides the link and session."""

    db: Db
    settings: Settings
    email_codes: EmailCodes | None  # the built-in email gate's; None: smtp.host is not set


@dataclass(frozen=True)
class ActionOutcome:
    answer: dict[str, Any]  # the body (the API adds `sessionId`)
    renewed: str | None  # the session's new id when a gate was passed; None: renewed by caller


ActionRun = Callable[[GateContext, GatedLink, ViewerSessionDoc, Any, Reader],
                     Awaitable[ActionOutcome]]


@dataclass(frozen=True)
class GateAction:
    """One POST a reader makes: `/v1/views/<token>/sessions/<id>/<name>` on the API,
    `/v/<token>/session/<name>` in the hosted viewer (and the room links' twins)."""

    name: str  # the last path segment
    run: ActionRun  # given the body's `field` (None when the action takes no body)
    field: str | None = None  # the JSON body's one field
    status: int = 200
    body_schema: Mapping[str, Any] | None = None  # OpenAPI requestBody schema; None: no body


@dataclass(frozen=True)
class ShareControl:
    """How the console's share form asks for the gate: one control, named after the policy
    field it fills (`web.console_file`). A gate without one is set through the API only."""

    field: str  # the policy field, and the form field's name
    label: str
    kind: str  # "checkbox": the field True when ticked; "text": as typed; "choice": see below
    listed_as: str  # the gate's name in the console's table of links
    element_id: str
    hint: str = ""
    needs_mail: bool = False  # offered only where this server sends mail (`smtp.host`)
    secret: bool = False  # never typed back into a refused form


class SessionGate(ABC):
    """One gate type. Subclasses set the class attributes and implement the methods."""

    name: ClassVar[str]  # its key in a session's `passed` and in `pending`
    step: ClassVar[str]  # the hosted viewer's step label ("Enter the passcode")
    screen_template: ClassVar[str]  # under web/templates, or an absolute path
    policy_fields: ClassVar[Mapping[str, Mapping[str, Any]]]  # POST body field -> its schema
    shown_fields: ClassVar[Mapping[str, Mapping[str, Any]]]  # `policy_json` field -> its schema
    stored_keys: ClassVar[tuple[str, ...]]  # the keys `parse` may store in the policy
    actions: ClassVar[tuple[GateAction, ...]]
    marks_verified: ClassVar[bool] = False  # passed: the watermark's email says "(verified)"
    share_control: ClassVar[ShareControl | None] = None  # its control in the console's form

    @abstractmethod
    async def parse(self, given: PolicyInput, body: Mapping[str, Any]) -> dict[str, Any]:
        """What to store for the policy body's own fields (`{}`: the gate is off), or
        InvalidRequest naming `policy.<field>`."""

    def present(self, policy: PolicyDoc) -> bool:
        return any(key in policy for key in self.stored_keys)

    @abstractmethod
    def shown(self, policy: PolicyDoc) -> dict[str, Any]:
        """The gate as the link's owner sees it: never a secret."""

    async def screen(self, db: Db, link: GatedLink) -> dict[str, Any]:
        """What the screen's template is given besides the link's brand."""
        return {}

    async def share_choices(self, db: Db, account: Account) -> list[tuple[str, str]]:
        """A "choice" control's options for `account`, (value, label); none: not offered."""
        return []


_GATES: dict[str, SessionGate] = {}


def register(gate: SessionGate) -> SessionGate:
    """Adds `gate` after those registered before: the order readers meet them in."""
    for action in gate.actions:
        if not ACTION_NAME.fullmatch(action.name):  # a path segment and a route's alternative
            raise GateRegistryError(f"gate {gate.name}: action {action.name!r} is not a name "
                                    "(a letter, then letters and digits)")
    taken_actions = {action.name for known in _GATES.values() for action in known.actions}
    taken_fields = {field for known in _GATES.values() for field in known.policy_fields}
    taken_keys = {key for known in _GATES.values() for key in known.stored_keys}
    clashes = ([gate.name] if gate.name in _GATES else []) + sorted(
        ({action.name for action in gate.actions} & taken_actions)
        | (set(gate.policy_fields) & (taken_fields | set(CONDITION_KEYS)))
        | (set(gate.stored_keys) & (taken_keys | set(CONDITION_KEYS))))
    if clashes:
        raise GateRegistryError(f"gate {gate.name}: already registered: {', '.join(clashes)}")
    _GATES[gate.name] = gate
    return gate


def gates() -> list[SessionGate]:
    """Every registered gate, in order; the built-in ones always, whatever was imported first,
    so a check can never run before its gates are known."""
    if BUILTIN_MODULE not in sys.modules:
        importlib.import_module(BUILTIN_MODULE)
    return list(_GATES.values())


def load_modules(names: tuple[str, ...]) -> None:
    """Imports the operator's extra gate modules (setting `gates.extra_modules`); each
    registers its gates when imported. A module that is missing or registers nothing stops
    the start with its name."""
    for name in names:
        before = len(gates())
        try:
            importlib.import_module(name)
        except Exception as failed:  # whatever the module raised: the start stops, named
            raise GateRegistryError(f"gates.extra_modules: cannot import {name}: "
                                    f"{type(failed).__name__}: {failed}") from None
        if len(gates()) == before:
            raise GateRegistryError(f"gates.extra_modules: {name} registered no gate")


def action_named(name: str) -> tuple[SessionGate, GateAction] | None:
    for gate in gates():
        for action in gate.actions:
            if action.name == name:
                return gate, action
    return None


def action_names() -> list[str]:
    return [action.name for gate in gates() for action in gate.actions]


def policy_fields() -> list[str]:
    """The fields of `POST /v1/views`'s `policy` the session gates take, in order."""
    return [field for gate in gates() for field in gate.policy_fields]


def session_gates(policy: PolicyDoc) -> list[str]:
    """The gates of `policy` a reader passes inside a viewer session, in order; Forbidden when
    it stores a gate this server does not have."""
    known = {key for gate in gates() for key in gate.stored_keys} | set(CONDITION_KEYS)
    unknown = sorted(key for key in policy if key not in known)
    if unknown:
        raise Forbidden(UNKNOWN_GATE.format(names=", ".join(unknown)))
    return [gate.name for gate in gates() if gate.present(policy)]


def marks_verified(session: ViewerSessionDoc | None) -> bool:
    """Whether the reader passed, in `session`, a gate that proves them the viewer."""
    return session is not None and any(
        gate.marks_verified and gate.name in session["passed"] for gate in gates())
