"""Small helpers for talking to vaultd in tests."""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from PIL import Image

from tests import documents
from tests.vault_process import VaultProcess

CONTENT_TYPES = {"pdf": "application/pdf", "jpeg": "image/jpeg", "png": "image/png"}

# The error texts of the interface spec that many tests expect, written out (not imported from
# vaultd): a changed message is a changed contract and should fail here.
MISSING_KEY = "missing API key: send Authorization: Bearer <API_KEY>"
INVALID_KEY = "invalid or revoked API key"
LINK_GONE = "link not found or no longer available"
FILE_NOT_FOUND = "file not found"
PAGE_NOT_FOUND = "page not found"
NO_ENDPOINT = "no such endpoint"
STORED_FILE_CORRUPT = "stored file failed its integrity check"
NOT_AVAILABLE = "This link is no longer available."
DATABASE_BUSY = "database unavailable; retry shortly"

# The hosted viewer's policy, written out for the same reason.
VIEWER_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; "
              "img-src 'self' blob: data:; connect-src 'self'; font-src 'self'; base-uri 'none'; "
              "form-action 'none'; frame-ancestors 'none'")


def created(response: httpx.Response) -> dict[str, Any]:
    """The JSON body of a 201 answer; fails with the body when the answer is anything else."""
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def upload(client: httpx.Client, data: bytes | Any, *, content_type: str = "application/pdf",
           name: str | None = None, kind: str | None = None,
           headers: dict[str, str] | None = None) -> httpx.Response:
    sent = {"Content-Type": content_type, **(headers or {})}
    if name is not None:
        sent["x-file-name"] = quote(name, safe="")
    if kind is not None:
        sent["x-file-kind"] = kind
    return client.post("/files", content=data, headers=sent)


def upload_ok(client: httpx.Client, data: bytes, **kwargs: Any) -> dict[str, Any]:
    return created(upload(client, data, **kwargs))


def create_link(client: httpx.Client, file_id: str, email: str = "viewer@example.com",
                **fields: Any) -> dict[str, Any]:
    return created(client.post("/views", json={"fileId": file_id, "viewerEmail": email,
                                               **fields}))


def page_images(client: httpx.Client, token: str, pages: int) -> list[Image.Image]:
    """Pages 1 to `pages` of a link, fetched over the API (each a 200), as RGB images."""
    images = []
    for number in range(1, pages + 1):
        response = client.get(f"/views/{token}/pages/{number}")
        assert response.status_code == 200, response.text
        images.append(Image.open(io.BytesIO(response.content)).convert("RGB"))
    return images


def sent_politely(send: Callable[[], httpx.Response], attempts: int = 6) -> httpx.Response:
    """`send()` again after a 503 that says the database is busy, once its Retry-After has
    passed, as a polite client does: on a loaded host the database times commands out, and a
    test of what concurrent requests may do must not count a request the database never ran.
    Any other 503 (or the last one) is returned as it is."""
    for _ in range(attempts - 1):
        response = send()
        if response.status_code != 503 or response.json().get("error") != DATABASE_BUSY:
            return response
        time.sleep(int(response.headers["Retry-After"]))
    return send()


def assert_json_error(response: httpx.Response, status: int,
                      message: str | re.Pattern[str]) -> dict[str, Any]:
    """The documented error: `status`, a JSON body, and `message` as its `error` (exactly, or
    matching the whole of a pattern where the text names a value the test does not fix)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    error = body.get("error")
    assert isinstance(error, str), body
    if isinstance(message, re.Pattern):
        assert message.fullmatch(error), (message.pattern, error)
    else:
        assert error == message, (message, error)
    return body


@pytest.fixture
def web(vault: VaultProcess) -> Iterator[httpx.Client]:
    """A browser-like client of the hosted viewer: no API key, the viewer's own origin."""
    with httpx.Client(base_url=vault.url, timeout=60) as client:
        yield client


def is_jpeg(response: httpx.Response) -> bool:
    """A 200 whose body starts as a JPEG does (a rendered page)."""
    return response.status_code == 200 and response.content[:3] == b"\xff\xd8\xff"


def assert_viewer_headers(response: httpx.Response) -> None:
    headers = response.headers
    assert headers["content-security-policy"] == VIEWER_CSP
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "no-referrer"
    assert "no-store" in headers["cache-control"]
    assert headers["x-content-type-options"] == "nosniff"


def served_page(vault: VaultProcess, key: str, viewer: str, name: str) -> bytes:
    """Page 1 of a new link, as the viewer was served it (a leak's source, for trace tests)."""
    with vault.client(key) as api:
        file = upload_ok(api, documents.pdf(1), name="Board minutes.pdf")
        link = create_link(api, file["id"], viewer, viewerName=name)
        vault.secrets.append(link["token"])
        page = api.get(f"/views/{link['token']}/pages/1", headers={"x-viewer-ip": "203.0.113.9"})
    assert page.status_code == 200
    return page.content
