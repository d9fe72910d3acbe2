"""Tornado's access log, with view tokens and viewer session ids scrubbed from paths (they are
credentials)."""

from __future__ import annotations

import logging
import re

from tornado.web import RequestHandler

access_log = logging.getLogger("tornado.access")

# File links (/v/, /v1/views/), room links (/r/, /v1/room-views/) and sign-in links, and the
# same routes for signed-in members under /console/api/.
_TOKEN_IN_PATH = re.compile(
    r"(/(?:v1/views|v|v1/room-views|r|console/auth/link|console/api/views"
    r"|console/api/room-views)/)[^/?#]+")
_SESSION_IN_PATH = re.compile(r"(/sessions/)[^/?#]+")


def scrub_path(uri: str) -> str:
    """Drop the query (it may carry anything) and replace tokens by a placeholder."""
    path = uri.split("?", 1)[0]
    return _SESSION_IN_PATH.sub(r"\1<session>", _TOKEN_IN_PATH.sub(r"\1<token>", path))


def log_request(handler: RequestHandler) -> None:
    status = handler.get_status()
    if status < 400:
        emit = access_log.info
    elif status < 500:
        emit = access_log.warning
    else:
        emit = access_log.error
    request = handler.request
    elapsed_ms = 1000.0 * request.request_time()
    emit("%d %s %s (%s) %.2fms", status, request.method, scrub_path(request.uri or ""),
         request.remote_ip, elapsed_ms)
