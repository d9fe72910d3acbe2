"""POST /v1/files: streamed upload. GET on the same path is `web.files.FileListHandler`.

Stages: `prepare` authenticates and checks headers before any body byte is read; `data_received`
encrypts each chunk as it arrives; `post` finalises. A request refused early is still read (up
to a hard cap) before it is answered, because clients such as Python's http.client send the
whole body before reading: answering early and closing would show them a connection reset
instead of the 413. Tornado's own max_body_size answers a bare 400, so it is only the hard cap.
"""

from __future__ import annotations

import logging

from tornado.ioloop import IOLoop
from tornado.web import stream_request_body

from vaultd.errors import PayloadTooLarge, VaultError
from vaultd.numbers import is_decimal
from vaultd.services import quota
from vaultd.services.account_slots import Slot
from vaultd.services.files import file_json
from vaultd.services.page_path import budget_for
from vaultd.services.uploads import UploadSession, parse_content_type, parse_kind, parse_name
from vaultd.web.base import BaseHandler, as_vault_error

log = logging.getLogger("vaultd.upload")


def drain_cap(max_bytes: int) -> int:
    """How much of a refused body we read before answering; past it we answer and close."""
    return max_bytes * 2 + (1 << 20)


@stream_request_body
class UploadHandler(BaseHandler):
    only_methods = ("POST",)  # the rest of /v1/files is FileListHandler's
    shared_route_methods = ("GET",)
    session: UploadSession | None = None
    rejection: VaultError | None = None
    finishing = False  # once the whole body is in, the upload completes even if the client leaves
    slot: Slot | None = None  # this request's place in its account's uploads in progress
    stored_bytes = 0

    async def prepare(self) -> None:
        # Errors are answered from the method, after the body is read: a response finished
        # here would make Tornado drop the kept-alive connection without saying so.
        cap = drain_cap(self.ctx.settings.upload_max_bytes)
        self.request.connection.set_max_body_size(cap)  # type: ignore[union-attr]
        try:
            await super().prepare()
            self.session = self._open_session()
            await self._take_slot_and_check_room()
        except Exception as error:  # a refusal, or the database being down
            self.session = None  # nothing was stored yet
            self.rejection = as_vault_error(error)
            if self.rejection is None:
                raise
        length = self._content_length()
        if self.rejection is not None and length is not None and length > cap:
            self.set_header("Connection", "close")
            raise self.rejection

    def _open_session(self) -> UploadSession:
        headers = self.request.headers
        parse_content_type(headers.get("Content-Type"))
        kind = parse_kind(headers.get("x-file-kind"))
        name = parse_name(headers.get("x-file-name"))
        length = self._content_length()
        if length is not None and length > self.ctx.settings.upload_max_bytes:
            raise self._too_large()
        assert self.account is not None
        return UploadSession(self.ctx.db, self.ctx.store, self.account, name, kind,
                             self.ctx.instance_id, budget_for(self.ctx.settings))

    async def _take_slot_and_check_room(self) -> None:
        # Both before any body byte is stored: a full account, or one already holding its share
        # of uploads in progress, gets its answer without a temporary blob.
        assert self.account is not None and self.ctx.upload_slots is not None
        self.slot = self.ctx.upload_slots.take(self.account.id)
        await quota.check_room(self.ctx.db, self.account.id, self._content_length())

    def _release_slot(self) -> None:
        if self.slot is not None:
            self.slot.release()

    def on_finish(self) -> None:
        super().on_finish()
        self._release_slot()
        account = self.account.id if self.account is not None else None
        self.ctx.metrics.upload_done(self.get_status(), self.stored_bytes, account)

    def _content_length(self) -> int | None:
        raw = self.request.headers.get("Content-Length")
        return int(raw) if raw and is_decimal(raw) else None

    def _too_large(self) -> PayloadTooLarge:
        limit = self.ctx.settings.upload_max_bytes
        return PayloadTooLarge(f"file larger than the {limit} byte limit")

    async def data_received(self, chunk: bytes) -> None:
        if self.rejection is not None or self.session is None:
            return  # draining a refused body
        try:
            if self.session.received + len(chunk) > self.ctx.settings.upload_max_bytes:
                raise self._too_large()
            await self.session.feed(chunk)
        except Exception as error:  # storage, database or our own refusal: nothing is kept
            await self._discard()
            self.rejection = as_vault_error(error)
            if self.rejection is None:
                raise

    async def post(self) -> None:
        if self.rejection is not None:
            raise self.rejection
        assert self.session is not None
        self.finishing = True
        try:
            doc = await self.session.finish(self.ctx.pool)
        except BaseException:
            await self._discard()
            raise
        self.session = None
        self.stored_bytes = int(doc["size"])
        self.send_json(201, file_json(doc))

    async def _discard(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            await session.abort()

    def on_connection_close(self) -> None:
        super().on_connection_close()
        if not self.finishing:
            self._release_slot()
        # A client that goes away mid-upload leaves nothing behind.
        if self.session is not None and not self.finishing:
            IOLoop.current().spawn_callback(self._discard)


ROUTES = [(r"/v1/files", UploadHandler)]
