"""make_app: the Tornado application, from every HTTP module's routes.

A route module (one per domain, beside its services' calls) declares `ROUTES`, its
`(pattern, handler)` pairs, and `PERMISSIONS`, what each of its patterns and methods needs (by
the rule of `web.permissions`), beside them: `route_permissions` joins those. Listed
once in `ROUTE_MODULES`, its `/v1` routes are also served under `/console/api`
(`web.console_api`). The recipe for an owner endpoint is in docs/architecture.md."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import tornado.web
from tornado.httputil import HTTPServerRequest
from tornado.routing import PathMatches, Rule

from vaultd.services.members.roles import Permission
from vaultd.web import (
    account,
    activity,
    agreements,
    analytics,
    audit,
    console_activity,
    console_auth,
    console_file,
    console_file_forms,
    console_files,
    console_page,
    console_rooms,
    console_settings,
    console_sign_in,
    console_trace,
    files,
    gate_sessions,
    health,
    index,
    keys,
    members,
    oidc_sign_in,
    openapi,
    permissions,
    room_views,
    rooms,
    trace,
    upload,
    viewer,
    viewer_gates,
    views,
    webhooks,
)
from vaultd.web.access_log_scrub import log_request
from vaultd.web.base import BaseHandler, NotFoundHandler
from vaultd.web.console_api import api_pattern, mirror
from vaultd.web.context import AppContext

ROUTE_MODULES: list[Any] = [index, health, openapi, account, upload, files, views, viewer,
                            analytics, webhooks, trace, gate_sessions, agreements,
                            viewer_gates, rooms, room_views, members, keys, activity,
                            console_auth, console_page, oidc_sign_in, audit,
                            console_sign_in, console_files, console_file, console_file_forms,
                            console_settings, console_trace, console_activity, console_rooms]


class RouteAuditError(Exception):
    pass


def route_permissions() -> dict[str, Mapping[str, Permission]]:
    """What each route needs: the `PERMISSIONS` each route module declares. A route's method
    declared by two modules is refused: one decision per route and method (two modules may
    serve one path, each its own methods: `/v1/files`' listing and upload)."""
    table: dict[str, dict[str, Permission]] = {}
    for module in ROUTE_MODULES:
        for pattern, methods in getattr(module, "PERMISSIONS", {}).items():
            joined = table.setdefault(pattern, {})
            for method, permission in methods.items():
                if method in joined:
                    raise RouteAuditError(
                        f"the permission of {pattern} {method} is declared twice")
                joined[method] = permission
    return dict(table)


def _audit(routes: list[tuple[str, type]]) -> None:
    # Authentication is on by default; a handler outside the base class could skip it.
    table = route_permissions()
    for pattern, handler in routes:
        if not issubclass(handler, BaseHandler):
            raise RouteAuditError(f"route {pattern} does not use the authenticated base handler")
        _audit_permissions(pattern, handler, table)


def served_methods(handler: type[BaseHandler]) -> list[str]:
    """The methods a handler class defines itself (the rest are Tornado's 405)."""
    base = tornado.web.RequestHandler
    return [m for m in handler.SUPPORTED_METHODS
            if getattr(handler, m.lower()) is not getattr(base, m.lower())]


def _audit_permissions(pattern: str, handler: type[BaseHandler],
                       table: Mapping[str, Mapping[str, Permission]]) -> None:
    # Every method of every authenticated route names what it needs (`route_permissions`).
    if handler.public:
        return
    declared = permissions.declared(api_pattern(pattern), table)
    for method in served_methods(handler):
        if method not in declared:
            raise RouteAuditError(f"route {pattern} {method} declares no permission")
        if handler.deferred_auth and declared[method] is not Permission.READ:
            raise RouteAuditError(f"route {pattern} checks its key itself: it may need READ only")


def all_routes() -> list[tuple[str, type]]:
    routes: list[tuple[str, type]] = []
    for module in ROUTE_MODULES:
        routes.extend(module.ROUTES)
    return routes


def served_routes() -> list[tuple[str, type]]:
    """Every route the app serves: each module's, then the `/v1` routes again under
    `/console/api`, for signed-in members (`web.console_api`)."""
    routes = all_routes()
    return routes + mirror(routes)


class MethodAndPath(PathMatches):
    """A path whose methods are served by different handlers (`BaseHandler.only_methods`)."""

    def __init__(self, pattern: str, methods: tuple[str, ...]) -> None:
        super().__init__(pattern)
        self.methods = methods

    def match(self, request: HTTPServerRequest) -> dict[str, Any] | None:
        return super().match(request) if request.method in self.methods else None


_GROUP = re.compile(r"\((?:[^()]|\([^()]*\))*\)")


def route_template(pattern: str) -> str:
    """`/v1/views/([^/]+)/pages/([^/]+)` -> `/v1/views/{}/pages/{}`: a metrics label."""
    return _GROUP.sub("{}", pattern).rstrip("$")


def _rule(pattern: str, handler: type[BaseHandler], ctx: AppContext,
          table: Mapping[str, Mapping[str, Permission]]) -> Rule:
    methods = handler.only_methods
    matcher = MethodAndPath(pattern, methods) if methods else PathMatches(pattern)
    needs = permissions.declared(api_pattern(pattern), table)
    return Rule(matcher, handler, {"ctx": ctx, "route": route_template(pattern),
                                   "permissions": needs})


def _audit_table(routes: list[tuple[str, type]]) -> None:
    # A permission for a route that is not served is a route renamed without its decision.
    served = {pattern for pattern, _ in routes}
    for pattern in route_permissions():
        if pattern not in served:
            raise RouteAuditError(f"a permission is declared for {pattern}, which no route serves")


def make_app(ctx: AppContext) -> tornado.web.Application:
    routes = served_routes()
    _audit(routes)
    _audit_table(routes)
    table = route_permissions()
    handlers: list[Any] = [_rule(pattern, handler, ctx, table) for pattern, handler in routes]
    handlers.append(viewer.STATIC_ROUTE)
    handlers.append(console_page.STATIC_ROUTE)
    return tornado.web.Application(
        handlers,
        template_path=str(viewer.TEMPLATE_DIR),
        default_handler_class=NotFoundHandler,
        default_handler_args={"ctx": ctx},
        log_function=log_request,
        compress_response=False,
        xsrf_cookies=False,
    )
