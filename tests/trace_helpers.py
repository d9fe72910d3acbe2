"""What the trace tests send to `POST /trace`: a picture as PNG bytes, a blank picture (traced,
it names nothing), and a trace answered 200 with its body."""

from __future__ import annotations

import io
from typing import Any

import httpx
from PIL import Image

TRACE_TIMEOUT = 300  # s: a trace of a large leak on a loaded machine, the placement read included


def png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def blank_png() -> bytes:
    """A white picture 300 px square: a valid image that carries no mark."""
    return png(Image.new("RGB", (300, 300), "white"))


def post_png(client: httpx.Client, body: bytes) -> httpx.Response:
    return client.post("/trace", content=body, headers={"Content-Type": "image/png"},
                       timeout=TRACE_TIMEOUT)


def traced(client: httpx.Client, body: bytes) -> dict[str, Any]:
    """The answer to a trace of the PNG `body`, which must be a 200."""
    response = post_png(client, body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer
