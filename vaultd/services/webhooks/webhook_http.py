"""Sending one signed webhook request without becoming an SSRF proxy.

The host is resolved once, every address it resolves to is checked, and the connection goes to
the checked address (a resolver pinned to it), so a DNS answer that changes between check and
connect (DNS rebinding) cannot redirect us. TLS still verifies the certificate for the URL's
host name. Redirects are not followed, the whole exchange has 5 seconds, and at most 4 KiB of
response body is read. IPv6 forms that carry an IPv4 address (IPv4-mapped, NAT64, 6to4, Teredo,
IPv4-compatible) are checked by that address as well. A failed attempt gets a category for the
tenant and a detail for the operator's log (`webhook_failures`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tornado.httpclient import HTTPRequest
from tornado.netutil import Resolver
from tornado.simple_httpclient import SimpleAsyncHTTPClient

from vaultd.services.webhooks.webhook_failures import (
    NO_ANSWER,
    REFUSED_ADDRESS,
    TLS_FAILURE,
    Failure,
    answered,
)

TIMEOUT_SECONDS = 5.0
MAX_RESPONSE_BYTES = 4096
USER_AGENT = "vaultd-webhooks/1"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class AttemptResult:
    status: int | None
    ok: bool
    duration_ms: int
    error: str | None  # the tenant's category (`webhook_failures`); None when delivered
    detail: str | None = None  # what happened, for the operator's log only


class RefusedAddress(Exception):
    """The URL resolves to an address webhooks may not reach; the message says which and why."""


NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052: the IPv4 address, translated
IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated ::a.b.c.d (RFC 4291 2.5.5.1)


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 form carries, each with the form's name: a translator, a
    relay or the host's own stack may take the connection there, 127.0.0.1 included."""
    found = []
    if address in NAT64:
        found.append(("NAT64", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)))
    if address.sixtofour is not None:
        found.append(("6to4", address.sixtofour))
    if address.teredo is not None:  # (server, client): the relay goes to the client
        found += [("Teredo", address.teredo[0]), ("Teredo", address.teredo[1])]
    if address in IPV4_COMPATIBLE and int(address) > 1:  # not :: or ::1, checked as themselves
        found.append(("IPv4-compatible", ipaddress.IPv4Address(int(address))))
    return found


def refusal_reason(address: Address) -> str | None:
    """Why a webhook may not go to `address`, or None when it is a public unicast address."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return refusal_reason(address.ipv4_mapped)
        for form, inner in embedded_ipv4(address):
            reason = refusal_reason(inner)
            if reason is not None:
                return f"{form} address {address} carrying the {reason}"
        if address in NAT64:
            return None  # it stands for the public IPv4 address just checked
    checks = (("loopback", address.is_loopback), ("link-local", address.is_link_local),
              # fec0::/10, deprecated but still routed by some stacks; not in is_private
              ("site-local", getattr(address, "is_site_local", False)),
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
        raise RefusedAddress(f"refused: {host} does not resolve") from None
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
    failure = None
    try:
        await asyncio.wait_for(_send(url, body, headers, allow_private, status),
                               TIMEOUT_SECONDS + 0.5)
    except Exception as exc:  # refused address, connection refused, TLS failure, timeout...
        # Once the headers are in, the status says how it went: a failure after them is the
        # body being cut off at MAX_RESPONSE_BYTES (Tornado then reports the stream closed),
        # or a body slower than the attempt's time.
        failure = None if status else classify(exc)
    code = status[0] if status else None
    if failure is None and code is None:  # the client returned without a status line
        failure = Failure(NO_ANSWER, "no status line")
    elif failure is None and code is not None and not 200 <= code < 300:
        failure = Failure(answered(code), answered(code))
    duration_ms = int((time.monotonic() - started) * 1000)
    if failure is None:
        return AttemptResult(code, True, duration_ms, None)
    return AttemptResult(code, False, duration_ms, failure.category, failure.detail)


def classify(exc: Exception) -> Failure:
    """The tenant's category of an attempt that got no status, and the operator's detail."""
    if isinstance(exc, RefusedAddress):
        return Failure(REFUSED_ADDRESS, str(exc))
    if isinstance(exc, TimeoutError):
        return Failure(NO_ANSWER, f"timed out after {TIMEOUT_SECONDS:g} s")
    detail = f"{type(exc).__name__}: {exc}"[:300]
    return Failure(TLS_FAILURE if isinstance(exc, ssl.SSLError) else NO_ANSWER, detail)


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
