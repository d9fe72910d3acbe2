"""What an Office upload became, read back for tests: the stored PDF rendition (decrypted as
the server's broker reads it), its pages' text layer, and whether a converter still runs."""

from __future__ import annotations

import os
import re
from typing import Any

import pypdfium2 as pdfium

from backends.local import LocalBackend
from tests.vault_process import VaultProcess
from vaultd.broker import brokered
from vaultd.crypto.keyring import MasterKeyring
from vaultd.services.files.blobs import BlobStore
from vaultd.services.files.renditions import as_file

_JOB_DIR = re.compile(rb"/var/tmp/vaultd-convert-[^/\s\x00]+")


def pdf_rendition(vault: VaultProcess, file_id: str) -> bytes:
    """The stored PDF rendition, decrypted as the server's broker reads it."""
    async def read(db: Any) -> bytes:
        doc = await db.files.find_one({"_id": file_id})
        ring = MasterKeyring.load(vault.data_dir / "master.key")
        store = BlobStore(LocalBackend(vault.data_dir / "blobs"), ring)
        pdf_file = brokered(store, as_file(doc, doc["rendition"]))
        return await pdf_file.read(0, pdf_file.size)
    data: bytes = vault.run_service(read)
    return data


def page_texts(pdf: bytes) -> list[str]:
    """Each page's text layer, whitespace collapsed."""
    document = pdfium.PdfDocument(pdf)
    try:
        return [" ".join(document[i].get_textpage().get_text_range().split())
                for i in range(len(document))]
    finally:
        document.close()


def converters_running() -> bool:
    """Any converter process (the launcher, oosplash, soffice.bin: their command lines name a
    job directory) whose job directory is gone: it outlived its conversion. Converters of other
    servers on the machine, whose directories still exist, are not counted."""
    for pid in (name for name in os.listdir("/proc") if name.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                job = _JOB_DIR.search(cmdline.read())
        except OSError:
            continue
        if job is not None and not os.path.isdir(job.group(0)):
            return True
    return False
