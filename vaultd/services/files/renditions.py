"""Image renditions: an uploaded JPEG or PNG also stored at the size pages are served at.

The rendition is made by the worker that validated the image (`render.worker.rendition`), encrypted
under its own data key as a second blob named `<file id>.rendition`, and recorded on the file
(`FileDoc.rendition`). It is counted in nothing the user sees (quota, listing and downloads use
the file's own `size` and `blob`) and removed with the file. Only an image with more pixels
than two pages' worth gets one (`render.worker.rendition.WORTH_PAGES`): a smaller one decodes about
as fast as its rendition would. Pages of an image use it when it
was made for the budget pages are rendered at now; otherwise, and for files uploaded before
renditions existed, the original is decoded as before. An Office document's rendition is its
PDF (`services.files.office`): every page is rendered from it.
"""

from __future__ import annotations

import logging

from render.pool.render_pool import RenderPool
from render.wire.model import PDF, PNG, PixelBudget
from render.worker.entry_points import image_rendition
from vaultd.broker import BrokeredFile
from vaultd.errors import VaultError
from vaultd.records import FileDoc, RenditionDoc
from vaultd.services.common.pool_calls import run_task
from vaultd.services.files.blobs import BlobStore, BlobUpload

log = logging.getLogger("vaultd.renditions")

SUFFIX = ".rendition"
IMAGE_TYPES = ("image/jpeg", "image/png")


def rendition_id(file_id: str) -> str:
    # Also the blob's name, and what its data key and blob context are bound to.
    return file_id + SUFFIX


def wanted(doc: FileDoc) -> bool:
    return doc["contentType"] in IMAGE_TYPES


async def make(pool: RenderPool, store: BlobStore, doc: FileDoc, document: BrokeredFile,
               budget: PixelBudget) -> tuple[RenditionDoc, BlobUpload] | None:
    """Store the rendition of the validated image `doc` (its record, and its blob whose data
    key the upload may need to seal again); None (logged) if it could not be made: the file is
    served from its original then, as before renditions."""
    try:
        png = await run_task(pool, image_rendition, document.source, budget, on_upload=True,
                             document=document)
    except VaultError as error:
        log.warning("no rendition for file %s: %s", doc["_id"], error.message)
        return None
    if not png:
        return None  # small enough to be decoded for every page
    upload = await store.begin(doc["accountId"], rendition_id(doc["_id"]))
    try:
        await upload.write(png)
        await upload.close_stream()
        size = await upload.writer.commit()
    except Exception as error:  # a full disk, an unreachable store: the file goes without
        await upload.writer.abort()
        log.warning("no rendition for file %s: could not store it (%s)", doc["_id"],
                    type(error).__name__)
        return None
    except BaseException:
        await upload.writer.abort()
        raise
    return {"name": upload.name, "size": size, "key": store.seal(upload).to_doc(),
            "plainSize": len(png), "longSide": budget.long_side,
            "maxPixels": budget.max_pixels}, upload


def as_file(doc: FileDoc, rendition: RenditionDoc) -> FileDoc:
    """The rendition as a file record of its own, for the broker and the blob tools."""
    blob = {"name": rendition["name"], "size": rendition["size"], "key": rendition["key"]}
    content_type = rendition.get("contentType", PNG)
    return {**doc, "_id": rendition_id(doc["_id"]), "contentType": content_type,
            "size": rendition["plainSize"], "blob": blob}  # type: ignore[typeddict-item]


def for_pages(doc: FileDoc, budget: PixelBudget) -> FileDoc:
    """What a page of `doc` is rendered from: its rendition when made for this budget."""
    rendition = doc.get("rendition")
    if rendition is not None and rendition.get("contentType") == PDF:
        return as_file(doc, rendition)  # an Office document is only ever read as its PDF
    if rendition is None or (rendition["longSide"], rendition["maxPixels"]) != (
            budget.long_side, budget.max_pixels):
        return doc
    return as_file(doc, rendition)


async def delete(store: BlobStore, doc: FileDoc) -> None:
    rendition = doc.get("rendition")
    if rendition is not None:
        await store.backend.delete(rendition["name"])
