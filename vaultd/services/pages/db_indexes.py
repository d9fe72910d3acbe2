"""The database indexes the page path's queries stand on (a served page's render id), created at
start-up by `vaultd.db_indexes`."""

from __future__ import annotations

from vaultd.index_spec import Index, index

RENDER_ID_INDEX = "accountId_renderId_unique"

INDEXES: tuple[Index, ...] = (
    # Leak tracing looks a decoded render id up within one account, where it names one page
    # view: the page path draws again when this index refuses an id (`PagePath.start`). Only
    # `page` entries are in it: a `trace` entry names the id it found, again.
    index("access_log", "accountId", "renderId", name=RENDER_ID_INDEX, unique=True,
          partialFilterExpression={"action": "page", "renderId": {"$exists": True}}),
)
