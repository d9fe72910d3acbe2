"""GET /v1/openapi.json: the published OpenAPI 3.1 contract of /v1 (no authentication).

The document is a file in the repository (`openapi.json`), kept true by the schemathesis suite;
an operator's own gates are added to it as served (`openapi_gates`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from vaultd.web.base import BaseHandler
from vaultd.web.openapi_gates import with_extra_gates

DOCUMENT = Path(__file__).resolve().parent / "openapi.json"


@lru_cache(maxsize=1)
def document_bytes() -> bytes:
    """Read at the first request, after the gates were registered at start."""
    written = DOCUMENT.read_bytes()
    document = json.loads(written)
    served = with_extra_gates(document)
    return written if served is document else json.dumps(served, indent=2).encode()


class OpenApiHandler(BaseHandler):
    public = True

    def get(self) -> None:
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(document_bytes())


ROUTES = [(r"/v1/openapi.json", OpenApiHandler)]
