"""A real SMTP server on loopback (aiosmtpd) that keeps every mail it receives, for the email
codes of gated links: tests read the code from the delivered mail. `mailing_vault` is a vaultd
that sends through the module's server; a module imports it by name."""

from __future__ import annotations

import email
import re
import socket
import threading
from collections.abc import Iterator
from email.message import Message
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from tests.inprocess import inprocess_vault
from tests.vault_process import VaultProcess
from tests.waiting import wait_until

CODE = re.compile(r"\b(\d{6})\b")


class Inbox:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self.lock:
            self.messages.append(email.message_from_bytes(envelope.content))
        return "250 OK"

    def count(self) -> int:
        with self.lock:
            return len(self.messages)

    def wait_for(self, count: int) -> Message:
        wait_until(lambda: self.count() >= count, timeout=20)
        with self.lock:
            return self.messages[count - 1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def parts(message: Message) -> dict[str, str]:
    """The mail's text and HTML bodies by content type."""
    found = {}
    for part in message.walk():
        if part.get_content_type() in ("text/plain", "text/html"):
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            found[part.get_content_type()] = payload.decode()
    return found


def code_in(message: Message) -> str:
    match = CODE.search(parts(message)["text/plain"])
    assert match, "no code in the mail"
    return match.group(1)


class MailServer:
    def __init__(self) -> None:
        self.inbox = Inbox()
        self.port = free_port()
        self.controller: Controller | None = None

    def start(self) -> MailServer:
        # A controller's loop closes when it stops: each start makes a new one, same port.
        self.controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port)
        self.controller.start()
        return self

    def stop(self) -> None:
        assert self.controller is not None
        self.controller.stop()
        self.controller.loop.close()

    def env(self) -> dict[str, str]:
        return {"VAULTD_SMTP_HOST": "127.0.0.1", "VAULTD_SMTP_PORT": str(self.port),
                "VAULTD_SMTP_STARTTLS": "false", "VAULTD_SMTP_FROM": "codes@vault.example"}


@pytest.fixture(scope="module")
def mailing_vault(tmp_path_factory: pytest.TempPathFactory,
                  mail: MailServer) -> Iterator[VaultProcess]:
    with inprocess_vault(tmp_path_factory.mktemp("mailing") / "data", **mail.env()) as server:
        yield server
