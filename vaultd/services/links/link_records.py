"""Reading a link with its file and account, and keeping those records for a second.

One `LinkRecords` lives in the page path (`services.pages.page_path`), built by the composition
root, so the records kept for pages are owned by one object rather than module globals. Whether a
link is live is read from the database on every request; only what never changes while a link
lives (its file's record, its account's) may be reused (`services.common.recent` says why that is
safe).
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import replace

from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.records import FileDoc, LinkDoc
from vaultd.secrets import digest, is_token
from vaultd.services.accounts.accounts import Account, get_account
from vaultd.services.common.recent import RecentRecords
from vaultd.services.files.files import get_file
from vaultd.services.links.links import (
    LINK_NOT_FOUND,
    LIVENESS_FIELDS,
    OpenLink,
    is_live,
    read_link,
)


class LinkRecords:
    """Links (by token hash), files and accounts read in the last second, per process."""

    def __init__(self) -> None:
        self.links: RecentRecords[LinkDoc] = RecentRecords()
        self.files: RecentRecords[FileDoc] = RecentRecords()
        self.accounts: RecentRecords[Account] = RecentRecords()

    async def open(self, db: Db, token: str, owner: Account | None = None) -> OpenLink:
        """A live link (not expired, not revoked, file stored); NotFound for every other case.

        With `owner` (API access with a key), other accounts' links are NotFound too, and the
        account the key resolved to is used rather than read again. Reads are by unique key
        only and the conditions are checked here: the cheapest query shape."""
        if not is_token(token):
            raise NotFound(LINK_NOT_FOUND)
        link = await read_link(db, {"hash": digest(token)})
        read_at = time.monotonic()
        if link is None or not is_live(link) or (owner is not None
                                                  and link["accountId"] != owner.id):
            raise NotFound(LINK_NOT_FOUND)
        try:
            file, account = await asyncio.gather(
                self._file(db, link), self._account(db, link["accountId"], owner)
            )
        except NotFound:
            raise NotFound(LINK_NOT_FOUND) from None
        self.links.keep(link["hash"], link)
        return OpenLink(link, file, account, read_at)

    def kept(self, token: str) -> OpenLink | None:
        """The link, file and account of `token` from records kept in the last second, or None.

        Not a live link: its liveness must be read (`confirm`) before anything is done for it."""
        if not is_token(token):
            return None
        link = self.links.fresh(digest(token))
        if link is None:
            return None
        file = self.files.fresh(link["fileId"])
        account = self.accounts.fresh(link["accountId"])
        if file is None or account is None:
            return None
        return OpenLink(link, file, account, read_at=-math.inf)

    async def confirm(self, db: Db, kept: OpenLink) -> OpenLink:
        """`kept` with its link read from the database now and found live; NotFound otherwise."""
        read_at = time.monotonic()
        link = await read_link(db, {"_id": kept.link["_id"]}, LIVENESS_FIELDS)
        return self.confirmed(kept, link, read_at)

    def confirmed(self, kept: OpenLink, link: LinkDoc | None, read_at: float) -> OpenLink:
        """`kept`, read live at `read_at` as `link` (LIVENESS_FIELDS of it); NotFound otherwise."""
        if link is None or not is_live(link):
            self.links.forget(kept.link["hash"])
            raise NotFound(LINK_NOT_FOUND)
        return replace(kept, read_at=read_at)

    async def _file(self, db: Db, link: LinkDoc) -> FileDoc:
        file = self.files.fresh(link["fileId"])
        if file is None:
            file = await get_file(db, link["accountId"], link["fileId"])
            self.files.keep(file["_id"], file)
        if file["accountId"] != link["accountId"]:
            raise NotFound(LINK_NOT_FOUND)
        return file

    async def _account(self, db: Db, account_id: str, known: Account | None) -> Account:
        account = known or self.accounts.fresh(account_id)
        if account is None:
            account = await get_account(db, account_id)
            self.accounts.keep(account_id, account)
        return account
