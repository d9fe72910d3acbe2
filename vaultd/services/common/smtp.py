"""Mail over SMTP with aiosmtplib (settings `smtp.*`): the link gates' codes and the members'
sign-in codes."""

from __future__ import annotations

import logging
from email.message import EmailMessage

import aiosmtplib

from vaultd.config import Settings
from vaultd.errors import ServiceUnavailable

log = logging.getLogger("vaultd.mail")

SEND_TIMEOUT = 15.0


def sender(settings: Settings) -> str:
    return settings.smtp_from or f"vaultd@{settings.smtp_host}"


async def send(settings: Settings, message: EmailMessage, failed: str) -> None:
    """Sent, or ServiceUnavailable (503) with the message `failed`. The log names the error's
    type only: never the address or the mail, which carries a code."""
    try:
        await aiosmtplib.send(
            message, hostname=settings.smtp_host, port=settings.smtp_port,
            username=settings.smtp_username or None, password=settings.smtp_password or None,
            start_tls=settings.smtp_starttls, timeout=SEND_TIMEOUT)
    except (aiosmtplib.SMTPException, OSError, TimeoutError) as error:
        log.warning("mail not sent: %s", type(error).__name__)
        raise ServiceUnavailable(failed, retry_after=30) from None
