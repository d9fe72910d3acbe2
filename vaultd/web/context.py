"""What every handler needs, built once in the composition root and passed to `make_app`."""

from __future__ import annotations

from dataclasses import dataclass

from render.pool import RenderPool
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.account_slots import AccountSlots
from vaultd.services.blobs import BlobStore
from vaultd.services.page_path import PagePath
from vaultd.services.trace_rate import TraceRate


@dataclass
class AppContext:
    settings: Settings
    db: Db
    store: BlobStore
    pool: RenderPool
    pages: PagePath  # the page path of both page routes, with the records it keeps
    instance_id: str
    viewer_url: str
    active_requests: int = 0  # for a graceful stop: requests still being answered
    upload_slots: AccountSlots | None = None  # made from settings when not given
    trace_slots: AccountSlots | None = None
    trace_rate: TraceRate | None = None

    def __post_init__(self) -> None:
        if self.upload_slots is None:
            self.upload_slots = AccountSlots(self.settings.upload_max_concurrent_per_account,
                                             "uploads")
        if self.trace_rate is None:
            self.trace_rate = TraceRate(self.settings.trace_max_images_per_hour_per_account)
        if self.trace_slots is None:
            self.trace_slots = AccountSlots(self.settings.trace_max_concurrent_per_account,
                                            "traces")
