"""GET /healthz (also /health): 200 once the database answers, with the render sandbox's
state; no authentication."""

from __future__ import annotations

from vaultd.db import ping
from vaultd.web.base import BaseHandler


class HealthHandler(BaseHandler):
    public = True

    async def get(self) -> None:
        await ping(self.ctx.db)  # a database error becomes a JSON 503 in the base handler
        self.send_json(200, {"status": "ok", "renderSandbox": self.ctx.pool.sandbox_state()})


ROUTES = [(r"/healthz", HealthHandler), (r"/health", HealthHandler)]
