"""The console's Trace page: a leaked image in, the page view it leads to out (viewer, email,
page, time, IP, evidence), or that nothing was found.

A plain multipart form (file input "Leaked image", optional trace code typed off the strip),
answered with the page itself, so it works without script. The body is streamed (as
`web.trace` and `web.upload` are: `body_guard.UPLOAD_PATHS`): the session and the role are
checked from the headers, before any byte of the image is kept, and the body is capped at the
trace's limit. The form's `_csrf` field is in that body, so it is checked once the body is
parsed and before anything is done with the image (a script may send `X-CSRF-Token` instead).

It is `POST /v1/trace` for the signed-in member: the same plan rule (Pro and Business), size
limit, per-account slots and hourly budget, the same service (`services.tracing.trace`), each
match logged on its file."""

from __future__ import annotations

import hmac
from typing import Any

from tornado.httputil import HTTPFile, HTTPInputError, parse_multipart_form_data
from tornado.web import stream_request_body

from vaultd.errors import Forbidden, InvalidRequest, PayloadTooLarge
from vaultd.services.members.sessions import SignedIn
from vaultd.services.tracing import trace
from vaultd.services.tracing.reader import LeakReader
from vaultd.web.console_page import ConsolePage
from vaultd.web.console_session import NO_CSRF, WRONG_CSRF
from vaultd.web.permissions import READ, TRACE
from vaultd.web.upload import drain_cap

NO_IMAGE = "choose the leaked image (a JPEG or PNG) first"


FORM_LIMIT = trace.MAX_TRACE_BYTES + (64 << 10)  # the image, the code and the form's framing


@stream_request_body
class TracePage(ConsolePage):
    section = "trace"
    error_template = "console/trace.html"  # a refusal shows the form again, with its words
    db_deadline = False  # waits on a render worker between its database calls
    paced = False  # its time is the client's sending, then a worker's (web.trace)
    too_large = False

    async def prepare(self) -> None:
        self.body = bytearray()
        # What a refusal reads and drops before answering (body_guard): set before any check.
        self.request.connection.set_max_body_size(drain_cap(FORM_LIMIT))  # type: ignore[union-attr]
        await super().prepare()

    def check_csrf(self, signed_in: SignedIn) -> None:
        """A form's token is in its multipart body: checked in `post`, once it is parsed."""
        if self.request.method == "POST" and "X-CSRF-Token" not in self.request.headers:
            return
        super().check_csrf(signed_in)

    def data_received(self, chunk: bytes) -> None:
        if len(self.body) + len(chunk) > FORM_LIMIT:
            self.too_large, self.body = True, bytearray()
        elif not self.too_large:
            self.body += chunk

    def values(self) -> dict[str, Any]:
        assert self.account is not None
        return {"allowed": self.account.plan.id in trace.TRACE_PLANS,
                "plan": self.account.plan.name, "result": None, "image_name": "",
                "error": None}

    async def get(self) -> None:
        self.page("trace.html", "Trace a leak", **self.values())

    def error_values(self) -> dict[str, Any]:
        if self.account is None:  # refused before the session was known: nothing to show
            return {"allowed": False, "plan": "", "result": None, "image_name": ""}
        values = self.values()
        del values["error"]  # the caller passes the refusal's own
        return values

    async def post(self) -> None:
        assert self.account is not None and self.ctx.trace_slots is not None
        assert self.ctx.trace_rate is not None
        if self.too_large:
            raise PayloadTooLarge(f"image larger than the {trace.MAX_TRACE_BYTES} byte limit")
        fields, image = self._form()
        trace.check_allowed(self.account)
        if image is None or not image.body:
            raise InvalidRequest(NO_IMAGE)
        if len(image.body) > trace.MAX_TRACE_BYTES:
            raise PayloadTooLarge(f"image larger than the {trace.MAX_TRACE_BYTES} byte limit")
        slot = self.ctx.trace_slots.take(self.account.id)
        try:
            await self.ctx.trace_rate.spend(self.account.id, 1)
            settings = self.ctx.settings
            reader = LeakReader(self.ctx.db, self.ctx.pool, self.ctx.pages.mark,
                                settings.render_long_side, settings.trace_placement_mark,
                                settings.watermark_timezone)
            result = await trace.trace(self.ctx.db, reader, self.account, image.body,
                                       image.content_type,
                                       fields.get("traceCode"))
        finally:
            slot.release()
        self.page("trace.html", "Trace a leak",
                  **{**self.values(), "result": result, "image_name": image.filename})


    def _form(self) -> tuple[dict[str, str], HTTPFile | None]:
        """The form's text fields and its image, once the session's token in it is checked."""
        fields: dict[str, list[bytes]] = {}
        files: dict[str, list[HTTPFile]] = {}
        kind, _, params = self.request.headers.get("Content-Type", "").partition(";")
        boundary = next((value for key, _, value in
                         (param.strip().partition("=") for param in params.split(";"))
                         if key.lower() == "boundary"), "")
        if kind.strip().lower() != "multipart/form-data" or not boundary:
            raise InvalidRequest("send the form as multipart/form-data")
        try:
            parse_multipart_form_data(boundary.strip('"').encode("latin-1"), bytes(self.body),
                                      fields, files)
        except (HTTPInputError, UnicodeError):
            raise InvalidRequest("the multipart/form-data body is malformed") from None
        self.body = bytearray()
        text = {name: values[0].decode("utf-8", "replace") for name, values in fields.items()}
        if "X-CSRF-Token" not in self.request.headers:
            self._check_form_token(text.get("_csrf", ""))
        images = files.get("image", [])
        return text, images[0] if images else None

    def _check_form_token(self, token: str) -> None:
        assert self.signed_in is not None
        if not token:
            raise Forbidden(NO_CSRF)
        if not hmac.compare_digest(token.encode(), self.signed_in.csrf_token.encode()):
            raise Forbidden(WRONG_CSRF)


ROUTES = [(r"/console/trace", TracePage)]

# What each page and form needs, by the rule of `web.permissions` (a page reads, a form changes
# what it names; joined by `web.app.route_permissions`).
PERMISSIONS = {
    r"/console/trace": {"GET": READ, "POST": TRACE},
}
