"""Office uploads: which format a ZIP upload is, its conversion to PDF, and the PDF's storage.

The ZIP's index is read in a render worker (`render.office.formats`); the conversion runs in the
confined converter (`render.office.runner`), one at a time in this process, accounts taking
turns (`office_queue`: 429 beyond the queue or an account's share of it). The PDF is stored as
the file's rendition (`services.files.renditions`), encrypted under its own data key, and then
validated in a render worker like any uploaded PDF: its page count is the file's. The original
is kept as uploaded, so a download returns its bytes.
"""

from __future__ import annotations

import logging

from render.office import runner
from render.office.office_types import EXTENSIONS
from render.pool.render_pool import RenderPool
from render.sandbox.layers import ALL_LAYERS, Layer, names
from render.wire.model import PDF, ValidationResult
from render.worker.entry_points import identify_office, validate_document
from vaultd.broker import BrokeredFile, brokered
from vaultd.errors import ServiceUnavailable, Unprocessable
from vaultd.records import FileDoc, RenditionDoc
from vaultd.services.common.pool_calls import run_task
from vaultd.services.files import renditions
from vaultd.services.files.blobs import BlobStore, BlobUpload
from vaultd.services.files.office_queue import FairSlot

log = logging.getLogger("vaultd.office")

MEMORY_LIMIT = 4 << 30  # the converter's address space: LibreOffice maps ~1.5 GiB at start
MAX_PDF = 256 << 20
SIZE_STEP = 8 << 20  # the timeout covers this much input; each further step adds one period
MAX_PERIODS = 4


class OfficeConverter:
    """The one conversion slot of this vaultd process and the accounts' turns at it."""

    def __init__(self, enabled: bool, timeout: float, sandbox_required: bool = False) -> None:
        self.enabled = enabled and runner.installed()
        self.timeout = timeout
        self.sandbox_required = sandbox_required
        self._slot = FairSlot()
        self.last_layers = 0  # the sandbox layers the latest conversion reported
        self._warned = Layer(0)  # each missing layer is logged once

    def timeout_for(self, size: int) -> float:
        return self.timeout * min(1 + size // SIZE_STEP, MAX_PERIODS)

    async def convert(self, document: BrokeredFile, content_type: str, account_id: str
                      ) -> bytes:
        """The PDF of the document, converted in `account_id`'s turn (`office_queue`); 429 when
        the queue or the account's share of it is full, 422 when conversion fails."""
        async with self._slot.turn(account_id):
            return await self._run(document, content_type)

    async def _run(self, document: BrokeredFile, content_type: str) -> bytes:
        job = runner.Job(size=document.size, extension=EXTENSIONS[content_type],
                         timeout=self.timeout_for(document.size), memory_limit=MEMORY_LIMIT,
                         max_output=MAX_PDF, required=self.sandbox_required)
        try:
            pdf, self.last_layers = await runner.convert(job, document.read)
        except runner.ConversionFailed as failure:
            raise Unprocessable(str(failure)) from None
        except runner.ConverterUnconfined:
            log.error("the Office converter lacks a sandbox layer; render.sandbox is required")
            raise ServiceUnavailable("the Office converter is unavailable", 60) from None
        self._warn_missing(Layer(self.last_layers))
        return pdf

    def _warn_missing(self, layers: Layer) -> None:
        missing = ALL_LAYERS & ~layers & ~self._warned
        if missing:
            self._warned |= missing
            log.warning("Office converter sandbox layers missing: %s", ", ".join(names(missing)))


async def identify(pool: RenderPool, document: BrokeredFile) -> str:
    """The Office type of a ZIP upload ("" for any other ZIP), read in a render worker."""
    kind: str = await run_task(pool, identify_office, document.source, on_upload=True,
                               document=document)
    return kind


async def make_pdf_rendition(pool: RenderPool, store: BlobStore, converter: OfficeConverter,
                             doc: FileDoc, document: BrokeredFile
                             ) -> tuple[RenditionDoc, BlobUpload]:
    """Convert, store the PDF as the rendition, validate it; the rendition's record (with the
    page count in `doc`) and its blob, whose data key the upload may need to seal again. Any
    failure leaves no rendition blob behind."""
    pdf = await converter.convert(document, doc["contentType"], doc["accountId"])
    upload = await store.begin(doc["accountId"], renditions.rendition_id(doc["_id"]))
    try:
        await upload.write(pdf)
        await upload.close_stream()
        size = await upload.writer.commit()
    except BaseException:
        await upload.writer.abort()
        raise
    rendition: RenditionDoc = {
        "name": upload.name, "size": size, "key": store.seal(upload).to_doc(),
        "plainSize": len(pdf), "longSide": 0, "maxPixels": 0, "contentType": PDF}
    try:
        # Read with the data key in memory, as the upload reads its original.
        pdf_file = brokered(store, renditions.as_file(doc, rendition), upload.data_key)
        result: ValidationResult = await run_task(
            pool, validate_document, pdf_file.source, on_upload=True, document=pdf_file)
    except BaseException:
        await store.backend.delete(upload.name)
        raise
    doc["pageCount"] = result.page_count
    return rendition, upload
