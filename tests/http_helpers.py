"""Small helpers for talking to vaultd in tests."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

CONTENT_TYPES = {"pdf": "application/pdf", "jpeg": "image/jpeg", "png": "image/png"}


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
    response = upload(client, data, **kwargs)
    assert response.status_code == 201, response.text
    return response.json()


def create_link(client: httpx.Client, file_id: str, email: str = "viewer@example.com",
                **fields: Any) -> dict[str, Any]:
    response = client.post("/views", json={"fileId": file_id, "viewerEmail": email, **fields})
    assert response.status_code == 201, response.text
    return response.json()


def assert_json_error(response: httpx.Response, status: int, message: str) -> dict[str, Any]:
    """The documented error: `status`, a JSON body, and exactly `message` in its `error`."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert body.get("error") == message, body
    return body
