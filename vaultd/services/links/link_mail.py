"""The share form's "Mail the link to the viewer": the address, who shared it and until when,
as text. The link is the reader's credential: it goes to the viewer's own address only, and is
never logged (smtp.send logs an error's type, never the mail)."""

from __future__ import annotations

from datetime import datetime
from email.message import EmailMessage

from vaultd.config import Settings
from vaultd.errors import ServiceUnavailable
from vaultd.services.common import smtp
from vaultd.services.links.links import LinkRequest
from vaultd.timefmt import iso_utc

NOT_SENT = "the link was made, but the mail to the viewer could not be sent: copy the link"


def link_message(settings: Settings, request: LinkRequest, url: str, expires_at: datetime,
                 shared_by: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = smtp.sender(settings)
    message["To"] = request.viewer_email
    message["Subject"] = "A document was shared with you"
    message.set_content(
        f"Hello {request.viewer_name},\n\n{shared_by} shared a document with you. "
        f"Read it here:\n\n    {url}\n\nThe link is for you alone and works until "
        f"{iso_utc(expires_at)} (UTC). Each page you read is marked with your name.\n")
    return message


async def mail_link(settings: Settings, request: LinkRequest, url: str, expires_at: datetime,
                    shared_by: str) -> str:
    """What the page says about the mail: sent, or why not (the link stands either way)."""
    if not settings.smtp_host:
        return "Mail is not set up on this server (smtp.host): copy the link instead."
    try:
        await smtp.send(settings, link_message(settings, request, url, expires_at, shared_by),
                        NOT_SENT)
    except ServiceUnavailable as error:
        return error.message[0].upper() + error.message[1:] + "."
    return f"The link was mailed to {request.viewer_email}."
