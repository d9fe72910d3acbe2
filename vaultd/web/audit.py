"""The tamper-evident audit log (docs/audit.md): the newest signed checkpoint, inclusion and
consistency proofs, the verifiable export (streamed), and the signing keys (public)."""

from __future__ import annotations

import base64
from typing import Any

from vaultd.errors import InvalidRequest
from vaultd.services.audit import checkpoints, export, keys, tree_store
from vaultd.web.base import BaseHandler
from vaultd.web.files import parse_bounded_int
from vaultd.web.permissions import READ

MAX_INDEX = 999_999_999
KINDS = ("access", "activity")


def _b64(proof: dict[str, Any]) -> dict[str, Any]:
    out = dict(proof)
    out["proof"] = [base64.b64encode(h).decode() for h in proof["proof"]]
    if "leafHash" in out:
        out["leafHash"] = base64.b64encode(proof["leafHash"]).decode()
    return out


class CheckpointHandler(BaseHandler):
    async def get(self) -> None:
        assert self.account is not None
        newest = await checkpoints.latest(self.ctx.db, self.account.id)
        self.send_json(200, checkpoints.checkpoint_json(newest))


class InclusionHandler(BaseHandler):
    """By index: `/v1/audit/proof/inclusion?index=`; by entry: `/v1/audit/entries/<id>/proof`."""

    async def get(self, entry_id: str | None = None) -> None:
        assert self.account is not None
        account_id = self.account.id
        if entry_id is not None:
            kind = self.get_query_argument("type", "access")
            if kind not in KINDS:
                raise InvalidRequest("type must be access or activity")
            index = await tree_store.index_of(self.ctx.db, account_id, kind, entry_id)
        else:
            raw_index = self.get_query_argument("index", None)
            if raw_index is None:
                raise InvalidRequest("index is required")
            index = parse_bounded_int(raw_index, "index", 0, 0, MAX_INDEX)
        size = await self._size(account_id)
        self.send_json(200, _b64(await tree_store.inclusion(self.ctx.db, account_id, index,
                                                            size)))

    async def _size(self, account_id: str) -> int:
        raw = self.get_query_argument("treeSize", None)
        if raw is None:  # by default, the tree the newest checkpoint signs
            return (await checkpoints.latest(self.ctx.db, account_id))["size"]
        return parse_bounded_int(raw, "treeSize", 1, 1, MAX_INDEX)


class ConsistencyHandler(BaseHandler):
    async def get(self) -> None:
        assert self.account is not None
        raw_from = self.get_query_argument("from", None)
        if raw_from is None:
            raise InvalidRequest("from is required")
        first = parse_bounded_int(raw_from, "from", 1, 1, MAX_INDEX)
        raw_to = self.get_query_argument("to", None)
        second = None if raw_to is None else parse_bounded_int(raw_to, "to", 1, 1, MAX_INDEX)
        proof = await tree_store.consistency(self.ctx.db, self.account.id, first, second)
        self.send_json(200, _b64(proof))


class ExportHandler(BaseHandler):
    db_deadline = False  # streamed: each batch is its own round trip
    paced = False

    async def get(self) -> None:
        assert self.account is not None
        pieces = export.export(self.ctx.db, self.account.id, self.ctx.settings.audit_origin)
        first = await anext(pieces)  # NotFound (no checkpoint) is still a JSON 404
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.set_header("Content-Disposition", 'attachment; filename="audit-export.json"')
        self.write(first)
        async for piece in pieces:
            self.write(piece)
            await self.flush()
        self.finish()


class KeysHandler(BaseHandler):
    public = True  # what a verifier needs before it trusts anything

    async def get(self) -> None:
        self.send_json(200, {"keys": await keys.published(self.ctx.db)})


ROUTES = [
    (r"/v1/audit/checkpoint", CheckpointHandler),
    (r"/v1/audit/proof/inclusion", InclusionHandler),
    (r"/v1/audit/entries/([^/]+)/proof", InclusionHandler),
    (r"/v1/audit/proof/consistency", ConsistencyHandler),
    (r"/v1/audit/export", ExportHandler),
    (r"/v1/audit/keys", KeysHandler),
]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/audit/checkpoint": {"GET": READ},
    r"/v1/audit/proof/inclusion": {"GET": READ},
    r"/v1/audit/entries/([^/]+)/proof": {"GET": READ},
    r"/v1/audit/proof/consistency": {"GET": READ},
    r"/v1/audit/export": {"GET": READ},
}
