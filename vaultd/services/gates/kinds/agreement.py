"""`agreement`: the reader accepts the link's agreement version (`agreements`) under their
typed full name (`actions.accept_agreement`). The policy takes `agreementId` and pins the
agreement's latest version; the screen shows that version's text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from vaultd.db import Db
from vaultd.errors import InvalidRequest, NotFound
from vaultd.records import PolicyDoc, ViewerSessionDoc
from vaultd.services.accounts.accounts import Account
from vaultd.services.gates import agreements
from vaultd.services.gates.actions import NAME_LENGTH, accept_agreement
from vaultd.services.gates.gated import GatedLink, Reader
from vaultd.services.gates.registry import (
    ActionOutcome,
    GateAction,
    GateContext,
    PolicyInput,
    SessionGate,
    ShareControl,
)


async def _accept(context: GateContext, link: GatedLink, session: ViewerSessionDoc, name: Any,
                  reader: Reader) -> ActionOutcome:
    pending, renewed = await accept_agreement(context.db, link, session, name, reader)
    return ActionOutcome({"pending": pending}, renewed)


class Agreement(SessionGate):
    name = "agreement"
    step = "Accept the agreement"
    screen_template = "gates/agreement.html"
    policy_fields: ClassVar[Mapping[str, Mapping[str, Any]]] = {"agreementId": {
        "type": "string", "format": "uuid",
        "description": "An agreement of the account (Pro and Business; 402 on Free), pinned "
                       "at its latest version."}}
    shown_fields: ClassVar[Mapping[str, Mapping[str, Any]]] = {"agreementId": {"type": "string"},
                    "agreementVersion": {"type": "integer", "minimum": 1},
                    "agreementSha256": {"type": "string"}}
    stored_keys = ("agreement",)
    actions = (GateAction("agreement", _accept, field="name", body_schema={
        "type": "object", "required": ["name"],
        "properties": {"name": {"type": "string", "minLength": NAME_LENGTH[0],
                                "maxLength": NAME_LENGTH[1]}}}),)
    share_control = ShareControl("agreementId", "Agreement", "choice", listed_as="agreement",
                                 element_id="agreement")

    async def parse(self, given: PolicyInput, body: Mapping[str, Any]) -> dict[str, Any]:
        if "agreementId" not in body:
            return {}
        agreements.require_plan(given.account)
        value = body["agreementId"]
        if not isinstance(value, str):
            raise InvalidRequest("policy.agreementId must be an agreement id")
        try:
            latest = await agreements.latest_version(given.db, given.account.id, value)
        except NotFound:
            raise InvalidRequest(
                "policy.agreementId names no agreement of this account") from None
        return {"agreement": agreements.reference(latest)}

    def shown(self, policy: PolicyDoc) -> dict[str, Any]:
        ref = policy["agreement"]
        return {"agreementId": ref["id"], "agreementVersion": ref["version"],
                "agreementSha256": ref["sha256"]}

    async def screen(self, db: Db, link: GatedLink) -> dict[str, Any]:
        assert link.policy is not None
        return {"agreement": await agreements.version_of(db, link.policy["agreement"])}

    async def share_choices(self, db: Db, account: Account) -> list[tuple[str, str]]:
        """The account's agreements, on the plans that have them."""
        if account.plan.id not in agreements.PLANS_WITH_AGREEMENTS:
            return []
        return [(doc["agreementId"], doc["name"])
                for doc in await agreements.list_agreements(db, account.id)]


GATE = Agreement()
