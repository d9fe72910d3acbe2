"""What every handler needs, built once in the composition root and passed to `make_app`."""

from __future__ import annotations

from dataclasses import dataclass

from render.pool import RenderPool
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.blobs import BlobStore


@dataclass
class AppContext:
    settings: Settings
    db: Db
    store: BlobStore
    pool: RenderPool
    instance_id: str
    viewer_url: str
    active_requests: int = 0  # for a graceful stop: requests still being answered
