"""POST /v1/files: streamed upload. GET on the same path is `web.files.FileListHandler`.

Stages: `prepare` authenticates and checks headers before any body byte is read; `data_received`
encrypts each chunk as it arrives; `post` finalises. A request refused by its headers (key,
type, declared size, plan, uploads in progress) is answered from `prepare`, before any body
byte is read, and instead of `100 Continue` when the client asked for one; the body guard then
reads and drops what body still comes, up to `drain_cap`, because clients such as Python's
http.client send the whole body before reading (past the cap, or declared larger, the connection
is closed). A refusal found in the body (its type, its real size, a full disk) is answered once
the body has been read, as before.
"""

from __future__ import annotations

import logging

from tornado.web import stream_request_body

from vaultd.errors import PayloadTooLarge, VaultError
from vaultd.numbers import is_decimal
from vaultd.records import FileDoc
from vaultd.services.accounts import quota
from vaultd.services.accounts.account_slots import Slot
from vaultd.services.files.files import file_json
from vaultd.services.files.uploads import UploadSession, parse_content_type, parse_kind, parse_name
from vaultd.services.pages.page_path import budget_for
from vaultd.services.storage import db_room
from vaultd.web.base import BaseHandler, as_vault_error
from vaultd.web.permissions import CHANGE

log = logging.getLogger("vaultd.upload")


def drain_cap(max_bytes: int) -> int:
    """How much of a refused body we read before answering; past it we answer and close."""
    return max_bytes * 2 + (1 << 20)


@stream_request_body
class UploadHandler(BaseHandler):
    paced = False  # its time is the client's sending
    db_deadline = False  # waits on other things between its database calls
    only_methods = ("POST",)  # the rest of /v1/files is FileListHandler's
    shared_route_methods = ("GET",)
    session: UploadSession | None = None
    rejection: VaultError | None = None
    finishing = False  # once the whole body is in, the upload completes even if the client leaves
    slot: Slot | None = None  # this request's place in its account's uploads in progress
    stored_bytes = 0

    async def prepare(self) -> None:
        # A refusal raised here is answered at once (web.body_guard drains the body after it).
        cap = drain_cap(self.ctx.settings.upload_max_bytes)
        self.request.connection.set_max_body_size(cap)  # type: ignore[union-attr]
        await super().prepare()
        session = self._open_session()
        await self._take_slot_and_check_room()
        self.session = session

    def _open_session(self) -> UploadSession:
        headers = self.request.headers
        converter = self.ctx.office
        parse_content_type(headers.get("Content-Type"), converter is not None and converter.enabled)
        kind = parse_kind(headers.get("x-file-kind"))
        name = parse_name(headers.get("x-file-name"))
        length = self._content_length()
        if length is not None and length > self.ctx.settings.upload_max_bytes:
            raise self._too_large()
        assert self.account is not None
        return UploadSession(self.ctx.db, self.ctx.store, self.account, name, kind,
                             self.ctx.instance_id, budget_for(self.ctx.settings), converter)

    async def _take_slot_and_check_room(self) -> None:
        # Both before any body byte is stored: a full account, or one already holding its share
        # of uploads in progress, gets its answer without a temporary blob.
        assert self.account is not None and self.ctx.upload_slots is not None
        self.slot = self.ctx.upload_slots.take(self.account.id)
        await quota.check_room(self.ctx.db, self.account.id, self._content_length())
        db_room.check_database_room(self.ctx.settings, self._content_length())

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
        # The body is all in: stored even if the client leaves, and a graceful stop waits for it.
        doc = await self.ctx.pending_work.run(self._store(self.session))
        self.send_json(201, file_json(doc))

    async def _store(self, session: UploadSession) -> FileDoc:
        try:
            doc = await session.finish(self.ctx.pool)
        except BaseException:
            await self._discard()
            raise
        self.session = None
        self.stored_bytes = int(doc["size"])
        return doc

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
            self.ctx.pending_work.spawn(self._discard(), "removing an aborted upload's blob")


ROUTES = [(r"/v1/files", UploadHandler)]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/files": {"POST": CHANGE},
}
