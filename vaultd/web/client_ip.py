"""The viewer's IP address as the hosted viewer sees it.

The connection's address, unless it belongs to a configured trusted proxy: then the rightmost
address in X-Forwarded-For that is not itself a trusted proxy (or X-Real-IP). Headers from
anyone else are ignored, so a viewer cannot write an arbitrary IP into their own watermark.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from functools import lru_cache

from tornado.httputil import HTTPServerRequest

from vaultd.services.common.access_log import valid_ip


@lru_cache(maxsize=16)
def _networks(
    trusted: tuple[str, ...],
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in trusted)


def _is_trusted(address: str, trusted: tuple[str, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in _networks(trusted))


def _forwarded_chain(request: HTTPServerRequest) -> Iterable[str]:
    forwarded = request.headers.get_list("X-Forwarded-For")
    for header in reversed(forwarded):
        yield from reversed([part.strip() for part in header.split(",")])


def viewer_ip(request: HTTPServerRequest, trusted: tuple[str, ...]) -> str | None:
    peer: str | None = request.remote_ip
    if not trusted or peer is None or not _is_trusted(peer, trusted):
        return valid_ip(peer)
    for hop in _forwarded_chain(request):
        if not _is_trusted(hop, trusted):
            return valid_ip(hop)
    return valid_ip(request.headers.get("X-Real-IP")) or valid_ip(peer)
