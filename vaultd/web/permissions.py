"""What each authenticated route and method needs: the one table every request is checked
against (BaseHandler.prepare calls `require` with it before the handler runs).

`make_app` refuses to start if a non-public route serves a method this table does not name,
so a new route cannot be reachable without a decision here. The rule the table follows: a read
(GET) needs READ, which every role holds; a change to files, links, rooms, agreements or a
viewer's gate session needs CHANGE_CONTENT; a trace needs TRACE; the account itself (members,
API keys, webhooks) needs MANAGE_ACCOUNT. Reads of the account's people and keys are READ: an
auditor sees who can act on the account (never a key: only its prefix).

A route module may instead declare its own `PERMISSIONS` beside its `ROUTES`, as a new owner
endpoint does (docs/architecture.md, "Adding an owner endpoint"): `web.app.route_permissions`
joins the two and refuses a pattern declared in both.

Routes whose handler checks the key itself (`deferred_auth`, the page path) may need READ only:
every role holds it, so skipping the check there refuses nobody (the audit holds this)."""

from __future__ import annotations

from collections.abc import Mapping

from vaultd.services.members.roles import Permission

READ, CHANGE, TRACE, MANAGE = (Permission.READ, Permission.CHANGE_CONTENT, Permission.TRACE,
                               Permission.MANAGE_ACCOUNT)

