"""Members' sign-in sessions: how long one lasts unused, and at most."""

from __future__ import annotations

from dataclasses import dataclass

from vaultd.settings.declare import setting
from vaultd.settings.parsers import integer


@dataclass(frozen=True)
class AuthSettings:
    auth_session_idle_minutes: int = setting(
        "auth.session_idle_minutes", integer(1, 7 * 24 * 60), 60,
        "VAULTD_AUTH_SESSION_IDLE_MINUTES",
        "A member's session ends after this many minutes without a request.")
    auth_session_lifetime_hours: int = setting(
        "auth.session_lifetime_hours", integer(1, 24 * 90), 12,
        "VAULTD_AUTH_SESSION_LIFETIME_HOURS",
        "A member's session ends this many hours after sign-in, however active.")
