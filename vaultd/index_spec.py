"""One database index as a domain declares it beside its services (`INDEXES` in
`vaultd/services/<domain>/db_indexes.py`); `vaultd.db_indexes` joins the domains' declarations
and creates them at start-up, as `web.app` joins the route modules' `ROUTES`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pymongo import ASCENDING, DESCENDING


@dataclass(frozen=True)
class Index:
    """An index of `collection` on `keys` (field, ASCENDING or DESCENDING), created with
    `options` (pymongo's `create_index` keywords: unique, sparse, expireAfterSeconds, name,
    partialFilterExpression)."""

    collection: str
    keys: tuple[tuple[str, int], ...]
    options: tuple[tuple[str, Any], ...] = ()

    def described(self) -> str:
        fields = ", ".join(name if way == ASCENDING else f"-{name}" for name, way in self.keys)
        return f"{self.collection} ({fields})"


def index(collection: str, *fields: str, **options: Any) -> Index:
    """`index("files", "accountId", "-createdAt", unique=True)`: a leading `-` is DESCENDING."""
    keys = tuple((name[1:], DESCENDING) if name.startswith("-") else (name, ASCENDING)
                 for name in fields)
    return Index(collection, keys, tuple(sorted(options.items())))
