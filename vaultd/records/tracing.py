"""The stored shapes of leak tracing's own collections (`vaultd.services.tracing`)."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict


class PagePrintDoc(TypedDict):
    """Collection `page_prints`: which document page a leak shows, per file and page, kept
    when the page is first served (`services.tracing.page_prints`)."""

    _id: str  # "<file id>:<page>"
    accountId: str
    fileId: str
    page: int
    bits: str  # the print (`render.forensic_wire.page_print`), hex: keyed, says nothing alone
    bands: list[str]  # its bands, indexed: a leak's print is looked up by them
    at: datetime
