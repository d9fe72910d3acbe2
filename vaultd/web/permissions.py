"""The rule each route module's `PERMISSIONS` follows, beside its `ROUTES`: what each
authenticated route and method needs. `web.app.route_permissions` joins the modules' tables into
the one every request is checked against (BaseHandler.prepare calls `require` with it before the
handler runs), and refuses a route's method declared by two modules.

`make_app` refuses to start if a non-public route serves a method no table names, so a new
route cannot be reachable without a decision beside it. The rule: a read (GET) needs READ,
which every role holds; a change to files, links, rooms, agreements or a viewer's gate session
needs CHANGE_CONTENT; a trace needs TRACE; the account itself (members, API keys, webhooks)
needs MANAGE_ACCOUNT. Reads of the account's people and keys are READ: an auditor sees who can
act on the account (never a key: only its prefix). The console's pages follow it too: a page
reads, each form changes what it names.

Routes whose handler checks the key itself (`deferred_auth`, the page path) may need READ only:
every role holds it, so skipping the check there refuses nobody (the audit holds this)."""

from __future__ import annotations

from collections.abc import Mapping

from vaultd.services.members.roles import Permission

READ, CHANGE, TRACE, MANAGE = (Permission.READ, Permission.CHANGE_CONTENT, Permission.TRACE,
                               Permission.MANAGE_ACCOUNT)

# A viewer session's gate actions: one route per action a registered gate declares
# (`web.gate_sessions.routes`), each a change to the session. Ruled by shape, not listed, so a
# gate loaded at start (`gates.extra_modules`) needs no line here.
GATE_ACTION_PREFIXES = (r"/v1/views/([^/]+)/sessions/([^/]+)/",
                        r"/v1/room-views/([^/]+)/sessions/([^/]+)/")


def declared(pattern: str, table: Mapping[str, Mapping[str, Permission]],
             ) -> Mapping[str, Permission]:
    """What `pattern`'s methods need in `table` (`{}`: nothing declared); a gate's action
    needs what every gate action needs."""
    if pattern in table:
        return table[pattern]
    prefix, _, action = pattern.rpartition("/")
    gate_action = f"{prefix}/" in GATE_ACTION_PREFIXES and action.isidentifier()
    return {"POST": CHANGE} if gate_action else {}
