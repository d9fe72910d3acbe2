"""The access log of a `bench.scale_shapes` shape, numbered as vaultd numbers its own
(`tests.seeded_log`), loaded by the shape's loader: the entries with their indexes built after
the insert."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bench.scale_shape_loading import Loader
from tests.seeded_log import write_log as write_numbered
from vaultd.db import Db


async def write_log(db: Db, loader: Loader, account_id: str, log: list[dict[str, Any]]) -> None:
    """The account's whole log, numbered in each scope, and the scopes' counters."""
    async def insert(name: str, docs: Iterable[dict[str, Any]]) -> None:
        if name == "access_log":
            await loader.insert(db, name, docs, bulk_from=1)
        else:
            await loader.insert(db, name, docs)
    await write_numbered(db, account_id, log, insert)
