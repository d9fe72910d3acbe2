"""The gate registry is the one list the rest reads: the OpenAPI document's policy schemas and
session routes agree with it gate by gate, the route table and the permissions are built from
it, and a gate that would take another's name, action or policy field is refused.
(A gate registered at start and used end to end: tests/test_gates_extra_module.py.)"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, cast

import pytest

from vaultd.errors import Forbidden
from vaultd.records import PolicyDoc
from vaultd.services.gates import registry
from vaultd.services.gates.policy import CONDITIONS, known_fields
from vaultd.services.gates.registry import (
    ActionOutcome,
    GateAction,
    GateRegistryError,
    PolicyInput,
    SessionGate,
)
from vaultd.services.members.roles import Permission
from vaultd.web import gate_sessions, permissions
from vaultd.web.app import all_routes, route_permissions

DOCUMENT = json.loads(
    (Path(__file__).resolve().parents[1] / "vaultd" / "web" / "openapi.json").read_text())
SCHEMAS = DOCUMENT["components"]["schemas"]
LINKS = ("views", "room-views")


def test_the_built_in_gates_in_the_order_readers_meet_them() -> None:
    assert [gate.name for gate in registry.gates()] == ["verifyEmail", "passcode", "agreement"]
    assert known_fields() == ["verifyEmail", "passcode", "agreementId", *CONDITIONS]
    assert registry.action_names() == ["code", "verify", "passcode", "agreement"]


def test_the_policy_schema_is_the_gates_fields_and_the_conditions() -> None:
    properties = SCHEMAS["LinkPolicy"]["properties"]
    assert list(properties) == known_fields()
    for gate in registry.gates():
        for field, schema in gate.policy_fields.items():
            assert properties[field] == schema, (gate.name, field)


def test_the_shown_policy_schema_is_each_gates_shown_fields() -> None:
    properties = SCHEMAS["LinkPolicyShown"]["properties"]
    fields = [field for gate in registry.gates() for field in gate.shown_fields]
    assert list(properties) == [*fields, *CONDITIONS]
    for gate in registry.gates():
        for field, schema in gate.shown_fields.items():
            assert properties[field] == schema, (gate.name, field)


@pytest.mark.parametrize("link", LINKS)
def test_every_action_is_documented_with_its_body_and_status(link: str) -> None:
    paths = DOCUMENT["paths"]
    prefix = f"/{link}/{{token}}/sessions/{{sessionId}}/"
    documented = {path.removeprefix(prefix) for path in paths if path.startswith(prefix)}
    assert documented == set(registry.action_names())
    for gate in registry.gates():
        for action in gate.actions:
            operation = paths[prefix + action.name]["post"]
            assert str(action.status) in operation["responses"], action.name
            body = operation.get("requestBody")
            if action.body_schema is None:
                assert body is None, action.name
            else:
                assert body["content"]["application/json"]["schema"] == action.body_schema


def test_the_routes_and_their_permissions_are_one_per_action() -> None:
    routed = {pattern for pattern, _ in all_routes()}
    table = route_permissions()
    for name in registry.action_names():
        for prefix in gate_sessions.SESSION, gate_sessions.ROOM_SESSION:
            pattern = f"{prefix}/{name}"
            assert pattern in routed
            assert permissions.declared(pattern, table) == {"POST": Permission.CHANGE_CONTENT}
    # Only a session's action is ruled by its shape: a path beside it declares nothing.
    assert permissions.declared(r"/v1/views/([^/]+)/secrets/([^/]+)/code", table) == {}


async def never_run(*_: Any) -> ActionOutcome:
    raise AssertionError("a refused gate's action is never routed")


class Clashing(SessionGate):
    """A gate whose every name is its own except the one a test sets to another gate's."""

    name = "clash"
    step = "Clash"
    screen_template = "/nowhere.html"
    policy_fields: ClassVar[Mapping[str, Mapping[str, Any]]] = {"clash": {"type": "boolean"}}
    shown_fields: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    stored_keys = ("clash",)
    actions = (GateAction("clash", never_run),)

    async def parse(self, given: PolicyInput, body: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def shown(self, policy: PolicyDoc) -> dict[str, Any]:
        return {}


@pytest.mark.parametrize(("attribute", "value", "named"), [
    ("name", "passcode", "passcode"),
    ("actions", (GateAction("verify", never_run),), "verify"),
    ("policy_fields", {"agreementId": {"type": "string"}}, "agreementId"),
    ("policy_fields", {"maxOpens": {"type": "integer"}}, "maxOpens"),
    ("stored_keys", ("passcodeHash",), "passcodeHash"),
])
def test_a_gate_taking_another_gates_name_is_refused(attribute: str, value: Any,
                                                      named: str) -> None:
    before = registry.gates()
    gate = type("Taker", (Clashing,), {attribute: value})()
    with pytest.raises(GateRegistryError) as refused:
        registry.register(gate)
    assert str(refused.value) == f"gate {gate.name}: already registered: {named}"
    assert registry.gates() == before


def test_a_policy_storing_a_gate_nobody_registered_is_refused() -> None:
    with pytest.raises(Forbidden) as refused:
        registry.session_gates(cast(PolicyDoc, {"passcodeHash": "x", "question": {}}))
    assert refused.value.message == (
        "this link needs a gate this server does not have (question): ask its owner")
    assert registry.session_gates({"passcodeHash": "x", "maxOpens": 2}) == ["passcode"]


@pytest.mark.parametrize("action", ["code|answer", "../answer", "", "répondre"])
def test_an_action_that_is_not_a_plain_name_is_refused(action: str) -> None:
    # Its name is a path segment and an alternative in the hosted viewer's route pattern.
    gate = type("Odd", (Clashing,), {"actions": (GateAction(action, never_run),)})()
    with pytest.raises(GateRegistryError) as refused:
        registry.register(gate)
    assert str(refused.value) == (
        f"gate clash: action {action!r} is not a name (a letter, then letters and digits)")
    assert registry.action_names() == ["code", "verify", "passcode", "agreement"]
