"""Agreements (NDAs) over the API: create a version, list, read one."""

from __future__ import annotations

from vaultd.services.gates import agreements
from vaultd.web.base import BaseHandler
from vaultd.web.permissions import CHANGE, READ


class AgreementsHandler(BaseHandler):
    async def post(self) -> None:
        assert self.account is not None
        name, text = agreements.parse_agreement(self.json_body())
        doc = await agreements.create_agreement(self.ctx.db, self.account, name, text)
        self.send_json(201, agreements.agreement_json(doc))

    async def get(self) -> None:
        assert self.account is not None
        docs = await agreements.list_agreements(self.ctx.db, self.account.id)
        self.send_json(200, [agreements.agreement_json(doc) for doc in docs])


class AgreementHandler(BaseHandler):
    async def get(self, agreement_id: str) -> None:
        assert self.account is not None
        doc = await agreements.latest_version(self.ctx.db, self.account.id, agreement_id)
        self.send_json(200, agreements.agreement_json(doc, with_text=True))


ROUTES = [
    (r"/v1/agreements", AgreementsHandler),
    (r"/v1/agreements/([^/]+)", AgreementHandler),
]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/agreements": {"GET": READ, "POST": CHANGE},
    r"/v1/agreements/([^/]+)": {"GET": READ},
}
