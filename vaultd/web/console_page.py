"""`GET /console`: where a sign-in lands. For now one server-rendered line, signed in or not;
no script at all, and a CSP that allows none."""

from __future__ import annotations

import html

from vaultd.errors import Unauthorized
from vaultd.web.console_session import SessionHandlerMixin

CONSOLE_CSP = ("default-src 'none'; base-uri 'none'; form-action 'self'; "
               "frame-ancestors 'none'")


class ConsolePageHandler(SessionHandlerMixin):
    public = True  # the session cookie decides what it shows

    async def get(self) -> None:
        try:
            signed_in = await self.require_session()
        except Unauthorized:
            signed_in = None
        if signed_in is None:
            line = "You are not signed in."
        elif signed_in.account is None:
            line = f"Signed in as {html.escape(signed_in.email)}: choose an account."
        else:
            line = (f"Signed in as {html.escape(signed_in.email)} in "
                    f"{html.escape(signed_in.account['name'])}.")
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Content-Security-Policy", CONSOLE_CSP)
        self.set_header("X-Frame-Options", "DENY")
        self.finish("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                    f"<title>vaultd console</title></head><body><p>{line}</p></body></html>")


ROUTES = [(r"/console", ConsolePageHandler)]
