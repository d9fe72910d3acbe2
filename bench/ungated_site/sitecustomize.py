"""Bench only (`bench.gates_cost`): a vaultd started with this directory first on PYTHONPATH
authorises pages as before link gates: the link's reads alone (`PagePath._live_link`), no
viewer session read, no gate judged. Everything else is unchanged, so a link without a policy
on it against the same link on a vaultd as deployed is what gates cost such a link (issue 26).
Python imports `sitecustomize` at start in every process. Never on a deployment's path."""

from __future__ import annotations

from vaultd.records import ViewerSessionDoc
from vaultd.services import page_path
from vaultd.services.links import OpenLink


async def _authorise_before_gates(self: page_path.PagePath, request: page_path.PageRequest,
                                  kept: OpenLink | None
                                  ) -> tuple[OpenLink, ViewerSessionDoc | None]:
    return await self._live_link(request, kept), None


page_path.PagePath.authorise = _authorise_before_gates  # type: ignore[method-assign]
