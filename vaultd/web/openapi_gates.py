"""The published OpenAPI document with the operator's own gates (`gates.extra_modules`) added:
their policy fields, what the owner is shown, and their actions' paths, so the API's clients
see what this server serves. The built-in gates are in `openapi.json` itself (held to the
registry by tests/test_gates_registry.py); a server without extra gates publishes the file
unchanged.

An added action's path is the passcode action's with the gate's own operation id, summary, body
and success status: the same path parameters, headers and error responses, as every session
action shares them (`web.gate_sessions.act`)."""

from __future__ import annotations

import copy
from typing import Any

from vaultd.services.gates import registry

TEMPLATE_ACTION = "passcode"
LINK_KINDS = {"views": "", "room-views": "room"}


def extra_gates(document: dict[str, Any]) -> list[registry.SessionGate]:
    """The registered gates the document does not describe (by their policy fields)."""
    described = document["components"]["schemas"]["LinkPolicy"]["properties"]
    return [gate for gate in registry.gates()
            if any(field not in described for field in gate.policy_fields)]


def with_extra_gates(document: dict[str, Any]) -> dict[str, Any]:
    gates = extra_gates(document)
    if not gates:
        return document
    document = copy.deepcopy(document)
    schemas = document["components"]["schemas"]
    for gate in gates:
        schemas["LinkPolicy"]["properties"].update(copy.deepcopy(dict(gate.policy_fields)))
        schemas["LinkPolicyShown"]["properties"].update(copy.deepcopy(dict(gate.shown_fields)))
        for kind, prefix in LINK_KINDS.items():
            for action in gate.actions:
                document["paths"][f"/{kind}/{{token}}/sessions/{{sessionId}}/{action.name}"] = (
                    _action_path(document, kind, prefix, gate, action))
    return document


def _action_path(document: dict[str, Any], kind: str, prefix: str, gate: registry.SessionGate,
                 action: registry.GateAction) -> dict[str, Any]:
    template = document["paths"][f"/{kind}/{{token}}/sessions/{{sessionId}}/{TEMPLATE_ACTION}"]
    item: dict[str, Any] = copy.deepcopy(template)
    operation = item["post"]
    name = action.name[:1].upper() + action.name[1:]
    operation["operationId"] = f"{prefix}{name}ViewerGate" if prefix else f"{action.name}ViewerGate"
    operation["summary"] = f"{gate.step}: the `{gate.name}` gate (added by this server)."
    done = operation["responses"].pop("200")
    operation["responses"][str(action.status)] = done
    if action.body_schema is None:
        operation.pop("requestBody", None)
    else:
        operation["requestBody"]["content"]["application/json"]["schema"] = copy.deepcopy(
            dict(action.body_schema))
    operation["responses"]["403"]["description"] = (
        f"The `{gate.name}` gate refuses what was given (or a gate refuses the viewer)")
    operation["responses"]["429"]["description"] = "Too many tries"
    return item
