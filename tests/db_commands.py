"""The database commands a piece of work sends, counted by the database itself.

The embedded SecantusDB keeps mongod's `top` counters: per collection and kind (`queries` is a
`find`, `commands` an `aggregate`, `insert`, `update`...), how many commands it ran. Two
snapshots around a request tell exactly what the request made it do, with no listener in the
server. The `top` command itself is counted nowhere (it names no collection).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pymongo import MongoClient

from vaultd.embedded_db import running_address

KINDS = ("queries", "getmore", "insert", "update", "remove", "commands")
DATABASE = "vaultd."


class CommandCounter:
    """`top` snapshots of a running vaultd's embedded database (its `<data_dir>/db`)."""

    def __init__(self, uri: str) -> None:
        self.client: MongoClient[dict[str, Any]] = MongoClient(uri)

    @classmethod
    def of(cls, storage: Any) -> CommandCounter:
        uri = running_address(storage)
        assert uri, "vaultd's embedded database is not running"
        return cls(uri)

    def snapshot(self) -> Counter[str]:
        """Commands run so far, by "<collection> <kind>" (e.g. "links commands")."""
        totals = self.client.admin.command({"top": 1})["totals"]
        counts: Counter[str] = Counter()
        for namespace, sections in totals.items():
            if namespace.startswith(DATABASE):
                for kind in KINDS:
                    counts[f"{namespace[len(DATABASE):]} {kind}"] += sections[kind]["count"]
        return +counts  # zeros dropped

    def close(self) -> None:
        self.client.close()


def sent(before: Counter[str], after: Counter[str], collections: set[str]) -> Counter[str]:
    """The commands run between two snapshots on `collections` (the request's own: the
    server's background work, heartbeats and analytics flushes, writes elsewhere)."""
    return +Counter({key: after[key] - before[key] for key in after
                     if key.split(" ")[0] in collections})
