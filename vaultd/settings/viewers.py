"""What viewers see and receive: the watermark's time zone, the mail of email codes, and the
operator's own gate types."""

from __future__ import annotations

from dataclasses import dataclass

from vaultd.settings.declare import setting
from vaultd.settings.parsers import boolean, integer, module_names, text, timezone


@dataclass(frozen=True)
class ViewersSettings:
    watermark_timezone: str = setting(
        "watermark.timezone", timezone, "Europe/Paris", "VAULTD_WATERMARK_TIMEZONE",
        "IANA time zone of the time printed in the watermark, shown with its abbreviation.")
    smtp_host: str = setting(
        "smtp.host", text, "", "VAULTD_SMTP_HOST",
        "SMTP server for email codes; empty: links with verifyEmail are refused.")
    smtp_port: int = setting(
        "smtp.port", integer(1, 65535), 587, "VAULTD_SMTP_PORT",
        "SMTP server port.")
    smtp_username: str = setting(
        "smtp.username", text, "", "VAULTD_SMTP_USERNAME",
        "SMTP login; empty: none.")
    smtp_password: str = setting(
        "smtp.password", text, "", "VAULTD_SMTP_PASSWORD",
        "SMTP password (a secret).")
    smtp_starttls: bool = setting(
        "smtp.starttls", boolean, True, "VAULTD_SMTP_STARTTLS",
        "Upgrade the SMTP connection with STARTTLS before logging in.")
    smtp_from: str = setting(
        "smtp.from", text, "", "VAULTD_SMTP_FROM",
        "Sender address of code mails; empty: vaultd@<the SMTP host>.")
    gates_extra_modules: tuple[str, ...] = setting(
        "gates.extra_modules", module_names, (), "VAULTD_GATES_EXTRA_MODULES",
        "Python modules imported at start, each registering gate types of its own "
        "(docs/architecture.md, \"Adding a gate\"); a module that fails stops the start.")
