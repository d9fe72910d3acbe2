"""Webhook endpoints over HTTP: create (secret shown once), list, delete, delivery history."""

from __future__ import annotations

from vaultd.services.members import activity
from vaultd.services.webhooks import webhook_test_event, webhooks
from vaultd.web.base import BaseHandler
from vaultd.web.client_ip import viewer_ip
from vaultd.web.permissions import MANAGE, READ


class EndpointsHandler(BaseHandler):
    async def post(self) -> None:
        assert self.account is not None
        request = webhooks.parse_endpoint_request(self.json_body())
        created = await webhooks.create_endpoint(self.ctx.db, self.ctx.store.keyring,
                                                 self.account, request)
        assert self.actor is not None
        # Not the URL: a receiver's URL may carry its own token.
        await activity.record(self.ctx.db, self.actor, "webhook.created", target=created["id"],
                              ip=viewer_ip(self.request, self.ctx.settings.proxy_trusted))
        self.send_json(201, created)

    async def get(self) -> None:
        assert self.account is not None
        self.send_json(200, {"webhooks": await webhooks.list_endpoints(self.ctx.db,
                                                                       self.account.id)})


class EndpointHandler(BaseHandler):
    async def delete(self, endpoint_id: str) -> None:
        assert self.account is not None
        await webhooks.delete_endpoint(self.ctx.db, self.account.id, endpoint_id)
        assert self.actor is not None
        await activity.record(self.ctx.db, self.actor, "webhook.deleted", target=endpoint_id,
                              ip=viewer_ip(self.request, self.ctx.settings.proxy_trusted))
        self.send_empty(204)


class DeliveriesHandler(BaseHandler):
    async def get(self, endpoint_id: str) -> None:
        assert self.account is not None
        self.send_json(200, {"deliveries": await webhooks.latest_deliveries(
            self.ctx.db, self.account.id, endpoint_id)})


class TestEventHandler(BaseHandler):
    async def post(self, endpoint_id: str) -> None:
        assert self.account is not None
        queued = await webhook_test_event.send_test_event(self.ctx.db, self.account, endpoint_id)
        self.send_json(202, queued)


ROUTES = [
    (r"/v1/webhooks", EndpointsHandler),
    (r"/v1/webhooks/([^/]+)", EndpointHandler),
    (r"/v1/webhooks/([^/]+)/deliveries", DeliveriesHandler),
    (r"/v1/webhooks/([^/]+)/test", TestEventHandler),
]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/webhooks": {"GET": READ, "POST": MANAGE},
    r"/v1/webhooks/([^/]+)": {"DELETE": MANAGE},
    r"/v1/webhooks/([^/]+)/deliveries": {"GET": READ},
    r"/v1/webhooks/([^/]+)/test": {"POST": MANAGE},
}
