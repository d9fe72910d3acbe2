"""make_app: the Tornado application, from every HTTP module's routes."""

from __future__ import annotations

import re
from typing import Any

import tornado.web
from tornado.httputil import HTTPServerRequest
from tornado.routing import PathMatches, Rule

from vaultd.web import (
    account,
    agreements,
    analytics,
    audit,
    files,
    gate_sessions,
    health,
    index,
    openapi,
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
from vaultd.web.context import AppContext

ROUTE_MODULES: list[Any] = [index, health, openapi, account, upload, files, views, viewer,
                            analytics, webhooks, trace, gate_sessions, agreements,
                            viewer_gates, rooms, room_views, audit]


class RouteAuditError(Exception):
    pass


def _audit(routes: list[tuple[str, type]]) -> None:
    # Authentication is on by default; a handler outside the base class could skip it.
    for pattern, handler in routes:
        if not issubclass(handler, BaseHandler):
            raise RouteAuditError(f"route {pattern} does not use the authenticated base handler")


def all_routes() -> list[tuple[str, type]]:
    routes: list[tuple[str, type]] = []
    for module in ROUTE_MODULES:
        routes.extend(module.ROUTES)
    return routes


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


def _rule(pattern: str, handler: type[BaseHandler], ctx: AppContext) -> Rule:
    methods = handler.only_methods
    matcher = MethodAndPath(pattern, methods) if methods else PathMatches(pattern)
    return Rule(matcher, handler, {"ctx": ctx, "route": route_template(pattern)})


def make_app(ctx: AppContext) -> tornado.web.Application:
    routes = all_routes()
    _audit(routes)
    handlers: list[Any] = [_rule(pattern, handler, ctx) for pattern, handler in routes]
    handlers.append(viewer.STATIC_ROUTE)
    return tornado.web.Application(
        handlers,
        template_path=str(viewer.TEMPLATE_DIR),
        default_handler_class=NotFoundHandler,
        default_handler_args={"ctx": ctx},
        log_function=log_request,
        compress_response=False,
        xsrf_cookies=False,
    )
