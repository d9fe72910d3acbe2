"""The owner-endpoint recipe's worked example (docs/architecture.md): a test-only endpoint
(`tests/owner_endpoint_example.py`) added by its module alone, served by a real vaultd with the
key checks and role checks of every route, mirrored under `/console/api`, and caught by the
OpenAPI comparison while the document lacks it."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator

import pytest

from tests import owner_endpoint_example as example
from tests.http_helpers import assert_json_error, created
from tests.openapi_routes import DOCUMENT, contract_differences
from tests.vault_process import VaultProcess, assert_no_secrets_in_log
from vaultd.services.members.roles import Permission
from vaultd.web import app, files

pytestmark = pytest.mark.slow  # starts its own vaultd (see docs/testing.md)

MEMBER_MANAGE = "the member role cannot manage members, API keys, webhooks or branding"
AUDITOR_MANAGE = "the auditor role cannot manage members, API keys, webhooks or branding"


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example among the app's route modules, in this process, as its runner does."""
    monkeypatch.setattr(app, "ROUTE_MODULES", [*app.ROUTE_MODULES, example])


@pytest.fixture(scope="module")
def stamp_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    server = VaultProcess(tmp_path_factory.mktemp("owner-endpoint") / "data",
                          env={"VAULTD_RENDER_WORKERS": "1"},
                          entry_module="tests.owner_endpoint_example").start()
    yield server
    server.stop()
    assert_no_secrets_in_log(server)


@pytest.fixture(scope="module")
def keys(stamp_vault: VaultProcess) -> dict[str, str]:
    _, admin_key = stamp_vault.new_account("Stamp Co", plan="business")
    with stamp_vault.client(admin_key) as admin:
        made = {role: created(admin.post("/keys", json={"name": role, "role": role}))["key"]
                for role in ("member", "auditor")}
    stamp_vault.secrets.extend(made.values())
    return {"admin": admin_key, **made}


def test_the_endpoint_is_served_with_its_path_parameter(stamp_vault: VaultProcess,
                                                        keys: dict[str, str]) -> None:
    with stamp_vault.client(keys["admin"]) as admin:
        read = admin.get("/example-stamps")
        assert read.status_code == 200 and read.json()["role"] == "admin"
        assert created(admin.post("/example-stamps", json={"label": " Q3 "})) == {
            "label": "Q3", "by": "key"}
        assert admin.get("/example-stamps/s-42").json() == {"id": "s-42"}
        assert_json_error(admin.post("/example-stamps", json={"label": ""}), 400,
                          example.LABEL_REQUIRED)
        # A method the handler does not define is Tornado's 405, as on every route.
        assert admin.put("/example-stamps/s-42", json={}).status_code == 405


def test_a_member_without_the_role_is_refused_and_a_reader_is_not(
        stamp_vault: VaultProcess, keys: dict[str, str]) -> None:
    for role, refusal in (("member", MEMBER_MANAGE), ("auditor", AUDITOR_MANAGE)):
        with stamp_vault.client(keys[role]) as client:
            assert_json_error(client.post("/example-stamps", json={"label": "x"}), 403, refusal)
            assert client.get("/example-stamps").json()["role"] == role
            assert client.get("/example-stamps/s-1").status_code == 200
    with stamp_vault.client() as anonymous:
        assert_json_error(anonymous.get("/example-stamps"), 401,
                          "missing API key: send Authorization: Bearer <API_KEY>")


def test_the_console_api_mirrors_it_under_the_same_permissions(registered: None) -> None:
    mirrored = {pattern: handler for pattern, handler in app.served_routes()}
    assert "/console/api/example-stamps" in mirrored
    assert "/console/api/example-stamps/([^/]+)" in mirrored
    table = app.route_permissions()
    assert table["/v1/example-stamps"] == example.PERMISSIONS["/v1/example-stamps"]
    app._audit(app.served_routes())  # each method of each route names what it needs
    app._audit_table(app.served_routes())


def test_a_permission_declared_by_two_route_modules_is_refused(
        registered: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(files.PERMISSIONS, "/v1/example-stamps", {"GET": Permission.READ})
    with pytest.raises(app.RouteAuditError,
                       match=r"^the permission of /v1/example-stamps GET is declared twice$"):
        app.route_permissions()
    # Another method of the same path, declared beside its own handler, is not a second decision.
    monkeypatch.setitem(files.PERMISSIONS, "/v1/example-stamps", {"PUT": Permission.READ})
    assert app.route_permissions()["/v1/example-stamps"] == {
        "GET": Permission.READ, "POST": Permission.MANAGE_ACCOUNT, "PUT": Permission.READ}


def test_the_openapi_comparison_catches_the_endpoint_until_it_is_documented(
        registered: None) -> None:
    document = json.loads(DOCUMENT.read_text())
    assert contract_differences(app.all_routes(), document) == [
        "GET /v1/example-stamps is served but not in the OpenAPI document",
        "POST /v1/example-stamps is served but not in the OpenAPI document",
        "GET /v1/example-stamps/([^/]+) is served but not in the OpenAPI document"]
    documented = copy.deepcopy(document)
    documented["paths"].update(example.OPENAPI_PATHS)
    assert contract_differences(app.all_routes(), documented) == []
    # Documented without one of its methods, or with a path parameter named differently.
    del documented["paths"]["/example-stamps"]["post"]
    documented["paths"]["/example-stamps/{id}"]["parameters"][0]["name"] = "stampId"
    assert contract_differences(app.all_routes(), documented) == [
        "POST /v1/example-stamps is served but not in the OpenAPI document",
        "GET /v1/example-stamps/{id} declares path parameters ['stampId'], its path has ['id']"]
