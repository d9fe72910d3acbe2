"""The published OpenAPI document: served without a key, and every route and method served is
documented with its path parameters, and nothing else. Schemathesis drives every route against
it: tests/test_openapi_fuzzing.py."""

from __future__ import annotations

import json
import re

import httpx

from tests.openapi_routes import DOCUMENT, contract_differences
from tests.vault_process import VaultProcess
from vaultd.web.app import all_routes


def test_the_document_is_served_without_a_key(vault: VaultProcess) -> None:
    response = httpx.get(f"{vault.url}/v1/openapi.json")
    assert response.status_code == 200
    assert response.json() == json.loads(DOCUMENT.read_text())
    assert response.json()["openapi"] == "3.1.0"


def test_every_route_and_method_is_documented_and_nothing_else() -> None:
    # By path, method and path parameter: a method served but not documented, or documented
    # but not served, fails, as does a path parameter an operation does not declare.
    assert contract_differences(all_routes(), json.loads(DOCUMENT.read_text())) == []


def test_a_method_or_a_path_parameter_missing_from_the_document_is_caught() -> None:
    document = json.loads(DOCUMENT.read_text())
    del document["paths"]["/files/{id}"]["delete"]
    document["paths"]["/rooms/{id}/items/{itemId}"]["put"] = {
        "parameters": [{"name": "room", "in": "path", "required": True}], "responses": {}}
    assert contract_differences(all_routes(), document) == [
        "DELETE /v1/files/([^/]+) is served but not in the OpenAPI document",
        "PUT /v1/rooms/{id}/items/{itemId} is in the OpenAPI document but not served",
        "PUT /v1/rooms/{id}/items/{itemId} declares path parameters ['id', 'itemId', 'room'], "
        "its path has ['id', 'itemId']"]


def test_the_routes_outside_v1_are_documented_at_the_root() -> None:
    paths = json.loads(DOCUMENT.read_text())["paths"]
    outside = {path for path, item in paths.items() if item.get("servers") == [
        {"url": "/", "description": "outside /v1: the server's root"}]}
    console = {path for path in outside if path.startswith("/console")}
    assert outside - console == {"/", "/healthz"}
    assert outside <= {p for p, _ in all_routes()} | console
    # The console's routes, by their shape: every one documented, and nothing else.
    routed = {re.sub(r"\([^)]*\)", "{}", p) for p, _ in all_routes() if p.startswith("/console")}
    assert {re.sub(r"\{[^}]+\}", "{}", path) for path in console} == routed
