"""Who the current request acts for, for the records that note it without being told.

The authenticated base handler sets it once the caller is known (an API key, a member's
session); the access-log writer reads it, so every file action through the API is attributed
without every service between the handler and the writer passing an actor along. A viewer's
own requests (public routes) set nothing: what a viewer does is the viewer's, not a member's.

A contextvar is per request: Tornado runs each request in its own task, which copies the
context it starts in and never hands a change back."""

from __future__ import annotations

from contextvars import ContextVar

# {"kind", "id", "label"} (records.members.ActorRecord), or None outside an attributed request.
ACTING: ContextVar[dict[str, str] | None] = ContextVar("acting", default=None)


def acting() -> dict[str, str] | None:
    return ACTING.get()
