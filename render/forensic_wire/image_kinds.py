"""Which image a leak is, from its first bytes: the server checks an upload's declared type
against it before any worker is asked (`vaultd.services.tracing.trace`, `vault-admin trace`),
and a worker opens the image with only that format's decoder (`render.forensic.trace_task`)."""

from __future__ import annotations

from render.wire.model import JPEG, PNG


def sniff(data: bytes) -> str | None:
    """image/jpeg or image/png from the magic bytes, else None."""
    if data.startswith(b"\xff\xd8\xff"):
        return JPEG
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    return None
