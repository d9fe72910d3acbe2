"""A test-only owner endpoint, the worked example of the recipe in docs/architecture.md: its
routes, what each method needs and its OpenAPI paths, in one module. A stamp is a label an
account's admin sets and any member reads back; nothing is stored (the recipe is about the
route, not the service).

    python -m tests.owner_endpoint_example [vaultd's arguments]

runs vaultd with this module among its route modules (`vaultd.web.app.ROUTE_MODULES`)."""

from __future__ import annotations

import sys
from typing import Any

from vaultd.errors import InvalidRequest
from vaultd.services.members.roles import Permission
from vaultd.web.base import BaseHandler

LABEL_REQUIRED = "label must be a non-empty string"


class StampsHandler(BaseHandler):
    async def get(self) -> None:
        assert self.account is not None and self.actor is not None
        self.send_json(200, {"accountId": self.account.id, "role": self.actor.role.value})

    async def post(self) -> None:
        assert self.actor is not None
        label = self.json_body().get("label")
        if not isinstance(label, str) or not label.strip():
            raise InvalidRequest(LABEL_REQUIRED)
        self.send_json(201, {"label": label.strip(), "by": self.actor.as_record()["kind"]})


class StampHandler(BaseHandler):
    async def get(self, stamp_id: str) -> None:
        self.send_json(200, {"id": stamp_id})


ROUTES = [(r"/v1/example-stamps", StampsHandler),
          (r"/v1/example-stamps/([^/]+)", StampHandler)]

PERMISSIONS = {
    r"/v1/example-stamps": {"GET": Permission.READ, "POST": Permission.MANAGE_ACCOUNT},
    r"/v1/example-stamps/([^/]+)": {"GET": Permission.READ},
}


def _json(description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": {"type": "object"}}}}


ERRORS = {"401": _json("No valid key"), "403": _json("The role may not")}
# What `vaultd/web/openapi.json` would gain under "paths" (relative to /v1).
OPENAPI_PATHS: dict[str, Any] = {
    "/example-stamps": {
        "get": {"operationId": "readStamps", "responses": {"200": _json("The caller"), **ERRORS}},
        "post": {"operationId": "setStamp",
                 "requestBody": {"required": True, "content": {"application/json": {
                     "schema": {"type": "object", "required": ["label"],
                                "properties": {"label": {"type": "string", "minLength": 1}}}}}},
                 "responses": {"201": _json("The stamp"), "400": _json("No label"), **ERRORS}},
    },
    "/example-stamps/{id}": {
        "parameters": [{"name": "id", "in": "path", "required": True,
                        "schema": {"type": "string"}}],
        "get": {"operationId": "readStamp", "responses": {"200": _json("The stamp"), **ERRORS}},
    },
}


if __name__ == "__main__":
    from vaultd.main import main
    from vaultd.web import app

    app.ROUTE_MODULES.append(sys.modules[__name__])
    main()
