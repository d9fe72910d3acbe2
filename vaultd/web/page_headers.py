"""The headers every HTML page vaultd serves carries, the hosted viewer's and the console's: no
framing, no caching, no sniffing, no sharing with other origins, no camera or microphone.

The two differ in their content security policy and their referrer policy only, which each
passes in (`web.viewer_base.protect`, `web.console_page.protect_console`)."""

from __future__ import annotations

from typing import Any


def protect_page(handler: Any, content_security_policy: str, referrer_policy: str) -> None:
    handler.set_header("Content-Security-Policy", content_security_policy)
    handler.set_header("X-Frame-Options", "DENY")
    handler.set_header("Referrer-Policy", referrer_policy)
    handler.set_header("Cache-Control", "no-store")
    handler.set_header("X-Content-Type-Options", "nosniff")
    handler.set_header("Cross-Origin-Opener-Policy", "same-origin")
    handler.set_header("Cross-Origin-Resource-Policy", "same-origin")
    handler.set_header("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
