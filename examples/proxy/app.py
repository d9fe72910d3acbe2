"""Option B of the vaultd interface: your own application shows a document, the token stays here.

The browser only ever sees this app's routes (/doc/<local-id>, its pages and its status); the
view token lives in this process and goes to vaultd with the API key, together with the
browser's IP address in `x-viewer-ip` so the watermark and the access log name the real viewer.
The page itself is vaultd's own viewer (template, viewer.js, viewer.css), pointed at our routes.

    VAULTD_URL=http://127.0.0.1:8080/v1 VAULTD_API_KEY=sd_live_... \\
        .venv/bin/python examples/proxy/app.py --share <FILE_ID> --viewer-email ann@client.example

(the project's virtualenv has Tornado, the only thing it needs).

See README.md beside this file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import secrets
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import tornado.web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest, HTTPResponse

HERE = Path(__file__).resolve().parent
VAULTD_WEB = HERE.parents[1] / "vaultd" / "web"
UPSTREAM_TIMEOUT = 35.0  # rendering is queued: the spec asks for at least 30 s
RETRYABLE = {429, 500, 502, 503, 504, 599}  # 599: Tornado's "no HTTP response at all"
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
        "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"),
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}

# Shown instead of a traceback when vaultd cannot be reached (stopped, restarting, wrong URL).
UNREACHABLE_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Temporarily unavailable</title></head>
<body><h1>The document cannot be shown right now</h1>
<p>The document service is not answering. Please try again in a minute.</p></body></html>
"""

log = logging.getLogger("proxy")


class VaultdUnreachable(Exception):
    """No HTTP answer from vaultd at all: refused, reset, timed out or unknown host."""


@dataclass
class Link:
    """One shared document as this app knows it. `token` never leaves the server."""

    token: str
    page_count: int | None = None  # known once vaultd's details have been read
    expires_at: datetime | None = None
    gone: bool = False  # vaultd answered 404: revoked, expired or deleted

    def active(self) -> bool:
        if self.gone:
            return False
        return self.expires_at is None or self.expires_at > datetime.now(self.expires_at.tzinfo)


class Vaultd:
    """The few API calls this app makes, always with the end viewer's IP address."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.http = AsyncHTTPClient()

    async def call(self, method: str, path: str, viewer_ip: str | None = None,
                   body: dict[str, Any] | None = None) -> HTTPResponse:
        headers = {"Authorization": f"Bearer {self.api_key}"}
        if viewer_ip:
            headers["x-viewer-ip"] = viewer_ip
        if body is not None:
            headers["Content-Type"] = "application/json"
        request = HTTPRequest(f"{self.base_url}{path}", method, headers,
                              json.dumps(body) if body is not None else None,
                              connect_timeout=5, request_timeout=UPSTREAM_TIMEOUT)
        try:
            return await self.http.fetch(request, raise_error=False)
        except (OSError, HTTPClientError) as exc:  # raise_error=False still raises these
            raise VaultdUnreachable(f"cannot reach vaultd at {self.base_url}: {exc}") from None

    async def details(self, token: str, viewer_ip: str) -> HTTPResponse:
        return await self.call("GET", f"/views/{quote(token, safe='')}", viewer_ip)

    async def page(self, token: str, number: int, viewer_ip: str) -> HTTPResponse:
        return await self.call("GET", f"/views/{quote(token, safe='')}/pages/{number}", viewer_ip)

    async def create_link(self, file_id: str, email: str, name: str | None) -> str:
        body: dict[str, Any] = {"fileId": file_id, "viewerEmail": email}
        if name:
            body["viewerName"] = name
        response = await self.call("POST", "/views", body=body)
        if response.code != 201:
            raise SystemExit(f"could not create a link for {file_id}: HTTP {response.code}")
        return str(json.loads(response.body)["token"])


class ProxyHandler(tornado.web.RequestHandler):
    def initialize(self, vaultd: Vaultd, links: dict[str, Link]) -> None:
        self.vaultd = vaultd
        self.links = links

    def set_default_headers(self) -> None:
        self.clear_header("Server")
        for name, value in SECURITY_HEADERS.items():
            self.set_header(name, value)

    def compute_etag(self) -> None:
        return None

    def viewer_ip(self) -> str:
        # The browser's address as Tornado sees it. Behind a reverse proxy, start the server
        # with xheaders=True (and only trust your own proxy) so this is the real client.
        return str(self.request.remote_ip)

    def link(self, local_id: str) -> Link | None:
        link = self.links.get(local_id)
        return link if link is not None and link.active() else None

    async def read_details(self, link: Link) -> dict[str, Any] | None:
        """vaultd's link details (this logs a `view`); None once the link is dead."""
        response = await self.vaultd.details(link.token, self.viewer_ip())
        if response.code == 404:
            link.gone = True
            return None
        if response.code != 200:
            raise tornado.web.HTTPError(503)
        details: dict[str, Any] = json.loads(response.body)
        link.page_count = int(details["pageCount"])
        link.expires_at = datetime.fromisoformat(details["expiresAt"].replace("Z", "+00:00"))
        return details

    def not_available(self) -> None:
        self.set_status(404)
        self.render("not_available.html")

    def send_json(self, status: int, body: dict[str, Any]) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps(body))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.send_json(status_code, {"error": self._reason.lower()})

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, VaultdUnreachable):
            log.warning("%s", value)  # one line: the page says so to the viewer
        else:
            super().log_exception(typ, value, tb)


