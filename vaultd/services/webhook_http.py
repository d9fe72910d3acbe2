"""Sending one signed webhook request without becoming an SSRF proxy.

The host is resolved once, every address it resolves to is checked, and the connection goes to
the checked address (a resolver pinned to it), so a DNS answer that changes between check and
connect (DNS rebinding) cannot redirect us. TLS still verifies the certificate for the URL's
host name. Redirects are not followed, the whole exchange has 5 seconds, and at most 4 KiB of
response body is read.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tornado.httpclient import HTTPRequest
from tornado.netutil import Resolver
from tornado.simple_httpclient import SimpleAsyncHTTPClient

TIMEOUT_SECONDS = 5.0
MAX_RESPONSE_BYTES = 4096
USER_AGENT = "vaultd-webhooks/1"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class AttemptResult:
    status: int | None
    ok: bool
    duration_ms: int
    error: str | None


class RefusedAddress(Exception):
    """The URL resolves to an address webhooks may not reach; the message says which and why."""


def refusal_reason(address: Address) -> str | None:
    """Why a webhook may not go to `address`, or None when it is a public unicast address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return refusal_reason(address.ipv4_mapped)
    checks = (("loopback", address.is_loopback), ("link-local", address.is_link_local),
              ("private", address.is_private), ("multicast", address.is_multicast),
              ("unspecified", address.is_unspecified), ("reserved", address.is_reserved),
              ("special-use", not address.is_global))
    for name, hit in checks:
        if hit:
            return f"{name} address {address}"
    return None


async def resolve_checked(host: str, port: int, allow_private: bool) -> Address:
    """The address to connect to; RefusedAddress if any address of the host is off limits."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise RefusedAddress(f"host {host!r} does not resolve") from None
    addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
    if not allow_private:
        for address in addresses:
            reason = refusal_reason(address)
            if reason is not None:
                raise RefusedAddress(
                    f"refused: {host} resolves to a {reason} "
                    "(webhooks.allow_private_networks is off)")
    return addresses[0]


class PinnedResolver(Resolver):
    """Answers every lookup with the one address that was checked."""

    def initialize(self, address: Address) -> None:
        self.address = address

    async def resolve(self, host: str, port: int,
                      family: socket.AddressFamily = socket.AF_UNSPEC) -> list[tuple[int, Any]]:
        af = socket.AF_INET6 if self.address.version == 6 else socket.AF_INET
        return [(af, (str(self.address), port))]


async def post_signed(url: str, body: str, headers: dict[str, str],
                      allow_private: bool) -> AttemptResult:
    """POST `body` to `url`; never raises for network trouble, the result says what happened."""
    started = time.monotonic()
    status: list[int] = []
    try:
        await asyncio.wait_for(_send(url, body, headers, allow_private, status),
                               TIMEOUT_SECONDS + 0.5)
        error = None
    except RefusedAddress as exc:
        error = str(exc)
    except TimeoutError:
        error = f"timed out after {TIMEOUT_SECONDS:g} s"
    except Exception as exc:  # connection refused, TLS failure, body over the limit...
        # Once the headers are in, the status says how it went: a failure after them is the
        # body being cut off at MAX_RESPONSE_BYTES (Tornado then reports the stream closed).
        error = None if status else f"{type(exc).__name__}: {exc}"[:300]
    code = status[0] if status else None
    ok = error is None and code is not None and 200 <= code < 300
    if error is None and code is not None and not ok:
        error = f"answered {code}" + (" (redirects are not followed)" if 300 <= code < 400 else "")
    return AttemptResult(code, ok, int((time.monotonic() - started) * 1000), error)


async def _send(url: str, body: str, headers: dict[str, str], allow_private: bool,
                status: list[int]) -> None:
    parts = urlsplit(url)
    assert parts.hostname is not None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    address = await resolve_checked(parts.hostname, port, allow_private)
    client = SimpleAsyncHTTPClient(force_instance=True, resolver=PinnedResolver(address=address),
                                   max_body_size=MAX_RESPONSE_BYTES)

    def on_header(line: str) -> None:
        if not status and line.startswith("HTTP/"):
            status.append(int(line.split(" ", 2)[1]))

    try:
        request = HTTPRequest(url, method="POST", body=body.encode("utf-8"),
                              headers={**headers, "User-Agent": USER_AGENT},
                              follow_redirects=False, connect_timeout=TIMEOUT_SECONDS,
                              request_timeout=TIMEOUT_SECONDS, header_callback=on_header,
                              decompress_response=False)
        await client.fetch(request, raise_error=False)
    finally:
        client.close()
