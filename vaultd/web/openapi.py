"""GET /v1/openapi.json: the published OpenAPI 3.1 contract of /v1 (no authentication).

The document is a file in the repository (`openapi.json`), kept true by the schemathesis suite.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from vaultd.web.base import BaseHandler

DOCUMENT = Path(__file__).resolve().parent / "openapi.json"


@lru_cache(maxsize=1)
def document_bytes() -> bytes:
    return DOCUMENT.read_bytes()


class OpenApiHandler(BaseHandler):
    public = True

    def get(self) -> None:
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(document_bytes())


ROUTES = [(r"/v1/openapi.json", OpenApiHandler)]
