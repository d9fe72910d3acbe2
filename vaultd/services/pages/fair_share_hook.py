"""The page path's hook that tells the fair share (`services.common.fair_share`) whose pages
are being read, so that another account's API calls and bulk jobs make room for them."""

from __future__ import annotations

from vaultd.services.common.fair_share import FairShare
from vaultd.services.pages.page_path import SentPage


class FairShareHook:
    def __init__(self, share: FairShare) -> None:
        self.share = share

    async def page_sent(self, sent: SentPage) -> None:
        self.share.pages_read(sent.page.link.account.id)

    async def flush(self, account_id: str | None = None) -> None:
        """Nothing is deferred."""
