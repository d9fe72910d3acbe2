"""`passcode`: the reader gives the passcode the owner told them another way. Stored only as
a slow hash (`passcodes`), shown back as `"passcode": true`; tries are limited
(`actions.give_passcode`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from vaultd.errors import InvalidRequest
from vaultd.records import PolicyDoc, ViewerSessionDoc
from vaultd.services.gates.actions import give_passcode
from vaultd.services.gates.gated import GatedLink, Reader
from vaultd.services.gates.passcodes import hash_passcode
from vaultd.services.gates.registry import (
    ActionOutcome,
    GateAction,
    GateContext,
    PolicyInput,
    SessionGate,
    ShareControl,
)

PASSCODE_LENGTH = (4, 128)


async def _give(context: GateContext, link: GatedLink, session: ViewerSessionDoc, value: Any,
                reader: Reader) -> ActionOutcome:
    pending, renewed = await give_passcode(context.db, link, session, value, reader)
    return ActionOutcome({"pending": pending}, renewed)


class Passcode(SessionGate):
    name = "passcode"
    step = "Enter the passcode"
    screen_template = "gates/passcode.html"
    policy_fields: ClassVar[Mapping[str, Mapping[str, Any]]] = {"passcode": {
        "type": "string", "minLength": PASSCODE_LENGTH[0], "maxLength": PASSCODE_LENGTH[1],
        "description": "Stored as an scrypt hash; never returned."}}
    shown_fields: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "passcode": {"type": "boolean", "const": True}}
    stored_keys = ("passcodeHash",)
    actions = (GateAction("passcode", _give, field="passcode", body_schema={
        "type": "object", "required": ["passcode"],
        "properties": {"passcode": {"type": "string", "minLength": 1}}}),)
    share_control = ShareControl(
        "passcode", "Passcode", "text", listed_as="passcode", element_id="passcode",
        hint="4 to 128 characters; tell it to the reader another way.", secret=True)

    async def parse(self, given: PolicyInput, body: Mapping[str, Any]) -> dict[str, Any]:
        if "passcode" not in body:
            return {}
        value = body["passcode"]
        low, high = PASSCODE_LENGTH
        if not isinstance(value, str) or not low <= len(value) <= high:
            raise InvalidRequest(
                f"policy.passcode must be a string of {low} to {high} characters")
        return {"passcodeHash": await hash_passcode(value)}

    def shown(self, policy: PolicyDoc) -> dict[str, Any]:
        return {"passcode": True}


GATE = Passcode()
