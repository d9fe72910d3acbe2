"""POST /v1/trace: the leaked image as the raw body (image/jpeg or image/png, 25 MB at most),
or up to 20 images of one leak as multipart/form-data parts named `image` (100 MiB in all).

The body is collected in memory up to the limit (a refused body is still read, up to a cap, as
in `web.upload`, so clients that send everything before reading see the error), then decoded in
a render worker; see `services.tracing.trace` and `services.tracing.trace_batch`.
"""

from __future__ import annotations

from tornado.httputil import HTTPFile, HTTPInputError, parse_multipart_form_data
from tornado.web import stream_request_body

from vaultd.errors import InvalidRequest, PayloadTooLarge, VaultError
from vaultd.services.accounts.account_slots import Slot
from vaultd.services.tracing import trace, trace_batch
from vaultd.services.tracing.reader import LeakReader
from vaultd.web.base import BaseHandler, as_vault_error
from vaultd.web.permissions import TRACE
from vaultd.web.upload import drain_cap


@stream_request_body
class TraceHandler(BaseHandler):
    db_deadline = False  # waits on other things between its database calls
    # Its time is the client's sending, then a worker's (queued fairly, capped per account and
    # per hour: trace.max_*), not the event loop's or the database's.
    paced = False
    rejection: VaultError | None = None
    slot: Slot | None = None  # this request's place in its account's traces in progress
    decoding = False  # `post` is running: the image is still held
    limit = trace.MAX_TRACE_BYTES

    async def prepare(self) -> None:
        self.body = bytearray()
        if self._multipart():
            self.limit = trace_batch.MAX_BATCH_BYTES
        cap = drain_cap(self.limit)
        self.request.connection.set_max_body_size(cap)  # type: ignore[union-attr]
        raw_length = self.request.headers.get("Content-Length", "")
        length = int(raw_length) if raw_length.isdigit() else None
        try:
            await super().prepare()
            assert self.account is not None
            trace.check_allowed(self.account)
            if length is not None and length > self.limit:
                raise self._too_large()
            self._take_slot()
        except Exception as error:  # answered after the body is read (see web.upload)
            self.rejection = as_vault_error(error)
            if self.rejection is None:
                raise
        if self.rejection is not None and length is not None and length > cap:
            self.set_header("Connection", "close")  # too much to drain: answer now, then close
            raise self.rejection

    def _take_slot(self) -> None:
        # Before any body byte is kept: the image stays in memory until a worker decoded it.
        assert self.account is not None and self.ctx.trace_slots is not None
        self.slot = self.ctx.trace_slots.take(self.account.id)

    def on_finish(self) -> None:
        super().on_finish()
        self._release_slot()

    def on_connection_close(self) -> None:
        super().on_connection_close()
        if not self.decoding:  # else `post` gives the slot back when the image is let go
            self._release_slot()

    def _release_slot(self) -> None:
        if self.slot is not None:
            self.slot.release()

    def _multipart(self) -> bool:
        kind = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        return kind == "multipart/form-data"

    def _too_large(self) -> PayloadTooLarge:
        if self._multipart():
            return PayloadTooLarge(
                f"images larger than the {trace_batch.MAX_BATCH_BYTES} byte limit in all")
        return PayloadTooLarge(f"image larger than the {trace.MAX_TRACE_BYTES} byte limit")

    def data_received(self, chunk: bytes) -> None:
        if self.rejection is not None:
            return  # draining a refused body
        if len(self.body) + len(chunk) > self.limit:
            self.rejection = self._too_large()
            self.body = bytearray()
            return
        self.body += chunk

    async def post(self) -> None:
        if self.rejection is not None:
            raise self.rejection
        assert self.account is not None
        data, self.body = bytes(self.body), bytearray()  # one copy of the image, not two
        self.decoding = True
        try:
            if self._multipart():
                images = self._images(data)
                del data
                await self._spend(len(images))
                answer = await trace_batch.trace_batch(self.ctx.db, self._reader(),
                                                       self.account, images)
            else:
                await self._spend(1)
                answer = await trace.trace(
                    self.ctx.db, self._reader(), self.account, data,
                    self.request.headers.get("Content-Type"),
                    self.get_query_argument("traceCode", None))
        finally:
            self._release_slot()
        self.send_json(200, answer)

    def _reader(self) -> LeakReader:
        settings = self.ctx.settings
        return LeakReader(self.ctx.db, self.ctx.pool, self.ctx.pages.mark,
                          settings.render_long_side, settings.trace_placement_mark,
                          settings.watermark_timezone)

    async def _spend(self, images: int) -> None:
        assert self.account is not None and self.ctx.trace_rate is not None
        await self.ctx.trace_rate.spend(self.account.id, images)

    def _images(self, body: bytes) -> list[trace_batch.LeakImage]:
        """The parts named `image`, in order; anything else in the form is a 400."""
        if self.get_query_argument("traceCode", None) is not None:
            raise InvalidRequest("traceCode goes with a single image sent as the raw body")
        fields: dict[str, list[bytes]] = {}
        files: dict[str, list[HTTPFile]] = {}
        boundary = ""
        for param in self.request.headers.get("Content-Type", "").split(";")[1:]:
            key, _, value = param.strip().partition("=")
            if key.lower() == "boundary":
                boundary = value
        if not boundary:
            raise InvalidRequest("the multipart/form-data body has no boundary")
        try:
            parse_multipart_form_data(boundary.encode("latin-1"), body, fields, files)
        except (HTTPInputError, UnicodeError):
            raise InvalidRequest("the multipart/form-data body is malformed") from None
        if fields or set(files) - {"image"}:
            raise InvalidRequest("only image parts (files) belong in a multipart trace")
        parts = files.get("image", [])
        for number, part in enumerate(parts, start=1):
            if len(part.body) > trace.MAX_TRACE_BYTES:
                raise PayloadTooLarge(
                    f"image {number} larger than the {trace.MAX_TRACE_BYTES} byte limit")
        return [trace_batch.LeakImage(part.filename or None, part.content_type, part.body)
                for part in parts]


ROUTES = [(r"/v1/trace", TraceHandler)]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/trace": {"POST": TRACE},
}
