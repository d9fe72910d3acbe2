"""The graceful stop, on SIGTERM or SIGINT (`main.run_service` calls `stop_gracefully`).

1. Stop accepting: the listening sockets close; a kept-alive connection carries at most the
   request it is on (answered with `Connection: close`), idle ones are closed at the end.
2. Let requests in flight finish, for up to `server.shutdown_grace_seconds`.
3. Close every connection still open: an upload still arriving is aborted (its temporary blob
   removed; no quota was taken yet), and the work requests leave behind (that removal, an
   upload whose body was all in being stored) is waited for, a little past the grace.
4. Flush what is batched: page views counted but not yet written (`EngagementHook`), then the
   webhook deliveries due now (what the last requests queued).
`main.run_service` then stops the housekeeping, the render workers, the storage backend and the
embedded database, and vaultd exits 0.
"""

from __future__ import annotations

import asyncio
import logging

from tornado.httpserver import HTTPServer

from vaultd.services.pages.page_path import PagePath
from vaultd.services.webhooks.webhook_delivery import Deliverer
from vaultd.web.context import AppContext

log = logging.getLogger("vaultd")

# Past the grace, what the cut requests left behind and the last deliveries get this long.
TAIL_SECONDS = 2.0
POLL_SECONDS = 0.05


async def stop_gracefully(server: HTTPServer, ctx: AppContext, pages: PagePath,
                          deliverer: Deliverer, grace_seconds: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_seconds
    await drain(server, ctx, deadline)
    tail = max(deadline, loop.time() + TAIL_SECONDS)
    left = await ctx.pending_work.wait(tail)
    if left:
        log.warning("%d uploads still being stored or removed at the stop (recovery settles "
                    "them at the next start)", left)
    await pages.settle()  # page views counted but not yet written
    await deliverer.stop(flush_seconds=tail - loop.time())


async def drain(server: HTTPServer, ctx: AppContext, deadline: float) -> None:
    """Stop accepting, let requests in flight finish until `deadline`, then close what remains."""
    server.stop()
    # A request read from now on is the last on its connection (Tornado reads this per request).
    server.conn_params.no_keep_alive = True
    loop = asyncio.get_running_loop()
    while ctx.active_requests and loop.time() < deadline:
        await asyncio.sleep(POLL_SECONDS)
    if ctx.active_requests:
        log.warning("%d requests still in flight after the grace period: cut",
                    ctx.active_requests)
    await server.close_all_connections()
