"""The console's share form reads its gates from the registry (`web.console_share`): a gate
registered from this test, with a control of its own, is a field of the form, fills its policy
field, is listed in the table of links, and a secret one is never typed back. The built-in gates
in a real console are in `tests/test_console_files.py`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest

from vaultd.records import PolicyDoc
from vaultd.services.gates import registry
from vaultd.services.gates.registry import PolicyInput, SessionGate, ShareControl
from vaultd.web import console_share

EXPIRES = datetime(2031, 5, 1, tzinfo=UTC)


class CallbackGate(SessionGate):
    """The reader gives the number the owner will call them back on (a test gate: its routes
    are never served here, only its form control is read)."""

    name = "callback"
    step = "Give your phone number"
    screen_template = "gates/passcode.html"
    policy_fields: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "callbackNumber": {"type": "string"}}
    shown_fields: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "callbackNumber": {"type": "string"}}
    stored_keys = ("callbackNumber",)
    actions = ()
    share_control = ShareControl("callbackNumber", "Call-back number", "text",
                                 listed_as="call-back", element_id="callback-number",
                                 secret=True)

    async def parse(self, given: PolicyInput, body: Mapping[str, Any]) -> dict[str, Any]:
        return {"callbackNumber": body["callbackNumber"]} if "callbackNumber" in body else {}

    def shown(self, policy: PolicyDoc) -> dict[str, Any]:
        return {"callbackNumber": dict(policy)["callbackNumber"]}


@pytest.fixture
def callback_gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[SessionGate]:
    registry.gates()  # the built-in ones first, as in a server
    monkeypatch.setattr(registry, "_GATES", dict(registry._GATES))  # given back after the test
    yield registry.register(CallbackGate())


def test_the_form_takes_a_registered_gates_field_in_the_registrys_order(
        callback_gate: SessionGate) -> None:
    assert console_share.share_fields() == (
        "viewerEmail", "viewerName", "days", "verifyEmail", "passcode", "agreementId",
        "callbackNumber", "allowedIps", "maxOpens", "notBefore", "mailLink")
    form = {"callbackNumber": "+44 20 7946 0000", "passcode": "harbour 42",
            "verifyEmail": "on", "maxOpens": "3"}
    assert console_share.form_policy(form, EXPIRES) == {
        "verifyEmail": True, "passcode": "harbour 42", "callbackNumber": "+44 20 7946 0000",
        "maxOpens": 3}
    # Secrets are never shown again after a refusal; the rest is.
    assert console_share.without_secrets(form) == {"verifyEmail": "on", "maxOpens": "3"}
    view = {"policy": {"passcode": True, "callbackNumber": "+44 20 7946 0000", "maxOpens": 3}}
    assert console_share.gates_of(view) == "passcode, call-back, max opens"


def test_without_the_gate_the_form_is_the_built_in_ones() -> None:
    assert "callbackNumber" not in console_share.share_fields()
    assert console_share.form_policy({"callbackNumber": "+44 20 7946 0000"}, EXPIRES) is None
    assert console_share.gates_of({"policy": {}}) == "none"
    assert console_share.gates_of({}) == "none"
