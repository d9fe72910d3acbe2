"""The identity provider's calls verify its certificate, with one TLS context built per process
(`vaultd.services.members.oidc_http`): building one loads certifi's whole bundle."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.webhook_attempts import self_signed_context
from vaultd.errors import BadGateway
from vaultd.services.members import oidc_http

ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
          b"Connection: close\r\n\r\n{}")


async def _discover_from_self_signed(directory: Path) -> tuple[int, BaseException | None]:
    """Serves a JSON answer over TLS with a certificate no authority signed; how many requests
    reached the handler, and what the call raised."""
    served = 0

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        served += 1
        writer.write(ANSWER)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0,
                                        ssl=self_signed_context(directory))
    port = server.sockets[0].getsockname()[1]
    try:
        await oidc_http.get_json("discovery", f"https://127.0.0.1:{port}/.well-known/x")
    except BadGateway as error:
        return served, error
    finally:
        server.close()
    return served, None


def test_a_provider_whose_certificate_no_authority_signed_is_refused(tmp_path: Path) -> None:
    served, error = asyncio.run(_discover_from_self_signed(tmp_path))
    assert isinstance(error, BadGateway)
    assert str(error) == "the identity provider cannot be reached (discovery)"
    assert served == 0  # the handshake failed before any request was sent


def test_the_context_is_built_once_and_verifies() -> None:
    first = oidc_http._tls()
    assert first is oidc_http._tls()
    assert first.verify_mode.name == "CERT_REQUIRED" and first.check_hostname


