"""POST /v1/trace: the leaked image as the raw body (image/jpeg or image/png, 25 MB at most).

The body is collected in memory up to the limit (a refused body is still read, up to a cap, as
in `web.upload`, so clients that send everything before reading see the error), then decoded in
a render worker; see `services.trace`.
"""

from __future__ import annotations

from tornado.web import stream_request_body

from vaultd.errors import PayloadTooLarge, VaultError
from vaultd.services import trace
from vaultd.services.account_slots import Slot
from vaultd.web.base import BaseHandler, as_vault_error
from vaultd.web.upload import drain_cap


@stream_request_body
class TraceHandler(BaseHandler):
    db_deadline = None  # waits on other things between its database calls
    rejection: VaultError | None = None
    slot: Slot | None = None  # this request's place in its account's traces in progress
    decoding = False  # `post` is running: the image is still held

    async def prepare(self) -> None:
        self.body = bytearray()
        cap = drain_cap(trace.MAX_TRACE_BYTES)
        self.request.connection.set_max_body_size(cap)  # type: ignore[union-attr]
        raw_length = self.request.headers.get("Content-Length", "")
        length = int(raw_length) if raw_length.isdigit() else None
        try:
            await super().prepare()
            assert self.account is not None
            trace.check_allowed(self.account)
            if length is not None and length > trace.MAX_TRACE_BYTES:
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

    def _too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(f"image larger than the {trace.MAX_TRACE_BYTES} byte limit")

    def data_received(self, chunk: bytes) -> None:
        if self.rejection is not None:
            return  # draining a refused body
        if len(self.body) + len(chunk) > trace.MAX_TRACE_BYTES:
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
            answer = await trace.trace(self.ctx.db, self.ctx.pool, self.ctx.pages.mark,
                                       self.account, data, self.request.headers.get("Content-Type"),
                                       self.get_query_argument("traceCode", None))
        finally:
            self._release_slot()
        self.send_json(200, answer)


ROUTES = [(r"/v1/trace", TraceHandler)]
