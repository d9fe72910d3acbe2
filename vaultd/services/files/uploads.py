"""One upload, as small stages: sniff the type, encrypt and write as bytes arrive, then
reserve quota, commit, validate in the worker pool and record the file.

Nothing here knows about HTTP. Every failure after the first byte leaves nothing behind: the
blob is aborted or deleted and any quota reservation is given back.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any
from urllib.parse import unquote

from render.office.office_types import OFFICE_TYPES, OLE2_MAGIC, ZIP_MAGIC
from render.pool.render_pool import RenderPool
from render.wire.model import PixelBudget, ValidationResult
from render.worker.entry_points import validate_document
from vaultd.broker import BrokeredFile, brokered
from vaultd.crypto.keyring import WrappedKey
from vaultd.db import Db
from vaultd.errors import (
    InvalidRequest,
    ServiceUnavailable,
    Unprocessable,
    UnsupportedMediaType,
)
from vaultd.records import FileDoc, FileKind
from vaultd.services.accounts import link_shards, quota
from vaultd.services.accounts.accounts import Account
from vaultd.services.common import access_log, outbox
from vaultd.services.common.pool_calls import run_task
from vaultd.services.files import office, renditions
from vaultd.services.files.blobs import BlobStore, BlobUpload
from vaultd.services.files.office import OfficeConverter
from vaultd.services.members.callers import require_caller
from vaultd.services.members.roles import Permission
from vaultd.services.webhooks import webhook_events
from vaultd.timefmt import utcnow

log = logging.getLogger("vaultd.uploads")

ACCEPTED_CONTENT_TYPES = frozenset(
    {"application/pdf", "image/jpeg", "image/png", "application/octet-stream"}
)
KINDS: dict[str, FileKind] = {"source": "source", "delivery": "delivery"}
MAX_NAME = 200
DEFAULT_NAME = "document"
SNIFF_BYTES = 8
NOT_OURS = "content is not a PDF, JPEG or PNG file"
CANCELLED = ("the upload took this server too long to finish and another one cancelled it; "
             "send the file again")
LEGACY_OFFICE = ("legacy Office files (.doc, .xls, .ppt) are not accepted: save the document as "
                 "DOCX, XLSX, PPTX, ODT, ODS or ODP, or as a PDF")
ZIP_PENDING = "application/zip"  # until a worker has read the archive's index


def sniff(head: bytes) -> str | None:
    """The real type from the first bytes; None when it is none of ours."""
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    return None


# What a form-style body means: the client wrapped the file (curl -F) or mangled it (curl -d,
# which also strips newlines). Both are refused with the spec's 415 and told what to send.
RAW_BODY_HINT = ("send the file itself as the body, e.g. curl --data-binary @file.pdf "
                 "-H 'Content-Type: application/pdf'")
_FORM_HINTS = {
    "multipart/form-data": "the body is a multipart form, not the file: " + RAW_BODY_HINT,
    "application/x-www-form-urlencoded": (
        "the body is form-encoded (curl -d strips newlines, which damages a PDF): "
        + RAW_BODY_HINT),
}


def parse_content_type(value: str | None, office: bool = False) -> str:
    """The declared type, if accepted (the Office types too when `office`); the content's own
    type is what counts."""
    media = (value or "").split(";", 1)[0].strip().lower()
    if media in _FORM_HINTS:
        raise UnsupportedMediaType(_FORM_HINTS[media])
    if media not in ACCEPTED_CONTENT_TYPES and not (office and media in OFFICE_TYPES):
        raise UnsupportedMediaType(
            "Content-Type must be application/pdf, image/jpeg, image/png "
            "or application/octet-stream"
        )
    return media


def parse_kind(value: str | None) -> FileKind:
    kind = "source" if value is None else value.strip()
    if kind not in KINDS:
        raise InvalidRequest("x-file-kind must be source or delivery")
    return KINDS[kind]


def parse_name(value: str | None) -> str:
    """Decode a URI-component-encoded name as decodeURIComponent does: a malformed escape or
    escaped bytes that are not UTF-8 (`%C3%28`) are refused; control characters are dropped."""
    if value is None or value == "":
        return DEFAULT_NAME
    if _has_bad_escape(value):
        raise InvalidRequest("x-file-name is not valid URI-component encoding")
    try:
        decoded = unquote(value, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise InvalidRequest(
            "x-file-name is not valid URI-component encoding: the escaped bytes are not UTF-8 "
            "(encode the name with encodeURIComponent)") from None
    cleaned = "".join(ch for ch in decoded if ch.isprintable()).strip()
    return cleaned[:MAX_NAME] or DEFAULT_NAME


def _has_bad_escape(value: str) -> bool:
    # decodeURIComponent rejects a '%' not followed by two hex digits; unquote lets it through.
    hexdigits = "0123456789abcdefABCDEF"
    for i, ch in enumerate(value):
        if ch == "%" and (
            i + 2 >= len(value) or value[i + 1] not in hexdigits or value[i + 2] not in hexdigits
        ):
            return True
    return False


class UploadSession:
    def __init__(
        self, db: Db, store: BlobStore, account: Account, name: str, kind: FileKind, owner: str,
        rendition_budget: PixelBudget | None = None, office: OfficeConverter | None = None,
    ) -> None:
        require_caller(Permission.CHANGE_CONTENT)
        self.db, self.store, self.account, self.owner = db, store, account, owner
        self.name, self.kind = name, kind
        # An image is also stored at this size (the pages' budget): see services.files.renditions.
        self.rendition_budget = rendition_budget
        self._rendition: str | None = None  # its blob, until the file record exists
        self.office = office if office is not None and office.enabled else None
        self.file_id = str(uuid.uuid4())
        self.content_type: str | None = None
        self.received = 0
        self._head = b""
        self._blob: BlobUpload | None = None
        self._reserved = 0
        self._committed = False
        self._line_breaks = False  # a PDF always has some; curl -d strips them all

    async def feed(self, data: bytes) -> None:
        self.received += len(data)
        if not self._line_breaks:
            self._line_breaks = b"\n" in data or b"\r" in data
        if self.content_type is None:
            self._head += data
            if len(self._head) < SNIFF_BYTES:
                return
            await self._start(self._head)
            self._head = b""
            return
        assert self._blob is not None
        await self._blob.write(data)

    async def _start(self, head: bytes) -> None:
        detected = sniff(head)
        if detected is None and self.office is not None:
            if head.startswith(OLE2_MAGIC):
                raise UnsupportedMediaType(LEGACY_OFFICE)
            if head.startswith(ZIP_MAGIC):
                detected = ZIP_PENDING  # an Office document or not: decided in a worker
        if detected is None:
            raise UnsupportedMediaType(NOT_OURS)
        self.content_type = detected
        self._blob = await self.store.begin(self.account.id, self.file_id)
        await self._blob.write(head)

    async def finish(self, pool: RenderPool) -> FileDoc:
        """Reserve, commit, validate, record. Returns the stored file document."""
        if self.content_type is None:
            if self.received == 0:
                raise InvalidRequest("request body is empty")
            await self._start(self._head)  # shorter than the sniff window: _start rejects it
        blob = self._blob
        assert blob is not None and self.content_type is not None
        await blob.close_stream()
        seq = await quota.reserve_upload(
            self.db, self.account.id, self.file_id, self.received, self.owner
        )
        self._reserved = self.received
        blob_size = await blob.writer.commit()
        self._committed = True
        doc = self._file_doc(blob, blob_size, self.content_type)
        doc["seq"] = seq
        # Read with the data key in memory, not the record's wrapped copy: a rotation that
        # drops old master keys may run while the file is validated (docs/security.md).
        document = brokered(self.store, doc, blob.data_key)
        sealed: list[tuple[str, dict[str, Any], BlobUpload]] = []
        if self.content_type == ZIP_PENDING:
            await self._convert_office(doc, document, pool, sealed)
            return await self._record(doc, blob, sealed)
        budget = self.rendition_budget if renditions.wanted(doc) else None
        try:
            result: ValidationResult = await run_task(
                pool, validate_document, document.source, budget, on_upload=True,
                document=document)
        except Unprocessable as error:
            raise self._explained(error) from None
        doc["pageCount"] = result.page_count
        if budget is not None:
            made = await renditions.make(pool, self.store, doc, document, budget)
            if made is not None:
                doc["rendition"], rendition_blob = made
                self._rendition = rendition_blob.name
                sealed.append(("rendition.key", doc["rendition"]["key"], rendition_blob))
        return await self._record(doc, blob, sealed)

    async def _convert_office(self, doc: FileDoc, document: BrokeredFile, pool: RenderPool,
                              sealed: list[tuple[str, dict[str, Any], BlobUpload]]) -> None:
        assert self.office is not None
        kind = await office.identify(pool, document)
        if not kind:
            raise UnsupportedMediaType(NOT_OURS)  # a ZIP, but of nothing we read
        doc["contentType"] = self.content_type = kind
        rendition, rendition_blob = await office.make_pdf_rendition(
            pool, self.store, self.office, doc, document)
        self._rendition = rendition_blob.name
        doc["rendition"] = rendition
        sealed.append(("rendition.key", rendition["key"], rendition_blob))

    async def _record(self, doc: FileDoc, blob: BlobUpload,
                      sealed: list[tuple[str, dict[str, Any], BlobUpload]]) -> FileDoc:
        doc["blob"]["key"] = self.store.seal(blob).to_doc()  # under the key current now
        sealed.append(("blob.key", doc["blob"]["key"], blob))
        held = await webhook_events.file_uploaded(self.db, doc)  # held until the insert
        await self.db.files.insert_one(doc)
        if not await quota.settle_upload(self.db, self.account.id, self.file_id):
            # Recovery took this process for dead, cancelled the reservation and deleted the
            # blob: the record goes too, so that no number the listing knows to be empty
            # (`file_gaps`) ever holds a file, and the held event with it.
            await self.db.files.delete_one({"_id": doc["_id"]})
            await outbox.discard(self.db, held)
            self._reserved = 0
            raise ServiceUnavailable(CANCELLED)
        await outbox.release(self.db, held)
        # From here the file exists: a failure must not undo it (recovery settles the rest).
        self._blob, self._reserved, self._rendition = None, 0, None
        await self._keep_keys_in_ring(doc, sealed)
        await access_log.record(self.db, self.account.id, self.file_id, "upload")
        return doc

    async def _keep_keys_in_ring(
        self, doc: FileDoc, sealed: list[tuple[str, dict[str, Any], BlobUpload]]
    ) -> None:
        """A rotation with --drop-old passes over the records once more after the old keys left
        the key file. A record written after that pass, sealed under a dropped key (this
        process had not yet read the new key file), is sealed again here: the check reads the
        key file after the insert, so either it sees the drop or the rotation's pass sees us."""
        for path, stored, upload in sealed:
            if not self.store.in_ring(WrappedKey.from_doc(stored)):
                await self.db.files.update_one(
                    {"_id": doc["_id"], path: stored},
                    {"$set": {path: self.store.seal(upload).to_doc()}})

    def _explained(self, error: Unprocessable) -> Unprocessable:
        if self.content_type != "application/pdf" or self._line_breaks:
            return error
        return Unprocessable(f"{error.message}; it has no line breaks at all, as when curl -d "
                             f"strips them: {RAW_BODY_HINT}")

    def _file_doc(self, blob: BlobUpload, blob_size: int, content_type: str) -> FileDoc:
        return {
            "_id": self.file_id,
            "accountId": self.account.id,
            "name": self.name,
            "kind": self.kind,
            "contentType": content_type,
            "size": self.received,
            "pageCount": 0,
            "createdAt": utcnow(),
            "state": "stored",
            "blob": {"name": blob.name, "size": blob_size, "key": self.store.seal(blob).to_doc()},
            # its links' expiry ranges may be read per shard, among SHARDS (link_shards)
            "linkShards": link_shards.SHARDS,
        }

    async def abort(self) -> None:
        """Undo whatever was done; safe to call at any stage and more than once."""
        blob, self._blob = self._blob, None
        rendition, self._rendition = self._rendition, None
        if rendition is not None:
            await self.store.backend.delete(rendition)
        if blob is not None:
            if self._committed:
                await self.store.backend.delete(blob.name)
            else:
                await blob.writer.abort()
        if self._reserved:
            await quota.cancel_upload(self.db, self.account.id, self.file_id, self._reserved)
            self._reserved = 0
