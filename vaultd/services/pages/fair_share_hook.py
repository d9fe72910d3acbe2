"""The page path's hook that tells the fair share (`services.common.fair_share`) whose pages
are being read, so that another account's API calls and bulk jobs make room for them.

Only pages a viewer reads count: those of the hosted viewer, asked for with the link's token
alone, from an address that is not one of the account's own callers' (`FairShare.pages_read`).
A page asked for over the API carries the owner's own key, and one read in the hosted viewer
from where the account's calls come from is the account's own reading (a member's Preview, a
script reading a link it made): counting them would let any account slow every other account's
API by reading its own pages in a loop, while its own calls are never held (its pages are not
another account's)."""

from __future__ import annotations

from vaultd.services.common.fair_share import FairShare
from vaultd.services.pages.page_path import SentPage


class FairShareHook:
    def __init__(self, share: FairShare) -> None:
        self.share = share

    async def page_sent(self, sent: SentPage) -> None:
        if sent.page.request.api_key is None:  # a viewer's, not the owner's own key's
            self.share.pages_read(sent.page.link.account.id, sent.page.request.ip)

    async def flush(self, account_id: str | None = None) -> None:
        """Nothing is deferred."""
