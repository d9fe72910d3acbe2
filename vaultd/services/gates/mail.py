"""The code's mail, sent over SMTP (settings `smtp.*`, `services.common.smtp`).

Plain text and HTML, carrying the code and the brand and no link: mail scanners follow links,
and a link that passed the gate would be passed by the scanner."""

from __future__ import annotations

import html
from dataclasses import dataclass
from email.message import EmailMessage

from vaultd.config import Settings
from vaultd.services.common import smtp

MAIL_FAILED = "the verification code could not be sent; retry shortly"


def code_message(sender: str, to: str, code: str, brand: str, minutes: int) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = f"Your verification code for {brand}"
    message.set_content(
        f"Your verification code for the document shared by {brand} is:\n\n    {code}\n\n"
        f"It is valid for {minutes} minutes. Type it on the page that asked for it.\n"
        "If you did not ask for it, ignore this mail.\n")
    safe_brand = html.escape(brand)
    message.add_alternative(
        f"<p>Your verification code for the document shared by {safe_brand} is:</p>"
        f'<p style="font-size:24px;letter-spacing:4px"><strong>{code}</strong></p>'
        f"<p>It is valid for {minutes} minutes. Type it on the page that asked for it.</p>"
        "<p>If you did not ask for it, ignore this mail.</p>", subtype="html")
    return message


@dataclass(frozen=True)
class Mailer:
    settings: Settings

    @property
    def sender(self) -> str:
        return smtp.sender(self.settings)

    async def send_code(self, to: str, code: str, brand: str, minutes: int) -> None:
        """Sent, or ServiceUnavailable (503): the reader asks again."""
        await smtp.send(self.settings, code_message(self.sender, to, code, brand, minutes),
                        MAIL_FAILED)
