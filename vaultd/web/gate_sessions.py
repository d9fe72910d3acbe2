"""Viewer sessions over the API (Option B): open one for a gated link, then pass its gates.
The proxy sends the session id back on pages as `x-viewer-session`. File links under
`/v1/views/:token/sessions`, room links under `/v1/room-views/:token/sessions`: the same
handlers and the same gate code (`services.gates`), on a `GatedLink`. `act` runs any
registered gate's action (`services.gates.registry`), shared with the hosted viewer
(`web.viewer_gates`); the routes are one per action, built from the registry. Each action
that succeeds answers the session's new `sessionId`: the one in its URL has ended."""

from __future__ import annotations

from typing import Any

from vaultd.records import ViewerSessionDoc
from vaultd.services.gates import actions, gated, registry, sessions
from vaultd.services.gates.check import Gates
from vaultd.services.gates.gated import GatedLink, Reader
from vaultd.services.gates.registry import GateAction, GateContext, SessionGate
from vaultd.services.rooms import reads
from vaultd.web.base import BaseHandler
from vaultd.web.context import AppContext
from vaultd.web.permissions import CHANGE
from vaultd.web.views import ViewerIpMixin


class ApiReaderMixin(ViewerIpMixin):
    rooms = False  # True: the token is a room link's (`/v1/room-views/...`)

    def reader(self) -> Reader:
        agent = self.request.headers.get("x-viewer-user-agent", "")[:300] or None
        return Reader(self.viewer_ip(), agent)

    async def own_link(self, token: str) -> GatedLink:
        """The live link of this token, the key's account's; NotFound otherwise."""
        assert self.account is not None
        if self.rooms:
            link, room, account = await reads.open_room(self.ctx.db, token, self.account.id)
            return gated.room_link(link, room, account)
        return gated.file_link(await self.ctx.pages.open_link(token, self.account))


async def act(ctx: AppContext, reader: Reader, link: GatedLink, session: ViewerSessionDoc,
              gate: SessionGate, action: GateAction, body: dict[str, Any]
              ) -> tuple[int, dict[str, Any], str]:
    """One of a session's actions (`registry`), shared by the API and the hosted viewer:
    (status, body, the session's new id). Every action that succeeds renews the id, so an id
    known before (planted, or seen) ends as the reader passes a gate with it."""
    actions.require_gate(link, gate.name)
    value = body.get(action.field) if action.field is not None else None
    context = GateContext(ctx.db, ctx.settings, ctx.codes)
    outcome = await action.run(context, link, session, value, reader)
    renewed = outcome.renewed or await sessions.renew(ctx.db, session)
    return action.status, outcome.answer, renewed


def action_body(handler: BaseHandler, action: GateAction) -> dict[str, Any]:
    """The action's JSON body; an action without one reads none (whatever was sent)."""
    return handler.json_body() if action.field is not None else {}


class OpenSessionHandler(ApiReaderMixin):
    async def post(self, token: str) -> None:
        link = await self.own_link(token)
        session_id, pending = await actions.open_session(self.ctx.db, link, self.reader())
        self.send_json(201, {"sessionId": session_id, "pending": pending})


class SessionActionHandler(ApiReaderMixin):
    action = ""  # a registered action's name: one route each (`routes`, the OpenAPI file's)

    async def post(self, token: str, session_id: str) -> None:
        found = registry.action_named(self.action)
        assert found is not None  # routed from the registry
        gate, action = found
        link = await self.own_link(token)
        Gates().admit_open(link.policy, self.viewer_ip())
        session = await sessions.session_of(self.ctx.db, session_id, link)
        status, answer, renewed = await act(self.ctx, self.reader(), link, session, gate,
                                            action, action_body(self, action))
        self.send_json(status, {**answer, "sessionId": renewed})


class RoomOpenSessionHandler(OpenSessionHandler):
    rooms = True


SESSION = r"/v1/views/([^/]+)/sessions/([^/]+)"
ROOM_SESSION = r"/v1/room-views/([^/]+)/sessions/([^/]+)"


def _action_handler(action: str, rooms: bool) -> type[SessionActionHandler]:
    return type(f"{'Room' if rooms else ''}SessionAction_{action}", (SessionActionHandler,),
                {"action": action, "rooms": rooms})


def routes() -> list[tuple[str, type]]:
    """A session's routes: opening one, then one per registered action, for file links and
    room links. Read when the app is built, after the operator's gate modules are loaded."""
    found: list[tuple[str, type]] = [(r"/v1/views/([^/]+)/sessions", OpenSessionHandler)]
    found += [(f"{SESSION}/{name}", _action_handler(name, False))
              for name in registry.action_names()]
    found.append((r"/v1/room-views/([^/]+)/sessions", RoomOpenSessionHandler))
    found += [(f"{ROOM_SESSION}/{name}", _action_handler(name, True))
              for name in registry.action_names()]
    return found


def __getattr__(name: str) -> Any:
    # `ROUTES` as every route module has it (`web.app.all_routes`), built from the registry
    # when read: the operator's extra gates are registered at start, after this import.
    if name == "ROUTES":
        return routes()
    raise AttributeError(name)

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/views/([^/]+)/sessions": {"POST": CHANGE},
    r"/v1/room-views/([^/]+)/sessions": {"POST": CHANGE},
}