class DocumentHandler(ProxyHandler):
    async def get(self, local_id: str) -> None:
        link = self.link(local_id)
        try:
            details = await self.read_details(link) if link else None
        except VaultdUnreachable as exc:
            log.warning("%s", exc)
            self.set_status(502)
            return self.finish(UNREACHABLE_PAGE)
        if details is None:
            return self.not_available()
        self.render("viewer.html", details=details)


class PageHandler(ProxyHandler):
    async def get(self, local_id: str, raw_number: str) -> None:
        try:
            await self.serve_page(local_id, raw_number)
        except VaultdUnreachable as exc:
            log.warning("%s", exc)
            self.set_header("Retry-After", "5")
            self.send_json(502, {"error": "the document service is not answering; retry shortly"})

    async def serve_page(self, local_id: str, raw_number: str) -> None:
        link = self.link(local_id)
        if link is not None and link.page_count is None:
            await self.read_details(link)  # e.g. this app restarted under an open viewer
        if link is None or not link.active() or not in_range(raw_number, link.page_count):
            return self.send_json(404, {"error": "not found"})
        response = await self.vaultd.page(link.token, int(raw_number), self.viewer_ip())
        if response.code == 200:
            self.set_header("Content-Type", "image/jpeg")
            self.set_header("Cache-Control", "private, no-store")
            return self.finish(response.body)
        if response.code in RETRYABLE:
            self.set_header("Retry-After", response.headers.get("Retry-After", "2"))
            return self.send_json(503, {"error": "busy, retry shortly"})
        if response.code == 404:
            link.gone = True  # the page is in range, so the link itself is dead
            return self.send_json(404, {"error": "not found"})
        log.warning("vaultd answered %d for a page", response.code)  # e.g. a revoked API key
        self.send_json(502, {"error": "upstream error"})


def in_range(raw: str, page_count: int | None) -> bool:
    return raw.isdigit() and len(raw) < 10 and 1 <= int(raw) <= (page_count or 0)


class StatusHandler(ProxyHandler):
    """Polled by viewer.js. vaultd's API has no side-effect-free check (GET /views/:token logs a
    view), so this answers from what the app knows: the expiry and any 404 seen so far."""

    def get(self, local_id: str) -> None:
        if self.link(local_id) is None:
            return self.send_json(404, {"error": "not found"})
        self.send_json(200, {"active": True})


class AssetHandler(tornado.web.StaticFileHandler):
    def set_default_headers(self) -> None:
        for name, value in SECURITY_HEADERS.items():
            self.set_header(name, value)


def make_app(vaultd: Vaultd, links: dict[str, Link],
             poll_seconds: int = 15) -> tornado.web.Application:
    shared = {"vaultd": vaultd, "links": links}
    return tornado.web.Application(
        [
            (r"/doc/([\w-]+)", DocumentHandler, shared),
            (r"/doc/([\w-]+)/pages/([^/]+)", PageHandler, shared),
            (r"/doc/([\w-]+)/status", StatusHandler, shared),
            (r"/assets/(viewer\.(?:js|css))", AssetHandler, {"path": str(VAULTD_WEB / "static")}),
        ],
        template_path=str(VAULTD_WEB / "templates"),
        viewer_status_poll_seconds=poll_seconds,
    )


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--links", type=Path,
                        help='JSON file {"<local-id>": "<view token>"}, as a database would hold '
                             '(keep it out of the repository: examples/proxy/links.json is '
                             'git-ignored)')
    parser.add_argument("--share", action="append", default=[], metavar="FILE_ID",
                        help="create a link to this vaultd file at start (repeatable)")
    parser.add_argument("--viewer-email", default="viewer@example.com")
    parser.add_argument("--viewer-name")
    return parser.parse_args(argv)


async def load_links(args: argparse.Namespace, vaultd: Vaultd) -> dict[str, Link]:
    links: dict[str, Link] = {}
    if args.links:
        for local_id, token in json.loads(args.links.read_text()).items():
            links[local_id] = Link(token)
    for file_id in args.share:
        token = await vaultd.create_link(file_id, args.viewer_email, args.viewer_name)
        links[secrets.token_hex(8)] = Link(token)  # a local id that says nothing of the token
    return links


async def main(argv: list[str]) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    try:
        vaultd = Vaultd(os.environ["VAULTD_URL"], os.environ["VAULTD_API_KEY"])
    except KeyError as missing:
        raise SystemExit(f"set {missing.args[0]} (see examples/proxy/README.md)") from None
    try:
        links = await load_links(args, vaultd)
    except VaultdUnreachable as exc:
        raise SystemExit(f"{exc} (is vaultd running? check VAULTD_URL)") from None
    server = make_app(vaultd, links).listen(args.port, args.host)
    for local_id in links:
        print(f"document: http://{args.host}:{args.port}/doc/{local_id}", flush=True)
    print(f"listening on http://{args.host}:{args.port}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        server.stop()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(sys.argv[1:]))
