"""GET / (and GET /v1): where to go from here, for someone who just started vaultd."""

from __future__ import annotations

from vaultd.version import VERSION
from vaultd.web.base import BaseHandler

INDEX = {
    "name": "vaultd",
    "version": VERSION,
    "api": "/v1",
    "openapi": "/v1/openapi.json",
    "health": "/healthz",
}


class IndexHandler(BaseHandler):
    public = True

    def get(self) -> None:
        self.send_json(200, INDEX)


ROUTES = [(r"/", IndexHandler), (r"/v1", IndexHandler)]
