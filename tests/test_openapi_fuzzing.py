"""Schemathesis against a live vaultd with its default checks (no 5xx, responses match the
document, only declared status codes), every route of the published OpenAPI document
(tests/test_openapi_contract.py checks the document against the routes served).

Every test here is `slow` (about 50 s of a worker): schemathesis makes each route's test, and
draws its cases, when the module is collected, about 2 s a worker, so a run that would leave
them all out does not collect the module (`tests/suite_tiers.py`, `SLOW_ONLY`)."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.config._checks import NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES
from schemathesis.generation.meta import negated_parameters
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from render.office.office_types import OFFICE_TYPES
from tests.openapi_routes import DOCUMENT
from tests.vault_process import VaultProcess

pytestmark = pytest.mark.slow  # every route fuzzed: the whole suite's, not the fast loop's


@pytest.fixture(scope="module")
def contract_key(vault: VaultProcess) -> str:
    return vault.new_account("Contract Co", plan="business")[1]


# Uploads are raw bytes whatever their declared type.
schemathesis.serializer.alias(["application/pdf", "image/jpeg", "image/png", *OFFICE_TYPES],
                              "application/octet-stream")

# Loaded from the repository file at import time (test_openapi_contract.py checks the served
# copy equal to it);
# requests go to the live server through `base_url`.
# The root's index and health check live outside /v1 (tests/test_first_hour.py covers them).
# A body that breaks the schema may also be over an endpoint's documented size limit: refusing it
# with that 413 (before reading it) is a rejection too, beside schemathesis' default statuses.
REJECTIONS = [*NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES, "413"]
CONFIG = SchemathesisConfig.from_dict(
    {"checks": {"negative_data_rejection": {"expected-statuses": REJECTIONS}}})
# The console's routes stand on a session cookie, an Origin and a CSRF token, not the key:
# tests/test_sign_in_code.py, test_member_sessions_http.py and test_console_csrf.py drive them
# (sign-in with an identity provider: test_oidc_sign_in.py, against a real provider).
schema = schemathesis.openapi.from_path(DOCUMENT, config=CONFIG).exclude(
    path_regex="^/(healthz|console.*)?$")


@schema.parametrize()
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_the_api_honours_its_contract(case: schemathesis.Case, vault: VaultProcess,
                                      contract_key: str) -> None:
    excluded = []
    if case.operation.label in ("POST /files", "POST /trace"):
        # Random bytes are not a PDF, JPEG or PNG: the spec requires 415 for them, so "a
        # schema-valid body was rejected" is expected there. Every other check still applies.
        excluded.append(positive_data_acceptance)
    if case.operation.label == "POST /views":
        # A schema-valid policy may name no agreement of the account, an address that is not
        # an IP range, verifyEmail without SMTP or a notBefore past the expiry: documented 400s.
        excluded.append(positive_data_acceptance)
    if case.operation.label == "PATCH /views/{token}":
        # A schema-valid expiresAt or ttlSeconds may lie outside the plan's window from now:
        # a documented 400 (a window counted from now has no place in a schema).
        excluded.append(positive_data_acceptance)
    if case.operation.label == "POST /webhooks":
        # A valid body gets the documented 402 once the account has its 10 endpoints.
        excluded.append(positive_data_acceptance)
    if any(name.lower() == "authorization" for name, _ in negated_parameters(case._meta)):
        # The key added below undoes a case that drops Authorization: it is no longer invalid.
        excluded.append(negative_data_rejection)
    case.call_and_validate(base_url=f"{vault.url}/v1",
                           headers={"Authorization": f"Bearer {contract_key}"},
                           excluded_checks=excluded)
