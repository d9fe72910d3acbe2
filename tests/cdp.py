"""A bare Chrome DevTools Protocol client for the one browser test Playwright cannot drive.

Playwright keeps every page it controls "visible and focused" (microsoft/playwright#3570,
#2286), so a tab put in the background never sees `document.visibilityState === "hidden"`.
Debian's Chromium driven over raw CDP behaves like a real browser: activating another tab hides
the first one and fires `visibilitychange`. Tornado (already a dependency) provides the
WebSocket client.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tornado.websocket import WebSocketClientConnection, websocket_connect

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--no-default-browser-check", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


class Cdp:
    """One WebSocket to one CDP target (a page, or the browser itself)."""

    def __init__(self, socket_: WebSocketClientConnection) -> None:
        self.socket = socket_
        self.next_id = 0

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        call_id = self.next_id
        self.socket.write_message(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            raw = await asyncio.wait_for(self.socket.read_message(), 30)
            if raw is None:
                raise ConnectionError("the browser closed the DevTools connection")
            message = json.loads(raw)
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message["result"])

    async def evaluate(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                                 awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not await self.evaluate(expression):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {expression}")
            await asyncio.sleep(0.05)


@asynccontextmanager
async def chromium() -> AsyncIterator[tuple[Cdp, Cdp, str]]:
    """(browser session, first page's session, first page's target id)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    profile = tempfile.mkdtemp(prefix="cdp-profile-")
    process = subprocess.Popen([CHROMIUM, *ARGS, f"--remote-debugging-port={port}",
                                f"--user-data-dir={profile}", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        version, page = await _endpoints(port)
        browser = Cdp(await websocket_connect(version["webSocketDebuggerUrl"]))
        tab = Cdp(await websocket_connect(page["webSocketDebuggerUrl"]))
        try:
            yield browser, tab, page["id"]
        finally:
            browser.socket.close()
            tab.socket.close()
    finally:
        process.terminate()
        process.wait(10)
        shutil.rmtree(profile, ignore_errors=True)


async def _endpoints(port: int) -> tuple[dict[str, Any], dict[str, Any]]:
    deadline = time.monotonic() + 30
    while True:
        try:
            base = f"http://127.0.0.1:{port}/json"
            version = json.loads(urllib.request.urlopen(f"{base}/version", timeout=2).read())
            pages = [t for t in json.loads(urllib.request.urlopen(base, timeout=2).read())
                     if t["type"] == "page"]
            if pages:
                return version, pages[0]
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("chromium did not open its DevTools endpoint")
        await asyncio.sleep(0.1)
