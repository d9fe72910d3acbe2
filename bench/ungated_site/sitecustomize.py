"""Bench only (`bench.gates_cost`): a vaultd started with this directory first on PYTHONPATH
authorises pages as before link gates: the link's reads alone (`PagePath._live_link`), no
viewer session read, no gate judged. Everything else is unchanged, so a link without a policy
on it against the same link on a vaultd as deployed is what gates cost such a link.
With VAULTD_BENCH_KEEP_GATES=1 nothing is patched: the deployed side of the comparison runs
with this module imported too, so both servers' processes load the same code.
Python imports `sitecustomize` at start in every process. Never on a deployment's path."""

from __future__ import annotations

import os

from vaultd.records import ViewerSessionDoc
from vaultd.services.links.links import OpenLink
from vaultd.services.pages import page_path


async def _authorise_before_gates(self: page_path.PagePath, request: page_path.PageRequest,
                                  kept: OpenLink | None
                                  ) -> tuple[OpenLink, ViewerSessionDoc | None]:
    return await self._live_link(request, kept), None


if os.environ.get("VAULTD_BENCH_KEEP_GATES") != "1":
    page_path.PagePath.authorise = _authorise_before_gates  # type: ignore[method-assign]
