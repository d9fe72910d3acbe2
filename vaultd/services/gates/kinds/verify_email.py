"""`verifyEmail`: the reader proves control of the link's viewer email with a mailed code
(`email_codes`): action `code` mails one, action `verify` checks it. Passed, the watermark's
email says "(verified)"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from vaultd.db import Db
from vaultd.errors import InvalidRequest, ServiceUnavailable
from vaultd.records import PolicyDoc, ViewerSessionDoc
from vaultd.services.gates.email_codes import RESEND_SECONDS, EmailCodes
from vaultd.services.gates.gated import GatedLink, Reader
from vaultd.services.gates.registry import (
    ActionOutcome,
    GateAction,
    GateContext,
    PolicyInput,
    SessionGate,
    ShareControl,
)

NO_MAIL = "mail is not configured on this server (smtp.host)"


def _codes(context: GateContext) -> EmailCodes:
    if context.email_codes is None:  # the link was made while SMTP was configured
        raise ServiceUnavailable(NO_MAIL, retry_after=60)
    return context.email_codes


async def _send(context: GateContext, link: GatedLink, session: ViewerSessionDoc, _: Any,
                reader: Reader) -> ActionOutcome:
    return ActionOutcome(await _codes(context).send(link, session, reader), None)


async def _verify(context: GateContext, link: GatedLink, session: ViewerSessionDoc, code: Any,
                  reader: Reader) -> ActionOutcome:
    pending, renewed = await _codes(context).verify(link, session, code, reader)
    return ActionOutcome({"pending": pending}, renewed)


class VerifyEmail(SessionGate):
    name = "verifyEmail"
    step = "Confirm your email"
    screen_template = "gates/verify_email.html"
    policy_fields: ClassVar[Mapping[str, Mapping[str, Any]]] = {"verifyEmail": {
        "type": "boolean",
        "description": "The reader proves control of viewerEmail with a six-digit code sent by "
                       "mail. Needs the server's smtp.host (400 naming it otherwise)."}}
    shown_fields: ClassVar[Mapping[str, Mapping[str, Any]]] = {"verifyEmail": {"type": "boolean"}}
    stored_keys = ("verifyEmail",)
    actions = (
        GateAction("code", _send, status=202),
        GateAction("verify", _verify, field="code", body_schema={
            "type": "object", "required": ["code"],
            "properties": {"code": {"type": "string", "pattern": "^[0-9]{6}$"}}}),
    )
    marks_verified = True
    share_control = ShareControl("verifyEmail", "Require email verification", "checkbox",
                                 listed_as="email", element_id="verify-email", needs_mail=True)

    async def parse(self, given: PolicyInput, body: Mapping[str, Any]) -> dict[str, Any]:
        value = body.get("verifyEmail")
        if value is None or value is False:
            return {}
        if value is not True:
            raise InvalidRequest("policy.verifyEmail must be true or false")
        if not given.settings.smtp_host:
            raise InvalidRequest(
                "policy.verifyEmail needs mail: the server's smtp.host is not set")
        return {"verifyEmail": True}

    def present(self, policy: PolicyDoc) -> bool:
        return bool(policy.get("verifyEmail", False))

    def shown(self, policy: PolicyDoc) -> dict[str, Any]:
        return {"verifyEmail": True}

    async def screen(self, db: Db, link: GatedLink) -> dict[str, Any]:
        return {"resendSeconds": RESEND_SECONDS}


GATE = VerifyEmail()
