"""What every handler needs, built once in the composition root and passed to `make_app`."""

from __future__ import annotations

from dataclasses import dataclass, field

from render.pool.render_pool import RenderPool
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.metrics import Metrics
from vaultd.services.accounts.account_slots import AccountSlots
from vaultd.services.common.fair_share import FairShare
from vaultd.services.files.blobs import BlobStore
from vaultd.services.files.office import OfficeConverter
from vaultd.services.gates.email_codes import EmailCodes
from vaultd.services.members.oidc import RelyingParty
from vaultd.services.members.sign_in_codes import SignInCodes
from vaultd.services.pages.page_path import PagePath
from vaultd.services.tracing.trace_rate import DbSpends, TraceRate
from vaultd.web.pending_work import PendingWork


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
    # What requests leave running (an aborted upload's clean-up): a graceful stop waits for it.
    pending_work: PendingWork = field(default_factory=PendingWork)
    office: OfficeConverter | None = None  # made from settings when not given
    codes: EmailCodes | None = None  # email codes of gated links; None: smtp.host not set
    metrics: Metrics = field(default_factory=Metrics)  # scraped only when metrics.port is set
    trace_rate: TraceRate | None = None
    # One account's API calls paced while another account's pages are read (made in the
    # composition root, whose page path tells it whose pages; this default holds nothing).
    fair_share: FairShare = field(default_factory=lambda: FairShare(1.0))
    oidc: RelyingParty | None = None  # sign-in with the identity provider; None: auth.oidc off
    sign_in_codes: SignInCodes | None = None  # members' mailed codes (made in the root)

    def __post_init__(self) -> None:
        if self.upload_slots is None:
            self.upload_slots = AccountSlots(self.settings.upload_max_concurrent_per_account,
                                             "uploads")
        if self.office is None:
            self.office = OfficeConverter(self.settings.upload_office,
                                          self.settings.upload_office_timeout_seconds,
                                          self.settings.render_sandbox == "required")
        if self.trace_rate is None:
            self.trace_rate = TraceRate(self.settings.trace_max_images_per_hour_per_account,
                                        DbSpends(self.db))
        if self.trace_slots is None:
            self.trace_slots = AccountSlots(self.settings.trace_max_concurrent_per_account,
                                            "traces")