ROUTE_PERMISSIONS: dict[str, Mapping[str, Permission]] = {
    r"/v1/account": {"GET": READ},
    r"/v1/files": {"GET": READ, "POST": CHANGE},
    r"/v1/files/([^/]+)": {"GET": READ, "DELETE": CHANGE},
    r"/v1/files/([^/]+)/download": {"GET": READ},
    r"/v1/files/([^/]+)/access-log": {"GET": READ},
    r"/v1/views": {"POST": CHANGE},
    r"/v1/views/([^/]+)": {"GET": READ, "DELETE": CHANGE, "PATCH": CHANGE},
    r"/v1/views/([^/]+)/pages/([^/]+)": {"GET": READ},
    r"/v1/files/([^/]+)/revoke-views": {"POST": CHANGE},
    r"/v1/files/([^/]+)/views": {"GET": READ},
    r"/v1/files/([^/]+)/views/([^/]+)": {"DELETE": CHANGE},
    r"/v1/views/([^/]+)/activity": {"POST": CHANGE},
    r"/v1/views/([^/]+)/analytics": {"GET": READ},
    r"/v1/files/([^/]+)/analytics": {"GET": READ},
    r"/v1/webhooks": {"GET": READ, "POST": MANAGE},
    r"/v1/webhooks/([^/]+)": {"DELETE": MANAGE},
    r"/v1/webhooks/([^/]+)/deliveries": {"GET": READ},
    r"/v1/webhooks/([^/]+)/test": {"POST": MANAGE},
    r"/v1/trace": {"POST": TRACE},
    r"/v1/views/([^/]+)/sessions": {"POST": CHANGE},
    r"/v1/room-views/([^/]+)/sessions": {"POST": CHANGE},
    r"/v1/agreements": {"GET": READ, "POST": CHANGE},
    r"/v1/agreements/([^/]+)": {"GET": READ},
    r"/v1/rooms": {"GET": READ, "POST": CHANGE},
    r"/v1/rooms/([^/]+)": {"GET": READ, "PATCH": CHANGE, "DELETE": CHANGE},
    r"/v1/rooms/([^/]+)/folders": {"POST": CHANGE},
    r"/v1/rooms/([^/]+)/files": {"POST": CHANGE},
    r"/v1/rooms/([^/]+)/items/([^/]+)": {"PATCH": CHANGE, "DELETE": CHANGE},
    r"/v1/rooms/([^/]+)/index": {"GET": READ},
    r"/v1/rooms/([^/]+)/views": {"POST": CHANGE},
    r"/v1/rooms/([^/]+)/revoke-views": {"POST": CHANGE},
    r"/v1/rooms/([^/]+)/access-log": {"GET": READ},
    r"/v1/rooms/([^/]+)/analytics": {"GET": READ},
    r"/v1/rooms/([^/]+)/preview": {"GET": READ},
    r"/v1/room-views/([^/]+)": {"GET": READ, "DELETE": CHANGE},
    r"/v1/room-views/([^/]+)/files/([^/]+)/pages/([^/]+)": {"GET": READ},
    r"/v1/members": {"GET": READ, "POST": MANAGE},
    r"/v1/members/([^/]+)": {"PATCH": MANAGE, "DELETE": MANAGE},
    r"/v1/keys": {"GET": READ, "POST": MANAGE},
    r"/v1/keys/([^/]+)": {"DELETE": MANAGE},
    r"/v1/activity": {"GET": READ},
    r"/v1/audit/checkpoint": {"GET": READ},
    r"/v1/audit/proof/inclusion": {"GET": READ},
    r"/v1/audit/entries/([^/]+)/proof": {"GET": READ},
    r"/v1/audit/proof/consistency": {"GET": READ},
    r"/v1/audit/export": {"GET": READ},
    # The console's pages (web.console_*): a page reads, each form changes what it names.
    r"/console/files": {"GET": READ},
    r"/console/files/([^/]+)": {"GET": READ},
    r"/console/files/([^/]+)/share": {"GET": READ, "POST": CHANGE},
    r"/console/files/([^/]+)/preview": {"POST": READ},  # a link for the member themself
    r"/console/files/([^/]+)/links/([^/]+)/revoke": {"POST": CHANGE},
    r"/console/files/([^/]+)/links/([^/]+)/extend": {"POST": CHANGE},
    r"/console/files/([^/]+)/revoke-all": {"GET": READ, "POST": CHANGE},
    r"/console/files/([^/]+)/delete": {"GET": READ, "POST": CHANGE},
    r"/console/settings": {"GET": READ},
    r"/console/settings/keys": {"POST": MANAGE},
    r"/console/settings/keys/([^/]+)/revoke": {"POST": MANAGE},
    r"/console/settings/members": {"POST": MANAGE},
    r"/console/settings/members/([^/]+)/role": {"POST": MANAGE},
    r"/console/settings/members/([^/]+)/remove": {"POST": MANAGE},
    # A member's own mail choices, not the account's records: an auditor may choose theirs.
    r"/console/settings/notifications": {"POST": READ},
    r"/console/settings/webhooks": {"POST": MANAGE},
    r"/console/settings/webhooks/([^/]+)/delete": {"POST": MANAGE},
    r"/console/settings/webhooks/([^/]+)/test": {"POST": MANAGE},
    r"/console/settings/branding": {"POST": MANAGE},
    r"/console/trace": {"GET": READ, "POST": TRACE},
    r"/console/activity": {"GET": READ},
    r"/console/rooms": {"GET": READ, "POST": CHANGE},
    r"/console/rooms/([^/]+)": {"GET": READ},
    r"/console/rooms/([^/]+)/folders": {"POST": CHANGE},
    r"/console/rooms/([^/]+)/files": {"POST": CHANGE},
    r"/console/rooms/([^/]+)/share": {"POST": CHANGE},
}

# A viewer session's gate actions: one route per action a registered gate declares
# (`web.gate_sessions.routes`), each a change to the session. Ruled by shape, not listed, so a
# gate loaded at start (`gates.extra_modules`) needs no line here.
GATE_ACTION_PREFIXES = (r"/v1/views/([^/]+)/sessions/([^/]+)/",
                        r"/v1/room-views/([^/]+)/sessions/([^/]+)/")


def declared(pattern: str, table: Mapping[str, Mapping[str, Permission]] = ROUTE_PERMISSIONS,
             ) -> Mapping[str, Permission]:
    """What `pattern`'s methods need in `table` (`{}`: nothing declared); a gate's action
    needs what every gate action needs."""
    if pattern in table:
        return table[pattern]
    prefix, _, action = pattern.rpartition("/")
    gate_action = f"{prefix}/" in GATE_ACTION_PREFIXES and action.isidentifier()
    return {"POST": CHANGE} if gate_action else {}
