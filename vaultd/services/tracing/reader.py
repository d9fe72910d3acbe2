"""Reading a leaked image for the view it names: the stages a trace tries, in order.

1. The invisible mark, in a worker, in each layout the deployment has marked pages in
   (`MarkCipher.trace_layouts`); the value it carries opened with the deployment's key.
2. When that finds nothing and the deployment draws it (`trace.placement_mark`), the
   placement mark (`services.tracing.placement`): what a wash of the first leaves.

`read` is the API's (one account); `read_anywhere` the operator's `vault-admin trace`, the same
stages over every account: the image is read once, the placement evidence scored against each
account's candidates in turn.

A further stage (another mark) goes after these, as one more method returning a `Reading`.
"""

from __future__ import annotations

from dataclasses import dataclass
from zoneinfo import ZoneInfo

from render.pool.render_pool import RenderPool
from render.worker.entry_points import trace_image
from vaultd.db import Db
from vaultd.services.common.pool_calls import run_task
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.services.tracing.placement import match_in_account, placement_match, read_evidence


@dataclass(frozen=True)
class Reading:
    render_id: int
    evidence: str  # "invisible" (the chips) or "placement" (the pattern's words)


@dataclass(frozen=True)
class LeakReader:
    db: Db
    pool: RenderPool
    mark: MarkCipher
    long_side: int  # `render.long_side`: the size pages were served at
    placement: bool = False  # `trace.placement_mark`
    zone: str = "Europe/Paris"  # `watermark.timezone`: the pattern prints the view's time in it

    async def read(self, data: bytes, account_id: str) -> Reading | None:
        """The view the image names, by the first stage that reads one. The image may hold
        the account's pages: it goes to a worker of that account only."""
        sealed = await self.invisible(data, account_id)
        if sealed is not None:
            return Reading(self.mark.open(sealed), "invisible")  # the pixels carry it sealed
        if self.placement:
            found = await placement_match(self.db, self.pool, self.mark, account_id, data,
                                          self.long_side, ZoneInfo(self.zone))
            if found is not None:
                return Reading(found, "placement")
        return None

    async def read_anywhere(self, data: bytes) -> Reading | None:
        """The view the image names in any account (the operator's trace, run confined in a
        pool of the operator's own)."""
        sealed = await self.invisible(data, None)
        if sealed is not None:
            return Reading(self.mark.open(sealed), "invisible")
        if not self.placement:
            return None
        leak = await read_evidence(self.pool, self.mark, data, self.long_side, None,
                                   ZoneInfo(self.zone))
        if leak is None:
            return None
        async for account in self.db.accounts.find({}, projection={"_id": 1}):
            found = await match_in_account(self.db, self.pool, self.mark, account["_id"],
                                           leak, worker_of=None)
            if found is not None:
                return Reading(found, "placement")
        return None

    async def invisible(self, data: bytes, account_id: str | None) -> int | None:
        """The sealed value the image's invisible mark carries, read in the deployment's
        layout, then in the published one for a deployment that served pages before the
        keyed layout."""
        for layout_key in self.mark.trace_layouts:
            sealed = await run_task(self.pool, trace_image, data, layout_key, self.long_side,
                                    account=account_id)
            if sealed is not None:
                return sealed
        return None
