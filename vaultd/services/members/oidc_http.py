"""Calls to the identity provider: a service outside the vault, so each is bounded in time and
size, follows no redirect, and any failure becomes one `BadGateway` that names the step but
never the provider's answer (which may carry a token)."""

from __future__ import annotations

import functools
import json
import logging
import ssl
from typing import Any

import httpx

from vaultd.errors import BadGateway

log = logging.getLogger("vaultd.oidc")

# A discovery document, a key set or a token answer is a few KiB; a provider's keys are a few
# dozen at most. Anything larger is not an answer worth reading.
MAX_RESPONSE_BYTES = 256 * 1024
TIMEOUT = httpx.Timeout(10.0, connect=5.0)


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's default verification (certifi's bundle, the environment not trusted), built
    once: building it loads about 150 certificates, 20-40 ms of CPU at every call otherwise."""
    return httpx.create_ssl_context(verify=True, trust_env=False)


async def fetch_json(step: str, request: httpx.Request) -> tuple[int, dict[str, Any]]:
    """Send `request`; its status and JSON object body. `step` names the call in errors."""
    status, body = await fetch(step, request)
    return status, json_object(step, body)


async def fetch(step: str, request: httpx.Request) -> tuple[int, bytes]:
    """Send `request`; its status and body, read up to the cap."""
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False,
                                     trust_env=False, verify=_tls()) as client:
            response = await client.send(request, stream=True)
            try:
                body = await _bounded_body(step, response)
            finally:
                await response.aclose()
    except httpx.HTTPError as exc:
        log.warning("identity provider unreachable at %s: %s", step, type(exc).__name__)
        raise BadGateway(f"the identity provider cannot be reached ({step})") from None
    return response.status_code, body


def json_object(step: str, body: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        parsed = None
    if not isinstance(parsed, dict):
        raise BadGateway(f"the identity provider's {step} answer is not a JSON object")
    return parsed


async def _bounded_body(step: str, response: httpx.Response) -> bytes:
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > MAX_RESPONSE_BYTES:
        raise BadGateway(f"the identity provider's {step} answer is too large")
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_RESPONSE_BYTES:
            raise BadGateway(f"the identity provider's {step} answer is too large")
    return bytes(body)


async def get_json(step: str, url: str) -> dict[str, Any]:
    """A GET that must answer 200 with a JSON object (discovery, the key set)."""
    status, body = await fetch(step, httpx.Request("GET", url, headers={
        "Accept": "application/json"}))
    if status != 200:
        raise BadGateway(f"the identity provider's {step} answered HTTP {status}")
    return json_object(step, body)
